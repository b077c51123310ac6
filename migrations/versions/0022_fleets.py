"""Fleets of clusters (fleet), their jobs' moves (job_move), and a job's fleet (job.fleet_id,
job.moves, job.withdraw_from, job.dispatched_via)

A fleet groups member clusters behind one ClusterQueue and LocalQueue name; a job submitted to it
runs on one member and may move to another before admission. A move is one row of job_move. A
fleet with a MultiKueue manager cluster dispatches its jobs through it (job.dispatched_via).

Revision ID: 0022
Revises: 0021
Create Date: 2026-12-02
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

JSONDocument = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
UTCDateTime = sa.DateTime(timezone=True)

revision: str = "0022"
down_revision: str | None = "0021"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("job", schema=None) as batch:
        batch.add_column(sa.Column("fleet_id", sa.Uuid))
        batch.add_column(sa.Column("moves", sa.Integer, nullable=False, server_default="0"))
        batch.add_column(sa.Column("withdraw_from", sa.Uuid))
        batch.add_column(sa.Column("dispatched_via", sa.Uuid))
    op.create_table(
        "fleet",
        sa.Column("id", sa.Uuid, primary_key=True),
        sa.Column("name", sa.String(63), nullable=False),
        sa.Column("members", JSONDocument, nullable=False),
        sa.Column("cluster_queue", sa.String(63), nullable=False),
        sa.Column("local_queue", sa.String(63), nullable=False),
        sa.Column("move_threshold_seconds", sa.Integer, nullable=False),
        sa.Column("max_moves", sa.Integer, nullable=False),
        sa.Column("manager_cluster_id", sa.Uuid),
        sa.Column("created_at", UTCDateTime, nullable=False),
        sa.Column("updated_at", UTCDateTime, nullable=False),
        sa.Column("plan", JSONDocument),
        sa.Column("planned_at", UTCDateTime),
        sa.UniqueConstraint("name", name="uq_fleet_name"),
    )
    op.create_table(
        "job_move",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer, "sqlite"),
            primary_key=True,
            autoincrement=True,
        ),
        sa.Column(
            "job_id",
            sa.Uuid,
            sa.ForeignKey("job.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("attempt", sa.Integer, nullable=False),
        sa.Column("from_cluster", sa.Uuid, nullable=False),
        sa.Column("to_cluster", sa.Uuid, nullable=False),
        sa.Column("at", UTCDateTime, nullable=False),
        sa.Column("reason", sa.Text, nullable=False),
    )
    op.create_index("ix_job_move_job_id", "job_move", ["job_id"])


def downgrade() -> None:
    op.drop_table("job_move")
    op.drop_table("fleet")
    with op.batch_alter_table("job", schema=None) as batch:
        batch.drop_column("dispatched_via")
        batch.drop_column("withdraw_from")
        batch.drop_column("moves")
        batch.drop_column("fleet_id")
