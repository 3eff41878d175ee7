"""The call log under load: records per second the writer sustains from raw calls, and offered load vs drops.

Run: python3 tests/benchmarks/bench_load.py [--records N] [--calls N] [--threads 1,8,16,64] [--pg-url URL]

1. Writer throughput built from raw calls (``PendingCall``s, as ``@shadow.tool`` submits them, not pre-built rows):
   submitted as fast as the writer drains them (no overflow), then ``flush``; records/s and CPU per record.
2. Offered load vs drops: T threads call a tool that sleeps 1 ms (``--calls`` in total, default settings); prints
   calls/s offered, written, spooled (the disk buffer, replayed before ``flush`` returns) and dropped.
Each measurement runs in a fresh process. PostgreSQL from ``--pg-url`` or ``SHADOW_TEST_POSTGRES_URL``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def throughput(n: int) -> dict[str, Any]:
    """Submit N raw calls to the process writer and flush."""
    import inspect

    import shadow
    from shadow.calllog import get_writer
    from shadow.calllog._pending import PendingCall, ToolSpec
    from shadow.flags import Mode, Variant

    def create_task(title: str, due: str, tags: list[str]) -> dict[str, Any]:
        return {"id": 1, "title": title, "due": due, "tags": tags}

    spec = ToolSpec("create_task", signature=inspect.signature(create_task))
    calls = [PendingCall(spec=spec, mode=Mode.SHADOW, variant=Variant.LEGACY, session_id=f"s{i // 20}", seq=i % 20 + 1,
                         started_ns=time.time_ns(), latency_ns=1000, args=(f"task {i}", "2025-01-01"),
                         kwargs={"tags": ["a", "b"]}, value=create_task(f"task {i}", "2025-01-01", ["a", "b"]))
             for i in range(n)]
    writer = get_writer()
    writer.submit(calls[0])
    shadow.flush(60)
    c0, t0 = _cpu(), time.monotonic()
    room = writer.queue_size - writer.batch_size
    for call in calls[1:]:
        while len(writer._queue) >= room:  # feed as fast as the writer drains, without overflowing to the spool
            time.sleep(0.0005)
        writer.submit(call)
    shadow.flush(600)
    wall, used = time.monotonic() - t0, _cpu() - c0
    stats = writer.stats
    return {"records_per_s": (n - 1) / wall, "cpu_us": used / (n - 1) * 1e6, "spooled": stats.spooled,
            "dropped": stats.dropped}


def offered(threads: int, calls: int) -> dict[str, Any]:
    """T threads calling a 1 ms I/O tool, ``calls`` in total, then ``flush``."""
    import shadow
    from shadow.calllog import get_writer
    from shadow.flags import FlagState, Mode, StaticFlags

    @shadow.tool(flags=StaticFlags({"io": FlagState(Mode.SHADOW)}))
    def io(i: int) -> dict[str, int]:
        time.sleep(0.001)
        return {"i": i}

    def run(part: int) -> None:
        with shadow.session(f"t{part}"):
            for i in range(part, calls, threads):
                io(i)

    io(-1)
    shadow.flush(60)
    workers = [threading.Thread(target=run, args=(p,)) for p in range(threads)]
    t0 = time.monotonic()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    rate = calls / (time.monotonic() - t0)
    flushed = shadow.flush(600)
    stats = get_writer().stats
    return {"offered": rate, "written": stats.written - 1, "spooled": stats.spooled, "replayed": stats.replayed,
            "dropped": stats.dropped, "flushed": flushed}


def _child(kind: str, arg: int, n: int, url: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as directory:
        env = {**os.environ, "PYTHONPATH": str(REPO), "SHADOW_SPOOL": str(Path(directory, "b.spool")),
               "SHADOW_DB_URL": url or f"sqlite:///{directory}/bench.db"}
        done = subprocess.run([sys.executable, __file__, "--child", kind, "--arg", str(arg), "--n", str(n)],
                              env=env, capture_output=True, text=True, check=True, timeout=1800)
        line = next(x for x in done.stdout.splitlines() if x.startswith("RESULT "))
        result: dict[str, Any] = json.loads(line[len("RESULT "):])
        return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=20000)
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--threads", default="1,8,16,64")
    ap.add_argument("--pg-url", default=os.environ.get("SHADOW_TEST_POSTGRES_URL"))
    ap.add_argument("--child")
    ap.add_argument("--arg", type=int, default=0)
    ap.add_argument("--n", type=int, default=0)
    ns = ap.parse_args()
    if ns.child:
        out = throughput(ns.n) if ns.child == "throughput" else offered(ns.arg, ns.n)
        print("RESULT " + json.dumps(out), flush=True)
        return 0
    import bench_adapter  # the throw-away PostgreSQL database helpers

    pg, name = bench_adapter._pg_schema_url(ns.pg_url) if ns.pg_url else ("", "")
    try:
        load = os.getloadavg()[0]
        print(f"Writer throughput from raw calls ({ns.records} records; load {load:.1f}, {os.cpu_count()} CPUs)")
        for backend, url in (("sqlite", ""), ("postgresql", pg)):
            if backend == "postgresql" and not pg:
                print("postgresql skipped: set SHADOW_TEST_POSTGRES_URL or pass --pg-url")
                continue
            r = _child("throughput", 0, ns.records, url)
            print(f"  {backend:10s} {r['records_per_s']:9,.0f} records/s  {r['cpu_us']:6.1f} us CPU/record  "
                  f"spooled {r['spooled']}  dropped {r['dropped']}")
        print(f"Offered load vs drops: 1 ms I/O tool, {ns.calls} calls, SQLite")
        print(f"  {'threads':>7s} {'offered/s':>10s} {'written':>8s} {'spooled':>8s} {'replayed':>9s} {'dropped':>8s}")
        for threads in (int(t) for t in ns.threads.split(",")):
            r = _child("offered", threads, ns.calls, "")
            print(f"  {threads:7d} {r['offered']:10,.0f} {r['written']:8d} {r['spooled']:8d} {r['replayed']:9d} "
                  f"{r['dropped']:8d}")
    finally:
        if name:
            bench_adapter._drop_pg(ns.pg_url, name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
