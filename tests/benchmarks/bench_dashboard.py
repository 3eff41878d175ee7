"""Benchmark of the cutover dashboard: build time next to the loop-rate report, and HTML size at two call counts.

Run: python3 tests/benchmarks/bench_dashboard.py                  # 10 million calls (several minutes)
     python3 tests/benchmarks/bench_dashboard.py --calls 1000000  # a quick run

Targets: building the dashboard from a synced warehouse takes at most 3x the loop-rate report on the same
warehouse (both timed alternately in this one run, medians compared); the HTML's size does not depend on the call
count (the same 30 days of traffic at --small and at --calls calls give pages within 1% of each other).
The synthetic call log is bench_report.py's (sessions of 40 calls over 8 tools and 30 days, a 50% cutover on day 10
and 100% on day 20), generated inside SQLite and synced into DuckDB.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(Path(__file__).resolve().parent)]

from bench_report import generate, peak_rss_mib  # noqa: E402

from shadow.analytics._report import loop_rate_report  # noqa: E402
from shadow.analytics._warehouse import Warehouse  # noqa: E402
from shadow.calllog import _migrate as migrate  # noqa: E402
from shadow.dashboard._page import build_dashboard  # noqa: E402


def synced(work: Path, name: str, calls: int, *, reuse: bool = False) -> Path:
    """A SQLite log of ``calls`` synthetic calls over the same 30 days, synced into a new warehouse file."""
    store, path = work / f"{name}.db", work / f"{name}.duckdb"
    if reuse and path.exists():
        with Warehouse.open(path, read_only=True) as wh:
            found = wh.con.execute("SELECT count(*) FROM calls").fetchall()[0][0]
        if found == calls:
            print(f"{name}: reusing the synced warehouse {path} ({calls:,} calls)")
            return path
    for p in (store, path):
        p.unlink(missing_ok=True)
    url = f"sqlite:///{store}"
    migrate.ensure(url)
    started = time.perf_counter()
    generate(store, 0, calls, calls, old=True)
    generated = time.perf_counter() - started
    with Warehouse.open(path) as wh:
        result = wh.sync(url, rebuild=True)
    print(f"{name}: {calls:,} calls generated in {generated:.1f} s, synced in {result.seconds:.1f} s")
    return path


def alternate(first: Callable[[], object], second: Callable[[], object], rounds: int) -> tuple[float, float]:
    """Median seconds of ``first`` and ``second``, alternating which goes first (ABBA), ``rounds`` times each."""
    a: list[float] = []
    b: list[float] = []
    for i in range(rounds):
        pairs = [(first, a), (second, b)]
        for fn, out in pairs if i % 2 == 0 else reversed(pairs):
            started = time.perf_counter()
            fn()
            out.append(time.perf_counter() - started)
    return statistics.median(a), statistics.median(b)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=10_000_000, help="calls in the big log (default 10 million)")
    parser.add_argument("--small", type=int, default=200_000, help="calls in the small log, for the size check")
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds of report and dashboard")
    parser.add_argument("--reuse", action="store_true", help="reuse warehouses of the same sizes left in --dir")
    parser.add_argument("--dir", type=Path, default=None, help="work directory (default: a temporary one)")
    args = parser.parse_args()
    work = args.dir or Path(tempfile.mkdtemp(prefix="bench-dashboard-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"work directory {work}")

    sizes: dict[int, int] = {}
    small = synced(work, "small", args.small, reuse=args.reuse)
    with Warehouse.open(small, read_only=True) as wh:
        sizes[args.small] = len(build_dashboard(wh).encode())
    big = synced(work, "big", args.calls, reuse=args.reuse)
    with Warehouse.open(big, read_only=True) as wh:
        report_s, dashboard_s = alternate(lambda: loop_rate_report(wh), lambda: build_dashboard(wh), args.rounds)
        page = build_dashboard(wh)
        sizes[args.calls] = len(page.encode())

    print()
    print(f"loop-rate report on {args.calls:,} calls: {report_s:.2f} s; dashboard: {dashboard_s:.2f} s "
          f"(medians of {args.rounds} rounds, ABBA order)")
    print(f"dashboard / report ........................... {dashboard_s / report_s:6.2f}x   (target <= 3x)")
    for calls, size in sizes.items():
        print(f"HTML size at {calls:>12,} calls: {size:>10,} bytes")
    spread = abs(sizes[args.calls] - sizes[args.small]) / sizes[args.small]
    print(f"size difference between the two ............. {spread:6.2%}   (target: independent of calls, < 1%)")
    print(f"peak RSS of this process ..................... {peak_rss_mib():,.0f} MiB")


if __name__ == "__main__":
    main()
