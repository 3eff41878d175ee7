"""A whole tool layer in one line, LangChain/LangGraph: ``shadow_tools`` through a LangGraph agent's ``ToolNode``
(``create_react_agent`` with a fake chat model), run and streamed with ``astream_events``."""

from __future__ import annotations

import asyncio
import json
from typing import Annotated, Any

import pytest
from integration_support import CALLS, calls, legacy_tools

import shadow
from shadow.testing import InMemoryFlags, InMemoryStore

pytest.importorskip("langchain_core")
langgraph_prebuilt = pytest.importorskip("langgraph.prebuilt")
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel  # noqa: E402
from langchain_core.messages import AIMessage, ToolMessage  # noqa: E402
from langchain_core.runnables import RunnableConfig  # noqa: E402
from langchain_core.tools import InjectedToolCallId, ToolException, tool  # noqa: E402

from shadow.integrations import langchain_tool, shadow_tools  # noqa: E402

MODES = ("shadow", "cutover")


def _tool_node_messages(tools: list[Any]) -> list[ToolMessage]:
    """The ToolMessages of a LangGraph agent (its ``ToolNode``) calling every one of CALLS in one step."""
    calls_ = [{"name": n, "args": a, "id": f"call_{i}", "type": "tool_call"} for i, (n, a) in enumerate(CALLS)]
    script = iter([AIMessage(content="", tool_calls=calls_), AIMessage(content="done")])
    graph = langgraph_prebuilt.create_react_agent(_ToolCallingModel(messages=script, disable_streaming=True), tools)
    out = asyncio.run(graph.ainvoke({"messages": [("user", "go")]}, {"configurable": {"thread_id": "thread-A"}}))
    return sorted([m for m in out["messages"] if isinstance(m, ToolMessage)], key=lambda m: m.tool_call_id)


@pytest.mark.parametrize("mode", MODES)
def test_shadow_tools_in_a_langgraph_agent_shadows_every_tool_but_the_ignored_one(
        flags: InMemoryFlags, log: InMemoryStore, mode: str) -> None:
    for name in ("get_task", "lookup", "search"):
        flags.set(name, mode)
    plain = [tool(fn, parse_docstring=True) for fn in legacy_tools().values()]
    before = _tool_node_messages(plain)
    after = _tool_node_messages(shadow_tools([tool(fn, parse_docstring=True) for fn in legacy_tools().values()],
                                             flags=flags, ignore=["search"]))
    for (name, _), old, new in zip(CALLS, before, after, strict=True):
        if mode == "shadow" or name == "search":
            assert (new.content, new.status) == (old.content, old.status)
        else:
            payload = json.loads(new.content)
            shadow.validate(payload)
            assert new.status == ("success" if payload["ok"] else "error")
    records = calls(log)
    assert [(r.tool, r.outcome) for r in records] == [("get_task", "ok"), ("lookup", "error"), ("lookup", "ok")]
    assert {r.session_id for r in records} == {"thread-A"}
    assert {r.variant for r in records} == {"legacy" if mode == "shadow" else "structured"}


def test_shadow_tools_keeps_the_schema_and_takes_plain_functions(flags: InMemoryFlags) -> None:
    plain = [tool(fn, parse_docstring=True) for fn in legacy_tools().values()]
    made = shadow_tools([tool(fn, parse_docstring=True) for fn in legacy_tools().values()], flags=flags)
    for old, new in zip(plain, made, strict=True):
        assert (new.name, new.description) == (old.name, old.description)
        assert new.tool_call_schema.model_json_schema() == old.tool_call_schema.model_json_schema()
    (function,) = shadow_tools([legacy_tools()["lookup"]], flags=flags)
    assert function.name == "lookup" and function.func.__shadow_tool__ == "lookup"
    with pytest.raises(TypeError, match="one string"):
        shadow_tools(plain, ignore="search")


