"""The audit trail

One row per mutation (and per token or key operation of the command line): who, what, the
objects, the input without its secrets, when, and the outcome.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-26
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")
UTCDateTime = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "audit_event",
        sa.Column("id", sa.Uuid, nullable=False),
        sa.Column("at", UTCDateTime, nullable=False),
        sa.Column("tenant_id", sa.Uuid),
        sa.Column("actor", sa.String(120), nullable=False),
        sa.Column("token_id", sa.Uuid),
        sa.Column("operation", sa.String(100), nullable=False),
        sa.Column("targets", JSON, nullable=False),
        sa.Column("input", JSON, nullable=False),
        sa.Column("outcome", sa.String(60), nullable=False),
        sa.Column("source", sa.String(20), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_audit_event"),
    )
    op.create_index(
        "ix_audit_event_tenant_id_at_id", "audit_event", ["tenant_id", "at", "id"]
    )
    op.create_index("ix_audit_event_at_id", "audit_event", ["at", "id"])


def downgrade() -> None:
    op.drop_index("ix_audit_event_at_id", table_name="audit_event")
    op.drop_index("ix_audit_event_tenant_id_at_id", table_name="audit_event")
    op.drop_table("audit_event")
