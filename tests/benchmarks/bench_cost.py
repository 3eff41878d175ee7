"""The cost of a shadowed call (issue 32), next to what else a host could do with each call, as ratios.

Run: python3 tests/benchmarks/bench_cost.py [--calls N] [--rounds R] [--threads T] [--pg-url URL] [--only ARMS]
     [--base CHECKOUT]

Workload: N calls (default 30,000) of ``lookup(user_id, fields, limit=10)`` returning a small dict, one call in
ten returning ``{"error": "Bad request"}``, back to back (a burst: the writer's 10,000-record queue is the only
buffer), ``SHADOW_FLAGS="*=shadow"``, default settings. Each arm runs in a fresh process (``--child ARM``); rounds
interleave the arms; medians are printed. The measure is the whole process's CPU (``getrusage``, every thread)
over the N calls and the final flush, after a warm-up; the caller's own CPU (``time.thread_time``) and its
latencies (median, p99) are printed too.

Arms: ``floor`` (a plain loop building exactly the row shadow stores, all 28 columns: UUIDv7 id, keyed BLAKE2b
fingerprints, orjson payloads, the error's code and rule, the session's epoch, the rules' fingerprint; inserting it
with ``executemany`` in batches of 500 into the same table and indexes), ``structlog_lean`` (a JSON line of the call: tool, args, result), ``structlog`` (a JSON line of the 26 fields shadow stores),
``otel`` (an OpenTelemetry span per call, batch processor, in-memory exporter), ``shadow``; with PostgreSQL
(``--pg-url`` or ``SHADOW_TEST_POSTGRES_URL``) also ``floor_pg`` and ``shadow_pg``.
Targets: shadow at most 1.5x the floor of its backend (whole-process CPU); shadow's caller p99 at most 2x the
structlog line's (``structlog_lean``) in the same burst; every call stored (``stored`` = N + warm-up).

Threads (``--threads T``, default 16; 0 skips): T threads calling a tool that sleeps 1 ms, with the flags at legacy
and at shadow (SQLite), side by side (``--thread-pairs`` of each per round): the application's call rate. Target:
shadow at least 90% of legacy. Printed with it: how many calls were not yet stored when the threads ended, and how
long storing them took after: a writer that falls behind leaves the application GIL time it will need later (once
the queue is full, callers spool), so a rate is a steady one only when that backlog is small.

Record build (``--build-calls N``, default 3,000; 0 skips): what the writer's build of one record costs (the
``CallRow`` an ``SqlStore`` takes, ``build_row()``), a success against an error (the workload's repeated
``{"error": "Bad request"}``, and errors whose texts all differ),
in one process, best of 5 interleaved rounds. Target: an error at most 2x a success.

``--base CHECKOUT`` runs another tree's shadow arms (and its threads run) in the same rounds, labelled ``base:``:
a change and main measured side by side (``git worktree add /work/wt/base main``).
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
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
ARMS = ("floor", "structlog_lean", "structlog", "otel", "shadow", "floor_pg", "shadow_pg")
WARMUP = 300
BATCH = 500
ERROR: dict[str, Any] = {"error": "Bad request"}


def lookup(user_id: str, fields: list[str], limit: int = 10) -> dict[str, Any]:
    if user_id.endswith("7"):  # one call in ten
        return {"error": "Bad request"}
    return {"id": user_id, "fields": fields, "limit": limit, "name": "Ada", "active": True}


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _structlog(arm: str, directory: str) -> tuple[Any, Any]:
    import structlog

    fh = open(Path(directory, "structlog.jsonl"), "w")  # noqa: SIM115
    logger = structlog.wrap_logger(structlog.WriteLogger(fh), processors=[
        structlog.processors.TimeStamper(fmt="iso"), structlog.processors.JSONRenderer()])
    seq = [0]
    record_id, digest, host, pid = "01a2328e-ba6c-7472-b07c-494c35fd9cca", "0" * 32, os.uname().nodename, os.getpid()

    def fn(user_id: str, fields: list[str], limit: int = 10) -> dict[str, Any]:
        t0 = time.perf_counter_ns()
        value = lookup(user_id, fields, limit)
        seq[0] += 1
        if arm == "structlog_lean":
            logger.info("call", tool="lookup", args={"user_id": user_id, "fields": fields, "limit": limit},
                        result=value)
            return value
        error = "error" in value
        logger.info("call", id=record_id, session_id="bench", seq=seq[0], tool="lookup", mode="shadow",
                    variant="legacy", fingerprint=digest, arg_hashes={"user_id": digest, "fields": digest},
                    args={"user_id": user_id, "fields": fields}, outcome="error" if error else "ok",
                    legacy_payload=value, new_payload={"ok": True, "data": value}, code="INVALID_ARGUMENT" if
                    error else None, retryable=False if error else None, next_action="ask_user" if error else None,
                    retry_after_ms=None, error_field=None, rule=None, unmapped=error, schema_valid=True,
                    latency_us=(time.perf_counter_ns() - t0) // 1000, process=str(pid), host=host,
                    source="live", epoch=None, flag_source="env")
        return value

    return fn, fh.flush


def _otel() -> tuple[Any, Any]:
    import orjson
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    provider = TracerProvider()
    exporter = InMemorySpanExporter()
    provider.add_span_processor(BatchSpanProcessor(exporter))
    tracer = provider.get_tracer("bench")

    def fn(user_id: str, fields: list[str], limit: int = 10) -> dict[str, Any]:
        with tracer.start_as_current_span("tool lookup") as span:
            value = lookup(user_id, fields, limit)
            span.set_attribute("tool", "lookup")
            span.set_attribute("args", orjson.dumps({"user_id": user_id, "fields": fields, "limit": limit}).decode())
            span.set_attribute("result", orjson.dumps(value).decode())
            return value

    def flush() -> None:
        provider.force_flush()
        exporter.clear()

    return fn, flush


def _floor(url: str) -> tuple[Any, Any]:
    """The plain loop: the same row shadow stores, built inline and inserted in batches of 500."""
    import datetime as dt
    import hashlib
    import socket

    import orjson

    from shadow import Rules
    from shadow._ids import new_id
    from shadow.calllog import _migrate as migrate
    from shadow.calllog._records import _CALL_FIELDS

    migrate.ensure(url)
    sqlite = url.startswith("sqlite")
    if sqlite:
        import sqlite3

        conn: Any = sqlite3.connect(url.split(":///", 1)[1], isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        mark = "?"
    else:
        import psycopg

        conn = psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://"), autocommit=True)
        mark = "%s"
    sql = (f"INSERT INTO calls ({', '.join(_CALL_FIELDS)}) VALUES ({', '.join(mark for _ in _CALL_FIELDS)}) "
           "ON CONFLICT (id) DO NOTHING")
    keyed = hashlib.blake2b(digest_size=16, key=os.urandom(32))
    epoch, rules_id = time.time_ns() // 1000, Rules.default().fingerprint  # the session's epoch, the rules' id
    pid, host, rows, seq = str(os.getpid()), socket.gethostname(), [], [0]

    def write() -> None:
        if sqlite:
            conn.execute("BEGIN")
            conn.executemany(sql, rows)
            conn.execute("COMMIT")
        else:
            with conn.cursor() as cur:
                cur.executemany(sql, rows)
        rows.clear()

    def fn(user_id: str, fields: list[str], limit: int = 10) -> dict[str, Any]:
        t0 = time.perf_counter_ns()
        value = lookup(user_id, fields, limit)
        seq[0] += 1
        args = {"user_id": user_id, "fields": fields}  # what the call passed, as shadow stores it
        hasher = keyed.copy()
        hasher.update(orjson.dumps(args, option=orjson.OPT_SORT_KEYS))
        hashes = {}
        for key, item in args.items():
            one = keyed.copy()
            one.update(orjson.dumps(item, option=orjson.OPT_SORT_KEYS))
            hashes[key] = one.hexdigest()
        error = "error" in value
        payload = ({"ok": False, "error": {"code": "validation_error", "message": "Bad request", "retryable": False,
                                           "next_action": "ask_user", "context": None}} if error else
                   {"ok": True, "data": value})
        ts = dt.datetime.now(dt.UTC)
        rows.append((new_id(), "bench", seq[0], ts.isoformat(" ")[:26] if sqlite else ts, "lookup", "shadow",
                     "legacy", hasher.hexdigest(), orjson.dumps(hashes).decode(), orjson.dumps(args).decode(),
                     "error" if error else "ok", orjson.dumps(value).decode(), orjson.dumps(payload).decode(),
                     "validation_error" if error else None, False if error else None,
                     "ask_user" if error else None, None, None, "text:validation_error" if error else None, False,
                     True, (time.perf_counter_ns() - t0) // 1000, pid, host, "live", epoch, "env", rules_id))
        if len(rows) >= BATCH:
            write()
        return value

    return fn, lambda: write() if rows else None


def child(arm: str, n: int, directory: str, url: str) -> dict[str, Any]:
    """One arm in this process: N calls and the final flush; CPU per call and caller latencies."""
    import contextlib

    ctx: Any = contextlib.nullcontext()
    if arm.startswith("structlog"):
        fn, flush = _structlog(arm, directory)
    elif arm == "otel":
        fn, flush = _otel()
    elif arm.startswith("floor"):
        fn, flush = _floor(url)
    else:
        import shadow

        fn = shadow.tool(name="lookup")(lookup)
        flush = lambda: shadow.flush(600)  # noqa: E731
        ctx = shadow.session("bench")
    with ctx:
        for i in range(WARMUP):
            fn(f"w-{i}", ["a", "b"])
        flush()
        time.sleep(0.2)
        lat: list[int] = []
        clock = time.perf_counter_ns
        c0, t0 = _cpu(), time.thread_time()
        for i in range(n):
            s = clock()
            fn(f"u-{i}", ["a", "b"])
            lat.append(clock() - s)
        caller = time.thread_time() - t0
        flush()
        used = _cpu() - c0
    lat.sort()
    out: dict[str, Any] = {"arm": arm, "cpu_us": used / n * 1e6, "caller_us": caller / n * 1e6,
                           "median_ns": statistics.median(lat), "p99_ns": lat[int(0.99 * (len(lat) - 1))]}
    if arm.startswith("shadow"):
        from shadow.calllog import get_writer

        stats = get_writer().stats
        out.update(spooled=stats.spooled, dropped=stats.dropped)
    if arm.startswith(("shadow", "floor")):
        from sqlalchemy import create_engine, text

        engine = create_engine(url)
        with engine.connect() as conn:
            out["stored"] = conn.execute(text("SELECT count(*) FROM calls")).scalar_one()
        engine.dispose()
    return out


def threads_child(mode: str, threads: int, calls: int) -> dict[str, Any]:
    """T threads calling a 1 ms tool, ``calls`` in total: the application's call rate."""
    import shadow

    @shadow.tool(name="io")
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
    end = time.monotonic()
    rate = calls / (end - t0)
    from shadow.calllog import _writer

    writer = _writer._writer  # None at legacy: nothing was logged
    behind = writer.stats.pending if writer is not None else 0  # calls not yet stored when the application ended
    shadow.flush(600)
    spooled = writer.stats.spooled if writer is not None else 0  # with the store up: callers found the queue full
    return {"rate": rate, "behind": behind, "drain": time.monotonic() - end, "spooled": spooled}


