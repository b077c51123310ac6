"""Metering and job budgets: GPU prices with a history (gpu_price), one row per metered run and UTC
day (job_usage), and a job's budget action and the share of its budget already said (job)

A price change is a new gpu_price row from its moment on; a run's cost is worked out with the
prices in force while it ran, in the transaction that records its end, and kept in job_usage
beside the job's actual_cost (the sum over its runs). Runs that ended before this release were
not metered: their jobs keep an empty actual_cost.

Revision ID: 0020
Revises: 0019
Create Date: 2026-11-27
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0020"
down_revision: str | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _id() -> sa.Column[int]:
    return sa.Column(
        "id",
        sa.BigInteger().with_variant(sa.Integer, "sqlite"),
        primary_key=True,
        autoincrement=True,
    )


def upgrade() -> None:
    with op.batch_alter_table("job", schema=None) as batch:
        batch.add_column(
            sa.Column("budget_action", sa.String(10), nullable=False, server_default="WARN")
        )
        batch.add_column(
            sa.Column("budget_alerted", sa.Integer, nullable=False, server_default="0")
        )
    op.create_table(
        "gpu_price",
        _id(),
        sa.Column(
            "cluster_id",
            sa.Uuid,
            sa.ForeignKey("cluster.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("gpu_type", sa.String(100), nullable=False),
        sa.Column("hourly", sa.Numeric(14, 4), nullable=False),
        sa.Column("since", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index(
        "ix_gpu_price_cluster_id_gpu_type_since", "gpu_price", ["cluster_id", "gpu_type", "since"]
    )
    op.create_table(
        "job_usage",
        _id(),
        sa.Column("job_id", sa.Uuid, nullable=False),
        sa.Column("attempt", sa.Integer, nullable=False),
        sa.Column("tenant_id", sa.Uuid, nullable=False),
        sa.Column("project_id", sa.Uuid, nullable=False),
        sa.Column("cluster_id", sa.Uuid, nullable=False),
        sa.Column("job_type", sa.String(20), nullable=False),
        sa.Column("gpu_type", sa.String(100)),
        sa.Column("gpus", sa.Integer, nullable=False),
        sa.Column("cpu_cores", sa.Float, nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("day", sa.Date, nullable=False),
        sa.Column("seconds", sa.Float, nullable=False),
        sa.Column("outcome", sa.String(20), nullable=False),
        sa.Column("cost", sa.Numeric(14, 4), nullable=False),
    )
    op.create_index("ix_job_usage_job_id", "job_usage", ["job_id"])
    op.create_index("ix_job_usage_tenant_id_day", "job_usage", ["tenant_id", "day"])
    op.create_index("ix_job_usage_day", "job_usage", ["day"])


def downgrade() -> None:
    op.drop_table("job_usage")
    op.drop_table("gpu_price")
    with op.batch_alter_table("job", schema=None) as batch:
        batch.drop_column("budget_alerted")
        batch.drop_column("budget_action")
