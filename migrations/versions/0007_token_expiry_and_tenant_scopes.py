"""Tokens may expire; tenants' tokens lose the operator's clusters:write

`clusters:write` used to be both a tenant's way to make its LocalQueues and the operator's power
over shared ClusterQueues, cohorts, priority classes and clusters. Tenants now make LocalQueues
with `queues:write`, and operator scopes belong to operator tokens only: a token holding
`clusters:write` without `admin` (no operator token could be told apart before) keeps what a
tenant needs (`queues:write`, `clusters:read`) and loses the rest. Issue a new operator token
(`budcluster token create --operator`) where one is needed.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-23
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

JSONDocument = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

tokens = sa.table(
    "api_token", sa.column("id", sa.Uuid), sa.column("scopes", JSONDocument)
)


def upgrade() -> None:
    with op.batch_alter_table("api_token", schema=None) as batch_op:
        batch_op.add_column(sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True))
    conn = op.get_bind()
    for token_id, scopes in conn.execute(sa.select(tokens.c.id, tokens.c.scopes)).all():
        held = set(scopes or [])
        if "clusters:write" in held and "admin" not in held:
            held = (held - {"clusters:write"}) | {"queues:write", "clusters:read"}
            conn.execute(
                tokens.update().where(tokens.c.id == token_id).values(scopes=sorted(held))
            )


def downgrade() -> None:
    with op.batch_alter_table("api_token", schema=None) as batch_op:
        batch_op.drop_column("expires_at")
