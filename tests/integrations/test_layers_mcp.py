"""A whole tool layer in one line, the MCP SDK's ``MCPServer``: ``shadow_server(server)`` through the SDK's
in-process ``Client``."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from integration_support import CALLS, calls, legacy_tools, served_error

import shadow
from shadow.testing import InMemoryFlags, InMemoryStore

pytest.importorskip("mcp")
from mcp import Client
from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from shadow.integrations import shadow_server

WORDS = "x must be positive; try x=1"


def _server() -> Any:
    server = MCPServer("shop")
    for fn in legacy_tools().values():
        server.tool()(fn)

    def check(x: int) -> str:
        """Check x."""
        raise ToolError(WORDS)

    server.tool(title="Check", description="Check a number.")(check)
    return server


async def _mcp_calls(server: Any) -> tuple[list[Any], list[Any]]:
    async with Client(server) as client:
        listing = (await client.list_tools()).tools
        return listing, [await client.call_tool(n, a) for n, a in [*CALLS, ("check", {"x": -1})]]


@pytest.mark.parametrize("mode", ["shadow", "cutover"])
def test_shadow_server_shadows_every_tool_of_an_mcpserver_but_the_ignored_one(
        flags: InMemoryFlags, log: InMemoryStore, mode: str) -> None:
    for name in ("get_task", "lookup", "search", "check"):
        flags.set(name, mode)
    listed, before = asyncio.run(_mcp_calls(_server()))
    server = _server()
    assert shadow_server(server, flags=flags, ignore=["search"]) is server
    listing, after = asyncio.run(_mcp_calls(server))
    assert [(t.name, t.title, t.description, t.input_schema) for t in listing] == [
        (t.name, t.title, t.description, t.input_schema) for t in listed]  # names, order, schemas kept
    for (name, _), old, new in zip([*CALLS, ("check", {})], before, after, strict=True):
        if mode == "shadow" or name == "search":
            assert (new.is_error, new.content) == (old.is_error, old.content)
            continue
        payload = json.loads(new.content[0].text)
        shadow.validate(payload)
        assert new.is_error is (not payload["ok"])
    if mode == "cutover":
        assert served_error(after[-1].content[0].text)["message"] == WORDS  # the SDK's ToolError, your words
    assert [r.tool for r in calls(log)] == ["get_task", "lookup", "lookup", "check"]
    assert {r.variant for r in calls(log)} == {"legacy" if mode == "shadow" else "structured"}


def test_each_tool_keeps_its_own_flag_and_a_second_call_shadows_nothing_twice(
        flags: InMemoryFlags, log: InMemoryStore) -> None:
    flags.set("lookup", "cutover")
    flags.set("get_task", "shadow")
    server = shadow_server(shadow_server(_server(), flags=flags), flags=flags)
    _, results = asyncio.run(_mcp_calls(server))
    assert [(r.tool, r.variant) for r in calls(log)] == [("get_task", "legacy"), ("lookup", "structured"),
                                                        ("lookup", "structured")]
    assert not results[0].is_error and json.loads(results[1].content[0].text)["ok"] is False


def test_shadow_server_refuses_what_is_not_an_mcpserver() -> None:
    with pytest.raises(TypeError, match="takes an mcp.server.MCPServer"):
        shadow_server(object())
    with pytest.raises(TypeError, match="not one string"):
        shadow_server(MCPServer("x"), ignore="search")
