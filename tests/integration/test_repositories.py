"""Repositories and the unit of work on real PostgreSQL and SQLite.

Covers: a job survives the round trip field for field (UTC times, decimals, JSON, placement);
tenant isolation in every read; the (tenant, project, idempotency key) constraint; a commit writes the job,
its history and its outbox events with consecutive per-cluster sequences, and a rollback writes
none of them; keyset paging; lost updates are refused; concurrent commits on PostgreSQL get
unique, gapless sequences in commit order; the event log reads, prunes and reports retention.
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from adapters.db.engine import Database
from adapters.db.eventlog import SqlEventLog
from domain.errors import Conflict, DuplicateIdempotencyKey
from domain.model.cluster import ClusterStatus
from domain.model.ids import ClusterId, JobId, ProjectId, TenantId
from domain.model.job import Job, JobPriority, JobStatus, JobType, Placement, Resources
from domain.ports.events import StoredEvent
from domain.ports.repositories import JobCursor, JobFilter
from domain.ports.unit_of_work import TenantScope
from tests.support.fakes import T0, make_cluster
from tests.unit.test_job_model import new_job

SYSTEM = TenantScope.system()


async def add_cluster(db: Database, name: str = "sim") -> ClusterId:
    cluster = make_cluster(ClusterId(uuid.uuid4()), name=name)
    async with db.unit_of_work(SYSTEM) as uow:
        await uow.clusters.add(cluster)
        await uow.commit()
    return cluster.id


def job_on(cluster_id: ClusterId, tenant: TenantId | None = None, **changes: Any) -> Job:
    job = new_job()
    job.cluster_id = cluster_id
    if tenant is not None:
        job.tenant_id = tenant
    for key, value in changes.items():
        setattr(job, key, value)
    job.record_submission()
    return job


async def save(db: Database, *jobs: Job) -> list[StoredEvent]:
    async with db.unit_of_work(SYSTEM) as uow:
        for job in jobs:
            await uow.jobs.add(job)
        return await uow.commit()


def changed_job(event: StoredEvent) -> Job:
    """The job a job event carries."""
    assert event.job_change is not None
    return event.job_change.job


async def test_job_round_trip(db: Database) -> None:
    cluster = await add_cluster(db)
    job = job_on(
        cluster,
        resources=Resources("nvidia-a100-80gb", 8, 12.5, 256.0, 500),
        spec={"image": "vllm:latest", "args": ["--tp", 8], "env": {"A": "b"}},
        deadline=T0 + timedelta(hours=5),
        budget_limit=Decimal("123.4500"),
        estimated_duration_seconds=3600,
        max_duration_seconds=7200,
        priority=JobPriority.HIGH,
        idempotency_key="k-1",
        placements=(Placement("node-0", (0, 1)),),
    )
    wide = job_on(
        cluster,
        resources=Resources("nvidia-a100-80gb", 8, 12.5, 256.0, pod_count=3),
        placements=tuple(Placement(f"node-{i}", tuple(range(8)), "a100") for i in range(3)),
    )
    await save(db, job)
    await save(db, wide)
    async with db.unit_of_work(SYSTEM) as uow:
        loaded = await uow.jobs.get(job.id)
        loaded_wide = await uow.jobs.get(wide.id)
    assert loaded_wide is not None
    assert (loaded_wide.resources, loaded_wide.placements) == (wide.resources, wide.placements)
    assert loaded is not None
    for field in (
        "name",
        "tenant_id",
        "project_id",
        "cluster_id",
        "resources",
        "spec",
        "deadline",
        "budget_limit",
        "priority",
        "status",
        "idempotency_key",
        "placements",
        "created_at",
        "estimated_duration_seconds",
        "source",
    ):
        assert getattr(loaded, field) == getattr(job, field), field
    assert loaded.created_at.tzinfo is not None and loaded.created_at.utcoffset() == timedelta(0)


async def test_tenant_scope_hides_other_tenants(db: Database) -> None:
    cluster = await add_cluster(db)
    alice, bob = TenantId(uuid.uuid4()), TenantId(uuid.uuid4())
    job = job_on(cluster, alice)
    await save(db, job)
    async with db.unit_of_work(TenantScope(bob)) as uow:
        assert await uow.jobs.get(job.id) is None
        assert (await uow.jobs.page(JobFilter(), first=10)).jobs == []
        assert await uow.jobs.list_for_cluster(cluster, JobFilter(), limit=10) == []
        assert await uow.jobs.events([job.id]) == {job.id: []}
        assert await uow.jobs.get_by_idempotency_key(alice, job.project_id, "anything") is None
    async with db.unit_of_work(TenantScope(alice)) as uow:
        assert (await uow.jobs.get(job.id)) is not None
        assert [e.to_status for e in (await uow.jobs.events([job.id]))[job.id]] == [
            JobStatus.PENDING
        ]


async def test_idempotency_key_is_unique_per_tenant_and_project(db: Database) -> None:
    cluster = await add_cluster(db)
    tenant, project, other_project = (
        TenantId(uuid.uuid4()),
        ProjectId(uuid.uuid4()),
        ProjectId(uuid.uuid4()),
    )
    first = job_on(cluster, tenant, project_id=project, idempotency_key="same")
    await save(db, first)
    await save(db, job_on(cluster, TenantId(uuid.uuid4()), idempotency_key="same"))
    await save(db, job_on(cluster, tenant, project_id=other_project, idempotency_key="same"))
    with pytest.raises(DuplicateIdempotencyKey):
        await save(db, job_on(cluster, tenant, project_id=project, idempotency_key="same"))
    async with db.unit_of_work(SYSTEM) as uow:
        assert len((await uow.jobs.page(JobFilter(), first=10)).jobs) == 3
        found = await uow.jobs.get_by_idempotency_key(tenant, project, "same")
    assert found is not None and found.id == first.id


async def test_commit_writes_state_history_and_outbox_together(db: Database) -> None:
    first, second = await add_cluster(db, "one"), await add_cluster(db, "two")
    events = await save(db, job_on(first), job_on(first), job_on(second))
    assert sorted((str(e.cluster_id), e.sequence) for e in events) == sorted(
        [(str(first), 1), (str(first), 2), (str(second), 1)]
    )
    job = next(changed_job(e) for e in events if e.cluster_id == first)
    async with db.unit_of_work(SYSTEM) as uow:
        loaded = await uow.jobs.get(job.id)
        assert loaded is not None
        loaded.transition(JobStatus.QUEUED, "queued", T0)
        loaded.transition(JobStatus.ADMITTED, "admitted", T0)
        stored = await uow.commit()
    assert [e.sequence for e in stored] == [3, 4]
    log = SqlEventLog(db)
    assert await log.current_sequence(first) == 4
    replay = await log.read_after(first, 2, limit=10)
    assert [(e.sequence, changed_job(e).status) for e in replay] == [
        (3, JobStatus.QUEUED),
        (4, JobStatus.ADMITTED),
    ]


async def test_rollback_writes_nothing(db: Database) -> None:
    cluster = await add_cluster(db)
    job = job_on(cluster)
    with pytest.raises(RuntimeError):
        async with db.unit_of_work(SYSTEM) as uow:
            await uow.jobs.add(job)
            raise RuntimeError("boom before commit")
    async with db.unit_of_work(SYSTEM) as uow:
        assert await uow.jobs.get(job.id) is None
    assert await SqlEventLog(db).current_sequence(cluster) == 0


async def test_keyset_paging_newest_first(db: Database) -> None:
    cluster = await add_cluster(db)
    tenant = TenantId(uuid.uuid4())
    jobs = [job_on(cluster, tenant, created_at=T0 + timedelta(seconds=i % 3)) for i in range(7)]
    await save(db, *jobs)
    expected = sorted(jobs, key=lambda j: (j.created_at, j.id), reverse=True)
    seen: list[JobId] = []
    after = None
    async with db.unit_of_work(TenantScope(tenant)) as uow:
        while True:
            page = await uow.jobs.page(JobFilter(), first=3, after=after)
            seen.extend(j.id for j in page.jobs)
            if not page.has_next:
                break
            last = page.jobs[-1]
            after = JobCursor(last.created_at, last.id)
    assert seen == [j.id for j in expected]


async def test_filters(db: Database) -> None:
    cluster = await add_cluster(db)
    project = ProjectId(uuid.uuid4())
    a = job_on(cluster, priority=JobPriority.HIGH, project_id=project)
    b = job_on(cluster, job_type=JobType.SERVICE)
    await save(db, a, b)
    async with db.unit_of_work(SYSTEM) as uow:
        high = await uow.jobs.page(JobFilter(priorities=frozenset({JobPriority.HIGH})), first=5)
        services = await uow.jobs.page(JobFilter(job_types=frozenset({JobType.SERVICE})), first=5)
        in_project = await uow.jobs.page(JobFilter(project_ids=frozenset({project})), first=5)
        pending = await uow.jobs.page(JobFilter(statuses=frozenset({JobStatus.PENDING})), first=5)
    assert [j.id for j in high.jobs] == [a.id]
    assert [j.id for j in services.jobs] == [b.id]
    assert [j.id for j in in_project.jobs] == [a.id]
    assert len(pending.jobs) == 2


async def test_lost_updates_are_refused(pg: Database) -> None:
    cluster = await add_cluster(pg)
    job = job_on(cluster)
    await save(pg, job)
    first, second = pg.unit_of_work(SYSTEM), pg.unit_of_work(SYSTEM)
    async with first, second:
        mine, theirs = await first.jobs.get(job.id), await second.jobs.get(job.id)
        assert mine and theirs
        mine.transition(JobStatus.QUEUED, "mine", T0)
        await first.commit()
        theirs.transition(JobStatus.CANCELLED, "theirs", T0)
        with pytest.raises(Conflict):
            await second.commit()


async def test_concurrent_commits_get_gapless_sequences(pg: Database) -> None:
    cluster = await add_cluster(pg)
    results = await asyncio.gather(*(save(pg, job_on(cluster), job_on(cluster)) for _ in range(15)))
    sequences = sorted(e.sequence for events in results for e in events)
    assert sequences == list(range(1, 31))
    log = await SqlEventLog(pg).read_after(cluster, 0, limit=100)
    assert [e.sequence for e in log] == list(range(1, 31))


async def test_event_log_pruning_moves_the_retention_floor(db: Database) -> None:
    cluster = await add_cluster(db)
    await save(db, *(job_on(cluster) for _ in range(10)))
    log = SqlEventLog(db)
    assert await log.prune(cluster, keep=4) == 6
    assert await log.retained_after(cluster) == 6
    assert [e.sequence for e in await log.read_after(cluster, 0, limit=100)] == [7, 8, 9, 10]
    assert await log.prune(cluster, keep=4) == 0


async def test_clusters_and_nodes(db: Database) -> None:
    cluster_id = await add_cluster(db, "gpu-farm")
    async with db.unit_of_work(SYSTEM) as uow:
        cluster = await uow.clusters.get_by_name("gpu-farm")
        assert cluster is not None and cluster.id == cluster_id
        assert cluster.status is ClusterStatus.AVAILABLE
        assert cluster.gpu_capacity() == {"nvidia-a100-80gb": 16, "nvidia-tesla-t4": 4}
        await uow.clusters.replace_nodes(cluster_id, cluster.nodes[:1])
        await uow.commit()
    async with db.unit_of_work(SYSTEM) as uow:
        again = await uow.clusters.get(cluster_id)
        assert again is not None and [n.name for n in again.nodes] == ["node-0"]
        assert (await uow.clusters.get_many([cluster_id, ClusterId(uuid.uuid4())])).keys() == {
            cluster_id
        }


async def test_tokens(db: Database) -> None:
    from domain.model.ids import TokenId
    from domain.model.principal import ApiToken, Scope

    token = ApiToken(
        TokenId(uuid.uuid4()),
        TenantId(uuid.uuid4()),
        "ci",
        "hash",
        frozenset({Scope.JOBS_READ}),
        frozenset({ProjectId(uuid.uuid4())}),
        T0,
    )
    async with db.unit_of_work(SYSTEM) as uow:
        await uow.tokens.add(token)
        await uow.commit()
    async with db.unit_of_work(SYSTEM) as uow:
        assert await uow.tokens.get(token.id) == token
        assert await uow.tokens.revoke(token.id, T0) is True
        assert await uow.tokens.revoke(token.id, T0) is False
        await uow.commit()
    async with db.unit_of_work(SYSTEM) as uow:
        loaded = await uow.tokens.get(token.id)
        assert loaded is not None and loaded.revoked
        assert await uow.tokens.count() == 1


async def test_start_up_times_are_admission_to_running_per_attempt(db: Database) -> None:
    """What the estimates learn a cluster's start-up from (issue 11): ADMITTED -> RUNNING of
    the latest attempts on that cluster, by job type; attempts still starting, and other
    clusters, are not counted."""
    cluster, other = await add_cluster(db, "a"), await add_cluster(db, "b")
    batch, training, starting = job_on(cluster), job_on(cluster), job_on(cluster)
    training.job_type = JobType.TRAINING
    elsewhere = job_on(other)
    await save(db, batch, training, starting, elsewhere)
    steps = [(batch, 4.0), (training, 30.0), (starting, None), (elsewhere, 9.0)]
    async with db.unit_of_work(SYSTEM) as uow:
        for n, (job, startup) in enumerate(steps):
            loaded = await uow.jobs.get(job.id)
            assert loaded is not None
            admitted = T0 + timedelta(minutes=n)
            loaded.transition(JobStatus.QUEUED, "queued", admitted)
            loaded.transition(JobStatus.ADMITTED, "admitted", admitted)
            if startup is not None:
                loaded.transition(
                    JobStatus.RUNNING, "running", admitted + timedelta(seconds=startup)
                )
        await uow.commit()
    async with db.unit_of_work(SYSTEM) as uow:
        found = await uow.jobs.startup_times(cluster, limit=10)
        latest = await uow.jobs.startup_times(cluster, limit=1)
    assert sorted(found) == [(JobType.BATCH, 4.0), (JobType.TRAINING, 30.0)]
    assert latest == [(JobType.TRAINING, 30.0)]


async def test_failed_runs_are_how_long_failed_attempts_ran(db: Database) -> None:
    """What the estimates learn failures from (issue 30): each attempt that failed after it
    ran, how long it ran (job time), newest first; an attempt that failed before it ran, a
    successful one, and other clusters' are not counted."""
    cluster, other = await add_cluster(db, "fails"), await add_cluster(db, "elsewhere")
    flaky, fine, never_ran, elsewhere = (
        job_on(cluster),
        job_on(cluster),
        job_on(cluster),
        job_on(other),
    )
    await save(db, flaky, fine, never_ran, elsewhere)

    def run(job: Job, began: datetime, seconds: float, final: JobStatus) -> None:
        job.transition(JobStatus.QUEUED, "queued", began)
        job.transition(JobStatus.ADMITTED, "admitted", began)
        job.transition(JobStatus.RUNNING, "running", began)
        job.transition(final, "over", began + timedelta(seconds=seconds))

    async with db.unit_of_work(SYSTEM) as uow:
        loaded = {j.id: await uow.jobs.get(j.id) for j in (flaky, fine, never_ran, elsewhere)}
        first, ok, early, far = (loaded[j.id] for j in (flaky, fine, never_ran, elsewhere))
        assert first is not None and ok is not None and early is not None and far is not None
        run(first, T0, 20.0, JobStatus.FAILED)
        first.begin_retry(T0 + timedelta(minutes=1), T0 + timedelta(minutes=1), "retry")
        run(first, T0 + timedelta(minutes=2), 40.0, JobStatus.FAILED)
        run(ok, T0, 60.0, JobStatus.COMPLETED)
        early.transition(JobStatus.QUEUED, "queued", T0)
        early.transition(JobStatus.FAILED, "rejected", T0 + timedelta(seconds=5))
        run(far, T0, 9.0, JobStatus.FAILED)
        await uow.commit()
    async with db.unit_of_work(SYSTEM) as uow:
        found = await uow.jobs.failed_runs(cluster, limit=10, time_scale=2.0)
        newest = await uow.jobs.failed_runs(cluster, limit=1)
    assert [(r.name, r.seconds, r.failed) for r in found] == [
        (flaky.name, 80.0, True),
        (flaky.name, 40.0, True),
    ]
    assert (
        found[0].tenant_id == flaky.tenant_id and found[0].gpu_count == flaky.resources.total_gpus
    )
    assert [r.seconds for r in newest] == [40.0]


