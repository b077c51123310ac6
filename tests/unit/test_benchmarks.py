"""Benchmarks with fakes of every port (the load generator too).

Covers: validation of every input (one target, endpoint URLs that may not be loaded, load shape,
lengths); an endpoint must resolve to public addresses only (each refused range, wrapped IPv4
forms, names resolving to loopback or metadata, a name with one private address, a name that does
not resolve: all one message; legacy address forms refused), the operator's allow-list (ranges,
names; metadata never); another tenant's deployment by its URL in any form is NOT_FOUND, and a
deployment's own (loopback) endpoint is loaded as that deployment, outside the address rules;
a benchmark and its GPU-less job stored together; a run claimed once, reporting
progress on the clock, storing its result and samples, and ending its job as a pod would (the
progress stream's last message counting every request the run ended, not the last report's); an
unreachable endpoint, every request failing, a deployment not serving: FAILED with the reason;
cancelling stops the run and keeps what it measured; a job that ends first ends the benchmark;
a run whose process died is swept; comparisons name what differs and the best by each metric;
tenants are kept apart.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from dataclasses import replace

import pytest

from domain.errors import Conflict, NotFound, ValidationFailed
from domain.model.benchmark import BenchmarkChanged, BenchmarkChangeKind, BenchmarkStatus
from domain.model.deployment import Deployment, DeploymentStatus
from domain.model.ids import BenchmarkId, ClusterId, ProjectId, TenantId
from domain.model.job import JobStatus, JobType, SourceKind
from domain.model.load import (
    EndpointUnreachable,
    FailureKind,
    LengthKind,
    Lengths,
    LoadPlan,
    LoadRun,
    RequestSample,
)
from domain.model.outbound import NOT_REACHABLE
from domain.model.principal import Principal, Scope
from domain.ports.unit_of_work import TenantScope
from domain.services import task_names
from domain.services.benchmark_progress import BenchmarkProgressService
from domain.services.benchmark_runs import BenchmarkRunner
from domain.services.benchmarks import BenchmarkRequest, BenchmarkService
from domain.services.deployments import DeploymentRequest, DeploymentService
from domain.services.jobs import JobService
from domain.services.reactions import Reactions
from tests.support.fakes import (
    FakeClock,
    FakeEventLog,
    FakeGatewayFactory,
    FakeHub,
    FakeOutboundPolicy,
    FakePublisher,
    FakeTaskQueue,
    FakeUnitOfWorkFactory,
    install_cluster,
    make_cluster,
)
from tests.unit.test_deployments import Endpoints
from tests.unit.test_job_service import HubPublisher

URL = "http://127.0.0.1:8000/v1"


def ok(index: int, ttft: float = 0.1, gaps: tuple[float, ...] = (0.02, 0.02)) -> RequestSample:
    e2el = ttft + sum(gaps)
    return RequestSample(index, index * 0.1, True, 10, len(gaps) + 1, ttft, e2el, gaps)


def failed(index: int) -> RequestSample:
    return RequestSample(
        index, 0.0, False, 10, 0, failure=FailureKind.HTTP_STATUS, error="HTTP 500"
    )


class Load:
    """A load generator that sends `samples` once released (or stops when told)."""

    def __init__(self) -> None:
        self.samples: list[RequestSample] = [ok(i) for i in range(4)]
        self.release = asyncio.Event()
        self.plans: list[LoadPlan] = []
        self.raises: Exception | None = None
        self.started = asyncio.Event()
        self.own_endpoint: list[bool] = []

    async def run(
        self,
        plan: LoadPlan,
        *,
        on_sample: Callable[[RequestSample], None] | None = None,
        stop: asyncio.Event | None = None,
        own_endpoint: bool = False,
    ) -> LoadRun:
        self.plans.append(plan)
        self.own_endpoint.append(own_endpoint)
        self.started.set()
        if self.raises is not None:
            raise self.raises
        assert on_sample is not None and stop is not None
        on_sample(self.samples[0])
        released = asyncio.ensure_future(self.release.wait())
        stopped = asyncio.ensure_future(stop.wait())
        await asyncio.wait([released, stopped], return_when=asyncio.FIRST_COMPLETED)
        released.cancel()
        stopped.cancel()
        if stop.is_set():
            return LoadRun(tuple(self.samples[:1]), 1.0, cancelled=True)
        for sample in self.samples[1:]:
            on_sample(sample)
        return LoadRun(tuple(self.samples), 2.0)


class World:
    def __init__(self) -> None:
        self.clock = FakeClock(manual=True)
        self.uow = FakeUnitOfWorkFactory()
        self.tasks = FakeTaskQueue()
        self.cluster = install_cluster(self.uow.store, make_cluster(ClusterId(uuid.uuid4())))
        self.jobs = JobService(uow=self.uow, clock=self.clock, tasks=self.tasks)
        self.endpoints = Endpoints()
        self.deployments = DeploymentService(
            uow=self.uow, clock=self.clock, jobs=self.jobs, endpoints=self.endpoints
        )
        self.outbound = FakeOutboundPolicy(allow=["127.0.0.1"])  # the operator's, for `URL`
        self.service = BenchmarkService(
            uow=self.uow, clock=self.clock, jobs=self.jobs, outbound=self.outbound
        )
        self.gateways = FakeGatewayFactory()
        self.load = Load()
        self.runner = BenchmarkRunner(
            uow=self.uow, clock=self.clock, gateways=self.gateways, loadgen=self.load
        )
        self.uow.after_commit = Reactions(publisher=FakePublisher(), tasks=self.tasks, uow=self.uow)
        scopes = frozenset({Scope.JOBS_READ, Scope.JOBS_WRITE})
        self.alice = Principal(TenantId(uuid.uuid4()), scopes)
        self.bob = Principal(TenantId(uuid.uuid4()), scopes)
        self.project = ProjectId(uuid.uuid4())

    def request(self, **changes: object) -> BenchmarkRequest:
        base = BenchmarkRequest(
            name="bench",
            project_id=self.project,
            endpoint_url=URL,
            cluster_id=self.cluster.id,
            model="llama",
            concurrency=4,
            request_count=4,
        )
        return replace(base, **changes)  # type: ignore[arg-type]

    def run_job(self, benchmark_id: BenchmarkId) -> None:
        """The cluster admits and runs the benchmark's job."""
        job = self.uow.store.jobs[self.uow.store.benchmarks[benchmark_id].job_id]
        for status in (JobStatus.QUEUED, JobStatus.ADMITTED, JobStatus.RUNNING):
            job.transition(status, status.value.lower(), self.clock.now())
        job.changes.clear()

    def stored(self, benchmark_id: BenchmarkId) -> BenchmarkStatus:
        return self.uow.store.benchmarks[benchmark_id].status


