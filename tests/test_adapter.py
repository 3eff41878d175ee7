"""The dual-emit adapter: legacy results untouched in shadow mode, the structured payload logged, flags obeyed."""

from __future__ import annotations

import asyncio
import threading
import traceback
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import shadow
from shadow import _config as config
from shadow import _sessions as sessions
from shadow._decorator import tool
from shadow.calllog._records import CallRecord, MarkRecord
from shadow.flags._db import FlagState, Mode, bucket
from shadow.testing import InMemoryFlags, InMemoryStore, assert_valid_payload, recording


@pytest.fixture
def store() -> Iterator[InMemoryStore]:
    with recording(InMemoryStore()) as memory:
        assert isinstance(memory, InMemoryStore)
        yield memory


def calls(store: InMemoryStore) -> list[CallRecord]:
    assert shadow.flush(5)
    return sorted((r for r in store.records.values() if isinstance(r, CallRecord)), key=lambda r: (r.session_id, r.seq))


def marks(store: InMemoryStore) -> list[MarkRecord]:
    assert shadow.flush(5)
    return [r for r in store.records.values() if isinstance(r, MarkRecord)]


class Odd:
    """A value the log cannot serialise."""


def _gen() -> Iterator[int]:
    yield 1


legacy_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30) | st.binary(max_size=8)
    | st.builds(Odd) | st.builds(_gen) | st.just("Error: not found") | st.just({"error": "Bad request"})
    | st.just({"status": 404}),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    | st.tuples(inner, inner),
    max_leaves=12,
)
legacy_exceptions = st.sampled_from([ValueError, KeyError, TimeoutError, ConnectionError, RuntimeError, OSError,
                                     PermissionError, LookupError]).flatmap(
    lambda t: st.builds(t, st.text(max_size=20)))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=legacy_values)
def test_shadow_mode_returns_the_legacy_object_itself(store: InMemoryStore, value: Any) -> None:
    @tool(name="zoo", flags=InMemoryFlags({"zoo": "shadow"}))
    def legacy(x: int) -> Any:
        return value

    assert legacy(1) is value


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(exc=legacy_exceptions)
def test_shadow_mode_reraises_the_legacy_exception_itself(store: InMemoryStore, exc: Exception) -> None:
    def legacy(x: int) -> None:
        raise exc

    wrapped = tool(name="zoo", flags=InMemoryFlags({"zoo": "shadow"}))(legacy)
    with pytest.raises(type(exc)) as caught:
        wrapped(1)
    assert caught.value is exc
    assert caught.value.args == exc.args
    frames = traceback.extract_tb(caught.value.__traceback__)
    assert frames[-1].name == "legacy"


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=legacy_values)
def test_async_shadow_mode_returns_the_legacy_object_itself(store: InMemoryStore, value: Any) -> None:
    @tool(name="azoo", flags=InMemoryFlags({"azoo": "shadow"}))
    async def legacy() -> Any:
        await asyncio.sleep(0)
        return value

    assert asyncio.run(legacy()) is value


def test_shadow_mode_logs_the_structured_payload_it_would_have_served(store: InMemoryStore) -> None:
    @tool(flags=InMemoryFlags({"find_user": "shadow"}))
    def find_user(user_id: str) -> Any:
        return {"error": "User not found"} if user_id == "nobody" else {"id": user_id}

    with shadow.session("task-1"):
        assert find_user("nobody") == {"error": "User not found"}
        assert find_user(user_id="7") == {"id": "7"}
    first, second = calls(store)
    assert (first.session_id, first.seq, first.tool, first.mode, first.variant) == ("task-1", 1, "find_user",
                                                                                    "shadow", "legacy")
    assert first.outcome == "error"
    assert first.code == "not_found"
    assert first.legacy_payload == {"error": "User not found"}
    assert_valid_payload(first.new_payload)
    assert first.schema_valid
    assert not first.unmapped
    assert first.args == {"user_id": "nobody"}
    assert second.outcome == "ok"
    assert second.new_payload == {"ok": True, "data": {"id": "7"}}
    assert second.seq == 2


def test_an_error_no_rule_maps_is_logged_as_unmapped_rejected_or_internal_error(store: InMemoryStore) -> None:
    @tool(flags=InMemoryFlags({"legacy": "shadow"}))
    def legacy() -> Any:
        return {"error": "frobnication exploded"}

    @tool(name="raiser", flags=InMemoryFlags({"raiser": "shadow"}))
    def raiser() -> Any:
        raise ValueError("weird")

    legacy()
    with pytest.raises(ValueError):
        raiser()
    returned, raised = calls(store)
    assert (returned.code, returned.unmapped, returned.outcome) == ("rejected", True, "error")  # the tool's words
    assert (raised.code, raised.unmapped, raised.outcome) == ("internal_error", True, "error")  # never seen


