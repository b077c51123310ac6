"""Fleets with fakes: making one, dispatching a job to its best member, balancing, and the
hand-over and watch after a move.

Covers: every bad fleet input is refused naming its field, and nothing is stored; a deleted
cluster leaves its fleets. A fleet job goes to the member that starts it soonest (a busy member
loses to an idle one; a GPU type only one member has goes there), in the fleet's LocalQueue,
with why in its status message; a job no member can take is refused with each member's problem;
a repeated idempotency key answers with the first job. A balancing pass stores the plan (each
job's member and the next best) and moves a queued job whose member would start it much later
than another (events on both clusters, the audit trail, the hand-over queued), but not past
`max_moves`, not a PENDING job whose hand-over is under way, not a retry (it stays where it ran,
unless that member stops answering), and not a job that depends on another; a job on a member that stops answering moves at once if PENDING, and if QUEUED only
once the member has been lost for `lost_after`. The hand-over after a move withdraws the copy
left behind first (never two live copies; an unreachable origin is retried), and the watch of
the member it left takes back a copy it still finds there.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import replace
from datetime import timedelta

import pytest

from domain.errors import Conflict, ValidationFailed
from domain.model.cluster import Cluster, ClusterStatus
from domain.model.ids import ClusterId, FleetId, JobId
from domain.model.job import ChangeKind, Job, JobChanged, JobStatus, Placement, Resources
from domain.ports.gateways import GatewayUnavailable, WorkloadObservation, WorkloadPhase
from domain.ports.tasks import RetryTask
from domain.ports.unit_of_work import TenantScope
from domain.services import task_names
from domain.services.balancing import FleetBalancer
from domain.services.deployments import DeploymentService
from domain.services.dispatch import Dispatcher
from domain.services.fleets import FleetInput, FleetService, forget_member
from domain.services.observations import ObservationService
from domain.services.quotas import QuotaService
from domain.services.timeline import TimelineService
from domain.services.workloads import WorkloadService
from tests.support.fakes import FakeGateway, install_cluster, make_cluster
from tests.unit.test_deployments import Endpoints
from tests.unit.test_job_service import World
from tests.unit.test_submission import GOOD

A100, L4 = "nvidia-a100-80gb", "nvidia-l4"


class PerCluster:
    """A fake gateway per cluster (the fakes' factory answers one for all)."""

    def __init__(self) -> None:
        self.gateways: dict[ClusterId, FakeGateway] = {}

    def for_cluster(self, cluster: Cluster) -> FakeGateway:
        return self.gateways.setdefault(cluster.id, FakeGateway())


class FleetWorld(World):
    """Three members: a (2 x 8 A100, 1 x 4 T4), b (1 x 8 A100), c (1 x 4 L4)."""

    def __init__(self) -> None:
        super().__init__()
        store = self.uow.store
        del store.clusters[self.cluster.id]
        self.a = install_cluster(store, make_cluster(ClusterId(uuid.uuid4()), name="a"))
        self.b = install_cluster(
            store, make_cluster(ClusterId(uuid.uuid4()), name="b", nodes=((A100, 8),))
        )
        self.c = install_cluster(
            store, make_cluster(ClusterId(uuid.uuid4()), name="c", nodes=((L4, 4),))
        )
        self.quotas = QuotaService(uow=self.uow, clock=self.clock)
        self.timeline = TimelineService(uow=self.uow, clock=self.clock, jobs=self.service)
        self.gateways = PerCluster()
        self.fleets = FleetService(uow=self.uow, clock=self.clock)
        self.dispatcher = Dispatcher(
            uow=self.uow,
            clock=self.clock,
            jobs=self.service,
            timeline=self.timeline,
            deployments=DeploymentService(
                uow=self.uow, clock=self.clock, jobs=self.service, endpoints=Endpoints()
            ),
        )
        self.balancer = FleetBalancer(
            uow=self.uow, clock=self.clock, timeline=self.timeline, lost_after=timedelta(minutes=15)
        )
        self.workloads = WorkloadService(uow=self.uow, clock=self.clock, gateways=self.gateways)

    @property
    def members(self) -> tuple[ClusterId, ...]:
        return (self.a.id, self.b.id, self.c.id)

    async def fleet(self, **changes: object) -> FleetId:
        given = replace(FleetInput("gpus", self.members), **changes)  # type: ignore[arg-type]
        return (await self.fleets.create(given)).id

    async def refresh(self) -> None:
        for cluster in (self.a, self.b, self.c):
            await self.timeline.refresh(cluster.id)

    async def occupy(self, cluster: Cluster, node: int, gpus: int, hours: float) -> Job:
        """A job of `gpus` A100 running on the cluster's `node` for `hours` from now."""
        sub = replace(
            GOOD,
            name=f"busy-{uuid.uuid4().hex[:6]}",
            cluster_id=cluster.id,
            resources=Resources(A100, gpus, 16, 256),
            estimated_duration_seconds=int(hours * 3600),
            max_duration_seconds=None,
            deadline=None,
        )
        job = await self.service.submit(self.alice, sub)
        now = self.clock.now()
        async with self.uow(TenantScope.system()) as uow:
            found = await uow.jobs.get(job.id)
            assert found is not None
            placed = (Placement(cluster.nodes[node].name, tuple(range(gpus)), None),)
            found.transition(JobStatus.QUEUED, "queued", now)
            found.transition(JobStatus.ADMITTED, "admitted", now, placements=placed)
            found.transition(JobStatus.RUNNING, "running", now, placements=placed)
            await uow.commit()
        return job

    async def step(self, job_id: JobId, status: JobStatus = JobStatus.QUEUED) -> None:
        """The job moves to `status` now, as its cluster would report it (QUEUED: handed
        over, as the hand-over leaves it)."""
        async with self.uow(TenantScope.system()) as uow:
            job = await uow.jobs.get(job_id)
            assert job is not None
            job.transition(status, status.value.lower(), self.clock.now())
            await uow.commit()

    async def set_status(self, cluster: Cluster, status: ClusterStatus) -> None:
        stored = self.uow.store.clusters[cluster.id]
        stored.status, stored.not_available_since = status, self.clock.now()


@pytest.fixture
def world() -> FleetWorld:
    return FleetWorld()


def fleet_sub(world: FleetWorld, fleet: FleetId, **changes: object) -> object:
    return replace(GOOD, fleet_id=fleet, deadline=None, max_duration_seconds=None, **changes)  # type: ignore[arg-type]


def wide(gpus: int = 8, hours: float = 0.5) -> dict[str, object]:
    return {
        "resources": Resources(A100, gpus, 16, 256),
        "estimated_duration_seconds": int(hours * 3600),
    }


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"name": "Not A Label"}, "name"),
        ({"cluster_ids": ()}, "cluster_ids"),
        ({"move_threshold_seconds": -1}, "move_threshold_seconds"),
        ({"max_moves": 21}, "max_moves"),
        ({"local_queue": ""}, "local_queue"),
        ({"cluster_queue": "no-such-queue"}, "cluster_queue"),
    ],
)
async def test_bad_fleet_input_is_refused_naming_its_field(
    world: FleetWorld, changes: dict[str, object], field: str
) -> None:
    with pytest.raises(ValidationFailed) as refused:
        await world.fleet(**changes)
    assert {i.field for i in refused.value.issues} == {field}
    assert world.uow.store.fleets == {}


