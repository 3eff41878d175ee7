"""``shadow rules suggest``: rules learned from the errors the shadow phase logged and no rule mapped."""

from __future__ import annotations

from shadow.suggest._emit import emit_rules
from shadow.suggest._groups import Group, Proposal, Suggestions, group, propose_code, remedy, suggest
from shadow.suggest._read import LogError, LogSlice, Unmapped, read_unmapped
from shadow.suggest._shape import Shape, legacy_text, shape_of

__all__ = [
    "Group",
    "LogError",
    "LogSlice",
    "Proposal",
    "Shape",
    "Suggestions",
    "Unmapped",
    "emit_rules",
    "group",
    "legacy_text",
    "propose_code",
    "read_unmapped",
    "remedy",
    "shape_of",
    "suggest",
]