async def test_run_times_carry_the_users_estimate_in_job_time(db: Database) -> None:
    """What duration learning reads (issue 11): the latest COMPLETED runs, newest first, each
    with the user's estimate beside its run time, which counts `time_scale` times as long on a
    simulated cluster that runs faster than real time; failed runs are not learned from."""
    cluster = await add_cluster(db, "runs")
    done, guessed, broken = job_on(cluster), job_on(cluster), job_on(cluster)
    done.estimated_duration_seconds = 4000
    guessed.estimated_duration_seconds = None
    await save(db, done, guessed, broken)
    outcomes = [(done, 60.0, JobStatus.COMPLETED), (guessed, 30.0, JobStatus.COMPLETED)]
    outcomes.append((broken, 10.0, JobStatus.FAILED))
    async with db.unit_of_work(SYSTEM) as uow:
        for n, (job, seconds, final) in enumerate(outcomes):
            loaded = await uow.jobs.get(job.id)
            assert loaded is not None
            began = T0 + timedelta(minutes=n)
            loaded.transition(JobStatus.QUEUED, "queued", began)
            loaded.transition(JobStatus.ADMITTED, "admitted", began)
            loaded.transition(JobStatus.RUNNING, "running", began)
            loaded.transition(final, "over", began + timedelta(seconds=seconds))
        await uow.commit()
    async with db.unit_of_work(SYSTEM) as uow:
        runs = await uow.jobs.run_times(cluster, limit=10, time_scale=10.0)
        newest = await uow.jobs.run_times(cluster, limit=1)
    assert [(r.name, r.seconds, r.estimated, r.finished) for r in runs] == [
        (guessed.name, 300.0, None, True),
        (done.name, 600.0, 4000.0, True),
    ]
    assert runs[1].tenant_id == done.tenant_id and runs[1].job_type is done.job_type
    assert [r.seconds for r in newest] == [30.0]


