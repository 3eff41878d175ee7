"""A whole tool layer in one line, the OpenAI Agents SDK: ``shadow_agent(agent)`` through ``Runner.run`` and
``Runner.run_streamed`` with the SDK's scripted model."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from integration_support import CALLS, calls, legacy_tools

import shadow
from shadow.testing import InMemoryFlags, InMemoryStore

pytest.importorskip("agents")
from agents import Agent, FunctionTool, RunConfig, Runner, function_tool, set_trace_processors
from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call

from shadow.integrations import openai_agents_tool, shadow_agent

set_trace_processors([])  # offline: export no traces
MODES = ("shadow", "cutover")


def _model() -> ScriptedModel:
    return ScriptedModel([ModelStep(output=[function_call(n, a, call_id=f"c{i}") for i, (n, a) in enumerate(CALLS)]),
                          ModelStep(output=[assistant_message("done")])])


def _outputs(agent: Any, model: ScriptedModel, streamed: bool = False) -> list[str]:
    """What the model read back for each call of CALLS, in call order."""
    async def go() -> None:
        config = RunConfig(group_id="conv-A")
        if streamed:
            result = Runner.run_streamed(agent, "go", run_config=config)
            async for _ in result.stream_events():
                pass
        else:
            await Runner.run(agent, "go", run_config=config)

    asyncio.run(go())
    seen = {i["call_id"]: i["output"] for i in model.calls[1].input
            if isinstance(i, dict) and i.get("type") == "function_call_output"}
    return [seen[f"c{i}"] for i in range(len(CALLS))]


@pytest.mark.parametrize("mode", MODES)
def test_shadow_agent_shadows_every_function_tool_of_the_agent_but_the_ignored_one(
        flags: InMemoryFlags, log: InMemoryStore, mode: str) -> None:
    for name in ("get_task", "lookup", "search"):
        flags.set(name, mode)
    plain_model, model = _model(), _model()
    plain = Agent(name="shop", model=plain_model, tools=[function_tool(fn) for fn in legacy_tools().values()])
    before = _outputs(plain, plain_model)
    agent = Agent(name="shop", model=model, tools=[function_tool(fn) for fn in legacy_tools().values()])
    shadowed = shadow_agent(agent, flags=flags, ignore=["search"])
    assert shadowed is not agent and all(t.on_invoke_tool is not s.on_invoke_tool
                                         for t, s in zip(agent.tools[:2], shadowed.tools[:2], strict=True))
    after = _outputs(shadowed, model)
    for (name, _), old, new in zip(CALLS, before, after, strict=True):
        if mode == "shadow" or name == "search":
            assert new == old
        else:
            shadow.validate(json.loads(new))
    records = calls(log)
    assert sorted((r.tool, r.outcome) for r in records) == sorted(
        (n, o) for (n, _), o in zip(CALLS[:3], ("ok", "error", "ok"), strict=True))
    assert {(r.variant, r.session_id) for r in records} == {("legacy" if mode == "shadow" else "structured", "conv-A")}


def test_shadow_agent_keeps_the_tools_schema_and_failure_policy(flags: InMemoryFlags) -> None:
    def broken(item_id: str) -> str:
        """Always fails."""
        raise RuntimeError("down")

    raising = function_tool(broken, failure_error_function=None)
    agent = shadow_agent(Agent(name="a", tools=[raising, openai_agents_tool(flags=flags)(legacy_tools()["lookup"])]),
                         flags=flags)
    made, kept = agent.tools
    assert isinstance(made, FunctionTool) and made.params_json_schema == raising.params_json_schema
    assert made._failure_error_function is None and not made._use_default_failure_error_function
    assert kept.on_invoke_tool is agent.tools[1].on_invoke_tool  # shadowed already: left as it is
    with pytest.raises(TypeError, match="one string"):
        shadow_agent(agent, ignore="lookup")


@pytest.mark.parametrize("layer", ["decorator", "shadow_agent"])
@pytest.mark.parametrize("mode", MODES)
def test_a_streamed_run_logs_and_serves_the_same_as_a_plain_run(
        flags: InMemoryFlags, log: InMemoryStore, mode: str, layer: str) -> None:
    def agent(model: ScriptedModel) -> Any:
        if layer == "decorator":
            return Agent(name="shop", model=model, tools=[openai_agents_tool(flags=flags)(fn)
                                                          for fn in legacy_tools().values()])
        return shadow_agent(Agent(name="shop", model=model, tools=[function_tool(fn) for fn in
                                                                   legacy_tools().values()]), flags=flags)

    for name in ("get_task", "lookup", "search"):
        flags.set(name, mode)
    ran, streamed = _model(), _model()
    assert _outputs(agent(streamed), streamed, streamed=True) == _outputs(agent(ran), ran)
    records = calls(log)
    half = len(records) // 2
    assert half == len(CALLS)

    def key(r: Any) -> tuple[str, str, str, str]:
        return r.tool, r.variant, r.outcome, json.dumps(r.args, sort_keys=True)

    assert sorted(map(key, records[:half])) == sorted(map(key, records[half:]))
    assert {r.variant for r in records} == {"legacy" if mode == "shadow" else "structured"}
