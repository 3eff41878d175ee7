"""The warehouse's tables: which call-log tables it mirrors, their DuckDB types, and the hashes that version them."""

from __future__ import annotations

import hashlib
from typing import Any, Final

from sqlalchemy import JSON, BigInteger, Boolean, Column, DateTime, Integer, String, Table, Text

from shadow.analytics import _sql as sql
from shadow.calllog import _tables as tables

#: The call-log tables mirrored row by row (append-only, synced incrementally by ``inserted_at``).
LOG_TABLES: Final = (tables.calls, tables.marks)
#: Small tables copied whole on every sync.
SMALL_TABLES: Final = (tables.flags, tables.flag_audit, tables.writer_stats)
#: Tables computed in the warehouse from the mirrored ones, by the SQL model of the same name.
DERIVED: Final = ("flag_periods", "error_followups", "session_counters")
STATE_TABLE: Final = "_shadow_sync"
#: Columns of unique, high-entropy text (UUIDv7 ids, SHA-256 argument fingerprints) that a sync stores uncompressed:
#: DuckDB's dictionary and FSST compression halves them at most, and was the costliest part of the insert. For a
#: million UUIDv7 ids and SHA-256 fingerprints: 0.48 CPU seconds to insert instead of 1.62, for 51 MiB more on disk.
UNCOMPRESSED: Final = frozenset({("calls", "id"), ("calls", "fingerprint"), ("marks", "id")})


def duck_type(column: Column[Any]) -> str:
    """The DuckDB type of a call-log column."""
    kind = column.type
    if isinstance(kind, JSON):
        return "JSON"
    if isinstance(kind, DateTime):
        return "TIMESTAMP"  # UTC, without a zone: days and hours mean UTC everywhere
    if isinstance(kind, Boolean):
        return "BOOLEAN"
    if isinstance(kind, BigInteger):
        return "BIGINT"
    if isinstance(kind, Integer):
        return "INTEGER"
    if isinstance(kind, String | Text):
        return "VARCHAR"
    raise TypeError(f"no DuckDB type for column {column.table.name}.{column.name} of type {kind!r}")


def ddl(table: Table, name: str | None = None, *, storage: bool = False) -> str:
    """``CREATE TABLE`` of ``table`` in the warehouse (under ``name``, default its own).

    ``storage`` adds how a column is stored (``UNCOMPRESSED``); that is not part of the schema's hash, so a
    warehouse built before it needs no rebuild.
    """
    cols = ", ".join(f'"{c.name}" {duck_type(c)}'
                     + (" USING COMPRESSION uncompressed" if storage and (table.name, c.name) in UNCOMPRESSED else "")
                     for c in table.columns)
    return f'CREATE TABLE "{name or table.name}" ({cols})'


def insert_from_arrow(table: Table, source: str, text_times: frozenset[str] = frozenset()) -> str:
    """``SELECT`` turning the columns of an Arrow stream (text, integers, times) into the warehouse types.

    ``text_times`` names the time columns that arrive as text (SQLite's); the others are Arrow timestamps in UTC.
    """
    parts = []
    for c in table.columns:
        kind = duck_type(c)
        if kind == "TIMESTAMP" and c.name in text_times:  # SQLite text, with or without an offset
            parts.append(f'CAST(CAST("{c.name}" AS TIMESTAMPTZ) AS TIMESTAMP)')
        else:
            parts.append(f'CAST("{c.name}" AS {kind})')
    return f"SELECT {', '.join(parts)} FROM {source}"


def schema_hash() -> str:
    """A hash of the mirrored tables' warehouse schema: a change needs ``--rebuild``."""
    text = ";".join(ddl(t) for t in (*LOG_TABLES, *SMALL_TABLES))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def models_hash() -> str:
    """A hash of the derived tables' SQL: a change recomputes them from the warehouse (no re-read)."""
    text = ";".join(sql.load(name) for name in DERIVED)
    return hashlib.sha256(text.encode()).hexdigest()[:16]
