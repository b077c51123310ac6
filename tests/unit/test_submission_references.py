"""What a submission refers to, resolved with fakes: its queue, its dependencies, its reservation.

Covers: a tenant's first job in "default" creates its LocalQueue in the same commit (and only
once); another queue must exist in the tenant's namespace, and "default" needs the ClusterQueue;
dependencies must be the tenant's own jobs on the same cluster, and are stored once each; a
reservation must be the tenant's, on the cluster, live, of the job's GPU type and large enough;
the window is kept. Nothing (no job, no LocalQueue) is stored when a submission is refused.
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import time, timedelta
from typing import Any

import pytest

from domain.errors import ValidationFailed
from domain.model.ids import ClusterId, JobId
from domain.model.job import Resources, TimeWindow
from domain.model.quota import LocalQueue, tenant_namespace
from domain.model.reservation import CapacityReservation, ReservationId
from tests.support.fakes import T0, install_cluster, make_cluster
from tests.unit.test_job_service import World
from tests.unit.test_submission import GOOD


@pytest.fixture
def world() -> World:
    return World()


def local_queues(world: World) -> list[tuple[str, str, str]]:
    return sorted(
        (q.namespace, q.name, q.cluster_queue) for q in world.uow.store.quota.local_queues.values()
    )


async def refused(world: World, **changes: Any) -> set[tuple[str, str]]:
    jobs, queues = len(world.uow.store.jobs), local_queues(world)
    with pytest.raises(ValidationFailed) as caught:
        await world.service.submit(world.alice, replace(GOOD, **changes))
    assert len(world.uow.store.jobs) == jobs and local_queues(world) == queues
    return {(i.field, i.code) for i in caught.value.issues}


async def test_the_first_job_in_default_makes_the_tenants_local_queue(world: World) -> None:
    first = await world.service.submit(world.alice, GOOD)
    await world.service.submit(world.alice, replace(GOOD, name="second"))
    namespace = tenant_namespace(world.alice.tenant_id)
    assert first.queue_name == "default"
    assert local_queues(world) == [(namespace, "default", "default")]
    await world.service.submit(world.bob, GOOD)
    assert len(local_queues(world)) == 2


async def test_other_queues_must_exist_in_the_tenants_namespace(world: World) -> None:
    assert await refused(world, queue_name="team") == {("queue_name", "NOT_FOUND")}
    bobs = LocalQueue(GOOD.cluster_id, "team", tenant_namespace(world.bob.tenant_id),
                      world.bob.tenant_id, "default", T0)  # fmt: skip
    world.uow.store.quota.local_queues[(bobs.cluster_id, bobs.namespace, bobs.name)] = bobs
    assert await refused(world, queue_name="team") == {("queue_name", "NOT_FOUND")}
    job = await world.service.submit(world.bob, replace(GOOD, queue_name="team"))
    assert world.stored(job.id).queue_name == "team"


async def test_default_needs_the_default_cluster_queue(world: World) -> None:
    del world.uow.store.quota.cluster_queues[(GOOD.cluster_id, "default")]
    assert await refused(world) == {("queue_name", "NOT_FOUND")}


async def test_dependencies(world: World) -> None:
    first = await world.service.submit(world.alice, GOOD)
    bobs = await world.service.submit(world.bob, GOOD)
    elsewhere = install_cluster(world.uow.store, make_cluster(ClusterId(uuid.uuid4())))
    remote = await world.service.submit(world.alice, replace(GOOD, cluster_id=elsewhere.id))
    job = await world.service.submit(
        world.alice, replace(GOOD, name="after", depends_on=(first.id, first.id))
    )
    assert world.stored(job.id).depends_on == (first.id,)
    assert await refused(world, depends_on=(bobs.id,)) == {("depends_on", "NOT_FOUND")}
    assert await refused(world, depends_on=(JobId(uuid.uuid4()),)) == {("depends_on", "NOT_FOUND")}
    assert await refused(world, depends_on=(remote.id,)) == {("depends_on", "OTHER_CLUSTER")}


def book(world: World, **changes: Any) -> CapacityReservation:
    reservation = CapacityReservation(
        id=ReservationId(uuid.uuid4()),
        cluster_id=GOOD.cluster_id,
        tenant_id=world.alice.tenant_id,
        name="launch",
        cluster_queue="default",
        flavor="nvidia-a100-80gb",
        gpu_count=8,
        start=T0,
        end=T0 + timedelta(hours=2),
        created_at=T0,
    )
    reservation = replace(reservation, **changes)
    world.uow.store.quota.reservations[reservation.id] = reservation
    return reservation


async def test_reservations(world: World) -> None:
    good = book(world)
    job = await world.service.submit(world.alice, replace(GOOD, reservation_id=good.id))
    assert world.stored(job.id).reservation_id == good.id
    cases = [
        (book(world, tenant_id=world.bob.tenant_id).id, "NOT_FOUND"),
        (book(world, cluster_id=ClusterId(uuid.uuid4())).id, "NOT_FOUND"),
        (ReservationId(uuid.uuid4()), "NOT_FOUND"),
        (book(world, cancelled_at=T0).id, "CANCELLED"),
        (book(world, end=T0).id, "ENDED"),
        (book(world, flavor="nvidia-tesla-t4").id, "FLAVOR_MISMATCH"),
        (book(world, gpu_count=4).id, "EXCEEDS_RESERVATION"),
    ]
    for reservation_id, code in cases:
        assert await refused(world, reservation_id=reservation_id) == {("reservation_id", code)}
    cpu_only = {"resources": Resources(None, 0), "reservation_id": good.id}
    assert await refused(world, **cpu_only) == {("reservation_id", "FLAVOR_MISMATCH")}


async def test_window_is_kept(world: World) -> None:
    window = TimeWindow(time(22), time(6, 30))
    job = await world.service.submit(world.alice, replace(GOOD, window=window))
    assert world.stored(job.id).window == window


async def test_a_refused_first_submission_makes_no_local_queue(world: World) -> None:
    issues = await refused(world, depends_on=(JobId(uuid.uuid4()),), reservation_id=uuid.uuid4())
    assert issues == {("depends_on", "NOT_FOUND"), ("reservation_id", "NOT_FOUND")}
    assert local_queues(world) == []