@pytest.fixture
def world() -> World:
    return World()


@pytest.mark.parametrize(
    ("changes", "field", "code"),
    [
        ({"endpoint_url": None}, "deployment_id", "REQUIRED"),
        ({"deployment_id": uuid.uuid4()}, "deployment_id", "REQUIRED"),  # and a URL: not both
        ({"endpoint_url": "http://169.254.169.254/v1"}, "endpoint_url", "FORBIDDEN_ENDPOINT"),
        ({"endpoint_url": "http://[fe80::1]/v1"}, "endpoint_url", "FORBIDDEN_ENDPOINT"),
        (
            {"endpoint_url": "http://metadata.google.internal/v1"},
            "endpoint_url",
            "FORBIDDEN_ENDPOINT",
        ),
        ({"endpoint_url": "http://user:pw@host/v1"}, "endpoint_url", "FORBIDDEN_ENDPOINT"),
        ({"endpoint_url": "file:///etc/passwd"}, "endpoint_url", "FORBIDDEN_ENDPOINT"),
        ({"endpoint_url": "http://host/v1?x=1"}, "endpoint_url", "FORBIDDEN_ENDPOINT"),
        ({"cluster_id": None}, "cluster_id", "REQUIRED"),
        ({"model": None}, "model", "REQUIRED"),
        ({"concurrency": None}, "concurrency", "REQUIRED"),
        ({"concurrency": 0}, "concurrency", "INVALID"),
        ({"concurrency": 5000}, "concurrency", "INVALID"),
        ({"request_rate": float("nan")}, "request_rate", "INVALID"),
        ({"request_rate": -1.0}, "request_rate", "INVALID"),
        ({"request_count": None}, "request_count", "REQUIRED"),
        ({"request_count": 0}, "request_count", "INVALID"),
        ({"duration_seconds": float("inf")}, "duration_seconds", "INVALID"),
        ({"prompt_tokens": Lengths.fixed(0)}, "prompt_tokens.mean", "INVALID"),
        ({"output_tokens": Lengths.uniform(10, 5)}, "output_tokens.low", "INVALID"),
        (
            {"output_tokens": Lengths(LengthKind.NORMAL, 50, 10, 100, -1.0)},
            "output_tokens.stddev",
            "INVALID",
        ),
        ({"prompts": ("",)}, "prompts", "INVALID"),
        ({"request_timeout_seconds": 0.0}, "request_timeout_seconds", "INVALID"),
        ({"name": "Bench!"}, "name", "INVALID_NAME"),
    ],
)
async def test_every_bad_input_is_named_and_nothing_is_stored(
    world: World, changes: dict[str, object], field: str, code: str
) -> None:
    with pytest.raises(ValidationFailed) as caught:
        await world.service.run(world.alice, world.request(**changes))
    assert (field, code) in [(i.field, i.code) for i in caught.value.issues], caught.value.issues
    assert not world.uow.store.benchmarks and not world.uow.store.jobs