def build_child(n: int) -> dict[str, Any]:
    """What one record costs to build (the writer's ``build_row()`` for an ``SqlStore``), a success against an
    error: the calls of the workload captured on the callers' side, then built in interleaved rounds (best of 5).
    ``error`` repeats the workload's ``{"error": "Bad request"}``; ``distinct`` gives every error call its own
    text, new in each round."""
    import shadow
    from shadow.calllog import get_writer

    captured: list[Any] = []
    writer = get_writer()
    writer.submit = captured.append  # type: ignore[method-assign]

    def distinct(user_id: str, fields: list[str], limit: int = 10) -> dict[str, Any]:
        return {"error": f"Bad request: field {user_id} is not known"}

    ok_fn, err_fn = shadow.tool(name="lookup")(lookup), shadow.tool(name="lookup")(distinct)
    rounds = 5
    with shadow.session("bench"):
        for i in range(n):
            ok_fn(f"u-{i}1", ["a", "b"])
        for i in range(n):
            ok_fn(f"u-{i}7", ["a", "b"])
        for i in range(n * rounds):  # texts never seen before in every round (no reading is reused)
            err_fn(f"u-{i}", ["a", "b"])
    best = {k: float("inf") for k in ("ok", "error", "distinct")}
    for r in range(rounds):
        kinds = {"ok": captured[:n], "error": captured[n:2 * n],
                 "distinct": captured[(2 + r) * n:(3 + r) * n]}
        for kind, calls in kinds.items():
            t0 = time.perf_counter()
            for call in calls:
                call.build_row()
            best[kind] = min(best[kind], (time.perf_counter() - t0) / n * 1e6)
    return best


