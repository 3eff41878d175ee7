"""Async generator tools keep ``asend``, ``athrow`` and ``aclose`` in every mode, legacy included (where the wrapper
behaves exactly as the bare function), and a loop shutting down closes one left open exactly once."""

from __future__ import annotations

import asyncio
import inspect
import os
import subprocess
import sys
import textwrap
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import shadow
from shadow.testing import InMemoryFlags, InMemoryStore, recording
from tests._generator_protocol import (
    ASTUBBORN_SCRIPTS,
    CONVERSATION,
    MODES,
    Step,
    adrive,
    aecho_tool,
    astubborn_tool,
    outcome_of,
    records,
    scripts,
)
from tests._sql import rows

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def store() -> Iterator[InMemoryStore]:
    with recording(InMemoryStore()) as memory:
        assert isinstance(memory, InMemoryStore)
        yield memory



@pytest.mark.parametrize("mode", MODES)
def test_an_async_generator_tool_receives_asend_values_and_athrow_exceptions(store: InMemoryStore, mode: str) -> None:
    events: list[str] = []
    aecho = shadow.tool(aecho_tool(events), name="aecho", flags=InMemoryFlags({"aecho": mode}))
    assert inspect.isasyncgenfunction(aecho)

    assert asyncio.run(adrive(aecho("p"), CONVERSATION)) == [
        ("yield", "p:ready"), ("yield", "p:echo a"), ("yield", "p:recovered k"), ("yield", "p:echo b"),
        ("raise", "StopAsyncIteration", ""),
    ]
    assert events == ["start", "finally"]
    found = records(store, "aecho")
    if mode == "legacy":
        assert found == []
        return
    (record,) = found
    assert (record.mode, record.variant, record.outcome) == (mode, "legacy", "ok")
    assert record.legacy_payload == "<async generator: 4 items>"


@pytest.mark.parametrize("mode", MODES)
def test_aclose_on_an_async_generator_tool_awaits_its_finally_and_is_logged_as_closed_early(
    store: InMemoryStore, mode: str
) -> None:
    events: list[str] = []
    aecho = shadow.tool(aecho_tool(events), name="aecho", flags=InMemoryFlags({"aecho": mode}))

    async def scenario() -> list[tuple[Any, ...]]:
        agen = aecho("p")
        seen = await adrive(agen, [("next", None), ("send", "a")])
        assert events == ["start"]
        return seen + await adrive(agen, [("close", None), ("next", None)])

    assert asyncio.run(scenario()) == [
        ("yield", "p:ready"), ("yield", "p:echo a"), ("closed", None), ("raise", "StopAsyncIteration", "")]
    assert events == ["start", "finally"]
    expected = [] if mode == "legacy" else [("ok", "<async generator: 2 items, closed early>")]
    assert [(r.outcome, r.legacy_payload) for r in records(store, "aecho")] == expected


@pytest.mark.parametrize("mode", MODES)
def test_an_exception_athrown_that_the_async_tool_does_not_catch_is_logged_as_its_error(
    store: InMemoryStore, mode: str
) -> None:
    events: list[str] = []
    aecho = shadow.tool(aecho_tool(events), name="aecho", flags=InMemoryFlags({"aecho": mode}))
    steps: list[Step] = [("next", None), ("throw", TimeoutError("upstream slow")), ("next", None)]

    assert asyncio.run(adrive(aecho("p"), steps)) == [
        ("yield", "p:ready"), ("raise", "TimeoutError", "upstream slow"), ("raise", "StopAsyncIteration", "")]
    assert events == ["start", "finally"]
    expected = [] if mode == "legacy" else [(mode, "legacy", "error", "upstream_timeout")]
    assert [(r.mode, r.variant, r.outcome, r.code) for r in records(store, "aecho")] == expected


@pytest.mark.parametrize("script", scripts().values(), ids=scripts().keys())
def test_in_legacy_mode_an_async_generator_tool_behaves_exactly_as_the_bare_function(
    store: InMemoryStore, script: list[Step]
) -> None:
    bare_events: list[str] = []
    wrapped_events: list[str] = []
    bare = aecho_tool(bare_events)
    wrapped = shadow.tool(aecho_tool(wrapped_events), name="aecho", flags=InMemoryFlags({"aecho": "legacy"}))

    script = [*script, ("close", None)]  # closed here, not left to the loop's finalizer (whose timing varies)
    expected = asyncio.run(adrive(bare("p"), script))
    assert asyncio.run(adrive(wrapped("p"), script)) == expected
    assert wrapped_events == bare_events
    assert records(store, "aecho") == []


