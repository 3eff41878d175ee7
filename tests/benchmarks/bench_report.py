"""Benchmark of the loop-rate pipeline: report vs plain scan, DuckDB vs SQLite, incremental vs full sync, memory.

Run: python3 tests/benchmarks/bench_report.py                 # 10 million calls (several minutes)
     python3 tests/benchmarks/bench_report.py --calls 1000000 # a quick run

Synthetic call log: sessions of 40 calls over 8 tools and 30 days, 15% errors, identical repeats after errors
(45% on legacy, 15% on structured), a 50% cutover on day 10 and 100% on day 20. It is generated inside SQLite by a
recursive query (the sync source), then synced into DuckDB; every figure below is measured in this one run.
The targets are stated for 10 million calls; on a quick run fixed costs (tens of milliseconds per query or sync)
weigh more and the ratios look worse.
"""

from __future__ import annotations

import argparse
import resource
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import duckdb

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from shadow.analytics._report import loop_rate_report  # noqa: E402
from shadow.analytics._warehouse import Warehouse  # noqa: E402
from shadow.calllog import _migrate as migrate  # noqa: E402

SPAN_S = 30 * 86400

# One row per call i; the same formulas generate the initial log and the late additions.
GENERATE = """
WITH RECURSIVE n(i) AS (SELECT :first UNION ALL SELECT i + 1 FROM n WHERE i + 1 < :last),
base AS (
  SELECT i, i / 40 AS sess, i % 40 AS pos,
         (i * 2654435761 % 1000003) % 100 < 15 AS err,
         ((i - 1) * 2654435761 % 1000003) % 100 < 15 AS prev_err,
         ((i / 40) * 2654435761 % 1000003) % 100 AS bucket,
         (i * 30.0 * 86400 / :span_calls) AS offset_s
  FROM n
),
shaped AS (
  SELECT *,
         CASE WHEN offset_s >= 20 * 86400 OR (offset_s >= 10 * 86400 AND bucket < 50)
              THEN 'structured' ELSE 'legacy' END AS variant,
         CASE WHEN offset_s >= 10 * 86400 THEN 'cutover' ELSE 'shadow' END AS mode
  FROM base
),
rep AS (
  SELECT *,
         prev_err AND pos % 5 <> 0 AND (i * 40503 % 1000003) % 100
             < CASE WHEN variant = 'structured' THEN 15 ELSE 45 END AS is_repeat,
         (i * 7 % 100) AS code_pick
  FROM shaped
)
INSERT INTO calls (id, session_id, seq, ts, tool, mode, variant, fingerprint, arg_hashes, args, outcome,
                   legacy_payload, new_payload, code, retryable, next_action, retry_after_ms, error_field, rule,
                   unmapped, schema_valid, latency_us, process, host, source, inserted_at)
SELECT printf('c%035d', i), 's' || sess, pos + 1 + (sess % 3 = 0 AND pos >= 20),
       strftime('%Y-%m-%d %H:%M:%f', '2025-03-01', '+' || offset_s || ' seconds'),
       'tool_' || ((i / 5) * 7919 % 8), mode, variant,
       'f' || (CASE WHEN is_repeat THEN i - 1 ELSE i END),
       json_object('a', 'h' || ((CASE WHEN is_repeat THEN i - 1 ELSE i END) % 7),
                   'b', 'h' || ((CASE WHEN is_repeat THEN i - 1 ELSE i END) % 3)),
       '{"q":"x"}',
       CASE WHEN err THEN 'error' ELSE 'ok' END,
       CASE WHEN err THEN '{"error":"Bad request"}' END,
       CASE WHEN err THEN '{"ok":false}' ELSE '{"ok":true}' END,
       CASE WHEN NOT err THEN NULL WHEN code_pick < 40 THEN 'validation_error' WHEN code_pick < 65 THEN 'not_found'
            WHEN code_pick < 80 THEN 'rate_limited' WHEN code_pick < 90 THEN 'upstream_timeout'
            ELSE 'internal_error' END,
       CASE WHEN NOT err THEN NULL ELSE code_pick BETWEEN 65 AND 89 END,
       CASE WHEN NOT err THEN NULL WHEN code_pick BETWEEN 65 AND 89 THEN 'retry' ELSE 'ask_user' END,
       CASE WHEN err AND code_pick BETWEEN 65 AND 79 THEN 1000 END,
       CASE WHEN err AND code_pick < 40 THEN 'a' END,
       NULL,
       err AND code_pick >= 90, 1, 500 + (i * 31 % 5000), 'p', 'h', 'live',
       {inserted_at}
FROM rep
"""

