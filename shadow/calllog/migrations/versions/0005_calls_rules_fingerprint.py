"""calls.rules_fingerprint: a short hash of the rules that translated the call (NULL for calls logged before).

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-06 03:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_COMMENT = "short hash of the rules that translated the call (shadow's version and every rule); NULL before 0.2"


def upgrade() -> None:
    with op.batch_alter_table("calls") as batch:
        batch.add_column(sa.Column("rules_fingerprint", sa.String(length=16), nullable=True, comment=_COMMENT))


def downgrade() -> None:
    with op.batch_alter_table("calls") as batch:
        batch.drop_column("rules_fingerprint")
