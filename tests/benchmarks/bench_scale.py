"""Benchmark of ``shadow sync`` and ``shadow report loop-rate`` at scale: time next to a bare scan, peak memory.

Run: python3 tests/benchmarks/bench_scale.py                           # 1 and 5 million calls (a few minutes)
     python3 tests/benchmarks/bench_scale.py --calls 1000000           # one size
     python3 tests/benchmarks/bench_scale.py --compare /work/main      # also another checkout (before), alternated

The call log is the synthetic one of bench_report.py (sessions of 40 calls over 8 tools and 30 days, 15% errors,
repeats, marks, a 50% then 100% cutover), generated inside SQLite by one recursive INSERT per million calls (not
by shadowed calls). Every measurement is a fresh process of its own, waited for with ``os.wait4``, so its peak
RSS (``ru_maxrss``, the largest of it and the processes it waited for: the sync's SQLite reader) is its own:

* sync: ``shadow sync --rebuild`` into a new warehouse file (the command line, default memory limit);
* report: ``shadow report loop-rate --no-sync`` on the synced warehouse (the command line, table output);
* scan: a bare DuckDB scan of ``calls`` in a process that imports only ``duckdb``: one aggregate over every column
  of ``calls`` the report reads (sessions, times, arms, tools, outcomes, codes, counters, latency).

The report and the scan are timed inside their process from after the imports and the opening of the warehouse
(fixed costs, printed apart) to the end of the work (the report rendered); wall and CPU seconds. Each is run
``--repeat`` times, alternated, and the median shown. Targets at 5 million calls: report <= 3x the scan;
peak RSS of the sync and of the report <= 400 MiB, whatever the log's size.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

# What the report reads from calls, aggregated once: the bare scan the report is held against.
SCAN = """
SELECT count(*), count(DISTINCT session_id), min(ts), max(ts), max(epoch), sum(seq),
       count(DISTINCT tool), count(DISTINCT variant), count(DISTINCT code), count(DISTINCT process),
       count(*) FILTER (WHERE outcome = 'error'), count(*) FILTER (WHERE unmapped),
       count(*) FILTER (WHERE NOT schema_valid), count(*) FILTER (WHERE source = 'simulated'),
       sum(latency_us)
FROM calls
"""

CHILD = r"""
import io, json, resource, sys, time
mode, warehouse, scan = sys.argv[1:4]


def cpu():
    own = resource.getrusage(resource.RUSAGE_SELF)
    return own.ru_utime + own.ru_stime


t_start = time.perf_counter()
import duckdb
if mode == "report":
    import contextlib
    from shadow.cli import app
    from shadow.analytics import _render, _report, _warehouse  # what the command imports on first use
imports = time.perf_counter() - t_start
t0, c0 = time.perf_counter(), cpu()
if mode == "scan":
    con = duckdb.connect(warehouse, read_only=True)
    opened = time.perf_counter() - t0
    t0, c0 = time.perf_counter(), cpu()
    con.execute(scan).fetchall()
    con.close()
else:
    opened = 0.0
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            app(["report", "loop-rate", "--no-sync", "--warehouse", warehouse], standalone_mode=False)
        except SystemExit as exc:
            if exc.code:
                raise
    assert "loop rate" in out.getvalue().lower(), out.getvalue()[:2000]
print(json.dumps({"seconds": time.perf_counter() - t0, "cpu_seconds": cpu() - c0, "import_seconds": imports,
                  "open_seconds": opened}))
