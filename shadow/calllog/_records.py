"""The records the call log holds: one per tool call and one per session mark."""

from __future__ import annotations

import dataclasses
import datetime as dt
from dataclasses import dataclass
from typing import Any

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

    def to_row(self) -> dict[str, Any]:
        """The row to insert into ``calls``."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}


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
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}


Record = CallRecord | MarkRecord
