"""LangGraph: a ``ToolNode`` over shadowed tools in cutover, the way ``create_react_agent`` calls them."""

from __future__ import annotations

import json
from typing import Annotated, Any

import pytest
from integration_support import calls, legacy_tools

import shadow
from shadow.testing import InMemoryFlags, InMemoryStore

pytest.importorskip("langgraph")
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import InjectedToolCallId, ToolException, tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.types import Command, interrupt

from shadow.integrations import langchain_tool


def _reserve(room: str) -> str:
    """Reserve a room."""
    raise ToolException(f"room {room} is taken")


def _run(node: ToolNode, calls_: list[tuple[str, dict[str, Any]]], thread: str = "thread-A") -> list[ToolMessage]:
    message = AIMessage(content="", tool_calls=[{"name": n, "args": a, "id": f"c{i}", "type": "tool_call"}
                                                for i, (n, a) in enumerate(calls_)])
    graph = StateGraph(MessagesState)
    graph.add_node("tools", node)
    graph.add_edge(START, "tools")
    graph.add_edge("tools", END)
    out = graph.compile().invoke({"messages": [message]}, {"configurable": {"thread_id": thread}})
    return [m for m in out["messages"] if isinstance(m, ToolMessage)]


def test_a_tool_node_over_shadowed_tools_serves_the_payload_in_cutover_in_the_threads_session(
        flags: InMemoryFlags, log: InMemoryStore) -> None:
    shadowed = ToolNode([langchain_tool(flags=flags)(legacy_tools()["lookup"])])
    flags.set("lookup", "cutover")
    error, ok = _run(shadowed, [("lookup", {"item_id": "0"}), ("lookup", {"item_id": "7"})])
    assert (error.status, json.loads(error.content)["error"]["code"]) == ("error", "not_found")
    assert (ok.status, json.loads(ok.content)) == ("success", {"ok": True, "data": "item 7"})
    assert [(r.variant, r.session_id) for r in calls(log)] == [("structured", "thread-A")] * 2


@pytest.mark.parametrize("handled", [False, True])
def test_a_tool_exception_under_a_tool_node_is_handled_by_the_nodes_setting_in_cutover_as_before(
        flags: InMemoryFlags, log: InMemoryStore, handled: bool) -> None:
    options = {"handle_tool_errors": True} if handled else {}
    legacy, shadowed = ToolNode([tool(_reserve)], **options), ToolNode([tool(shadow.tool(flags=flags)(_reserve))],
                                                                        **options)
    flags.set("_reserve", "cutover")
    step = [("_reserve", {"room": "R1"})]
    if not handled:  # the node's default lets a ToolException through: the run fails, as it did
        with pytest.raises(ToolException, match="room R1 is taken"):
            _run(legacy, step)
        with pytest.raises(ToolException) as raised:
            _run(shadowed, step)
        assert json.loads(str(raised.value))["error"]["message"] == "room R1 is taken"
    else:
        (before,), (after,) = _run(legacy, step), _run(shadowed, step)
        assert before.status == after.status == "error"
        assert before.content.count("room R1 is taken") == 1
        assert '"message":"room R1 is taken"' in after.content
    assert [r.variant for r in calls(log)] == ["structured"]


def _graph(node: ToolNode) -> Any:
    from langgraph.checkpoint.memory import InMemorySaver

    graph = StateGraph(MessagesState)
    graph.add_node("tools", node)
    graph.add_edge(START, "tools")
    graph.add_edge("tools", END)
    return graph.compile(checkpointer=InMemorySaver())


def test_an_interrupt_inside_a_shadowed_tool_still_pauses_the_graph_in_cutover(
        flags: InMemoryFlags, log: InMemoryStore) -> None:
    @langchain_tool(flags=flags)
    def refund(order_id: str) -> str:
        """Refund an order once a person approves."""
        answer = interrupt(f"refund {order_id}?")
        return f"refunded {order_id}" if answer == "yes" else "Error: refund declined"

    flags.set("refund", "cutover")
    app, config = _graph(ToolNode([refund])), {"configurable": {"thread_id": "thread-R"}}
    call = AIMessage(content="", tool_calls=[{"name": "refund", "args": {"order_id": "O-1"}, "id": "c1",
                                              "type": "tool_call"}])
    paused = app.invoke({"messages": [call]}, config)
    assert [i.value for i in paused["__interrupt__"]] == ["refund O-1?"]
    done = app.invoke(Command(resume="yes"), config)
    assert json.loads(done["messages"][-1].content) == {"ok": True, "data": "refunded O-1"}
    assert [r.outcome for r in calls(log)] == ["cancelled", "ok"]  # the pause is no error of the tool


def test_a_tool_returning_a_command_hands_it_to_the_graph_in_cutover(flags: InMemoryFlags,
                                                                     log: InMemoryStore) -> None:
    @tool
    @shadow.tool(flags=flags)
    def pick(item_id: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:  # type: ignore[type-arg]
        """Pick an item."""
        return Command(update={"messages": [ToolMessage(f"picked {item_id}", tool_call_id=tool_call_id)]})

    flags.set("pick", "cutover")
    (message,) = _run(ToolNode([pick]), [("pick", {"item_id": "7"})])
    assert message.content == "picked 7"
    (record,) = calls(log)
    assert record.outcome == "ok"
