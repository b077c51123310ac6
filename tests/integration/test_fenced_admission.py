"""A simulated cluster's admission loop on PostgreSQL, under the faults production showed.

Covers: a loop whose holder was superseded (a later watch claimed the cluster's fencing
generation) writes nothing and says so; a cancel asked for while a step is running waits for
that step and then sticks (before, the step wrote the whole row back over it: 1 in 60 cancels
left the job running); a workload whose job is final is found as a stray and taken back; a step
does not admit a workload whose job's cancel has committed, nor one whose cancel is committing
while it runs (its admission check waits for it).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
import sqlalchemy as sa

from adapters.simulated.config import parse_node_groups, settings_for
from adapters.simulated.gateway import SimulatedGateway
from adapters.simulated.store import SimulatedStore
from budcluster import bootstrap, migrate
from budcluster.bootstrap import App
from budcluster.settings import Settings
from domain.model.cluster import Cluster
from domain.model.ids import JobId, ProjectId, TenantId
from domain.model.job import DeploymentType, JobPriority, JobStatus, JobType, Resources
from domain.model.principal import Principal, Scope
from domain.ports.gateways import Superseded, Workload, WorkloadPhase
from domain.ports.unit_of_work import TenantScope
from domain.services.submission import JobSubmission
from tests.integration.conftest import empty, redis_url

ALICE = Principal(TenantId(uuid.uuid4()), frozenset({Scope.ADMIN}))


@pytest.fixture
async def app(pg_url: str, prefix: str) -> AsyncIterator[App]:
    built = await bootstrap.api(
        Settings(
            database_url=pg_url,
            token_pepper=b"p" * 32,
            redis_url=redis_url(),
            tasks="arq",  # queued, never run: the test hands the workloads over itself
            events="redis",
            redis_prefix=prefix,
        )
    )
    await migrate.upgrade(built.db.engine)
    await empty(built.db)
    yield built  # not started: the test runs the loop's steps itself
    await built.close()


async def cluster_with_work(
    app: App, *, jobs: int
) -> tuple[Cluster, SimulatedGateway, list[JobId]]:
    cluster = await app.clusters.create_simulated(
        f"sim-{uuid.uuid4().hex[:6]}",
        settings_for(parse_node_groups("1x8xnvidia-a100-80gb"), startup_seconds=0.0),
    )
    gateway = app.gateways.simulated.for_cluster(cluster)
    ids = []
    for n in range(jobs):
        job = await app.jobs.submit(ALICE, an_hour_of(cluster, f"fenced-{n}", gpus=2))
        await gateway.submit(Workload.of(job))
        ids.append(job.id)
    return cluster, gateway, ids


def an_hour_of(
    cluster: Cluster, name: str, *, gpus: int, priority: JobPriority = JobPriority.NORMAL
) -> JobSubmission:
    return JobSubmission(
        name=name,
        project_id=ProjectId(uuid.uuid4()),
        cluster_id=cluster.id,
        job_type=JobType.BATCH,
        deployment_type=DeploymentType.DOCKER,
        resources=Resources("nvidia-a100-80gb", gpus),
        priority=priority,
        spec={"simulation": {"runtime_seconds": 3600}},
    )


def phases(listed: list[Any]) -> dict[JobId, WorkloadPhase]:
    return {o.job_id: o.phase for o in listed}


async def test_a_superseded_loop_writes_nothing(app: App) -> None:
    cluster, gateway, ids = await cluster_with_work(app, jobs=2)
    store = app.gateways.simulated.store
    old = await store.claim(cluster.id)
    new = await store.claim(cluster.id)
    assert new == old + 1

    with pytest.raises(Superseded):
        await gateway.advance(generation=old)
    assert set(phases(await gateway.list_workloads()).values()) == {WorkloadPhase.QUEUED}

    changed, _ = await gateway.advance(generation=new)
    assert {o.job_id for o in changed} == set(ids)
    assert set(phases(await gateway.list_workloads()).values()) != {WorkloadPhase.QUEUED}


async def lock_waits(store: SimulatedStore) -> int:
    async with store.transaction() as conn:
        waiting = await conn.execute(
            sa.text(
                "select count(*) from pg_stat_activity "
                "where datname = current_database() and wait_event_type = 'Lock'"
            )
        )
        return int(waiting.scalar_one())


async def test_a_cancel_during_a_step_waits_for_it_and_sticks(
    app: App, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, gateway, [job_id] = await cluster_with_work(app, jobs=1)
    store = app.gateways.simulated.store
    real_save = store.save
    cancels: list[asyncio.Task[None]] = []

    async def save_with_a_cancel_meanwhile(*args: Any, **kwargs: Any) -> None:
        cancel = asyncio.create_task(gateway.cancel(job_id, 0))
        cancels.append(cancel)
        async with asyncio.timeout(10):  # until the cancel waits for this step (or got past it)
            while not cancel.done() and await lock_waits(store) == 0:
                await asyncio.sleep(0.01)
        assert not cancel.done(), "the cancel was written while the step held the workload"
        await real_save(*args, **kwargs)

    monkeypatch.setattr(store, "save", save_with_a_cancel_meanwhile)
    changed, _ = await gateway.advance()  # admits the workload, a cancel arriving meanwhile
    monkeypatch.setattr(store, "save", real_save)
    assert [o.phase for o in changed] != [WorkloadPhase.QUEUED]
    await cancels[0]

    await gateway.advance()  # the next step sees the cancel
    assert phases(await gateway.list_workloads())[job_id] is WorkloadPhase.DELETED


async def test_a_workload_whose_job_was_cancelled_is_not_admitted(app: App) -> None:
    """The cancel committed, its take-back not yet run: the step's admission check refuses it
    (before, it was admitted and held its GPUs until the take-back came)."""
    _, gateway, [cancelled, kept] = await cluster_with_work(app, jobs=2)
    await app.jobs.cancel(ALICE, cancelled, None)

    await gateway.advance()
    seen = phases(await gateway.list_workloads())
    assert seen[cancelled] is WorkloadPhase.DELETED
    assert seen[kept] is not WorkloadPhase.QUEUED  # the other one is admitted as ever


async def test_a_step_admits_only_once_a_cancel_under_way_has_committed_or_not(app: App) -> None:
    """A cancel holding the job's row while the step runs: the step waits for its commit, then
    sees it (checked in the transaction that admits, not before it)."""
    _, gateway, [job_id] = await cluster_with_work(app, jobs=1)
    store = app.gateways.simulated.store
    async with app.db.unit_of_work(TenantScope.system()) as uow:
        job = await uow.jobs.get(job_id, for_update=True)
        assert job is not None
        job.transition(JobStatus.CANCELLED, "cancelled by the test", app.clock.now())
        stepping = asyncio.create_task(gateway.advance())
        async with asyncio.timeout(10):  # until the step waits for the cancel's row lock
            while await lock_waits(store) == 0:
                assert not stepping.done(), "the step admitted without asking the job"
                await asyncio.sleep(0.01)
        await uow.commit()
    changed, _ = await stepping
    assert [o.phase for o in changed] == [WorkloadPhase.DELETED]


async def test_a_hand_over_reads_only_the_priority_values(app: App) -> None:
    """Issue 31: handing a workload to a simulated cluster read the cluster's whole
    configuration (quotas, queues, cohorts, settings, priority classes, reservations: seven
    statements) for one priority value. It reads the priority classes, and the value it stores
    is the class's as it is now."""
    cluster, gateway, _ = await cluster_with_work(app, jobs=0)
    await app.quotas.update_priority_class(ALICE, JobPriority.HIGH, value=500)
    job = await app.jobs.submit(
        ALICE, an_hour_of(cluster, "counted", gpus=1, priority=JobPriority.HIGH)
    )
    statements: list[str] = []

    def count(conn: object, cursor: object, statement: str, *args: object) -> None:
        statements.append(" ".join(statement.split()[:4]))

    engine = app.db.engine.sync_engine
    sa.event.listen(engine, "before_cursor_execute", count)
    try:
        await gateway.submit(Workload.of(job))
    finally:
        sa.event.remove(engine, "before_cursor_execute", count)
    # the priority classes, then the store: is it there already, and the insert
    assert len(statements) == 3 and "workload_priority_class" in statements[0], statements
    assert all("simulated_workload" in s for s in statements[1:]), statements
    stored = await app.gateways.simulated.store.all(cluster.id, finished_since=job.created_at)
    assert [(w.job_id, w.priority) for w in stored] == [(str(job.id), 500)]