def test_two_concurrent_asends_on_a_legacy_async_generator_tool_fail_as_on_the_bare_one() -> None:
    def concurrent(make: Callable[[str], AsyncGenerator[str, str | None]]) -> tuple[Any, ...]:
        async def scenario() -> tuple[Any, ...]:
            agen = make("p")
            await agen.__anext__()
            first = asyncio.ensure_future(agen.asend("a"))
            await asyncio.sleep(0)  # the first asend is suspended inside the tool's await
            try:
                await agen.asend("b")
            except RuntimeError as exc:
                second: tuple[Any, ...] = outcome_of(exc)
            else:
                second = ("no error",)
            result = await first
            await agen.aclose()
            return (result, second)

        return asyncio.run(scenario())

    wrapped = shadow.tool(aecho_tool([]), name="aecho", flags=InMemoryFlags({"aecho": "legacy"}))
    assert concurrent(wrapped) == concurrent(aecho_tool([]))


_SUBPROCESS = textwrap.dedent('''
    import asyncio, shadow

    @shadow.tool
    async def feed(topic: str):
        total = 0
        try:
            while True:
                try:
                    amount = yield total
                except LookupError:
                    amount = yield -1
                total += amount or 0
        finally:
            print("finally", total)

    async def main() -> None:
        agen = feed("news")
        seen = [await agen.__anext__(), await agen.asend(2), await agen.athrow(KeyError("k")), await agen.asend(3)]
        await agen.aclose()
        print("seen", seen)

    asyncio.run(main())
    assert shadow.flush(10)
''')


@pytest.mark.parametrize("mode", MODES)
def test_an_async_generator_tool_keeps_its_protocol_in_a_fresh_process_under_shadow_flags(
    tmp_path: Path, mode: str
) -> None:
    url = f"sqlite:///{tmp_path / 'shadow.db'}"
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("SHADOW_") or k == "SHADOW_FINGERPRINT_KEY"},
           "PYTHONPATH": str(ROOT), "SHADOW_DB_URL": url, "SHADOW_FLAGS": f"feed={mode}"}
    done = subprocess.run([sys.executable, "-c", _SUBPROCESS], env=env, capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["finally 5", "seen [0, 2, -1, 5]"]
    found = rows(url, "SELECT mode, variant, outcome, legacy_payload FROM calls WHERE tool = 'feed'") if (
        mode != "legacy") else []
    assert [tuple(r[:3]) for r in found] == ([] if mode == "legacy" else [(mode, "legacy", "ok")])
    assert all("4 items, closed early" in str(r[3]) for r in found)


def test_an_async_generator_consumed_with_async_for_still_counts_its_items(store: InMemoryStore) -> None:
    @shadow.tool(flags=InMemoryFlags({"ticks": "shadow"}))
    async def ticks(n: int) -> AsyncIterator[int]:
        for i in range(n):
            yield i

    async def consume() -> list[int]:
        return [i async for i in ticks(n=3)]

    assert asyncio.run(consume()) == [0, 1, 2]
    assert [r.legacy_payload for r in records(store, "ticks")] == ["<async generator: 3 items>"]


@pytest.mark.parametrize("mode", MODES)
def test_an_async_generator_tool_left_open_is_closed_once_when_the_loop_shuts_down(
    store: InMemoryStore, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    events: list[str] = []
    aecho = shadow.tool(aecho_tool(events), name="aecho", flags=InMemoryFlags({"aecho": mode}))
    kept: list[AsyncGenerator[str, str | None]] = []

    async def scenario() -> None:
        agen = aecho("p")
        kept.append(agen)  # still referenced when asyncio.run ends: shutdown_asyncgens closes it
        assert await agen.__anext__() == "p:ready"

    with caplog.at_level("ERROR", logger="asyncio"):
        asyncio.run(scenario())
    assert events == ["start", "finally"]
    assert [r.getMessage() for r in caplog.records if r.name == "asyncio"] == []
    expected = [] if mode == "legacy" else ["<async generator: 1 items, closed early>"]
    assert [r.legacy_payload for r in records(store, "aecho")] == expected


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("script", ASTUBBORN_SCRIPTS.values(), ids=ASTUBBORN_SCRIPTS.keys())
def test_a_generator_exit_athrown_reaches_an_async_tool_that_catches_it_as_on_the_bare_function(
    store: InMemoryStore, script: list[Step], mode: str
) -> None:
    bare_events: list[str] = []
    wrapped_events: list[str] = []
    bare = astubborn_tool(bare_events)
    wrapped = shadow.tool(astubborn_tool(wrapped_events), name="astubborn",
                          flags=InMemoryFlags({"astubborn": mode}))

    expected = asyncio.run(adrive(bare("p"), script))
    assert ("yield", "p:ignored exit") in expected
    assert asyncio.run(adrive(wrapped("p"), script)) == expected
    assert wrapped_events == bare_events
    assert len(records(store, "astubborn")) == (0 if mode == "legacy" else 1)
