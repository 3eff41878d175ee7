"""``shadow inventory``: every error path of a tool layer, found by reading its source (never running it)."""

from __future__ import annotations

from shadow.inventory._emit import emit_rules
from shadow.inventory._model import Inventory, RuleDraft, Site, Skipped, ToolDef
from shadow.inventory._run import find_tools, format_table, inventory

__all__ = [
    "Inventory",
    "RuleDraft",
    "Site",
    "Skipped",
    "ToolDef",
    "emit_rules",
    "find_tools",
    "format_table",
    "inventory",
]