def _run(args: list[str], env: dict[str, str]) -> dict[str, Any]:
    done = subprocess.run([sys.executable, __file__, *args], env=env, capture_output=True, text=True, timeout=1800,
                          check=False)
    if done.returncode:
        raise RuntimeError(f"{args}: {done.stderr[-2000:]}")
    line = next(x for x in done.stdout.splitlines() if x.startswith("RESULT "))
    result: dict[str, Any] = json.loads(line[len("RESULT "):])
    return result


def run_arm(arm: str, n: int, pg_admin: str | None, tree: Path = REPO) -> dict[str, Any]:
    import bench_adapter  # the throw-away PostgreSQL database helpers

    pg_url, pg_name = bench_adapter._pg_schema_url(pg_admin) if arm.endswith("_pg") and pg_admin else (None, "")
    try:
        with tempfile.TemporaryDirectory() as directory:
            url = pg_url or f"sqlite:///{directory}/bench.db"
            env = {**os.environ, "PYTHONPATH": str(tree), "SHADOW_SPOOL": str(Path(directory, "bench.spool")),
                   "SHADOW_DB_URL": url, "SHADOW_FLAGS": "*=shadow"}
            return _run(["--child", arm, "--calls", str(n), "--dir", directory, "--url", url], env)
    finally:
        if pg_admin and pg_name:  # each run starts from an empty database
            bench_adapter._drop_pg(pg_admin, pg_name)


