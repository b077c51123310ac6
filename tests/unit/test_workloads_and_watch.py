"""Cluster-side work (hand-over, cancel, priority) and the supervisor that follows clusters.

Covers: hand-over queues the job once, even when the task runs twice; a job cancelled while it was
being handed over has its workload cancelled; an unreachable cluster asks for a retry with backoff;
an attempt not yet due is deferred. The supervisor lists before it watches (catching up on what
happened while no one watched), applies streamed observations, only watches with the lease, and
restarts a failed watch.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import replace
from datetime import timedelta

import pytest

from domain.model.job import JobPriority, JobStatus
from domain.ports.gateways import GatewayUnavailable, Workload, WorkloadObservation, WorkloadPhase
from domain.ports.tasks import RetryTask
from domain.services.clusters import ClusterService
from domain.services.observations import ObservationService
from domain.services.quotas import QuotaService
from domain.services.watch import ClusterSupervisor
from domain.services.workloads import WorkloadService
from tests.support.fakes import FakeGatewayFactory, FakeLease
from tests.unit.test_job_service import World
from tests.unit.test_submission import GOOD


class WorkloadWorld(World):
    """The job service's world, with a cluster gateway and the service that hands work over."""

    def __init__(self) -> None:
        super().__init__()
        self.gateways = FakeGatewayFactory()
        self.workloads = WorkloadService(
            uow=self.uow,
            clock=self.clock,
            gateways=self.gateways,
            backoff=lambda n: 7.0 * n,
        )


@pytest.fixture
def world() -> WorkloadWorld:
    return WorkloadWorld()


async def test_hand_over_queues_once(world: WorkloadWorld) -> None:
    job = await world.service.submit(world.alice, GOOD)
    assert await world.workloads.submit(job.id, 0) is True
    assert await world.workloads.submit(job.id, 0) is False
    gateway = world.gateways.gateway
    assert [w.name for w in gateway.submitted] == [job.workload_name]
    assert world.stored(job.id).status is JobStatus.QUEUED
    assert gateway.submitted[0].resources == GOOD.resources


