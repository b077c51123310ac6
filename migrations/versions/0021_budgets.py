"""Project and tenant budgets per period (budget), and budget holds on jobs (job.held_by,
job.hold_reason)

A budget is keyed by its tenant and project ('-': the whole tenant). A job a budget holds stays
PENDING with held_by set (JOB, PROJECT or TENANT) and the reason in hold_reason, and is not
handed to its cluster until released.

Revision ID: 0021
Revises: 0020
Create Date: 2026-11-28
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0021"
down_revision: str | None = "0020"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("job", schema=None) as batch:
        batch.add_column(sa.Column("held_by", sa.String(10)))
        batch.add_column(sa.Column("hold_reason", sa.Text))
    op.create_table(
        "budget",
        sa.Column("key", sa.String(80), primary_key=True),
        sa.Column("tenant_id", sa.Uuid, nullable=False),
        sa.Column("project_id", sa.Uuid),
        sa.Column("limit", sa.Numeric(14, 4), nullable=False),
        sa.Column("action", sa.String(10), nullable=False),
        sa.Column("period", sa.String(10), nullable=False),
        sa.Column("alerted", sa.Integer, nullable=False, server_default="0"),
        sa.Column("alerted_period", sa.Date),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_budget_tenant_id", "budget", ["tenant_id"])


def downgrade() -> None:
    op.drop_table("budget")
    with op.batch_alter_table("job", schema=None) as batch:
        batch.drop_column("hold_reason")
        batch.drop_column("held_by")
