"""The mechanisms that keep a cluster's loop right through faults, on the domain's fakes.

Covers: what a cluster reports together (an admission cycle) is one commit, its releases before
its admissions, so no reader sees an admission without the release that made room for it; a
takeover's listing costs one read and one commit, and a listing that changes nothing commits
nothing; a live workload whose job is final is taken back, from the first listing and by the
periodic sweep (cancelling is level-triggered); a loop that stalls gives up its lease and is
started again, and one that shows signs of life keeps it; a watch superseded by another process
ends quietly.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from domain.errors import Unavailable
from domain.model.ids import ClusterId, JobId
from domain.model.job import Job, JobStatus
from domain.ports.gateways import Superseded, WorkloadObservation, WorkloadPhase
from domain.services.clusters import ClusterService
from domain.services.observations import ObservationService
from domain.services.quotas import QuotaService
from domain.services.watch import ClusterSupervisor
from tests.support.fakes import FakeClock, FakeGateway, FakeGatewayFactory, FakeLease
from tests.unit.test_job_service import World
from tests.unit.test_submission import GOOD

P = WorkloadPhase


class Harness:
    def __init__(self) -> None:
        self.world = World()
        self.clock: FakeClock = self.world.clock
        self.gateway = FakeGateway()
        self.gateways = FakeGatewayFactory(self.gateway)
        self.observations = ObservationService(
            uow=self.world.uow, clock=self.clock, jobs=self.world.service
        )

    async def job(self, status: JobStatus = JobStatus.QUEUED) -> Job:
        job = await self.world.service.submit(self.world.alice, GOOD)
        for step in (JobStatus.QUEUED, JobStatus.ADMITTED, JobStatus.RUNNING):
            if self.stored(job.id).status is status:
                break
            await self.observations.apply(self.seen(job, _PHASE[step]))
        return self.stored(job.id)

    def stored(self, job_id: JobId) -> Job:
        job: Job = self.world.stored(job_id)
        return job

    def seen(
        self, job: Job, phase: WorkloadPhase, attempt: int | None = None
    ) -> WorkloadObservation:
        now = self.clock.now()
        return WorkloadObservation(
            job.id,
            job.attempt if attempt is None else attempt,
            phase,
            phase.value.lower(),
            now,
            admitted_at=now if phase is not P.QUEUED else None,
            started_at=now if phase in (P.RUNNING, P.SUCCEEDED) else None,
            finished_at=now if phase is P.SUCCEEDED else None,
        )

    def supervisor(
        self,
        lease: FakeLease,
        *,
        lease_ttl_seconds: float,
        sweep_seconds: float,
        stall_seconds: float = 10.0,
        backoff: float = 1.0,
    ) -> ClusterSupervisor:
        quotas = QuotaService(uow=self.world.uow, clock=self.clock)
        clusters = ClusterService(
            uow=self.world.uow, clock=self.clock, gateways=self.gateways, quotas=quotas
        )
        return ClusterSupervisor(
            clusters=clusters,
            jobs=self.world.service,
            observations=self.observations,
            gateways=self.gateways,
            lease=lease,
            clock=self.clock,
            poll_seconds=1000,
            backoff=lambda n: backoff,
            lease_ttl_seconds=lease_ttl_seconds,
            sweep_seconds=sweep_seconds,
            stall_seconds=stall_seconds,
        )


_PHASE = {JobStatus.QUEUED: P.QUEUED, JobStatus.ADMITTED: P.ADMITTED, JobStatus.RUNNING: P.RUNNING}


@pytest.fixture
def h() -> Harness:
    return Harness()


async def test_an_admission_cycle_is_one_commit_releases_first(h: Harness) -> None:
    running = await h.job(JobStatus.RUNNING)
    waiting = await h.job(JobStatus.QUEUED)
    commits, published = h.world.uow.store.commits, len(h.world.publisher.published)

    applied = await h.observations.apply_batch(
        [h.seen(waiting, P.ADMITTED), h.seen(running, P.SUCCEEDED)]
    )

    assert h.world.uow.store.commits == commits + 1
    assert {j.id for j in applied.changed} == {running.id, waiting.id}
    changes = [e.job_change for e in h.world.publisher.published[published:]]
    assert [(c.job.id, c.job.status) for c in changes if c is not None] == [
        (running.id, JobStatus.COMPLETED),
        (waiting.id, JobStatus.ADMITTED),
    ]


async def test_a_takeover_listing_is_one_read_and_one_commit(h: Harness) -> None:
    jobs = [await h.job(JobStatus.QUEUED) for _ in range(20)]
    opened, commits = len(h.world.uow.opened), h.world.uow.store.commits

    await h.observations.apply_batch([h.seen(j, P.RUNNING) for j in jobs])
    assert len(h.world.uow.opened) - opened == 2  # a plain read, then the one that changes
    assert h.world.uow.store.commits == commits + 1
    assert {h.stored(j.id).status for j in jobs} == {JobStatus.RUNNING}

    opened, commits = len(h.world.uow.opened), h.world.uow.store.commits
    applied = await h.observations.apply_batch([h.seen(j, P.RUNNING) for j in jobs])
    assert applied.changed == [] and h.world.uow.store.commits == commits
    assert len(h.world.uow.opened) - opened == 1


async def test_strays_are_live_workloads_of_final_jobs_or_older_attempts(h: Harness) -> None:
    cancelled = await h.job(JobStatus.RUNNING)
    await h.world.service.cancel(h.world.alice, cancelled.id, "no longer needed")
    running = await h.job(JobStatus.RUNNING)
    finished = await h.job(JobStatus.RUNNING)
    await h.observations.apply(h.seen(finished, P.SUCCEEDED))

    strays = await h.observations.strays(
        [
            h.seen(cancelled, P.RUNNING),
            h.seen(running, P.RUNNING),
            h.seen(running, P.QUEUED, attempt=running.attempt - 1),  # a stale attempt's copy
            h.seen(finished, P.SUCCEEDED),  # over already: nothing to take back
        ]
    )
    assert [(s.job_id, s.attempt) for s in strays] == [
        (cancelled.id, cancelled.attempt),
        (running.id, running.attempt - 1),
    ]


class RecordingLease(FakeLease):
    def __init__(self) -> None:
        super().__init__()
        self.released: list[str] = []
        self.acquired: list[str] = []

    async def acquire(self, name: str, *, ttl_seconds: float) -> bool:
        self.acquired.append(name)
        return await super().acquire(name, ttl_seconds=ttl_seconds)

    async def release(self, name: str) -> None:
        self.released.append(name)
        await super().release(name)


async def test_the_sweep_takes_back_a_workload_whose_job_is_final(h: Harness) -> None:
    job = await h.job(JobStatus.RUNNING)
    await h.world.service.cancel(h.world.alice, job.id, "no longer needed")
    # the cancel task is queued but never runs (a worker died with it): the workload lives on
    assert h.gateway.cancelled == []
    h.clock.manual = True
    sup = h.supervisor(RecordingLease(), sweep_seconds=5, lease_ttl_seconds=3, stall_seconds=10)
    await sup.tick()
    await h.clock.run_for(1)
    assert h.gateway.list_calls == 1 and h.gateway.cancelled == []  # nothing live was listed
    h.gateway.workloads = [h.seen(job, P.RUNNING)]
    h.gateway.stream.put_nowait([])  # the watch stays alive meanwhile
    await h.clock.run_for(3.5)
    assert h.gateway.cancelled == []
    await h.clock.run_for(1)  # the sweep, 5 s after the watch began
    assert h.gateway.cancelled == [(job.id, job.attempt)]
    await sup.stop()


async def test_the_first_listing_takes_back_strays_at_once(h: Harness) -> None:
    job = await h.job(JobStatus.RUNNING)
    await h.world.service.cancel(h.world.alice, job.id, "no longer needed")
    h.gateway.workloads = [h.seen(job, P.RUNNING)]
    h.clock.manual = True
    sup = h.supervisor(RecordingLease(), sweep_seconds=60, lease_ttl_seconds=3)
    await sup.tick()
    await h.clock.run_for(0.5)
    assert h.gateway.cancelled == [(job.id, job.attempt)]
    await sup.stop()


async def test_a_stalled_loop_gives_up_its_lease(h: Harness) -> None:
    """The watch never yields, not even a sign of life (a process out of database connections
    looks like this): the renewer stops renewing, the lease goes, the loop starts again."""
    h.clock.manual = True
    lease = RecordingLease()
    sup = h.supervisor(lease, lease_ttl_seconds=3, stall_seconds=10, sweep_seconds=60)
    await sup.tick()
    await h.clock.run_for(9)
    assert lease.released == [] and h.gateway.list_calls == 1
    await h.clock.run_for(2)  # 11 s without a sign of life
    assert len(lease.released) == 1
    await h.clock.run_for(1)
    assert len(lease.acquired) == 2 and h.gateway.list_calls == 2  # taken again, listed again
    await sup.stop()


class Heartbeats(FakeGateway):
    """A healthy watch: nothing changes, but it says so every second."""

    def __init__(self, clock: FakeClock) -> None:
        super().__init__()
        self.clock = clock

    async def watch(self) -> AsyncIterator[list[WorkloadObservation]]:
        while True:
            await self.clock.sleep(1)
            yield []


async def test_a_loop_that_shows_signs_of_life_keeps_its_lease(h: Harness) -> None:
    h.gateway = Heartbeats(h.clock)
    h.gateways.gateway = h.gateway
    h.clock.manual = True
    lease = RecordingLease()
    sup = h.supervisor(lease, lease_ttl_seconds=3, stall_seconds=10, sweep_seconds=60)
    await sup.tick()
    await h.clock.run_for(120, step=0.5)
    assert lease.released == [] and len(lease.acquired) == 1
    await sup.stop()


class SupersededWatch(FakeGateway):
    """A watch that finds, at its first step, that another process claimed the loop since."""

    def __init__(self, cluster_id: ClusterId) -> None:
        super().__init__()
        self.cluster_id = cluster_id

    async def watch(self) -> AsyncIterator[list[WorkloadObservation]]:
        raise Superseded(self.cluster_id)
        yield []  # an async generator


async def test_a_superseded_watch_ends_quietly_and_lets_go(
    h: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    h.gateway = SupersededWatch(h.world.cluster.id)
    h.gateways.gateway = h.gateway
    h.clock.manual = True
    lease = RecordingLease()
    sup = h.supervisor(lease, lease_ttl_seconds=3, sweep_seconds=60)
    await sup.tick()
    await h.clock.run_for(0.2)
    assert len(lease.released) == 1
    await sup.stop()
    assert "runs elsewhere now" in caplog.text
    assert not [r for r in caplog.records if r.levelname == "ERROR"]


class DatabaseDown(FakeGateway):
    """A watch whose every step meets a database that does not answer (an outage): through a
    unit of work (Unavailable), or a simulated cluster's own store (a refused connection)."""

    def __init__(self, error: Exception) -> None:
        super().__init__()
        self.steps = 0
        self.error = error

    async def watch(self) -> AsyncIterator[list[WorkloadObservation]]:
        self.steps += 1
        raise self.error
        yield []  # an async generator


