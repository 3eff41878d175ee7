"""Generator tools keep their protocol in every mode: ``send``, ``throw``, ``close`` and the return value reach the
tool and its caller as with the bare function, and the call record still says what the tool did."""

from __future__ import annotations

import inspect
from collections.abc import Generator, Iterator

import pytest

import shadow
from shadow.testing import InMemoryFlags, InMemoryStore, recording
from tests._generator_protocol import (
    CONVERSATION,
    MODES,
    STUBBORN_SCRIPTS,
    Step,
    drive,
    echo_tool,
    records,
    scripts,
    stubborn_tool,
)


@pytest.fixture
def store() -> Iterator[InMemoryStore]:
    with recording(InMemoryStore()) as memory:
        assert isinstance(memory, InMemoryStore)
        yield memory



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
@pytest.mark.parametrize("script", scripts().values(), ids=scripts().keys())
def test_a_generator_tool_behaves_exactly_as_the_bare_function_in_every_mode(
    store: InMemoryStore, script: list[Step], mode: str
) -> None:
    bare_events: list[str] = []
    wrapped_events: list[str] = []
    bare = echo_tool(bare_events)
    wrapped = shadow.tool(echo_tool(wrapped_events), name="echo", flags=InMemoryFlags({"echo": mode}))

    script = [*script, ("close", None)]
    assert drive(wrapped("p"), script) == drive(bare("p"), script)
    assert wrapped_events == bare_events
    assert len(records(store, "echo")) == (1 if mode != "legacy" and "start" in bare_events else 0)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("script", STUBBORN_SCRIPTS.values(), ids=STUBBORN_SCRIPTS.keys())
def test_a_generator_exit_thrown_in_reaches_a_tool_that_catches_it_as_on_the_bare_function(
    store: InMemoryStore, script: list[Step], mode: str
) -> None:
    bare_events: list[str] = []
    wrapped_events: list[str] = []
    bare = stubborn_tool(bare_events)
    wrapped = shadow.tool(stubborn_tool(wrapped_events), name="stubborn", flags=InMemoryFlags({"stubborn": mode}))

    expected = drive(bare("p"), script)
    assert ("yield", "p:ignored exit") in expected or ("raise", "RuntimeError", "generator ignored GeneratorExit") in expected
    assert drive(wrapped("p"), script) == expected
    assert wrapped_events == bare_events
    assert len(records(store, "stubborn")) == (0 if mode == "legacy" else 1)
