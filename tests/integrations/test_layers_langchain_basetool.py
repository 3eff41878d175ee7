"""``shadow_tools`` on ``BaseTool`` subclasses with their own ``_run``/``_arun`` (LangChain's community toolkits):
the tool the model sees unchanged, byte-identical ToolMessages through a LangGraph ``ToolNode`` in legacy and shadow
mode, the contract in cutover, the run manager passed, ``ainvoke`` through the tool's own ``_arun``."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from integration_support import calls, served_error
from pydantic import BaseModel, Field

import shadow
from shadow.testing import InMemoryFlags, InMemoryStore

pytest.importorskip("langgraph")
from langchain_core.callbacks import (
    AsyncCallbackManagerForToolRun,
    BaseCallbackHandler,
    CallbackManagerForToolRun,
)
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import BaseTool, StructuredTool, ToolException
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode

from shadow.integrations import langchain_tool, shadow_tools

#: what the tools' methods saw, in call order: ("_run" or "_arun", the run manager they were given)
SEEN: list[tuple[str, Any]] = []


class OrderLookup(BaseTool):
    """A community-style tool: no args_schema, one string argument, its own ``_run`` and an ``_arun`` calling it."""

    name: str = "order_lookup"
    description: str = "Look an order up by its id."
    handle_tool_error: bool = True  # its ToolExceptions become the ToolMessage text

    def _run(self, order_id: str, run_manager: CallbackManagerForToolRun | None = None) -> str:
        SEEN.append(("_run", run_manager))
        if order_id == "missing":
            raise ToolException(f"Order {order_id} does not exist")
        if order_id == "locked":
            raise RuntimeError("database is locked")
        return "Error: order 0 is archived" if order_id == "0" else f"order {order_id}: shipped"

    async def _arun(self, order_id: str, run_manager: AsyncCallbackManagerForToolRun | None = None) -> str:
        SEEN.append(("_arun", run_manager))
        return self._run(order_id)  # as the community JSON tools do: still one call


class TransferArgs(BaseModel):
    """The transfer's arguments."""

    amount: int = Field(description="In cents.")
    to: str = Field(description="The account.")


class Transfer(BaseTool):
    """A tool with an args_schema, its own validation message, tags, metadata, return_direct and no ``_arun``."""

    name: str = "transfer"
    description: str = "Move money."
    args_schema: type[BaseModel] = TransferArgs
    handle_validation_error: str = "amount must be a whole number of cents"
    return_direct: bool = True
    tags: list[str] | None = Field(default_factory=lambda: ["payments"])
    metadata: dict[str, Any] | None = Field(default_factory=lambda: {"team": "billing"})

    def _run(self, amount: int, to: str) -> str:
        SEEN.append(("_run", None))
        if amount > 100:
            raise ToolException(f"insufficient funds for {amount}")  # handle_tool_error False: it propagates
        return f"moved {amount} to {to}"


CALLS: list[tuple[str, dict[str, Any]]] = [
    ("order_lookup", {"order_id": "7"}), ("order_lookup", {"order_id": "0"}),
    ("order_lookup", {"order_id": "missing"}), ("order_lookup", {"order_id": "locked"}),
    ("transfer", {"amount": 5, "to": "B-1"}), ("transfer", {"amount": "five", "to": "B-1"}),
    ("transfer", {"amount": 500, "to": "B-1"}),
]


def _through_a_tool_node(tools: list[Any], handle: bool | None) -> list[ToolMessage | Exception]:
    """What each of CALLS gives through a LangGraph ``ToolNode``: its ToolMessage, or the exception raised."""
    node = ToolNode(tools) if handle is None else ToolNode(tools, handle_tool_errors=handle)
    graph = StateGraph(MessagesState)
    graph.add_node("tools", node)
    graph.add_edge(START, "tools")
    graph.add_edge("tools", END)
    app = graph.compile()
    seen: list[ToolMessage | Exception] = []
    for i, (name, args) in enumerate(CALLS):
        call = AIMessage("", tool_calls=[{"name": name, "args": args, "id": f"c{i}", "type": "tool_call"}])
        try:
            out = app.invoke({"messages": [call]}, {"configurable": {"thread_id": "thread-A"}})
        except Exception as error:
            seen.append(error)
            continue
        (message,) = [m for m in out["messages"] if isinstance(m, ToolMessage)]
        seen.append(message)
    return seen


def _exact(seen: list[ToolMessage | Exception]) -> list[str]:
    """Every ToolMessage field (its random id aside) or the exception's type and text."""
    return [f"{type(s).__name__}: {s}" if isinstance(s, Exception) else repr(s.model_dump(exclude={"id"}))
            for s in seen]


def test_the_model_sees_the_same_tool_and_a_string_input_still_runs(flags: InMemoryFlags) -> None:
    plain = [OrderLookup(), Transfer()]
    made = shadow_tools([OrderLookup(), Transfer()], flags=flags)
    for old, new in zip(plain, made, strict=True):
        assert type(new) is not type(old) and isinstance(new, type(old))  # the tool's own class, fields, methods
        assert convert_to_openai_tool(new) == convert_to_openai_tool(old)
        for field in ("name", "description", "args_schema", "return_direct", "response_format", "tags", "metadata",
                      "handle_validation_error"):
            assert getattr(new, field) == getattr(old, field), field
        assert new.get_input_schema().model_json_schema() == old.get_input_schema().model_json_schema()
    lookup, transfer = made
    assert lookup.invoke("7") == plain[0].invoke("7") == "order 7: shipped"
    assert lookup.invoke("missing") == "Order missing does not exist"  # its own handle_tool_error=True
    assert transfer.invoke({"amount": "x", "to": "B"}) == "amount must be a whole number of cents"
    assert shadow_tools(made, flags=flags) == made  # already shadowed: as they are


