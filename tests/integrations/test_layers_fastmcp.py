"""A whole tool layer in one line, FastMCP: ``ShadowTransform`` through FastMCP's in-process ``Client``."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import jsonschema
import pytest
from integration_support import CALLS, calls, legacy_tools

import shadow
from shadow.testing import InMemoryFlags, InMemoryStore

fastmcp = pytest.importorskip("fastmcp")
from shadow.integrations import ShadowTransform  # noqa: E402

MODES = ("shadow", "cutover")


def _server(layer: ShadowTransform | None) -> Any:
    server = fastmcp.FastMCP("shop", transforms=[layer] if layer else None)
    for fn in legacy_tools().values():
        server.tool(fn)
    return server


async def _mcp_calls(server: Any) -> tuple[dict[str, Any], list[Any]]:
    async with fastmcp.Client(server) as client:
        listing = {t.name: t for t in await client.list_tools()}
        return listing, [await client.call_tool(n, a, raise_on_error=False) for n, a in CALLS]


@pytest.mark.parametrize("mode", MODES)
def test_a_fastmcp_transform_shadows_every_tool_of_the_server_but_the_ignored_one(
        flags: InMemoryFlags, log: InMemoryStore, mode: str) -> None:
    for name in ("get_task", "lookup", "search"):
        flags.set(name, mode)
    _, before = asyncio.run(_mcp_calls(_server(None)))
    listing, after = asyncio.run(_mcp_calls(_server(ShadowTransform(flags=flags, ignore=["search"]))))
    for (name, _), old, new in zip(CALLS, before, after, strict=True):
        if mode == "shadow" or name == "search":
            assert (new.is_error, new.content, new.structured_content) == (old.is_error, old.content,
                                                                          old.structured_content)
        else:
            payload = json.loads(new.content[0].text)
            shadow.validate(payload)
            assert new.is_error is (not payload["ok"])
            jsonschema.validate(new.structured_content, listing[name].output_schema)
    assert [(r.tool, r.variant, r.outcome) for r in calls(log)] == [
        (n, "legacy" if mode == "shadow" else "structured", o)
        for (n, _), o in zip(CALLS[:3], ("ok", "error", "ok"), strict=True)]


def test_a_tool_made_by_fastmcp_tool_under_the_transform_is_logged_once(
        flags: InMemoryFlags, log: InMemoryStore) -> None:
    from shadow.integrations import fastmcp_tool

    server = fastmcp.FastMCP("shop", transforms=[ShadowTransform(flags=flags)])
    fastmcp_tool(server, flags=flags)(legacy_tools()["lookup"])
    flags.set("lookup", "cutover")
    _, results = asyncio.run(_mcp_calls_one(server))
    assert json.loads(results.content[0].text)["error"]["code"] == "not_found"
    assert len(calls(log)) == 1


async def _mcp_calls_one(server: Any) -> tuple[None, Any]:
    async with fastmcp.Client(server) as client:
        return None, await client.call_tool("lookup", {"item_id": "0"}, raise_on_error=False)



def test_a_context_taking_tool_under_the_transform_keeps_its_context_out_and_its_session(
        flags: InMemoryFlags, log: InMemoryStore) -> None:
    server = fastmcp.FastMCP("ctx", transforms=[ShadowTransform(flags=flags)])

    @server.tool
    async def fm_find(item_id: str, ctx: fastmcp.Context) -> str:
        """Find an item."""
        assert ctx.session_id
        return "Error: not found"

    flags.set("fm_find", "shadow")

    async def run() -> None:
        async with fastmcp.Client(server, mode="legacy") as client:  # one connection: one MCP session
            for _ in range(2):
                await client.call_tool("fm_find", {"item_id": "42"}, raise_on_error=False)

    asyncio.run(run())
    first, second = calls(log)
    assert first.args == second.args == {"item_id": "42"}
    assert first.session_id == second.session_id and first.fingerprint == second.fingerprint
