"""The labelled corpus of real tool error messages: schema, closed labels, size, the by-source split, no secrets."""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from shadow._redact import scrub_text
from shadow.contract._codes import Code

FOLDER = Path(__file__).resolve().parents[1] / "fixtures" / "real_errors"
CORPUS = FOLDER / "corpus.jsonl"
README = FOLDER / "README.md"

#: The split is a pure function of the package name and this seed (also stated in the README): never change either.
SPLIT_SEED = "shadow-real-errors-v1"
DEV_SHARE = 0.6

FIELDS = {"id", "source", "path", "template", "text", "kind", "label", "alternatives", "reason", "split"}
LABELS = {c.value for c in Code} | {"unplaceable"}
KINDS = {"returned", "shown", "raised"}
_SOURCE = re.compile(r"^(?:npm:(?P<npm>@?[^@\s]+)@(?P<nv>[^@\s]+)|(?P<py>[A-Za-z0-9._-]+)==(?P<pv>[^=\s]+))$")
#: Credential shapes a fixture must never hold, besides what the project's own scrubber would replace.
_CREDENTIAL = re.compile(
    r"sk-[A-Za-z0-9]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|xox[abpr]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16}"
    r"|AIza[0-9A-Za-z_-]{30,}|eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}|-----BEGIN [A-Z ]*PRIVATE KEY-----"
    r"|(?i:bearer\s+[A-Za-z0-9._-]{20,})|://[^/\s:@]+:[^/\s@]+@"
)


def _entries() -> list[dict[str, Any]]:
    return [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines() if line.strip()]


def _package(source: str) -> str:
    match = _SOURCE.match(source)
    assert match is not None, source
    return f"npm:{match['npm']}" if match["npm"] else str(match["py"])


def _split_of(source: str) -> str:
    digest = hashlib.sha256(f"{SPLIT_SEED}:{_package(source)}".encode()).hexdigest()
    return "dev" if int(digest[:8], 16) / 2**32 < DEV_SHARE else "heldout"


ENTRIES = _entries()


@pytest.mark.parametrize("entry", ENTRIES, ids=[e.get("id", "?") for e in ENTRIES])
def test_every_line_has_the_schema_and_a_closed_label(entry: dict[str, Any]) -> None:
    assert set(entry) == FIELDS
    for field in ("id", "source", "path", "text", "kind", "label", "reason", "split"):
        assert isinstance(entry[field], str) and entry[field].strip(), field
    assert entry["template"] is None or (isinstance(entry["template"], str) and entry["template"].strip())
    assert _SOURCE.match(entry["source"]), entry["source"]
    assert entry["kind"] in KINDS
    assert entry["label"] in LABELS
    assert isinstance(entry["alternatives"], list)
    assert all(alt in LABELS and alt != entry["label"] for alt in entry["alternatives"])
    assert len(set(entry["alternatives"])) == len(entry["alternatives"])


def test_the_corpus_is_large_enough_and_spans_enough_tool_layers() -> None:
    assert len(ENTRIES) >= 500
    assert len({_package(e["source"]) for e in ENTRIES}) >= 30


def test_ids_and_texts_are_unique() -> None:
    assert len({e["id"] for e in ENTRIES}) == len(ENTRIES)
    duplicated = [t for t, n in Counter(e["text"] for e in ENTRIES).items() if n > 1]
    assert duplicated == []


def test_one_version_per_package() -> None:
    versions: dict[str, set[str]] = {}
    for entry in ENTRIES:
        versions.setdefault(_package(entry["source"]), set()).add(entry["source"])
    assert {p: v for p, v in versions.items() if len(v) > 1} == {}


def test_the_split_is_by_source_and_follows_the_recorded_seed() -> None:
    sides: dict[str, set[str]] = {}
    for entry in ENTRIES:
        sides.setdefault(_package(entry["source"]), set()).add(entry["split"])
        assert entry["split"] == _split_of(entry["source"]), entry["id"]
    assert all(len(s) == 1 for s in sides.values())
    counts = Counter(e["split"] for e in ENTRIES)
    assert set(counts) == {"dev", "heldout"}
    assert 0.35 <= counts["dev"] / len(ENTRIES) <= 0.75
    assert SPLIT_SEED in README.read_text(encoding="utf-8")


def no_credential_in(entries: list[dict[str, Any]]) -> None:
    """No text or template of ``entries`` looks like a credential or is changed by shadow's scrubber."""
    for entry in entries:
        for value in (entry["text"], entry["template"] or ""):
            assert _CREDENTIAL.search(value) is None, entry["id"]
            assert scrub_text(value) == value, entry["id"]


def test_no_text_or_template_looks_like_a_credential() -> None:
    no_credential_in(ENTRIES)
