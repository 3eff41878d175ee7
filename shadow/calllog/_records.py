"""The records the call log holds: one per tool call and one per session mark."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

import orjson

from shadow._redact import JSONValue


@dataclass(frozen=True, slots=True)
class CallRecord:
    """One tool call as the log keeps it (column meanings: ``shadow.calllog._tables.calls``)."""

    id: str
    session_id: str
    seq: int
    ts: dt.datetime
    tool: str
    mode: str
    variant: str
    fingerprint: str
    arg_hashes: dict[str, str] | None
    args: JSONValue
    outcome: str
    legacy_payload: JSONValue
    new_payload: JSONValue
    code: str | None
    retryable: bool | None
    next_action: str | None
    retry_after_ms: int | None
    error_field: str | None
    rule: str | None
    unmapped: bool
    schema_valid: bool
    latency_us: int
    process: str
    host: str
    source: str = "live"
    epoch: int | None = None
    flag_source: str | None = None
    rules_fingerprint: str | None = None  # ``Rules.fingerprint`` of the rules that translated the call

    def to_row(self) -> dict[str, Any]:
        """The row to insert into ``calls``."""
        return {name: getattr(self, name) for name in _CALL_FIELDS}


@dataclass(frozen=True, slots=True)
class MarkRecord:
    """A hand-over inside a session: ``user_turn`` (to a person) or ``end`` (the agent finished)."""

    id: str
    session_id: str
    seq: int
    ts: dt.datetime
    kind: str
    process: str
    host: str
    source: str = "live"
    epoch: int | None = None

    def to_row(self) -> dict[str, Any]:
        """The row to insert into ``marks``."""
        return {name: getattr(self, name) for name in _MARK_FIELDS}


Record = CallRecord | MarkRecord
#: The field names in order (``dataclasses.fields`` walks the class's fields on every call; spooling is hot).
_CALL_FIELDS: Final = tuple(f.name for f in dataclasses.fields(CallRecord))
_MARK_FIELDS: Final = tuple(f.name for f in dataclasses.fields(MarkRecord))


def _slot_constructor(cls: type[Any]) -> Callable[..., Any]:
    """A constructor equal to ``cls(**fields)`` for a frozen slotted dataclass, twice as fast.

    A frozen dataclass's ``__init__`` sets each field with ``object.__setattr__``; this one calls each slot's
    descriptor directly (generated from the fields, as ``dataclasses`` generates ``__init__``). Keyword-only, with
    the same defaults; no field is left unset.
    """
    fields = dataclasses.fields(cls)
    params = ", ".join(f.name if f.default is dataclasses.MISSING else f"{f.name}=_d_{f.name}" for f in fields)
    body = "".join(f"    _s_{f.name}(record, {f.name})\n" for f in fields)
    namespace: dict[str, Any] = {"_new": object.__new__, "_cls": cls}
    for f in fields:
        namespace[f"_s_{f.name}"] = cls.__dict__[f.name].__set__
        namespace[f"_d_{f.name}"] = f.default
    exec(f"def make(*, {params}):\n    record = _new(_cls)\n{body}    return record\n", namespace)
    made: Callable[..., Any] = namespace["make"]
    made.__qualname__ = made.__name__ = f"new_{cls.__name__}"
    return made


#: ``CallRecord(...)`` for the writer's hot path (about 2 us less per record).
new_call_record: Final[Callable[..., CallRecord]] = _slot_constructor(CallRecord)


#: The ``calls`` columns a ``CallRow`` holds as JSON text, by position.
_JSON_AT: Final = tuple(i for i, name in enumerate(_CALL_FIELDS)
                        if name in ("arg_hashes", "args", "legacy_payload", "new_payload"))


@dataclass(frozen=True, slots=True)
class CallRow:
    """A plain call's record as the row a store inserts: ``calls``' columns in order, JSON columns as JSON text.

    The writer builds these instead of ``CallRecord``s for a store that takes rows (``takes_rows``: ``SqlStore``),
    so each value is encoded once and no decoded copy is made for nobody; ``record()`` gives the
    ``CallRecord`` when one is wanted after all (a spool, a record set aside).
    """

    values: tuple[Any, ...]

    @property
    def id(self) -> str:
        return self.values[0]  # type: ignore[no-any-return]

    @property
    def session_id(self) -> str:
        return self.values[1]  # type: ignore[no-any-return]

    def record(self) -> CallRecord:
        """The same call as a ``CallRecord`` (its JSON columns decoded)."""
        values = list(self.values)
        for at in _JSON_AT:
            text = values[at]
            values[at] = None if text is None else orjson.loads(text)
        return new_call_record(**dict(zip(_CALL_FIELDS, values, strict=True)))


#: What a writer's batch holds: records, and rows for a store that takes them.
Built = CallRecord | CallRow | MarkRecord


def as_record(item: Built) -> Record:
    """``item`` as a ``Record``: a ``CallRow``'s ``CallRecord``, anything else as it is."""
    return item.record() if isinstance(item, CallRow) else item


#: ``CallRow(values)`` without the frozen dataclass's per-field ``object.__setattr__``.
new_call_row: Final[Callable[..., CallRow]] = _slot_constructor(CallRow)
