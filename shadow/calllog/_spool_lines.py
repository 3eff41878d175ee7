"""One spool line: a record as a JSON line, and back with every field checked against its column's type."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from typing import Any, Final

import orjson

from shadow.calllog._records import Built, CallRecord, MarkRecord, Record, as_record

__all__ = ["decode", "encode"]

_KINDS: Final[dict[str, type[CallRecord] | type[MarkRecord]]] = {"call": CallRecord, "mark": MarkRecord}
_NAMES: Final = {cls: frozenset(f.name for f in dataclasses.fields(cls)) for cls in (CallRecord, MarkRecord)}


def encode(built: Built) -> bytes:
    """One JSON line for ``built`` (a ``CallRow`` as its record; datetimes as ISO 8601 with offset)."""
    record = as_record(built)
    row = record.to_row()
    row["ts"] = row["ts"].isoformat()
    kind = "call" if isinstance(record, CallRecord) else "mark"
    item = {"k": kind, "r": row}
    try:
        return orjson.dumps(item, option=orjson.OPT_APPEND_NEWLINE)
    except TypeError:  # what orjson declines (integers past 64 bits): the standard library
        return (json.dumps(item, separators=(",", ":"), ensure_ascii=False) + "\n").encode()


#: The type each field of a spooled record must have (``None`` allowed where the column is nullable).
_STR, _INT, _BOOL, _ANY = (str,), (int,), (bool,), ()
_CALL_TYPES: Final[dict[str, tuple[tuple[type, ...], bool]]] = {
    "id": (_STR, False), "session_id": (_STR, False), "seq": (_INT, False), "tool": (_STR, False),
    "mode": (_STR, False), "variant": (_STR, False), "fingerprint": (_STR, False), "arg_hashes": ((dict,), True),
    "args": (_ANY, True), "outcome": (_STR, False), "legacy_payload": (_ANY, True), "new_payload": (_ANY, True),
    "code": (_STR, True), "retryable": (_BOOL, True), "next_action": (_STR, True), "retry_after_ms": (_INT, True),
    "error_field": (_STR, True), "rule": (_STR, True), "unmapped": (_BOOL, False), "schema_valid": (_BOOL, False),
    "latency_us": (_INT, False), "process": (_STR, False), "host": (_STR, False), "source": (_STR, False),
    "flag_source": (_STR, True), "rules_fingerprint": (_STR, True),
}
_MARK_TYPES: Final[dict[str, tuple[tuple[type, ...], bool]]] = {
    "id": (_STR, False), "session_id": (_STR, False), "seq": (_INT, False), "kind": (_STR, False),
    "process": (_STR, False), "host": (_STR, False), "source": (_STR, False),
}


def decode(line: bytes) -> Record:
    """The record of one spool line; raises ``ValueError`` (or ``KeyError``/``TypeError``) on a damaged line.

    Every field is checked against its column's type, so a damaged or edited line never reaches the database.
    """
    try:
        item = orjson.loads(line)  # depth-limited: a deeply nested line is an error, not a RecursionError
    except orjson.JSONDecodeError as exc:
        raise ValueError(f"not JSON: {exc}") from None
    if not isinstance(item, dict) or not isinstance(item.get("r"), dict):
        raise ValueError("not a spooled record")
    cls = _KINDS[item["k"]]
    row: dict[str, Any] = dict(item["r"])
    types = _CALL_TYPES if cls is CallRecord else _MARK_TYPES
    for name, (wanted, nullable) in types.items():
        value = row.get(name)
        if value is None:
            if nullable or name == "source":
                continue
            raise ValueError(f"{name} is missing")
        if wanted and (not isinstance(value, wanted) or (wanted is _INT and isinstance(value, bool))):
            raise ValueError(f"{name} is {type(value).__name__}, not {wanted[0].__name__}")
    if not isinstance(row.get("ts"), str):
        raise ValueError("ts is missing")
    row["ts"] = dt.datetime.fromisoformat(row["ts"])
    names = _NAMES[cls]
    if row.get("source") is None:
        row.pop("source", None)
    return cls(**{k: v for k, v in row.items() if k in names})
