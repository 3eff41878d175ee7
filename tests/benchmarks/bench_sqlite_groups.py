"""SQLite inserts in 32-row statements against one statement per row, alone and beside a busy Python thread.

Run: python3 tests/benchmarks/bench_sqlite_groups.py [--rows N] [--rounds R]

The SQLite store inserts a batch as 32-row statements (``_Insert.statements``). Its driver lets go of the GIL
for every statement step, and when another thread is busy in Python, each step costs the inserting thread a wait
for the GIL back: one wait per group instead of one per row. This writes N call records (default 20,000) in
batches of 500 through ``SqlStore.write``, grouped and one row per statement (``executemany``), each in a fresh
database, alone and with a thread spinning in Python alongside, and prints the inserting thread's CPU per row
(``time.thread_time``, median of R interleaved rounds) and the ratio. No target: evidence for the design.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "calllog"))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from test_store import call

from shadow.calllog._store import SqlStore


def _run(rows: int, grouped: bool, busy: bool) -> float:
    records = [call(i) for i in range(rows)]
    with tempfile.TemporaryDirectory() as directory:
        store = SqlStore(f"sqlite:///{directory}/log.db")
        store.write([call(rows)])  # the schema, the engine and the prepared inserts
        if not grouped:
            store.prepare()[0].group_sql = None  # the per-row statement, as before the groups
        stop = threading.Event()

        def spin() -> None:
            while not stop.is_set():
                sum(range(50))

        spinner = threading.Thread(target=spin, daemon=True)
        if busy:
            spinner.start()
        try:
            start = time.thread_time()
            for at in range(0, rows, 500):
                store.write(records[at:at + 500])
            used = time.thread_time() - start
        finally:
            stop.set()
            if busy:
                spinner.join()
        return used / rows * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    got: dict[tuple[bool, bool], list[float]] = {}
    for _ in range(args.rounds):
        for busy in (False, True):
            for grouped in (True, False):
                got.setdefault((busy, grouped), []).append(_run(args.rows, grouped, busy))
    print(f"{args.rows} rows in batches of 500, inserting thread's CPU per row, median of {args.rounds} rounds")
    for busy in (False, True):
        grouped, per_row = (statistics.median(got[(busy, g)]) for g in (True, False))
        print(f"{'beside a busy thread' if busy else 'alone':<21} groups {grouped:6.1f} us, one row per statement "
              f"{per_row:6.1f} us: {grouped / per_row:.2f}x")


if __name__ == "__main__":
    main()