REFUSED_ENDPOINTS = [
    "http://127.0.0.1:8000/v1",
    "http://[::ffff:169.254.169.254]/v1",
    "http://[::ffff:127.0.0.1]:8000/v1",
    "http://[::127.0.0.1]:8000/v1",  # IPv4-compatible
    "http://[2002:7f00:1::1]/v1",  # 6to4 of 127.0.0.1
    "http://[64:ff9b::a9fe:a9fe]/v1",  # NAT64 of 169.254.169.254
    "http://[2001:0:4136:e378:8000:63bf:f5ff:fffe]/v1",  # Teredo, its client 10.0.0.1
    "http://100.100.100.200/v1",
    "http://[fd00:ec2::254]/v1",
    "http://10.0.0.1/v1",
    "http://172.16.3.4/v1",
    "http://192.168.1.1/v1",
    "http://100.64.0.1/v1",
    "http://0.0.0.0:8000/v1",
    "http://[::]:8000/v1",
    "http://[::1]:8000/v1",
    "http://[fe80::1]/v1",
    "http://[fc00::1]/v1",
    "http://224.0.0.1/v1",
    "http://240.0.0.1/v1",
    "http://198.18.0.1/v1",
    "http://169.254.169.254.nip.io/v1",
    "http://localhost:8000/v1",
    "http://metadata.google.internal/v1",
    "http://mixed.example/v1",  # one public address, one private
    "http://nowhere.example/v1",  # no address at all: reads as any refusal
]
NAMES = {
    "169.254.169.254.nip.io": ["169.254.169.254"],
    "localhost": ["127.0.0.1", "::1"],
    "mixed.example": ["93.184.216.34", "10.0.0.1"],
    "api.example.com": ["93.184.216.34"],
    "vllm.internal": ["10.1.2.3"],
    "metadata.google.internal": ["169.254.169.254"],
}


def with_outbound(world: World, outbound: FakeOutboundPolicy) -> BenchmarkService:
    world.outbound = outbound
    return BenchmarkService(uow=world.uow, clock=world.clock, jobs=world.jobs, outbound=outbound)


