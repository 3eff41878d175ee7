"""``shadow proxy`` and slow tools: --timeout bounds only what cutover serves; legacy and shadow wait as directly."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp import types as mcp_types
from mcp.shared.exceptions import MCPError

from tests.proxy.test_proxy import ROOT, drive, dump, environment, logged, proxy_command, starts

SLOW = ("hang", {"seconds": 2.5})  # answers after 2.5 s, past the proxy's --timeout of 1 s


@pytest.mark.parametrize("mode", ["legacy", "shadow"])
def test_a_slow_call_is_answered_when_the_child_answers_not_at_the_proxy_timeout(mode: str, tmp_path: Path) -> None:
    steps = [SLOW, ("add", {"a": 2, "b": 2})]
    seen = drive(proxy_command(timeout=1.0), environment(tmp_path, f"*={mode}"), steps, tmp_path / "err.log")
    slow, after = (dump(r) for r in seen.results)
    assert isinstance(slow, dict)  # what a direct connection gets, not a timeout
    assert (slow["content"], slow["isError"], slow["structuredContent"]) == (
        [{"type": "text", "text": "woke up"}], False, {"result": "woke up"})
    assert after["structuredContent"] == {"result": 4}
    assert starts(tmp_path) == 1
    calls = logged(tmp_path)
    if mode == "legacy":
        assert calls == []
        return
    # the shadow record of the slow call is logged when it completes, with its real latency
    assert [(c["tool"], c["outcome"], c["code"]) for c in calls] == [("hang", "ok", None), ("add", "ok", None)]
    assert calls[0]["latency_us"] >= 2_400_000
    assert calls[0]["new_payload"] == {"ok": True, "data": "woke up"}  # the text, not the SDK's {"result": text}


def test_in_cutover_the_proxy_timeout_still_serves_upstream_timeout(tmp_path: Path) -> None:
    seen = drive(proxy_command(timeout=1.0), environment(tmp_path, "*=cutover"), [SLOW], tmp_path / "err.log")
    [slow] = seen.results
    assert isinstance(slow, mcp_types.CallToolResult) and slow.is_error
    assert slow.structured_content is not None and slow.structured_content["error"]["code"] == "upstream_timeout"


async def _give_up(command: list[str], env: dict[str, str], errlog: Path) -> list[Any]:
    params = StdioServerParameters(command=command[0], args=command[1:], env=env, cwd=str(ROOT))
    seen: list[Any] = []
    with errlog.open("a", encoding="utf-8") as err:
        async with stdio_client(params, errlog=err) as (read, write), ClientSession(read, write) as client:
            with anyio.fail_after(30):
                await client.initialize()
                await client.list_tools()
                try:
                    await client.call_tool("hang", {}, read_timeout_seconds=1.0)  # the client's own timeout
                except MCPError as exc:
                    seen.append((exc.code, exc.message))
                seen.append(dump(await client.call_tool("add", {"a": 1, "b": 1})))
    return seen


def test_a_call_the_client_gives_up_on_is_logged_as_cancelled(tmp_path: Path) -> None:
    env = environment(tmp_path, "*=shadow")
    timed_out, after = anyio.run(_give_up, proxy_command(timeout=60.0), env, tmp_path / "err.log")
    assert timed_out == (-32001, "Request 'tools/call' timed out")  # raised by the client itself
    assert after["structuredContent"] == {"result": 2}
    calls = logged(tmp_path)
    assert [(c["tool"], c["outcome"], c["code"]) for c in calls] == [("hang", "cancelled", None), ("add", "ok", None)]
    assert 900_000 <= calls[0]["latency_us"] < 30_000_000
