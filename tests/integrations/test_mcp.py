"""The MCP SDK's ``MCPServer``: ``mcp_tool(server)`` through the SDK's own in-process client."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from integration_support import CALLS, calls, legacy_tools, loop_counts, model_tool

import shadow
from shadow.testing import InMemoryFlags, InMemoryStore

mcp_server = pytest.importorskip("mcp.server")
from mcp import Client  # noqa: E402
from mcp.server.mcpserver import Context  # noqa: E402

from shadow.integrations import mcp_tool  # noqa: E402


def servers(flags: InMemoryFlags) -> tuple[Any, Any]:
    """The same legacy tools on a plain MCPServer and, through the integration, on a shadowed one."""
    plain, shadowed = mcp_server.MCPServer("plain"), mcp_server.MCPServer("shadowed")
    for fn in legacy_tools().values():
        plain.tool()(fn)
    for fn in legacy_tools().values():
        mcp_tool(shadowed, flags=flags)(fn)
    return plain, shadowed


async def _listing(server: Any) -> dict[str, Any]:
    async with Client(server) as client:
        return {t.name: t for t in (await client.list_tools()).tools}


async def _call_all(server: Any) -> list[Any]:
    async with Client(server) as client:
        return [await client.call_tool(name, args) for name, args in CALLS]


def test_the_schema_is_the_one_mcpserver_generates_with_the_output_schema_admitting_the_payload(
        flags: InMemoryFlags) -> None:
    plain, shadowed = servers(flags)
    before, after = asyncio.run(_listing(plain)), asyncio.run(_listing(shadowed))
    assert before.keys() == after.keys() == {"get_task", "lookup", "search"}
    for name, tool in before.items():
        assert (after[name].description, after[name].input_schema) == (tool.description, tool.input_schema)
    assert after["get_task"].input_schema["properties"]["priority"]["enum"] == ["low", "high"]
    assert after["get_task"].output_schema == before["get_task"].output_schema
    for name in ("lookup", "search"):
        legacy = before[name].output_schema["properties"]["result"]
        assert {k: v for k, v in legacy.items() if k != "title"} in after[name].output_schema["properties"]["result"][
            "anyOf"]


def test_shadow_mode_returns_what_mcpserver_returned_before_and_logs_one_record_per_call(
        flags: InMemoryFlags, log: InMemoryStore) -> None:
    plain, shadowed = servers(flags)
    for name in ("get_task", "lookup", "search"):
        flags.set(name, "shadow")
    before, after = asyncio.run(_call_all(plain)), asyncio.run(_call_all(shadowed))
    for old, new in zip(before, after, strict=True):
        assert (new.is_error, new.content, new.structured_content) == (old.is_error, old.content, old.structured_content)
    assert [(r.tool, r.outcome) for r in calls(log)] == [(n, o) for (n, _), o in zip(
        CALLS, ("ok", "error", "ok", "error", "ok"), strict=True)]


def test_cutover_serves_the_payload_as_json_text_and_structured_content_valid_against_the_schema(
        flags: InMemoryFlags, log: InMemoryStore) -> None:
    _, shadowed = servers(flags)
    for name in ("get_task", "lookup", "search"):
        flags.set(name, "cutover")
    listing = asyncio.run(_listing(shadowed))
    results = asyncio.run(_call_all(shadowed))
    for (name, _args), result in zip(CALLS, results, strict=True):
        payload = json.loads(result.content[0].text)
        shadow.validate(payload)
        assert result.is_error is (not payload["ok"])
        schema = listing[name].output_schema
        if schema is not None:
            jsonschema.validate(result.structured_content, schema)
        assert result.structured_content.get("result", result.structured_content) == payload
    assert [r.variant for r in calls(log)] == ["structured"] * len(CALLS)


def test_the_plain_decorator_works_in_cutover_for_a_str_tool(flags: InMemoryFlags) -> None:
    server = mcp_server.MCPServer("plain")
    server.tool()(shadow.tool(flags=flags)(legacy_tools()["lookup"]))
    flags.set("lookup", "cutover")

    async def run() -> list[Any]:
        async with Client(server) as client:
            return [await client.call_tool("lookup", {"item_id": i}) for i in ("0", "7")]

    error, ok = asyncio.run(run())
    assert not error.is_error and error.structured_content["result"]["error"]["code"] == "not_found"
    assert json.loads(ok.content[0].text) == {"ok": True, "data": "item 7"}


def test_three_identical_failing_calls_through_a_context_tool_are_three_errors_and_two_loops(
        flags: InMemoryFlags, sql_log: str, tmp_path: Path) -> None:
    server = mcp_server.MCPServer("ctx")

    @mcp_tool(server, flags=flags)
    def find(item_id: str, ctx: Context) -> str:
        """Find an item."""
        assert ctx.request_context is not None
        return "Error: not found"

    flags.set("find", "shadow")

    async def run() -> None:
        async with Client(server, mode="legacy") as client:  # one connection: one MCP session
            for _ in range(3):
                await client.call_tool("find", {"item_id": "42"})

    asyncio.run(run())
    assert loop_counts(sql_log, tmp_path, "find") == (3, 2)


def test_mcp_connections_are_sessions_so_a_percentage_cutover_splits_them(
        flags: InMemoryFlags, log: InMemoryStore) -> None:
    server = mcp_server.MCPServer("split")
    mcp_tool(server, flags=flags)(legacy_tools()["lookup"])
    flags.set("lookup", "cutover", 50)

    async def run() -> None:
        for _ in range(12):
            async with Client(server, mode="legacy") as client:
                for _ in range(2):
                    await client.call_tool("lookup", {"item_id": "0"})

    asyncio.run(run())
    sessions: dict[str, set[str]] = {}
    for record in calls(log):
        sessions.setdefault(record.session_id, set()).add(record.variant)
    assert len(sessions) == 12 and all(len(v) == 1 for v in sessions.values())
    assert {v for (v,) in sessions.values()} == {"legacy", "structured"}


def test_per_request_connections_are_not_sessions(flags: InMemoryFlags, log: InMemoryStore) -> None:
    server = mcp_server.MCPServer("modern")
    mcp_tool(server, flags=flags)(legacy_tools()["lookup"])
    flags.set("lookup", "shadow")

    async def run() -> None:
        async with Client(server) as client:  # protocol 2026-07-28: every request is its own connection
            for _ in range(2):
                await client.call_tool("lookup", {"item_id": "0"})

    asyncio.run(run())
    first, second = calls(log)
    assert first.session_id == second.session_id  # the process's session, not one session per call


def test_a_client_names_its_conversation_in_meta_under_shadow_session(flags: InMemoryFlags, log: InMemoryStore) -> None:
    server = mcp_server.MCPServer("meta")
    mcp_tool(server, flags=flags)(legacy_tools()["lookup"])
    flags.set("lookup", "shadow")

    async def run() -> None:
        async with Client(server) as client:  # protocol 2026-07-28: every request is its own connection
            for meta in ({"shadow/session": "conv-A"}, {"shadow/session": "conv-A"}, {"shadow/session": "conv-B"}):
                await client.call_tool("lookup", {"item_id": "0"}, meta=meta)

    asyncio.run(run())
    assert [r.session_id for r in calls(log)] == ["conv-A", "conv-A", "conv-B"]


def test_a_model_returning_tool_keeps_its_structured_content_in_shadow_and_validates_in_cutover(
        flags: InMemoryFlags, log: InMemoryStore) -> None:
    plain, shadowed = mcp_server.MCPServer("plain"), mcp_server.MCPServer("shadowed")
    plain.tool()(model_tool())
    mcp_tool(shadowed, flags=flags)(model_tool())

    async def run(server: Any) -> tuple[Any, list[Any]]:
        async with Client(server) as client:
            (tool,) = (await client.list_tools()).tools
            return tool, [await client.call_tool("get_item", {"item_id": i}) for i in ("7", "0")]

    flags.set("get_item", "shadow")
    (before, old), (after, new) = asyncio.run(run(plain)), asyncio.run(run(shadowed))
    assert after.input_schema == before.input_schema
    assert (new[0].content, new[0].structured_content) == (old[0].content, old[0].structured_content)
    assert (new[1].is_error, new[1].content) == (old[1].is_error, old[1].content)
    flags.set("get_item", "cutover")
    _, (ok, error) = asyncio.run(run(shadowed))
    assert not ok.is_error and ok.structured_content == {"ok": True, "data": {"id": "7", "title": "Ship"}}
    jsonschema.validate(ok.structured_content, after.output_schema)
    jsonschema.validate(old[0].structured_content, after.output_schema)
    assert error.is_error and json.loads(error.content[0].text)["ok"] is False


def test_instrument_mcp_gives_plain_decorated_tools_the_mcp_session(flags: InMemoryFlags, log: InMemoryStore) -> None:
    from shadow.integrations import instrument_mcp

    server = mcp_server.MCPServer("plain")
    server.tool()(shadow.tool(flags=flags)(legacy_tools()["lookup"]))
    instrument_mcp(server)
    instrument_mcp(server)  # idempotent
    flags.set("lookup", "shadow")

    async def run() -> None:
        for _ in range(2):
            async with Client(server, mode="legacy") as client:
                for _ in range(2):
                    await client.call_tool("lookup", {"item_id": "0"})

    asyncio.run(run())
    sessions = [r.session_id for r in calls(log)]
    assert sessions[0] == sessions[1] != sessions[2] == sessions[3] and sessions[0].startswith("mcp-")
