"""FastMCP: ``fastmcp_tool(mcp)`` through FastMCP's own in-memory client, with no network and no model."""

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

fastmcp = pytest.importorskip("fastmcp")
from shadow.integrations import fastmcp_tool  # noqa: E402


def servers(flags: InMemoryFlags) -> tuple[Any, Any]:
    """The same legacy tools on a plain FastMCP server and, through the integration, on a shadowed one."""
    plain, shadowed = fastmcp.FastMCP("plain"), fastmcp.FastMCP("shadowed")
    for fn in legacy_tools().values():
        plain.tool(fn)
    for fn in legacy_tools().values():
        fastmcp_tool(shadowed, flags=flags)(fn)
    return plain, shadowed


async def _listing(server: Any) -> dict[str, Any]:
    async with fastmcp.Client(server) as client:
        return {t.name: t for t in await client.list_tools()}


async def _call_all(server: Any) -> list[Any]:
    async with fastmcp.Client(server) as client:
        return [await client.call_tool(name, args, raise_on_error=False) for name, args in CALLS]


def test_the_schema_is_the_one_fastmcp_generates_with_the_output_schema_admitting_the_payload(
        flags: InMemoryFlags) -> None:
    plain, shadowed = servers(flags)
    before, after = asyncio.run(_listing(plain)), asyncio.run(_listing(shadowed))
    assert before.keys() == after.keys() == {"get_task", "lookup", "search"}
    for name, tool in before.items():
        assert after[name].description == tool.description
        assert after[name].input_schema == tool.input_schema
    assert after["get_task"].input_schema["properties"]["priority"] == {
        "default": "low", "description": "Which queue to look in.", "enum": ["low", "high"], "type": "string"}
    assert after["get_task"].output_schema == before["get_task"].output_schema  # a dict admits the payload
    for name in ("lookup", "search"):
        result = after[name].output_schema["properties"]["result"]
        assert result["anyOf"][0] == before[name].output_schema["properties"]["result"]
        jsonschema.validate({"result": "Error: not found"}, after[name].output_schema)


def test_shadow_mode_returns_what_fastmcp_returned_before_and_logs_one_record_per_call(
        flags: InMemoryFlags, log: InMemoryStore) -> None:
    plain, shadowed = servers(flags)
    for name in ("get_task", "lookup", "search"):
        flags.set(name, "shadow")
    before, after = asyncio.run(_call_all(plain)), asyncio.run(_call_all(shadowed))
    for old, new in zip(before, after, strict=True):
        assert (new.is_error, new.content, new.structured_content, new.data) == (
            old.is_error, old.content, old.structured_content, old.data)
    records = calls(log)
    assert [(r.tool, r.variant, r.outcome) for r in records] == [
        ("get_task", "legacy", "ok"), ("lookup", "legacy", "error"), ("lookup", "legacy", "ok"),
        ("search", "legacy", "error"), ("search", "legacy", "ok")]
    assert records[2].args == {"item_id": "7", "limit": 2}


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
        jsonschema.validate(result.structured_content, listing[name].output_schema)
        structured = result.structured_content.get("result", result.structured_content)
        assert structured == payload
    assert json.loads(results[1].content[0].text)["error"]["code"] == "not_found"
    assert [r.variant for r in calls(log)] == ["structured"] * len(CALLS)


def test_the_plain_decorator_works_in_cutover_for_a_str_tool(flags: InMemoryFlags, log: InMemoryStore) -> None:
    server = fastmcp.FastMCP("plain")
    for fn in legacy_tools().values():
        server.tool(shadow.tool(flags=flags)(fn))
    flags.set("lookup", "cutover")
    results = asyncio.run(_call_all(server))
    listing = asyncio.run(_listing(server))
    payload = results[1].structured_content["result"]
    assert payload["ok"] is False and json.loads(results[1].content[0].text) == payload
    jsonschema.validate(results[1].structured_content, listing["lookup"].output_schema)
    assert results[2].structured_content == {"result": {"ok": True, "data": "item 7"}}


