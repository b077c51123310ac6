"""simulated workloads know their queue, preemptibility, reservation and flavor

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("simulated_workload", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("namespace", sa.String(length=63), server_default="", nullable=False)
        )
        batch_op.add_column(
            sa.Column(
                "queue_name", sa.String(length=63), server_default="default", nullable=False
            )
        )
        batch_op.add_column(
            sa.Column("preemptible", sa.Boolean(), server_default=sa.false(), nullable=False)
        )
        batch_op.add_column(
            sa.Column("critical", sa.Boolean(), server_default=sa.false(), nullable=False)
        )
        batch_op.add_column(sa.Column("reservation_id", sa.String(length=36), nullable=True))
        batch_op.add_column(
            sa.Column("kind", sa.String(length=20), server_default="workload", nullable=False)
        )
        batch_op.add_column(sa.Column("flavor", sa.String(length=100), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("simulated_workload", schema=None) as batch_op:
        for column in ("flavor", "kind", "reservation_id", "critical", "preemptible",
                       "queue_name", "namespace"):
            batch_op.drop_column(column)
