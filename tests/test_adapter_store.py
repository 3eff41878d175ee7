"""The adapter end to end into a real database: hostile arguments and payloads never crash a call or leak."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import select

import shadow
from shadow.calllog import _db as db
from shadow.calllog import _migrate as migrate
from shadow.calllog import _tables as tables
from shadow.calllog._store import SqlStore
from shadow.testing import InMemoryFlags, recording

SECRET = "hunter2-very-secret-value"


@pytest.fixture
def logged(db_url: str) -> Iterator[str]:
    with recording(SqlStore(db_url)):
        yield db_url


def rows(url: str) -> list[dict[str, Any]]:
    assert shadow.flush(30)
    with db.engine(url).connect() as conn:
        return [dict(r) for r in conn.execute(select(tables.calls).order_by(tables.calls.c.seq)).mappings()]


@pytest.mark.slow
def test_hostile_arguments_and_payloads_are_stored_capped_and_redacted(logged: str) -> None:
    cyclic: dict[str, Any] = {"name": "loop"}
    cyclic["self"] = cyclic
    huge = "x" * 10_000_000

    class Opaque:
        def __repr__(self) -> str:
            return SECRET

    @shadow.tool(flags=InMemoryFlags({"echo": "shadow"}))
    def echo(payload: Any, password: str | None = None, headers: dict[str, str] | None = None) -> Any:
        return payload

    inputs: list[tuple[Any, dict[str, Any]]] = [
        (cyclic, {}),
        (huge, {}),
        (Opaque(), {}),
        ({"api_key": SECRET, "note": f"Bearer {SECRET}"}, {"password": SECRET}),
        ({"error": f"login failed for postgresql://admin:{SECRET}@db/prod"}, {"headers": {"Authorization": SECRET}}),
        (b"\x00\xff" * 10, {}),
    ]
    with shadow.session("hostile"):
        for value, extra in inputs:
            assert echo(value, **extra) is value
    stored = rows(logged)
    assert len(stored) == len(inputs)
    dumped = json.dumps([{k: v for k, v in r.items() if k in ("args", "legacy_payload", "new_payload")}
                         for r in stored], default=str)
    assert SECRET not in dumped
    assert len(dumped) < 200_000
    fingerprints = [r["fingerprint"] for r in stored]
    assert len(set(fingerprints)) == len(fingerprints)
    assert all(len(f) == 32 for f in fingerprints)
    assert stored[4]["outcome"] == "error"


def test_an_exception_carrying_a_secret_is_stored_scrubbed(logged: str) -> None:
    @shadow.tool(flags=InMemoryFlags({"connect": "shadow"}))
    def connect(dsn: str) -> None:
        raise ConnectionError(f"could not connect with password={SECRET}")

    with pytest.raises(ConnectionError):
        connect(f"postgresql://u:{SECRET}@h/db")
    (row,) = rows(logged)
    assert SECRET not in json.dumps(row, default=str)
    assert row["code"] == "upstream_unavailable"
    assert row["legacy_payload"]["exception"] == "ConnectionError"


def test_asyncio_tools_are_not_blocked_by_logging(logged: str) -> None:
    @shadow.tool(flags=InMemoryFlags({"tick": "shadow"}))
    async def tick(i: int) -> int:
        await asyncio.sleep(0.001)
        return i

    async def main() -> float:
        started = time.perf_counter()
        await asyncio.gather(*(tick(i) for i in range(500)))
        return time.perf_counter() - started

    elapsed = asyncio.run(main())
    assert len(rows(logged)) == 500
    assert elapsed < 5  # 500 concurrent 1 ms sleeps; generous bound, a blocked loop takes far longer


def test_records_carry_every_documented_field(logged: str) -> None:
    @shadow.tool(flags=InMemoryFlags({"limit": "cutover"}))
    def limit() -> Any:
        return {"status": 429, "detail": "Too many requests"}

    with shadow.session("fields"):
        payload = limit()
    (row,) = rows(logged)
    assert payload == row["new_payload"]
    for column in tables.calls.columns:
        if column.name not in ("arg_hashes", "retry_after_ms", "error_field", "args"):
            assert row[column.name] is not None, column.name
    assert row["ts"].tzinfo is not None or db.normalise_url(logged).startswith("sqlite")
    assert (row["variant"], row["code"], row["retryable"], row["next_action"]) == ("structured", "rate_limited",
                                                                                  True, "retry")
    assert row["schema_valid"] is True
    assert row["latency_us"] >= 0


def test_the_database_is_created_on_first_use(sqlite_url: str) -> None:
    migrate.ensure(sqlite_url)
    assert migrate.current(sqlite_url) is not None
