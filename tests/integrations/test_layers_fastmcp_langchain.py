"""A whole tool layer in one line, FastMCP and LangChain/LangGraph: ``ShadowTransform`` through FastMCP's in-process
``Client``, ``shadow_tools`` through a LangGraph ``ToolNode`` and a ``create_react_agent`` run (also streamed)."""

from __future__ import annotations

import asyncio
import json
from typing import Annotated, Any

import jsonschema
import pytest
from integration_support import CALLS, calls, legacy_tools

import shadow
from shadow.testing import InMemoryFlags, InMemoryStore

fastmcp = pytest.importorskip("fastmcp")
pytest.importorskip("langchain_core")
langgraph_prebuilt = pytest.importorskip("langgraph.prebuilt")
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel  # noqa: E402
from langchain_core.messages import AIMessage, ToolMessage  # noqa: E402
from langchain_core.runnables import RunnableConfig  # noqa: E402
from langchain_core.tools import InjectedToolCallId, tool  # noqa: E402

from shadow.integrations import ShadowTransform, langchain_tool, shadow_tools  # noqa: E402

MODES = ("shadow", "cutover")


def _server(layer: ShadowTransform | None) -> Any:
    server = fastmcp.FastMCP("shop", transforms=[layer] if layer else None)
    for fn in legacy_tools().values():
        server.tool(fn)
    return server


async def _mcp_calls(server: Any) -> tuple[dict[str, Any], list[Any]]:
    async with fastmcp.Client(server) as client:
        listing = {t.name: t for t in await client.list_tools()}
        return listing, [await client.call_tool(n, a, raise_on_error=False) for n, a in CALLS]


@pytest.mark.parametrize("mode", MODES)
def test_a_fastmcp_transform_shadows_every_tool_of_the_server_but_the_ignored_one(
        flags: InMemoryFlags, log: InMemoryStore, mode: str) -> None:
    for name in ("get_task", "lookup", "search"):
        flags.set(name, mode)
    _, before = asyncio.run(_mcp_calls(_server(None)))
    listing, after = asyncio.run(_mcp_calls(_server(ShadowTransform(flags=flags, ignore=["search"]))))
    for (name, _), old, new in zip(CALLS, before, after, strict=True):
        if mode == "shadow" or name == "search":
            assert (new.is_error, new.content, new.structured_content) == (old.is_error, old.content,
                                                                          old.structured_content)
        else:
            payload = json.loads(new.content[0].text)
            shadow.validate(payload)
            assert new.is_error is (not payload["ok"])
            jsonschema.validate(new.structured_content, listing[name].output_schema)
    assert [(r.tool, r.variant, r.outcome) for r in calls(log)] == [
        (n, "legacy" if mode == "shadow" else "structured", o)
        for (n, _), o in zip(CALLS[:3], ("ok", "error", "ok"), strict=True)]


def test_a_tool_made_by_fastmcp_tool_under_the_transform_is_logged_once(
        flags: InMemoryFlags, log: InMemoryStore) -> None:
    from shadow.integrations import fastmcp_tool

    server = fastmcp.FastMCP("shop", transforms=[ShadowTransform(flags=flags)])
    fastmcp_tool(server, flags=flags)(legacy_tools()["lookup"])
    flags.set("lookup", "cutover")
    _, results = asyncio.run(_mcp_calls_one(server))
    assert json.loads(results.content[0].text)["error"]["code"] == "not_found"
    assert len(calls(log)) == 1


async def _mcp_calls_one(server: Any) -> tuple[None, Any]:
    async with fastmcp.Client(server) as client:
        return None, await client.call_tool("lookup", {"item_id": "0"}, raise_on_error=False)


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


def test_context_taking_tools_keep_their_injected_arguments_out_under_both_layers(
        flags: InMemoryFlags, log: InMemoryStore) -> None:
    server = fastmcp.FastMCP("ctx", transforms=[ShadowTransform(flags=flags)])

    @server.tool
    async def fm_find(item_id: str, ctx: fastmcp.Context) -> str:
        """Find an item."""
        assert ctx.session_id
        return "Error: not found"

    @tool
    def lc_find(item_id: str, call_id: Annotated[str, InjectedToolCallId], config: RunnableConfig) -> str:
        """Find an item."""
        assert call_id and config
        return "Error: not found"

    flags.set("fm_find", "shadow")
    flags.set("lc_find", "shadow")

    async def run() -> None:
        async with fastmcp.Client(server, mode="legacy") as client:  # one connection: one MCP session
            for _ in range(2):
                await client.call_tool("fm_find", {"item_id": "42"}, raise_on_error=False)

    asyncio.run(run())
    (made,) = shadow_tools([lc_find], flags=flags)
    for i in range(2):
        made.invoke({"name": "lc_find", "args": {"item_id": "42"}, "id": f"c{i}", "type": "tool_call"},
                    {"configurable": {"thread_id": "t-1"}})
    records = calls(log)
    assert [(r.tool, r.args) for r in records] == [("fm_find", {"item_id": "42"})] * 2 + [
        ("lc_find", {"item_id": "42"})] * 2
    assert records[0].session_id == records[1].session_id and records[0].fingerprint == records[1].fingerprint
    assert records[2].session_id == records[3].session_id == "t-1"
