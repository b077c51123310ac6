"""Kueue's remaining quota settings: borrowWithinCohort, flavorFungibility, fair sharing, cohort trees

A ClusterQueue gains its preemption's borrow_within_cohort (a document: policy and
max_priority_threshold), its flavor fungibility (when_can_borrow, when_can_preempt) and its
fair_sharing_weight; a cohort gains its parent, its own resource_groups and its
fair_sharing_weight; a cluster's quota_settings (one row, or none: the defaults) holds whether its
Kueue runs fair sharing. Existing rows get Kueue's defaults, through server defaults that stay, so
a release from before this one can still write during a rolling upgrade (issue 29).

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-28
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    with op.batch_alter_table("cluster_queue", schema=None) as batch:
        batch.add_column(
            sa.Column(
                "borrow_within_cohort",
                JSON,
                nullable=False,
                server_default=sa.text("""'{"policy": "Never"}'"""),
            )
        )
        batch.add_column(
            sa.Column(
                "when_can_borrow", sa.String(30), nullable=False, server_default="MayStopSearch"
            )
        )
        batch.add_column(
            sa.Column(
                "when_can_preempt", sa.String(30), nullable=False, server_default="TryNextFlavor"
            )
        )
        batch.add_column(
            sa.Column("fair_sharing_weight", sa.Float(), nullable=False, server_default="1")
        )
    with op.batch_alter_table("cohort", schema=None) as batch:
        batch.add_column(sa.Column("parent", sa.String(63), nullable=True))
        batch.add_column(
            sa.Column("resource_groups", JSON, nullable=False, server_default=sa.text("'[]'"))
        )
        batch.add_column(
            sa.Column("fair_sharing_weight", sa.Float(), nullable=False, server_default="1")
        )
    op.create_table(
        "quota_settings",
        sa.Column("cluster_id", sa.Uuid(), nullable=False),
        sa.Column("fair_sharing", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.ForeignKeyConstraint(
            ["cluster_id"],
            ["cluster.id"],
            name=op.f("fk_quota_settings_cluster_id_cluster"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("cluster_id", name=op.f("pk_quota_settings")),
    )


def downgrade() -> None:
    op.drop_table("quota_settings")
    with op.batch_alter_table("cohort", schema=None) as batch:
        batch.drop_column("fair_sharing_weight")
        batch.drop_column("resource_groups")
        batch.drop_column("parent")
    with op.batch_alter_table("cluster_queue", schema=None) as batch:
        batch.drop_column("fair_sharing_weight")
        batch.drop_column("when_can_preempt")
        batch.drop_column("when_can_borrow")
        batch.drop_column("borrow_within_cohort")
