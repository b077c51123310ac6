"""Model deployments with fakes of every port.

Covers: a deployment and its replica jobs are stored together (or nothing, on any bad input, each
named by its field); workers and status follow the replica jobs and the endpoint; a replica job's
change queues the deployment's refresh; scaling adds replicas with new numbers or cancels the
newest, and replicas are metered as the jobs they are (3 replicas over a scale-down); stopping
cancels every replica; a tenant never sees or changes another's deployment; users cannot make
jobs that pose as a deployment's replicas.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import replace
from datetime import timedelta
from decimal import Decimal

import pytest

from domain.errors import Conflict, NotFound, ValidationFailed
from domain.model.autoscaling import ServingLoad
from domain.model.cluster import Cluster
from domain.model.deployment import (
    Deployment,
    DeploymentChanged,
    DeploymentStatus,
    EndpointState,
    EngineArgs,
    WorkerStatus,
)
from domain.model.ids import ClusterId, JobId, ProjectId, TenantId
from domain.model.job import DeploymentType, Job, JobStatus, JobType, Placement, SourceKind
from domain.model.principal import Principal, Scope
from domain.services import task_names
from domain.services.deployments import DeploymentRequest, DeploymentService
from domain.services.jobs import JobService
from domain.services.reactions import Reactions
from domain.services.submission import JobSubmission
from tests.support.fakes import (
    FakeClock,
    FakePublisher,
    FakeTaskQueue,
    FakeUnitOfWorkFactory,
    install_cluster,
    make_cluster,
)

A100 = "nvidia-a100-80gb"
T4 = "nvidia-tesla-t4"
URL = "http://127.0.0.1:9/d/x/v1"


class Endpoints:
    """The cluster's word on endpoints: ready when told, and while a replica runs."""

    def __init__(self) -> None:
        self.ready = True
        self.asked: list[tuple[str, tuple[JobId, ...]]] = []
        self.seen: ServingLoad | None = None

    async def endpoint(
        self, cluster: Cluster, deployment: Deployment, running: Sequence[JobId]
    ) -> EndpointState:
        self.asked.append((deployment.name, tuple(running)))
        return EndpointState(URL, self.ready and bool(running), {j: 0.25 for j in running})

    async def load(
        self, cluster: Cluster, deployment: Deployment, running: Sequence[JobId]
    ) -> ServingLoad | None:
        """`seen`, as told (None: not known)."""
        return self.seen


class World:
    def __init__(self) -> None:
        self.clock = FakeClock()
        self.uow = FakeUnitOfWorkFactory()
        self.tasks = FakeTaskQueue()
        self.cluster = install_cluster(self.uow.store, make_cluster(ClusterId(uuid.uuid4())))
        self.jobs = JobService(uow=self.uow, clock=self.clock, tasks=self.tasks)
        self.endpoints = Endpoints()
        self.service = DeploymentService(
            uow=self.uow, clock=self.clock, jobs=self.jobs, endpoints=self.endpoints
        )
        self.uow.after_commit = Reactions(publisher=FakePublisher(), tasks=self.tasks, uow=self.uow)
        self.alice = Principal(
            TenantId(uuid.uuid4()), frozenset({Scope.JOBS_READ, Scope.JOBS_WRITE})
        )
        self.bob = Principal(TenantId(uuid.uuid4()), frozenset({Scope.JOBS_READ, Scope.JOBS_WRITE}))
        self.project = ProjectId(uuid.uuid4())

    def request(self, **changes: object) -> DeploymentRequest:
        base = DeploymentRequest(
            name="llama",
            project_id=self.project,
            cluster_id=self.cluster.id,
            model="meta-llama/Llama-3.1-8B-Instruct",
            gpu_type=A100,
            engine_args=EngineArgs(tensor_parallel_size=2),
            replicas=2,
        )
        return replace(base, **changes)  # type: ignore[arg-type]

    def replica_jobs(self, d: Deployment) -> list[Job]:
        return [self.uow.store.jobs[j] for j in d.replica_jobs]

    def run(self, job: Job, node: str = "node-0", gpus: tuple[int, ...] = (0, 1)) -> None:
        """The cluster runs a replica (what the watch's observations do)."""
        stored = self.uow.store.jobs[job.id]
        for status in (JobStatus.QUEUED, JobStatus.ADMITTED, JobStatus.RUNNING):
            stored.transition(
                status, status.value.lower(), self.clock.now(), placements=(Placement(node, gpus),)
            )
        stored.changes.clear()


@pytest.fixture
def world() -> World:
    return World()


