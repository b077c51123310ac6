"""Drains with fakes: what a drain does to the jobs where it covers, and to a fleet.

Covers: a running batch job on the drained node is requeued in the same attempt (PREEMPTED then
PENDING, a new hand-over, no retry used), not taken back by a task of its own but by its next
hand-over, which evicts the old copy with the job's grace period before handing the new one
over; a job on another node is left alone; draining a drained node answers with the same drain.
The estimator counts the drained node as cordoned. A fleet's waiting job on a member drained whole
moves to another member at once (no lost-member wait), and a fleet submission refuses the drained
member, naming why. A deployment's replica job is replaced before it stops: the replacement
takes the old one's replica number once it runs. A drain is DRAINED only once the last grace
period is over.
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import timedelta

import pytest

from domain.errors import ValidationFailed
from domain.model.cluster import Cluster
from domain.model.deployment import Deployment, Engine, EngineArgs, Replacement
from domain.model.drain import DrainState, cordoned
from domain.model.ids import DeploymentId, JobId, TenantId
from domain.model.job import Job, JobStatus
from domain.model.principal import Principal, Scope
from domain.ports.unit_of_work import TenantScope
from domain.services import task_names
from domain.services.deployments import DeploymentService
from domain.services.drains import DrainService
from tests.unit.test_deployments import Endpoints
from tests.unit.test_fleets import A100, FleetWorld, fleet_sub, wide

OPERATOR = Principal(TenantId(uuid.uuid4()), frozenset({Scope.ADMIN}))


class DrainWorld(FleetWorld):
    def __init__(self) -> None:
        super().__init__()
        self.deployments = DeploymentService(
            uow=self.uow, clock=self.clock, jobs=self.service, endpoints=Endpoints()
        )
        self.drains = DrainService(
            uow=self.uow,
            clock=self.clock,
            gateways=self.gateways,
            deployments=self.deployments,
            balancer=self.balancer,
        )
        for cluster in (self.a, self.b, self.c):  # as each reports its nodes
            self.gateways.for_cluster(cluster).node_list = list(cluster.nodes)

    async def running(self, cluster: Cluster, node: int, *, grace: int | None = None) -> Job:
        job = await self.occupy(cluster, node, 8, 2)
        if grace is not None:
            self.uow.store.jobs[job.id].termination_grace_seconds = grace
        return self.uow.store.jobs[job.id]


@pytest.fixture
def world() -> DrainWorld:
    return DrainWorld()


async def test_a_running_job_on_the_drained_node_is_requeued_and_handed_over_with_its_grace(
    world: DrainWorld,
) -> None:
    drained = await world.running(world.a, 0, grace=120)
    other = await world.running(world.a, 1)
    node = world.a.nodes[0].name
    world.tasks.enqueued.clear()

    shown = await world.drains.drain(OPERATOR, world.a.id, node, "firmware")
    assert shown.state is DrainState.DRAINING
    assert shown.estimated_end == world.clock.now() + timedelta(seconds=120)
    job = world.stored(drained.id)
    assert (job.status, job.attempt, job.generation) == (JobStatus.PENDING, 0, 1)
    assert job.withdraw_from == world.a.id
    assert job.status_message == f"requeued: node {node} is drained (firmware)"
    assert world.stored(other.id).status is JobStatus.RUNNING  # the other node's job stays
    tasks = [(e.task, e.key) for e in world.tasks.enqueued]
    assert (task_names.SUBMIT_WORKLOAD, f"submit:{job.id}:0:g1") in tasks
    assert all(t != task_names.CANCEL_WORKLOAD for t, _ in tasks)  # the hand-over withdraws it

    assert await world.workloads.submit(job.id, 0)
    gateway = world.gateways.gateways[world.a.id]
    assert gateway.evicted == [(job.id, 0, 120)]  # SIGTERM, then its grace, before the new copy
    assert [w.name for w in gateway.submitted] == [job.workload_name]
    assert world.stored(job.id).status is JobStatus.QUEUED

    again = await world.drains.drain(OPERATOR, world.a.id, node, "again")
    assert again.drain.id == shown.drain.id and len(world.uow.store.drains) == 1
    assert (await world.drains.advance(shown.drain.id)).state is DrainState.DRAINING  # type: ignore[union-attr]
    world.clock.advance(121)
    done = await world.drains.advance(shown.drain.id)
    assert done is not None and done.state is DrainState.DRAINED
    assert done.drain.drained_at == world.clock.now()


async def test_the_estimate_counts_the_drained_node_as_cordoned(world: DrainWorld) -> None:
    shown = await world.drains.drain(OPERATOR, world.a.id, world.a.nodes[0].name, None)
    nodes = cordoned(world.a.nodes, [shown.drain])
    assert [n.usable for n in nodes] == [False, *(n.usable for n in world.a.nodes[1:])]
    assert shown.drain.reason == "maintenance"  # said when none is given


async def test_a_fleets_waiting_job_leaves_a_member_drained_whole_and_submissions_skip_it(
    world: DrainWorld,
) -> None:
    fleet = await world.fleet()
    await world.occupy(world.b, 0, 8, 4)  # b busy: a starts the fleet's job soonest
    job = await world.dispatcher.submit(world.alice, fleet_sub(world, fleet, **wide()))  # type: ignore[arg-type]
    assert job.cluster_id == world.a.id
    await world.step(job.id)
    await world.refresh()

    await world.drains.drain(OPERATOR, world.a.id, None, "power work")
    moved = world.stored(job.id)
    assert moved.cluster_id == world.b.id and moved.moves == 1  # at once: a answers
    assert moved.status_message == "moved to cluster b: its cluster is drained"
    assert moved.withdraw_from == world.a.id

    offers = await world.dispatcher.offers(world.alice, fleet_sub(world, fleet, **wide()))  # type: ignore[arg-type]
    [refused] = [o for o in offers.refused if o.cluster_id == world.a.id]
    assert [(i.code, i.message) for i in refused.refused] == [
        ("DRAINED", "cluster a is drained: power work")
    ]


async def test_a_replica_is_replaced_before_it_stops_and_the_new_one_takes_its_number(
    world: DrainWorld,
) -> None:
    old = await world.running(world.a, 0)
    async with world.uow(TenantScope.system()) as uow:
        job = await uow.jobs.get(old.id)
        assert job is not None
    new = replace(job, id=JobId(uuid.uuid4()), status=JobStatus.RUNNING, changes=[])
    now = world.clock.now()
    d = Deployment(
        id=DeploymentId(uuid.uuid4()),
        tenant_id=job.tenant_id,
        project_id=job.project_id,
        cluster_id=job.cluster_id,
        name="chat",
        model="org/model",
        served_model_name="org/model",
        engine=Engine.VLLM,
        engine_args=EngineArgs(tensor_parallel_size=8),
        gpu_type=A100,
        cpu_cores=16,
        memory_gb=256,
        replicas=1,
        created_at=now,
        updated_at=now,
    )
    d.replica_jobs = (old.id,)
    d.replacing(old.id, new.id, "node drained", now)
    assert d.replaced == {old.id} and list(d.replica_jobs) == [old.id, new.id]
    done = d.retire({old.id: job, new.id: new}, world.clock.now())
    assert done == [Replacement(old.id, new.id, "node drained")]
    assert list(d.replica_jobs) == [new.id] and d.replacements == ()

    waiting = replace(new, status=JobStatus.QUEUED)
    d.replica_jobs, d.replacements = (old.id, new.id), (Replacement(old.id, new.id, "x"),)
    assert d.retire({old.id: job, new.id: waiting}, world.clock.now()) == []  # not yet: serves
    assert d.replica_jobs == (old.id, new.id)


async def test_a_bad_node_or_reason_is_refused_naming_its_field(world: DrainWorld) -> None:
    with pytest.raises(ValidationFailed) as refused:
        await world.drains.drain(OPERATOR, world.a.id, "no-such-node", None)
    assert [(i.field, i.code) for i in refused.value.issues] == [("node", "NOT_FOUND")]
    with pytest.raises(ValidationFailed) as refused:
        await world.drains.drain(OPERATOR, world.a.id, None, "x\x00y")
    assert [i.field for i in refused.value.issues] == ["reason"]
    assert world.uow.store.drains == {}