MARKS = """
WITH RECURSIVE n(s) AS (SELECT :first UNION ALL SELECT s + 1 FROM n WHERE s + 1 < :last),
m AS (SELECT s, (s * 40 * 30.0 * 86400 / :span_calls) AS offset_s FROM n)
INSERT INTO marks (id, session_id, seq, ts, kind, process, host, source, inserted_at)
SELECT printf('m%035d', s * 2 + k.k), 's' || s, CASE k.k WHEN 0 THEN 41 + (s % 3 = 0) ELSE 21 END,
       strftime('%Y-%m-%d %H:%M:%f', '2025-03-01', '+' || offset_s || ' seconds'),
       CASE k.k WHEN 0 THEN 'end' ELSE 'user_turn' END, 'p', 'h', 'live', {inserted_at}
FROM m, (SELECT 0 AS k UNION ALL SELECT 1) AS k
WHERE k.k = 0 OR s % 3 = 0
"""

# The same definitions as analytics/error_followups.sql, written for SQLite (3.30+: window functions, FILTER).
SQLITE_FOLLOWUPS = """
CREATE TEMP TABLE ef AS
WITH events AS (
  SELECT session_id, seq, 0 AS is_mark, id, NULL AS kind, ts, tool, variant, fingerprint, arg_hashes, outcome,
         code, retryable, retry_after_ms, error_field, unmapped
  FROM calls
  UNION ALL
  SELECT session_id, seq, 1, id, kind, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
  FROM marks WHERE kind IN ('user_turn', 'end')
),
stream AS (
  SELECT *, LEAD(is_mark) OVER w AS next_is_mark, LEAD(kind) OVER w AS next_kind,
         SUM(is_mark) OVER w AS marks_so_far
  FROM events WINDOW w AS (PARTITION BY session_id ORDER BY seq, is_mark, id)
),
call_order AS (
  SELECT *, ROW_NUMBER() OVER w AS pos, COUNT(*) OVER (PARTITION BY session_id) AS n_calls,
         LEAD(id) OVER w AS next_id, LEAD(tool) OVER w AS next_tool, LEAD(fingerprint) OVER w AS next_fp,
         LEAD(ts) OVER w AS next_ts, LEAD(arg_hashes) OVER w AS next_arg_hashes,
         LEAD(marks_so_far) OVER w AS next_marks,
         CASE WHEN LAG(tool) OVER w IS tool AND LAG(fingerprint) OVER w IS fingerprint THEN 0 ELSE 1 END
             AS starts_run
  FROM stream WHERE is_mark = 0 WINDOW w AS (PARTITION BY session_id ORDER BY seq, id)
),
runs AS (
  SELECT *, MIN(CASE WHEN starts_run = 1 THEN pos END) OVER (
      PARTITION BY session_id ORDER BY pos ROWS BETWEEN 1 FOLLOWING AND UNBOUNDED FOLLOWING) AS next_run_start
  FROM call_order
),
errors AS (
  SELECT *, (next_id IS NOT NULL AND next_tool = tool AND next_fp = fingerprint) AS looped FROM runs
  WHERE outcome = 'error'
)
SELECT id, session_id, ts, date(ts) AS day, tool, variant, code, retryable, retry_after_ms, unmapped, looped,
       CASE WHEN next_is_mark IS NULL THEN 'nothing'
            WHEN next_is_mark = 1 THEN CASE WHEN next_kind = 'end' THEN 'end' ELSE 'user_turn' END
            WHEN looped THEN 'repeat' WHEN next_tool = tool THEN 'repair' ELSE 'other_tool' END AS follow_up,
       looped AND next_marks = marks_so_far AS back_to_back,
       CASE WHEN looped THEN COALESCE(next_run_start, n_calls + 1) - pos - 1 ELSE 0 END AS loop_length,
       looped AND COALESCE(retryable, 0) AS justified_retry,
       CASE WHEN looped AND retryable AND retry_after_ms IS NOT NULL
            THEN (julianday(next_ts) - julianday(ts)) * 86400000.0 >= retry_after_ms END AS waited,
       CASE WHEN code = 'validation_error' AND error_field IS NOT NULL AND next_is_mark = 0 AND NOT looped
                 AND next_tool = tool
            THEN json_extract(arg_hashes, '$."' || error_field || '"')
                 IS NOT json_extract(next_arg_hashes, '$."' || error_field || '"') END AS field_changed
FROM errors
"""