@pytest.mark.parametrize("url", REFUSED_ENDPOINTS)
async def test_an_endpoint_must_resolve_to_public_addresses_only(world: World, url: str) -> None:
    service = with_outbound(world, FakeOutboundPolicy(hosts=NAMES))
    with pytest.raises(ValidationFailed) as caught:
        await service.run(world.alice, world.request(endpoint_url=url))
    (issue,) = caught.value.issues
    assert (issue.field, issue.code, issue.message) == (
        "endpoint_url",
        "FORBIDDEN_ENDPOINT",
        NOT_REACHABLE,
    )
    assert not world.uow.store.benchmarks and not world.uow.store.jobs


@pytest.mark.parametrize(
    "url", ["http://127.1:8000/v1", "http://2130706433/v1", "http://0x7f.0.0.1/v1"]
)
async def test_legacy_forms_of_an_address_are_refused(world: World, url: str) -> None:
    with pytest.raises(ValidationFailed) as caught:
        await world.service.run(world.alice, world.request(endpoint_url=url))
    assert caught.value.issues[0].message == "must write an IPv4 address as four decimal numbers"


async def test_the_operator_allows_hosts_and_ranges_but_never_metadata(world: World) -> None:
    allow = ["10.0.0.0/8", "vllm.internal", "169.254.0.0/16", "0.0.0.0/0"]
    service = with_outbound(world, FakeOutboundPolicy(allow=allow, hosts=NAMES))
    for url in (
        "http://10.0.0.1:8000/v1",
        "http://[::ffff:10.0.0.1]:8000/v1",
        "http://vllm.internal:8000/v1",
        "http://api.example.com/v1",
    ):
        await service.run(world.alice, world.request(endpoint_url=url))
    for url in ("http://169.254.169.254/v1", "http://[fd00:ec2::254]/v1", "http://[::1]/v1"):
        with pytest.raises(ValidationFailed):
            await service.run(world.alice, world.request(endpoint_url=url))


async def test_a_public_endpoint_is_loaded_through_the_rules(world: World) -> None:
    service = with_outbound(world, FakeOutboundPolicy(hosts=NAMES))
    b = await service.run(world.alice, world.request(endpoint_url="https://api.example.com/v1/"))
    assert b.plan.endpoint == "https://api.example.com/v1"
    assert world.outbound.checked == ["https://api.example.com/v1/"]  # resolved and judged
    world.run_job(b.id)
    await world.runner.start(b.id)
    world.load.release.set()
    await world.runner.wait(b.id)
    assert world.load.own_endpoint == [False]


async def serving(world: World, owner: Principal, port: int = 9100) -> Deployment:
    """A deployment of `owner`'s, serving at the simulated clusters' loopback endpoint."""
    d = await world.deployments.deploy(
        owner,
        DeploymentRequest(
            name="llama",
            project_id=world.project,
            cluster_id=world.cluster.id,
            model="org/llama-8b",
            gpu_type="nvidia-a100-80gb",
        ),
    )
    stored = world.uow.store.deployments[d.id]
    stored.status = DeploymentStatus.RUNNING
    stored.endpoint_url = f"http://127.0.0.1:{port}/d/{d.id}/v1"
    return stored


async def test_another_tenants_deployment_url_is_not_found(world: World) -> None:
    service = with_outbound(world, FakeOutboundPolicy(allow=["127.0.0.0/8"], hosts=NAMES))
    d = await serving(world, world.alice)
    assert d.endpoint_url is not None
    path = f"/d/{d.id}/v1"
    for url in (
        d.endpoint_url,
        f"http://localhost:9100{path}",  # another name of its address
        f"http://[::ffff:127.0.0.1]:9100{path}",
        f"http://127.0.0.1:9100{path.upper()}",
        f"http://127.0.0.1:9100{path}/more",
        f"http://127.0.0.1:9100/d/{d.id.hex}/v1",  # names no deployment at a deployments' server
        "http://127.0.0.1:9100/v1",
    ):
        with pytest.raises(NotFound) as caught:
            await service.run(world.bob, world.request(endpoint_url=url))
        assert caught.value.code == "NOT_FOUND" and caught.value.entity == "deployment", url
    # a token of its tenant limited to another project: as another tenant
    other = ProjectId(uuid.uuid4())
    limited = Principal(world.alice.tenant_id, world.alice.scopes, frozenset({other}))
    with pytest.raises(NotFound):
        await service.run(limited, world.request(endpoint_url=d.endpoint_url, project_id=other))
    assert not world.uow.store.benchmarks
    mine = Principal(world.alice.tenant_id, world.alice.scopes, frozenset({world.project}))
    assert await service.run(mine, world.request(endpoint_url=d.endpoint_url))


