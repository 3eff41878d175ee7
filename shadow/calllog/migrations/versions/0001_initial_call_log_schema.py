"""The initial call log schema: calls, marks, flags and flag_audit, as shadow/calllog/_tables.py defined them then.

Revision ID: 0001
Revises:
Create Date: 2026-12-01 07:13:12
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "calls",
        sa.Column("id", sa.String(length=36), nullable=False, comment="UUIDv7: time-ordered and unique"),
        sa.Column("session_id", sa.String(length=200), nullable=False),
        sa.Column(
            "seq", sa.Integer(), nullable=False, comment="position of the call within its session (marks share it)"
        ),
        sa.Column("ts", sa.DateTime(timezone=True), nullable=False, comment="UTC time the call started"),
        sa.Column("tool", sa.String(length=200), nullable=False),
        sa.Column("mode", sa.String(length=16), nullable=False, comment="flag mode: shadow or cutover"),
        sa.Column(
            "variant", sa.String(length=16), nullable=False, comment="what the model was served: legacy or structured"
        ),
        sa.Column(
            "fingerprint", sa.String(length=64), nullable=False, comment="hash of the canonical JSON of the arguments"
        ),
        sa.Column(
            "arg_hashes", sa.JSON(), nullable=True, comment="per top-level argument fingerprint, for repair analysis"
        ),
        sa.Column("args", sa.JSON(), nullable=True, comment="arguments, redacted and truncated"),
        sa.Column("outcome", sa.String(length=8), nullable=False, comment="ok or error"),
        sa.Column(
            "legacy_payload", sa.JSON(), nullable=True, comment="what the legacy tool produced, redacted and truncated"
        ),
        sa.Column("new_payload", sa.JSON(), nullable=True, comment="the structured payload"),
        sa.Column("code", sa.String(length=32), nullable=True),
        sa.Column("retryable", sa.Boolean(), nullable=True),
        sa.Column("next_action", sa.String(length=16), nullable=True),
        sa.Column("retry_after_ms", sa.BigInteger(), nullable=True),
        sa.Column(
            "error_field", sa.String(length=200), nullable=True, comment="context.field of the error, when it names one"
        ),
        sa.Column("rule", sa.String(length=200), nullable=True, comment="the rule that produced the error"),
        sa.Column("unmapped", sa.Boolean(), nullable=False),
        sa.Column("schema_valid", sa.Boolean(), nullable=False),
        sa.Column("latency_us", sa.BigInteger(), nullable=False, comment="the legacy call's duration in microseconds"),
        sa.Column("process", sa.String(length=64), nullable=False),
        sa.Column("host", sa.String(length=255), nullable=False),
        sa.Column(
            "source", sa.String(length=32), server_default="live", nullable=False, comment="live, proxy or import"
        ),
        sa.Column(
            "inserted_at", sa.DateTime(timezone=True), server_default=sa.text("CURRENT_TIMESTAMP"), nullable=False
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_calls")),
    )
    op.create_index(op.f("ix_calls_inserted_at"), "calls", ["inserted_at"], unique=False)
    op.create_index(op.f("ix_calls_session_id_seq"), "calls", ["session_id", "seq"], unique=False)
    op.create_index(op.f("ix_calls_tool_ts"), "calls", ["tool", "ts"], unique=False)

    op.create_table(
        "flag_audit",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("tool", sa.String(length=200), nullable=False),
        sa.Column("old_mode", sa.String(length=16), nullable=True),
        sa.Column("old_percent", sa.Integer(), nullable=True),
        sa.Column("new_mode", sa.String(length=16), nullable=False),
        sa.Column("new_percent", sa.Integer(), nullable=False),
        sa.Column("actor", sa.String(length=200), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("ts", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_flag_audit")),
    )
    op.create_index(op.f("ix_flag_audit_tool_ts"), "flag_audit", ["tool", "ts"], unique=False)

    op.create_table(
        "flags",
        sa.Column(
            "tool", sa.String(length=200), nullable=False, comment="a tool name, or '*' for the global kill switch"
        ),
        sa.Column("mode", sa.String(length=16), nullable=False, comment="legacy, shadow or cutover ('killed' for '*')"),
        sa.Column("percent", sa.Integer(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_by", sa.String(length=200), nullable=False),
        sa.PrimaryKeyConstraint("tool", name=op.f("pk_flags")),
    )
    op.create_table(
        "marks",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("session_id", sa.String(length=200), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("ts", sa.DateTime(timezone=True), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False, comment="user_turn or end"),
        sa.Column("process", sa.String(length=64), nullable=False),
        sa.Column("host", sa.String(length=255), nullable=False),
        sa.Column("source", sa.String(length=32), server_default="live", nullable=False),
        sa.Column(
            "inserted_at", sa.DateTime(timezone=True), server_default=sa.text("CURRENT_TIMESTAMP"), nullable=False
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_marks")),
    )
    op.create_index(op.f("ix_marks_inserted_at"), "marks", ["inserted_at"], unique=False)
    op.create_index(op.f("ix_marks_session_id_seq"), "marks", ["session_id", "seq"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_flag_audit_tool_ts"), table_name="flag_audit")
    op.drop_table("flag_audit")
    op.drop_table("flags")
    op.drop_index(op.f("ix_marks_session_id_seq"), table_name="marks")
    op.drop_index(op.f("ix_marks_inserted_at"), table_name="marks")
    op.drop_table("marks")
    op.drop_index(op.f("ix_calls_tool_ts"), table_name="calls")
    op.drop_index(op.f("ix_calls_session_id_seq"), table_name="calls")
    op.drop_index(op.f("ix_calls_inserted_at"), table_name="calls")
    op.drop_table("calls")
