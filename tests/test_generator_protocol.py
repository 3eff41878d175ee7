"""Generator tools keep their protocol in every mode: ``send``, ``throw``, ``close`` and the return value; async
generator tools keep ``asend``, ``athrow`` and ``aclose``; the call record still says what the tool did."""

from __future__ import annotations

import asyncio
import inspect
import os
import subprocess
import sys
import textwrap
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Generator, Iterator
from pathlib import Path
from typing import Any

import pytest

import shadow
from shadow.calllog._records import CallRecord
from shadow.testing import InMemoryFlags, InMemoryStore, recording
from tests._sql import rows

ROOT = Path(__file__).resolve().parents[1]
MODES = ["legacy", "shadow", "cutover"]
Step = tuple[str, Any]  # ("next", None), ("send", value), ("throw", exception), ("close", None)


@pytest.fixture
def store() -> Iterator[InMemoryStore]:
    with recording(InMemoryStore()) as memory:
        assert isinstance(memory, InMemoryStore)
        yield memory


def records(store: InMemoryStore, tool: str) -> list[CallRecord]:
    assert shadow.flush(5)
    return [r for r in store.records.values() if isinstance(r, CallRecord) and r.tool == tool]


def echo_tool(events: list[str]) -> Callable[[str], Generator[str, str | None, str]]:
    """A generator tool that echoes what is sent, recovers from a thrown ``LookupError`` and returns a summary."""

    def echo(prefix: str) -> Generator[str, str | None, str]:
        events.append("start")
        received = 0
        try:
            sent = yield f"{prefix}:ready"
            while sent != "stop":
                try:
                    received += 1
                    sent = yield f"{prefix}:echo {sent}"
                except LookupError as exc:
                    sent = yield f"{prefix}:recovered {exc.args[0]}"
            return f"{prefix}:done after {received}"
        finally:
            events.append("finally")

    return echo


def aecho_tool(events: list[str]) -> Callable[[str], AsyncGenerator[str, str | None]]:
    """The async twin of ``echo_tool``: it ends on "stop" (an async generator returns no value), awaiting in finally."""

    async def aecho(prefix: str) -> AsyncGenerator[str, str | None]:
        events.append("start")
        try:
            sent = yield f"{prefix}:ready"
            while sent != "stop":
                try:
                    await asyncio.sleep(0)
                    sent = yield f"{prefix}:echo {sent}"
                except LookupError as exc:
                    sent = yield f"{prefix}:recovered {exc.args[0]}"
        finally:
            await asyncio.sleep(0)  # aclose() must await the tool's own clean-up
            events.append("finally")

    return aecho


def outcome_of(exc: BaseException) -> tuple[Any, ...]:
    if isinstance(exc, StopIteration):
        return ("return", exc.value)
    return ("raise", type(exc).__name__, str(exc))


def drive(gen: Generator[Any, Any, Any], steps: list[Step]) -> list[tuple[Any, ...]]:
    """What each step of the generator protocol gives: the item yielded, the value returned or the exception."""
    seen: list[tuple[Any, ...]] = []
    for op, arg in steps:
        try:
            if op == "next":
                seen.append(("yield", next(gen)))
            elif op == "send":
                seen.append(("yield", gen.send(arg)))
            elif op == "throw":
                seen.append(("yield", gen.throw(arg)))
            else:
                seen.append(("closed", gen.close()))
        except BaseException as exc:
            seen.append(outcome_of(exc))
    return seen


async def adrive(agen: AsyncGenerator[Any, Any], steps: list[Step]) -> list[tuple[Any, ...]]:
    """``drive`` for an async generator: ``__anext__``, ``asend``, ``athrow`` and ``aclose``."""
    seen: list[tuple[Any, ...]] = []
    for op, arg in steps:
        try:
            if op == "next":
                seen.append(("yield", await agen.__anext__()))
            elif op == "send":
                seen.append(("yield", await agen.asend(arg)))
            elif op == "throw":
                seen.append(("yield", await agen.athrow(arg)))
            else:
                seen.append(("closed", await agen.aclose()))
        except BaseException as exc:
            seen.append(outcome_of(exc))
    return seen


CONVERSATION: list[Step] = [("next", None), ("send", "a"), ("throw", KeyError("k")), ("send", "b"), ("send", "stop")]


@pytest.mark.parametrize("mode", MODES)
def test_a_generator_tool_receives_sent_values_and_thrown_exceptions_and_returns_its_value(
    store: InMemoryStore, mode: str
) -> None:
    events: list[str] = []
    echo = shadow.tool(echo_tool(events), name="echo", flags=InMemoryFlags({"echo": mode}))
    assert inspect.isgeneratorfunction(echo)

    assert drive(echo("p"), CONVERSATION) == [
        ("yield", "p:ready"), ("yield", "p:echo a"), ("yield", "p:recovered k"), ("yield", "p:echo b"),
        ("return", "p:done after 2"),
    ]
    assert events == ["start", "finally"]
    found = records(store, "echo")
    if mode == "legacy":
        assert found == []
        return
    (record,) = found
    assert (record.mode, record.variant, record.outcome) == (mode, "legacy", "ok")
    assert record.legacy_payload == "<generator: 4 items>" and record.args == {"prefix": "p"}


