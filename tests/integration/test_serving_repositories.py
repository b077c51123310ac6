"""Deployments and benchmarks in real PostgreSQL and SQLite.

Covers: both survive the round trip field for field; their events go to the outbox with the
cluster's next sequences and the owning tenant, and decode as they were; a stale save is refused;
tenant scope hides them (and a benchmark's samples); paging is newest first; the deployments
with an endpoint (not stopped) are found across tenants under the system scope, a tenant's own
under its scope; samples are kept whole and replaced on a second save.
"""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
import sqlalchemy as sa

from adapters.db.engine import Database
from adapters.db.eventlog import SqlEventLog
from adapters.db.tables import outbox
from domain.errors import Conflict
from domain.model.benchmark import Benchmark, BenchmarkChanged, BenchmarkStatus
from domain.model.deployment import (
    Deployment,
    DeploymentChanged,
    DeploymentStatus,
    Engine,
    EngineArgs,
    Worker,
    WorkerStatus,
)
from domain.model.ids import (
    BenchmarkId,
    ClusterId,
    DeploymentId,
    JobId,
    ProjectId,
    TenantId,
)
from domain.model.load import (
    FailureKind,
    Lengths,
    LoadPlan,
    LoadProgress,
    LoadRun,
    RequestSample,
)
from domain.ports.unit_of_work import TenantScope
from domain.serving.metrics import summarize
from tests.integration.test_repositories import SYSTEM, add_cluster
from tests.support.fakes import T0


def deployment_on(cluster: ClusterId, tenant: TenantId, name: str = "llama") -> Deployment:
    d = Deployment(
        id=DeploymentId(uuid.uuid4()),
        tenant_id=tenant,
        project_id=ProjectId(uuid.uuid4()),
        cluster_id=cluster,
        name=name,
        model="meta-llama/Llama-3.1-8B-Instruct",
        served_model_name="llama",
        engine=Engine.VLLM,
        engine_args=EngineArgs(tensor_parallel_size=2, extra_args=("--enforce-eager",)),
        gpu_type="nvidia-a100-80gb",
        cpu_cores=8.0,
        memory_gb=64.0,
        replicas=1,
        created_at=T0,
        updated_at=T0,
        replica_jobs=(JobId(uuid.uuid4()),),
    )
    d.workers = (
        Worker(
            0,
            d.replica_jobs[0],
            "llama-0",
            WorkerStatus.RUNNING,
            None,
            "node-0",
            (0, 1),
            1,
            T0,
            T0 + timedelta(seconds=5),
            8.0,
            64.0,
        ),
    )
    d.record_creation()
    return d


SAMPLES = [
    RequestSample(0, 0.0, True, 100, 3, 0.1, 0.14, (0.02, 0.02)),
    RequestSample(1, 0.05, False, 100, 0, failure=FailureKind.TIMEOUT, error="stalled: 1s"),
]


def benchmark_on(cluster: ClusterId, tenant: TenantId, name: str = "bench") -> Benchmark:
    b = Benchmark(
        id=BenchmarkId(uuid.uuid4()),
        tenant_id=tenant,
        project_id=ProjectId(uuid.uuid4()),
        cluster_id=cluster,
        name=name,
        plan=LoadPlan(
            "http://h/v1",
            "llama",
            concurrency=4,
            request_count=10,
            prompt_tokens=Lengths.uniform(10, 20),
        ),
        job_id=JobId(uuid.uuid4()),
        created_at=T0,
        updated_at=T0,
        configuration={"gpu_type": "nvidia-a100-80gb", "engine_args": {"max_model_len": 4096}},
    )
    b.record_creation()
    return b


async def test_deployment_round_trip_events_and_stale_saves(db: Database) -> None:
    cluster = await add_cluster(db)
    alice = TenantId(uuid.uuid4())
    d = deployment_on(cluster, alice)
    async with db.unit_of_work(SYSTEM) as uow:
        await uow.deployments.add(d)
        stored = await uow.commit()
    assert [type(e.change) for e in stored] == [DeploymentChanged]
    async with db.unit_of_work(TenantScope(alice)) as uow:
        loaded = await uow.deployments.get(d.id)
    assert loaded is not None
    for field in ("name", "model", "engine_args", "workers", "replica_jobs", "created_at"):
        assert getattr(loaded, field) == getattr(d, field), field

    events = await SqlEventLog(db).read_after(cluster, 0, limit=10)
    assert isinstance(events[0].change, DeploymentChanged)
    assert events[0].change.deployment.workers == d.workers
    async with db.engine.connect() as conn:
        tenants = (await conn.execute(sa.select(outbox.c.tenant_id))).scalars().all()
    assert tenants == [alice]

    async with db.unit_of_work(SYSTEM) as uow:
        one = await uow.deployments.get(d.id)
        assert one is not None
    async with db.unit_of_work(SYSTEM) as uow:
        two = await uow.deployments.get(d.id)
        assert two is not None
        two.replicas = 3
        two.record_update()
        await uow.deployments.save(two)
        await uow.commit()
    async with db.unit_of_work(SYSTEM) as uow:
        one.replicas = 5
        with pytest.raises(Conflict):
            await uow.deployments.save(one)  # read before the other save: refused
    async with db.unit_of_work(SYSTEM) as uow:
        again = await uow.deployments.get(d.id)
    assert again is not None and again.replicas == 3


