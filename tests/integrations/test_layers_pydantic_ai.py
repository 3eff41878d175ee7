"""A whole tool layer in one line, PydanticAI: ``ShadowToolset`` and the ``ShadowTools`` capability through
``agent.run`` with a ``FunctionModel``, and ``agent.run_stream``/``agent.iter`` with a streamed one."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from integration_support import CALLS, calls, legacy_tools

import shadow
from shadow.testing import InMemoryFlags, InMemoryStore

pytest.importorskip("pydantic_ai")
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel
from pydantic_ai.toolsets import FunctionToolset

from shadow.integrations import ShadowTools, ShadowToolset, pydantic_ai_tool

MODES = ("shadow", "cutover")


class Script:
    """A model calling ``steps`` one after another, then answering; it keeps the tool returns it read."""

    def __init__(self, steps: list[tuple[str, dict[str, Any]]]) -> None:
        self.steps = steps
        self.returns: list[str] = []

    def _step(self, messages: list[ModelMessage]) -> tuple[int, tuple[str, dict[str, Any]] | None]:
        self.returns += [p.model_response_str() for p in messages[-1].parts if isinstance(p, ToolReturnPart)]
        step = len([m for m in messages if isinstance(m, ModelResponse)])
        return step, self.steps[step] if step < len(self.steps) else None

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        step, call = self._step(messages)
        if call is None:
            return ModelResponse(parts=[TextPart("done")])
        return ModelResponse(parts=[ToolCallPart(call[0], call[1], tool_call_id=f"call_{step}")])

    async def stream(self, messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str | DeltaToolCalls]:
        step, call = self._step(messages)
        if call is None:
            yield "done"
        else:
            yield {0: DeltaToolCall(name=call[0], json_args=json.dumps(call[1]), tool_call_id=f"call_{step}")}


def _run(agent: Agent[None, str], script: Script, how: str = "run") -> list[str]:
    async def go() -> None:
        if how == "run_stream":
            async with agent.run_stream("go") as run:
                await run.get_output()
        elif how == "iter":
            async with agent.iter("go") as graph:
                async for _node in graph:
                    pass
        else:
            await agent.run("go")

    asyncio.run(go())
    return script.returns


def _check(mode: str, before: list[str], after: list[str], log: InMemoryStore) -> None:
    for (name, _), old, new in zip(CALLS, before, after, strict=True):
        if mode == "shadow" or name == "search":
            assert new == old
        else:
            shadow.validate(json.loads(new))
    assert [(r.tool, r.variant, r.outcome) for r in calls(log)] == [
        (n, "legacy" if mode == "shadow" else "structured", o)
        for (n, _), o in zip(CALLS[:3], ("ok", "error", "ok"), strict=True)]


@pytest.mark.parametrize("mode", MODES)
def test_a_shadow_toolset_shadows_every_tool_of_the_toolset_but_the_ignored_one(
        flags: InMemoryFlags, log: InMemoryStore, mode: str) -> None:
    for name in ("get_task", "lookup", "search"):
        flags.set(name, mode)
    plain, shadowed = Script(CALLS), Script(CALLS)
    before = _run(Agent(FunctionModel(plain), toolsets=[FunctionToolset(list(legacy_tools().values()))]), plain)
    toolset = ShadowToolset(FunctionToolset(list(legacy_tools().values())), flags=flags, ignore=["search"])
    after = _run(Agent(FunctionModel(shadowed), toolsets=[toolset]), shadowed)
    _check(mode, before, after, log)


@pytest.mark.parametrize("mode", MODES)
def test_the_shadow_tools_capability_shadows_every_tool_registered_on_the_agent(
        flags: InMemoryFlags, log: InMemoryStore, mode: str) -> None:
    for name in ("get_task", "lookup", "search"):
        flags.set(name, mode)
    plain, shadowed = Script(CALLS), Script(CALLS)
    before = _run(Agent(FunctionModel(plain), tools=list(legacy_tools().values())), plain)
    agent = Agent(FunctionModel(shadowed), capabilities=[ShadowTools(flags=flags, ignore=["search"])])
    for fn in legacy_tools().values():
        agent.tool_plain(fn)
    _check(mode, before, _run(agent, shadowed), log)


def test_a_tool_made_by_pydantic_ai_tool_under_the_capability_is_logged_once(
        flags: InMemoryFlags, log: InMemoryStore) -> None:
    script = Script([("lookup", {"item_id": "0"})])
    agent = Agent(FunctionModel(script), capabilities=[ShadowTools(flags=flags)])
    pydantic_ai_tool(agent, flags=flags)(legacy_tools()["lookup"])
    flags.set("lookup", "cutover")
    (seen,) = _run(agent, script)
    assert json.loads(seen)["error"]["code"] == "not_found" and len(calls(log)) == 1


@pytest.mark.parametrize("how", ["run_stream", "iter"])
@pytest.mark.parametrize("layer", ["decorator", "capability"])
@pytest.mark.parametrize("mode", MODES)
def test_a_streamed_run_logs_and_serves_the_same_as_a_plain_run(
        flags: InMemoryFlags, log: InMemoryStore, mode: str, layer: str, how: str) -> None:
    def agent(script: Script) -> Agent[None, str]:
        model = FunctionModel(script, stream_function=script.stream)
        made: Agent[None, str] = Agent(model, capabilities=[ShadowTools(flags=flags)] if layer != "decorator" else [])
        for fn in legacy_tools().values():
            if layer == "decorator":
                pydantic_ai_tool(made, flags=flags)(fn)
            else:
                made.tool_plain(fn)
        return made

    for name in ("get_task", "lookup", "search"):
        flags.set(name, mode)
    ran, streamed = Script(CALLS), Script(CALLS)
    assert _run(agent(streamed), streamed, how) == _run(agent(ran), ran)
    records = calls(log)
    half = len(records) // 2
    assert half == len(CALLS)
    assert [(r.tool, r.variant, r.outcome, r.args) for r in records[:half]] == [
        (r.tool, r.variant, r.outcome, r.args) for r in records[half:]]
    assert {r.variant for r in records} == {"legacy" if mode == "shadow" else "structured"}