async def test_deploy_stores_the_deployment_and_one_service_job_per_replica(world: World) -> None:
    d = await world.service.deploy(world.alice, world.request())

    assert world.uow.store.deployments[d.id].status is DeploymentStatus.DEPLOYING
    jobs = world.replica_jobs(d)
    assert [j.name for j in jobs] == ["llama-0", "llama-1"]
    for job in jobs:
        assert job.job_type is JobType.SERVICE and job.deployment_type is DeploymentType.MODEL
        assert job.resources.gpu_type == A100 and job.resources.gpu_count == 2  # TP 2
        assert job.source.kind is SourceKind.DEPLOYMENT and job.source.source_id == str(d.id)
        assert job.status is JobStatus.PENDING
    assert [w.status for w in d.workers] == [WorkerStatus.PENDING, WorkerStatus.PENDING]
    events = world.uow.store.events[world.cluster.id]
    created = [e.change for e in events if isinstance(e.change, DeploymentChanged)]
    assert len(created) == 1 and created[0].deployment.id == d.id
    handed = [t for t in world.tasks.enqueued if t.task == task_names.SUBMIT_WORKLOAD]
    assert {t.kwargs["job_id"] for t in handed} == {str(j.id) for j in jobs}


@pytest.mark.parametrize(
    ("changes", "field", "code"),
    [
        ({"model": "llama 3"}, "model", "UNKNOWN_MODEL_FORMAT"),
        ({"model": "/models/../etc"}, "model", "UNKNOWN_MODEL_FORMAT"),
        ({"model": "ftp://x/y"}, "model", "UNKNOWN_MODEL_FORMAT"),
        ({"replicas": -1}, "replicas", "INVALID"),
        ({"replicas": 65}, "replicas", "INVALID"),
        ({"gpus_per_replica": 3}, "gpus_per_replica", "TENSOR_PARALLEL_MISMATCH"),
        (
            {"engine_args": EngineArgs(tensor_parallel_size=3)},
            "engine_args.tensor_parallel_size",
            "INVALID",
        ),
        (
            {"engine_args": EngineArgs(tensor_parallel_size=16)},
            "engine_args.tensor_parallel_size",
            "EXCEEDS_CLUSTER",
        ),
        (
            {"gpu_type": T4, "engine_args": EngineArgs(tensor_parallel_size=8)},
            "engine_args.tensor_parallel_size",
            "EXCEEDS_CLUSTER",
        ),
        ({"gpu_type": "nvidia-h100-80gb"}, "gpu_type", "NOT_ON_CLUSTER"),
        (
            {"gpu_type": T4, "engine_args": EngineArgs()},
            "engine_args.tensor_parallel_size",
            "MODEL_TOO_LARGE",
        ),  # 8B in FP16: 16 GB of weights on one 16 GB T4
        (
            {"model": "Qwen/Qwen2.5-72B-Instruct"},
            "engine_args.tensor_parallel_size",
            "MODEL_TOO_LARGE",
        ),  # 144 GB on 2 x 80 GB
        ({"gpu_type": None}, "gpu_type", "REQUIRED"),
        ({"name": "Llama_1"}, "name", "INVALID_NAME"),
        ({"name": "x" * 51}, "name", "INVALID_NAME"),
        ({"engine_args": EngineArgs(max_num_seqs=0)}, "engine_args.max_num_seqs", "INVALID"),
        ({"engine_args": EngineArgs(dtype="int3")}, "engine_args.dtype", "INVALID"),
        ({"engine_args": EngineArgs(extra_args=("a\x00",))}, "engine_args.extra_args", "INVALID"),
        ({"cpu_cores": 0.0}, "cpu_cores", "INVALID"),
        ({"chart": "my/chart"}, "chart", "UNSUPPORTED"),
        ({"cluster_id": ClusterId(uuid.uuid4())}, "cluster_id", "NOT_FOUND"),
    ],
)
async def test_every_bad_input_is_named_and_nothing_is_stored(
    world: World, changes: dict[str, object], field: str, code: str
) -> None:
    with pytest.raises(ValidationFailed) as caught:
        await world.service.deploy(world.alice, world.request(**changes))
    assert (field, code) in [(i.field, i.code) for i in caught.value.issues], caught.value.issues
    assert not world.uow.store.deployments
    assert not world.uow.store.jobs
    assert not world.uow.store.events[world.cluster.id]


