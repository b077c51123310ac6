"""Metering on real PostgreSQL and SQLite: the commit that records a run's end prices it with the
cluster's price history, adds it to the job's actual cost, keeps it in the usage ledger and says
it in the event, all in one transaction; a rolled-back end leaves none of them."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
import sqlalchemy as sa

from adapters.db.engine import Database
from adapters.db.tables import job_usage
from domain.model.cluster import GpuPrice
from domain.model.job import Job, JobStatus, Resources
from domain.ports.events import StoredEvent
from tests.integration.test_repositories import SYSTEM, add_cluster, changed_job, job_on, save
from tests.support.fakes import T0

A100 = "nvidia-a100-80gb"


async def usage_rows(db: Database) -> list[dict[str, object]]:
    async with db.engine.connect() as conn:
        rows = (await conn.execute(sa.select(job_usage).order_by(job_usage.c.id))).mappings()
        return [dict(r) for r in rows]


async def step(db: Database, job: Job, *moves: tuple[JobStatus, float]) -> list[StoredEvent]:
    async with db.unit_of_work(SYSTEM) as uow:
        loaded = await uow.jobs.get(job.id)
        assert loaded is not None
        for status, minute in moves:
            loaded.transition(status, status.value.lower(), T0 + timedelta(minutes=minute))
        return list(await uow.commit())


async def test_a_run_is_metered_in_the_commit_that_ends_it(db: Database) -> None:
    cluster = await add_cluster(db)
    async with db.unit_of_work(SYSTEM) as uow:
        await uow.clusters.add_price(GpuPrice(cluster, A100, Decimal("1.00"), T0))
        await uow.clusters.add_price(
            GpuPrice(cluster, A100, Decimal("3.00"), T0 + timedelta(minutes=40))
        )
        await uow.commit()
    job = job_on(cluster, resources=Resources(A100, 2, 8, 64))
    await save(db, job)
    await step(db, job, (JobStatus.QUEUED, 0), (JobStatus.ADMITTED, 5), (JobStatus.RUNNING, 10))
    assert await usage_rows(db) == []

    events = await step(db, job, (JobStatus.PREEMPTED, 70))
    # 2 GPUs: 30 min at 1.00, 30 at 3.00 (the change at minute 40)
    [row] = await usage_rows(db)
    assert row["cost"] == Decimal("4.0000") and row["outcome"] == "PREEMPTED"
    assert (row["gpus"], row["gpu_type"], row["attempt"]) == (2, A100, 0)
    assert row["tenant_id"] == job.tenant_id and row["project_id"] == job.project_id
    [event] = events
    assert event.job_change is not None and event.job_change.metered == Decimal("4.0000")
    assert changed_job(event).actual_cost == Decimal("4.0000")

    async with db.unit_of_work(SYSTEM) as uow:
        loaded = await uow.jobs.get(job.id)
        assert loaded is not None and loaded.actual_cost == Decimal("4.0000")
        loaded.begin_retry(T0 + timedelta(minutes=70), T0 + timedelta(minutes=71), "retry")
        await uow.commit()
    await step(
        db,
        job,
        (JobStatus.QUEUED, 71),
        (JobStatus.ADMITTED, 72),
        (JobStatus.RUNNING, 80),
        (JobStatus.COMPLETED, 90),
    )
    async with db.unit_of_work(SYSTEM) as uow:
        done = await uow.jobs.get(job.id)
    assert done is not None and done.actual_cost == Decimal("5.0000")  # + 10 min x 2 x 3.00
    assert [r["attempt"] for r in await usage_rows(db)] == [0, 1]


async def test_an_end_that_is_rolled_back_meters_nothing(db: Database) -> None:
    cluster = await add_cluster(db)
    job = job_on(cluster, resources=Resources(A100, 1, 8, 64))
    await save(db, job)
    await step(db, job, (JobStatus.QUEUED, 0), (JobStatus.ADMITTED, 0), (JobStatus.RUNNING, 0))
    with pytest.raises(RuntimeError):
        async with db.unit_of_work(SYSTEM) as uow:
            loaded = await uow.jobs.get(job.id)
            assert loaded is not None
            loaded.transition(JobStatus.COMPLETED, "done", T0 + timedelta(hours=1))
            raise RuntimeError("the command failed before it committed")
    assert await usage_rows(db) == []
    async with db.unit_of_work(SYSTEM) as uow:
        still = await uow.jobs.get(job.id)
    assert still is not None and still.actual_cost is None and still.status is JobStatus.RUNNING


async def test_price_changes_are_kept_per_cluster_oldest_first(db: Database) -> None:
    first, second = await add_cluster(db, "first"), await add_cluster(db, "second")
    async with db.unit_of_work(SYSTEM) as uow:
        await uow.clusters.add_price(GpuPrice(first, A100, Decimal("2.5"), T0 + timedelta(hours=1)))
        await uow.clusters.add_price(GpuPrice(first, A100, Decimal("1.25"), T0))
        await uow.clusters.add_price(GpuPrice(second, "nvidia-l40s", Decimal("0.75"), T0))
        await uow.commit()
    async with db.unit_of_work(SYSTEM) as uow:
        found = await uow.clusters.prices([first, second])
    assert [(p.hourly, p.since) for p in found[first]] == [
        (Decimal("1.25"), T0),
        (Decimal("2.5"), T0 + timedelta(hours=1)),
    ]
    assert [p.gpu_type for p in found[second]] == ["nvidia-l40s"]
