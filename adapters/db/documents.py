"""What the deployment and benchmark repositories keep alike: key columns for finding an entity,
a JSON document for the rest.

Both are limited to the unit of work's tenant, as jobs are. `add` and `save` hand the events the
entity recorded to the unit of work, which writes them to the outbox in the same commit; `save`
is an optimistic update (the row's version must be the one read), so two processes refreshing the
same deployment cannot overwrite each other's change unseen.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, Protocol, TypeVar

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from domain.errors import Conflict
from domain.model.benchmark import Benchmark
from domain.model.deployment import Deployment
from domain.model.events import ServingChange
from domain.ports.repositories import JobCursor
from domain.ports.unit_of_work import TenantScope


class ChangeRecorder(Protocol):
    """What these repositories need of their unit of work (`adapters.db.uow`): it writes the
    changes they hand it to the outbox at commit."""

    def record(self, change: ServingChange) -> None: ...


E = TypeVar("E", Deployment, Benchmark)


def keyset(table: sa.Table, after: JobCursor | None) -> sa.ColumnElement[bool]:
    if after is None:
        return sa.true()
    return sa.or_(
        table.c.created_at < after.created_at,
        sa.and_(table.c.created_at == after.created_at, table.c.id < after.job_id),
    )


class DocumentRepository(Generic[E]):
    """What both keep alike: a row of key columns and the entity's document, limited to the
    scope's tenant; adds and optimistic saves that hand the entity's events to the unit of work."""

    table: sa.Table
    what: str
    to_document: Callable[[E], dict[str, Any]]
    from_document: Callable[[dict[str, Any]], E]

    def __init__(self, conn: AsyncConnection, scope: TenantScope, uow: ChangeRecorder) -> None:
        self._conn = conn
        self._scope = scope
        self._uow = uow

    def _scoped(self, stmt: sa.Select[Any]) -> sa.Select[Any]:
        if self._scope.tenant_id is not None:
            stmt = stmt.where(self.table.c.tenant_id == self._scope.tenant_id)
        return stmt

    def _row(self, entity: E) -> dict[str, Any]:
        return {
            "status": entity.status.value,
            "document": type(self).to_document(entity),
            "updated_at": entity.updated_at,
        }

    def _entity(self, row: sa.RowMapping) -> E:
        entity = type(self).from_document(row["document"])
        entity.version = int(row["version"])
        return entity

    def _drain(self, entity: E) -> None:
        for change in entity.changes:
            self._uow.record(change)
        entity.changes.clear()

    async def _add(self, entity: E, **keys: Any) -> None:
        await self._conn.execute(
            self.table.insert().values(
                id=entity.id,
                tenant_id=entity.tenant_id,
                project_id=entity.project_id,
                cluster_id=entity.cluster_id,
                name=entity.name,
                version=entity.version,
                created_at=entity.created_at,
                **keys,
                **self._row(entity),
            )
        )
        self._drain(entity)

    async def _get(self, entity_id: Any, *, for_update: bool) -> E | None:
        stmt = self._scoped(sa.select(self.table).where(self.table.c.id == entity_id))
        if for_update and self._conn.dialect.name == "postgresql":
            stmt = stmt.with_for_update()
        row = (await self._conn.execute(stmt)).mappings().first()
        return None if row is None else self._entity(row)

    async def save(self, entity: E) -> None:
        result = await self._conn.execute(
            self.table.update()
            .where(self.table.c.id == entity.id, self.table.c.version == entity.version)
            .values(version=entity.version + 1, **self._row(entity))
        )
        if result.rowcount != 1:
            raise Conflict(
                f"{self.what} {entity.name} was changed concurrently; try again",
                code=f"STALE_{self.what.upper()}",
            )
        entity.version += 1
        self._drain(entity)