def test_three_identical_failing_calls_through_a_context_tool_are_three_errors_and_two_loops(
        flags: InMemoryFlags, sql_log: str, tmp_path: Path) -> None:
    server = fastmcp.FastMCP("ctx")

    @fastmcp_tool(server, flags=flags)
    async def find(item_id: str, ctx: fastmcp.Context) -> str:
        """Find an item."""
        assert ctx.session_id  # a context the framework injects: never part of the fingerprint
        return "Error: not found"

    flags.set("find", "shadow")

    async def run() -> None:
        async with fastmcp.Client(server, mode="legacy") as client:  # one connection: one MCP session
            for _ in range(3):
                await client.call_tool("find", {"item_id": "42"})

    asyncio.run(run())
    assert loop_counts(sql_log, tmp_path, "find") == (3, 2)


def test_mcp_connections_are_sessions_so_a_percentage_cutover_splits_them(
        flags: InMemoryFlags, log: InMemoryStore) -> None:
    server = fastmcp.FastMCP("split")
    fastmcp_tool(server, flags=flags)(legacy_tools()["lookup"])
    flags.set("lookup", "cutover", 50)

    async def run() -> None:
        for _ in range(12):
            async with fastmcp.Client(server, mode="legacy") as client:
                for _ in range(2):
                    await client.call_tool("lookup", {"item_id": "0"}, raise_on_error=False)

    asyncio.run(run())
    sessions: dict[str, set[str]] = {}
    for record in calls(log):
        sessions.setdefault(record.session_id, set()).add(record.variant)
    assert len(sessions) == 12 and all(len(v) == 1 for v in sessions.values())
    assert {v for (v,) in sessions.values()} == {"legacy", "structured"}


def test_shadow_tool_above_mcp_tool_is_a_type_error_that_says_the_order() -> None:
    server = fastmcp.FastMCP("order")
    with pytest.raises(TypeError, match=r"below @mcp.tool"):

        @shadow.tool
        @server.tool
        def late(x: int) -> str:
            return str(x)


def test_per_request_connections_are_not_sessions_unless_the_client_names_one_in_meta(
        flags: InMemoryFlags, log: InMemoryStore) -> None:
    server = fastmcp.FastMCP("modern")
    fastmcp_tool(server, flags=flags)(legacy_tools()["lookup"])
    flags.set("lookup", "shadow")

    async def run() -> None:
        async with fastmcp.Client(server) as client:  # protocol 2026-07-28: every request is its own connection
            for meta in (None, None, {"shadow/session": "conv-A"}, {"shadow/session": "conv-A"}):
                await client.call_tool("lookup", {"item_id": "0"}, meta=meta)

    asyncio.run(run())
    sessions = [r.session_id for r in calls(log)]
    assert sessions[0] == sessions[1] and sessions[0].startswith("proc-")  # the process, not one session per call
    assert sessions[2:] == ["conv-A", "conv-A"]


def test_a_model_returning_tool_keeps_its_structured_content_in_shadow_and_validates_in_cutover(
        flags: InMemoryFlags, log: InMemoryStore) -> None:
    plain, shadowed = fastmcp.FastMCP("plain"), fastmcp.FastMCP("shadowed")
    plain.tool(model_tool())
    fastmcp_tool(shadowed, flags=flags)(model_tool())

    async def run(server: Any) -> tuple[Any, list[Any]]:
        async with fastmcp.Client(server) as client:
            (tool,) = await client.list_tools()
            return tool, [await client.call_tool("get_item", {"item_id": i}, raise_on_error=False) for i in ("7", "0")]

    flags.set("get_item", "shadow")
    (before, old), (after, new) = asyncio.run(run(plain)), asyncio.run(run(shadowed))
    assert after.input_schema == before.input_schema
    assert (new[0].content, new[0].structured_content) == (old[0].content, old[0].structured_content)
    assert new[1].is_error and old[1].is_error
    flags.set("get_item", "cutover")
    _, (ok, error) = asyncio.run(run(shadowed))
    assert not ok.is_error and ok.structured_content == {"ok": True, "data": {"id": "7", "title": "Ship"}}
    jsonschema.validate(ok.structured_content, after.output_schema)
    jsonschema.validate(old[0].structured_content, after.output_schema)
    assert error.is_error and json.loads(error.content[0].text)["ok"] is False
