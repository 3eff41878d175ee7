"""Benchmark of ``shadow sync``: full sync rows/s next to a bare read of the same columns by the same driver.

Run: python3 tests/benchmarks/bench_sync.py                       # 1 million calls, SQLite
     python3 tests/benchmarks/bench_sync.py --calls 200000 --pg postgresql+psycopg://postgres@127.0.0.1:5432/test
     python3 tests/benchmarks/bench_sync.py --compare /work/main  # also the sync of another checkout (before)

The call log is the synthetic one of bench_report.py (sessions of 40 calls, 15% errors, marks), generated in SQLite
at two sizes (--calls and a quarter of it) and, with --pg, copied into a throw-away PostgreSQL database. Every
measurement runs in a fresh process, so its peak RSS is its own:

* bare read: the sync's own query read by the same driver (ADBC's SQLite driver, ADBC's PostgreSQL driver), every
  batch fully built as Arrow and discarded: the limit a sync can reach;
* full sync: ``Warehouse.sync(rebuild=True)`` into a new warehouse file, derived tables and the final checkpoint
  (closing the file) included.

Both are timed from after their module imports (a fixed cost; printed apart); the child process the sync starts for
a large SQLite read, imports and all, is timed as part of the sync. Each is run ``--repeat`` times, alternated, and
the median shown, with CPU seconds (own and child processes): on a shared machine the wall-time ratio moves with the
load, and tends to the CPU ratio when every core is busy, since the sync's parallel reader and writer then get no
more than their share. A PostgreSQL server on this machine shares those cores: its CPU seconds (all its processes,
from the measured process's start to its exit) are printed too, the same work for the bare read and the sync.

Targets: full sync >= 0.5x the bare read; peak RSS flat in the log's size (batches, not the whole log). The
reader holds a few batches of 16,384 rows; DuckDB caches what it wrote and sorts the follow-up windows up to its
``memory_limit`` (``--memory-limit``, spilling beyond it), so the sync's peak is bounded by that limit, not the log.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from shadow.analytics._defaults import DEFAULT_MEMORY_LIMIT  # noqa: E402

CHILD = r"""
import json, resource, sys, time
mode, url, target, memory_limit = sys.argv[1:5]


def cpu():
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


t_start = time.perf_counter()
# Each mode imports what it uses before its clock starts (module imports are a fixed cost that would weigh on a
# small log's rows/s); a child process the sync starts, with its own imports, is the sync's cost and is timed.
import pyarrow as pa
from shadow.analytics import _arrow, _sqlite_read
from shadow.calllog import _tables as tables
if mode == "sync":
    from shadow.analytics import _sync
    from shadow.analytics._warehouse import Warehouse
    if url.startswith("postgresql"):  # the drivers the sync loads on first use, as the bare read imports its own
        import adbc_driver_manager, adbc_driver_postgresql, psycopg
elif mode == "bare-sqlite":
    import adbc_driver_sqlite.dbapi as adbc
else:
    import adbc_driver_postgresql.dbapi as adbc
    from sqlalchemy.engine import make_url
imports = time.perf_counter() - t_start
t0, c0 = time.perf_counter(), cpu()
rows = 0
if mode == "sync":
    with Warehouse.open(target, memory_limit=memory_limit) as wh:
        r = wh.sync(url, rebuild=True)
    rows = r.calls_read + r.marks_read
else:
    for table in (tables.calls, tables.marks):
        if mode == "bare-sqlite":  # ADBC's SQLite driver on the sync's query, in this process, batches discarded
            conn = adbc.connect(url.removeprefix("sqlite:///"))
            cur = conn.cursor()
            cur.adbc_statement.set_options(**{"adbc.sqlite.query.batch_rows": str(_sqlite_read.BATCH_ROWS)})
            cur.execute(_arrow.sqlite_query(table, None))
        else:  # ADBC's PostgreSQL driver on the sync's query
            conn = adbc.connect(make_url(url).set(drivername="postgresql").render_as_string(hide_password=False))
            cur = conn.cursor()
            cur.execute(_arrow.postgres_query(table, None))
        for batch in cur.fetch_record_batch():
            rows += batch.num_rows
        cur.close()
        conn.close()
