"""Each framework's own error channel in cutover, through MCP clients and LangChain ``invoke``: the payload travels
where the legacy error did (the agent runs: ``test_channels_runs.py``)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from integration_support import calls, legacy_tools, served_error

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

from shadow.integrations import (
    fastmcp_tool,
    langchain_tool,
    mcp_tool,
)

WORDS = "x must be positive; try x=1"




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
        error = served_error(result.content[0].text)
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
        assert served_error(text)["message"] == WORDS


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
        assert served_error(str(raised.value))["message"] == "room R1 is taken"
        assert isinstance(raised.value.__cause__, ToolException)  # the tool's own exception, chained
        return
    message = made.invoke(call)
    assert message.status == "error"
    if handler is True:
        assert served_error(message.content)["message"] == "room R1 is taken"
    elif isinstance(handler, str):
        assert message.content == "Try another room."
    else:
        assert message.content.startswith("handled: ")
        assert served_error(message.content.removeprefix("handled: "))["message"] == "room R1 is taken"
    # the phrase table reads a room taken as a conflict (ask_user: choose another room), in the author's words
    assert [(r.variant, r.outcome, r.code) for r in calls(log)] == [("structured", "error", "conflict")]


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
    assert (served_error(error.content)["code"], error.artifact) == ("not_found", {"raw": "0"})  # returned: passed on
    assert (served_error(raised.content)["code"], raised.artifact) == ("internal_error", None)  # raised: no artifact
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
    assert message.status == "error" and served_error(message.content)["code"] == "not_found"


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
    assert name_and_room == "RoomTaken R2" and served_error(text)["message"] == "room R2 is taken"
    loud = book.invoke({"name": "book", "args": {"room": "loud"}, "id": "c2", "type": "tool_call"})
    assert type(seen[1]) is ToolException and served_error(loud.content.split(": ", 1)[1])["message"] == "LOUD"

