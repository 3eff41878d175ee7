"""Benchmark of ``shadow sync`` and ``shadow report loop-rate`` at scale: time next to a plain scan, peak memory.

Run: python3 tests/benchmarks/bench_scale.py                           # 1 and 5 million calls (several minutes)
     python3 tests/benchmarks/bench_scale.py --calls 1000000           # one size
     python3 tests/benchmarks/bench_scale.py --compare /path/to/main   # also another checkout (before), alternated

The call log is the synthetic one of bench_report.py (sessions of 40 calls over 8 tools and 30 days, 15% errors,
repeats, marks, a 50% then 100% cutover), generated inside SQLite by one recursive INSERT per million calls (about
10 s per million; not shadowed calls); with ``--dir`` a log already there is reused. Every measurement is a fresh
process of its own, waited for with ``os.wait4``, so its peak RSS is its own:

* sync: the command line's ``shadow sync --rebuild`` into a new warehouse file (its default memory limit unless
  ``--memory-limit``); the peak RSS of its process, and apart that of the SQLite reader process it starts;
* report: ``shadow report loop-rate --no-sync`` (table output) on that warehouse;
* scan: ``bench_report.py``'s plain scan (the columns the report reads, aggregated by arm, tool and day, from
  ``calls`` and ``error_followups``) in a process that imports only ``duckdb``, with DuckDB's own defaults.

The report and the scan are timed inside their process from after the imports (a fixed cost, printed apart; the
scan's opening of the warehouse is inside its time, as the report's is), wall and CPU seconds; each is run
``--repeat`` times, alternated with the other checkout's, and the median shown. On a loaded machine the wall
ratio moves with the load; the CPU ratio is steadier. Targets at 5 million calls: report <= 3x the scan; peak RSS
of the sync and of the report <= 400 MiB, flat in the log's size.
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

from bench_report import PLAIN_SCAN  # noqa: E402

CHILD = r"""
import contextlib, io, json, resource, sys, time
mode, warehouse, url, memory_limit, scan = sys.argv[1:6]


def cpu():
    own = resource.getrusage(resource.RUSAGE_SELF)
    return own.ru_utime + own.ru_stime


t_start = time.perf_counter()
import duckdb
if mode != "scan":
    from shadow.cli import app
    from shadow.analytics import _render, _report, _sync, _warehouse  # what the commands import on first use
imports = time.perf_counter() - t_start
limit = ["--memory-limit", memory_limit] if memory_limit else []
t0, c0 = time.perf_counter(), cpu()
if mode == "scan":  # DuckDB's own defaults, as a user's ad-hoc query would run
    con = duckdb.connect(warehouse, read_only=True)
    con.execute("SET enable_progress_bar = false")  # as the warehouse does: it would print on stdout
    for query in json.loads(scan):
        con.execute(query).fetchall()
    con.close()
else:
    argv = (["report", "loop-rate", "--no-sync", "--warehouse", warehouse] if mode == "report" else
            ["sync", "--rebuild", "--db-url", url, "--warehouse", warehouse])
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            app(argv + limit, standalone_mode=False)
        except SystemExit as exc:
            if exc.code:
                raise
    if mode == "report":
        assert "loop rate" in out.getvalue().lower(), out.getvalue()[:2000]
print(json.dumps({"seconds": time.perf_counter() - t0, "cpu_seconds": cpu() - c0, "import_seconds": imports,
                  "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "child_rss": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))
"""


def child(code: Path, mode: str, warehouse: Path, url: str = "", memory_limit: str = "") -> dict[str, float]:
    """One fresh process running ``mode`` with ``code`` first on the path: its figures, wall seconds, peak RSS."""
    if mode == "sync":
        for p in (warehouse, Path(f"{warehouse}.wal")):
            p.unlink(missing_ok=True)
    argv = [sys.executable, "-c", CHILD, mode, str(warehouse), url, memory_limit, json.dumps(PLAIN_SCAN)]
    env = dict(os.environ, PYTHONPATH=str(code))
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, env=env, stdout=out, stderr=err, cwd=code)
        _, status, usage = os.wait4(proc.pid, 0)  # this process's own usage (and that of those it waited for)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if proc.returncode:
            raise SystemExit(f"{mode} of {code} failed ({proc.returncode}):\n{err.read().decode()[-3000:]}")
        text = out.read().decode()
        lines = [line[line.index('{"seconds"'):] for line in text.splitlines() if '{"seconds"' in line]
        if not lines:
            raise SystemExit(f"{mode} of {code} printed no figures:\n{text[-2000:]}\n{err.read().decode()[-2000:]}")
        found = json.loads(lines[-1])
    return {**found, "wall": wall, "peak_rss": usage.ru_maxrss / 1024}


def median(runs: list[dict[str, float]], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, nargs="+", default=[1_000_000, 5_000_000],
                        help="sizes of the call log (default 1 and 5 million)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each measurement, alternated; the median")
    parser.add_argument("--sync-repeat", type=int, default=1, help="syncs per checkout and size (the median)")
    parser.add_argument("--memory-limit", default="",
                        help="--memory-limit of the sync and the report (default: the commands' own default)")
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
            syncs: dict[str, list[dict[str, float]]] = {}
            for i in range(args.sync_repeat):
                for label, code in checkouts[i % len(checkouts):] + checkouts[:i % len(checkouts)]:
                    wh = work / f"wh-{label}-{n}.duckdb"
                    syncs.setdefault(label, []).append(child(code, "sync", wh, url, args.memory_limit))
            for label, _ in checkouts:
                runs = syncs[label]
                line = (f"{n:>10,} calls  {label:<8} sync:   {median(runs, 'seconds'):6.1f} s (CPU "
                        f"{median(runs, 'cpu_seconds'):6.1f} s); peak RSS {max(r['rss'] for r in runs):5.0f} MiB, "
                        f"its SQLite reader {max(r['child_rss'] for r in runs):4.0f} MiB (target <= 400 MiB)")
                print(line, flush=True)
                lines.append(line)
            timed: dict[str, list[dict[str, float]]] = {}
            jobs = [(f"{mode}-{label}", code, mode) for mode in ("scan", "report") for label, code in checkouts]
            for i in range(args.repeat):
                for name, code, mode in jobs[i % len(jobs):] + jobs[:i % len(jobs)]:
                    wh = work / f"wh-{name.split('-', 1)[1]}-{n}.duckdb"
                    timed.setdefault(name, []).append(child(code, mode, wh, url, args.memory_limit))
            for label, _ in checkouts:
                scan, report = timed[f"scan-{label}"], timed[f"report-{label}"]
                line = (f"{n:>10,} calls  {label:<8} report: {median(report, 'seconds'):6.2f} s (CPU "
                        f"{median(report, 'cpu_seconds'):5.2f} s), scan {median(scan, 'seconds'):5.2f} s (CPU "
                        f"{median(scan, 'cpu_seconds'):5.2f} s): report / scan wall "
                        f"{median(report, 'seconds') / median(scan, 'seconds'):4.1f}x, CPU "
                        f"{median(report, 'cpu_seconds') / median(scan, 'cpu_seconds'):4.1f}x (target <= 3x); "
                        f"peak RSS report {max(r['rss'] for r in report):5.0f} MiB (target <= 400 MiB), scan "
                        f"{max(r['rss'] for r in scan):4.0f} MiB; imports (not timed) report "
                        f"{median(report, 'import_seconds'):.1f} s")
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
