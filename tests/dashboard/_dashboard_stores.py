"""Call logs for the dashboard tests, made through the real adapter, writer and SQLite store (not collected)."""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import shadow
from shadow import _clock as clock
from shadow._ids import new_id
from shadow.analytics._warehouse import Warehouse
from shadow.calllog import _migrate as migrate
from shadow.calllog._records import CallRecord
from shadow.calllog._store import SqlStore
from shadow.flags._db import DbFlags
from shadow.testing import InMemoryFlags, recording

#: Logged strings that would run script if a page pasted them as HTML.
EVIL_TOOL = "<img src=x onerror=alert(1)>"
EVIL_ACTOR = "<script>alert('actor')</script>"
EVIL_REASON = "</script><script>alert('reason')</script> & \"quoted\" <b>bold?</b>"
EVIL_CODE = "<svg onload=alert('code')>"
EVIL_VARIANT = "<svg/onload=alert(5)>"
PLAIN_TOOL = "search_docs"
START = dt.datetime(2025, 3, 1, 8, 0, tzinfo=dt.UTC)


@dataclass(frozen=True)
class Store:
    """A call log and its synced warehouse."""

    url: str
    warehouse: Path
    calls: int


def _legacy(query: str) -> Any:
    if query == "missing":
        raise FileNotFoundError("no such document")
    if query == "odd":
        raise RuntimeError("something nobody mapped")
    if query == "bad":
        return {"error": "Bad request"}
    return {"hits": [query]}


def _drive(tool: Callable[..., Any], rng: random.Random, tick: Callable[[], None], steps: int) -> int:
    """One agent task: blind repeats after legacy errors far more often than after structured ones."""
    calls = 0
    for _ in range(steps):
        query = rng.choice(["fine", "fine", "missing", "odd", "bad"])
        for _attempt in range(4):
            tick()
            calls += 1
            try:
                served = tool(query=query)
            except Exception:
                failed, structured = True, False
            else:
                structured = isinstance(served, dict) and served.get("ok") is False
                failed = structured or (isinstance(served, dict) and "error" in served)
            if not failed:
                break
            if rng.random() < (0.1 if structured else 0.6):
                continue  # the identical call again
            if rng.random() < 0.3:
                shadow.mark("user_turn")
            break
    shadow.mark("end")
    return calls


def build(directory: Path, *, sessions: int = 60, seed: int = 3, span: dt.timedelta = dt.timedelta(days=2),
          hostile_records: bool = True) -> Store:
    """A log of two tools (one named ``EVIL_TOOL``) over ``span``: shadow first, then a 50% cutover of the evil
    tool half-way, audited with a hostile actor and reason; plus a few records with a hostile code and variant."""
    directory.mkdir(parents=True, exist_ok=True)
    url = f"sqlite:///{directory / 'shadow.db'}"
    migrate.ensure(url)
    rng = random.Random(seed)
    now = [int(START.timestamp() * 1e9)]
    step_ns = int(span.total_seconds() * 1e9 / max(1, sessions * 8))

    def tick() -> None:
        now[0] += step_ns

    memory = InMemoryFlags({EVIL_TOOL: "shadow", PLAIN_TOOL: "shadow"})
    audit = DbFlags(url, ttl=3600.0)
    tools = {name: shadow.tool(name=name, flags=memory)(_legacy) for name in (EVIL_TOOL, PLAIN_TOOL)}
    calls = 0
    with recording(SqlStore(url)), clock.using(lambda: now[0]):
        for name in tools:
            audit.set(name, "shadow", actor=EVIL_ACTOR, reason=EVIL_REASON)
        for i in range(sessions):
            if i == sessions // 2:
                memory.set(EVIL_TOOL, "cutover", 50)
                audit.set(EVIL_TOOL, "cutover", 50, actor=EVIL_ACTOR, reason=EVIL_REASON)
            with shadow.session(f"task-{seed}-{i:05d}"):
                calls += _drive(tools[rng.choice(list(tools))], rng, tick, rng.randint(2, 6))
    if hostile_records:
        calls += _hostile_records(url, now[0])
    path = directory / "shadow.duckdb"
    with Warehouse.open(path) as wh:
        wh.sync(url, rebuild=True)
    return Store(url, path, calls)


def _hostile_records(url: str, end_ns: int) -> int:
    """Two calls of one session straight into the store: an error with a hostile code, repeated identically."""
    ts = dt.datetime.fromtimestamp(end_ns / 1e9, dt.UTC)
    records = [
        CallRecord(
            id=new_id(), session_id="hostile-session", seq=seq, ts=ts + dt.timedelta(seconds=seq), tool=EVIL_TOOL,
            mode="shadow", variant=EVIL_VARIANT, fingerprint="f" * 32, arg_hashes=None, args={"q": EVIL_TOOL},
            outcome="error", legacy_payload={"error": EVIL_REASON}, new_payload=None, code=EVIL_CODE,
            retryable=False, next_action="stop", retry_after_ms=None, error_field=None, rule=None, unmapped=False,
            schema_valid=False, latency_us=1200, process="p", host="h",
        )
        for seq in (1, 2)
    ]
    SqlStore(url).write(records)
    return len(records)


def successes_only(directory: Path, calls: int = 30) -> Store:
    """A log whose calls all succeeded (no errors at all), synced."""
    directory.mkdir(parents=True, exist_ok=True)
    url = f"sqlite:///{directory / 'shadow.db'}"
    migrate.ensure(url)
    records = [
        CallRecord(
            id=new_id(), session_id=f"s{i // 5}", seq=i % 5 + 1, ts=START + dt.timedelta(minutes=i), tool=PLAIN_TOOL,
            mode="shadow", variant="legacy", fingerprint=f"{i:032d}", arg_hashes=None, args={"q": i}, outcome="ok",
            legacy_payload={"hits": []}, new_payload={"ok": True, "data": {"hits": []}}, code=None, retryable=None,
            next_action=None, retry_after_ms=None, error_field=None, rule=None, unmapped=False, schema_valid=True,
            latency_us=900, process="p", host="h",
        )
        for i in range(calls)
    ]
    SqlStore(url).write(records)
    path = directory / "shadow.duckdb"
    with Warehouse.open(path) as wh:
        wh.sync(url, rebuild=True)
    return Store(url, path, calls)


def with_gaps(store: Store, errors: int = 3) -> list[str]:
    """Delete the record right after ``errors`` errors (each in its own session, with records after the deleted
    one), as a drop or a crashed process would, and sync again; returns the ids of those errors."""
    import sqlalchemy as sa

    engine = sa.create_engine(store.url)
    with engine.begin() as con:
        events = con.execute(sa.text("SELECT id, session_id, seq, outcome FROM calls UNION ALL "
                                     "SELECT id, session_id, seq, NULL FROM marks ORDER BY 2, 3")).all()
        by_position = {(sid, seq): rid for rid, sid, seq, _ in events}
        chosen: list[tuple[str, str, str]] = []
        for rid, sid, seq, outcome in events:
            if (len(chosen) < errors and outcome == "error" and (sid, seq + 2) in by_position
                    and not any(c[1] == sid for c in chosen)):
                chosen.append((rid, sid, by_position[(sid, seq + 1)]))
        for _, _, gone in chosen:
            for table in ("calls", "marks"):
                con.execute(sa.text(f"DELETE FROM {table} WHERE id = :id"), {"id": gone})
    engine.dispose()
    with Warehouse.open(store.warehouse) as wh:
        wh.sync(store.url, rebuild=True)
    return [rid for rid, _, _ in chosen]
