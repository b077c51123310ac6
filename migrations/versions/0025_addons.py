"""Cluster add-ons (cluster_addon): Kueue, Node Feature Discovery and the NVIDIA GPU Operator as
Helm releases budcluster installs on a cluster, with pinned chart versions

Revision ID: 0025
Revises: 0024
Create Date: 2026-12-02
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0025"
down_revision: str | None = "0024"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UTCDateTime = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "cluster_addon",
        sa.Column("cluster_id", sa.Uuid(), nullable=False),
        sa.Column("addon", sa.String(40), nullable=False),
        sa.Column("state", sa.String(20), nullable=False),
        sa.Column("request_id", sa.String(64), nullable=False),
        sa.Column("requested_at", UTCDateTime, nullable=False),
        sa.Column("requested_by", sa.Text(), nullable=False),
        sa.Column("updated_at", UTCDateTime, nullable=False),
        sa.Column("chart_version", sa.String(40), nullable=False),
        sa.Column("repository", sa.Text(), nullable=False),
        sa.Column("origin", sa.String(20), nullable=True),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["cluster_id"],
            ["cluster.id"],
            name=op.f("fk_cluster_addon_cluster_id_cluster"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("cluster_id", "addon", name=op.f("pk_cluster_addon")),
    )


def downgrade() -> None:
    op.drop_table("cluster_addon")