async def test_members_must_exist_once_and_the_manager_must_be_kubernetes(
    world: FleetWorld,
) -> None:
    gone = ClusterId(uuid.uuid4())
    with pytest.raises(ValidationFailed) as refused:
        await world.fleet(cluster_ids=(world.a.id, world.a.id, gone))
    assert [(i.field, i.code) for i in refused.value.issues] == [
        ("cluster_ids.1", "DUPLICATE"),
        ("cluster_ids.2", "NOT_FOUND"),
    ]
    with pytest.raises(ValidationFailed) as refused:
        await world.fleet(cluster_ids=(world.a.id,), manager_cluster_id=world.b.id)
    messages = [(i.code, i.message) for i in refused.value.issues]
    assert [code for code, _ in messages] == ["NOT_KUBERNETES", "NOT_KUBERNETES"]
    assert "simulated cluster cannot be the manager" in messages[0][1]
    assert "workers are Kubernetes clusters: a is simulated" in messages[1][1]
    with pytest.raises(ValidationFailed) as refused:
        await world.fleet(manager_cluster_id=world.b.id)
    assert refused.value.issues[0].code == "MANAGER_IS_MEMBER"
    await world.fleet()
    with pytest.raises(Conflict):
        await world.fleet(cluster_ids=(world.a.id,))
    assert len(world.uow.store.fleets) == 1