async def test_a_deployments_own_endpoint_is_loaded_as_that_deployment(world: World) -> None:
    service = with_outbound(world, FakeOutboundPolicy(hosts=NAMES))  # loopback not allowed
    d = await serving(world, world.alice)
    b = await service.run(
        world.alice, world.request(endpoint_url=f"http://localhost:9100/d/{d.id}/v1")
    )
    assert b.plan.endpoint == d.endpoint_url  # written as the deployment's own
    assert world.outbound.checked == [f"http://localhost:9100/d/{d.id}/v1"]
    world.run_job(b.id)
    await world.runner.start(b.id)
    world.load.release.set()
    await world.runner.wait(b.id)
    assert world.load.own_endpoint == [True]
    assert world.stored(b.id) is BenchmarkStatus.COMPLETED


async def test_a_benchmark_is_a_job_without_gpus(world: World) -> None:
    b = await world.service.run(world.alice, world.request(duration_seconds=90.0))
    job = world.uow.store.jobs[b.job_id]
    assert job.job_type is JobType.BATCH and job.resources.gpu_count == 0
    assert job.source.kind is SourceKind.BENCHMARK and job.source.source_id == str(b.id)
    assert job.estimated_duration_seconds == 90 and job.max_retries == 0
    assert job.spec == {"benchmark": {"id": str(b.id)}}
    assert b.status is BenchmarkStatus.PENDING
    assert b.configuration["endpoint"] == URL and b.configuration["concurrency"] == 4


async def test_a_run_reports_progress_stores_results_and_ends_its_job(world: World) -> None:
    b = await world.service.run(world.alice, world.request())
    world.run_job(b.id)
    assert await world.runner.start(b.id)
    assert not await world.runner.start(b.id)  # claimed once
    await world.load.started.wait()
    assert world.stored(b.id) is BenchmarkStatus.RUNNING
    await world.clock.run_for(2.5)  # progress about every second, on the clock
    progress = world.uow.store.benchmarks[b.id].progress
    assert progress is not None and progress.requests_done == 1

    def reports() -> int:
        return [
            e.change.kind
            for e in world.uow.store.events[world.cluster.id]
            if isinstance(e.change, BenchmarkChanged)
        ].count(BenchmarkChangeKind.PROGRESS)

    assert reports() == 1  # a second in which no request ended is not reported...
    await world.clock.run_for(10)
    assert reports() == 2  # ...unless 10 s passed: the sweep's sign of life

    world.load.release.set()
    await world.runner.wait(b.id)
    stored = world.uow.store.benchmarks[b.id]
    assert stored.status is BenchmarkStatus.COMPLETED
    assert stored.result is not None and stored.result.successful_requests == 4
    assert stored.result.tpot is not None and stored.result.tpot.mean == pytest.approx(0.02)
    assert world.uow.store.samples[b.id] == world.load.samples
    job = world.uow.store.jobs[b.job_id]
    assert world.gateways.gateway.exited == [(job.id, 0, True, stored.status_message)]
    assert await world.service.samples(world.alice, b.id) == world.load.samples
    assert await world.service.samples(world.bob, b.id) is None


