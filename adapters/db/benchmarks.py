"""LLM benchmarks and their request samples in SQL (`adapters.db.documents`: key columns and a
JSON document)."""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa

from adapters.db.documents import DocumentRepository, keyset
from adapters.db.tables import benchmark_samples, benchmarks
from adapters.shapes.documents import (
    benchmark_from_document,
    benchmark_to_document,
    sample_from_document,
    sample_to_document,
)
from domain.model.benchmark import Benchmark, BenchmarkStatus
from domain.model.ids import BenchmarkId, DeploymentId, ProjectId
from domain.model.load import RequestSample
from domain.ports.repositories import JobCursor, Page


class SqlBenchmarkRepository(DocumentRepository[Benchmark]):
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
        stmt = self._scoped(sa.select(benchmarks)).where(keyset(benchmarks, after))
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
