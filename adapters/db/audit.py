"""The audit trail's table: written in the transaction of the change it records."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from adapters.db.tables import audit_events
from domain.model.audit import AuditCursor, AuditEvent, AuditFilter, AuditPage
from domain.model.ids import TenantId

WROTE = "budcluster_audited_write"
"""Set in a connection's info when it wrote while an audited mutation was current."""


class SqlAuditRepository:
    def __init__(self, conn: AsyncConnection) -> None:
        self._conn = conn

    async def add(self, event: AuditEvent) -> None:
        await self._conn.execute(
            audit_events.insert().values(
                id=event.id,
                at=event.at,
                tenant_id=event.tenant_id,
                actor=event.actor,
                token_id=event.token_id,
                operation=event.operation,
                targets=list(event.targets),
                input=event.input,
                outcome=event.outcome,
                source=event.source,
            )
        )

    async def settle(self, event_id: uuid.UUID, outcome: str, targets: Sequence[str]) -> None:
        await self._conn.execute(
            audit_events.update()
            .where(audit_events.c.id == event_id)
            .values(outcome=outcome, targets=list(targets))
        )

    async def page(
        self,
        audit_filter: AuditFilter,
        *,
        tenant_id: TenantId | None,
        first: int,
        after: AuditCursor | None = None,
    ) -> AuditPage:
        t = audit_events.c
        stmt = sa.select(audit_events)
        if tenant_id is not None:
            stmt = stmt.where(t.tenant_id == tenant_id)
        if audit_filter.operations:
            stmt = stmt.where(t.operation.in_(list(audit_filter.operations)))
        if audit_filter.actor:
            stmt = stmt.where(t.actor == audit_filter.actor)
        if audit_filter.outcome:
            stmt = stmt.where(t.outcome == audit_filter.outcome)
        if audit_filter.since:
            stmt = stmt.where(t.at >= audit_filter.since)
        if audit_filter.until:
            stmt = stmt.where(t.at < audit_filter.until)
        if after is not None:
            stmt = stmt.where(
                sa.or_(t.at < after.at, sa.and_(t.at == after.at, t.id < after.event_id))
            )
        stmt = stmt.order_by(t.at.desc(), t.id.desc())
        wanted = audit_filter.target
        events: list[AuditEvent] = []
        has_next = False
        # A target is matched in Python (JSON arrays differ between SQLite and PostgreSQL):
        # read in pages until `first` matched or the rows ran out.
        offset, batch = 0, max(first + 1, 100) if wanted else first + 1
        while True:
            rows = (await self._conn.execute(stmt.limit(batch).offset(offset))).mappings().all()
            for row in rows:
                if wanted and wanted not in row["targets"]:
                    continue
                if len(events) == first:
                    has_next = True
                    break
                events.append(_event(row))
            if has_next or len(rows) < batch or not wanted:
                break
            offset += batch
        return AuditPage(tuple(events), has_next)

    async def prune(self, before: datetime) -> int:
        result = await self._conn.execute(audit_events.delete().where(audit_events.c.at < before))
        return int(result.rowcount or 0)


def _event(row: Any) -> AuditEvent:
    return AuditEvent(
        id=row["id"],
        at=row["at"],
        tenant_id=TenantId(row["tenant_id"]) if row["tenant_id"] else None,
        actor=row["actor"],
        token_id=row["token_id"],
        operation=row["operation"],
        targets=tuple(row["targets"]),
        input=dict(row["input"]),
        outcome=row["outcome"],
        source=row["source"],
    )