async def test_the_progress_streams_last_message_counts_every_request_the_run_ended(
    world: World,
) -> None:
    hub = FakeHub()
    world.uow.after_commit = Reactions(
        publisher=HubPublisher(hub), tasks=world.tasks, uow=world.uow
    )
    updates = BenchmarkProgressService(uow=world.uow, hub=hub, log=FakeEventLog(world.uow.store))
    b = await world.service.run(world.alice, world.request())
    world.run_job(b.id)
    stream = await updates.benchmark_progress(world.alice, b.id)
    async with asyncio.timeout(5):
        seen = [await anext(stream)]
        assert await world.runner.start(b.id)
        await world.load.started.wait()
        await world.clock.run_for(1.5)  # one report: 1 of the 4 requests ended
        world.load.release.set()  # the other 3 end, then the run, before the next report
        await world.runner.wait(b.id)
        seen += [message async for message in stream]
    assert [(m.status, m.progress and m.progress.requests_done) for m in seen] == [
        (BenchmarkStatus.PENDING, None),
        (BenchmarkStatus.RUNNING, None),
        (BenchmarkStatus.RUNNING, 1),
        (BenchmarkStatus.COMPLETED, 4),
    ]
    final, result = seen[-1].progress, seen[-1].result
    assert final is not None and result is not None
    assert final.output_tokens == result.output_tokens and final.requests_failed == 0
    assert world.uow.store.benchmarks[b.id].progress == final


async def test_its_job_running_queues_the_start_and_its_end_the_settling(world: World) -> None:
    b = await world.service.run(world.alice, world.request())
    job = await world.jobs.get(world.alice, b.job_id)
    assert job is not None
    async with world.uow(TenantScope.system()) as uow:
        stored = await uow.jobs.get(b.job_id)
        assert stored is not None
        for status in (JobStatus.QUEUED, JobStatus.ADMITTED, JobStatus.RUNNING):
            stored.transition(status, "cluster", world.clock.now())
        await uow.commit()
    starts = [t for t in world.tasks.enqueued if t.task == task_names.START_BENCHMARK]
    assert [t.kwargs["benchmark_id"] for t in starts] == [str(b.id)]


@pytest.mark.parametrize(
    ("prepare", "reason"),
    [
        (
            lambda w: setattr(w.load, "raises", EndpointUnreachable(URL, "connection refused")),
            "is unreachable: connection refused",
        ),
        (lambda w: setattr(w.load, "samples", [failed(0), failed(1)]), "every request failed"),
    ],
)
async def test_a_run_that_measured_nothing_fails_with_the_reason(
    world: World, prepare: Callable[[World], None], reason: str
) -> None:
    prepare(world)
    b = await world.service.run(world.alice, world.request())
    world.run_job(b.id)
    await world.runner.start(b.id)
    world.load.release.set()
    await world.runner.wait(b.id)
    stored = world.uow.store.benchmarks[b.id]
    assert stored.status is BenchmarkStatus.FAILED
    assert stored.status_message is not None and reason in stored.status_message
    assert world.gateways.gateway.exited[0][2] is False


async def test_cancelling_stops_the_run_and_keeps_what_it_measured(world: World) -> None:
    b = await world.service.run(world.alice, world.request())
    world.run_job(b.id)
    await world.runner.start(b.id)
    await world.load.started.wait()
    with pytest.raises(NotFound):
        await world.service.cancel(world.bob, b.id)
    cancelled = await world.service.cancel(world.alice, b.id)
    assert cancelled.status is BenchmarkStatus.CANCELLED
    assert world.uow.store.jobs[b.job_id].status is JobStatus.CANCELLED
    await world.clock.run_for(1.5)  # the next progress report notices
    await world.runner.wait(b.id)
    stored = world.uow.store.benchmarks[b.id]
    assert stored.status is BenchmarkStatus.CANCELLED
    assert stored.result is not None and stored.result.successful_requests == 1
    assert world.uow.store.samples[b.id] == world.load.samples[:1]
    with pytest.raises(Conflict):
        await world.service.cancel(world.alice, b.id)


async def test_a_job_that_ends_first_ends_its_benchmark(world: World) -> None:
    b = await world.service.run(world.alice, world.request())
    job = world.uow.store.jobs[b.job_id]
    job.transition(JobStatus.FAILED, "the cluster refused it", world.clock.now())
    assert await world.runner.settle(b.id)
    stored = world.uow.store.benchmarks[b.id]
    assert stored.status is BenchmarkStatus.FAILED
    assert stored.status_message is not None and "the cluster refused it" in stored.status_message
    assert not await world.runner.start(b.id)


