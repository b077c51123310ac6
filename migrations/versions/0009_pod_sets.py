"""Jobs wider than one node: a job's pod set (`pod_count` pods of `gpu_count` GPUs each)

A job runs `pod_count` identical pods, admitted all or nothing and each placed on one node (a
Kueue pod set). Existing jobs and simulated workloads are one pod. A job's `placement` column
keeps one object for one pod and holds a list for several; a simulated workload keeps its first
pod in `node`/`gpu_indices` and the others in `other_pods`.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-26
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("job", schema=None) as batch_op:
        batch_op.add_column(sa.Column("pod_count", sa.Integer, nullable=False, server_default="1"))
    with op.batch_alter_table("simulated_workload", schema=None) as batch_op:
        batch_op.add_column(sa.Column("pod_count", sa.Integer, nullable=False, server_default="1"))
        batch_op.add_column(sa.Column("other_pods", sa.JSON))


def downgrade() -> None:
    with op.batch_alter_table("simulated_workload", schema=None) as batch_op:
        batch_op.drop_column("other_pods")
        batch_op.drop_column("pod_count")
    with op.batch_alter_table("job", schema=None) as batch_op:
        batch_op.drop_column("pod_count")
