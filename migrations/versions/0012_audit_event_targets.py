"""The audit trail's targets, one row each

`auditEvents(filter: {target})` looked for a target by reading events in pages and matching
their JSON `targets` in Python: every event older than the matches was read. One row per
(event, target), indexed by target and time, makes it a lookup. Existing events are copied.

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-26
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UTCDateTime = sa.DateTime(timezone=True)
BATCH = 1000


def upgrade() -> None:
    targets = op.create_table(
        "audit_event_target",
        sa.Column("event_id", sa.Uuid, nullable=False),
        sa.Column("target", sa.String(255), nullable=False),
        sa.Column("at", UTCDateTime, nullable=False),
        sa.PrimaryKeyConstraint("event_id", "target", name="pk_audit_event_target"),
    )
    op.create_index(
        "ix_audit_event_target_target_at_event_id",
        "audit_event_target",
        ["target", "at", "event_id"],
    )
    events = sa.table(
        "audit_event",
        sa.column("id", sa.Uuid),
        sa.column("at", UTCDateTime),
        sa.column("targets", sa.JSON),
    )
    conn = op.get_bind()
    rows: list[dict[str, object]] = []
    for event_id, at, named in conn.execute(sa.select(events.c.id, events.c.at, events.c.targets)):
        for target in dict.fromkeys(str(t)[:255] for t in named or ()):
            rows.append({"event_id": event_id, "target": target, "at": at})
        if len(rows) >= BATCH:
            op.bulk_insert(targets, rows)
            rows = []
    if rows:
        op.bulk_insert(targets, rows)


def downgrade() -> None:
    op.drop_index("ix_audit_event_target_target_at_event_id", table_name="audit_event_target")
    op.drop_table("audit_event_target")
