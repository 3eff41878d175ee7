"""``shadow proxy``: the fixture MCP server, driven by the SDK's own client through the proxy, in each mode."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp import types as mcp_types
from mcp.shared.exceptions import MCPError
from sqlalchemy import create_engine, inspect, select
from typer.testing import CliRunner

from shadow.calllog import _tables as tables
from shadow.cli import app
from shadow.contract._describe import describe
from shadow.contract._schema import schema
from shadow.testing import assert_no_leak, assert_valid_payload

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = [sys.executable, str(ROOT / "tests" / "fixtures" / "mcp_server.py")]
INVALID_ADD = ("add", {"a": 1})
DETERMINISTIC: list[tuple[str, dict[str, Any]]] = [
    ("add", {"a": 1, "b": 2}), INVALID_ADD, ("echo", {"text": "hi"}), ("find_user", {"user_id": "7"}),
    ("find_user", {"user_id": "42"}), ("book", {"slot": "9am"}), ("boom", {}), ("nope", {}),
]


@dataclass
class Seen:
    """What the client saw in one session."""

    tools: list[mcp_types.Tool]
    results: list[mcp_types.CallToolResult | MCPError]


def dump(item: mcp_types.CallToolResult | MCPError) -> Any:
    if isinstance(item, MCPError):
        return ("jsonrpc-error", item.code, item.message)
    return item.model_dump(by_alias=True, mode="json", exclude_none=True)


async def _drive(command: Sequence[str], env: dict[str, str], steps: Sequence[tuple[str, dict[str, Any]]],
                 errlog: Path) -> Seen:
    params = StdioServerParameters(command=command[0], args=list(command[1:]), env=env, cwd=str(ROOT))
    results: list[mcp_types.CallToolResult | MCPError] = []
    with errlog.open("a", encoding="utf-8") as err:
        async with stdio_client(params, errlog=err) as (read, write), ClientSession(read, write) as client:
            with anyio.fail_after(30):
                await client.initialize()
                tools = (await client.list_tools()).tools
            for name, arguments in steps:
                try:
                    with anyio.fail_after(30):
                        results.append(await client.call_tool(name, arguments))
                except MCPError as exc:
                    results.append(exc)
    return Seen(tools, results)


def drive(command: Sequence[str], env: dict[str, str], steps: Sequence[tuple[str, dict[str, Any]]],
          errlog: Path) -> Seen:
    return anyio.run(_drive, command, env, steps, errlog)


def proxy_command(*extra: str, timeout: float = 20.0) -> list[str]:
    return [sys.executable, "-m", "shadow.cli", "proxy", "--name", "fx", "--timeout", str(timeout), *extra, "--",
            *FIXTURE]


def environment(tmp_path: Path, flags: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SHADOW_")}
    env.update(SHADOW_DB_URL=f"sqlite:///{tmp_path}/proxy.db", SHADOW_FLAGS=flags,
               FIXTURE_STARTS=str(tmp_path / "starts.txt"), PYTHONPATH=str(ROOT))
    return env


def logged(tmp_path: Path, table: Any = tables.calls) -> list[dict[str, Any]]:
    engine = create_engine(f"sqlite:///{tmp_path}/proxy.db")
    try:
        if not inspect(engine).has_table(table.name):
            return []
        with engine.connect() as conn:
            return [dict(r) for r in conn.execute(select(table).order_by(table.c.seq)).mappings()]
    finally:
        engine.dispose()


def starts(tmp_path: Path) -> int:
    path = tmp_path / "starts.txt"
    return len(path.read_text().split()) if path.exists() else 0


@pytest.fixture(scope="module")
def direct(tmp_path_factory: pytest.TempPathFactory) -> list[Any]:
    """What the fixture server answers when the client talks to it directly."""
    tmp = tmp_path_factory.mktemp("direct")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SHADOW_")}
    return [dump(r) for r in drive(FIXTURE, env, DETERMINISTIC, tmp / "err.log").results]


def test_shadow_mode_passes_results_through_and_logs_the_structured_payload(direct: list[Any],
                                                                             tmp_path: Path) -> None:
    rules = tmp_path / "team_rules.py"
    rules.write_text("import shadow\nRULES = shadow.Rules.empty().on_result('rate limit exceeded for', "
                     "'quota_exceeded')\n")
    steps = [*DETERMINISTIC, ("rpc_error", {}), ("pid", {}), ("crash", {}), ("pid", {})]
    seen = drive(proxy_command("--rules", str(rules)), environment(tmp_path, "*=shadow"), steps,
                 tmp_path / "err.log")
    served = [dump(r) for r in seen.results]
    assert served[:len(DETERMINISTIC)] == direct  # content, isError and structuredContent unchanged
    assert served[8] == ("jsonrpc-error", -32603, "database exploded")  # the child's JSON-RPC error, as it was
    assert served[10] == ("jsonrpc-error", -32000, "Connection closed")
    assert seen.results[9].structured_content != seen.results[11].structured_content  # a restarted child
    assert starts(tmp_path) == 2
    assert all(t.output_schema != schema() and "error.next_action" not in (t.description or "") for t in seen.tools)

    calls = logged(tmp_path)
    assert [(c["seq"], c["tool"], c["outcome"], c["code"], c["rule"]) for c in calls] == [
        (1, "add", "ok", None, None),
        (2, "add", "error", "validation_error", "mcp:validation"),
        (3, "echo", "ok", None, None),
        (4, "find_user", "error", "not_found", "text:not_found"),
        (5, "find_user", "ok", None, None),
        (6, "book", "error", "quota_exceeded", "text~rate limit exceeded for"),  # the team's rule came first
        (7, "boom", "error", "internal_error", "mcp:crash"),
        (8, "nope", "error", "not_found", "mcp:unknown-tool"),
        (9, "rpc_error", "error", "upstream_unavailable", "jsonrpc:error"),
        (10, "pid", "ok", None, None),
        (11, "crash", "error", "upstream_unavailable", "proxy:unavailable"),
        (12, "pid", "ok", None, None),
    ]
    assert {(c["mode"], c["variant"], c["source"]) for c in calls} == {("shadow", "legacy", "proxy")}
    assert len({c["session_id"] for c in calls}) == 1 and calls[0]["session_id"].startswith("mcp-fx-")
    assert calls[1]["error_field"] == "b"
    assert calls[3]["legacy_payload"] == direct[3]  # the MCP result the client received
    assert calls[3]["args"] == {"user_id": "7"}
    for call in calls:
        assert_valid_payload(call["new_payload"])
        assert_no_leak(call["new_payload"], secrets=["hunter2", "/srv/app/boom.py"])
    [end] = logged(tmp_path, tables.marks)
    assert (end["seq"], end["kind"], end["source"], end["session_id"]) == (13, "end", "proxy", calls[0]["session_id"])


def test_the_codes_paragraph_a_cutover_tool_carries_is_brief_by_default_full_or_none_on_request(
        tmp_path: Path) -> None:
    """28 tools of @cyanheads/git-mcp-server went from 4,604 to 62,284 characters of descriptions in cutover: the
    full paragraph on every tool, sent with every request."""
    descriptions = {}
    for choice in ("brief", "full", "none", "legacy"):
        (tmp_path / choice).mkdir()
    for choice in ("brief", "full", "none"):
        seen = drive(proxy_command("--paragraph", choice), environment(tmp_path / choice, "*=cutover"), [],
                     tmp_path / f"{choice}.log")
        descriptions[choice] = {t.name: t.description or "" for t in seen.tools}
    legacy = drive(proxy_command(), environment(tmp_path / "legacy", "*=legacy"), [], tmp_path / "legacy.log")
    for tool in legacy.tools:
        own = (tool.description or "").rstrip()
        assert descriptions["none"][tool.name] == (tool.description or "")
        assert descriptions["brief"][tool.name].startswith(own)
        assert descriptions["brief"][tool.name].endswith(describe(fmt="brief").strip())
        assert descriptions["full"][tool.name].endswith(describe().strip())
        added = {k: len(d[tool.name]) - len(own) for k, d in descriptions.items()}
        assert added["brief"] * 2.5 < added["full"]
    brief = describe(fmt="brief")
    for word in ("retry", "ask_user", "stop", "rejected", "internal_error", '"next_action"'):
        assert word in brief


def test_cutover_serves_the_structured_payload_and_keeps_serving_after_a_crash(tmp_path: Path) -> None:
    steps = [("add", {"a": 1, "b": 2}), INVALID_ADD, ("find_user", {"user_id": "7"}), ("book", {"slot": "9am"}),
             ("boom", {}), ("nope", {}), ("rpc_error", {}), ("add", {"a": 2, "b": 2}), ("pid", {}),
             ("crash", {}), ("pid", {})]
    seen = drive(proxy_command(), environment(tmp_path, "*=cutover"), steps, tmp_path / "err.log")
    paragraph = describe(fmt="brief").strip()
    for listed in seen.tools:
        assert listed.description is not None and listed.description.endswith(paragraph)
        assert listed.output_schema == schema()
    payloads = []
    for result in seen.results:
        assert isinstance(result, mcp_types.CallToolResult)
        [block] = result.content
        assert isinstance(block, mcp_types.TextContent)
        payload = json.loads(block.text)
        assert result.structured_content == payload
        assert result.is_error is (not payload["ok"])
        assert_valid_payload(payload)
        payloads.append(payload)
    codes = [p["error"]["code"] if not p["ok"] else None for p in payloads]
    assert codes == [None, "validation_error", "not_found", "rate_limited", "internal_error", "not_found",
                     "upstream_unavailable", None, None, "upstream_unavailable", None]
    assert payloads[0]["data"] == {"result": 3} and payloads[7]["data"] == {"result": 4}
    assert payloads[1]["error"]["context"] == {"field": "b", "problem": "Field required"}
    assert payloads[9]["error"]["retryable"] is True  # crash is read-only, so a retry is safe
    assert payloads[8]["data"] != payloads[10]["data"]
    assert starts(tmp_path) == 2

    calls = logged(tmp_path)
    assert [c["code"] for c in calls] == codes
    assert {(c["mode"], c["variant"]) for c in calls} == {("cutover", "structured")}
    assert [c["new_payload"] for c in calls] == payloads


def test_a_call_that_hangs_in_cutover_is_answered_at_the_timeout(tmp_path: Path) -> None:
    steps = [("add", {"a": 1, "b": 1}), ("hang", {}), ("add", {"a": 2, "b": 2})]
    seen = drive(proxy_command(timeout=1.5), environment(tmp_path, "*=cutover"), steps, tmp_path / "err.log")
    hung, after = seen.results[1], seen.results[2]
    assert isinstance(hung, mcp_types.CallToolResult) and hung.is_error
    payload = hung.structured_content
    assert payload is not None and payload["error"]["code"] == "upstream_timeout"
    assert payload["error"]["retryable"] is True  # hang is read-only, so a retry is safe
    assert isinstance(after, mcp_types.CallToolResult) and after.structured_content == {"ok": True,
                                                                                         "data": {"result": 4}}
    assert starts(tmp_path) == 1  # a hang does not restart the child
    assert [(c["tool"], c["code"], c["rule"]) for c in logged(tmp_path)] == [
        ("add", None, None), ("hang", "upstream_timeout", "proxy:timeout"), ("add", None, None)]


def test_legacy_mode_forwards_everything_and_logs_nothing(direct: list[Any], tmp_path: Path) -> None:
    seen = drive(proxy_command(), environment(tmp_path, "*=legacy"), DETERMINISTIC, tmp_path / "err.log")
    assert [dump(r) for r in seen.results] == direct
    assert logged(tmp_path) == [] and logged(tmp_path, tables.marks) == []


def test_db_url_names_the_call_log_the_proxy_logs_to(tmp_path: Path) -> None:
    env = environment(tmp_path, "find_user=shadow")
    del env["SHADOW_DB_URL"]
    seen = drive(proxy_command("--db-url", f"sqlite:///{tmp_path}/proxy.db"), env, [("find_user", {"user_id": "7"})],
                 tmp_path / "err.log")
    assert len(seen.results) == 1
    assert [row["tool"] for row in logged(tmp_path)] == ["find_user"]


def test_flags_are_per_tool(tmp_path: Path) -> None:
    steps = [("find_user", {"user_id": "7"}), ("echo", {"text": "x"}), ("book", {"slot": "1"})]
    seen = drive(proxy_command(), environment(tmp_path, "find_user=cutover,echo=shadow,*=legacy"), steps,
                 tmp_path / "err.log")
    by_name = {t.name: t for t in seen.tools}
    assert by_name["find_user"].output_schema == schema() and by_name["echo"].output_schema is None
    first = seen.results[0]
    assert isinstance(first, mcp_types.CallToolResult) and first.structured_content["ok"] is False  # type: ignore[index]
    assert dump(seen.results[1])["content"] == [{"type": "text", "text": "x"}]
    assert [(c["tool"], c["mode"], c["variant"]) for c in logged(tmp_path)] == [
        ("find_user", "cutover", "structured"), ("echo", "shadow", "legacy")]


runner = CliRunner()


@pytest.mark.parametrize(("argv", "message"), [
    (["--name", "bad name!", "--", *FIXTURE], "--name 'bad name!'"),
    (["--name", "fx", "--rules", "no_such_rules_module", "--", *FIXTURE], "cannot import no_such_rules_module"),
    (["--name", "fx", "--rules", "tests/fixtures/mcp_server.py:server", "--", *FIXTURE], "not a shadow.Rules"),
    (["--name", "fx"], "Missing argument"),
    (["--name", "fx", "--timeout", "0", "--", *FIXTURE], "--timeout"),
])
def test_bad_options_get_a_clear_error(argv: list[str], message: str) -> None:
    result = runner.invoke(app, ["proxy", *argv])
    assert result.exit_code == 2, result.output
    assert message in result.output


@pytest.mark.parametrize(("child", "code", "message"), [
    (["/no/such/server"], 2, "'/no/such/server' was not found"),
    ([sys.executable, "-c", "import sys; sys.exit(3)"], 3, "exited before it finished the MCP handshake"),
    ([sys.executable, "-c", "import time; time.sleep(30)"], 3, "did not finish the MCP handshake within 0.5 s"),
], ids=["not-found", "exits", "silent"])
def test_a_command_that_does_not_start_as_an_mcp_server_is_reported(child: list[str], code: int,
                                                                     message: str) -> None:
    argv = [sys.executable, "-m", "shadow.cli", "proxy", "--name", "fx", "--start-timeout", "0.5", "--", *child]
    done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60, cwd=ROOT,
                          check=False)
    assert done.returncode == code, done.stderr
    assert message in done.stderr
    assert done.stdout == ""  # stdout is the MCP wire: nothing else may ever be written there


def test_without_the_mcp_sdk_the_command_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "shadow.proxy", None)  # as if `import mcp` failed inside it
    monkeypatch.setitem(sys.modules, "shadow.proxy._server", None)
    result = runner.invoke(app, ["proxy", "--name", "fx", "--", *FIXTURE])
    assert result.exit_code == 2, result.output
    assert "the 'mcp' extra" in result.output and "[mcp]'" in result.output


@pytest.mark.parametrize("mode", ["shadow", "cutover"])
def test_an_unknown_tool_answered_as_a_json_rpc_error_is_not_found(mode: str, tmp_path: Path) -> None:
    env = {**environment(tmp_path, f"*={mode}"), "FIXTURE_REJECT_UNKNOWN": "1"}
    seen = drive(proxy_command(), env, [("nope", {}), ("add", {"a": 1, "b": 1})], tmp_path / "err.log")
    unknown = seen.results[0]
    if mode == "shadow":
        assert dump(unknown) == ("jsonrpc-error", -32602, "Unknown tool: nope")  # as the server answered it
    else:
        assert isinstance(unknown, mcp_types.CallToolResult) and unknown.is_error
        assert unknown.structured_content is not None
        error = unknown.structured_content["error"]
        assert error["code"] == "not_found" and error["context"] == {"jsonrpc_code": -32602, "tool": "nope"}
    calls = logged(tmp_path)
    assert [(c["tool"], c["code"], c["rule"]) for c in calls] == [
        ("nope", "not_found", "jsonrpc:unknown-tool"), ("add", None, None)]