def run_build(calls: int, tree: Path) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as directory:
        env = {**os.environ, "PYTHONPATH": str(tree), "SHADOW_SPOOL": str(Path(directory, "bench.spool")),
               "SHADOW_DB_URL": f"sqlite:///{directory}/bench.db", "SHADOW_FLAGS": "*=shadow"}
        return _run(["--build-child", "--calls", str(calls)], env)


def run_threads(mode: str, threads: int, calls: int, tree: Path = REPO) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as directory:
        env = {**os.environ, "PYTHONPATH": str(tree), "SHADOW_SPOOL": str(Path(directory, "bench.spool")),
               "SHADOW_DB_URL": f"sqlite:///{directory}/bench.db", "SHADOW_FLAGS": f"*={mode}"}
        return _run(["--threads-child", mode, "--threads", str(threads), "--calls", str(calls)], env)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", type=int, default=30000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=16)
    ap.add_argument("--thread-calls", type=int, default=32000)
    ap.add_argument("--thread-pairs", type=int, default=3, help="legacy/shadow pairs of the threads run per round")
    ap.add_argument("--pg-url", default=os.environ.get("SHADOW_TEST_POSTGRES_URL"))
    ap.add_argument("--only", default="")
    ap.add_argument("--base", type=Path, help="another checkout (e.g. main's) whose shadow arms run side by side, "
                    "as base:shadow and base:shadow_pg")
    ap.add_argument("--child")
    ap.add_argument("--threads-child")
    ap.add_argument("--build-child", action="store_true")
    ap.add_argument("--build-calls", type=int, default=3000, help="calls of each kind built (0 skips)")
    ap.add_argument("--dir")
    ap.add_argument("--url")
    ns = ap.parse_args()
    if ns.child:
        print("RESULT " + json.dumps(child(ns.child, ns.calls, ns.dir, ns.url)), flush=True)
        return 0
    if ns.build_child:
        print("RESULT " + json.dumps(build_child(ns.calls)), flush=True)
        return 0
    if ns.threads_child:
        print("RESULT " + json.dumps(threads_child(ns.threads_child, ns.threads, ns.calls)), flush=True)
        return 0
    wanted = set(ns.only.split(",")) if ns.only else set(ARMS)
    arms = [a for a in ARMS if a in wanted and (not a.endswith("_pg") or ns.pg_url)]
    base: Path | None = ns.base.resolve() if ns.base else None
    runs: list[tuple[str, str, Path]] = [(a, a, REPO) for a in arms]  # (label, arm, tree)
    if base is not None:
        runs += [(f"base:{a}", a, base) for a in arms if a.startswith("shadow")]
    results: dict[str, list[dict[str, Any]]] = {label: [] for label, _, _ in runs}
    modes: list[tuple[str, str, Path]] = [("legacy", "legacy", REPO), ("shadow", "shadow", REPO)]
    if base is not None:
        modes.append(("base:shadow", "shadow", base))
    rates: dict[str, list[float]] = {label: [] for label, _, _ in modes}
    behind: dict[str, list[dict[str, float]]] = {label: [] for label, _, _ in modes}
    builds: dict[str, list[dict[str, float]]] = {label: [] for label, _, _ in modes if label != "legacy"}
    for _ in range(ns.rounds):
        if ns.build_calls:
            for label, _mode, tree in modes[1:]:
                builds[label].append(run_build(ns.build_calls, tree))
        for label, arm, tree in runs:
            results[label].append(run_arm(arm, ns.calls, ns.pg_url, tree))
        if ns.threads:
            for _pair in range(ns.thread_pairs):
                for label, mode, tree in modes:
                    got = run_threads(mode, ns.threads, ns.thread_calls, tree)
                    rates[label].append(got["rate"])
                    behind[label].append(got)
    med = {a: {k: statistics.median(r[k] for r in rows) for k in ("cpu_us", "caller_us", "median_ns", "p99_ns")}
           for a, rows in results.items()}
    print(f"{ns.calls} calls (1 in 10 an error) back to back + final flush, median of {ns.rounds} rounds "
          f"(load {os.getloadavg()[0]:.1f}; {os.cpu_count()} CPUs)" + (f"; base: {base}" if base else ""))
    print(f"{'arm':17s} {'cpu us/call':>11s} {'caller us':>9s} {'median ns':>9s} {'p99 ns':>8s} {'spooled':>7s} "
          f"{'dropped':>7s} {'stored':>7s}")
    for arm, rows in results.items():
        m = med[arm]
        spooled = max(r.get("spooled", 0) for r in rows)
        dropped = max(r.get("dropped", 0) for r in rows)
        stored = min((r["stored"] for r in rows), default="-") if "stored" in rows[0] else "-"
        print(f"{arm:17s} {m['cpu_us']:11.1f} {m['caller_us']:9.1f} {m['median_ns']:9.0f} {m['p99_ns']:8.0f} "
              f"{spooled:7d} {dropped:7d} {stored!s:>7s}")
    for prefix in ("", "base:") if base is not None else ("",):
        for shadow_arm, floor in (("shadow", "floor"), ("shadow_pg", "floor_pg")):
            label = prefix + shadow_arm
            if label not in med:
                continue
            cpu = med[label]["cpu_us"]
            parts = [f"{cpu / med[other]['cpu_us']:.2f}x {other}" for other in (floor, "structlog_lean", "structlog",
                                                                                "otel") if other in med]
            print(f"{label} CPU per call: " + ", ".join(parts) + " (target: at most 1.5x the floor)")
            if "structlog_lean" in med:
                print(f"{label} caller p99: {med[label]['p99_ns'] / med['structlog_lean']['p99_ns']:.2f}x "
                      "the structlog line's (target: at most 2x)")
    for label, got_builds in builds.items():
        if not got_builds:
            continue
        m = {k: statistics.median(b[k] for b in got_builds) for k in ("ok", "error", "distinct")}
        print(f"{label} record build: success {m['ok']:.1f} us, error {m['error']:.1f} us ({m['error'] / m['ok']:.2f}x), "
              f"distinct errors {m['distinct']:.1f} us ({m['distinct'] / m['ok']:.2f}x) (target: an error at most 2x)")
    if ns.threads:
        legacy = statistics.median(rates["legacy"])
        for label, got_rates in rates.items():
            if label == "legacy":
                continue
            got = statistics.median(got_rates)
            print(f"{ns.threads} threads of a 1 ms tool, {ns.thread_calls} calls, SQLite, {len(got_rates)} runs: "
                  f"legacy {legacy:,.0f} calls/s, {label} {got:,.0f} calls/s: {got / legacy:.1%} (target: at least "
                  "90%)")
            late = statistics.median(r["behind"] for r in behind[label])
            drain = statistics.median(r["drain"] for r in behind[label])
            spooled = max(r["spooled"] for r in behind[label])
            print(f"  {label}: {late:,.0f} calls not yet stored when the threads ended ({late / ns.thread_calls:.0%}), "
                  f"stored {drain:.1f} s later; {spooled:,} spooled (target: a small backlog, none spooled: a writer "
                  "that falls behind lends the application GIL time only until its queue is full)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
