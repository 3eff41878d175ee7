"""writer_stats: each process's writer counters (submitted, written, spooled, replayed, dropped, rejected).

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01 15:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "writer_stats",
        sa.Column("process", sa.String(length=64), nullable=False, comment="the writing process's id"),
        sa.Column("host", sa.String(length=255), nullable=False),
        sa.Column("submitted", sa.BigInteger(), nullable=False, comment="records handed to the writer"),
        sa.Column("written", sa.BigInteger(), nullable=False, comment="stored directly"),
        sa.Column("spooled", sa.BigInteger(), nullable=False, comment="kept in the local spool (disk buffer)"),
        sa.Column("replayed", sa.BigInteger(), nullable=False, comment="spooled records stored later"),
        sa.Column("dropped", sa.BigInteger(), nullable=False, comment="lost: queue and spool full, or closed"),
        sa.Column("rejected", sa.BigInteger(), nullable=False, comment="set aside: the store can never accept"),
        sa.Column("failed_builds", sa.BigInteger(), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("process", "host", name=op.f("pk_writer_stats")),
    )


def downgrade() -> None:
    op.drop_table("writer_stats")