async def test_cancelled_during_hand_over_cancels_the_workload(
    world: WorkloadWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = await world.service.submit(world.alice, GOOD)
    gateway = world.gateways.gateway
    real_submit = gateway.submit

    async def submit_then_user_cancels(workload: Workload) -> None:
        await real_submit(workload)
        await world.service.cancel(world.alice, job.id, "changed my mind")

    monkeypatch.setattr(gateway, "submit", submit_then_user_cancels)
    await world.workloads.submit(job.id, 0)
    assert world.stored(job.id).status is JobStatus.CANCELLED
    assert gateway.cancelled == [(job.id, 0)]


async def test_unreachable_cluster_asks_for_a_retry(world: WorkloadWorld) -> None:
    job = await world.service.submit(world.alice, GOOD)
    world.gateways.gateway.fail_with = GatewayUnavailable("connection refused")
    with pytest.raises(RetryTask) as retry:
        await world.workloads.submit(job.id, 0, try_number=3)
    assert retry.value.defer_seconds == 21.0
    assert world.stored(job.id).status is JobStatus.PENDING


async def test_attempt_not_yet_due_is_deferred(world: WorkloadWorld) -> None:
    job = await world.service.submit(world.alice, GOOD)
    world.stored(job.id).next_attempt_at = world.clock.now() + timedelta(seconds=40)
    with pytest.raises(RetryTask) as retry:
        await world.workloads.submit(job.id, 0)
    assert retry.value.defer_seconds == 40
    assert world.gateways.gateway.submitted == []


async def test_priority_and_cancel_reach_the_gateway(world: WorkloadWorld) -> None:
    job = await world.service.submit(world.alice, GOOD)
    await world.workloads.submit(job.id, 0)
    await world.service.change_priority(world.alice, job.id, JobPriority.HIGH)
    await world.workloads.set_priority(job.id, 0)
    await world.workloads.cancel(job.id, 0)
    gateway = world.gateways.gateway
    assert gateway.priorities == [(job.id, 0, JobPriority.HIGH)]
    assert gateway.cancelled == [(job.id, 0)]


def supervisor(
    world: WorkloadWorld,
    lease: FakeLease,
    queue_answers: Callable[[], Awaitable[bool]] | None = None,
) -> ClusterSupervisor:
    observations = ObservationService(
        uow=world.uow,
        clock=world.clock,
        jobs=world.service,
    )
    quotas = QuotaService(uow=world.uow, clock=world.clock)
    clusters = ClusterService(
        uow=world.uow, clock=world.clock, gateways=world.gateways, quotas=quotas
    )
    return ClusterSupervisor(
        clusters=clusters,
        jobs=world.service,
        observations=observations,
        gateways=world.gateways,
        lease=lease,
        clock=world.clock,
        poll_seconds=1,
        lease_ttl_seconds=30,
        backoff=lambda n: 1.0,
        workloads=world.workloads,
        queue_answers=queue_answers,
    )


async def eventually(check: Callable[[], bool], within: float = 2.0) -> None:
    deadline = asyncio.get_running_loop().time() + within
    while not check():
        assert asyncio.get_running_loop().time() < deadline, "condition not reached"
        await asyncio.sleep(0.01)


async def test_supervisor_lists_then_watches(world: WorkloadWorld) -> None:
    job = await world.service.submit(world.alice, GOOD)
    await world.workloads.submit(job.id, 0)
    gateway = world.gateways.gateway
    now = world.clock.now()
    gateway.workloads = [
        WorkloadObservation(
            job.id, 0, WorkloadPhase.RUNNING, "pods running", now, admitted_at=now, started_at=now
        )
    ]
    sup = supervisor(world, FakeLease())
    await sup.tick()
    await eventually(lambda: world.stored(job.id).status is JobStatus.RUNNING)
    gateway.stream.put_nowait(
        WorkloadObservation(job.id, 0, WorkloadPhase.SUCCEEDED, "done", now, finished_at=now)
    )
    await eventually(lambda: world.stored(job.id).status is JobStatus.COMPLETED)
    await sup.stop()


async def test_while_the_queue_is_down_the_supervisor_hands_over_and_catches_the_last(
    world: WorkloadWorld,
) -> None:
    """Issue 27: while the task queue does not answer, the lease holder hands its cluster's
    submissions over from the database once they are a moment old; the first tick after the
    queue answers again also takes the ones committed in the outage's last moment. After that,
    hand-overs are the task queue's again."""
    world.clock.manual = True  # the watch's loops wait for the test to move time on
    world.gateways.gateway.node_list = list(world.cluster.nodes)
    down = True

    async def answers() -> bool:
        return not down

    sup = supervisor(world, FakeLease(), answers)
    await sup.tick()  # starts the watch, which takes the lease
    await eventually(lambda: world.gateways.gateway.list_calls > 0)
    submitted = world.gateways.gateway.submitted
    early = await world.service.submit(world.alice, GOOD)
    world.clock.advance(1.5)
    late = await world.service.submit(world.alice, GOOD)
    await sup.tick()
    assert [w.job_id for w in submitted] == [early.id]  # the late one is not a moment old yet
    down = False
    await sup.tick()
    assert [w.job_id for w in submitted] == [early.id, late.id]
    after = await world.service.submit(world.alice, GOOD)
    world.clock.advance(1.5)
    await sup.tick()
    assert after.id not in [w.job_id for w in submitted]  # the queue hands it over
    await sup.stop()


async def test_no_lease_no_watch(world: WorkloadWorld) -> None:
    job = await world.service.submit(world.alice, GOOD)
    gateway = world.gateways.gateway
    now = world.clock.now()
    gateway.workloads = [WorkloadObservation(job.id, 0, WorkloadPhase.RUNNING, "r", now)]
    sup = supervisor(world, FakeLease(grant=False))
    await sup.tick()
    await asyncio.sleep(0.05)
    assert world.stored(job.id).status is JobStatus.PENDING
    await sup.stop()


async def test_a_failed_watch_is_restarted(
    world: WorkloadWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = await world.service.submit(world.alice, GOOD)
    gateway = world.gateways.gateway
    calls = 0
    real_list = gateway.list_workloads

    async def flaky_list() -> list[WorkloadObservation]:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise GatewayUnavailable("down")
        return await real_list()

    monkeypatch.setattr(gateway, "list_workloads", flaky_list)
    now = world.clock.now()
    gateway.workloads = [WorkloadObservation(job.id, 0, WorkloadPhase.QUEUED, "queued", now)]
    sup = supervisor(world, FakeLease())
    await sup.tick()
    await eventually(lambda: world.stored(job.id).status is JobStatus.QUEUED)
    assert calls >= 2
    await sup.stop()


async def test_a_closed_window_defers_the_hand_over(world: WorkloadWorld) -> None:
    from datetime import time

    from domain.model.job import TimeWindow

    job = await world.service.submit(world.alice, GOOD)
    stored = world.stored(job.id)
    now = world.clock.now()  # 12:00 UTC
    stored.window = TimeWindow(time(22, 0), time(6, 0))
    with pytest.raises(RetryTask) as retry:
        await world.workloads.submit(job.id, 0)
    assert retry.value.defer_seconds == (now.replace(hour=22) - now).total_seconds()
    assert world.gateways.gateway.submitted == []


async def test_dependencies_hold_the_hand_over_until_they_complete(world: WorkloadWorld) -> None:
    first = await world.service.submit(world.alice, GOOD)
    world.stored(first.id).status = JobStatus.RUNNING
    then = await world.service.submit(
        world.alice, replace(GOOD, name="then", depends_on=(first.id,))
    )
    assert await world.workloads.submit(then.id, 0) is False
    gateway = world.gateways.gateway
    assert all(w.job_id != then.id for w in gateway.submitted)
    observations = ObservationService(
        uow=world.uow,
        clock=world.clock,
        jobs=world.service,
    )
    now = world.clock.now()
    await observations.apply(
        WorkloadObservation(first.id, 0, WorkloadPhase.SUCCEEDED, "done", now, finished_at=now)
    )
    released = [t for t in world.tasks.enqueued if t.kwargs.get("job_id") == str(then.id)]
    assert len(released) == 2 and released[-1].key.endswith(f"{first.id} completed")
    assert await world.workloads.submit(then.id, 0) is True


async def test_a_window_closing_takes_a_queued_workload_back(world: WorkloadWorld) -> None:
    from datetime import time

    from domain.model.job import TimeWindow

    job = await world.service.submit(world.alice, GOOD)
    await world.workloads.submit(job.id, 0)
    first_name = world.stored(job.id).workload_name
    world.stored(job.id).window = TimeWindow(time(22, 0), time(6, 0))  # closed at 12:00
    assert await world.workloads.hold_back_closed_windows() == 1
    held = world.stored(job.id)
    gateway = world.gateways.gateway
    assert gateway.cancelled == [(job.id, 0)]
    assert (held.status, held.generation) == (JobStatus.PENDING, 1)
    assert held.next_attempt_at == world.clock.now().replace(hour=22)
    assert held.workload_name != first_name
    observations = ObservationService(
        uow=world.uow,
        clock=world.clock,
        jobs=world.service,
    )
    stale = WorkloadObservation(
        job.id, 0, WorkloadPhase.DELETED, "deleted", world.clock.now(), workload=first_name
    )
    assert await observations.apply(stale) is None
    assert world.stored(job.id).status is JobStatus.PENDING  # not cancelled by the old report
