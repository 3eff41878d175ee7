"""The plain ``@shadow.tool`` under ``@mcp.tool`` (FastMCP) and ``@server.tool()`` (MCPServer), for any return type.

Shadow mode serves exactly what the undecorated tool served; cutover serves the payload, valid against the output
schema the framework advertises, on successes and errors alike, with ``isError`` on errors.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sys
import typing
from collections.abc import Callable
from typing import Any

import jsonschema
import pytest
from integration_support import Item
from typing_extensions import TypedDict

import shadow
from shadow.integrations import instrument_mcp
from shadow.testing import InMemoryFlags, InMemoryStore

fastmcp = pytest.importorskip("fastmcp")
mcp_server = pytest.importorskip("mcp.server")
from mcp import Client  # noqa: E402


@dataclasses.dataclass
class Row:
    """A row, as a legacy tool returns it."""

    id: str
    count: int


class Entry(TypedDict):
    """An entry, as a legacy tool returns it."""

    id: str
    count: int


class StdEntry(typing.TypedDict):
    """A ``typing.TypedDict`` (FastMCP cannot describe one below Python 3.12; MCPServer rebuilds it)."""

    id: str
    count: int


def _tool(returns: Any, value: Callable[[str], Any]) -> Callable[[str], Any]:
    """A legacy tool ``-> returns`` that returns ``value(item_id)`` and raises ``KeyError`` for item "0"."""

    def get(item_id: str) -> Any:
        """Fetch one thing."""
        if item_id == "0":
            raise KeyError("no such item")
        return value(item_id)

    get.__annotations__["return"] = returns
    return get


RETURNS: dict[str, tuple[Any, Callable[[str], Any]]] = {
    "model": (Item, lambda i: Item(id=i, title="Ship")),
    "dataclass": (Row, lambda i: Row(id=i, count=2)),
    "typeddict": (Entry, lambda i: {"id": i, "count": 2}),
    "typing_typeddict": (StdEntry, lambda i: {"id": i, "count": 2}),
    "dict_of_int": (dict[str, int], lambda i: {i: 2}),
    "list_of_models": (list[Item], lambda i: [Item(id=i, title="Ship")]),
    "optional_model": (Item | None, lambda i: Item(id=i, title="Ship")),
    "int": (int, lambda i: int(i)),
}


async def _fastmcp_calls(server: Any) -> tuple[Any, list[Any]]:
    async with fastmcp.Client(server) as client:
        (tool,) = await client.list_tools()
        calls = [await client.call_tool("get", {"item_id": i}, raise_on_error=False) for i in ("7", "0")]
    return tool.output_schema, [(r.is_error, r.content, r.structured_content) for r in calls]


async def _mcp_calls(server: Any) -> tuple[Any, list[Any]]:
    async with Client(server) as client:
        (tool,) = (await client.list_tools()).tools
        calls = [await client.call_tool("get", {"item_id": i}) for i in ("7", "0")]
    return tool.output_schema, [(r.is_error, r.content, r.structured_content) for r in calls]


def _serve(framework: str, kind: str, flags: InMemoryFlags | None) -> tuple[Any, list[Any]]:
    """The advertised output schema and the (is_error, content, structured content) of calls for "7" and "0"."""
    fn = _tool(*RETURNS[kind])
    if flags is not None:
        fn = shadow.tool(flags=flags)(fn)
    if framework == "fastmcp":
        server = fastmcp.FastMCP("plain")
        server.tool(fn)
        return asyncio.run(_fastmcp_calls(server))
    mcp = mcp_server.MCPServer("plain")
    mcp.tool()(fn)
    instrument_mcp(mcp)  # what lets a plain-decorated tool on MCPServer see its request (sessions, isError)
    return asyncio.run(_mcp_calls(mcp))


@pytest.mark.filterwarnings("error::UserWarning")  # FastMCP warns when its serializer does not fit the value
@pytest.mark.parametrize("framework", ["fastmcp", "mcp"])
@pytest.mark.parametrize("kind", list(RETURNS))
def test_the_plain_decorator_serves_the_legacy_result_in_shadow_and_a_valid_payload_in_cutover(
        framework: str, kind: str, flags: InMemoryFlags, log: InMemoryStore) -> None:
    if framework == "fastmcp" and kind == "typing_typeddict" and sys.version_info < (3, 12):
        pytest.skip("FastMCP refuses a typing.TypedDict return below Python 3.12, shadow or not")
    _, before = _serve(framework, kind, None)
    flags.set("get", "shadow")
    _, shadowed = _serve(framework, kind, flags)
    assert shadowed == before

    flags.set("get", "cutover")
    schema, (ok, error) = _serve(framework, kind, flags)
    for (is_error, content, structured), expected_ok in ((ok, True), (error, False)):
        payload = json.loads(content[0].text)
        assert is_error is not expected_ok
        shadow.validate(payload)
        assert payload["ok"] is expected_ok
        assert schema is not None
        jsonschema.validate(structured, schema)
        assert structured.get("result", structured) == payload
    assert json.loads(ok[1][0].text)["data"] == json.loads(json.dumps(RETURNS[kind][1]("7"), default=vars))
    jsonschema.validate(before[0][2], schema)  # the legacy result is valid against the widened schema too


def test_only_the_tool_the_mcp_client_called_gets_an_error_result_a_helper_it_calls_gets_the_payload(
        flags: InMemoryFlags, log: InMemoryStore) -> None:
    server = fastmcp.FastMCP("nested")
    seen: list[Any] = []

    @server.tool
    @shadow.tool(flags=flags)
    def lookup(item_id: str) -> str:
        """Look an item up."""
        return "Error: not found"

    @server.tool
    @shadow.tool(flags=flags)
    def outer(item_id: str) -> str:
        """Look an item up through lookup."""
        seen.append(lookup(item_id))  # a registered tool called as a Python function
        return "done"

    flags.set("lookup", "cutover")
    flags.set("outer", "cutover")

    async def run() -> Any:
        async with fastmcp.Client(server) as client:
            return await client.call_tool("outer", {"item_id": "0"}, raise_on_error=False)

    result = asyncio.run(run())
    assert not result.is_error and json.loads(result.content[0].text) == {"ok": True, "data": "done"}
    (inner,) = seen
    assert type(inner).__name__ == "JsonPayload" and inner["error"]["code"] == "not_found"
    assert json.loads(str(lookup("0")))["ok"] is False  # outside any MCP request: the payload, its str() JSON