async def test_queued_in_windows_reads_only_windowed_queued_jobs(db: Database) -> None:
    """The window sweeper's read: QUEUED jobs with a time window, of the clusters asked for;
    not the other waiting jobs (which it would otherwise decode by the thousand every tick)."""
    from datetime import time

    from domain.model.job import TimeWindow

    cluster, other = await add_cluster(db, "windows"), await add_cluster(db, "elsewhere")
    night = TimeWindow(time(22, 0), time(6, 0))
    windowed, plain, pending = job_on(cluster), job_on(cluster), job_on(cluster)
    running, far = job_on(cluster), job_on(other)
    for job in (windowed, pending, running, far):
        job.window = night
    await save(db, windowed, plain, pending, running, far)
    async with db.unit_of_work(SYSTEM) as uow:
        for job in (windowed, plain, running, far):
            loaded = await uow.jobs.get(job.id)
            assert loaded is not None
            loaded.transition(JobStatus.QUEUED, "queued", T0)
            if job is running:
                loaded.transition(JobStatus.ADMITTED, "admitted", T0)
        await uow.commit()
    async with db.unit_of_work(SYSTEM) as uow:
        found = await uow.jobs.queued_in_windows([cluster])
        both = await uow.jobs.queued_in_windows([cluster, other])
        none = await uow.jobs.queued_in_windows([])
    assert [j.id for j in found] == [windowed.id]
    assert found[0].window == night
    assert {j.id for j in both} == {windowed.id, far.id}
    assert none == []
