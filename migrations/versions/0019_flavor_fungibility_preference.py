"""A ClusterQueue's flavor fungibility preference: the cluster_queue column fungibility_preference

Kueue's FlavorFungibility.preference (BorrowingOverPreemption or PreemptionOverBorrowing: which a
workload prefers when every flavor it may take needs borrowing or preemption), allowed only with
whenCanBorrow and whenCanPreempt both TryNextFlavor. Nullable, without a server default: null is
Kueue's default (no preference set, BorrowingOverPreemption), what existing rows and a release from
before this one, writing during a rolling upgrade, give.

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-28
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0019"
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("cluster_queue", schema=None) as batch:
        batch.add_column(sa.Column("fungibility_preference", sa.String(30), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("cluster_queue", schema=None) as batch:
        batch.drop_column("fungibility_preference")
