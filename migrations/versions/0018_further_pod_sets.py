"""A job's further pod sets: the job column pod_sets, and a simulated workload's

A job may run several pod sets (a leader and its workers, an MPI launcher and its workers),
admitted together: its own (`pod_count` pods of the job's resources, named "main") and the
further ones, kept as a JSON list in `pod_sets` (name, pod_count, gpu_count, cpu_cores,
memory_gb each). Existing jobs have none: the server default `[]` stays, so a release from before
this one can still write during a rolling upgrade. A simulated workload keeps its further pod sets
the same way (null: none).

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-28
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    with op.batch_alter_table("job", schema=None) as batch:
        batch.add_column(
            sa.Column("pod_sets", JSON, nullable=False, server_default=sa.text("'[]'"))
        )
    with op.batch_alter_table("simulated_workload", schema=None) as batch:
        batch.add_column(sa.Column("pod_sets", sa.JSON, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("simulated_workload", schema=None) as batch:
        batch.drop_column("pod_sets")
    with op.batch_alter_table("job", schema=None) as batch:
        batch.drop_column("pod_sets")
