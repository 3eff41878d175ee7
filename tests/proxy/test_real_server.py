"""`shadow proxy` in front of a real MCP server from PyPI (mcp-server-time, in the test extra), in each mode."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp_server_time")

from mcp import types as mcp_types
from mcp.shared.exceptions import MCPError

from tests.proxy.test_proxy import drive, dump, environment, logged

SERVER = [sys.executable, "-m", "mcp_server_time", "--local-timezone", "Europe/Berlin"]
STEPS: list[tuple[str, dict[str, Any]]] = [
    ("convert_time", {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}),
    ("get_time", {"timezone": "UTC"}),  # no such tool: the server answers JSON-RPC -32602 "Unknown tool"
    ("get_current_time", {"timezone": "Mars/Olympus"}),
    ("get_current_time", {"timezone": ""}),
    ("convert_time", {"source_timezone": "UTC", "time": "25:99", "target_timezone": "Asia/Tokyo"}),
    ("get_current_time", {}),
]
EXPECTED = [
    (None, None, None),
    ("not_found", "jsonrpc:unknown-tool", None),
    ("validation_error", "text:validation_error", None),
    ("validation_error", "mcp:missing-argument", "timezone"),
    ("validation_error", "text:validation_error", None),
    ("validation_error", "mcp:validation", "timezone"),
]


def _proxy(*extra: str) -> list[str]:
    return [sys.executable, "-m", "shadow.cli", "proxy", "--name", "time", "--timeout", "20", *extra, "--", *SERVER]


def test_shadow_mode_in_front_of_mcp_server_time_is_transparent_and_logs_real_codes(tmp_path: Path) -> None:
    env = environment(tmp_path, "*=shadow")
    direct = [dump(r) for r in drive(SERVER, {k: v for k, v in env.items() if not k.startswith("SHADOW_")}, STEPS,
                                     tmp_path / "direct.log").results]
    served = [dump(r) for r in drive(_proxy(), env, STEPS, tmp_path / "err.log").results]
    assert served == direct
    assert served[1] == ("jsonrpc-error", -32602, "Unknown tool: get_time")
    calls = logged(tmp_path)
    assert [(c["code"], c["rule"], c["error_field"]) for c in calls] == EXPECTED
    assert not any(c["unmapped"] for c in calls)
    assert {(c["mode"], c["variant"], c["source"]) for c in calls} == {("shadow", "legacy", "proxy")}


def test_cutover_in_front_of_mcp_server_time_serves_the_contract(tmp_path: Path) -> None:
    seen = drive(_proxy(), environment(tmp_path, "*=cutover"), STEPS, tmp_path / "err.log")
    payloads = []
    for result in seen.results:
        assert not isinstance(result, MCPError)  # an unknown tool too is answered with the contract
        assert isinstance(result, mcp_types.CallToolResult)
        [block] = result.content
        assert isinstance(block, mcp_types.TextContent)
        payloads.append(json.loads(block.text))
    assert payloads[0]["ok"] is True and payloads[0]["data"]["target"]["timezone"] == "Asia/Tokyo"
    unknown = payloads[1]["error"]
    assert unknown["code"] == "not_found" and unknown["context"] == {"jsonrpc_code": -32602, "tool": "get_time"}
    assert "get_time" in unknown["message"] and unknown["next_action"] == "ask_user"
    assert payloads[3]["error"]["context"] == {"field": "timezone", "problem": "required"}
    assert [p["error"]["code"] if not p["ok"] else None for p in payloads] == [e[0] for e in EXPECTED]
    assert [c["code"] for c in logged(tmp_path)] == [e[0] for e in EXPECTED]