async def test_a_deleted_cluster_leaves_its_fleets(world: FleetWorld) -> None:
    fleet = await world.fleet()
    async with world.uow(TenantScope.system()) as uow:
        await forget_member(uow, world.b.id)
        await uow.commit()
    assert world.uow.store.fleets[fleet].members == (world.a.id, world.c.id)


async def test_a_fleet_job_goes_where_it_starts_soonest(world: FleetWorld) -> None:
    fleet = await world.fleet()
    for node in (0, 1):  # a is full for two hours
        await world.occupy(world.a, node, 8, hours=2)
    job = await world.dispatcher.submit(world.alice, fleet_sub(world, fleet, **wide()))  # type: ignore[arg-type]
    assert (job.cluster_id, job.fleet_id, job.queue_name) == (world.b.id, fleet, "default")
    assert job.status_message is not None and "to cluster b: starts soonest" in job.status_message
    l4 = fleet_sub(world, fleet, name="on-l4", resources=Resources(L4, 2, 8, 32))
    assert (await world.dispatcher.submit(world.alice, l4)).cluster_id == world.c.id  # type: ignore[arg-type]
    offers = await world.dispatcher.offers(world.alice, fleet_sub(world, fleet, **wide()))  # type: ignore[arg-type]
    assert [o.name for o in offers.ranked] == ["b", "a"]
    assert [o.name for o in offers.refused] == ["c"]
    assert offers.ranked[1].start == world.clock.now() + timedelta(hours=2)


async def test_a_job_no_member_can_take_is_refused_with_each_members_problem(
    world: FleetWorld,
) -> None:
    fleet = await world.fleet()
    h100 = fleet_sub(world, fleet, resources=Resources("nvidia-h100-80gb", 1))
    with pytest.raises(ValidationFailed) as refused:
        await world.dispatcher.submit(world.alice, h100)  # type: ignore[arg-type]
    messages = [i.message for i in refused.value.issues]
    assert len(messages) == 3 and all("on cluster" in m for m in messages)
    assert {i.field for i in refused.value.issues} == {"resources.gpu_type"}
    bad_name = fleet_sub(world, fleet, name="Bad Name", resources=Resources("nvidia-h100-80gb", 1))
    with pytest.raises(ValidationFailed) as refused:
        await world.dispatcher.submit(world.alice, bad_name)  # type: ignore[arg-type]
    assert refused.value.issues[0].field == "name"  # said once: every member has it
    assert [i.field for i in refused.value.issues].count("name") == 1
    assert world.uow.store.jobs == {}
    other_queue = fleet_sub(world, fleet, queue_name="elsewhere")
    with pytest.raises(ValidationFailed) as refused:
        await world.dispatcher.submit(world.alice, other_queue)  # type: ignore[arg-type]
    assert refused.value.issues[0].code == "FLEET_QUEUE"


async def test_a_repeated_key_answers_with_the_first_job(world: FleetWorld) -> None:
    fleet = await world.fleet()
    sub = fleet_sub(world, fleet, idempotency_key="once", **wide())
    first = await world.dispatcher.submit(world.alice, sub)  # type: ignore[arg-type]
    for node in (0, 1):
        await world.occupy(world.a, node, 8, hours=2)
    again = await world.dispatcher.submit(world.alice, sub)  # type: ignore[arg-type]
    assert again.id == first.id and again.cluster_id == first.cluster_id


