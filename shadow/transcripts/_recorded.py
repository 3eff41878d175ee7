"""A call record rebuilt from what shadow itself recorded (``shadow.*`` span attributes), not derived again.

Spans exported by shadow's OTLP store carry the record's own fields: the code, retryable, next action, fingerprint,
unmapped, arm and the argument hashes. Reading them back, ``shadow import`` keeps those values, so the imported log
has the same errors, loops and arms as the database the spans came from, whether or not arguments and payloads
were exported (without arguments every call would otherwise look unique, and codes would be guessed from text).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any, Final

from shadow.calllog._records import CallRecord

#: The span attributes (``shadow.`` + name) that make a span one of shadow's own.
MARKERS: Final = ("variant", "fingerprint", "outcome")
_CHOICES: Final[dict[str, frozenset[str]]] = {
    "mode": frozenset({"shadow", "cutover"}),
    "variant": frozenset({"legacy", "structured"}),
    "outcome": frozenset({"ok", "error", "cancelled"}),
}
_TEXT: Final = {"fingerprint": 64, "code": 32, "next_action": 16, "error_field": 200, "rule": 200}
_FLAGS: Final = ("retryable", "unmapped", "schema_valid")
#: Left out of a span when the record has none: absent means None.
_OPTIONAL: Final = ("code", "retryable", "next_action", "retry_after_ms", "error_field", "rule")


def recorded_fields(attributes: Mapping[str, Any]) -> dict[str, Any] | None:
    """The ``shadow.*`` attributes of a span shadow exported (prefix removed), else None."""
    if not all(f"shadow.{name}" in attributes for name in MARKERS):
        return None
    return {key.removeprefix("shadow."): value for key, value in attributes.items() if key.startswith("shadow.")}


def _bad(name: str, value: object, expected: str) -> ValueError:
    return ValueError(f"the span attribute shadow.{name} is {value!r}, not {expected}")


def _field(name: str, value: object) -> object:
    """One recorded value, checked; ``ValueError`` says which attribute is off and what it should be."""
    if name in _CHOICES:
        if value not in _CHOICES[name]:
            raise _bad(name, value, f"one of {', '.join(sorted(_CHOICES[name]))}")
        return value
    if name in _TEXT:
        if not isinstance(value, str) or len(value) > _TEXT[name]:
            raise _bad(name, value, f"a string of at most {_TEXT[name]} characters")
        return value
    if name in _FLAGS:
        if not isinstance(value, bool):
            raise _bad(name, value, "a boolean")
        return value
    if name == "retry_after_ms":
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise _bad(name, value, "a whole number of milliseconds")
        return value
    if name == "arg_hashes":
        parsed = _json(name, value)
        if not isinstance(parsed, dict) or not all(isinstance(v, str) for v in parsed.values()):
            raise _bad(name, value, "a JSON object of argument fingerprints")
        return parsed
    raise AssertionError(name)


def _json(name: str, value: object) -> Any:
    if not isinstance(value, str):
        raise _bad(name, value, "a JSON text")
    try:
        return json.loads(value)
    except ValueError:
        raise _bad(name, value[:80], "a JSON text") from None


def as_recorded(record: CallRecord, recorded: Mapping[str, Any]) -> CallRecord:
    """``record`` (built from the span's tool, arguments and result) with the values shadow recorded put back."""
    names = (*_CHOICES, *_TEXT, *_FLAGS, "retry_after_ms", "arg_hashes")
    changes: dict[str, Any] = dict.fromkeys((*_OPTIONAL, "arg_hashes"))
    for name in names:
        if name in recorded and recorded[name] is not None:
            changes[name] = _field(name, recorded[name])
    for name in ("legacy_payload", "new_payload"):  # exported when payloads were opted in, else not known
        changes[name] = _json(name, recorded[name]) if recorded.get(name) is not None else None
    return dataclasses.replace(record, **changes)
