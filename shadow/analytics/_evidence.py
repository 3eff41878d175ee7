"""Evidence per tool: what the model saw (legacy vs structured payload) per frequent code, and unmapped shapes."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from shadow._redact import cap, find_leaks, to_jsonable
from shadow.suggest._shape import legacy_text, shape_of

#: The most frequent codes per tool that get examples, and how many examples each.
MAX_CODES: Final = 3
EXAMPLES_PER_CODE: Final = 3
#: Bytes an example payload is capped to (canonical JSON), and characters of a shape.
MAX_EXAMPLE_BYTES: Final = 600
MAX_SHAPE_CHARS: Final = 160
#: Unmapped shapes listed per tool, and the distinct unmapped payloads read per tool to build them.
MAX_SHAPES: Final = 5
MAX_UNMAPPED_READ: Final = 2000
#: Distinct structured error payloads per tool scanned for leaks.
MAX_LEAK_SCAN: Final = 5000


def shape(text: str) -> str:
    """``text``'s shape (``shadow.suggest._shape.shape_of``: the one masking ``shadow rules suggest`` uses too),
    capped to ``MAX_SHAPE_CHARS`` to be shown."""
    masked = shape_of(text).text
    return masked if len(masked) <= MAX_SHAPE_CHARS else masked[: MAX_SHAPE_CHARS - 1] + "…"


def safe_payload(raw: str | None, max_bytes: int = MAX_EXAMPLE_BYTES) -> Any:
    """A stored payload (JSON text) redacted again (secret keys, credential-shaped text) and capped to
    ``max_bytes``: fit to show in a report or a page."""
    if raw is None:
        return None
    try:
        value = json.loads(raw)
    except ValueError:
        value = raw
    return cap(to_jsonable(value, redact=True), max_bytes, max_string=200)


@dataclass(frozen=True, slots=True)
class Example:
    """One error call: what the legacy tool returned and what the structured payload would say (both redacted)."""

    legacy: Any
    structured: Any


@dataclass(frozen=True, slots=True)
class CodeEvidence:
    """One of a tool's most frequent codes, its error count and up to ``EXAMPLES_PER_CODE`` examples."""

    code: str
    errors: int
    examples: tuple[Example, ...]


@dataclass(frozen=True, slots=True)
class UnmappedShape:
    """Unmapped errors whose legacy payload has one shape: the shape, their count and one redacted example."""

    shape: str
    errors: int
    example: Any


@dataclass(frozen=True, slots=True)
class Evidence:
    """A tool's evidence: example pairs per frequent code, and the most frequent unmapped shapes."""

    codes: tuple[CodeEvidence, ...]
    unmapped: tuple[UnmappedShape, ...]
    unmapped_shapes: int  # how many shapes there are in all (``unmapped`` lists the most frequent)


def _payload_text(raw: str | None) -> str:
    """The error text of a stored legacy payload (JSON text), read as ``rules suggest`` reads it, after the
    exception class when the legacy tool raised."""
    if raw is None:
        return "null"
    try:
        value = json.loads(raw)
    except ValueError:
        return raw
    text, exception = legacy_text(value)
    return f"{exception}: {text}" if exception else text


def unmapped_shapes(rows: Sequence[Mapping[str, Any]],
                    limit: int = MAX_SHAPES) -> tuple[tuple[UnmappedShape, ...], int]:
    """Group rows of (legacy_payload, errors) by ``shape`` of the payload's text; the ``limit`` most frequent."""
    groups: dict[str, list[Any]] = {}
    for r in rows:
        key = shape(_payload_text(r["legacy_payload"]))
        group = groups.setdefault(key, [0, r["legacy_payload"]])
        group[0] += int(r["errors"])
    ranked = sorted(groups.items(), key=lambda kv: (-kv[1][0], kv[0]))
    return tuple(UnmappedShape(k, n, safe_payload(raw)) for k, (n, raw) in ranked[:limit]), len(groups)


def code_evidence(rows: Sequence[Mapping[str, Any]]) -> tuple[CodeEvidence, ...]:
    """Rows of ``report_evidence`` for one tool as evidence per code, most frequent first."""
    out: dict[str, tuple[int, list[Example]]] = {}
    for r in rows:
        _, examples = out.setdefault(str(r["code"]), (int(r["errors"]), []))
        examples.append(Example(safe_payload(r["legacy_payload"]), safe_payload(r["new_payload"])))
    return tuple(CodeEvidence(code, n, tuple(ex)) for code, (n, ex) in
                 sorted(out.items(), key=lambda kv: (-kv[1][0], kv[0])))


def count_leaks(rows: Sequence[Mapping[str, Any]]) -> int:
    """Errors whose structured payload holds traceback text, a file path or ``site-packages`` the model did not
    already read in legacy."""
    return sum(int(r["errors"]) for r in rows if served_leaks(r["new_payload"], r.get("legacy_payload")))


def served_leaks(new_payload: object, legacy_payload: object) -> list[str]:
    """What in the structured payload looks like a leak, less what the model already read in the legacy one: a
    path in a returned error's own words ("Access denied to file_path: ../../etc/passwd") is no new leak when
    cutover serves those words. An exception the model never saw (``{"exception", "message"}`` with no
    ``"shown"``) was read by no one, so all of it counts."""
    found = find_leaks(_loaded(new_payload))
    if not found or legacy_payload is None:
        return found
    legacy = _loaded(legacy_payload)
    if isinstance(legacy, Mapping) and "exception" in legacy and "message" in legacy and not legacy.get("shown"):
        return found
    read = legacy if isinstance(legacy, str) else json.dumps(legacy, ensure_ascii=False)
    return [text for text in found if text not in read]


def _loaded(raw: object) -> object:
    if not isinstance(raw, str | bytes):
        return raw
    try:
        return json.loads(raw)
    except ValueError:
        return raw