def test_legacy_mode_logs_nothing(store: InMemoryStore) -> None:
    @tool(flags=InMemoryFlags({}))
    def legacy() -> int:
        return 1

    assert legacy() == 1
    assert calls(store) == []


def test_cutover_serves_the_structured_payload(store: InMemoryStore) -> None:
    @tool(flags=InMemoryFlags({"book": "cutover"}))
    def book(when: str) -> Any:
        if when == "yesterday":
            return "Error: invalid date"
        return {"booked": when}

    assert book("tomorrow") == {"ok": True, "data": {"booked": "tomorrow"}}
    payload = book("yesterday")
    assert_valid_payload(payload)
    assert payload["error"]["code"] == "validation_error"
    record = calls(store)[0]
    assert (record.mode, record.variant) == ("cutover", "structured")


def test_cutover_translates_exceptions_of_async_tools(store: InMemoryStore) -> None:
    @tool(flags=InMemoryFlags({"fetch": "cutover"}))
    async def fetch() -> Any:
        raise TimeoutError

    payload = asyncio.run(fetch())
    assert payload["error"]["code"] == "upstream_timeout"
    assert payload["error"]["next_action"] == "retry"


def test_non_idempotent_tools_are_logged_with_the_downgrade(store: InMemoryStore) -> None:
    @tool(idempotent=False, flags=InMemoryFlags({"pay": "cutover"}))
    def pay() -> Any:
        raise ConnectionError

    assert pay()["error"]["next_action"] == "ask_user"
    assert calls(store)[0].next_action == "ask_user"


def test_a_cutover_percentage_splits_sessions_stickily_and_only_grows(store: InMemoryStore) -> None:
    flags = InMemoryFlags({"t": FlagState(Mode.CUTOVER, 30)})

    @tool(name="t", flags=flags)
    def t() -> int:
        return 1

    ids = [f"s{i}" for i in range(400)]
    arms30 = {}
    for sid in ids:
        with shadow.session(sid):
            arms30[sid] = t() != 1
    share = sum(arms30.values()) / len(ids)
    assert 0.2 < share < 0.4
    assert all(arms30[sid] == (bucket(sid) <= 30) for sid in ids)
    flags.set("t", "cutover", 60)
    for sid in ids:
        with shadow.session(sid):
            structured = t() != 1
        assert structured or not arms30[sid], "raising the percentage moved a session back to legacy"
    variants = {(r.session_id, r.variant) for r in calls(store)}
    assert {v for _, v in variants} == {"legacy", "structured"}


def test_the_kill_switch_sends_every_tool_back_to_legacy(store: InMemoryStore) -> None:
    flags = InMemoryFlags({"a": "cutover"})

    @tool(name="a", flags=flags)
    def a() -> int:
        return 1

    flags.killed = True
    assert a() == 1
    assert calls(store) == []


def test_marks_share_the_sessions_sequence(store: InMemoryStore) -> None:
    @tool(flags=InMemoryFlags({"ask": "shadow"}))
    def ask() -> str:
        return "Error: missing field"

    with shadow.session("task-m"):
        ask()
        shadow.mark("user_turn")
        ask()
        shadow.mark("end")
    sequence = sorted([(r.seq, "call") for r in calls(store)] + [(m.seq, m.kind) for m in marks(store)])
    assert sequence == [(1, "call"), (2, "user_turn"), (3, "call"), (4, "end")]
    with pytest.raises(ValueError, match="user_turn, end"):
        shadow.mark("lunch")  # type: ignore[arg-type]


def test_calls_outside_a_session_get_the_per_process_session(store: InMemoryStore) -> None:
    @tool(flags=InMemoryFlags({"x": "shadow"}))
    def x() -> int:
        return 1

    x()
    x()
    records = calls(store)
    assert records[0].session_id == records[1].session_id == sessions.process_session()
    assert records[1].seq == records[0].seq + 1


def test_sessions_follow_asyncio_tasks_and_threads(store: InMemoryStore) -> None:
    @tool(flags=InMemoryFlags({"w": "shadow"}))
    def w(i: int) -> int:
        return i

    @tool(name="aw", flags=InMemoryFlags({"aw": "shadow"}))
    async def aw(i: int) -> int:
        await asyncio.sleep(0)
        return i

    async def task(name: str) -> None:
        with shadow.session(name):
            for i in range(5):
                await aw(i)

    async def main() -> None:
        await asyncio.gather(task("async-a"), task("async-b"))

    asyncio.run(main())

    def worker() -> None:
        with shadow.session("threaded"):
            for i in range(50):
                w(i)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    records = calls(store)
    by_session: dict[str, list[int]] = {}
    for r in records:
        by_session.setdefault(r.session_id, []).append(r.seq)
    assert sorted(by_session["async-a"]) == [1, 2, 3, 4, 5]
    assert sorted(by_session["async-b"]) == [1, 2, 3, 4, 5]
    assert sorted(by_session["threaded"]) == list(range(1, 401))


