"""A job's attempt has one name: the job column retry_count becomes attempt

The entity called it `retry_count` and derived `attempt` from it; both said the same (issue 28).
The GraphQL contract keeps both fields (retryCount is the attempt).

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-27
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("job", schema=None) as batch:
        batch.alter_column("retry_count", new_column_name="attempt")


def downgrade() -> None:
    with op.batch_alter_table("job", schema=None) as batch:
        batch.alter_column("attempt", new_column_name="retry_count")
