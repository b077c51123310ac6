"""Benchmarks whose cluster runs the load (a Kubernetes cluster's Job), with fakes of every port.

Covers: the job's spec carries the plan with its endpoint (a simulated cluster's does not) and what
its pod may reach: a deployment (by its URL or its id) or a host the operator allows, a public
host refused there (no one checks the pod's connections); the
start marks the benchmark RUNNING and runs no load here; the sweep does not fail it for want of
progress reports; the job's end reads what it measured from the cluster (COMPLETED with the
summary and the samples; every request failed, or an unreadable result: FAILED with the
reason); a cluster that does not answer leaves it for the sweep, which settles it later.
"""

from __future__ import annotations

import pytest

from adapters.shapes.documents import plan_to_document
from domain.errors import ValidationFailed
from domain.model.benchmark import BenchmarkStatus
from domain.model.cluster import Platform
from domain.model.ids import BenchmarkId, JobId
from domain.model.job import JobStatus
from domain.model.load import LoadRun
from domain.ports.gateways import GatewayUnavailable
from domain.serving.metrics import summarize
from tests.support.fakes import FakeGateway, FakeOutboundPolicy
from tests.unit.test_benchmarks import URL, World, failed, ok, serving, with_outbound


class ClusterRuns(FakeGateway):
    """A cluster whose benchmark Jobs ran: what each measured, or why it can't be read."""

    def __init__(self) -> None:
        super().__init__()
        self.run: LoadRun | Exception = LoadRun(tuple(ok(i) for i in range(3)), 1.5)
        self.reads: list[tuple[JobId, int]] = []

    async def benchmark_run(self, job_id: JobId, attempt: int) -> LoadRun | None:
        self.reads.append((job_id, attempt))
        if isinstance(self.run, Exception):
            raise self.run
        return self.run


class InCluster(World):
    def __init__(self) -> None:
        super().__init__()
        self.cluster.platform = Platform.ON_PREM
        self.cluster_runs = ClusterRuns()
        self.gateways.gateway = self.cluster_runs

    def end_job(self, benchmark_id: BenchmarkId, status: JobStatus = JobStatus.COMPLETED) -> None:
        job = self.uow.store.jobs[self.uow.store.benchmarks[benchmark_id].job_id]
        job.transition(status, "the Job ended", self.clock.now())
        job.changes.clear()


@pytest.fixture
def world() -> InCluster:
    return InCluster()


async def test_its_job_carries_the_plan_and_the_load_runs_there(world: InCluster) -> None:
    b = await world.service.run(world.alice, world.request())
    job = world.uow.store.jobs[b.job_id]
    assert job.spec == {
        "benchmark": {
            "id": str(b.id),
            "plan": plan_to_document(b.plan),
            "egress": {"networks": ["127.0.0.1/32"], "port": 8000},  # the operator allows it
        }
    }
    assert b.plan.endpoint == URL
    assert (job.resources.cpu_cores, job.resources.gpu_count) == (1.0, 0)

    world.run_job(b.id)
    assert await world.runner.start(b.id)
    assert world.stored(b.id) is BenchmarkStatus.RUNNING
    assert world.runner.running == frozenset()
    assert world.load.plans == []
    assert not await world.runner.start(b.id)  # claimed once

    world.clock.advance(120)  # no progress reports: the job is the sign of life
    assert await world.runner.sweep() == 0
    assert world.stored(b.id) is BenchmarkStatus.RUNNING


