"""Every kind of callable: async ``__call__`` instances and partials are awaited, generators stay generators and are
logged when iteration ends, and cancelled calls are logged as ``cancelled`` and re-raised unchanged."""

from __future__ import annotations

import asyncio
import functools
import inspect
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest

import shadow
from shadow import arun_tool, run_tool
from shadow.calllog._records import CallRecord
from shadow.testing import InMemoryFlags, InMemoryStore, recording


@pytest.fixture
def store() -> Iterator[InMemoryStore]:
    with recording(InMemoryStore()) as memory:
        assert isinstance(memory, InMemoryStore)
        yield memory


def calls(store: InMemoryStore, tool: str) -> list[CallRecord]:
    assert shadow.flush(5)
    found = [r for r in store.records.values() if isinstance(r, CallRecord) and r.tool == tool]
    return sorted(found, key=lambda r: r.seq)


class AsyncCallable:
    async def __call__(self, query: str) -> str:
        await asyncio.sleep(0)
        raise TimeoutError("upstream slow")


async def _slow_search(query: str, region: str) -> str:
    await asyncio.sleep(0)
    raise TimeoutError("upstream slow")


ASYNC_CALLABLES: dict[str, Callable[[], Any]] = {
    "instance with async __call__": AsyncCallable,
    "partial of an async function": lambda: functools.partial(_slow_search, region="eu"),
    "partial of an async __call__ instance": lambda: functools.partial(AsyncCallable()),
}


@pytest.mark.parametrize("make", ASYNC_CALLABLES.values(), ids=ASYNC_CALLABLES.keys())
def test_async_callables_are_awaited_in_cutover(store: InMemoryStore, make: Callable[[], Any]) -> None:
    wrapped = shadow.tool(make(), name="search", flags=InMemoryFlags({"search": "cutover"}))
    assert inspect.iscoroutinefunction(wrapped)
    payload = asyncio.run(wrapped(query="x"))
    assert payload["error"]["code"] == "upstream_timeout"
    assert calls(store, "search")[0].code == "upstream_timeout"


@pytest.mark.parametrize("make", ASYNC_CALLABLES.values(), ids=ASYNC_CALLABLES.keys())
def test_async_callables_are_awaited_by_guard_run_tool_and_arun_tool(make: Callable[[], Any]) -> None:
    guarded = shadow.guard(make())
    assert asyncio.run(guarded(query="x"))["error"]["code"] == "upstream_timeout"
    assert run_tool(make(), {"query": "x"})["error"]["code"] == "upstream_timeout"
    assert asyncio.run(arun_tool(make(), {"query": "x"}))["error"]["code"] == "upstream_timeout"


@pytest.mark.parametrize("mode", ["shadow", "cutover"])
def test_a_generator_tool_stays_a_generator_and_is_logged_when_iteration_ends(
    store: InMemoryStore, mode: str
) -> None:
    @shadow.tool(flags=InMemoryFlags({"stream": mode}))
    def stream(n: int) -> Iterator[int]:
        for i in range(n):
            time.sleep(0.03)
            yield i

    assert inspect.isgeneratorfunction(stream)
    items = stream(n=4)
    assert calls(store, "stream") == []  # nothing logged at creation
    assert list(items) == [0, 1, 2, 3]
    (record,) = calls(store, "stream")
    assert record.latency_us >= 100_000
    assert record.legacy_payload == "<generator: 4 items>" and record.outcome == "ok"


def test_an_async_generator_tool_stays_one_and_its_error_is_logged_and_reraised(store: InMemoryStore) -> None:
    @shadow.tool(flags=InMemoryFlags({"astream": "cutover"}))
    async def astream(n: int) -> AsyncIterator[int]:
        for i in range(n):
            await asyncio.sleep(0.03)
            yield i
        raise TimeoutError("upstream slow")

    assert inspect.isasyncgenfunction(astream)

    async def consume() -> list[int]:
        return [i async for i in astream(n=3)]

    with pytest.raises(TimeoutError):
        asyncio.run(consume())
    (record,) = calls(store, "astream")
    assert record.latency_us >= 75_000 and record.outcome == "error" and record.code == "upstream_timeout"


@pytest.mark.parametrize("mode", ["shadow", "cutover"])
def test_a_call_cancelled_by_wait_for_is_logged_as_cancelled_without_a_gap(store: InMemoryStore, mode: str) -> None:
    @shadow.tool(flags=InMemoryFlags({"fetch": mode}))
    async def fetch(delay: float) -> str:
        await asyncio.sleep(delay)
        return "done"

    async def scenario() -> None:
        with shadow.session("cancel-test"):
            assert await fetch(delay=0) in ("done", {"ok": True, "data": "done"})
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(fetch(delay=5), 0.05)
            await fetch(delay=0)

    asyncio.run(scenario())
    records = calls(store, "fetch")
    assert [r.seq for r in records] == [1, 2, 3]
    assert [r.outcome for r in records] == ["ok", "cancelled", "ok"]
    assert records[1].legacy_payload == {"exception": "CancelledError", "message": ""}
    assert records[1].code is None and records[1].new_payload is None


@pytest.mark.parametrize("exc", [KeyboardInterrupt(), SystemExit(3)], ids=["KeyboardInterrupt", "SystemExit"])
def test_interrupts_are_logged_as_cancelled_and_reraised_unchanged(store: InMemoryStore, exc: BaseException) -> None:
    @shadow.tool(flags=InMemoryFlags({"job": "cutover"}))
    def job(fail: bool) -> str:
        if fail:
            raise exc
        return "ok"

    with shadow.session("interrupt-test"):
        job(fail=False)
        with pytest.raises(type(exc)) as raised:
            job(fail=True)
        job(fail=False)
    assert raised.value is exc
    assert [(r.seq, r.outcome) for r in calls(store, "job")] == [(1, "ok"), (2, "cancelled"), (3, "ok")]


def test_a_cancelled_call_and_its_epoch_are_stored_on_postgresql(pg_url: str) -> None:
    from sqlalchemy import create_engine, text

    from shadow.calllog import SqlStore

    @shadow.tool(flags=InMemoryFlags({"job": "shadow"}))
    def job() -> str:
        raise KeyboardInterrupt

    with recording(SqlStore(pg_url)):
        with shadow.session("pg-cancel"), pytest.raises(KeyboardInterrupt):
            job()
        assert shadow.flush(30)
    engine = create_engine(pg_url)
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT outcome, seq, epoch FROM calls WHERE session_id = 'pg-cancel'")).all()
    engine.dispose()
    assert len(rows) == 1 and rows[0][0] == "cancelled" and rows[0][1] == 1 and rows[0][2] > 0
