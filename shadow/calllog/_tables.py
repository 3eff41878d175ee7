"""The one schema source: SQLAlchemy Core tables of the call log and the flags, with a naming convention."""

from __future__ import annotations

from typing import Final

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    text,
)

NAMING_CONVENTION: Final = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

metadata: Final = MetaData(naming_convention=NAMING_CONVENTION)

#: Server-side insert time (whole seconds on SQLite, microseconds on PostgreSQL); sync re-reads a margin before
#: its watermark, so the coarse SQLite clock and out-of-order commits lose nothing.
_INSERTED_AT = text("CURRENT_TIMESTAMP")
#: A session's events order by (epoch, seq): seq restarts when a process restarts (or evicts an idle session's
#: counter), and the new counter's later epoch keeps the restart from reading as earlier events.
_EPOCH_COMMENT = "microseconds since 1970 when this process started the session's seq counter"
FLAG_SOURCE_COMMENT: Final = ("where the call's flag came from: database, last_known, env, custom; late: served legacy "
                              "because the start wait passed before the flags were known")

RULES_FINGERPRINT_COMMENT: Final = ("short hash of the rules that translated the call (shadow's version and every "
                                     "rule); NULL before 0.2")

calls: Final = Table(
    "calls",
    metadata,
    Column("id", String(36), primary_key=True, comment="UUIDv7: time-ordered and unique"),
    Column("session_id", String(200), nullable=False),
    Column("seq", Integer, nullable=False, comment="position of the call within its session (marks share it)"),
    Column("ts", DateTime(timezone=True), nullable=False, comment="UTC time the call started"),
    Column("tool", String(200), nullable=False),
    Column("mode", String(16), nullable=False, comment="flag mode: shadow or cutover"),
    Column("variant", String(16), nullable=False, comment="what the model was served: legacy or structured"),
    Column("fingerprint", String(64), nullable=False, comment="hash of the canonical JSON of the arguments"),
    Column("arg_hashes", JSON, nullable=True, comment="per top-level argument fingerprint, for repair analysis"),
    Column("args", JSON, nullable=True, comment="arguments, redacted and truncated"),
    Column("outcome", String(16), nullable=False, comment="ok, error or cancelled"),
    Column("legacy_payload", JSON, nullable=True, comment="what the legacy tool produced, redacted and truncated"),
    Column("new_payload", JSON, nullable=True, comment="the structured payload"),
    Column("code", String(32), nullable=True),
    Column("retryable", Boolean, nullable=True),
    Column("next_action", String(16), nullable=True),
    Column("retry_after_ms", BigInteger, nullable=True),
    Column("error_field", String(200), nullable=True, comment="context.field of the error, when it names one"),
    Column("rule", String(200), nullable=True, comment="the rule that produced the error"),
    Column("unmapped", Boolean, nullable=False, default=False),
    Column("schema_valid", Boolean, nullable=False, default=True),
    Column("latency_us", BigInteger, nullable=False, comment="the legacy call's duration in microseconds"),
    Column("process", String(64), nullable=False),
    Column("host", String(255), nullable=False),
    Column("source", String(32), nullable=False, server_default="live", comment="live, proxy or import"),
    Column("inserted_at", DateTime(timezone=True), nullable=False, server_default=_INSERTED_AT),
    Column("epoch", BigInteger, nullable=True, comment=_EPOCH_COMMENT),
    Column("flag_source", String(16), nullable=True, comment=FLAG_SOURCE_COMMENT),
    Column("rules_fingerprint", String(16), nullable=True, comment=RULES_FINGERPRINT_COMMENT),
    Index(None, "session_id", "seq"),
    Index(None, "tool", "ts"),
    Index(None, "inserted_at"),
)

marks: Final = Table(
    "marks",
    metadata,
    Column("id", String(36), primary_key=True),
    Column("session_id", String(200), nullable=False),
    Column("seq", Integer, nullable=False),
    Column("ts", DateTime(timezone=True), nullable=False),
    Column("kind", String(32), nullable=False, comment="user_turn or end"),
    Column("process", String(64), nullable=False),
    Column("host", String(255), nullable=False),
    Column("source", String(32), nullable=False, server_default="live"),
    Column("inserted_at", DateTime(timezone=True), nullable=False, server_default=_INSERTED_AT),
    Column("epoch", BigInteger, nullable=True, comment=_EPOCH_COMMENT),
    Index(None, "session_id", "seq"),
    Index(None, "inserted_at"),
)

writer_stats: Final = Table(
    "writer_stats",
    metadata,
    Column("process", String(64), primary_key=True, comment="the writing process's id"),
    Column("host", String(255), primary_key=True),
    Column("submitted", BigInteger, nullable=False, default=0, comment="records handed to the writer"),
    Column("written", BigInteger, nullable=False, default=0, comment="stored directly"),
    Column("spooled", BigInteger, nullable=False, default=0, comment="kept in the local spool (disk buffer)"),
    Column("replayed", BigInteger, nullable=False, default=0, comment="spooled records stored later"),
    Column("dropped", BigInteger, nullable=False, default=0, comment="lost: queue and spool full, or closed"),
    Column("rejected", BigInteger, nullable=False, default=0, comment="set aside: the store can never accept"),
    Column("failed_builds", BigInteger, nullable=False, default=0),
    Column("started_at", DateTime(timezone=True), nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
)

flags: Final = Table(
    "flags",
    metadata,
    Column("tool", String(200), primary_key=True, comment="a tool name, or '*' for the global kill switch"),
    Column("mode", String(16), nullable=False, comment="legacy, shadow or cutover ('killed' for '*')"),
    Column("percent", Integer, nullable=False, default=100),
    Column("updated_at", DateTime(timezone=True), nullable=False),
    Column("updated_by", String(200), nullable=False),
)

flag_audit: Final = Table(
    "flag_audit",
    metadata,
    Column("id", String(36), primary_key=True),
    Column("tool", String(200), nullable=False),
    Column("old_mode", String(16), nullable=True),
    Column("old_percent", Integer, nullable=True),
    Column("new_mode", String(16), nullable=False),
    Column("new_percent", Integer, nullable=False),
    Column("actor", String(200), nullable=False),
    Column("reason", Text, nullable=True),
    Column("ts", DateTime(timezone=True), nullable=False),
    Index(None, "tool", "ts"),
)