secs = time.perf_counter() - t0
print(json.dumps({"rows": rows, "seconds": secs, "cpu_seconds": cpu() - c0, "import_seconds": imports,
                  "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "child_peak_rss_mib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))
"""


def server_cpu(url: str) -> float | None:
    """CPU seconds so far of a PostgreSQL server on this machine (its processes in /proc); None for another host.

    A backend that has exited counts through the postmaster, which reaped it (its children's times).
    """
    from sqlalchemy.engine import make_url

    if not url.startswith("postgresql") or make_url(url).host not in (None, "", "localhost", "127.0.0.1", "::1"):
        return None
    total, found, tick = 0.0, False, os.sysconf("SC_CLK_TCK")
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # a process that just ended
            continue
        if stat[stat.index("(") + 1:stat.rindex(")")] != "postgres":
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        total += sum(int(f) for f in fields[11:15]) / tick  # utime, stime, cutime, cstime
        found = True
    return total if found else None


def measure(mode: str, url: str, work: Path, code: Path = ROOT,
            memory_limit: str = DEFAULT_MEMORY_LIMIT) -> dict[str, float]:
    target = work / f"w-{time.monotonic_ns()}.duckdb"
    env = dict(os.environ, PYTHONPATH=str(code))
    before = server_cpu(url)
    out = subprocess.run([sys.executable, "-c", CHILD, mode, url, str(target), memory_limit], env=env,
                         capture_output=True, text=True, check=False)
    after = server_cpu(url)
    if out.returncode:
        raise SystemExit(f"{mode} on {url} failed:\n{out.stderr[-3000:]}")
    for p in (target, Path(f"{target}.wal")):
        p.unlink(missing_ok=True)
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    if before is not None and after is not None:  # the server's share of the cores, from start-up to exit
        result["server_cpu_seconds"] = after - before
    return result


def median_run(runs: list[dict[str, float]]) -> dict[str, float]:
    """The run of median rows/s."""
    ordered = sorted(runs, key=lambda r: r["rows"] / r["seconds"])
    return ordered[len(ordered) // 2]


def make_sqlite(path: Path, calls: int) -> str:
    from bench_report import generate

    from shadow.calllog import _migrate as migrate

    path.unlink(missing_ok=True)
    url = f"sqlite:///{path}"
    migrate.ensure(url)
    generate(path, 0, calls, calls, old=True)
    return url


def copy_to_postgres(sqlite_path: Path, admin_url: str, name: str) -> str:
    """A throw-away PostgreSQL database holding the SQLite log's rows (COPY, row by row: setup, not measured)."""
    import psycopg
    from sqlalchemy.engine import make_url

    from shadow.calllog import _migrate as migrate

    admin = make_url(admin_url)
    plain = admin.set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(plain, autocommit=True) as con:
        con.execute(f'DROP DATABASE IF EXISTS "{name}"')
        con.execute(f'CREATE DATABASE "{name}"')
    url = admin.set(database=name).render_as_string(hide_password=False)
    migrate.ensure(url)
    src = sqlite3.connect(sqlite_path)
    with psycopg.connect(make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)) as con:
        for table in ("calls", "marks", "flag_audit"):
            cols = [r[1] for r in src.execute(f"PRAGMA table_info({table})")]
            bools = {"retryable", "unmapped", "schema_valid"}
            with con.cursor().copy(f"COPY {table} ({', '.join(cols)}) FROM STDIN") as copy:
                cur = src.execute(f"SELECT {', '.join(cols)} FROM {table}")
                while rows := cur.fetchmany(10_000):
                    for row in rows:
                        copy.write_row([bool(v) if c in bools and v is not None else v
                                        for c, v in zip(cols, row, strict=True)])
        con.commit()
        # as a long-lived log is: vacuumed and analysed, so autovacuum does not start on the new rows mid-measurement
        con.autocommit = True
        for table in ("calls", "marks", "flag_audit"):
            con.execute(f"VACUUM (ANALYZE) {table}")
    return url


def drop_postgres(admin_url: str, name: str) -> None:
    import psycopg
    from sqlalchemy.engine import make_url

    plain = make_url(admin_url).set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(plain, autocommit=True) as con:
        con.execute(f'DROP DATABASE IF EXISTS "{name}"')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=1_000_000, help="calls in the larger log (default 1 million)")
    parser.add_argument("--pg", default=os.environ.get("SHADOW_TEST_POSTGRES_URL"),
                        help="a PostgreSQL URL whose server may hold a throw-away database (default: "
                             "SHADOW_TEST_POSTGRES_URL; none: SQLite only)")
    parser.add_argument("--memory-limit", default=DEFAULT_MEMORY_LIMIT,
                        help=f"DuckDB's memory_limit for the sync (its cache grows up to it; default "
                             f"{DEFAULT_MEMORY_LIMIT}, the command's)")
    parser.add_argument("--repeat", type=int, default=3,
                        help="bare read and sync measured this many times each, alternated; the median is shown")
    parser.add_argument("--compare", type=Path, default=None,
                        help="another checkout whose sync is measured too, alternated with the others (before)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-sync-"))
    sizes = [args.calls // 4, args.calls]
    print(f"work directory {work}; logs of {sizes[0]:,} and {sizes[1]:,} calls")
    lines: list[str] = []
    for n in sizes:
        path = work / f"calls-{n}.db"
        sources = [("SQLite", make_sqlite(path, n), "bare-sqlite")]
        if args.pg:
            name = f"bench_sync_{n}"
            sources.append(("PostgreSQL", copy_to_postgres(path, args.pg, name), "bare-pg"))
        for label, url, bare_mode in sources:
            bares, fulls, others = [], [], []
            runs: list[tuple[list[dict[str, float]], Callable[[], dict[str, float]]]] = [
                (bares, functools.partial(measure, bare_mode, url, work)),
                (fulls, functools.partial(measure, "sync", url, work, memory_limit=args.memory_limit))]
            if args.compare:
                runs.append((others, functools.partial(measure, "sync", url, work, args.compare, args.memory_limit)))
            for i in range(args.repeat):
                # alternated, so a change in the machine's load hits all alike, and in turn: a run right after a
                # sync is a few percent faster than one after a bare read (measured both ways), so no one goes first
                for into, run in runs[i % len(runs):] + runs[:i % len(runs)]:
                    into.append(run())
            bare, full = median_run(bares), median_run(fulls)
            rate_bare, rate_sync = bare["rows"] / bare["seconds"], full["rows"] / full["seconds"]
            child = max(f["child_peak_rss_mib"] for f in fulls)
            reader = f" (its SQLite reader process {child:,.0f} MiB)" if child else ""
            line = (f"{label:<10} {n:>10,} calls ({full['rows']:,.0f} rows): bare read {rate_bare:>9,.0f} rows/s, "
                    f"full sync {rate_sync:>9,.0f} rows/s = {rate_sync / rate_bare:4.2f}x the bare read "
                    f"(target >= 0.5x); CPU s bare {bare['cpu_seconds']:.1f}, sync {full['cpu_seconds']:.1f} "
                    f"({bare['cpu_seconds'] / full['cpu_seconds']:4.2f}x); peak RSS sync "
                    f"{max(f['peak_rss_mib'] for f in fulls):,.0f} MiB{reader}, bare "
                    f"{max(b['peak_rss_mib'] for b in bares):,.0f} MiB; imports (not timed) bare "
                    f"{bare['import_seconds']:.1f} s, sync {full['import_seconds']:.1f} s")
            if "server_cpu_seconds" in full:
                line += (f"; the PostgreSQL server, on these cores, CPU s bare {bare['server_cpu_seconds']:.1f}, "
                         f"sync {full['server_cpu_seconds']:.1f}")
            if args.compare:
                before = median_run(others)
                line += (f"; {args.compare} sync {before['rows'] / before['seconds']:,.0f} rows/s = "
                         f"{before['rows'] / before['seconds'] / rate_bare:4.2f}x the bare read (this one "
                         f"{rate_sync / (before['rows'] / before['seconds']):.2f}x), CPU s "
                         f"{before['cpu_seconds']:.1f}, peak RSS {before['peak_rss_mib']:,.0f} MiB")
            print(line, flush=True)
            lines.append(line)
            if label == "PostgreSQL":
                drop_postgres(args.pg, f"bench_sync_{n}")
        path.unlink(missing_ok=True)
    print()
    print("\n".join(lines))
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (a loaded machine gives each thread a "
          "share: the ratio of wall times then tends to the ratio of CPU seconds)")


if __name__ == "__main__":
    main()