async def test_a_run_whose_process_died_is_swept(world: World) -> None:
    b = await world.service.run(world.alice, world.request())
    world.run_job(b.id)
    await world.runner.start(b.id)
    await world.load.started.wait()
    other = BenchmarkRunner(
        uow=world.uow, clock=world.clock, gateways=world.gateways, loadgen=world.load
    )
    assert await other.sweep() == 0  # reporting: alive
    await world.runner.close()  # the process goes away without ending it...
    world.uow.store.benchmarks[b.id].status = BenchmarkStatus.RUNNING  # ...as if it had died
    world.clock.advance(31)
    assert await other.sweep() == 1
    assert world.stored(b.id) is BenchmarkStatus.FAILED
    assert world.gateways.gateway.exited[-1][2] is False


async def test_a_deployment_that_does_not_serve_fails_the_run(world: World) -> None:
    d = await world.deployments.deploy(
        world.alice,
        DeploymentRequest(
            name="llama",
            project_id=world.project,
            cluster_id=world.cluster.id,
            model="org/llama-8b",
            gpu_type="nvidia-a100-80gb",
        ),
    )
    assert d.status is DeploymentStatus.DEPLOYING
    b = await world.service.run(
        world.alice,
        world.request(endpoint_url=None, cluster_id=None, model=None, deployment_id=d.id),
    )
    assert b.plan.model == d.served_model_name and b.configuration["gpu_type"] == d.gpu_type
    world.run_job(b.id)
    assert await world.runner.start(b.id)
    stored = world.uow.store.benchmarks[b.id]
    assert stored.status is BenchmarkStatus.FAILED
    assert stored.status_message is not None and "is not serving" in stored.status_message
    assert not world.load.plans

    with pytest.raises(ValidationFailed) as caught:  # longer than the model takes
        await world.service.run(
            world.alice,
            world.request(
                endpoint_url=None,
                cluster_id=None,
                model=None,
                deployment_id=d.id,
                prompt_tokens=Lengths.fixed(4000),
            ),
        )
    assert caught.value.issues[0].code == "EXCEEDS_MODEL_LENGTH"
    with pytest.raises(NotFound):
        await world.service.run(
            world.bob,
            world.request(endpoint_url=None, cluster_id=None, model=None, deployment_id=d.id),
        )


async def test_comparisons_name_what_differs_and_the_best(world: World) -> None:
    fast = await world.service.run(world.alice, world.request(name="fast"))
    slow = await world.service.run(world.alice, world.request(name="slow", concurrency=8))
    for b, ttft in ((fast, 0.05), (slow, 0.2)):
        world.load.samples = [ok(i, ttft=ttft, gaps=(ttft / 5,) * 3) for i in range(4)]
        world.load.release.set()
        world.run_job(b.id)
        await world.runner.start(b.id)
        await world.runner.wait(b.id)
    comparison = await world.service.compare(world.alice, [fast.id, slow.id])
    assert [(d.key, d.values) for d in comparison.differences] == [("concurrency", ("4", "8"))]
    best = {b.metric: b.benchmark_id for b in comparison.best}
    assert best["ttft"] == best["tpot"] == best["e2el"] == fast.id
    with pytest.raises(ValidationFailed):
        await world.service.compare(world.alice, [fast.id])
    with pytest.raises(NotFound):
        await world.service.compare(world.bob, [fast.id, slow.id])


async def test_a_lost_start_is_made_good_by_the_sweep(world: World) -> None:
    b = await world.service.run(world.alice, world.request())
    world.run_job(b.id)  # its job runs, but the start task was lost (a restart)
    assert await world.runner.sweep() == 0
    assert world.stored(b.id) is BenchmarkStatus.PENDING  # not yet: the task may still come
    world.clock.advance(31)
    await world.runner.sweep()
    assert world.stored(b.id) is BenchmarkStatus.RUNNING and world.runner.running == {b.id}
    world.load.release.set()
    await world.runner.wait(b.id)
    assert world.stored(b.id) is BenchmarkStatus.COMPLETED