async def waiting_on_a(world: FleetWorld) -> tuple[FleetId, Job, Job]:
    """A fleet job queued on a behind a two-hour job, b busy for three: then b's job ends."""
    fleet = await world.fleet()
    for node in (0, 1):
        await world.occupy(world.a, node, 8, hours=2)
    busy_b = await world.occupy(world.b, 0, 8, hours=3)
    job = await world.dispatcher.submit(world.alice, fleet_sub(world, fleet, **wide()))  # type: ignore[arg-type]
    assert job.cluster_id == world.a.id
    await world.step(job.id)
    await world.step(busy_b.id, JobStatus.COMPLETED)
    await world.refresh()
    return fleet, job, busy_b


def mine(change: JobChanged | None, job: Job) -> bool:
    return change is not None and change.job.id == job.id


async def test_a_queued_job_moves_where_it_now_starts_much_sooner(world: FleetWorld) -> None:
    fleet, job, _ = await waiting_on_a(world)
    world.tasks.enqueued.clear()
    [move] = await world.balancer.balance(fleet)
    assert (move.from_cluster, move.to_cluster) == (world.a.id, world.b.id)
    assert "starts 7200 s sooner" in move.reason
    moved = world.stored(job.id)
    assert (moved.cluster_id, moved.status, moved.moves, moved.withdraw_from) == (
        world.b.id,
        JobStatus.PENDING,
        1,
        world.a.id,
    )
    store = world.uow.store
    on_a = [e.change.kind for e in store.events[world.a.id] if mine(e.job_change, job)]
    on_b = [e.change.kind for e in store.events[world.b.id] if mine(e.job_change, job)]
    assert on_a[-2:] == [ChangeKind.TRANSITION, ChangeKind.MOVED] and on_b == [ChangeKind.MOVED]
    assert [(m.from_cluster, m.to_cluster) for m in store.moves] == [(world.a.id, world.b.id)]
    [audited] = [e for e in store.audit if e.operation == "moveJob"]
    assert audited.actor == "system:fleets" and audited.tenant_id == world.alice.tenant_id
    [handed] = world.tasks.enqueued
    assert handed.task == task_names.SUBMIT_WORKLOAD and handed.key.endswith(":moved:1")
    plan = store.plans[fleet]
    assert [(p.job_id, p.cluster_id, p.next_best) for p in plan.jobs] == [
        (job.id, world.b.id, world.a.id)  # where it went; where it was, next best
    ]
    await world.refresh()
    assert await world.balancer.balance(fleet) == []  # where it is best now


async def test_no_move_past_max_moves_or_for_a_hand_over_under_way(world: FleetWorld) -> None:
    fleet, job, _ = await waiting_on_a(world)
    await world.fleets.update(fleet, FleetInput("gpus", world.members, max_moves=0))
    assert await world.balancer.balance(fleet) == []
    assert world.uow.store.plans[fleet].jobs[0].next_best == world.b.id  # still planned
    await world.fleets.update(fleet, FleetInput("gpus", world.members))
    async with world.uow(TenantScope.system()) as uow:  # taken back: PENDING, due again
        found = await uow.jobs.get(job.id)
        assert found is not None
        found.hold_back(world.clock.now(), world.clock.now(), "window")
        await uow.commit()
    await world.refresh()
    assert await world.balancer.balance(fleet) == []


async def test_a_retry_stays_where_it_ran_unless_its_member_stops_answering(
    world: FleetWorld,
) -> None:
    fleet, job, _ = await waiting_on_a(world)
    async with world.uow(TenantScope.system()) as uow:  # it ran on a, was evicted, is retried
        found = await uow.jobs.get(job.id)
        assert found is not None
        now = world.clock.now()
        found.transition(JobStatus.ADMITTED, "admitted", now)
        found.transition(JobStatus.PREEMPTED, "preempted by a higher priority workload", now)
        found.begin_retry(now, now, "retry 1 of 3")
        found.transition(JobStatus.QUEUED, "queued", now)
        await uow.commit()
    await world.refresh()
    assert await world.balancer.balance(fleet) == []  # b would start it sooner: it stays
    await world.set_status(world.a, ClusterStatus.NOT_AVAILABLE)
    world.clock.advance(16 * 60)
    [forced] = await world.balancer.balance(fleet)
    assert forced.job_id == job.id and forced.to_cluster == world.b.id