@pytest.mark.parametrize("mode", MODES)
def test_yield_from_a_generator_tool_gives_its_return_value(store: InMemoryStore, mode: str) -> None:
    echo = shadow.tool(echo_tool([]), name="echo", flags=InMemoryFlags({"echo": mode}))

    def agent() -> Generator[str, str | None, str]:
        summary = yield from echo("q")
        return f"agent saw {summary}"

    assert drive(agent(), [("next", None), ("send", "x"), ("send", "stop")]) == [
        ("yield", "q:ready"), ("yield", "q:echo x"), ("return", "agent saw q:done after 1")]
    assert [r.legacy_payload for r in records(store, "echo")] == ([] if mode == "legacy" else ["<generator: 2 items>"])


@pytest.mark.parametrize("mode", MODES)
def test_closing_a_generator_tool_runs_its_finally_and_is_logged_as_closed_early(
    store: InMemoryStore, mode: str
) -> None:
    events: list[str] = []
    echo = shadow.tool(echo_tool(events), name="echo", flags=InMemoryFlags({"echo": mode}))
    gen = echo("p")

    assert drive(gen, [("next", None), ("send", "a")]) == [("yield", "p:ready"), ("yield", "p:echo a")]
    assert events == ["start"]
    gen.close()
    assert events == ["start", "finally"]
    expected = [] if mode == "legacy" else [("ok", "<generator: 2 items, closed early>")]
    assert [(r.outcome, r.legacy_payload) for r in records(store, "echo")] == expected


@pytest.mark.parametrize("mode", MODES)
def test_an_exception_thrown_in_that_the_tool_does_not_catch_ends_it_and_is_logged_as_its_error(
    store: InMemoryStore, mode: str
) -> None:
    events: list[str] = []
    echo = shadow.tool(echo_tool(events), name="echo", flags=InMemoryFlags({"echo": mode}))
    gen = echo("p")
    thrown = TimeoutError("upstream slow")

    assert drive(gen, [("next", None), ("throw", thrown), ("next", None)]) == [
        ("yield", "p:ready"), ("raise", "TimeoutError", "upstream slow"), ("return", None)]
    assert events == ["start", "finally"]  # the tool's finally ran before the exception left it
    found = records(store, "echo")
    if mode == "legacy":
        assert found == []
        return
    (record,) = found
    assert (record.mode, record.variant, record.outcome, record.code) == (mode, "legacy", "error", "upstream_timeout")
    assert record.legacy_payload == {"exception": "TimeoutError", "message": "upstream slow"}


@pytest.mark.parametrize("mode", MODES)
def test_a_tool_error_mid_stream_is_reraised_to_the_consumer_and_logged_with_its_payload(
    store: InMemoryStore, mode: str
) -> None:
    @shadow.tool(flags=InMemoryFlags({"pages": mode}))
    def pages(n: int) -> Generator[int, int | None, None]:
        for i in range(n):
            got = yield i
            if got == -1:
                raise ConnectionError("connection reset by peer")

    gen = pages(n=5)
    assert drive(gen, [("next", None), ("send", None), ("send", -1)]) == [
        ("yield", 0), ("yield", 1), ("raise", "ConnectionError", "connection reset by peer")]
    found = records(store, "pages")
    if mode == "legacy":
        assert found == []
        return
    (record,) = found  # served as the legacy stream in cutover too: a stream cannot turn into a payload half-way
    assert (record.variant, record.outcome, record.code) == ("legacy", "error", "upstream_unavailable")
    assert isinstance(record.new_payload, dict) and record.new_payload["ok"] is False


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


def _async_scripts() -> dict[str, list[Step]]:
    return {
        "conversation": CONVERSATION,
        "asend before start": [("send", "early"), ("next", None), ("send", "a")],
        "athrow before start": [("throw", KeyError("k")), ("next", None)],
        "athrow uncaught": [("next", None), ("throw", ValueError("bad")), ("next", None), ("close", None)],
        "aclose twice, then anext": [("next", None), ("close", None), ("close", None), ("next", None),
                                     ("send", "x")],
        "athrow GeneratorExit": [("next", None), ("throw", GeneratorExit()), ("next", None)],
        "after the end": [("next", None), ("send", "stop"), ("next", None), ("throw", KeyError("late")),
                          ("close", None)],
    }


@pytest.mark.parametrize("script", _async_scripts().values(), ids=_async_scripts().keys())
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
