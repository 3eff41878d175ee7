"""The labelled corpus of texts real tools return: schema, closed labels, the error corpus's split, no secrets."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests._returned_texts import entries
from tests.normalize.test_real_corpus_data import SPLIT_SEED, _package, _split_of, no_credential_in

README = Path(__file__).resolve().parents[1] / "fixtures" / "returned_texts" / "README.md"
FIELDS = {"id", "source", "path", "template", "text", "label", "reason", "split"}
LABELS = {"error", "success", "ambiguous"}
_SOURCE = re.compile(r"^[A-Za-z0-9._-]+==[^=\s]+$")
ENTRIES = entries()


@pytest.mark.parametrize("entry", ENTRIES, ids=[e.get("id", "?") for e in ENTRIES])
def test_every_line_has_the_schema_and_a_closed_label(entry: dict[str, Any]) -> None:
    assert set(entry) == FIELDS
    for name in ("id", "source", "path", "text", "label", "reason", "split"):
        assert isinstance(entry[name], str) and entry[name].strip(), name
    assert entry["template"] is None or (isinstance(entry["template"], str) and entry["template"].strip())
    assert _SOURCE.match(entry["source"]), entry["source"]
    assert entry["label"] in LABELS


def test_the_corpus_holds_both_kinds_from_enough_layers() -> None:
    labels = Counter(e["label"] for e in ENTRIES)
    assert labels["error"] >= 150 and labels["success"] >= 100
    assert len({_package(e["source"]) for e in ENTRIES}) >= 15
    assert len({e["id"] for e in ENTRIES}) == len(ENTRIES)
    assert [t for t, n in Counter(e["text"] for e in ENTRIES).items() if n > 1] == []


def test_the_split_follows_the_error_corpus_rule_and_seed() -> None:
    for entry in ENTRIES:
        assert entry["split"] == _split_of(entry["source"]), entry["id"]
    assert set(Counter(e["split"] for e in ENTRIES)) == {"dev", "heldout"}
    assert SPLIT_SEED in README.read_text(encoding="utf-8")


def test_no_text_or_template_looks_like_a_credential() -> None:
    no_credential_in(ENTRIES)