class _ToolCallingModel(GenericFakeChatModel):
    """A fake chat model an agent can bind tools to: it answers from its script."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self


def _agent(tools: list[Any]) -> Any:
    script = iter([AIMessage(content="", tool_calls=[{"name": "lookup", "args": {"item_id": "0"}, "id": "c1"}]),
                   AIMessage(content="done")])
    return langgraph_prebuilt.create_react_agent(_ToolCallingModel(messages=script, disable_streaming=True), tools)


def _streamed_tool_output(graph: Any) -> str:
    async def run() -> str:
        outputs = [event["data"]["output"] async for event in graph.astream_events(
            {"messages": [("user", "find 0")]}, {"configurable": {"thread_id": "thread-A"}}, version="v2")
            if event["event"] == "on_tool_end"]
        (output,) = outputs
        return str(output.content)

    return asyncio.run(run())


def _run_tool_output(graph: Any) -> str:
    out = graph.invoke({"messages": [("user", "find 0")]}, {"configurable": {"thread_id": "thread-A"}})
    (message,) = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    return str(message.content)


@pytest.mark.parametrize("layer", ["decorator", "shadow_tools"])
@pytest.mark.parametrize("mode", MODES)
def test_a_streamed_agent_run_logs_and_serves_the_same_as_a_plain_run(
        flags: InMemoryFlags, log: InMemoryStore, mode: str, layer: str) -> None:
    def tools() -> list[Any]:
        fn = legacy_tools()["lookup"]
        return [langchain_tool(flags=flags)(fn)] if layer == "decorator" else shadow_tools([tool(fn)], flags=flags)

    flags.set("lookup", mode)
    ran, streamed = _run_tool_output(_agent(tools())), _streamed_tool_output(_agent(tools()))
    assert streamed == ran
    assert ran == "Error: not found" if mode == "shadow" else json.loads(ran)["error"]["code"] == "not_found"
    first, second = calls(log)
    assert (first.variant, first.outcome, first.args) == (second.variant, second.outcome, second.args)
    assert first.variant == ("legacy" if mode == "shadow" else "structured")


def test_a_tool_with_injected_arguments_under_shadow_tools_keeps_them_out_and_its_thread(
        flags: InMemoryFlags, log: InMemoryStore) -> None:
    @tool
    def lc_find(item_id: str, call_id: Annotated[str, InjectedToolCallId], config: RunnableConfig) -> str:
        """Find an item."""
        assert call_id and config
        return "Error: not found"

    flags.set("lc_find", "shadow")
    (made,) = shadow_tools([lc_find], flags=flags)
    for i in range(2):
        made.invoke({"name": "lc_find", "args": {"item_id": "42"}, "id": f"c{i}", "type": "tool_call"},
                    {"configurable": {"thread_id": "t-1"}})
    first, second = calls(log)
    assert first.args == second.args == {"item_id": "42"}
    assert first.session_id == second.session_id == "t-1" and first.fingerprint == second.fingerprint


def test_a_toolnode_that_shows_exceptions_keeps_their_words_in_cutover_with_shows_errors(
        flags: InMemoryFlags) -> None:
    from langchain_core.messages import AIMessage
    from langgraph.prebuilt import ToolNode

    def book_seat(train: str) -> str:
        """Book a seat."""
        raise ValueError(f"Train {train} has no seats left in fare class Q")

    call = AIMessage("", tool_calls=[{"name": "book_seat", "args": {"train": "4411"}, "id": "c1"}])

    def seen(tools: list[Any]) -> str:
        from langgraph.graph import END, START, MessagesState, StateGraph

        graph = StateGraph(MessagesState)
        graph.add_node("tools", ToolNode(tools, handle_tool_errors=True))
        graph.add_edge(START, "tools")
        graph.add_edge("tools", END)
        out = graph.compile().invoke({"messages": [call]})
        return str(out["messages"][-1].content)

    legacy = seen(shadow_tools([book_seat], flags=flags, shows_errors=True))
    assert "Train 4411 has no seats left in fare class Q" in legacy  # what the model read in legacy
    flags.set("book_seat", "cutover")
    kept = json.loads(seen(shadow_tools([book_seat], flags=flags, shows_errors=True)))["error"]
    assert kept["message"] == "Train 4411 has no seats left in fare class Q" and kept["next_action"] == "ask_user"
    generic = json.loads(seen(shadow_tools([book_seat], flags=flags)))["error"]  # the default: never shown
    assert "4411" not in generic["message"]


class _MCPToolExecutionError(ToolException):
    """As langchain-mcp-adapters raises for an MCP ``isError`` result: the content blocks ride along."""

    def __init__(self, tool_content: list[dict[str, Any]]) -> None:
        super().__init__("\n".join(b["text"] for b in tool_content))
        self.tool_content = tool_content


@pytest.mark.parametrize("mode", ["shadow", "cutover"])
def test_an_mcp_adapter_tool_whose_handler_returns_its_content_serves_the_payload_in_cutover(
        mode: str, flags: InMemoryFlags, log: InMemoryStore) -> None:
    """langchain-mcp-adapters' handle_tool_error returns ``exc.tool_content``: the copy shadow re-raised kept the
    legacy content, so the model read legacy text while the log said the payload was served (an outside check)."""
    from langchain_core.tools import StructuredTool

    async def lookup(item_id: str) -> str:
        raise _MCPToolExecutionError([{"type": "text", "text": '{"success": false, "error": "item ' + item_id
                                       + ' not found", "code": "NOT_FOUND"}'}])

    made = StructuredTool.from_function(coroutine=lookup, name="lookup", description="Look an item up.",
                                        handle_tool_error=lambda e: getattr(e, "tool_content", str(e)))
    [wrapped] = shadow_tools([made], flags=flags)
    flags.set("lookup", mode)
    call = {"name": "lookup", "args": {"item_id": "ORD-12"}, "id": "c1", "type": "tool_call"}
    message = asyncio.run(wrapped.ainvoke(call, {"configurable": {"thread_id": "t"}}))
    assert message.status == "error"
    [block] = message.content
    if mode == "shadow":
        assert block["text"] == '{"success": false, "error": "item ORD-12 not found", "code": "NOT_FOUND"}'
        return
    error = json.loads(block["text"])["error"]
    assert (error["code"], error["message"]) == ("not_found", "item ORD-12 not found")  # the JSON text's message
    [record] = calls(log)
    assert (record.variant, record.code) == ("structured", "not_found")
