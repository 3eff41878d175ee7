"""Each framework's own error channel in cutover, through agent runs: PydanticAI ``Agent`` with a ``FunctionModel``,
the Agents SDK's ``Runner.run`` with a scripted model (and the options that change no result shape)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from integration_support import calls, served_error
from pydantic import BaseModel

import shadow
from shadow.testing import InMemoryFlags, InMemoryStore

pytest.importorskip("fastmcp")
pytest.importorskip("langchain_core")
pytest.importorskip("pydantic_ai")
pytest.importorskip("agents")

from mcp import Client
from mcp.server import MCPServer
from pydantic_ai import Agent, ModelRetry, ToolFailed
from pydantic_ai.exceptions import UnexpectedModelBehavior
from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from shadow.integrations import (
    mcp_tool,
    openai_agents_tool,
    pydantic_ai_tool,
)

WORDS = "x must be positive; try x=1"


# --- PydanticAI: ModelRetry and ToolFailed re-raised carrying the payload, so the retry budget holds ---------------


class Retrying:
    """A ``FunctionModel`` that calls ``tool`` until the run ends, keeping the retry prompts and returns it saw."""

    def __init__(self, tool: str, limit: int = 8) -> None:
        self.tool, self.limit = tool, limit
        self.retries: list[str] = []
        self.returns: list[Any] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        for part in messages[-1].parts:
            if isinstance(part, RetryPromptPart) or getattr(part, "outcome", None) == "retried":
                self.retries.append(str(part.content))
            elif isinstance(part, ToolReturnPart):
                self.returns.append(part.content)
        if len(messages) > self.limit:
            return ModelResponse(parts=[TextPart("gave up")])
        return ModelResponse(parts=[ToolCallPart(self.tool, {"x": -1}, tool_call_id=f"c{len(messages)}")])


@pytest.mark.parametrize("kind", ["integration", "plain"])
def test_a_model_retry_in_cutover_keeps_the_retry_limit_and_carries_the_payload(
        flags: InMemoryFlags, log: InMemoryStore, kind: str) -> None:
    model = Retrying("square")
    agent = Agent(FunctionModel(model))

    def square(x: int) -> int:
        """Square a positive number."""
        raise ModelRetry(WORDS)

    if kind == "integration":
        pydantic_ai_tool(agent, flags=flags, retries=2)(square)
    else:
        agent.tool_plain(retries=2)(shadow.tool(flags=flags)(square))
    flags.set("square", "cutover")
    with pytest.raises(UnexpectedModelBehavior, match="exceeded max retries count of 2"):
        asyncio.run(agent.run("go"))
    assert len(model.retries) == 2
    for prompt in model.retries:
        error = served_error(prompt)
        assert (error["code"], error["message"]) == ("validation_error", WORDS)
    assert [(r.variant, r.code, r.unmapped) for r in calls(log)] == [("structured", "validation_error", False)] * 3


def test_a_model_retry_in_shadow_mode_is_logged_as_a_validation_error_not_an_internal_one(
        flags: InMemoryFlags, log: InMemoryStore) -> None:
    model = Retrying("square")
    agent = Agent(FunctionModel(model))

    @pydantic_ai_tool(agent, flags=flags, retries=1)
    def square(x: int) -> int:
        """Square a positive number."""
        raise ModelRetry("Pass a positive number.")

    flags.set("square", "shadow")
    with pytest.raises(UnexpectedModelBehavior):
        asyncio.run(agent.run("go"))
    assert model.retries == ["Pass a positive number."]  # the legacy words, one retry as configured
    assert {(r.code, r.unmapped, r.rule) for r in calls(log)} == {("validation_error", False, "ModelRetry")}


def test_a_tool_failed_in_cutover_is_a_failed_tool_result_carrying_the_payload(
        flags: InMemoryFlags, log: InMemoryStore) -> None:
    model = Retrying("book", limit=2)
    agent = Agent(FunctionModel(model))

    @pydantic_ai_tool(agent, flags=flags)
    def book(x: int) -> str:
        """Book a seat."""
        raise ToolFailed("train 4411 runs on Sundays")

    flags.set("book", "cutover")
    assert asyncio.run(agent.run("go")).output == "gave up"
    assert model.retries == []
    (seen,) = model.returns
    error = served_error(seen)
    assert (error["code"], error["message"]) == ("rejected", "train 4411 runs on Sundays")


# --- the Agents SDK: failure_error_function=None still ends the run ------------------------------------------------


def test_failure_error_function_none_still_aborts_the_run_in_cutover_and_logs_the_call(
        flags: InMemoryFlags, log: InMemoryStore) -> None:
    from agents import Agent as SdkAgent
    from agents import Runner, set_trace_processors
    from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call

    set_trace_processors([])

    @openai_agents_tool(flags=flags, failure_error_function=None)
    def charge(amount: int) -> str:
        """Charge a card."""
        raise ConnectionError("payment gateway down")

    def run() -> BaseException:
        model = ScriptedModel([ModelStep(output=[function_call("charge", {"amount": 5}, call_id="c1")]),
                               ModelStep(output=[assistant_message("done")])])
        with pytest.raises(Exception, match="payment gateway down") as raised:
            asyncio.run(Runner.run(SdkAgent(name="a", model=model, tools=[charge]), "go"))
        return raised.value

    legacy = run()  # the SDK's own way to end the run: its UserError, caused by the tool's exception
    flags.set("charge", "cutover")
    served = run()
    assert (type(served), str(served), type(served.__cause__)) == (type(legacy), str(legacy), ConnectionError)
    (record,) = [r for r in calls(log) if r.variant == "structured"]
    assert (record.variant, record.outcome, record.code) == ("structured", "error", "upstream_unavailable")


class Seat(BaseModel):
    """A seat, as a typed tool returns it."""

    number: str


def test_an_agents_tool_with_a_declared_output_type_is_refused_at_decoration_time(flags: InMemoryFlags) -> None:
    def seat(row: int) -> Seat:
        """Pick a seat."""
        return Seat(number=f"{row}A")

    with pytest.raises(TypeError, match=r"openai_agents_tool: seat declares a strict output schema"):
        openai_agents_tool(flags=flags, output_type=Seat)(seat)
    with pytest.raises(TypeError, match=r"allowed_callers"):
        openai_agents_tool(flags=flags, allowed_callers=["direct", "programmatic"])(seat)
    made = openai_agents_tool(flags=flags, strict_mode=False)(seat)  # strict_mode is about the arguments: fine
    assert made.output_json_schema is None


@pytest.mark.parametrize("kind", ["integration", "plain"])
def test_a_deferred_pydantic_ai_call_is_still_deferred_in_cutover_and_logged_as_cancelled(
        flags: InMemoryFlags, log: InMemoryStore, kind: str) -> None:
    from pydantic_ai import CallDeferred, DeferredToolRequests

    agent = Agent(FunctionModel(Retrying("ship", limit=2)), output_type=[str, DeferredToolRequests])

    def ship(x: int) -> str:
        """Ship an order, later."""
        raise CallDeferred(metadata={"queue": "slow"})

    if kind == "integration":
        pydantic_ai_tool(agent, flags=flags)(ship)
    else:
        agent.tool_plain(shadow.tool(flags=flags)(ship))
    flags.set("ship", "cutover")
    output = asyncio.run(agent.run("go")).output
    assert isinstance(output, DeferredToolRequests) and [c.tool_name for c in output.calls] == ["ship"]
    assert [(r.variant, r.outcome) for r in calls(log)] == [("structured", "cancelled")]


def test_options_that_change_no_result_shape_serve_the_payload_in_cutover(flags: InMemoryFlags,
                                                                           log: InMemoryStore) -> None:
    from agents import Agent as SdkAgent
    from agents import Runner, set_trace_processors
    from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call

    set_trace_processors([])
    server = MCPServer("unstructured")

    @mcp_tool(server, flags=flags, structured_output=False)
    def find(item_id: str) -> str:
        return "Error: not found"

    @openai_agents_tool(flags=flags, strict_mode=False)
    def look(item_id: str, limit: int = 3) -> str:
        """Look an item up."""
        return "Error: not found"

    async def listed_and_called() -> Any:
        async with Client(server) as client:
            (listed,) = (await client.list_tools()).tools
            return listed, await client.call_tool("find", {"item_id": "1"})

    flags.set("find", "cutover")
    flags.set("look", "cutover")
    listed, result = asyncio.run(listed_and_called())
    assert listed.output_schema is None and result.is_error
    assert served_error(result.content[0].text)["code"] == "not_found"
    model = ScriptedModel([ModelStep(output=[function_call("look", {"item_id": "1"}, call_id="c1")]),
                           ModelStep(output=[assistant_message("done")])])
    asyncio.run(Runner.run(SdkAgent(name="a", model=model, tools=[look]), "go"))
    (seen,) = [i["output"] for i in model.calls[1].input if isinstance(i, dict) and i.get("type") ==
               "function_call_output"]
    assert served_error(seen)["code"] == "not_found"


def test_another_frameworks_retry_raised_in_an_agents_sdk_tool_reaches_the_model_as_its_payload(
        flags: InMemoryFlags, log: InMemoryStore) -> None:
    """pydantic-ai's web_fetch inside an Agents SDK tool raised ``ModelRetry``: shadow re-raised it for PydanticAI's
    channel, and the SDK's failure function replaced it with "An error occurred while running the tool"."""
    from agents import Agent as SdkAgent
    from agents import Runner, function_tool, set_trace_processors
    from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call

    from shadow.integrations import shadow_agent

    set_trace_processors([])

    @openai_agents_tool(flags=flags)
    def fetch(url: str) -> str:
        """Fetch a URL."""
        raise ModelRetry(f'Failed to fetch {url}: URL protocol "" is not allowed.')

    @function_tool
    def fetch_raw(url: str) -> str:
        """Fetch a URL."""
        raise ModelRetry(f'Failed to fetch {url}: URL protocol "" is not allowed.')

    layer = shadow_agent(SdkAgent(name="layer", tools=[fetch_raw]), flags=flags)
    for name, tools in (("fetch", [fetch]), ("fetch_raw", layer.tools)):
        flags.set(name, "cutover")
        model = ScriptedModel([ModelStep(output=[function_call(name, {"url": "not a url"}, call_id="c1")]),
                               ModelStep(output=[assistant_message("done")])])
        asyncio.run(Runner.run(SdkAgent(name="a", model=model, tools=tools), "go"))
        (seen,) = [i["output"] for i in model.calls[1].input if isinstance(i, dict) and i.get("type") ==
                   "function_call_output"]
        error = served_error(seen)
        assert (error["code"], error["next_action"]) == ("validation_error", "ask_user")
        assert "URL protocol" in error["message"]
