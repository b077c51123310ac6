"""The wired App on real stores: a job's life through tasks and the simulated cluster.

Covers: with arq on Redis, submitting queues the hand-over and a burst worker runs it (the job
becomes QUEUED and the workload exists on the simulated cluster); on the embedded wiring, the
supervisor and the simulated cluster take a job through every status to COMPLETED with its history
in order, a failed attempt is retried by the user into a new attempt, a preempted one is retried
automatically, and cancelling stops the workload.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import replace
from typing import Any

import pytest

from adapters.simulated.config import parse_node_groups, settings_for
from adapters.simulated.gateway import SimulatedGateway
from budcluster import bootstrap, migrate
from budcluster.bootstrap import App
from budcluster.runtime import Runtime
from budcluster.settings import Settings
from domain.errors import Conflict
from domain.model.cluster import Cluster
from domain.model.ids import ClusterId, JobId, ProjectId, TenantId
from domain.model.job import DeploymentType, JobStatus, JobType, Resources
from domain.model.principal import Principal, Scope
from domain.ports.clock import Clock
from domain.ports.unit_of_work import TenantScope
from domain.services.submission import JobSubmission
from tests.integration.conftest import empty, redis_url
from workers.settings import worker_for

S = JobStatus
ALICE = Principal(TenantId(uuid.uuid4()), frozenset({Scope.ADMIN}))


def submission(cluster_id: ClusterId, **changes: Any) -> JobSubmission:
    base = JobSubmission(
        name="sim-job",
        project_id=ProjectId(uuid.uuid4()),
        cluster_id=cluster_id,
        job_type=JobType.BATCH,
        deployment_type=DeploymentType.DOCKER,
        resources=Resources("nvidia-a100-80gb", 4),
        spec={"simulation": {"runtime_seconds": 0.3}},
    )
    return replace(base, **changes)


async def make_app(url: str, clock: Clock | None = None, **settings: Any) -> App:
    app = await bootstrap.api(
        Settings(
            database_url=url,
            token_pepper=b"p" * 32,
            sim_poll_seconds=0.05,
            supervisor_poll_seconds=0.2,
            **settings,
        ),
        clock=clock,
    )
    await migrate.upgrade(app.db.engine)
    await empty(app.db)
    return app


async def until(check: Callable[[], Awaitable[bool]], within: float = 10.0) -> None:
    async with asyncio.timeout(within):
        while not await check():
            await asyncio.sleep(0.05)


@pytest.fixture
async def embedded(sqlite_url: str) -> AsyncIterator[App]:
    app = await make_app(sqlite_url)
    runtime = Runtime(app)
    await runtime.start()
    yield app
    await runtime.stop()
    await app.close()


async def sim_cluster(app: App, startup: float = 0.1) -> Cluster:
    return await app.clusters.create_simulated(
        f"sim-{uuid.uuid4().hex[:6]}",
        settings_for(parse_node_groups("1x8xnvidia-a100-80gb"), startup_seconds=startup),
    )


async def status_of(app: App, job_id: JobId) -> JobStatus:
    job = await app.jobs.get(ALICE, job_id)
    assert job is not None
    return job.status


async def test_arq_worker_hands_jobs_to_the_cluster(pg_url: str, prefix: str) -> None:
    app = await make_app(
        pg_url, redis_url=redis_url(), tasks="arq", events="redis", redis_prefix=prefix
    )
    try:
        cluster = await sim_cluster(app)
        job = await app.jobs.submit(ALICE, submission(cluster.id))
        assert app.arq is not None
        assert await app.arq.zcard(app.settings.queue_name) == 1
        await worker_for(app, burst=True, handle_signals=False).main()
        assert await status_of(app, job.id) is S.QUEUED
        workloads = await app.gateways.simulated.for_cluster(cluster).list_workloads()
        assert [(w.job_id, w.attempt) for w in workloads] == [(job.id, 0)]
    finally:
        await app.close()


async def history(app: App, job_id: JobId) -> list[tuple[JobStatus | None, JobStatus]]:
    events = await app.jobs.events(ALICE, [job_id])
    return [(e.from_status, e.to_status) for e in events[job_id]]


async def test_a_job_runs_to_completion(embedded: App) -> None:
    cluster = await sim_cluster(embedded)
    job = await embedded.jobs.submit(ALICE, submission(cluster.id))

    async def done() -> bool:
        return await status_of(embedded, job.id) is S.COMPLETED

    await until(done)
    assert await history(embedded, job.id) == [
        (None, S.PENDING),
        (S.PENDING, S.QUEUED),
        (S.QUEUED, S.ADMITTED),
        (S.ADMITTED, S.RUNNING),
        (S.RUNNING, S.COMPLETED),
    ]
    finished = await embedded.jobs.get(ALICE, job.id)
    assert finished and finished.placement and finished.placement.node.startswith("sim-a100")
    assert (
        finished.actual_start
        and finished.actual_end
        and finished.actual_end > finished.actual_start
    )


async def test_a_failure_is_retried_as_a_new_attempt_until_retries_are_used(
    embedded: App,
) -> None:
    cluster = await sim_cluster(embedded)
    embedded.jobs._backoff = lambda attempt: 0.1  # keep the test fast
    failing = {"simulation": {"runtime_seconds": 0.2, "outcome": "FAILED"}}
    job = await embedded.jobs.submit(ALICE, submission(cluster.id, spec=failing, max_retries=1))

    async def failed_for_good() -> bool:
        current = await embedded.jobs.get(ALICE, job.id)
        return current is not None and current.status is S.FAILED and current.attempt == 1

    await until(failed_for_good)
    attempts = [e.attempt for e in (await embedded.jobs.events(ALICE, [job.id]))[job.id]]
    assert attempts == [0, 0, 0, 0, 0, 1, 1, 1, 1, 1]
    with pytest.raises(Conflict):
        await embedded.jobs.retry(ALICE, job.id)  # the retries are used


async def test_preemption_is_retried_automatically(embedded: App) -> None:
    cluster = await sim_cluster(embedded)
    embedded.jobs._backoff = lambda attempt: 0.1
    long = {"simulation": {"runtime_seconds": 600}}
    job = await embedded.jobs.submit(ALICE, submission(cluster.id, spec=long, max_retries=2))

    async def running() -> bool:
        current = await embedded.jobs.get(ALICE, job.id)
        return current is not None and current.status is S.RUNNING and current.attempt == 0

    await until(running)
    gateway = embedded.gateways.simulated.for_cluster(cluster)
    assert isinstance(gateway, SimulatedGateway)
    assert await gateway.preempt(job.id, 0, "evicted for a CRITICAL job")

    async def running_again() -> bool:
        current = await embedded.jobs.get(ALICE, job.id)
        return current is not None and current.attempt == 1 and current.status is S.RUNNING

    await until(running_again)
    assert (S.RUNNING, S.PREEMPTED) in await history(embedded, job.id)


async def test_cancel_stops_the_workload(embedded: App) -> None:
    cluster = await sim_cluster(embedded)
    job = await embedded.jobs.submit(
        ALICE, submission(cluster.id, spec={}, job_type=JobType.SERVICE)
    )

    async def running() -> bool:
        return await status_of(embedded, job.id) is S.RUNNING

    await until(running)
    await embedded.jobs.cancel(ALICE, job.id, "done with it")
    gateway = embedded.gateways.simulated.for_cluster(cluster)

    async def deleted() -> bool:
        return any(w.phase.value == "DELETED" for w in await gateway.list_workloads())

    await until(deleted)
    assert await status_of(embedded, job.id) is S.CANCELLED
    async with embedded.db.unit_of_work(TenantScope.system()) as uow:
        stored = await uow.jobs.get(job.id)
    assert stored is not None and stored.status_message == "done with it"
