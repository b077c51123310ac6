"""cluster-level events in the outbox, and each cluster's latest schedule timeline

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-22
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    with op.batch_alter_table("outbox_event", schema=None) as batch_op:
        batch_op.alter_column("tenant_id", existing_type=sa.Uuid(), nullable=True)
        batch_op.alter_column("job_id", existing_type=sa.Uuid(), nullable=True)
    op.create_table(
        "cluster_timeline",
        sa.Column("cluster_id", sa.Uuid(), nullable=False),
        sa.Column("sequence", sa.BigInteger(), nullable=False),
        sa.Column("computed_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("document", JSON, nullable=False),
        sa.ForeignKeyConstraint(
            ["cluster_id"], ["cluster.id"], name=op.f("fk_cluster_timeline_cluster_id_cluster"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("cluster_id", name=op.f("pk_cluster_timeline")),
    )


def downgrade() -> None:
    op.drop_table("cluster_timeline")
    op.execute("DELETE FROM outbox_event WHERE job_id IS NULL")
    with op.batch_alter_table("outbox_event", schema=None) as batch_op:
        batch_op.alter_column("job_id", existing_type=sa.Uuid(), nullable=False)
        batch_op.alter_column("tenant_id", existing_type=sa.Uuid(), nullable=False)
