"""Drains (drain), the grace period a job declares (job.termination_grace_seconds), and when a
simulated workload's stop request is due (simulated_workload.request_due: after its grace), and the
last log lines of a failed attempt (job_log_tail)

A drain takes a node, or a whole cluster (node NULL), out of service: nothing new is admitted
there and what ran there leaves it, each job given its grace period after SIGTERM.

Revision ID: 0023
Revises: 0022
Create Date: 2026-12-02
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

JSONDocument = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
UTCDateTime = sa.DateTime(timezone=True)

revision: str = "0023"
down_revision: str | None = "0022"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("job", schema=None) as batch:
        batch.add_column(sa.Column("termination_grace_seconds", sa.Integer))
    op.create_table(
        "drain",
        sa.Column("id", sa.Uuid, primary_key=True),
        sa.Column(
            "cluster_id",
            sa.Uuid,
            sa.ForeignKey("cluster.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("node", sa.String(253)),
        sa.Column("reason", sa.Text, nullable=False),
        sa.Column("started_at", UTCDateTime, nullable=False),
        sa.Column("started_by", sa.Text, nullable=False),
        sa.Column("evictions_end", UTCDateTime, nullable=False),
        sa.Column("replacing", sa.Integer, nullable=False, server_default="0"),
        sa.Column("drained_at", UTCDateTime),
        sa.Column("ended_at", UTCDateTime),
        sa.Column("blocked", JSONDocument, nullable=False),
    )
    op.create_index("ix_drain_cluster_id", "drain", ["cluster_id"])
    with op.batch_alter_table("simulated_workload", schema=None) as batch:
        batch.add_column(sa.Column("request_due", sa.Float))
    op.create_table(
        "job_log_tail",
        sa.Column(
            "job_id",
            sa.Uuid,
            sa.ForeignKey("job.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("attempt", sa.Integer, primary_key=True),
        sa.Column("lines", JSONDocument, nullable=False),
        sa.Column("kept_at", UTCDateTime, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("job_log_tail")
    with op.batch_alter_table("simulated_workload", schema=None) as batch:
        batch.drop_column("request_due")
    op.drop_table("drain")
    with op.batch_alter_table("job", schema=None) as batch:
        batch.drop_column("termination_grace_seconds")