async def test_its_pod_may_reach_a_deployment_or_an_allowed_host_only(world: InCluster) -> None:
    world.service = with_outbound(
        world, FakeOutboundPolicy(allow=["10.0.0.0/8"], hosts={"api.example.com": ["1.1.1.1"]})
    )
    for public in ("https://api.example.com/v1", "http://1.1.1.1/v1"):  # checked by no one there
        with pytest.raises(ValidationFailed) as caught:
            await world.service.run(world.alice, world.request(endpoint_url=public))
        assert [(i.field, i.code) for i in caught.value.issues] == [
            ("endpoint_url", "FORBIDDEN_ENDPOINT")
        ]
    b = await world.service.run(world.alice, world.request(endpoint_url="http://10.2.3.4:8080/v1"))
    assert world.uow.store.jobs[b.job_id].spec["benchmark"]["egress"] == {
        "networks": ["10.2.3.4/32"],
        "port": 8080,
    }

    d = await serving(world, world.alice)
    d.endpoint_url = f"http://bud-1.tenant.svc.cluster.local:8000/d/{d.id}/v1"
    by_url = await world.service.run(world.alice, world.request(endpoint_url=d.endpoint_url))
    by_id = await world.service.run(
        world.alice,
        world.request(endpoint_url=None, cluster_id=None, model=None, deployment_id=d.id),
    )
    for made in (by_url, by_id):
        egress = world.uow.store.jobs[made.job_id].spec["benchmark"]["egress"]
        assert egress == {"deployment_id": str(d.id)}


async def test_on_a_simulated_cluster_the_spec_has_no_plan() -> None:
    world = World()
    b = await world.service.run(world.alice, world.request())
    assert world.uow.store.jobs[b.job_id].spec == {"benchmark": {"id": str(b.id)}}


async def test_the_jobs_end_stores_what_the_cluster_measured(world: InCluster) -> None:
    b = await world.service.run(world.alice, world.request())
    world.run_job(b.id)
    await world.runner.start(b.id)
    world.end_job(b.id)
    assert await world.runner.settle(b.id)
    stored = world.uow.store.benchmarks[b.id]
    assert isinstance(world.cluster_runs.run, LoadRun)
    assert stored.status is BenchmarkStatus.COMPLETED
    assert stored.result == summarize(world.cluster_runs.run)
    assert stored.status_message == "3 requests in 1.5 s"
    assert world.uow.store.samples[b.id] == list(world.cluster_runs.run.samples)
    assert world.cluster_runs.reads == [(b.job_id, 0)]
    assert world.cluster_runs.exited == []  # the Job ended itself
    assert not await world.runner.settle(b.id)


@pytest.mark.parametrize(
    ("run", "message"),
    [
        (LoadRun((failed(0), failed(1)), 1.0), "every request failed (HTTP_STATUS: HTTP 500)"),
        (ValueError("no result"), "its result could not be read: no result"),
    ],
)
async def test_a_run_that_measured_nothing_fails_with_the_reason(
    world: InCluster, run: LoadRun | Exception, message: str
) -> None:
    world.cluster_runs.run = run
    b = await world.service.run(world.alice, world.request())
    world.run_job(b.id)
    await world.runner.start(b.id)
    world.end_job(b.id)
    assert await world.runner.settle(b.id)
    stored = world.uow.store.benchmarks[b.id]
    assert (stored.status, stored.status_message) == (BenchmarkStatus.FAILED, message)


async def test_a_failed_job_is_not_read_back(world: InCluster) -> None:
    b = await world.service.run(world.alice, world.request())
    world.run_job(b.id)
    await world.runner.start(b.id)
    world.end_job(b.id, JobStatus.FAILED)
    assert await world.runner.settle(b.id)
    stored = world.uow.store.benchmarks[b.id]
    assert stored.status is BenchmarkStatus.FAILED
    assert stored.status_message == "its job is FAILED: the Job ended"
    assert world.cluster_runs.reads == []


async def test_a_cluster_that_does_not_answer_leaves_it_to_the_sweep(world: InCluster) -> None:
    world.cluster_runs.run = GatewayUnavailable("no route to host")
    b = await world.service.run(world.alice, world.request())
    world.run_job(b.id)
    await world.runner.start(b.id)
    world.end_job(b.id)
    with pytest.raises(GatewayUnavailable):
        await world.runner.settle(b.id)
    assert world.stored(b.id) is BenchmarkStatus.RUNNING
    world.clock.advance(31)
    assert await world.runner.sweep() == 0  # still unreachable: it waits
    world.cluster_runs.run = LoadRun((ok(0),), 1.0)
    assert await world.runner.sweep() == 1
    assert world.stored(b.id) is BenchmarkStatus.COMPLETED
