"""Per-call overhead of shadow mode over the bare legacy call, next to writing one structlog JSON line to a file.

Run: python3 tests/benchmarks/bench_adapter.py [--calls N]
Targets (issue 3): median overhead <= 1/4 of the structlog line, p99 overhead <= one line. The call log writes to
a real SQLite file in the background while this runs, so its cost on the caller's core is included.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import structlog

import shadow
from shadow.calllog._store import SqlStore
from shadow.calllog._writer import Writer, set_writer
from shadow.testing import InMemoryFlags


def legacy(user_id: str, fields: list[str], limit: int = 10) -> dict[str, Any]:
    return {"id": user_id, "fields": fields, "limit": limit}


def timings(fn: Callable[[], object], n: int) -> list[int]:
    out = []
    clock = time.perf_counter_ns
    for _ in range(n):
        t0 = clock()
        fn()
        out.append(clock() - t0)
    return out


def p(values: list[int], q: float) -> float:
    ordered = sorted(values)
    return float(ordered[min(len(ordered) - 1, int(q * len(ordered)))])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=5)
    ns = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{tmp}/bench.db"
        store = SqlStore(url)
        writer = Writer(store, queue_size=1_000_000, batch_size=500, flush_interval=0.2, spool=None)
        set_writer(writer)
        wrapped = shadow.tool(name="legacy", flags=InMemoryFlags({"legacy": "shadow"}))(legacy)
        log_file = Path(tmp, "log.jsonl").open("w")  # noqa: SIM115
        logger = structlog.wrap_logger(
            structlog.WriteLogger(log_file),
            processors=[structlog.processors.TimeStamper(fmt="iso"), structlog.processors.JSONRenderer()],
        )
        record = {"session_id": "s-1", "seq": 1, "tool": "legacy", "mode": "shadow", "variant": "legacy",
                  "fingerprint": "0" * 32, "args": {"user_id": "u-1", "fields": ["a", "b"], "limit": 10},
                  "outcome": "ok", "latency_us": 3}
        bare_all: list[int] = []
        shadow_all: list[int] = []
        line_all: list[int] = []
        with shadow.session("bench"):
            for _ in range(ns.rounds):  # interleave rounds so drift hits all three alike
                bare_all += timings(lambda: legacy("u-1", ["a", "b"]), ns.calls)
                shadow_all += timings(lambda: wrapped("u-1", ["a", "b"]), ns.calls)
                line_all += timings(lambda: logger.info("call", **record), ns.calls)
                writer.flush(60)
        writer.close()
        set_writer(None)
        log_file.close()
    bare_med, bare_p99 = statistics.median(bare_all), p(bare_all, 0.99)
    over_med = statistics.median(shadow_all) - bare_med
    over_p99 = p(shadow_all, 0.99) - bare_p99
    line_med, line_p99 = statistics.median(line_all), p(line_all, 0.99)
    print(f"calls per arm: {len(bare_all)}  (written to SQLite: {writer.stats.written})")
    print(f"bare legacy call     median {bare_med:8.0f} ns   p99 {bare_p99:8.0f} ns")
    print(f"shadow overhead      median {over_med:8.0f} ns   p99 {over_p99:8.0f} ns")
    print(f"structlog JSON line  median {line_med:8.0f} ns   p99 {line_p99:8.0f} ns")
    print(f"ratio median overhead / line median: {over_med / line_med:.3f}  (target <= 0.25)")
    print(f"ratio p99 overhead / line median:    {over_p99 / line_med:.3f}  (target <= 1.00)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
