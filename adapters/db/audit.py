"""The audit trail's table: written in the transaction of the change it records."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from adapters.db.tables import audit_event_targets, audit_events
from domain.model.audit import AuditCursor, AuditEvent, AuditFilter, AuditPage
from domain.model.ids import ProjectId, TenantId

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
                project_id=event.project_id,
                actor=event.actor,
                token_id=event.token_id,
                operation=event.operation,
                targets=list(event.targets),
                input=event.input,
                outcome=event.outcome,
                source=event.source,
            )
        )
        await self._targets(event.id, event.at, event.targets)

    async def _targets(
        self, event_id: uuid.UUID, at: datetime, targets: Sequence[str], stored: Sequence[str] = ()
    ) -> None:
        """One row per target (cut to the column's length), but those of `stored`."""
        have = {str(t)[:255] for t in stored}
        rows = [
            {"event_id": event_id, "target": target, "at": at}
            for target in dict.fromkeys(str(t)[:255] for t in targets)
            if target not in have
        ]
        if rows:
            await self._conn.execute(audit_event_targets.insert(), rows)

    async def settle(self, event: AuditEvent, stored: Sequence[str] = ()) -> None:
        at = (
            await self._conn.execute(
                audit_events.update()
                .where(audit_events.c.id == event.id)
                .values(
                    outcome=event.outcome,
                    targets=list(event.targets),
                    tenant_id=event.tenant_id,
                    project_id=event.project_id,
                )
                .returning(audit_events.c.at)
            )
        ).scalar_one_or_none()
        if at is None:
            return
        if not set(stored) <= set(event.targets):  # (targets are only added: not expected)
            await self._conn.execute(
                audit_event_targets.delete().where(audit_event_targets.c.event_id == event.id)
            )
            stored = ()
        await self._targets(event.id, at, event.targets, stored)

    async def page(
        self,
        audit_filter: AuditFilter,
        *,
        tenant_id: TenantId | None,
        first: int,
        after: AuditCursor | None = None,
        project_ids: frozenset[ProjectId] | None = None,
        token_id: uuid.UUID | None = None,
    ) -> AuditPage:
        t = audit_events.c
        stmt = sa.select(audit_events)
        # newest first, by (at, id): of the events, or, for one target, of its rows (whose
        # index is in that order, so a page of a rare target's events reads only them)
        at, event_id = t.at, t.id
        if audit_filter.target:
            named = audit_event_targets.c
            stmt = stmt.join(audit_event_targets, named.event_id == t.id).where(
                named.target == audit_filter.target
            )
            at, event_id = named.at, named.event_id
        if tenant_id is not None:
            stmt = stmt.where(t.tenant_id == tenant_id)
            if project_ids is not None:  # as AuditEvent.seen_by
                own = [t.token_id == token_id] if token_id is not None else []
                stmt = stmt.where(sa.or_(t.project_id.in_(list(project_ids)), *own))
        if audit_filter.operations:
            stmt = stmt.where(t.operation.in_(list(audit_filter.operations)))
        if audit_filter.actor:
            stmt = stmt.where(t.actor == audit_filter.actor)
        if audit_filter.outcome:
            stmt = stmt.where(t.outcome == audit_filter.outcome)
        if audit_filter.since:
            stmt = stmt.where(at >= audit_filter.since)
        if audit_filter.until:
            stmt = stmt.where(at < audit_filter.until)
        if after is not None:
            stmt = stmt.where(
                sa.or_(at < after.at, sa.and_(at == after.at, event_id < after.event_id))
            )
        stmt = stmt.order_by(at.desc(), event_id.desc()).limit(first + 1)
        rows = (await self._conn.execute(stmt)).mappings().all()
        return AuditPage(tuple(_event(row) for row in rows[:first]), len(rows) > first)

    async def prune(self, before: datetime) -> int:
        old = sa.select(audit_events.c.id).where(audit_events.c.at < before)
        await self._conn.execute(
            audit_event_targets.delete().where(audit_event_targets.c.event_id.in_(old))
        )
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
        project_id=ProjectId(row["project_id"]) if row["project_id"] else None,
    )