# What the report aggregates, for SQLite (no GROUPING SETS: one query per grouping).
SQLITE_AGGREGATES = [
    "SELECT count(*), count(DISTINCT session_id), sum(outcome = 'error'), min(ts), max(ts) FROM calls",
    "SELECT latency_us FROM calls ORDER BY latency_us LIMIT 1 OFFSET (SELECT count(*) / 2 FROM calls)",
    *(f"SELECT variant, {key}, count(*), sum(outcome = 'error'), sum(outcome = 'error' AND unmapped), "
      f"sum(NOT schema_valid), count(DISTINCT session_id) FROM calls GROUP BY variant, {key}"
      for key in ("1", "tool", "date(ts)")),
    *(f"""SELECT variant, {key}, count(*), sum(errors), sum(loops), sum(errors * errors), sum(loops * loops),
          sum(errors * loops), sum(b2b), sum(len), sum(just), sum(waited), sum(rep), sum(repair), sum(fc)
          FROM (SELECT variant, {key}, session_id, count(*) AS errors, sum(looped) AS loops, sum(back_to_back) AS b2b,
                       sum(loop_length) AS len, sum(justified_retry) AS just, sum(waited) AS waited,
                       sum(follow_up = 'repeat') AS rep, sum(follow_up = 'repair') AS repair,
                       sum(field_changed) AS fc
                FROM ef GROUP BY variant, {key}, session_id) GROUP BY variant, {key}"""
      for key in ("1", "tool", "code", "day")),
    """SELECT variant, errors, loops, count(*) FROM (SELECT variant, session_id, count(*) AS errors,
       sum(looped) AS loops FROM ef GROUP BY variant, session_id) GROUP BY variant, errors, loops""",
]

# A plain DuckDB scan aggregating the columns the report reads.
PLAIN_SCAN = [
    """SELECT variant, tool, CAST(ts AS DATE), count(*), count(DISTINCT session_id),
              count(*) FILTER (WHERE outcome = 'error'), count(*) FILTER (WHERE unmapped),
              count(*) FILTER (WHERE NOT schema_valid), min(ts), max(ts)
       FROM calls GROUP BY ALL""",
    "SELECT median(latency_us) FROM calls",
    """SELECT variant, tool, code, CAST(ts AS DATE), count(*), count(DISTINCT session_id),
              count(*) FILTER (WHERE looped), count(*) FILTER (WHERE back_to_back), sum(loop_length),
              count(*) FILTER (WHERE justified_retry), count(*) FILTER (WHERE waited_retry_after),
              count(*) FILTER (WHERE retry_after_ms IS NOT NULL), count(DISTINCT follow_up),
              count(repair_field_changed), count(*) FILTER (WHERE unmapped)
       FROM error_followups GROUP BY ALL""",
]


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def timed(fn: Callable[[], object], repeat: int = 1) -> float:
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - start)
    return statistics.median(runs)