"""


def run_measured(argv: list[str], code: Path) -> tuple[dict[str, float], float, float]:
    """Run ``argv`` with ``code`` first on the path; its JSON line (if any), wall seconds and peak RSS in MiB."""
    env = dict(os.environ, PYTHONPATH=str(code))
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, env=env, stdout=out, stderr=err, cwd=code)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        text = out.read().decode()
        if proc.returncode:
            raise SystemExit(f"{argv[:6]} failed ({proc.returncode}):\n{err.read().decode()[-3000:]}")
    lines = [line for line in text.splitlines() if line.startswith("{")]
    return (json.loads(lines[-1]) if lines else {}), wall, usage.ru_maxrss / 1024


def sync(code: Path, url: str, warehouse: Path) -> tuple[float, float]:
    for p in (warehouse, Path(f"{warehouse}.wal")):
        p.unlink(missing_ok=True)
    _, wall, rss = run_measured([sys.executable, "-m", "shadow", "sync", "--rebuild", "--db-url", url,
                                 "--warehouse", str(warehouse)], code)
    return wall, rss


def child(code: Path, mode: str, warehouse: Path) -> dict[str, float]:
    found, wall, rss = run_measured([sys.executable, "-c", CHILD, mode, str(warehouse), SCAN], code)
    return {**found, "wall": wall, "rss": rss}


def median(runs: list[dict[str, float]], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, nargs="+", default=[1_000_000, 5_000_000],
                        help="sizes of the call log (default 1 and 5 million)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each measurement, alternated; the median")
    parser.add_argument("--sync-repeat", type=int, default=1, help="syncs per checkout and size")
    parser.add_argument("--compare", type=Path, default=None,
                        help="another checkout (before): its sync and report measured too, alternated with these")
    parser.add_argument("--dir", type=Path, default=None,
                        help="work directory (default: a temporary one, deleted at the end); a call log already "
                             "there (calls-N.db) is reused")
    args = parser.parse_args()
    work = args.dir or Path(tempfile.mkdtemp(prefix="bench-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    checkouts = [("this", ROOT)] + ([("compare", args.compare.resolve())] if args.compare else [])
    lines = []
    try:
        for n in args.calls:
            store = work / f"calls-{n}.db"
            if not store.exists():
                from bench_report import generate

                from shadow.calllog import _migrate as migrate

                migrate.ensure(f"sqlite:///{store}")
                t = time.perf_counter()
                generate(store, 0, n, n, old=True)
                print(f"generated {n:,} calls in {time.perf_counter() - t:.1f} s "
                      f"({store.stat().st_size / 2**30:.2f} GiB)", flush=True)
            url = f"sqlite:///{store}"
            for label, code in checkouts:
                wh = work / f"wh-{label}-{n}.duckdb"
                syncs = [sync(code, url, wh) for _ in range(args.sync_repeat)]
                wall, rss = min(s[0] for s in syncs), max(s[1] for s in syncs)
                line = f"{n:>10,} calls  {label:<8} sync: {wall:6.1f} s, peak RSS {rss:6.0f} MiB"
                print(line, flush=True)
                lines.append(line)
            runs: dict[str, list[dict[str, float]]] = {}
            jobs = [(f"scan-{label}", code, "scan", work / f"wh-{label}-{n}.duckdb") for label, code in checkouts]
            jobs += [(f"report-{label}", code, "report", work / f"wh-{label}-{n}.duckdb") for label, code in checkouts]
            for i in range(args.repeat):
                for name, code, mode, wh in jobs[i % len(jobs):] + jobs[:i % len(jobs)]:
                    runs.setdefault(name, []).append(child(code, mode, wh))
            for label, _ in checkouts:
                scan, report = runs[f"scan-{label}"], runs[f"report-{label}"]
                line = (f"{n:>10,} calls  {label:<8} report: {median(report, 'seconds'):6.2f} s "
                        f"(CPU {median(report, 'cpu_seconds'):6.2f} s), scan {median(scan, 'seconds'):5.2f} s "
                        f"(CPU {median(scan, 'cpu_seconds'):5.2f} s): report / scan wall "
                        f"{median(report, 'seconds') / median(scan, 'seconds'):5.1f}x, CPU "
                        f"{median(report, 'cpu_seconds') / median(scan, 'cpu_seconds'):5.1f}x (target <= 3x); "
                        f"peak RSS report {max(r['rss'] for r in report):5.0f} MiB, scan "
                        f"{max(r['rss'] for r in scan):4.0f} MiB; report imports {median(report, 'import_seconds'):.1f} s")
                print(line, flush=True)
                lines.append(line)
    finally:
        if args.dir is None:
            shutil.rmtree(work, ignore_errors=True)
    print()
    print("\n".join(lines))
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; targets at 5 million calls: report <= 3x "
          "the scan, peak RSS of sync and report <= 400 MiB")


if __name__ == "__main__":
    main()