async def test_tenants_and_pages(db: Database) -> None:
    cluster = await add_cluster(db)
    alice, bob = TenantId(uuid.uuid4()), TenantId(uuid.uuid4())
    older, newer = deployment_on(cluster, alice, "a"), deployment_on(cluster, alice, "b")
    newer.created_at = T0 + timedelta(seconds=1)
    mine = benchmark_on(cluster, alice)
    async with db.unit_of_work(SYSTEM) as uow:
        await uow.deployments.add(older)
        await uow.deployments.add(newer)
        await uow.benchmarks.add(mine)
        await uow.benchmarks.save_samples(mine.id, SAMPLES)
        await uow.commit()
    async with db.unit_of_work(TenantScope(bob)) as uow:
        assert await uow.deployments.get(older.id) is None
        assert await uow.deployments.on_cluster(cluster, limit=10) == []
        assert await uow.benchmarks.get(mine.id) is None
        assert await uow.benchmarks.samples(mine.id) is None
        assert (
            await uow.benchmarks.page(deployment_id=None, project_ids=None, first=5, after=None)
        ).items == []
    async with db.unit_of_work(TenantScope(alice)) as uow:
        page = await uow.deployments.page(
            cluster_ids=frozenset({cluster}),
            project_ids=None,
            statuses=frozenset(),
            first=1,
            after=None,
        )
        assert [d.name for d in page.items] == ["b"] and page.has_next
        assert await uow.benchmarks.samples(mine.id) == SAMPLES


async def test_deployments_with_endpoints_are_found_across_tenants(db: Database) -> None:
    cluster = await add_cluster(db)
    alice, bob = TenantId(uuid.uuid4()), TenantId(uuid.uuid4())
    serving, other, silent, stopped, idle = (
        deployment_on(cluster, tenant, name)
        for tenant, name in ((alice, "a"), (bob, "b"), (alice, "c"), (alice, "d"), (alice, "e"))
    )
    serving.endpoint_url = "http://127.0.0.1:9100/d/a/v1"
    other.endpoint_url = "http://127.0.0.1:9100/d/b/v1"
    stopped.endpoint_url = "http://127.0.0.1:9100/d/d/v1"
    stopped.stop(stopped.created_at)  # by its user
    idle.endpoint_url = "http://127.0.0.1:9100/d/e/v1"
    idle.status = DeploymentStatus.STOPPED  # at zero replicas: its URL still brings it back
    async with db.unit_of_work(SYSTEM) as uow:
        for d in (serving, other, silent, stopped, idle):
            await uow.deployments.add(d)
        await uow.commit()
    async with db.unit_of_work(SYSTEM) as uow:
        everyone = await uow.deployments.with_endpoints()
    async with db.unit_of_work(TenantScope(alice)) as uow:
        hers = await uow.deployments.with_endpoints()
    assert sorted(d.name for d in everyone) == ["a", "b", "e"]
    assert sorted(d.name for d in hers) == ["a", "e"]


async def test_benchmark_round_trip_with_result_progress_and_samples(db: Database) -> None:
    cluster = await add_cluster(db)
    alice = TenantId(uuid.uuid4())
    b = benchmark_on(cluster, alice)
    async with db.unit_of_work(SYSTEM) as uow:
        await uow.benchmarks.add(b)
        await uow.benchmarks.save_samples(b.id, SAMPLES[:1])
        await uow.commit()
    result = summarize(LoadRun(tuple(SAMPLES), 2.0))
    async with db.unit_of_work(SYSTEM) as uow:
        loaded = await uow.benchmarks.get(b.id)
        assert loaded is not None
        loaded.start(b.plan, b.configuration, T0)
        loaded.report(LoadProgress(1.0, 1, 1, 3, 0.1, 3.0), T0)
        loaded.finish(BenchmarkStatus.COMPLETED, "done", T0, result)
        await uow.benchmarks.save(loaded)
        await uow.benchmarks.save_samples(b.id, SAMPLES)
        stored = await uow.commit()
    assert [type(e.change) for e in stored] == [BenchmarkChanged] * 3
    async with db.unit_of_work(SYSTEM) as uow:
        again = await uow.benchmarks.get(b.id)
        samples = await uow.benchmarks.samples(b.id)
        running = await uow.benchmarks.unfinished()
    assert again is not None
    assert (again.status, again.result, again.progress, again.plan, again.configuration) == (
        BenchmarkStatus.COMPLETED,
        result,
        LoadProgress(1.0, 1, 1, 3, 0.1, 3.0),
        b.plan,
        b.configuration,
    )
    assert samples == SAMPLES and running == []
