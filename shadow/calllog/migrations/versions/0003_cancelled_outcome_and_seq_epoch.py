"""outcome 'cancelled' (the column widened to 16 characters), and the seq counter's epoch on calls and marks.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01 15:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_EPOCH_COMMENT = "microseconds since 1970 when this process started the session's seq counter"


def upgrade() -> None:
    with op.batch_alter_table("calls") as batch:
        batch.alter_column("outcome", existing_type=sa.String(length=8), type_=sa.String(length=16),
                           existing_nullable=False, comment="ok, error or cancelled", existing_comment="ok or error")
        batch.add_column(sa.Column("epoch", sa.BigInteger(), nullable=True, comment=_EPOCH_COMMENT))
    with op.batch_alter_table("marks") as batch:
        batch.add_column(sa.Column("epoch", sa.BigInteger(), nullable=True, comment=_EPOCH_COMMENT))


def downgrade() -> None:
    with op.batch_alter_table("marks") as batch:
        batch.drop_column("epoch")
    with op.batch_alter_table("calls") as batch:
        batch.drop_column("epoch")
        batch.alter_column("outcome", existing_type=sa.String(length=16), type_=sa.String(length=8),
                           existing_nullable=False, comment="ok or error", existing_comment="ok, error or cancelled")
