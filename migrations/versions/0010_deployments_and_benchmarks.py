"""Model deployments and LLM benchmarks

A deployment (a model served on a cluster by replica jobs) and a benchmark (a load test of an
endpoint, run as a job without GPUs) are each a row of key columns and a JSON document with the
rest (domain.model.serving_codec); a benchmark's per-request samples are kept in a row of their
own, read only when asked for.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-26
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")
UTCDateTime = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "deployment",
        sa.Column("id", sa.Uuid, primary_key=True),
        sa.Column("tenant_id", sa.Uuid, nullable=False),
        sa.Column("project_id", sa.Uuid, nullable=False),
        sa.Column(
            "cluster_id",
            sa.Uuid,
            sa.ForeignKey(
                "cluster.id", ondelete="CASCADE", name="fk_deployment_cluster_id_cluster"
            ),
            nullable=False,
        ),
        sa.Column("name", sa.String(63), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("document", JSON, nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("created_at", UTCDateTime, nullable=False),
        sa.Column("updated_at", UTCDateTime, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_deployment"),
    )
    op.create_index(
        "ix_deployment_tenant_id_created_at_id", "deployment", ["tenant_id", "created_at", "id"]
    )
    op.create_index(
        "ix_deployment_cluster_id_created_at", "deployment", ["cluster_id", "created_at"]
    )
    op.create_table(
        "benchmark",
        sa.Column("id", sa.Uuid),
        sa.Column("tenant_id", sa.Uuid, nullable=False),
        sa.Column("project_id", sa.Uuid, nullable=False),
        sa.Column(
            "cluster_id",
            sa.Uuid,
            sa.ForeignKey("cluster.id", ondelete="CASCADE", name="fk_benchmark_cluster_id_cluster"),
            nullable=False,
        ),
        sa.Column("deployment_id", sa.Uuid),
        sa.Column("job_id", sa.Uuid, nullable=False),
        sa.Column("name", sa.String(63), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("document", JSON, nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("created_at", UTCDateTime, nullable=False),
        sa.Column("updated_at", UTCDateTime, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_benchmark"),
    )
    op.create_index(
        "ix_benchmark_tenant_id_created_at_id", "benchmark", ["tenant_id", "created_at", "id"]
    )
    op.create_index("ix_benchmark_deployment_id", "benchmark", ["deployment_id"])
    op.create_index("ix_benchmark_job_id", "benchmark", ["job_id"])
    op.create_index("ix_benchmark_status", "benchmark", ["status"])
    op.create_table(
        "benchmark_sample_set",
        sa.Column(
            "benchmark_id",
            sa.Uuid,
            sa.ForeignKey(
                "benchmark.id",
                ondelete="CASCADE",
                name="fk_benchmark_sample_set_benchmark_id_benchmark",
            ),
        ),
        sa.Column("count", sa.Integer, nullable=False),
        sa.Column("samples", JSON, nullable=False),
        sa.PrimaryKeyConstraint("benchmark_id", name="pk_benchmark_sample_set"),
    )


def downgrade() -> None:
    op.drop_table("benchmark_sample_set")
    op.drop_table("benchmark")
    op.drop_table("deployment")
