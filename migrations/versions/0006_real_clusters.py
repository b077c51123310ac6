"""Real clusters: the sealed kubeconfig, connection state and health; the node inventory

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-22
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

JSONDocument = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("cluster", schema=None) as batch_op:
        batch_op.add_column(sa.Column("configuration", sa.Text(), nullable=True))
        batch_op.add_column(sa.Column("context", sa.String(length=253), nullable=True))
        batch_op.add_column(sa.Column("server_url", sa.Text(), nullable=True))
        batch_op.add_column(sa.Column("ingress_url", sa.Text(), nullable=True))
        batch_op.add_column(
            sa.Column(
                "enable_master_node", sa.Boolean(), server_default=sa.false(), nullable=False
            )
        )
        batch_op.add_column(sa.Column("not_available_since", sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column("last_retry_time", sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(
            sa.Column("retry_attempt", sa.Integer(), server_default="0", nullable=False)
        )
        batch_op.add_column(sa.Column("last_sync_at", sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column("health", JSONDocument, nullable=True))
        batch_op.add_column(sa.Column("health_checked_at", sa.DateTime(timezone=True), nullable=True))
    with op.batch_alter_table("cluster_node_info", schema=None) as batch_op:
        batch_op.add_column(sa.Column("internal_ip", sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column("taints", JSONDocument, nullable=True))
        batch_op.add_column(sa.Column("conditions", JSONDocument, nullable=True))
        batch_op.add_column(sa.Column("allocatable", JSONDocument, nullable=True))
        batch_op.add_column(sa.Column("capacity", JSONDocument, nullable=True))
        batch_op.add_column(
            sa.Column("nfd_detected", sa.Boolean(), server_default=sa.false(), nullable=False)
        )
        batch_op.add_column(
            sa.Column(
                "detection_method",
                sa.String(length=20),
                server_default="allocatable",
                nullable=False,
            )
        )
        batch_op.add_column(
            sa.Column("excluded", sa.Boolean(), server_default=sa.false(), nullable=False)
        )


def downgrade() -> None:
    with op.batch_alter_table("cluster_node_info", schema=None) as batch_op:
        for column in (
            "excluded",
            "detection_method",
            "nfd_detected",
            "capacity",
            "allocatable",
            "conditions",
            "taints",
            "internal_ip",
        ):
            batch_op.drop_column(column)
    with op.batch_alter_table("cluster", schema=None) as batch_op:
        for column in (
            "health_checked_at",
            "health",
            "last_sync_at",
            "retry_attempt",
            "last_retry_time",
            "not_available_since",
            "enable_master_node",
            "ingress_url",
            "server_url",
            "context",
            "configuration",
        ):
            batch_op.drop_column(column)
