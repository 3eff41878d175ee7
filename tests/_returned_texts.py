"""Scoring error detection on real texts tools return as their whole result (tests/fixtures/returned_texts/)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from shadow.contract import looks_like_error

CORPUS = Path(__file__).resolve().parent / "fixtures" / "returned_texts" / "corpus.jsonl"


def entries(split: str | None = None) -> list[dict[str, Any]]:
    """The corpus lines, all or one split's."""
    lines = (json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines() if line.strip())
    return [e for e in lines if split is None or e["split"] == split]


@dataclass
class Detection:
    """How one split's texts are told apart: errors read as errors, successes read as errors (false alarms)."""

    errors: int = 0
    caught: int = 0
    successes: int = 0
    false_alarms: int = 0
    ambiguous: int = 0
    missed: list[str] = field(default_factory=list)
    alarms: list[str] = field(default_factory=list)

    @property
    def recall(self) -> float:
        return self.caught / self.errors if self.errors else 0.0

    @property
    def false_alarm_share(self) -> float:
        return self.false_alarms / self.successes if self.successes else 0.0

    @property
    def precision(self) -> float:
        flagged = self.caught + self.false_alarms
        return self.caught / flagged if flagged else 1.0


def detect(items: Iterable[dict[str, Any]]) -> Detection:
    """``looks_like_error`` on each returned text against its hand label (``ambiguous`` ones only counted)."""
    result = Detection()
    for entry in items:
        flagged = looks_like_error(entry["text"])
        if entry["label"] == "error":
            result.errors += 1
            if flagged:
                result.caught += 1
            else:
                result.missed.append(entry["id"])
        elif entry["label"] == "success":
            result.successes += 1
            if flagged:
                result.false_alarms += 1
                result.alarms.append(entry["id"])
        else:
            result.ambiguous += 1
    return result
