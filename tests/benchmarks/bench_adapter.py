"""The true cost of a shadowed call: the whole process's CPU per call (caller and writer thread), next to one
structlog JSON line of the same record, plus the caller-side median and p99.

Run: python3 tests/benchmarks/bench_adapter.py [--calls N] [--rounds R] [--pg-url URL]
Each arm runs in a fresh process (``--child ARM``), rounds interleave the arms, and the medians are printed as
multiples of the structlog line measured in the same run. The measure is ``resource.getrusage(RUSAGE_SELF)`` (every
thread) over N calls plus the final ``shadow.flush()``, after a warm-up. Target (issue 12): shadow mode at most
1.5x the structlog line. PostgreSQL from ``--pg-url`` or ``SHADOW_TEST_POSTGRES_URL`` (skipped without one).

The ``structlog`` arm writes every field of the stored record (26, including the structured payload and the
argument hashes; the derived values as constants); ``structlog_lean`` is the 11-field line earlier runs compared
against, printed for reference.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
ARMS = ("bare", "structlog", "structlog_lean", "legacy_flag", "shadow_sqlite", "shadow_pg")


def legacy(user_id: str, fields: list[str], limit: int = 10) -> dict[str, Any]:
    return {"id": user_id, "fields": fields, "limit": limit}


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def child(arm: str, n: int, directory: str) -> dict[str, Any]:
    """One arm in this process: N calls and the final flush; CPU per call and caller latencies."""
    import contextlib

    flush: Any = lambda: True  # noqa: E731
    ctx: Any = contextlib.nullcontext()
    fn: Any = legacy
    if arm.startswith("structlog"):
        import structlog

        fh = open(Path(directory, "structlog.jsonl"), "w")  # noqa: SIM115
        logger = structlog.wrap_logger(structlog.WriteLogger(fh), processors=[
            structlog.processors.TimeStamper(fmt="iso"), structlog.processors.JSONRenderer()])
        seq = [0]
        # The same record as the call log stores (every column shadow writes for this call, with values of the
        # same shape); the values shadow derives (id, keyed fingerprints) are constants here, so their cost is
        # counted for shadow only.
        record_id, digest, host = "01a2328e-ba6c-7472-b07c-494c35fd9cca", "0" * 32, os.uname().nodename
        epoch = time.time_ns() // 1000

        def fn(user_id: str, fields: list[str], limit: int = 10) -> dict[str, Any]:
            t0 = time.perf_counter_ns()
            value = legacy(user_id, fields, limit)
            seq[0] += 1
            if arm == "structlog_lean":  # the line of earlier runs: 11 of the record's 26 fields
                logger.info("call", session_id="bench", seq=seq[0], tool="legacy", mode="shadow", variant="legacy",
                            fingerprint=digest, args={"user_id": user_id, "fields": fields, "limit": limit},
                            outcome="ok", legacy_payload=value, latency_us=(time.perf_counter_ns() - t0) // 1000,
                            process=str(os.getpid()))
                return value
            logger.info("call", id=record_id, session_id="bench", seq=seq[0], tool="legacy", mode="shadow",
                        variant="legacy", fingerprint=digest, arg_hashes={"user_id": digest, "fields": digest},
                        args={"user_id": user_id, "fields": fields}, outcome="ok", legacy_payload=value,
                        new_payload={"ok": True, "data": value}, code=None, retryable=None, next_action=None,
                        retry_after_ms=None, error_field=None, rule=None, unmapped=False, schema_valid=True,
                        latency_us=(time.perf_counter_ns() - t0) // 1000, process=str(os.getpid()), host=host,
                        source="live", epoch=epoch)
            return value

        flush = fh.flush
    elif arm != "bare":
        import shadow
        from shadow.flags import FlagState, Mode, StaticFlags

        mode = Mode.LEGACY if arm == "legacy_flag" else Mode.SHADOW
        fn = shadow.tool(name="legacy", flags=StaticFlags({"legacy": FlagState(mode)}))(legacy)
        flush = lambda: shadow.flush(300)  # noqa: E731
        ctx = shadow.session("bench")
    with ctx:
        for i in range(300):
            fn(f"u-{i}", ["a", "b"])
        flush()
        time.sleep(0.2)
        lat: list[int] = []
        clock = time.perf_counter_ns
        c0 = _cpu()
        for i in range(n):
            s = clock()
            fn(f"u-{i}", ["a", "b"])
            lat.append(clock() - s)
        flush()
        used = _cpu() - c0
    lat.sort()
    out: dict[str, Any] = {"arm": arm, "cpu_us": used / n * 1e6, "median_ns": statistics.median(lat),
                           "p99_ns": lat[int(0.99 * (len(lat) - 1))]}
    if arm.startswith("shadow"):
        from shadow.calllog import get_writer

        stats = get_writer().stats
        out["dropped"] = stats.dropped
        out["spooled"] = stats.spooled
    return out


def run_arm(arm: str, n: int, pg_url: str | None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as directory:
        env = {**os.environ, "PYTHONPATH": str(REPO), "SHADOW_SPOOL": str(Path(directory, "bench.spool"))}
        env["SHADOW_DB_URL"] = pg_url if arm == "shadow_pg" and pg_url else f"sqlite:///{directory}/bench.db"
        done = subprocess.run([sys.executable, __file__, "--child", arm, "--calls", str(n), "--dir", directory],
                              env=env, capture_output=True, text=True, check=True, timeout=900)
        line = next(x for x in done.stdout.splitlines() if x.startswith("RESULT "))
        result: dict[str, Any] = json.loads(line[len("RESULT "):])
        return result


def _pg_schema_url(admin: str) -> tuple[str, str]:
    """A throw-away database for the PostgreSQL arm."""
    import uuid

    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    name = f"shadow_bench_{uuid.uuid4().hex[:8]}"
    engine = create_engine(admin, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    engine.dispose()
    return make_url(admin).set(database=name).render_as_string(hide_password=False), name


def _drop_pg(admin: str, name: str) -> None:
    from sqlalchemy import create_engine, text

    engine = create_engine(admin, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    engine.dispose()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", type=int, default=5000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--pg-url", default=os.environ.get("SHADOW_TEST_POSTGRES_URL"))
    ap.add_argument("--child")
    ap.add_argument("--dir")
    ns = ap.parse_args()
    if ns.child:
        print("RESULT " + json.dumps(child(ns.child, ns.calls, ns.dir)), flush=True)
        return 0
    arms = [a for a in ARMS if a != "shadow_pg" or ns.pg_url]
    pg_url, pg_name = _pg_schema_url(ns.pg_url) if ns.pg_url else (None, "")
    results: dict[str, list[dict[str, Any]]] = {a: [] for a in arms}
    try:
        for _ in range(ns.rounds):
            for arm in arms:
                results[arm].append(run_arm(arm, ns.calls, pg_url))
    finally:
        if ns.pg_url and pg_name:
            _drop_pg(ns.pg_url, pg_name)
    load = os.getloadavg()
    print(f"CPU per call over {ns.calls} calls + final flush, median of {ns.rounds} rounds "
          f"(load {load[0]:.1f}; {os.cpu_count()} CPUs)")
    base = statistics.median(r["cpu_us"] for r in results["structlog"])
    print(f"{'arm':16s} {'cpu us/call':>12s} {'x structlog':>12s} {'caller median ns':>17s} {'caller p99 ns':>14s}"
          f" {'spooled':>8s} {'dropped':>8s}")
    for arm in arms:
        rows = results[arm]
        cpu = statistics.median(r["cpu_us"] for r in rows)
        med = statistics.median(r["median_ns"] for r in rows)
        p99 = statistics.median(r["p99_ns"] for r in rows)
        spooled = max(r.get("spooled", 0) for r in rows)
        dropped = max(r.get("dropped", 0) for r in rows)
        print(f"{arm:16s} {cpu:12.1f} {cpu / base:11.2f}x {med:17.0f} {p99:14.0f} {spooled:8d} {dropped:8d}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
