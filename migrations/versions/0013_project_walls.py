"""Walls between a tenant's projects, and the operator's reach

An audit event records the project of what it acted on (`audit_event.project_id`), so a token
limited to projects reads only its projects' events; events recorded before have none, and such a
token reads of them only its own. An idempotency key is unique per (tenant, project), not per
tenant: a key used in one project is unused in the others, so a token limited to projects cannot
learn by a collision what another project submitted. Every tenant's jobs are listed for the
operator newest first from an index of their own (`ix_job_created_at_id`).

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-28
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("audit_event", schema=None) as batch_op:
        batch_op.add_column(sa.Column("project_id", sa.Uuid, nullable=True))
    with op.batch_alter_table("job", schema=None) as batch_op:
        batch_op.drop_constraint("uq_job_tenant_id_idempotency_key", type_="unique")
        batch_op.create_unique_constraint(
            "uq_job_tenant_id_project_id_idempotency_key",
            ["tenant_id", "project_id", "idempotency_key"],
        )
        batch_op.create_index("ix_job_created_at_id", ["created_at", "id"])


def downgrade() -> None:
    """Fails if a key is now used in two projects of one tenant (as it should: it would lose
    one of them its meaning)."""
    with op.batch_alter_table("job", schema=None) as batch_op:
        batch_op.drop_index("ix_job_created_at_id")
        batch_op.drop_constraint("uq_job_tenant_id_project_id_idempotency_key", type_="unique")
        batch_op.create_unique_constraint(
            "uq_job_tenant_id_idempotency_key", ["tenant_id", "idempotency_key"]
        )
    with op.batch_alter_table("audit_event", schema=None) as batch_op:
        batch_op.drop_column("project_id")
