"""``shadow proxy`` in front of a server whose tool names the call log cannot store as they are (too long, a NUL)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp import types as mcp_types
from sqlalchemy import create_engine, select

from shadow._names import name_problem
from shadow.calllog import _tables as tables
from tests.fixtures.mcp_server import LONG_NAME, NUL_NAME
from tests.proxy.test_proxy import FIXTURE, drive, dump, environment, proxy_command


def stored(url: str) -> list[dict[str, Any]]:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return [dict(r) for r in conn.execute(select(tables.calls).order_by(tables.calls.c.seq)).mappings()]
    finally:
        engine.dispose()


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["shadow", "cutover"])
def test_oddly_named_upstream_tools_are_forwarded_as_named_and_logged_under_a_storable_name(
        mode: str, db_url: str, tmp_path: Path) -> None:
    env = {**environment(tmp_path, f"*={mode}"), "SHADOW_DB_URL": db_url, "FIXTURE_ODD_NAMES": "1",
           "SHADOW_SPOOL": str(tmp_path / "spool")}  # what a writer would set aside lands here, not in the checkout
    steps: list[tuple[str, dict[str, Any]]] = [(LONG_NAME, {"text": "a"}), (NUL_NAME, {"text": "b"}),
                                               (LONG_NAME[:-1] + "y", {"text": "c"}), ("add", {"a": 1, "b": 2})]
    direct = drive(FIXTURE, {**env, "SHADOW_DB_URL": ""}, steps[:2], tmp_path / "direct.log")
    seen = drive(proxy_command(), env, steps, tmp_path / "err.log")

    assert {LONG_NAME, NUL_NAME} <= {tool.name for tool in seen.tools}  # listed as the server names them
    if mode == "shadow":
        assert [dump(r) for r in seen.results[:2]] == [dump(r) for r in direct.results]
    else:
        answers = [r.structured_content for r in seen.results[:2] if isinstance(r, mcp_types.CallToolResult)]
        assert answers == [{"ok": True, "data": "250:a"}, {"ok": True, "data": "8:b"}]

    calls = stored(db_url)
    names = [c["tool"] for c in calls]
    assert len(calls) == 4 and names[3] == "add", names  # every call logged, none set aside by the writer
    assert all(name_problem(name) is None for name in names), names
    assert len(set(names)) == 4  # two long names that share their first 249 characters stay apart
    assert names[0].startswith(LONG_NAME[:150]) and names[1].startswith("nul\ufffdname")
    assert [c["args"] for c in calls[:3]] == [{"text": "a"}, {"text": "b"}, {"text": "c"}]
    events = [json.loads(line) for line in (tmp_path / "err.log").read_text(encoding="utf-8").splitlines()
              if line.startswith("{")]
    reported = [e["logged_as"] for e in events if e.get("event") == "proxy_tool_name_normalised"]
    assert sorted(reported) == sorted(names[:3])  # each reported once (at listing, or at its first call)