def generate(path: Path, first: int, last: int, span_calls: int, *, old: bool) -> None:
    con = sqlite3.connect(path)
    # old rows were inserted a second after their call, weeks ago; new ones now (the server default's value)
    inserted = ("strftime('%Y-%m-%d %H:%M:%S', '2025-03-01', '+' || (CAST(offset_s AS INTEGER) + 1) || ' seconds')"
                if old else "CURRENT_TIMESTAMP")
    params = {"first": first, "last": last, "span_calls": span_calls}
    step = 1_000_000
    for lo in range(first, last, step):
        chunk = {**params, "first": lo, "last": min(last, lo + step)}
        con.execute(GENERATE.replace("{inserted_at}", inserted), chunk)
        con.execute(MARKS.replace("{inserted_at}", inserted),
                    {"first": lo // 40, "last": min(last, lo + step) // 40, "span_calls": span_calls})
        con.commit()
    if old:
        rows = [(f"a{t}{k}", f"tool_{t}", mode_from, pct_from, mode_to, pct_to, "bench", "rollout", day)
                for t in range(8)
                for k, (mode_from, pct_from, mode_to, pct_to, day) in enumerate((
                    (None, None, "shadow", 100, "2025-02-28 00:00:00"),
                    ("shadow", 100, "cutover", 50, "2025-03-11 00:00:00"),
                    ("cutover", 50, "cutover", 100, "2025-03-21 00:00:00")))]
        con.executemany("INSERT INTO flag_audit VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
        con.commit()
    con.close()


def sample_sqlite(source: Path, target: Path, calls: int) -> None:
    """The first ``calls`` calls (whole sessions) and their marks, in a call log of the real schema."""
    migrate.ensure(f"sqlite:///{target}")
    con = sqlite3.connect(target)
    con.execute("ATTACH DATABASE ? AS src", (str(source),))
    con.execute("INSERT INTO calls SELECT * FROM src.calls WHERE rowid <= ?", (calls - calls % 40,))
    con.execute("INSERT INTO marks SELECT * FROM src.marks WHERE session_id IN (SELECT session_id FROM calls)")
    con.execute("INSERT INTO flag_audit SELECT * FROM src.flag_audit")
    con.commit()
    con.close()


def sqlite_definitions(path: Path) -> tuple[float, list[tuple[object, ...]]]:
    con = sqlite3.connect(path)

    def run() -> None:
        con.execute("DROP TABLE IF EXISTS temp.ef")
        con.execute(SQLITE_FOLLOWUPS)
        for query in SQLITE_AGGREGATES:
            con.execute(query).fetchall()

    seconds = timed(run)
    loops = con.execute("SELECT variant, count(*), sum(looped) FROM ef GROUP BY variant ORDER BY 1").fetchall()
    con.close()
    return seconds, loops


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=10_000_000, help="calls in the log (default 10 million)")
    parser.add_argument("--new", type=int, default=100_000, help="calls added before the incremental sync")
    parser.add_argument("--sqlite-sample", type=int, default=500_000,
                        help="calls the SQLite side runs on (its time is scaled linearly to --calls)")
    parser.add_argument("--dir", type=Path, default=None, help="work directory (default: a temporary one)")
    args = parser.parse_args()
    work = args.dir or Path(tempfile.mkdtemp(prefix="bench-report-"))
    work.mkdir(parents=True, exist_ok=True)
    store, wh_path = work / "calls.db", work / "calls.duckdb"
    for p in (store, wh_path):
        p.unlink(missing_ok=True)
    url = f"sqlite:///{store}"
    n, sample = args.calls, min(args.sqlite_sample, args.calls)
    print(f"work directory {work}; {n:,} calls, {args.new:,} new, SQLite sample {sample:,}")

    migrate.ensure(url)
    t = time.perf_counter()
    generate(store, 0, n, n, old=True)
    print(f"generated the SQLite call log in {time.perf_counter() - t:.1f} s "
          f"({store.stat().st_size / 2**30:.2f} GiB)")

    with Warehouse.open(wh_path) as wh:
        full = timed(lambda: wh.sync(url, rebuild=True))
        print(f"full sync: {full:.1f} s ({n / full:,.0f} calls/s); peak RSS so far {peak_rss_mib():,.0f} MiB")
        generate(store, n, n + args.new, n, old=False)
        result = None

        def incremental() -> None:
            nonlocal result
            result = wh.sync(url)

        inc = timed(incremental)
        assert result is not None
        print(f"incremental sync of {result.calls_added:,} new calls onto {n:,}: {inc:.2f} s "
              f"({result.sessions_recomputed:,} sessions recomputed)")
        total = wh.con.execute("SELECT count(*), count(DISTINCT id) FROM calls").fetchall()[0]
        assert total[0] == total[1] == n + args.new, total

        report_s = timed(lambda: loop_rate_report(wh), repeat=3)
        scan_s = timed(lambda: [wh.con.execute(q).fetchall() for q in PLAIN_SCAN], repeat=3)
        derive_s = timed(wh.derive)
        print(f"report: {report_s:.2f} s; plain scan of the same columns: {scan_s:.2f} s; "
              f"recomputing every follow-up from calls and marks: {derive_s:.2f} s")

        sample_db = work / "sample.db"
        sample_db.unlink(missing_ok=True)
        sample_sqlite(store, sample_db, sample)
    # The same definitions at the SQLite sample's size, in DuckDB (synced from the sample) and in SQLite.
    (work / "sample.duckdb").unlink(missing_ok=True)
    with Warehouse.open(work / "sample.duckdb") as swh:
        swh.sync(f"sqlite:///{sample_db}", rebuild=True)
        duck_small = timed(lambda: (swh.derive(), loop_rate_report(swh)), repeat=3)
        duck_loops = swh.con.execute(
            "SELECT variant, count(*), count(*) FILTER (WHERE looped) FROM error_followups GROUP BY 1 ORDER BY 1"
        ).fetchall()
    sqlite_small, sqlite_loops = sqlite_definitions(sample_db)
    assert [tuple(r) for r in sqlite_loops] == [tuple(r) for r in duck_loops], (sqlite_loops, duck_loops)
    sqlite_scaled = sqlite_small * n / sample
    duck_full = report_s + derive_s

    print()
    print(f"report / plain scan ............................ {report_s / scan_s:6.2f}x   (target <= 2x)")
    print(f"SQLite / DuckDB, definitions + report, {sample:,} calls each: "
          f"{sqlite_small:.2f} s / {duck_small:.2f} s = {sqlite_small / duck_small:6.1f}x")
    print(f"SQLite (scaled from {sample:,} to {n:,}) / DuckDB report on the synced warehouse ... "
          f"{sqlite_scaled / report_s:6.1f}x   (target >= 20x)")
    print(f"SQLite (scaled) / DuckDB recomputing every definition + report ............... "
          f"{sqlite_scaled / duck_full:6.1f}x")
    print(f"incremental sync of {args.new:,} / full sync of {n:,} ..... {inc / full:6.1%}   (target <= 5%)")
    print(f"peak RSS of this process ........................ {peak_rss_mib():,.0f} MiB (target < 2048 MiB)")
    print(f"DuckDB {duckdb.__version__}, SQLite {sqlite3.sqlite_version}")


if __name__ == "__main__":
    main()
