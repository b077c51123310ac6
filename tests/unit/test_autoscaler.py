"""The autoscaler service (`domain.services.autoscaler.Autoscaler`) with fakes:

- a load above the target makes replica jobs (the tenant's, handed over) and records one SCALED
  change carrying the step; a load not known changes nothing;
- scaling down cancels the replicas still waiting before a running one;
- a wake at zero starts max(1, minReplicas) replicas once: a second wake finds one wanted and
  takes no step; a deployment without autoscaling, or stopped, is not woken;
- configure brings replicas within new bounds (a step), turning it off keeps the replicas, and
  another tenant's deployment is not found;
- the scale-down delay's state is kept between looks without a change recorded;
- idle time counts from when a replica began to serve, not from the deployment's making.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from domain.errors import NotFound
from domain.model.autoscaling import Autoscaling, ScaleMetric, ServingLoad
from domain.model.cluster import Cluster
from domain.model.deployment import Deployment, DeploymentChanged, DeploymentChangeKind
from domain.model.job import JobStatus
from domain.services import task_names
from domain.services.autoscaler import WAKE_REASON, Autoscaler
from tests.unit.test_deployments import World

SCALING = Autoscaling(0, 4, ScaleMetric.IN_FLIGHT, 2.0, scale_down_delay_seconds=60)


@pytest.fixture
def world() -> World:
    return World()


def autoscaler(world: World) -> Autoscaler:
    return Autoscaler(
        uow=world.uow, clock=world.clock, deployments=world.service, endpoints=world.endpoints
    )


def scaled(world: World) -> list[DeploymentChanged]:
    return [
        e.change
        for e in world.uow.store.events[world.cluster.id]
        if isinstance(e.change, DeploymentChanged) and e.change.kind is DeploymentChangeKind.SCALED
    ]


async def test_load_above_the_target_makes_replicas_and_records_the_step(world: World) -> None:
    d = await world.service.deploy(world.alice, world.request(replicas=1, autoscaling=SCALING))
    (first,) = world.replica_jobs(d)
    world.run(first)
    world.endpoints.seen = ServingLoad(in_flight=(7,), queue_seconds=0.0)
    step = await autoscaler(world).autoscale(d.id)
    assert step is not None and (step.from_replicas, step.to_replicas) == (1, 4)  # ceil(7/2)
    stored = world.uow.store.deployments[d.id]
    assert stored.replicas == 4 and len(stored.replica_jobs) == 4
    made = world.replica_jobs(stored)[1:]
    assert all(j.tenant_id == world.alice.tenant_id for j in made)
    handed = {
        t.kwargs["job_id"] for t in world.tasks.enqueued if t.task == task_names.SUBMIT_WORKLOAD
    }
    assert {str(j.id) for j in made} <= handed
    [change] = scaled(world)
    assert change.step == step and change.deployment.replicas == 4
    assert stored.scaling_steps == (step,)

    world.endpoints.seen = None  # not known: as it is
    assert await autoscaler(world).autoscale(d.id) is None
    assert len(scaled(world)) == 1


async def test_scaling_down_cancels_the_waiting_replicas_first(world: World) -> None:
    no_delay = Autoscaling(1, 4, ScaleMetric.IN_FLIGHT, 2.0, scale_down_delay_seconds=0)
    d = await world.service.deploy(world.alice, world.request(replicas=3, autoscaling=no_delay))
    jobs = world.replica_jobs(d)
    world.run(jobs[2])  # the newest runs, the two older still wait
    world.endpoints.seen = ServingLoad(in_flight=(1,), queue_seconds=0.0)
    step = await autoscaler(world).autoscale(d.id)
    assert step is not None and step.to_replicas == 1
    statuses = [j.status for j in world.replica_jobs(d)]
    assert statuses == [JobStatus.CANCELLED, JobStatus.CANCELLED, JobStatus.RUNNING]


async def test_a_wake_starts_one_replica_once(world: World) -> None:
    d = await world.service.deploy(world.alice, world.request(replicas=0, autoscaling=SCALING))
    assert d.replica_jobs == ()
    scaler = autoscaler(world)
    assert await scaler.wake(d.id)
    assert await scaler.wake(d.id)  # one is wanted already: no second step
    stored = world.uow.store.deployments[d.id]
    assert stored.replicas == 1 and len(stored.replica_jobs) == 1
    assert [c.step.reason for c in scaled(world) if c.step] == [WAKE_REASON]


async def test_only_a_deployment_that_scales_from_zero_is_woken(world: World) -> None:
    fixed = await world.service.deploy(world.alice, world.request(replicas=0))
    assert not await autoscaler(world).wake(fixed.id)
    assert world.uow.store.deployments[fixed.id].replicas == 0
    scaling = await world.service.deploy(
        world.alice, world.request(name="other", replicas=0, autoscaling=SCALING)
    )
    await world.service.stop(world.alice, scaling.id)
    assert not await autoscaler(world).wake(scaling.id)


async def test_configure_brings_replicas_within_the_bounds(world: World) -> None:
    d = await world.service.deploy(world.alice, world.request(replicas=1))
    scaler = autoscaler(world)
    within = Autoscaling(2, 3, ScaleMetric.QUEUE_TIME, 1.5)
    changed = await scaler.configure(world.alice, d.id, within)
    assert changed.replicas == 2 and changed.autoscaling == within
    assert [(s.from_replicas, s.to_replicas) for s in changed.scaling_steps] == [(1, 2)]
    off = await scaler.configure(world.alice, d.id, None)
    assert off.autoscaling is None and off.replicas == 2
    with pytest.raises(NotFound):
        await scaler.configure(world.bob, d.id, within)


async def test_the_scale_down_delay_is_kept_between_looks(world: World) -> None:
    d = await world.service.deploy(world.alice, world.request(replicas=2, autoscaling=SCALING))
    for job in world.replica_jobs(d):
        world.run(job)
    world.endpoints.seen = ServingLoad(in_flight=(1, 0), queue_seconds=0.0)
    scaler = autoscaler(world)
    assert await scaler.autoscale(d.id) is None
    waiting = world.uow.store.deployments[d.id].scaling_state
    assert waiting.lower_since == world.clock.now() and waiting.lower_peak == 1
    world.clock.advance(timedelta(seconds=60).total_seconds())
    step = await scaler.autoscale(d.id)
    assert step is not None and (step.from_replicas, step.to_replicas) == (2, 1)
    assert len(scaled(world)) == 1


async def test_idle_time_counts_from_when_it_began_to_serve(world: World) -> None:
    idle = Autoscaling(0, 2, ScaleMetric.IN_FLIGHT, 2.0, scale_to_zero_after_seconds=300)
    d = await world.service.deploy(world.alice, world.request(replicas=1, autoscaling=idle))
    world.clock.advance(250)  # the replica takes its time to start
    (replica,) = world.replica_jobs(d)
    world.run(replica)
    world.endpoints.seen = ServingLoad(in_flight=(0,), queue_seconds=0.0)
    world.clock.advance(100)
    assert await autoscaler(world).autoscale(d.id) is None  # 350 s made, 100 s serving
    world.clock.advance(200)
    step = await autoscaler(world).autoscale(d.id)
    assert step is not None and step.to_replicas == 0 and step.reason == "no request for 300 s"


async def test_a_round_looks_at_those_that_scale_themselves_where_this_process_may(
    world: World,
) -> None:
    scaler = autoscaler(world)
    made = [
        await world.service.deploy(
            world.alice, world.request(name=name, replicas=1, autoscaling=given)
        )
        for name, given in [
            ("scales", SCALING),
            ("fixed", None),
            ("stopped", SCALING),
            ("elsewhere", SCALING),
        ]
    ]
    for d in made:
        world.run(world.replica_jobs(d)[0])
    await world.service.stop(world.alice, made[2].id)
    world.endpoints.seen = ServingLoad(in_flight=(7,), queue_seconds=0.0)
    looked: list[str] = []

    def here(d: Deployment, cluster: Cluster) -> bool:
        looked.append(d.name)
        return cluster.id == world.cluster.id and d.name != "elsewhere"

    assert await scaler.autoscale_all(here) == 1
    assert sorted(looked) == ["elsewhere", "scales"]  # the others are not even read
    replicas = {d.name: world.uow.store.deployments[d.id].replicas for d in made}
    assert replicas == {"scales": 4, "fixed": 1, "stopped": 0, "elsewhere": 1}
