"""Leases in the database

The watch lease of each cluster (which process runs its loop) moves from Redis to PostgreSQL, the
source of truth: a cluster's admissions and completions go on while Redis is down.

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-27
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UTCDateTime = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "lease",
        sa.Column("name", sa.String(200), primary_key=True),
        sa.Column("holder", sa.String(200), nullable=False),
        sa.Column("expires_at", UTCDateTime, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("lease")