@pytest.mark.parametrize("handle", [None, True])
@pytest.mark.parametrize("mode", ["legacy", "shadow"])
def test_legacy_and_shadow_toolmessages_through_a_tool_node_are_byte_identical(
        flags: InMemoryFlags, log: InMemoryStore, mode: str, handle: bool | None) -> None:
    for name in ("order_lookup", "transfer"):
        flags.set(name, mode)
    before = _exact(_through_a_tool_node([OrderLookup(), Transfer()], handle))
    after = _exact(_through_a_tool_node(shadow_tools([OrderLookup(), Transfer()], flags=flags), handle))
    assert after == before
    # a RuntimeError and a ToolException the tool does not handle end a default run; True shows their text
    assert [before[i].startswith(("RuntimeError", "ToolException")) for i in (3, 6)] == [handle is None] * 2
    assert "database is locked" in before[3] and "insufficient funds for 500" in before[6]
    records = calls(log)
    if mode == "legacy":
        assert records == []
        return
    # every call that reached _run, logged with the validated input (no run_manager); the invalid one never ran
    ran = [(n, a) for n, a in CALLS if a.get("amount") != "five"]
    assert sorted((r.tool, json.dumps(r.args, sort_keys=True)) for r in records) == sorted(
        (n, json.dumps(a, sort_keys=True)) for n, a in ran)
    assert {r.variant for r in records} == {"legacy"}
    assert [r.outcome for r in records if r.tool == "order_lookup"] == ["ok", "error", "error", "error"]


def test_cutover_serves_the_contract_as_a_wrapped_function_does(flags: InMemoryFlags, log: InMemoryStore) -> None:
    flags.set("order_lookup", "cutover")
    flags.set("transfer", "cutover")
    seen = _through_a_tool_node(shadow_tools([OrderLookup(), Transfer()], flags=flags), None)
    *messages, funds = seen
    assert all(isinstance(m, ToolMessage) for m in messages)  # the RuntimeError is served, the run goes on
    ok, archived, missing, locked, moved, invalid = (m for m in messages if isinstance(m, ToolMessage))
    assert json.loads(str(ok.content)) == {"ok": True, "data": "order 7: shipped"} and ok.status == "success"
    for message in (archived, missing, locked):
        assert message.status == "error" and served_error(str(message.content))["code"]
    assert served_error(str(missing.content))["code"] == "not_found"
    assert "database is locked" not in str(locked.content)  # a raised exception's text is not shown by default
    assert json.loads(str(moved.content))["data"] == "moved 5 to B-1"
    assert invalid.content == "amount must be a whole number of cents"  # validation: the tool's own, before
    # its handle_tool_error is False: its own ToolException propagates as before, carrying the payload
    assert isinstance(funds, ToolException) and served_error(str(funds))["message"] == "insufficient funds for 500"
    assert {r.variant for r in calls(log)} == {"structured"}


def test_the_run_manager_reaches_run_and_callbacks_see_one_tool_run(flags: InMemoryFlags, log: InMemoryStore) -> None:
    class Starts(BaseCallbackHandler):
        def __init__(self) -> None:
            self.runs: list[str] = []

        def on_tool_start(self, serialized: dict[str, Any], input_str: str, **kwargs: Any) -> None:
            self.runs.append(input_str)

    flags.set("order_lookup", "shadow")
    (made,) = shadow_tools([OrderLookup()], flags=flags)
    SEEN.clear()
    handler = Starts()
    made.invoke({"order_id": "7"}, {"callbacks": [handler]})
    ((method, manager),) = SEEN
    assert method == "_run" and isinstance(manager, CallbackManagerForToolRun)
    assert handler.runs == ["{'order_id': '7'}"]
    (record,) = calls(log)
    assert record.args == {"order_id": "7"}


def test_ainvoke_runs_the_tools_own_arun_and_logs_the_call_once(flags: InMemoryFlags, log: InMemoryStore) -> None:
    lookup, transfer = shadow_tools([OrderLookup(), Transfer()], flags=flags)
    SEEN.clear()
    assert asyncio.run(lookup.ainvoke("7")) == "order 7: shipped"
    assert [m for m, _ in SEEN] == ["_arun", "_run"] and isinstance(SEEN[0][1], AsyncCallbackManagerForToolRun)
    flags.set("order_lookup", "cutover")
    flags.set("transfer", "cutover")
    call = {"name": "order_lookup", "args": {"order_id": "missing"}, "id": "c1", "type": "tool_call"}
    served = asyncio.run(lookup.ainvoke(call))
    assert served.status == "error" and served_error(served.content)["code"] == "not_found"
    # no _arun of its own: LangChain runs the shadowed _run in an executor
    assert json.loads(asyncio.run(transfer.ainvoke({"amount": 5, "to": "B"}))) == {"ok": True, "data": "moved 5 to B"}
    assert [(r.tool, r.args, r.outcome) for r in calls(log)] == [
        ("order_lookup", {"order_id": "missing"}, "error"), ("transfer", {"amount": 5, "to": "B"}, "ok")]
    shadow.flush()


def test_what_cannot_run_is_a_type_error_that_says_what_to_do(flags: InMemoryFlags) -> None:
    idle = StructuredTool(name="idle", description="Nothing.", args_schema=TransferArgs)
    with pytest.raises(TypeError, match=r"neither a func nor a coroutine.*ignore=\['idle'\]"):
        shadow_tools([idle], flags=flags)
    assert shadow_tools([idle], flags=flags, ignore=["idle"]) == [idle]
    with pytest.raises(TypeError, match=r"not a LangChain tool \(OrderLookup\).*shadow_tools\(\[tool\]\)"):
        langchain_tool(OrderLookup())
