"""Cluster add-on upgrades: a request may upgrade budcluster's own release of an add-on to the
pinned version (cluster_addon.upgrade_from: the version it upgrades, which runs until it is done)

Revision ID: 0026
Revises: 0025
Create Date: 2026-12-03
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0026"
down_revision: str | None = "0025"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("cluster_addon") as batch:
        batch.add_column(sa.Column("upgrade_from", sa.String(40), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("cluster_addon") as batch:
        batch.drop_column("upgrade_from")
