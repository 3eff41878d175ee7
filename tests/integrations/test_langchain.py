"""LangChain: ``langchain_tool`` through ``invoke``/``ainvoke`` with a ``ToolCall``, with no model."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated, Any

import pytest
from integration_support import CALLS, calls, legacy_tools, loop_counts

import shadow
from shadow.testing import InMemoryFlags, InMemoryStore

pytest.importorskip("langchain_core")
from langchain_core.messages import ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import InjectedToolCallId, StructuredTool, ToolException, tool

from shadow.integrations import langchain_tool


def toolsets(flags: InMemoryFlags) -> tuple[dict[str, StructuredTool], dict[str, StructuredTool]]:
    """The legacy tools made by ``@tool`` and by ``langchain_tool``, by name."""
    plain = {n: tool(fn, parse_docstring=True) for n, fn in legacy_tools().items()}
    shadowed = {n: langchain_tool(flags=flags, parse_docstring=True)(fn) for n, fn in legacy_tools().items()}
    return plain, shadowed


def _call(tools: dict[str, StructuredTool], thread: str = "thread-A") -> list[ToolMessage]:
    async def run() -> list[ToolMessage]:
        out = []
        for i, (name, args) in enumerate(CALLS):
            call = {"name": name, "args": args, "id": f"call_{i}", "type": "tool_call"}
            config: RunnableConfig = {"configurable": {"thread_id": thread}}
            out.append(await tools[name].ainvoke(call, config) if name == "search" else tools[name].invoke(call, config))
        return out

    return asyncio.run(run())


def test_the_schema_is_the_one_langchain_generates(flags: InMemoryFlags) -> None:
    plain, shadowed = toolsets(flags)
    for name, made in plain.items():
        assert shadowed[name].name == made.name and shadowed[name].description == made.description
        assert shadowed[name].tool_call_schema.model_json_schema() == made.tool_call_schema.model_json_schema()
    assert shadowed["get_task"].args["priority"]["enum"] == ["low", "high"]
    assert shadowed["get_task"].args["task_id"]["description"] == "The task's id, for example T-1."


def test_shadow_mode_returns_what_langchain_returned_before_and_logs_one_record_per_call(
        flags: InMemoryFlags, log: InMemoryStore) -> None:
    plain, shadowed = toolsets(flags)
    for name in plain:
        flags.set(name, "shadow")
    for old, new in zip(_call(plain), _call(shadowed), strict=True):
        assert (new.content, new.status, new.tool_call_id, new.artifact) == (
            old.content, old.status, old.tool_call_id, old.artifact)
    records = calls(log)
    assert [(r.tool, r.outcome) for r in records] == [(n, o) for (n, _), o in zip(
        CALLS, ("ok", "error", "ok", "error", "ok"), strict=True)]
    assert {r.session_id for r in records} == {"thread-A"}


def test_cutover_content_is_the_contract_json(flags: InMemoryFlags, log: InMemoryStore) -> None:
    _, shadowed = toolsets(flags)
    for name in shadowed:
        flags.set(name, "cutover")
    for message in _call(shadowed):
        shadow.validate(json.loads(message.content))
    assert [r.variant for r in calls(log)] == ["structured"] * len(CALLS)


def test_cutover_labels_an_error_payload_status_error_and_a_success_status_success(
        flags: InMemoryFlags, log: InMemoryStore) -> None:
    _, shadowed = toolsets(flags)
    for name in shadowed:
        flags.set(name, "cutover")
    messages = _call(shadowed)  # invoke for the sync tools, ainvoke for the async one
    assert [(m.status, json.loads(m.content)["ok"]) for m in messages] == [
        ("success", True), ("error", False), ("success", True), ("error", False), ("success", True)]
    assert json.loads(messages[1].content)["error"]["code"] == "not_found"
    assert shadowed["lookup"].invoke({"item_id": "0"}) == messages[1].content  # no ToolCall: the JSON text itself


def _raising(message: str) -> Any:
    def reserve(room: str) -> str:
        """Reserve a room."""
        raise ToolException(message)

    return reserve


@pytest.mark.parametrize("handler", [None, True, "Try another room.", lambda e: f"handled: {e}"])
def test_a_tools_own_tool_exception_is_handled_as_before_and_error_payloads_still_get_status_error(
        flags: InMemoryFlags, log: InMemoryStore, handler: Any) -> None:
    plain = tool(_raising("room is taken"))
    options = {} if handler is None else {"handle_tool_error": handler}
    shadowed = langchain_tool(flags=flags, **options)(_raising("room is taken"))
    if handler is not None:
        plain.handle_tool_error = handler
    flags.set("reserve", "shadow")
    call = {"name": "reserve", "args": {"room": "R1"}, "id": "c1", "type": "tool_call"}
    if handler is None:
        with pytest.raises(ToolException, match="room is taken"):
            plain.invoke(call)
        with pytest.raises(ToolException, match="room is taken"):
            shadowed.invoke(call)
    else:
        old, new = plain.invoke(call), shadowed.invoke(call)
        assert (new.content, new.status) == (old.content, old.status) and old.status == "error"
    assert [r.outcome for r in calls(log)] == ["error"]
    flags.set("reserve", "cutover")
    if handler is None:  # LangChain's default (False): raised, as before, now carrying the payload
        with pytest.raises(ToolException) as raised:
            shadowed.invoke(call)
        assert json.loads(str(raised.value))["ok"] is False
    else:
        served = shadowed.invoke(call)
        assert served.status == "error"
        assert served.content == handler if isinstance(handler, str) else '"ok":false' in served.content


def _fetch(item_id: str) -> tuple[str, dict[str, Any]]:
    """Fetch an item."""
    return ("Error: not found" if item_id == "0" else f"item {item_id}"), {"raw": item_id}


def test_content_and_artifact_tools_are_judged_on_their_content_and_keep_their_artifact(
        flags: InMemoryFlags, log: InMemoryStore) -> None:
    plain = tool(_fetch, response_format="content_and_artifact")
    made = langchain_tool(flags=flags, response_format="content_and_artifact")(_fetch)
    ids = ("1", "0")
    flags.set("_fetch", "shadow")
    for item_id in ids:
        call = {"name": "_fetch", "args": {"item_id": item_id}, "id": "c1", "type": "tool_call"}
        old, new = plain.invoke(call), made.invoke(call)
        assert (new.content, new.artifact, new.status) == (old.content, old.artifact, old.status)
    assert [(r.outcome, r.legacy_payload) for r in calls(log)] == [("ok", "item 1"), ("error", "Error: not found")]
    assert all("raw" not in json.dumps(r.new_payload) for r in calls(log))  # the artifact is not judged or logged

    flags.set("_fetch", "cutover")
    ok, error = (made.invoke({"name": "_fetch", "args": {"item_id": i}, "id": "c2", "type": "tool_call"}) for i in ids)
    assert (json.loads(ok.content), ok.artifact, ok.status) == ({"ok": True, "data": "item 1"}, {"raw": "1"},
                                                                "success")
    assert (json.loads(error.content)["error"]["code"], error.artifact, error.status) == ("not_found", None, "error")


def test_three_identical_failing_calls_with_injected_arguments_are_three_errors_and_two_loops(
        flags: InMemoryFlags, sql_log: str, tmp_path: Path) -> None:
    @langchain_tool(flags=flags)
    def find(item_id: str, call_id: Annotated[str, InjectedToolCallId], config: RunnableConfig) -> str:
        """Find an item."""
        assert call_id and config
        return "Error: not found"

    flags.set("find", "shadow")
    for i in range(3):
        find.invoke({"name": "find", "args": {"item_id": "42"}, "id": f"call_{i}", "type": "tool_call"},
                    {"configurable": {"thread_id": "t-1"}})
    assert loop_counts(sql_log, tmp_path, "find") == (3, 2)


def test_langgraph_threads_are_sessions_so_a_percentage_cutover_splits_them(
        flags: InMemoryFlags, log: InMemoryStore) -> None:
    _, shadowed = toolsets(flags)
    flags.set("lookup", "cutover", 50)
    for thread in ("thread-A", "thread-B"):
        for i in range(2):
            shadowed["lookup"].invoke({"name": "lookup", "args": {"item_id": "0"}, "id": f"c{i}", "type": "tool_call"},
                                      {"configurable": {"thread_id": thread}})
    arms = {(r.session_id, r.variant) for r in calls(log)}
    assert arms == {("thread-A", "structured"), ("thread-B", "legacy")}


def test_shadow_tool_above_langchain_tool_is_a_type_error_that_says_the_order() -> None:
    with pytest.raises(TypeError, match=r"LangChain's @tool.*below"):

        @shadow.tool
        @tool
        def late(x: int) -> str:
            """Late."""
            return str(x)


def test_an_open_shadow_session_wins_over_the_frameworks_conversation(
        flags: InMemoryFlags, log: InMemoryStore) -> None:
    @tool
    @shadow.tool(flags=flags)
    def lc_find(item_id: str) -> str:
        """Find an item."""
        return "Error: not found"

    flags.set("lc_find", "shadow")
    call = {"name": "lc_find", "args": {"item_id": "1"}, "id": "c1", "type": "tool_call"}
    lc_find.invoke(call, {"configurable": {"thread_id": "thread-A"}})
    with shadow.session("mine"):
        lc_find.invoke(call, {"configurable": {"thread_id": "thread-A"}})
    lc_find.invoke(call)
    sessions = [r.session_id for r in calls(log)]
    assert sessions[:2] == ["thread-A", "mine"] and sessions[2].startswith("proc-")


def test_a_message_history_session_id_is_the_session_and_ignore_passes_through(
        flags: InMemoryFlags, log: InMemoryStore) -> None:
    @langchain_tool(flags=flags, ignore=("request_id",))
    def book(room: str, request_id: str) -> str:
        """Book a room."""
        return "Error: room is taken"

    flags.set("book", "shadow")
    for i in range(2):
        book.invoke({"name": "book", "args": {"room": "R1", "request_id": f"r{i}"}, "id": f"c{i}", "type": "tool_call"},
                    {"configurable": {"session_id": "chat-7"}})
    first, second = calls(log)
    assert first.session_id == second.session_id == "chat-7"
    assert first.args == {"room": "R1"} and first.fingerprint == second.fingerprint
