"""calls.flag_source: where a call's flag came from (database, last_known, env, custom, late).

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-04 17:40:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_COMMENT = ("where the call's flag came from: database, last_known, env, custom; late: served legacy because the "
            "start wait passed before the flags were known")


def upgrade() -> None:
    with op.batch_alter_table("calls") as batch:
        batch.add_column(sa.Column("flag_source", sa.String(length=16), nullable=True, comment=_COMMENT))


def downgrade() -> None:
    with op.batch_alter_table("calls") as batch:
        batch.drop_column("flag_source")
