"""Metering and spend on PostgreSQL: what metering adds to the commit that ends a run, and how
long a `spend` query takes over 100,000 ended attempts grouped by project and day.

A scratch database is made on the server of DATABASE_URL (default: postgres@127.0.0.1:5432),
migrated, and dropped at the end.

1. Metering: `--attempts` jobs run and end through the unit of work (one commit for the end,
   as the cluster's observations record it). Printed: the median and p95 of the ending commit,
   and of the part of it that meters the run (`SqlUnitOfWork._meter`: the cluster's prices
   read, the run priced per UTC day, the ledger rows inserted).
2. Spend: `--ended` ended attempts are written straight into the ledger (job_usage): 5 tenants
   of 10 projects each, on 3 clusters and 3 GPU types, over 90 days, each attempt a few
   minutes to a day long (cut per UTC day as metering cuts it), then ANALYZE. Printed: the
   median of `--repeat` `spend` queries (`SpendService.page`, 1000 rows a page, with its
   total) grouped by PROJECT and DAY over the whole 90 days and over 30, for the operator and
   for one tenant. Aim (issue 32): at most 200 ms.
3. The budget check: the tenants and projects of 2. each with a budget for the month (WARN, far
   from spent: the round reads, prices and decides, and acts on nothing), and `--running` jobs
   running on 3 clusters in those projects. Printed: the median and p95 of `--repeat` rounds of
   `BudgetService.check` (every job's own budget, every project's and tenant's, the held jobs to
   release), which the service runs every `BUDCLUSTER_BUDGET_CHECK_SECONDS` (5).

    .venv/bin/python -m benchmarks.spend [--attempts 500] [--ended 100000] [--repeat 15]
        [--running 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import asyncpg
import sqlalchemy as sa

from adapters.db.engine import Database
from adapters.db.tables import job_usage
from adapters.db.uow import SqlUnitOfWork
from budcluster import migrate
from domain.model.budget import Budget
from domain.model.cluster import Cluster, ClusterStatus, Platform
from domain.model.ids import ClusterId, JobId, ProjectId, TenantId
from domain.model.job import (
    BudgetAction,
    DeploymentType,
    Job,
    JobStatus,
    JobType,
    Resources,
    run_of,
)
from domain.model.principal import Principal, Scope
from domain.model.spend import SpendGroup
from domain.ports.unit_of_work import TenantScope
from domain.scheduling.cost import PriceBook
from domain.services.budgets import BudgetService
from domain.services.spend import SpendService

SERVER = os.environ.get("DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/test")
START = datetime(2026, 8, 1, tzinfo=UTC)
GPU_TYPES = [("nvidia-a100-80gb", 8), ("nvidia-h100-sxm", 4), ("nvidia-l40s", 1)]


def _plain(url: str) -> str:
    return url.replace("postgresql+asyncpg://", "postgresql://")


async def scratch() -> str:
    name = f"budcluster_bench_spend_{uuid.uuid4().hex[:8]}"
    conn = await asyncpg.connect(_plain(SERVER))
    try:
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()
    return f"{_plain(SERVER).rpartition('/')[0]}/{name}"


async def drop(url: str) -> None:
    conn = await asyncpg.connect(_plain(SERVER))
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{url.rpartition("/")[2]}" WITH (FORCE)')
    finally:
        await conn.close()


def quantiles(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
    return f"median {statistics.median(ordered) * 1000:.2f} ms, p95 {p95 * 1000:.2f} ms"


async def metering(db: Database, attempts: int) -> None:
    cluster = Cluster(
        id=ClusterId(uuid.uuid4()),
        name="bench",
        platform=Platform.SIMULATED,
        status=ClusterStatus.AVAILABLE,
        created_at=START,
        updated_at=START,
    )
    async with db.unit_of_work(TenantScope.system()) as uow:
        await uow.clusters.add(cluster)
        await uow.commit()
    metered: list[float] = []
    original = SqlUnitOfWork._meter

    async def timed(self: SqlUnitOfWork, conn: Any) -> None:
        began = time.perf_counter()
        await original(self, conn)
        metered.append(time.perf_counter() - began)

    SqlUnitOfWork._meter = timed  # type: ignore[method-assign]
    ends: list[float] = []
    metering_part: list[float] = []
    try:
        for n in range(attempts):
            job = Job(
                id=JobId(uuid.uuid4()),
                name=f"job-{n}",
                tenant_id=TenantId(uuid.uuid4()),
                project_id=ProjectId(uuid.uuid4()),
                cluster_id=cluster.id,
                job_type=JobType.TRAINING,
                deployment_type=DeploymentType.DOCKER,
                created_at=START,
                updated_at=START,
                resources=Resources("nvidia-a100-80gb", 8, 32, 256),
            )
            job.record_submission()
            for status in (JobStatus.QUEUED, JobStatus.ADMITTED, JobStatus.RUNNING):
                job.transition(status, status.value.lower(), START + timedelta(minutes=n))
            async with db.unit_of_work(TenantScope.system()) as uow:
                await uow.jobs.add(job)
                await uow.commit()
            metered.clear()
            async with db.unit_of_work(TenantScope.system()) as uow:
                began = time.perf_counter()
                loaded = await uow.jobs.get(job.id)
                assert loaded is not None
                loaded.transition(JobStatus.COMPLETED, "done", START + timedelta(hours=n % 30))
                await uow.commit()
                ends.append(time.perf_counter() - began)
            assert loaded.actual_cost is not None
            if n == 0:
                ends.clear()  # the first one warms the connection
                continue
            metering_part.append(sum(metered))
    finally:
        SqlUnitOfWork._meter = original  # type: ignore[method-assign]
    print(f"metering, {attempts} runs of 8 A100s ended through the unit of work:")
    print(f"  the ending commit (read, transition, commit): {quantiles(ends)}")
    print(f"  of which metering: {quantiles(metering_part)}")


async def fill(
    db: Database, ended: int, rng: random.Random
) -> tuple[list[tuple[TenantId, ProjectId]], int]:
    tenants = [TenantId(uuid.uuid4()) for _ in range(5)]
    projects = [(t, ProjectId(uuid.uuid4())) for t in tenants for _ in range(10)]
    clusters = [ClusterId(uuid.uuid4()) for _ in range(3)]
    book = PriceBook()
    batch: list[dict[str, Any]] = []
    written = attempts = 0
    async with db.engine.begin() as conn:
        while attempts < ended:
            tenant, project = rng.choice(projects)
            gpu_type, gpus = rng.choice(GPU_TYPES)
            start = START + timedelta(seconds=rng.randrange(0, 89 * 86400))
            job = Job(
                id=JobId(uuid.uuid4()),
                name="j",
                tenant_id=tenant,
                project_id=project,
                cluster_id=rng.choice(clusters),
                job_type=rng.choice(list(JobType)),
                deployment_type=DeploymentType.DOCKER,
                created_at=start,
                updated_at=start,
                resources=Resources(gpu_type, gpus),
            )
            end = start + timedelta(seconds=rng.randrange(60, 86400))
            attempts += 1
            for piece in run_of(job, 0, start, end, JobStatus.COMPLETED).by_day():
                batch.append(
                    {
                        "job_id": piece.job_id,
                        "attempt": 0,
                        "tenant_id": piece.tenant_id,
                        "project_id": piece.project_id,
                        "cluster_id": piece.cluster_id,
                        "job_type": piece.job_type.value,
                        "gpu_type": piece.gpu_type,
                        "gpus": piece.gpus,
                        "cpu_cores": piece.cpu_cores,
                        "started_at": piece.started_at,
                        "ended_at": piece.ended_at,
                        "day": piece.day,
                        "seconds": piece.seconds,
                        "outcome": piece.outcome.value,
                        "cost": book.charge(piece),
                    }
                )
                written += 1
            if len(batch) >= 5000:
                await conn.execute(job_usage.insert(), batch)
                batch = []
        if batch:
            await conn.execute(job_usage.insert(), batch)
        await conn.execute(sa.text("ANALYZE job_usage"))
    return projects, written


async def timed_query(run: Callable[[], Awaitable[object]], repeat: int) -> list[float]:
    samples = []
    await run()  # warm
    for _ in range(repeat):
        began = time.perf_counter()
        await run()
        samples.append(time.perf_counter() - began)
    return samples


async def spend(db: Database, ended: int, repeat: int) -> list[tuple[TenantId, ProjectId]]:
    projects, written = await fill(db, ended, random.Random(7))
    tenant = projects[0][0]
    service = SpendService(uow=db.unit_of_work)
    operator = Principal(TenantId(uuid.uuid4()), frozenset({Scope.ADMIN}))
    own = Principal(tenant, frozenset({Scope.JOBS_READ}))
    print(f"spend: {ended} ended attempts over 90 days ({written} ledger rows), PROJECT x DAY:")
    for who, principal in (("operator", operator), ("one tenant", own)):
        for days in (90, 30):
            first = (START + timedelta(days=90 - days)).date()
            last = (START + timedelta(days=89)).date()
            query = service.query(principal, first, last, [SpendGroup.PROJECT, SpendGroup.DAY])
            found: list[int] = []

            async def run(q: Any = query, found: list[int] = found) -> None:
                page = await service.page(q, first=1000, offset=0)
                found.append(len(page.rows))
                assert page.total.cost > Decimal(0)

            samples = await timed_query(run, repeat)
            print(
                f"  {who}, {days} days ({found[-1]} rows on the first page): {quantiles(samples)}"
            )
    return projects


class _At:
    def __init__(self, now: datetime) -> None:
        self.current = now

    def now(self) -> datetime:
        return self.current

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


async def budget_check(
    db: Database, projects: list[tuple[TenantId, ProjectId]], running: int, repeat: int
) -> None:
    now = START + timedelta(days=60, hours=12)  # in the ledger's third month
    clusters = [
        Cluster(
            id=ClusterId(uuid.uuid4()),
            name=f"bench-{n}",
            platform=Platform.SIMULATED,
            status=ClusterStatus.AVAILABLE,
            created_at=START,
            updated_at=START,
        )
        for n in range(3)
    ]
    rng = random.Random(11)
    async with db.unit_of_work(TenantScope.system()) as uow:
        for cluster in clusters:
            await uow.clusters.add(cluster)
        for tenant in dict.fromkeys(t for t, _ in projects):
            await uow.budgets.put(
                Budget(tenant, None, Decimal("1e9"), BudgetAction.WARN, START, START)
            )
        for tenant, project in projects:
            await uow.budgets.put(
                Budget(tenant, project, Decimal("1e8"), BudgetAction.PAUSE, START, START)
            )
        await uow.commit()
    for n in range(running):
        tenant, project = rng.choice(projects)
        gpu_type, gpus = rng.choice(GPU_TYPES)
        job = Job(
            id=JobId(uuid.uuid4()),
            name=f"running-{n}",
            tenant_id=tenant,
            project_id=project,
            cluster_id=rng.choice(clusters).id,
            job_type=JobType.TRAINING,
            deployment_type=DeploymentType.DOCKER,
            created_at=now - timedelta(hours=3),
            updated_at=now - timedelta(hours=3),
            resources=Resources(gpu_type, gpus),
            budget_limit=Decimal("1e6") if n % 4 == 0 else None,
        )
        for status in (JobStatus.QUEUED, JobStatus.ADMITTED, JobStatus.RUNNING):
            job.transition(status, status.value.lower(), now - timedelta(hours=rng.random() * 3))
        async with db.unit_of_work(TenantScope.system()) as uow:
            await uow.jobs.add(job)
            await uow.commit()
    service = BudgetService(uow=db.unit_of_work, clock=_At(now))

    async def round_() -> None:
        assert await service.check() == []

    samples = await timed_query(round_, repeat)
    print(
        f"budget check: {len(projects)} project and {len(set(t for t, _ in projects))} tenant "
        f"budgets, {running} running jobs (a quarter with budgets of their own):"
    )
    print(f"  a round: {quantiles(samples)}")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--attempts", type=int, default=500)
    parser.add_argument("--ended", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--running", type=int, default=2000)
    args = parser.parse_args()
    url = await scratch()
    db = Database(url)
    try:
        await migrate.upgrade(db.engine)
        await metering(db, args.attempts)
        projects = await spend(db, args.ended, args.repeat)
        await budget_check(db, projects, args.running, args.repeat)
    finally:
        await db.engine.dispose()
        await drop(url)


if __name__ == "__main__":
    asyncio.run(main())
