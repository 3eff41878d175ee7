"""Counted nouns read as English: one call, two calls."""

from __future__ import annotations

from shadow.analytics._text import counted


def test_one_is_singular_and_every_other_count_is_plural_with_separators() -> None:
    assert counted(1, "call") == "1 call"
    assert counted(0, "call") == "0 calls"
    assert counted(2_000, "session") == "2,000 sessions"
    assert counted(1, "child", "children") == "1 child"
    assert counted(3, "child", "children") == "3 children"
