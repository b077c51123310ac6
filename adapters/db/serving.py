"""Deployments and benchmarks in SQL: key columns for finding them, a JSON document for the rest.

Both are limited to the unit of work's tenant, as jobs are. `add` and `save` hand the events the
entity recorded to the unit of work, which writes them to the outbox in the same commit; `save`
is an optimistic update (the row's version must be the one read), so two processes refreshing the
same deployment cannot overwrite each other's change unseen.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Generic, Protocol, TypeVar

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from adapters.db.tables import benchmark_samples, benchmarks, deployments
from adapters.shapes.documents import (
    benchmark_from_document,
    benchmark_to_document,
    deployment_from_document,
    deployment_to_document,
    sample_from_document,
    sample_to_document,
)
from domain.errors import Conflict
from domain.model.benchmark import Benchmark, BenchmarkStatus
from domain.model.deployment import Deployment, DeploymentStatus
from domain.model.events import ServingChange
from domain.model.ids import BenchmarkId, ClusterId, DeploymentId, ProjectId
from domain.model.load import RequestSample
from domain.ports.repositories import JobCursor, Page
from domain.ports.unit_of_work import TenantScope


class ChangeRecorder(Protocol):
    """What these repositories need of their unit of work (`adapters.db.uow`): it writes the
    changes they hand it to the outbox at commit."""

    def record(self, change: ServingChange) -> None: ...


E = TypeVar("E", Deployment, Benchmark)


def _keyset(table: sa.Table, after: JobCursor | None) -> sa.ColumnElement[bool]:
    if after is None:
        return sa.true()
    return sa.or_(
        table.c.created_at < after.created_at,
        sa.and_(table.c.created_at == after.created_at, table.c.id < after.job_id),
    )


class _DocumentRepository(Generic[E]):
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


class SqlDeploymentRepository(_DocumentRepository[Deployment]):
    table = deployments
    what = "deployment"
    to_document = staticmethod(deployment_to_document)
    from_document = staticmethod(deployment_from_document)

    async def add(self, deployment: Deployment) -> None:
        await self._add(deployment)

    async def get(
        self, deployment_id: DeploymentId, *, for_update: bool = False
    ) -> Deployment | None:
        return await self._get(deployment_id, for_update=for_update)

    async def on_cluster(self, cluster_id: ClusterId, *, limit: int) -> list[Deployment]:
        stmt = self._scoped(
            sa.select(deployments)
            .where(deployments.c.cluster_id == cluster_id)
            .order_by(deployments.c.created_at.desc(), deployments.c.id.desc())
            .limit(limit)
        )
        return [self._entity(r) for r in (await self._conn.execute(stmt)).mappings()]

    async def with_endpoints(self) -> list[Deployment]:
        stmt = self._scoped(
            sa.select(deployments).where(
                deployments.c.status != DeploymentStatus.STOPPED.value,
                deployments.c.document["endpoint_url"].as_string().is_not(None),
            )
        )
        return [self._entity(r) for r in (await self._conn.execute(stmt)).mappings()]

    async def page(
        self,
        *,
        cluster_ids: frozenset[ClusterId],
        project_ids: frozenset[ProjectId] | None,
        statuses: frozenset[str],
        first: int,
        after: JobCursor | None,
    ) -> Page[Deployment]:
        stmt = self._scoped(sa.select(deployments)).where(_keyset(deployments, after))
        if cluster_ids:
            stmt = stmt.where(deployments.c.cluster_id.in_(list(cluster_ids)))
        if project_ids is not None:
            stmt = stmt.where(deployments.c.project_id.in_(list(project_ids)))
        if statuses:
            stmt = stmt.where(deployments.c.status.in_(sorted(statuses)))
        stmt = stmt.order_by(deployments.c.created_at.desc(), deployments.c.id.desc())
        rows = (await self._conn.execute(stmt.limit(first + 1))).mappings().all()
        found = [self._entity(r) for r in rows]
        return Page(found[:first], len(found) > first)


class SqlBenchmarkRepository(_DocumentRepository[Benchmark]):
    table = benchmarks
    what = "benchmark"
    to_document = staticmethod(benchmark_to_document)
    from_document = staticmethod(benchmark_from_document)

    async def add(self, benchmark: Benchmark) -> None:
        await self._add(benchmark, deployment_id=benchmark.deployment_id, job_id=benchmark.job_id)

    async def get(self, benchmark_id: BenchmarkId, *, for_update: bool = False) -> Benchmark | None:
        return await self._get(benchmark_id, for_update=for_update)

    async def get_many(self, benchmark_ids: Sequence[BenchmarkId]) -> dict[BenchmarkId, Benchmark]:
        if not benchmark_ids:
            return {}
        stmt = self._scoped(sa.select(benchmarks).where(benchmarks.c.id.in_(list(benchmark_ids))))
        found = [self._entity(r) for r in (await self._conn.execute(stmt)).mappings()]
        return {b.id: b for b in found}

    async def page(
        self,
        *,
        deployment_id: DeploymentId | None,
        project_ids: frozenset[ProjectId] | None,
        first: int,
        after: JobCursor | None,
    ) -> Page[Benchmark]:
        stmt = self._scoped(sa.select(benchmarks)).where(_keyset(benchmarks, after))
        if deployment_id is not None:
            stmt = stmt.where(benchmarks.c.deployment_id == deployment_id)
        if project_ids is not None:
            stmt = stmt.where(benchmarks.c.project_id.in_(list(project_ids)))
        stmt = stmt.order_by(benchmarks.c.created_at.desc(), benchmarks.c.id.desc())
        rows = (await self._conn.execute(stmt.limit(first + 1))).mappings().all()
        found = [self._entity(r) for r in rows]
        return Page(found[:first], len(found) > first)

    async def unfinished(self) -> list[Benchmark]:
        live = (BenchmarkStatus.PENDING.value, BenchmarkStatus.RUNNING.value)
        stmt = self._scoped(sa.select(benchmarks).where(benchmarks.c.status.in_(live)))
        return [self._entity(r) for r in (await self._conn.execute(stmt)).mappings()]

    async def save_samples(
        self, benchmark_id: BenchmarkId, samples: Sequence[RequestSample]
    ) -> None:
        values = {"count": len(samples), "samples": [sample_to_document(s) for s in samples]}
        updated = await self._conn.execute(
            benchmark_samples.update()
            .where(benchmark_samples.c.benchmark_id == benchmark_id)
            .values(values)
        )
        if not updated.rowcount:
            await self._conn.execute(
                benchmark_samples.insert().values(benchmark_id=benchmark_id, **values)
            )

    async def samples(self, benchmark_id: BenchmarkId) -> list[RequestSample] | None:
        stmt = sa.select(benchmark_samples.c.samples).where(
            benchmark_samples.c.benchmark_id == benchmark_id
        )
        if self._scope.tenant_id is not None:
            stmt = stmt.where(
                benchmark_samples.c.benchmark_id.in_(
                    sa.select(benchmarks.c.id).where(
                        benchmarks.c.tenant_id == self._scope.tenant_id
                    )
                )
            )
        found = (await self._conn.execute(stmt)).scalar_one_or_none()
        return None if found is None else [sample_from_document(s) for s in found]