@pytest.mark.parametrize(
    "error",
    [Unavailable("the database"), ConnectionRefusedError(111, "Connect call failed")],
    ids=["unit-of-work", "simulated-store"],
)
async def test_an_outage_is_a_warning_and_the_watch_tries_again(
    h: Harness, caplog: pytest.LogCaptureFixture, error: Exception
) -> None:
    """Found by the fault suite: a PostgreSQL restart logged a traceback at ERROR from every
    process's supervisor, every tick, as if it were a bug, and the watch waited out the
    cluster's backoff (5 s doubling; a minute here) before trying again: admission came back
    up to 8 s after the database did. An outage is retried within a capped 2 s."""
    assert not h.world.cluster.is_real
    down = DatabaseDown(error)
    h.gateway = down
    h.gateways.gateway = down
    h.clock.manual = True
    sup = h.supervisor(RecordingLease(), lease_ttl_seconds=3, sweep_seconds=60, backoff=60.0)
    await sup.tick()
    await h.clock.run_for(3.9)  # delays of at most 0.25, 0.5, 1 and 2 s: 5 attempts
    await sup.stop()
    assert down.steps >= 4
    assert str(error) in caplog.text
    assert not [r for r in caplog.records if r.levelname == "ERROR"]


class LeaseStoreDown(FakeLease):
    async def acquire(self, name: str, *, ttl_seconds: float) -> bool:
        raise ConnectionError("Error 111 connecting to redis")


