"""Tenant secrets (tenant_secret): named, sealed, never returned; what jobs and deployments
refer to by name (job.secrets), and what a simulated workload's pods say they read of them
(simulated_workload.mounts: names and lengths, never values)

Revision ID: 0024
Revises: 0023
Create Date: 2026-12-02
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

JSONDocument = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
UTCDateTime = sa.DateTime(timezone=True)

revision: str = "0024"
down_revision: str | None = "0023"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "tenant_secret",
        sa.Column("id", sa.Uuid, primary_key=True),
        sa.Column("tenant_id", sa.Uuid, nullable=False),
        sa.Column("name", sa.String(63), nullable=False),
        sa.Column("keys", JSONDocument, nullable=False),
        sa.Column("sealed", sa.Text, nullable=False),
        sa.Column("created_at", UTCDateTime, nullable=False),
        sa.Column("updated_at", UTCDateTime, nullable=False),
        sa.Column("created_by", sa.Text, nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("last_used_at", UTCDateTime),
        sa.UniqueConstraint("tenant_id", "name", name="uq_tenant_secret_tenant_id_name"),
    )
    with op.batch_alter_table("job", schema=None) as batch:
        batch.add_column(
            sa.Column("secrets", JSONDocument, nullable=False, server_default=sa.text("'[]'"))
        )
    with op.batch_alter_table("simulated_workload", schema=None) as batch:
        batch.add_column(sa.Column("mounts", sa.JSON))


def downgrade() -> None:
    with op.batch_alter_table("simulated_workload", schema=None) as batch:
        batch.drop_column("mounts")
    with op.batch_alter_table("job", schema=None) as batch:
        batch.drop_column("secrets")
    op.drop_table("tenant_secret")
