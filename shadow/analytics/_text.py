"""Counted nouns for human-readable output: ``1 call``, ``2,000 calls``."""

from __future__ import annotations


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` with thousands separators and ``noun`` in the singular for exactly one, else the plural (noun + "s")."""
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"