async def test_a_lease_store_outage_is_logged_once_then_every_half_minute(
    h: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    """Found by the fault suite: a 5 s Redis outage wrote a "cannot claim" line a second for
    every cluster in every process."""
    h.clock.manual = True
    sup = h.supervisor(LeaseStoreDown(), lease_ttl_seconds=3, sweep_seconds=60)
    await sup.tick()
    await h.clock.run_for(45.0, step=0.5, turns=20)  # tried every second meanwhile
    await sup.stop()
    said = [r for r in caplog.records if "cannot claim" in r.getMessage()]
    assert len(said) == 2  # at once, and 30 s later


class RenewalsFail(FakeLease):
    async def renew(self, name: str, *, ttl_seconds: float) -> bool:
        raise ConnectionError("Error 111 connecting to redis")


async def test_a_holder_that_cannot_renew_says_so_once_then_every_half_minute(
    h: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    h.clock.manual = True
    sup = h.supervisor(RenewalsFail(), lease_ttl_seconds=3, sweep_seconds=60, stall_seconds=1000)
    await sup.tick()
    await h.clock.run_for(45.0, step=0.5, turns=20)  # a renewal tried every second meanwhile
    await sup.stop()
    said = [r for r in caplog.records if "cannot renew" in r.getMessage()]
    assert len(said) == 2