async def test_a_job_that_depends_on_another_stays(world: FleetWorld) -> None:
    fleet = await world.fleet()
    for node in (0, 1):
        await world.occupy(world.a, node, 8, hours=2)
    first = await world.occupy(world.a, 0, 1, hours=1)
    busy_b = await world.occupy(world.b, 0, 8, hours=3)
    sub = fleet_sub(world, fleet, depends_on=(first.id,), **wide())
    job = await world.dispatcher.submit(world.alice, sub)  # type: ignore[arg-type]
    assert job.cluster_id == world.a.id  # where what it depends on is
    await world.step(job.id)
    await world.step(busy_b.id, JobStatus.COMPLETED)
    await world.refresh()
    assert await world.balancer.balance(fleet) == []


async def test_a_job_leaves_a_member_that_stops_answering(world: FleetWorld) -> None:
    fleet = await world.fleet()
    for node in (0, 1):
        await world.occupy(world.a, node, 8, hours=1)
    await world.occupy(world.b, 0, 8, hours=4)
    queued = await world.dispatcher.submit(world.alice, fleet_sub(world, fleet, **wide()))  # type: ignore[arg-type]
    await world.step(queued.id)
    pending = await world.dispatcher.submit(
        world.alice,
        fleet_sub(world, fleet, name="later", **wide()),  # type: ignore[arg-type]
    )
    assert queued.cluster_id == pending.cluster_id == world.a.id
    await world.refresh()
    await world.set_status(world.a, ClusterStatus.NOT_AVAILABLE)
    [move] = await world.balancer.balance(fleet)  # the PENDING one at once: no copy there
    assert move.job_id == pending.id and "is NOT_AVAILABLE" in move.reason
    assert world.stored(pending.id).withdraw_from is None
    world.clock.advance(16 * 60)
    [lost] = await world.balancer.balance(fleet)  # the QUEUED one once a is lost
    assert lost.job_id == queued.id and world.stored(queued.id).cluster_id == world.b.id
    assert world.stored(queued.id).withdraw_from is None  # a's copy: its watch's, later


async def test_the_hand_over_after_a_move_withdraws_the_copy_first(world: FleetWorld) -> None:
    fleet, job, _ = await waiting_on_a(world)
    await world.balancer.balance(fleet)
    on_a, on_b = world.gateways.for_cluster(world.a), world.gateways.for_cluster(world.b)
    on_a.fail_with = GatewayUnavailable("a does not answer")
    with pytest.raises(RetryTask):
        await world.workloads.submit(job.id, 0)
    assert on_b.submitted == []  # never two live copies
    on_a.fail_with = None
    assert await world.workloads.submit(job.id, 0) is True
    assert on_a.cancelled == [(job.id, 0)]
    assert [w.name for w in on_b.submitted] == [world.stored(job.id).workload_name]
    stored = world.stored(job.id)
    assert (stored.status, stored.cluster_id, stored.withdraw_from) == (
        JobStatus.QUEUED,
        world.b.id,
        None,
    )


async def test_the_member_it_left_takes_back_a_copy_it_still_finds(world: FleetWorld) -> None:
    fleet, job, _ = await waiting_on_a(world)
    await world.balancer.balance(fleet)
    observations = ObservationService(uow=world.uow, clock=world.clock, jobs=world.service)
    left = WorkloadObservation(
        job.id, 0, WorkloadPhase.ADMITTED, "admitted", world.clock.now(), workload="old"
    )
    listed: Sequence[WorkloadObservation] = [left]
    assert await observations.strays(listed, cluster_id=world.a.id) == [left]
    assert await observations.strays(listed, cluster_id=world.b.id) == []
    applied = await observations.apply_batch(listed, cluster_id=world.a.id)
    assert applied.changed == [] and applied.strays == [left]
    assert world.stored(job.id).status is JobStatus.PENDING  # its admission there is not its