def test_fingerprints_ignore_key_order_and_positional_versus_keyword(store: InMemoryStore) -> None:
    @tool(flags=InMemoryFlags({"q": "shadow"}))
    def q(filters: dict[str, Any], limit: int = 10) -> int:
        return 1

    q({"a": 1, "b": [1, 2]}, 5)
    q(limit=5, filters={"b": [1, 2], "a": 1})
    q({"a": 1, "b": [1, 2]}, 6)
    first, second, third = calls(store)
    assert first.fingerprint == second.fingerprint != third.fingerprint
    assert first.arg_hashes is not None and third.arg_hashes is not None
    assert first.arg_hashes["filters"] == third.arg_hashes["filters"]
    assert first.arg_hashes["limit"] != third.arg_hashes["limit"]


def test_validation_errors_record_the_field_they_name(store: InMemoryStore) -> None:
    rules = shadow.Rules.default().on_result(
        r"due", "validation_error", "The field 'due_date' must be an ISO 8601 date, for example 2025-03-14.",
        context=lambda v: {"field": "due_date"})

    @tool(rules=rules, flags=InMemoryFlags({"create": "shadow"}))
    def create(due_date: str) -> Any:
        return {"error": "bad due"}

    create("friday")
    assert calls(store)[0].error_field == "due_date"


def test_a_rule_that_raises_never_breaks_the_legacy_call(store: InMemoryStore) -> None:
    def explode(value: Any) -> bool:
        raise RuntimeError("rule bug")

    rules = shadow.Rules.default().on_result(explode, "not_found")

    @tool(rules=rules, flags=InMemoryFlags({"r": "shadow"}))
    def r() -> dict[str, int]:
        return {"v": 1}

    result = r()
    assert result == {"v": 1}
    assert calls(store)[0].code == "internal_error"


def test_a_broken_writer_is_logged_and_swallowed_unless_strict(monkeypatch: pytest.MonkeyPatch) -> None:
    class Broken:
        def submit(self, item: Any) -> None:
            raise RuntimeError("queue exploded")

    monkeypatch.setattr("shadow._adapter.get_writer", lambda: Broken())
    sentinel = object()

    @tool(flags=InMemoryFlags({"b": "shadow"}))
    def b() -> object:
        return sentinel

    from structlog.testing import capture_logs

    with capture_logs() as logs:
        assert b() is sentinel
    assert any(entry["event"] == "shadow_failed" for entry in logs)
    config.configure(strict=True)
    with pytest.raises(RuntimeError, match="queue exploded"):
        b()


def test_a_broken_flag_source_falls_back_to_the_legacy_call() -> None:
    class Broken:
        def state(self, tool: str) -> FlagState:
            raise OSError("flag store down")

    @tool(flags=Broken())
    def f() -> int:
        return 7

    assert f() == 7


def test_methods_are_logged_without_self(store: InMemoryStore) -> None:
    class Tools:
        @tool(name="lookup", flags=InMemoryFlags({"lookup": "shadow"}))
        def lookup(self, item: str) -> str:
            return item

    assert Tools().lookup("k") == "k"
    assert calls(store)[0].args == {"item": "k"}


def test_a_positional_name_names_the_tool_as_langchain_style_decorators_allow(store: InMemoryStore) -> None:
    @tool("create_task", flags=InMemoryFlags({"create_task": "shadow"}))
    def make(title: str) -> Any:
        return {"id": 1, "title": title}

    assert make("x") == {"id": 1, "title": "x"}
    assert make.__shadow_tool__ == "create_task"  # type: ignore[attr-defined]
    assert [r.tool for r in calls(store)] == ["create_task"]


@pytest.mark.parametrize(("args", "kwargs", "match"), [
    (("a",), {"name": "b"}, "given twice"),
    ((), {"name": 42}, "non-empty string"),
    ((), {"name": "  "}, "non-empty string"),
    ((), {"rules": "strict"}, "shadow.Rules"),
    ((), {"flags": {"x": "shadow"}}, "flag source"),
])
def test_misuse_is_a_type_error_at_decoration_time_that_writes_nothing(
    store: InMemoryStore, args: tuple[Any, ...], kwargs: dict[str, Any], match: str,
) -> None:
    with pytest.raises(TypeError, match=match):
        tool(*args, **kwargs)(lambda: None)
    with pytest.raises(TypeError, match="wraps a function"):
        tool(name="x")(42)  # type: ignore[type-var]
    assert calls(store) == []
