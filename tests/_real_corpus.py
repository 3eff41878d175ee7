"""Scoring a translation on the labelled corpus of real tool errors (tests/fixtures/real_errors/)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from shadow.contract import Rules

CORPUS = Path(__file__).resolve().parent / "fixtures" / "real_errors" / "corpus.jsonl"
UNPLACED = "unplaced"


class _Shown(Exception):
    """Stands for a framework's model-facing exception (FastMCP/MCP ``ToolError``): recognised by its name."""


_Shown.__module__, _Shown.__qualname__, _Shown.__name__ = "mcp.server.fastmcp.exceptions", "ToolError", "ToolError"


def entries(split: str | None = None) -> list[dict[str, Any]]:
    """The corpus lines, all or one split's."""
    lines = (json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines() if line.strip())
    return [e for e in lines if split is None or e["split"] == split]


def predict(entry: dict[str, Any], rules: Rules | None = None) -> str:
    """The code ``rules`` (default: ``Rules.default()``) serve for the entry as the model meets it, or
    ``unplaced`` when nothing places it (``rejected`` in the author's words, or ``internal_error``)."""
    rules = rules or Rules.default()
    if entry["kind"] == "shown":
        found = rules.translate_exception(_Shown(entry["text"]))
    elif entry["kind"] == "raised":
        found = rules.translate_exception(RuntimeError(entry["text"]))
    else:
        result = rules.translate_result({"error": entry["text"]})
        assert result is not None, entry["id"]
        found = result
    # what the model is served: a code read from an unshown exception's words counts (it is still unmapped for
    # review); ``rejected`` in the author's words or ``internal_error`` is no placement
    placed = not found.unmapped or found.error.code.value not in ("rejected", "internal_error")
    return found.error.code.value if placed else UNPLACED


@dataclass
class Score:
    """How one split scores: right (the label or a defensible alternative), wrong, unplaced."""

    total: int = 0
    right: int = 0
    wrong: int = 0
    unplaced: int = 0
    unplaced_placeable: int = 0
    predicted: Counter[str] = field(default_factory=Counter)
    correct: Counter[str] = field(default_factory=Counter)
    misses: list[tuple[str, str, str]] = field(default_factory=list)

    @property
    def wrong_share(self) -> float:
        return self.wrong / self.total if self.total else 0.0

    @property
    def unplaced_share(self) -> float:
        return self.unplaced / self.total if self.total else 0.0

    def precision(self, code: str) -> float:
        return self.correct[code] / self.predicted[code] if self.predicted[code] else float("nan")


def score(items: Iterable[dict[str, Any]], classify: Callable[[dict[str, Any]], str] = predict) -> Score:
    """Each entry's prediction against its label: a code in ``alternatives`` is right too; ``unplaced`` is right
    only for ``unplaceable``, any code for an ``unplaceable`` entry is wrong."""
    result = Score()
    for entry in items:
        got = classify(entry)
        result.total += 1
        if got == UNPLACED:
            result.unplaced += 1
            if entry["label"] != "unplaceable":
                result.unplaced_placeable += 1
                result.misses.append((entry["id"], got, entry["label"]))
            else:
                result.right += 1
            continue
        result.predicted[got] += 1
        if got == entry["label"] or got in entry["alternatives"]:
            result.right += 1
            result.correct[got] += 1
        else:
            result.wrong += 1
            result.misses.append((entry["id"], got, entry["label"]))
    return result
