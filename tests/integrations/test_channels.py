"""Each framework's own error channel in cutover: the payload travels where the legacy error did, through the
framework's own calling path (in-process MCP clients, LangChain ``invoke``, PydanticAI and Agents SDK runs)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from integration_support import calls, legacy_tools
from pydantic import BaseModel

import shadow
from shadow.testing import InMemoryFlags, InMemoryStore

pytest.importorskip("fastmcp")
pytest.importorskip("langchain_core")
pytest.importorskip("pydantic_ai")
pytest.importorskip("agents")

import fastmcp
from fastmcp.exceptions import ToolError as FastToolError
from langchain_core.tools import ToolException, tool
from mcp import Client
from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError as McpToolError
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
    fastmcp_tool,
    langchain_tool,
    mcp_tool,
    openai_agents_tool,
    pydantic_ai_tool,
)

WORDS = "x must be positive; try x=1"


def _message(text: str) -> dict[str, Any]:
    """The error of a payload served as JSON text, checked against the contract."""
    payload = json.loads(text)
    shadow.validate(payload)
    assert payload["ok"] is False
    error: dict[str, Any] = payload["error"]
    return error


# --- MCP: a ToolError is an isError result whose text is the payload -------------------------------------------


def test_a_fastmcp_tool_error_is_an_is_error_result_whose_text_is_the_payload_with_the_authors_words(
        flags: InMemoryFlags, log: InMemoryStore) -> None:
    server = fastmcp.FastMCP("channels")

    @fastmcp_tool(server, flags=flags)
    def square(x: int) -> int:
        raise FastToolError(WORDS)

    @server.tool
    @shadow.tool(flags=flags)
    def cube(x: int) -> int:
        raise FastToolError(WORDS)

    async def run() -> list[Any]:
        async with fastmcp.Client(server) as client:
            return [await client.call_tool(n, {"x": -1}, raise_on_error=False) for n in ("square", "cube")]

    flags.set("square", "cutover")
    flags.set("cube", "cutover")
    for result in asyncio.run(run()):
        assert result.is_error
        error = _message(result.content[0].text)
        assert error["message"] == WORDS and error["code"] != "internal_error"
    assert [(r.outcome, r.unmapped) for r in calls(log)] == [("error", False)] * 2


@pytest.mark.parametrize("instrumented", [True, False])
def test_an_mcp_sdk_tool_error_is_an_is_error_result_carrying_the_payload(
        flags: InMemoryFlags, log: InMemoryStore, instrumented: bool) -> None:
    server = MCPServer("channels")

    @server.tool()
    @shadow.tool(flags=flags)
    def cube(x: int) -> str:
        raise McpToolError(WORDS)

    if instrumented:
        @mcp_tool(server, flags=flags)
        def square(x: int) -> str:
            raise McpToolError(WORDS)

    names = ("square", "cube") if instrumented else ("cube",)

    async def run() -> list[Any]:
        async with Client(server) as client:
            return [await client.call_tool(n, {"x": -1}) for n in names]

    for name in names:
        flags.set(name, "cutover")
    for result in asyncio.run(run()):
        assert result.is_error
        text = result.content[0].text
        if not instrumented:  # the SDK names the tool before the text of a ToolError the tool raised
            assert text.startswith("Error executing tool cube: ")
            text = text.removeprefix("Error executing tool cube: ")
        assert _message(text)["message"] == WORDS


# --- LangChain: a ToolException is re-raised carrying the payload, handled by the tool's own setting ------------


def _reserve(room: str) -> str:
    """Reserve a room."""
    raise ToolException(f"room {room} is taken")


def _made(kind: str, flags: InMemoryFlags, handler: Any) -> Any:
    """``_reserve`` as a LangChain tool with ``handle_tool_error=handler`` (``None``: LangChain's default)."""
    options = {} if handler is None else {"handle_tool_error": handler}
    if kind == "integration":
        return langchain_tool(flags=flags, **options)(_reserve)
    made = tool(shadow.tool(flags=flags)(_reserve))
    if handler is not None:
        made.handle_tool_error = handler
    return made


@pytest.mark.parametrize("kind", ["integration", "plain"])
@pytest.mark.parametrize("handler", [None, False, True, "Try another room.", lambda e: f"handled: {e}"],
                         ids=["default", "false", "true", "text", "callable"])
def test_a_tool_exception_in_cutover_is_handled_by_the_tools_own_handle_tool_error(
        flags: InMemoryFlags, log: InMemoryStore, kind: str, handler: Any) -> None:
    made = _made(kind, flags, handler)
    flags.set("_reserve", "cutover")
    call = {"name": "_reserve", "args": {"room": "R1"}, "id": "c1", "type": "tool_call"}
    if not handler:  # False, LangChain's default: the exception propagates, carrying the payload
        with pytest.raises(ToolException) as raised:
            made.invoke(call)
        assert _message(str(raised.value))["message"] == "room R1 is taken"
        assert isinstance(raised.value.__cause__, ToolException)  # the tool's own exception, chained
        return
    message = made.invoke(call)
    assert message.status == "error"
    if handler is True:
        assert _message(message.content)["message"] == "room R1 is taken"
    elif isinstance(handler, str):
        assert message.content == "Try another room."
    else:
        assert message.content.startswith("handled: ")
        assert _message(message.content.removeprefix("handled: "))["message"] == "room R1 is taken"
    assert [(r.variant, r.outcome, r.unmapped) for r in calls(log)] == [("structured", "error", True)]


def _fetch(item_id: str) -> tuple[str, dict[str, Any]]:
    """Fetch an item."""
    if item_id == "9":
        raise KeyError(item_id)
    return ("Error: not found" if item_id == "0" else f"item {item_id}"), {"raw": item_id}


def test_the_plain_decorator_under_a_content_and_artifact_tool_is_judged_on_its_content_and_keeps_the_artifact(
        flags: InMemoryFlags, log: InMemoryStore) -> None:
    made = tool(response_format="content_and_artifact")(shadow.tool(flags=flags)(_fetch))
    legacy = tool(response_format="content_and_artifact")(_fetch)

    def invoke(item_id: str, which: Any = made) -> Any:
        return which.invoke({"name": "_fetch", "args": {"item_id": item_id}, "id": "c1", "type": "tool_call"})

    flags.set("_fetch", "shadow")
    for item_id in ("1", "0"):
        old, new = invoke(item_id, legacy), invoke(item_id)
        assert (new.content, new.artifact, new.status) == (old.content, old.artifact, old.status)
    flags.set("_fetch", "cutover")
    ok, error, raised = invoke("1"), invoke("0"), invoke("9")
    assert (json.loads(ok.content), ok.artifact) == ({"ok": True, "data": "item 1"}, {"raw": "1"})
    assert (_message(error.content)["code"], error.artifact) == ("not_found", {"raw": "0"})  # returned: passed on
    assert (_message(raised.content)["code"], raised.artifact) == ("internal_error", None)  # raised: no artifact
    records = calls(log)
    assert [(r.legacy_payload, r.outcome) for r in records[:2]] == [("item 1", "ok"), ("Error: not found", "error")]
    assert all("raw" not in json.dumps(r.new_payload) for r in records)


def test_an_async_plain_content_and_artifact_tool_keeps_its_artifact_in_cutover(flags: InMemoryFlags,
                                                                                log: InMemoryStore) -> None:
    async def afetch(item_id: str) -> tuple[str, dict[str, Any]]:
        """Fetch an item."""
        return f"item {item_id}", {"raw": item_id}

    made = tool(response_format="content_and_artifact")(shadow.tool(flags=flags)(afetch))
    flags.set("afetch", "cutover")
    message = asyncio.run(made.ainvoke({"name": "afetch", "args": {"item_id": "1"}, "id": "c1", "type": "tool_call"}))
    assert (json.loads(message.content), message.artifact) == ({"ok": True, "data": "item 1"}, {"raw": "1"})


def test_a_return_direct_tool_serves_the_payload_in_cutover(flags: InMemoryFlags, log: InMemoryStore) -> None:
    made = langchain_tool(flags=flags, return_direct=True)(legacy_tools()["lookup"])
    flags.set("lookup", "cutover")
    assert made.return_direct
    message = made.invoke({"name": "lookup", "args": {"item_id": "0"}, "id": "c1", "type": "tool_call"})
    assert message.status == "error" and _message(message.content)["code"] == "not_found"


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
        error = _message(prompt)
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
    assert model.retries == ["Pass a positive number."] * 1 or all("Pass a positive number." in r
                                                                    for r in model.retries)
    assert {(r.code, r.unmapped, r.rule) for r in calls(log)} == {("validation_error", False, "ModelRetry")}


def test_a_tool_failed_in_cutover_is_a_failed_tool_result_carrying_the_payload(
        flags: InMemoryFlags, log: InMemoryStore) -> None:
    model = Retrying("book", limit=2)
    agent = Agent(FunctionModel(model))

    @pydantic_ai_tool(agent, flags=flags)
    def book(x: int) -> str:
        """Book a seat."""
        raise ToolFailed("no seats left on train 4411")

    flags.set("book", "cutover")
    assert asyncio.run(agent.run("go")).output == "gave up"
    assert model.retries == []
    (seen,) = model.returns
    error = _message(seen)
    assert (error["code"], error["message"]) == ("rejected", "no seats left on train 4411")


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


def test_a_fastmcp_tool_with_its_own_output_schema_validates_in_cutover(flags: InMemoryFlags,
                                                                        log: InMemoryStore) -> None:
    import jsonschema

    server = fastmcp.FastMCP("schema")
    schema = {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}

    @fastmcp_tool(server, flags=flags, output_schema=schema)
    def item(item_id: str) -> dict[str, Any]:
        return {"id": item_id}

    async def run() -> tuple[Any, Any]:
        async with fastmcp.Client(server) as client:
            (listed,) = await client.list_tools()
            return listed, await client.call_tool("item", {"item_id": "7"})

    flags.set("item", "shadow")
    listed, legacy = asyncio.run(run())
    assert legacy.structured_content == {"id": "7"}
    flags.set("item", "cutover")
    _, served = asyncio.run(run())
    assert served.structured_content == {"ok": True, "data": {"id": "7"}}
    jsonschema.validate(served.structured_content, listed.output_schema)
    jsonschema.validate(legacy.structured_content, listed.output_schema)


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


def test_an_mcp_protocol_error_a_tool_raises_is_still_a_protocol_error_in_cutover(
        flags: InMemoryFlags, log: InMemoryStore) -> None:
    from mcp.shared.exceptions import MCPError

    server = MCPServer("protocol")

    @mcp_tool(server, flags=flags)
    def locked(x: int) -> str:
        raise MCPError(-32042, "open the sign-in page first")

    async def run() -> Any:
        async with Client(server) as client:
            try:
                return await client.call_tool("locked", {"x": 1})
            except MCPError as error:  # a JSON-RPC error, not a tool result
                return error

    for mode in ("shadow", "cutover"):
        flags.set("locked", mode)
        error = asyncio.run(run())
        assert isinstance(error, MCPError) and (error.code, error.message) == (-32042, "open the sign-in page first")
    assert [(r.variant, r.outcome) for r in calls(log)] == [("legacy", "cancelled"), ("structured", "cancelled")]


class RoomTaken(ToolException):
    """A user's own ToolException, with its own constructor and attributes."""

    def __init__(self, room: str) -> None:
        super().__init__(f"room {room} is taken")
        self.room = room


class Loud(ToolException):
    """A ToolException whose own ``__str__`` ignores its arguments."""

    def __str__(self) -> str:
        return "LOUD"


def test_a_users_tool_exception_subclass_reaches_their_handler_as_itself_carrying_the_payload(
        flags: InMemoryFlags, log: InMemoryStore) -> None:
    seen: list[BaseException] = []

    def handler(error: ToolException) -> str:
        seen.append(error)
        return f"{type(error).__name__} {getattr(error, 'room', '-')}: {error}"

    @langchain_tool(flags=flags, handle_tool_error=handler)
    def book(room: str) -> str:
        """Book a room."""
        raise RoomTaken(room) if room != "loud" else Loud("the hall is taken")

    flags.set("book", "cutover")
    taken = book.invoke({"name": "book", "args": {"room": "R2"}, "id": "c1", "type": "tool_call"})
    name_and_room, text = taken.content.split(": ", 1)
    assert name_and_room == "RoomTaken R2" and _message(text)["message"] == "room R2 is taken"
    loud = book.invoke({"name": "book", "args": {"room": "loud"}, "id": "c2", "type": "tool_call"})
    assert type(seen[1]) is ToolException and _message(loud.content.split(": ", 1)[1])["message"] == "LOUD"


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
    assert listed.output_schema is None and result.is_error and _message(result.content[0].text)["code"] == "not_found"
    model = ScriptedModel([ModelStep(output=[function_call("look", {"item_id": "1"}, call_id="c1")]),
                           ModelStep(output=[assistant_message("done")])])
    asyncio.run(Runner.run(SdkAgent(name="a", model=model, tools=[look]), "go"))
    (seen,) = [i["output"] for i in model.calls[1].input if isinstance(i, dict) and i.get("type") ==
               "function_call_output"]
    assert _message(seen)["code"] == "not_found"