async def test_status_and_workers_follow_the_replicas_and_the_endpoint(world: World) -> None:
    d = await world.service.deploy(world.alice, world.request())
    first, _ = world.replica_jobs(d)

    world.run(first, "node-1", (4, 5))
    world.endpoints.ready = False
    assert await world.service.refresh(d.id)
    stored = world.uow.store.deployments[d.id]
    assert stored.status is DeploymentStatus.DEPLOYING  # a replica runs, the endpoint is silent
    assert stored.endpoint_url is None  # shown once it serves

    world.endpoints.ready = True
    assert await world.service.refresh(d.id)
    stored = world.uow.store.deployments[d.id]
    assert stored.status is DeploymentStatus.RUNNING
    assert stored.endpoint_url == URL
    assert stored.endpoints  # what it serves, once it does
    running, pending = stored.workers
    assert (running.status, running.node, running.devices) == (
        WorkerStatus.RUNNING,
        "node-1",
        (4, 5),
    )
    assert running.started_at == world.clock.now() and running.restarts == 0
    assert pending.status is WorkerStatus.PENDING and pending.node is None
    assert not await world.service.refresh(d.id)  # nothing changed: no event

    # utilisation is read when the deployment is read (it changes with every request)
    read = await world.service.get(world.alice, d.id)
    assert read is not None and read.workers[0].utilisation == 0.25


async def test_a_failed_replica_shows_as_an_error_and_its_retry_as_a_restart(world: World) -> None:
    d = await world.service.deploy(world.alice, world.request(replicas=1))
    (job,) = world.replica_jobs(d)
    world.run(job)
    stored_job = world.uow.store.jobs[job.id]
    stored_job.transition(JobStatus.FAILED, "CUDA out of memory", world.clock.now())
    await world.service.refresh(d.id)
    stored = world.uow.store.deployments[d.id]
    assert stored.status is DeploymentStatus.FAILED
    assert stored.status_message == "CUDA out of memory"
    assert stored.workers[0].status is WorkerStatus.ERROR

    world.clock.advance(30)
    stored_job = world.uow.store.jobs[job.id]  # a commit stores copies
    stored_job.begin_retry(world.clock.now(), world.clock.now(), "retrying")
    world.run(stored_job)
    await world.service.refresh(d.id)
    worker = world.uow.store.deployments[d.id].workers[0]
    assert worker.status is WorkerStatus.RUNNING and worker.restarts == 1
    assert worker.last_restart_at == world.clock.now()


async def test_a_replica_change_queues_the_deployment_refresh(world: World) -> None:
    d = await world.service.deploy(world.alice, world.request(replicas=1))
    job_id = d.replica_jobs[0]
    await world.jobs.cancel(world.alice, job_id, "by hand")
    refreshes = [t for t in world.tasks.enqueued if t.task == task_names.REFRESH_DEPLOYMENT]
    assert [t.kwargs["deployment_id"] for t in refreshes] == [str(d.id)]


async def test_scaling_adds_new_replicas_and_cancels_the_newest(world: World) -> None:
    d = await world.service.deploy(world.alice, world.request(replicas=1))
    scaled = await world.service.scale(world.alice, d.id, 3)
    assert scaled.replicas == 3
    assert [j.name for j in world.replica_jobs(scaled)] == ["llama-0", "llama-1", "llama-2"]

    down = await world.service.scale(world.alice, d.id, 1)
    statuses = [j.status for j in world.replica_jobs(down)]
    assert statuses == [JobStatus.PENDING, JobStatus.CANCELLED, JobStatus.CANCELLED]
    assert [w.status for w in down.workers][1:] == [WorkerStatus.TERMINATED] * 2

    again = await world.service.scale(world.alice, d.id, 2)  # new numbers, never reused
    assert [j.name for j in world.replica_jobs(again)][-1] == "llama-3"

    zero = await world.service.scale(world.alice, d.id, 0)
    assert (
        zero.status is DeploymentStatus.STOPPED and zero.status_message == "scaled to zero replicas"
    )
    assert all(j.status is JobStatus.CANCELLED for j in world.replica_jobs(zero))

    with pytest.raises(ValidationFailed):
        await world.service.scale(world.alice, d.id, -1)


