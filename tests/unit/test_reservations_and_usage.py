"""Capacity reservations, and the usage of each ClusterQueue, with fakes.

Covers, as a table: what a reservation must be (a name, at least one GPU and no more than the
flavor has on the cluster, a flavor and ClusterQueue that exist, the queue holding GPU quota in
the flavor, start before end, end in the future, times with a timezone), each naming its field;
a good reservation is the caller's, its name unique among live ones; cancelling stamps the time,
once, and only the owner or an admin may. What a tenant may book is bounded (length, lead time,
its share of the queue at the peak of its overlapping reservations); the operator is not. Usage: GPUs count against the flavor a job was admitted
under, cores and memory against the queue's CPU flavor, only ADMITTED and RUNNING jobs hold
quota, waiting ones are counted, borrowing is what exceeds nominal, reserved is what active
reservations hold, and jobs are attributed through their tenant's LocalQueue.
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

import pytest

from domain.errors import Conflict, Forbidden, NotFound, ValidationFailed
from domain.model.ids import ClusterId, TenantId
from domain.model.job import Job, JobStatus, Placement, PodSet, Resources
from domain.model.principal import Principal, Scope
from domain.model.quota import (
    NVIDIA_GPU,
    ClusterQueue,
    FlavorQuotas,
    LocalQueue,
    QuotaSet,
    ResourceGroup,
    ResourceQuota,
    tenant_namespace,
)
from domain.model.reservation import CapacityReservation, ReservationId
from domain.services.quota_defaults import default_quotas
from domain.services.quota_usage import FlavorUsage, cluster_queue_usage
from domain.services.reservation_rules import ReservationSpec
from domain.services.reservations import ReservationLimits, ReservationService, peak
from tests.support.admission_tables import KUEUE_CASES
from tests.support.fakes import T0, FakeClock, FakeUnitOfWorkFactory, install_cluster, make_cluster
from tests.unit.test_job_model import new_job

CLUSTER = ClusterId(uuid.uuid4())
ALICE = Principal(TenantId(uuid.uuid4()), frozenset({Scope.JOBS_WRITE, Scope.CLUSTERS_READ}))
BOB = Principal(TenantId(uuid.uuid4()), frozenset({Scope.JOBS_WRITE, Scope.CLUSTERS_READ}))
ADMIN = Principal(TenantId(uuid.uuid4()), frozenset({Scope.ADMIN}))
A100, T4 = "nvidia-a100-80gb", "nvidia-tesla-t4"

GOOD = ReservationSpec(
    cluster_id=CLUSTER,
    name="launch",
    cluster_queue="default",
    flavor=A100,
    gpu_count=8,
    start=T0 + timedelta(hours=1),
    end=T0 + timedelta(hours=3),
)


@pytest.fixture
def world() -> tuple[ReservationService, FakeUnitOfWorkFactory]:
    uow = FakeUnitOfWorkFactory()
    install_cluster(uow.store, make_cluster(CLUSTER))
    return ReservationService(uow=uow, clock=FakeClock()), uow


CASES: list[tuple[str, dict[str, Any], set[tuple[str, str]]]] = [
    ("bad name", {"name": "Launch Day"}, {("name", "INVALID_NAME")}),
    ("no gpus", {"gpu_count": 0}, {("gpu_count", "INVALID")}),
    ("more than the flavor has", {"gpu_count": 17}, {("gpu_count", "EXCEEDS_CAPACITY")}),
    ("t4 is smaller", {"flavor": T4, "gpu_count": 5}, {("gpu_count", "EXCEEDS_CAPACITY")}),
    ("unknown flavor", {"flavor": "h100"}, {("flavor", "NOT_FOUND")}),
    ("unknown queue", {"cluster_queue": "nope"}, {("cluster_queue", "NOT_FOUND")}),
    ("queue without gpu quota there", {"flavor": "default-cpu"}, {("cluster_queue", "NO_QUOTA")}),
    ("end before start", {"end": T0 + timedelta(minutes=30)}, {("end", "BEFORE_START")}),
    ("empty", {"end": GOOD.start}, {("end", "BEFORE_START")}),
    ("ended", {"start": T0 - timedelta(hours=2), "end": T0}, {("end", "IN_THE_PAST")}),
    ("naive start", {"start": datetime(2026, 1, 1, 13)}, {("start", "INVALID")}),
]


@pytest.mark.parametrize(("changes", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
async def test_reservation_rules(
    world: tuple[ReservationService, FakeUnitOfWorkFactory],
    changes: dict[str, Any],
    expected: set[tuple[str, str]],
) -> None:
    service, uow = world
    with pytest.raises(ValidationFailed) as caught:
        await service.create_reservation(ALICE, replace(GOOD, **changes))
    assert {(i.field, i.code) for i in caught.value.issues} == expected
    assert uow.store.quota.reservations == {}


async def test_reserve_then_cancel(world: tuple[ReservationService, FakeUnitOfWorkFactory]) -> None:
    service, uow = world
    made = await service.create_reservation(ALICE, GOOD)
    assert made.tenant_id == ALICE.tenant_id and made.cancelled_at is None
    assert uow.store.quota.reservations[made.id] == made
    with pytest.raises(Conflict):
        await service.create_reservation(ALICE, GOOD)
    theirs = await service.create_reservation(BOB, GOOD)  # names are per tenant
    with pytest.raises(NotFound):
        await service.cancel_reservation(BOB, made.id)
    cancelled = await service.cancel_reservation(ALICE, made.id)
    assert cancelled.cancelled_at == T0
    assert uow.store.quota.reservations[made.id].cancelled_at == T0
    with pytest.raises(Conflict) as caught:
        await service.cancel_reservation(ALICE, made.id)
    assert caught.value.code == "CANCELLED"
    await service.create_reservation(ALICE, GOOD)  # the name is free again
    assert (await service.cancel_reservation(ADMIN, theirs.id)).cancelled_at == T0
    with pytest.raises(NotFound):
        await service.cancel_reservation(ALICE, ReservationId(uuid.uuid4()))


async def test_reserving_needs_jobs_write(
    world: tuple[ReservationService, FakeUnitOfWorkFactory],
) -> None:
    service, uow = world
    reader = Principal(TenantId(uuid.uuid4()), frozenset({Scope.CLUSTERS_READ}))
    with pytest.raises(Forbidden):
        await service.create_reservation(reader, GOOD)
    with pytest.raises(NotFound):
        await service.create_reservation(ALICE, replace(GOOD, cluster_id=ClusterId(uuid.uuid4())))
    assert uow.store.quota.reservations == {}


LIMIT_CASES: list[tuple[str, dict[str, Any], set[tuple[str, str]]]] = [
    ("a year", {"end": GOOD.start + timedelta(days=365)}, {("end", "RESERVATION_TOO_LONG")}),
    (
        "next year",
        {"start": T0 + timedelta(days=300), "end": T0 + timedelta(days=301)},
        {("start", "RESERVATION_TOO_FAR_AHEAD")},
    ),
    ("the whole queue", {"gpu_count": 16}, {("gpu_count", "EXCEEDS_RESERVATION_SHARE")}),
]


@pytest.mark.parametrize(
    ("changes", "expected"), [c[1:] for c in LIMIT_CASES], ids=[c[0] for c in LIMIT_CASES]
)
async def test_a_tenant_books_within_the_operators_limits(
    world: tuple[ReservationService, FakeUnitOfWorkFactory],
    changes: dict[str, Any],
    expected: set[tuple[str, str]],
) -> None:
    service, uow = world
    with pytest.raises(ValidationFailed) as caught:
        await service.create_reservation(ALICE, replace(GOOD, **changes))
    assert {(i.field, i.code) for i in caught.value.issues} == expected
    assert uow.store.quota.reservations == {}
    booked = await service.create_reservation(ADMIN, replace(GOOD, **changes))  # not bounded
    assert uow.store.quota.reservations == {booked.id: booked}


async def test_the_share_counts_overlapping_reservations_at_their_peak() -> None:
    uow = FakeUnitOfWorkFactory()
    install_cluster(uow.store, make_cluster(CLUSTER))
    service = ReservationService(uow=uow, clock=FakeClock(), limits=ReservationLimits())
    hour = timedelta(hours=1)
    # 16 GPUs of nominal quota, half of it at once: 4 + 4 in a row is 4 at the peak
    await service.create_reservation(ALICE, replace(GOOD, name="a", gpu_count=4))
    later = replace(GOOD, name="b", gpu_count=4, start=GOOD.end, end=GOOD.end + hour)
    await service.create_reservation(ALICE, later)
    spanning = replace(GOOD, name="c", gpu_count=4, start=GOOD.start, end=later.end)
    await service.create_reservation(ALICE, spanning)  # 8 at the peak: allowed
    with pytest.raises(ValidationFailed) as caught:
        await service.create_reservation(ALICE, replace(spanning, name="d", gpu_count=1))
    assert [(i.field, i.code) for i in caught.value.issues] == [
        ("gpu_count", "EXCEEDS_RESERVATION_SHARE")
    ]
    await service.create_reservation(BOB, replace(spanning, name="d", gpu_count=8))  # per tenant
    elsewhere = replace(GOOD, name="e", start=later.end + hour, end=later.end + 2 * hour)
    await service.create_reservation(ALICE, elsewhere)  # nothing of hers overlaps it


def test_peak_is_the_most_held_at_once() -> None:
    def booked(start: int, end: int, gpus: int) -> CapacityReservation:
        return CapacityReservation(
            ReservationId(uuid.uuid4()),
            CLUSTER,
            ALICE.tenant_id,
            "r",
            "default",
            A100,
            gpus,
            T0 + timedelta(hours=start),
            T0 + timedelta(hours=end),
            T0,
        )

    assert peak([]) == 0
    assert peak([booked(0, 2, 3), booked(2, 4, 5)]) == 5  # back to back: never together
    assert peak([booked(0, 3, 3), booked(1, 4, 5), booked(2, 5, 1)]) == 9


# --- usage ------------------------------------------------------------------------------------

SMALL = ClusterQueue(
    CLUSTER,
    "small",
    T0,
    T0,
    resource_groups=(
        ResourceGroup((NVIDIA_GPU,), (FlavorQuotas(A100, (ResourceQuota(NVIDIA_GPU, 2),)),)),
    ),
)


def quota_set() -> QuotaSet:
    flavors, default = default_quotas(make_cluster(CLUSTER), T0)
    return QuotaSet(
        flavors=tuple(flavors),
        cluster_queues=(default, SMALL),
        local_queues=(
            LocalQueue(CLUSTER, "default", tenant_namespace(ALICE.tenant_id), ALICE.tenant_id,
                       "default", T0),
            LocalQueue(CLUSTER, "team", tenant_namespace(BOB.tenant_id), BOB.tenant_id,
                       "small", T0),
        ),
    )  # fmt: skip


def job(tenant: Principal, status: JobStatus, gpus: int, flavor: str | None, **kw: Any) -> Job:
    made = new_job(status)
    made.cluster_id, made.tenant_id = CLUSTER, tenant.tenant_id
    made.queue_name = kw.pop("queue", "default" if tenant is ALICE else "team")
    gpu_type = {A100: A100, T4: T4}.get(flavor or "", A100 if gpus else None)
    made.resources = Resources(gpu_type, gpus, kw.pop("cpu", 2.0), kw.pop("memory", 16.0))
    made.placements = (Placement("node-0", tuple(range(gpus)), flavor),) if flavor else ()
    return made


def reservation(queue: str, flavor: str, gpus: int, **kw: Any) -> CapacityReservation:
    return CapacityReservation(
        id=ReservationId(uuid.uuid4()),
        cluster_id=CLUSTER,
        tenant_id=ALICE.tenant_id,
        name="r",
        cluster_queue=queue,
        flavor=flavor,
        gpu_count=gpus,
        start=kw.get("start", T0 - timedelta(hours=1)),
        end=kw.get("end", T0 + timedelta(hours=1)),
        created_at=T0,
        cancelled_at=kw.get("cancelled_at"),
    )


def row(rows: tuple[FlavorUsage, ...], flavor: str, resource: str) -> FlavorUsage:
    return next(r for r in rows if (r.flavor, r.resource) == (flavor, resource))


def test_usage_of_each_cluster_queue() -> None:
    S = JobStatus
    jobs = [
        job(ALICE, S.RUNNING, 8, A100, cpu=16, memory=128),
        job(ALICE, S.ADMITTED, 4, A100),
        job(ALICE, S.RUNNING, 2, T4),
        job(ALICE, S.RUNNING, 0, None, cpu=4, memory=8),  # CPU only
        job(ALICE, S.PENDING, 8, None),
        job(ALICE, S.QUEUED, 1, None),
        job(ALICE, S.RUNNING, 8, A100, queue="ghost"),  # no such LocalQueue: no queue's
        job(BOB, S.RUNNING, 4, A100),
        job(BOB, S.QUEUED, 4, None),
    ]
    reservations = [
        reservation("default", A100, 6),
        reservation("default", A100, 3, start=T0 + timedelta(hours=1)),  # not yet
        reservation("default", T4, 1, cancelled_at=T0 - timedelta(minutes=1)),
        reservation("small", A100, 1),
    ]
    usage = cluster_queue_usage(quota_set(), jobs, reservations, T0)
    default, small = usage["default"], usage["small"]
    assert [(r.flavor, r.resource) for r in default] == [
        (A100, NVIDIA_GPU), (T4, NVIDIA_GPU), ("default-cpu", "cpu"), ("default-cpu", "memory"),
    ]  # fmt: skip
    assert row(default, A100, NVIDIA_GPU) == FlavorUsage(
        flavor=A100,
        resource=NVIDIA_GPU,
        nominal_quota=16,
        borrowing_limit=None,
        lending_limit=None,
        used=12,
        borrowed=0,
        reserved=6,
        pending_workloads=2,
        admitted_workloads=4,
    )
    assert (row(default, T4, NVIDIA_GPU).used, row(default, T4, NVIDIA_GPU).reserved) == (2, 0)
    assert row(default, "default-cpu", "cpu").used == 16 + 2 + 2 + 4
    assert row(default, "default-cpu", "memory").used == 128 + 16 + 16 + 8
    assert row(default, "default-cpu", "cpu").reserved == 0
    [bobs] = small
    assert (bobs.used, bobs.borrowed, bobs.reserved) == (4, 2, 1)
    assert (bobs.pending_workloads, bobs.admitted_workloads) == (1, 1)


def test_usage_of_an_idle_cluster() -> None:
    usage = cluster_queue_usage(quota_set(), [], [], T0)
    assert all(
        r.used == r.borrowed == r.reserved == r.pending_workloads == 0 for r in usage["default"]
    )


def test_usage_counts_each_pod_set_on_its_own_flavor() -> None:
    """A running workload of two pod sets, one borrowing on-demand and one using all of spot
    (Kueue's "no overadmission while borrowing"), is charged to each flavor for its own pods."""
    scenario = next(s for s in KUEUE_CASES if s.name == "no overadmission while borrowing")
    running = [j for j in scenario.jobs() if j.status is JobStatus.RUNNING]
    assert running[0].resources.pod_gpus == (51, 100)
    usage = cluster_queue_usage(scenario.quota_set(), running, [], T0)
    gamma = usage["eng-gamma"]
    assert row(gamma, "on-demand", NVIDIA_GPU).used == 51
    assert row(gamma, "spot", NVIDIA_GPU).used == 100


def test_pod_gpus_put_the_first_pod_set_that_asks_gpus_first() -> None:
    launcher_first = Resources(
        A100, 0, pod_count=1, pod_sets=(PodSet("workers", 2, 8), PodSet("sidecar", 1, 0))
    )
    assert launcher_first.pod_gpus == (8, 8, 0, 0)
    assert launcher_first.total_gpus == 16 and launcher_first.widest_pod == 8
