"""The OpenAI Agents SDK: ``openai_agents_tool`` through ``on_invoke_tool`` and a scripted ``Runner.run``."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from integration_support import CALLS, HIGH, LOW, calls, legacy_tools, loop_counts

import shadow
from shadow.testing import InMemoryFlags, InMemoryStore

pytest.importorskip("agents")
from agents import Agent, FunctionTool, RunConfig, RunContextWrapper, Runner, function_tool, set_trace_processors
from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call
from agents.tool_context import ToolContext

from shadow.integrations import openai_agents_tool

set_trace_processors([])  # traces keep their ids; nothing is exported


def toolsets(flags: InMemoryFlags) -> tuple[dict[str, FunctionTool], dict[str, FunctionTool]]:
    """The legacy tools made by ``@function_tool`` and by ``openai_agents_tool``, by name."""
    plain = {n: function_tool(fn) for n, fn in legacy_tools().items()}
    shadowed = {n: openai_agents_tool(flags=flags)(fn) for n, fn in legacy_tools().items()}
    return plain, shadowed


def _invoke(made: FunctionTool, args: dict[str, Any], call_id: str = "call_1") -> Any:
    text = json.dumps(args)
    context = ToolContext(context=None, tool_name=made.name, tool_call_id=call_id, tool_arguments=text)
    return asyncio.run(made.on_invoke_tool(context, text))


def test_the_schema_is_the_one_the_sdk_generates(flags: InMemoryFlags) -> None:
    plain, shadowed = toolsets(flags)
    for name, made in plain.items():
        assert (shadowed[name].name, shadowed[name].description) == (made.name, made.description)
        assert shadowed[name].params_json_schema == made.params_json_schema
    assert shadowed["get_task"].params_json_schema["properties"]["priority"]["enum"] == ["low", "high"]


def test_shadow_mode_returns_what_the_sdk_returned_before_and_logs_one_record_per_call(
        flags: InMemoryFlags, log: InMemoryStore) -> None:
    plain, shadowed = toolsets(flags)
    for name in plain:
        flags.set(name, "shadow")
    for name, args in CALLS:
        assert _invoke(shadowed[name], args) == _invoke(plain[name], args)
    assert [(r.tool, r.outcome) for r in calls(log)] == [(n, o) for (n, _), o in zip(
        CALLS, ("ok", "error", "ok", "error", "ok"), strict=True)]


def test_cutover_shows_the_model_json_not_a_python_repr(flags: InMemoryFlags, log: InMemoryStore) -> None:
    _, shadowed = toolsets(flags)
    for name in shadowed:
        flags.set(name, "cutover")
    for name, args in CALLS:
        shadow.validate(json.loads(_invoke(shadowed[name], args)))
    model = ScriptedModel([ModelStep(output=[function_call("lookup", {"item_id": "0"}, call_id="c1")]),
                           ModelStep(output=[assistant_message("done")])])
    asyncio.run(Runner.run(Agent(name="a", model=model, tools=[shadowed["lookup"]]), "go"))
    (seen,) = [i["output"] for i in model.calls[1].input if isinstance(i, dict) and i.get("type") ==
               "function_call_output"]
    assert json.loads(seen)["error"]["code"] == "not_found"
    assert [r.variant for r in calls(log)] == ["structured"] * (len(CALLS) + 1)


def test_three_identical_failing_calls_through_a_context_tool_are_three_errors_and_two_loops(
        flags: InMemoryFlags, sql_log: str, tmp_path: Path) -> None:
    @openai_agents_tool(flags=flags)
    def find(ctx: ToolContext[None], item_id: str) -> str:
        """Find an item."""
        assert ctx.tool_call_id
        return "Error: not found"

    flags.set("find", "shadow")
    with shadow.session("task-1"):
        for i in range(3):
            _invoke(find, {"item_id": "42"}, call_id=f"call_{i}")
    assert loop_counts(sql_log, tmp_path, "find") == (3, 2)


def test_trace_groups_are_sessions_so_a_percentage_cutover_splits_them(
        flags: InMemoryFlags, log: InMemoryStore) -> None:
    _, shadowed = toolsets(flags)
    flags.set("lookup", "cutover", 50)
    for group in (LOW, HIGH):
        model = ScriptedModel([ModelStep(output=[function_call("lookup", {"item_id": "0"}, call_id="c1"),
                                                 function_call("lookup", {"item_id": "1"}, call_id="c2")]),
                               ModelStep(output=[assistant_message("done")])])
        agent = Agent(name="a", model=model, tools=[shadowed["lookup"]])
        asyncio.run(Runner.run(agent, "go", run_config=RunConfig(group_id=group)))
    assert {(r.session_id, r.variant) for r in calls(log)} == {(LOW, "structured"), (HIGH, "legacy")}


def test_shadow_tool_above_function_tool_is_a_type_error_that_says_the_order() -> None:
    with pytest.raises(TypeError, match=r"function_tool.*below"):

        @shadow.tool
        @function_tool
        def late(x: int) -> str:
            """Late."""
            return str(x)


def test_plain_decorator_under_the_agents_sdk_leaves_the_tool_context_out(
        flags: InMemoryFlags, log: InMemoryStore) -> None:
    @function_tool
    @shadow.tool(flags=flags)
    def ag_find(ctx: RunContextWrapper[Any], item_id: str) -> str:
        """Find an item."""
        return "Error: not found"

    flags.set("ag_find", "shadow")
    with shadow.session("task-1"):
        for i in range(2):
            args = json.dumps({"item_id": "42"})
            context = ToolContext(context={"user": i}, tool_name="ag_find", tool_call_id=f"c{i}", tool_arguments=args)
            asyncio.run(ag_find.on_invoke_tool(context, args))
    first, second = calls(log)
    assert first.args == second.args == {"item_id": "42"} and first.fingerprint == second.fingerprint


def test_plain_decorator_under_function_tool_shows_the_model_json_in_cutover(
        flags: InMemoryFlags, log: InMemoryStore) -> None:
    @function_tool
    @shadow.tool(flags=flags)
    def ag_plain(item_id: str) -> str:
        """Find an item."""
        return "Error: not found"

    flags.set("ag_plain", "cutover")
    model = ScriptedModel([ModelStep(output=[function_call("ag_plain", {"item_id": "1"}, call_id="c1")]),
                           ModelStep(output=[assistant_message("done")])])
    asyncio.run(Runner.run(Agent(name="a", model=model, tools=[ag_plain]), "go"))
    (seen,) = [i["output"] for i in model.calls[1].input if isinstance(i, dict) and i.get("type") ==
               "function_call_output"]
    assert json.loads(seen)["error"]["code"] == "not_found"