async def test_replicas_are_metered_as_the_jobs_they_are_over_a_scale_down(world: World) -> None:
    d = await world.service.deploy(world.alice, world.request(replicas=3))
    for n, job in enumerate(world.replica_jobs(d)):  # 2 A100s each (TP 2), 2.50 an hour each
        world.run(job, node=f"node-{n}")
    world.clock.current += timedelta(minutes=30)
    down = await world.service.scale(world.alice, d.id, 1)
    kept, *gone = world.replica_jobs(down)
    assert [j.status for j in gone] == [JobStatus.CANCELLED] * 2
    assert [j.actual_cost for j in gone] == [Decimal("2.5")] * 2  # 2 GPUs x half an hour
    assert kept.status is JobStatus.RUNNING and kept.actual_cost is None
    metered = [(u.job_id, u.gpus, u.outcome, cost) for u, cost in world.uow.store.usage]
    assert sorted(metered, key=str) == sorted(
        [(j.id, 2, JobStatus.CANCELLED, Decimal("2.5")) for j in gone], key=str
    )
    world.clock.current += timedelta(minutes=30)
    await world.service.stop(world.alice, d.id)
    assert world.uow.store.jobs[kept.id].actual_cost == Decimal("5")  # a whole hour
    assert len(world.uow.store.usage) == 3


async def test_stop_cancels_every_replica_and_is_final(world: World) -> None:
    d = await world.service.deploy(world.alice, world.request())
    world.run(world.replica_jobs(d)[0])
    await world.service.refresh(d.id)
    stopped = await world.service.stop(world.alice, d.id)
    assert stopped.status is DeploymentStatus.STOPPED and stopped.endpoint_url is None
    assert all(j.status is JobStatus.CANCELLED for j in world.replica_jobs(stopped))
    with pytest.raises(Conflict):
        await world.service.stop(world.alice, d.id)
    with pytest.raises(Conflict):
        await world.service.scale(world.alice, d.id, 2)


async def test_another_tenant_neither_sees_nor_changes_it(world: World) -> None:
    d = await world.service.deploy(world.alice, world.request(replicas=1))
    assert await world.service.get(world.bob, d.id) is None
    with pytest.raises(NotFound):
        await world.service.scale(world.bob, d.id, 3)
    with pytest.raises(NotFound):
        await world.service.stop(world.bob, d.id)
    assert (await world.service.page(world.bob)).items == []
    assert [x.id for x in (await world.service.page(world.alice)).items] == [d.id]
    assert world.uow.store.deployments[d.id].replicas == 1


async def test_users_cannot_submit_jobs_posing_as_replicas(world: World) -> None:
    forged = JobSubmission(
        name="forged",
        project_id=world.project,
        cluster_id=world.cluster.id,
        job_type=JobType.SERVICE,
        deployment_type=DeploymentType.MODEL,
        source_kind=SourceKind.DEPLOYMENT,
        source_id=str(uuid.uuid4()),
    )
    with pytest.raises(ValidationFailed) as caught:
        await world.jobs.submit(world.alice, forged)
    assert ("source.kind", "UNSUPPORTED") in [(i.field, i.code) for i in caught.value.issues]


@pytest.mark.parametrize("key", ["deployment", "benchmark"])
async def test_users_cannot_submit_specs_only_budcluster_writes(world: World, key: str) -> None:
    forged = JobSubmission(
        name="forged",
        project_id=world.project,
        cluster_id=world.cluster.id,
        job_type=JobType.SERVICE,
        deployment_type=DeploymentType.MODEL,
        spec={key: {"id": str(uuid.uuid4())}},
    )
    with pytest.raises(ValidationFailed) as caught:
        await world.jobs.submit(world.alice, forged)
    assert (f"spec.{key}", "RESERVED") in [(i.field, i.code) for i in caught.value.issues]
    assert not world.uow.store.jobs


def test_what_fits_a_replica_is_what_its_gpus_hold() -> None:
    from domain.serving.models import fit_problem, gpu_memory_gb

    assert gpu_memory_gb("nvidia-a100-80gb") == 80 and gpu_memory_gb("nvidia-tesla-t4") == 16
    assert gpu_memory_gb("nvidia-a100-80gb-mig-1g-10gb") == 10
    assert gpu_memory_gb("vendor-unknown") is None
    assert fit_problem("org/llama-8b", T4, 1) is not None
    assert fit_problem("org/llama-8b", T4, 2) is None  # tensor parallel 2: 28.8 GB of room
    assert fit_problem("org/llama-8b", T4, 1, quantization="awq") is None  # 4 GB
    assert fit_problem("org/llama-70b", A100, 1, quantization="fp8") is not None  # 70 > 64.8 GB
    assert fit_problem("org/llama-70b", A100, 2, quantization="fp8") is None
    assert fit_problem("org/llama-70b", A100, 1, dtype="float32") is not None
    assert fit_problem("org/mystery-model", T4, 1) is None  # no size named: not checked
