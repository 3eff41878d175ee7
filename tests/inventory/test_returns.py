"""Inventory follows returns: a tool that returns (or awaits) a helper's result inherits its error returns."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

LAYER = Path(__file__).parent.parent / "fixtures" / "inventory" / "thinwrap"


def _sites() -> list[dict[str, object]]:
    out = subprocess.run([sys.executable, "-m", "shadow.cli", "inventory", str(LAYER), "--format", "json"],
                         capture_output=True, text=True, check=True, timeout=120, env=dict(os.environ))
    sites: list[dict[str, object]] = json.loads(out.stdout)["sites"]
    return sites


def test_a_thin_wrappers_tools_inherit_the_legacy_helpers_error_returns_with_the_chain() -> None:
    by_tool = {str(s["tool"]): s for s in _sites()}
    assert set(by_tool) == {"get_order", "search_orders", "refund"}
    order = by_tool["get_order"]
    assert order["kind"] == "error-return" and order["code"] == "not_found"
    assert order["file"] == str(LAYER / "tools.py") or str(order["file"]).endswith("thinwrap/tools.py")
    chain = [str(step) for step in order["via"]]  # type: ignore[union-attr]
    assert chain[0].startswith("legacy.get_order") and chain[1].startswith("_find")
    assert chain[-1].endswith("legacy.py:12")  # where the helper's helper returns the error


def test_an_awaited_helper_and_a_result_held_in_a_variable_are_followed() -> None:
    by_tool = {str(s["tool"]): s for s in _sites()}
    assert str(by_tool["search_orders"]["via"][0]).startswith("legacy.search")  # type: ignore[index]
    refund = by_tool["refund"]  # ``result = legacy.refund(...)``, then ``return result``; the helper builds a dict
    assert refund["code"] == "validation_error"
    assert str(refund["via"][-1]).endswith("legacy.py:29")  # type: ignore[index]
