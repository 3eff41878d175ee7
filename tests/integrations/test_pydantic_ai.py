"""PydanticAI: ``pydantic_ai_tool(agent)`` through ``agent.run`` with a ``FunctionModel``, with no model."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from integration_support import CALLS, HIGH, LOW, calls, legacy_tools, loop_counts

import shadow
from shadow.testing import InMemoryFlags, InMemoryStore

pytest.importorskip("pydantic_ai")
from pydantic_ai import Agent, RunContext
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from shadow.integrations import pydantic_ai_tool


class Script:
    """A ``FunctionModel`` that calls the given tools one after another, then answers; it keeps what it saw."""

    def __init__(self, steps: list[tuple[str, dict[str, Any]]]) -> None:
        self.steps = steps
        self.returns: list[str] = []
        self.schemas: dict[str, Any] = {}

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.schemas = {t.name: (t.description, t.parameters_json_schema) for t in info.function_tools}
        self.returns += [p.model_response_str() for p in messages[-1].parts if isinstance(p, ToolReturnPart)]
        step = len([m for m in messages if isinstance(m, ModelResponse)])
        if step < len(self.steps):
            name, args = self.steps[step]
            return ModelResponse(parts=[ToolCallPart(name, args, tool_call_id=f"call_{step}")])
        return ModelResponse(parts=[TextPart("done")])


def run(flags: InMemoryFlags | None, steps: list[tuple[str, dict[str, Any]]], **kwargs: Any) -> Script:
    """The legacy tools on an agent (shadowed unless ``flags`` is None), driven through ``steps``."""
    script = Script(steps)
    agent = Agent(FunctionModel(script))
    for fn in legacy_tools().values():
        if flags is None:
            agent.tool_plain(fn)
        else:
            pydantic_ai_tool(agent, flags=flags)(fn)
    asyncio.run(agent.run("go", **kwargs))
    return script


def test_the_schema_is_the_one_pydantic_ai_generates(flags: InMemoryFlags) -> None:
    plain, shadowed = run(None, []), run(flags, [])
    assert shadowed.schemas == plain.schemas
    assert shadowed.schemas["get_task"][1]["properties"]["priority"]["enum"] == ["low", "high"]


def test_shadow_mode_returns_what_pydantic_ai_returned_before_and_logs_one_record_per_call(
        flags: InMemoryFlags, log: InMemoryStore) -> None:
    for name in ("get_task", "lookup", "search"):
        flags.set(name, "shadow")
    assert run(flags, CALLS).returns == run(None, CALLS).returns
    assert [(r.tool, r.outcome) for r in calls(log)] == [(n, o) for (n, _), o in zip(
        CALLS, ("ok", "error", "ok", "error", "ok"), strict=True)]


def test_cutover_shows_the_model_the_contract_json(flags: InMemoryFlags, log: InMemoryStore) -> None:
    for name in ("get_task", "lookup", "search"):
        flags.set(name, "cutover")
    for seen in run(flags, CALLS).returns:
        shadow.validate(json.loads(seen))
    assert [r.variant for r in calls(log)] == ["structured"] * len(CALLS)


def test_three_identical_failing_calls_through_a_context_tool_are_three_errors_and_two_loops(
        flags: InMemoryFlags, sql_log: str, tmp_path: Path) -> None:
    script = Script([("find", {"item_id": "42"})] * 3)
    agent = Agent(FunctionModel(script))

    @pydantic_ai_tool(agent, flags=flags)
    def find(ctx: RunContext[None], item_id: str) -> str:
        """Find an item."""
        assert ctx.run_step
        return "Error: not found"

    flags.set("find", "shadow")
    asyncio.run(agent.run("go"))
    assert loop_counts(sql_log, tmp_path, "find") == (3, 2)


def test_conversations_are_sessions_so_a_percentage_cutover_splits_them(
        flags: InMemoryFlags, log: InMemoryStore) -> None:
    flags.set("lookup", "cutover", 50)
    for conversation in (LOW, HIGH):
        run(flags, [("lookup", {"item_id": "0"}), ("lookup", {"item_id": "1"})], conversation_id=conversation)
    assert {(r.session_id, r.variant) for r in calls(log)} == {(LOW, "structured"), (HIGH, "legacy")}


def test_shadow_tool_cannot_sit_above_the_registration() -> None:
    agent = Agent(FunctionModel(Script([])))
    registered = pydantic_ai_tool(agent)(legacy_tools()["lookup"])
    assert registered.__shadow_tool__ == "lookup"  # one decorator registers the shadowed function: no order to get wrong


def test_plain_decorator_under_pydantic_ai_leaves_run_context_out_and_counts_loops(
        flags: InMemoryFlags, sql_log: str, tmp_path: Path) -> None:
    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        step = len([m for m in messages if isinstance(m, ModelResponse)])
        if step < 3:
            return ModelResponse(parts=[ToolCallPart("pa_find", {"item_id": "42"}, tool_call_id=f"c{step}")])
        return ModelResponse(parts=[TextPart("done")])

    agent = Agent(FunctionModel(model))

    @agent.tool
    @shadow.tool(flags=flags)
    def pa_find(ctx: RunContext[None], item_id: str) -> str:
        """Find an item."""
        return "Error: not found"

    flags.set("pa_find", "shadow")
    asyncio.run(agent.run("go"))
    assert loop_counts(sql_log, tmp_path, "pa_find") == (3, 2)


def test_shadow_tool_over_a_pydantic_ai_tool_object_is_a_type_error() -> None:
    from pydantic_ai.tools import Tool

    with pytest.raises(TypeError, match=r"PydanticAI's Tool.*below"):
        shadow.tool(Tool(legacy_tools()["lookup"]))
