"""A simulated cluster's admission loop is fenced by its holder's generation

Whoever runs a simulated cluster's admission loop claims the next generation here when it starts;
each admission step commits only while its generation is still the newest, so a process that
lost its lease (a Redis restart, a pause longer than the lease) cannot write over its successor.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-24
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "simulated_fence",
        sa.Column("cluster_id", sa.Uuid, primary_key=True),
        sa.Column("generation", sa.BigInteger, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("simulated_fence")
