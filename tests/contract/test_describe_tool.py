"""``shadow describe --tool``: the paragraph for the codes one tool can return, from its shadow log."""

from __future__ import annotations

from typing import Any

from typer.testing import CliRunner

import shadow
from shadow.calllog._store import SqlStore
from shadow.cli import app
from shadow.testing import InMemoryFlags, recording


def test_describe_for_a_tool_lists_only_the_codes_it_returned(sqlite_url: str) -> None:
    with recording(SqlStore(sqlite_url)):
        @shadow.tool(name="weather", flags=InMemoryFlags({"weather": "shadow"}))
        def weather(city: str) -> Any:
            return {"status": 404} if city == "Atlantis" else {"status": 429}

        weather("Atlantis")
        weather("Lisbon")
    result = CliRunner().invoke(app, ["describe", "--tool", "weather", "--db-url", sqlite_url])
    assert result.exit_code == 0, result.output
    assert "not_found" in result.stdout
    assert "rate_limited" in result.stdout
    assert "internal_error" in result.stdout
    assert "validation_error" not in result.stdout


def test_describe_inventory_without_tool_is_a_usage_error(tmp_path: Any) -> None:
    inv = tmp_path / "inv.json"
    inv.write_text("{}")
    result = CliRunner().invoke(app, ["describe", "--inventory", str(inv)])
    assert result.exit_code == 2
    assert "--inventory goes with --tool" in result.output
