"""Kueue's objects, priority classes, reservations and the jobs' new fields on PostgreSQL and
SQLite.

Covers: flavors, ClusterQueues (resource groups with limits, preemption, Kueue's settings),
LocalQueues and cohorts (a tree: parent, own quotas, weight) survive the round trip and come back
per cluster in `quota_set`, with each cluster's fair-sharing setting (upserted; Kueue's default
for a cluster that never set it); update and delete; a taken name
is a Conflict, except for `add_local_queue(if_absent=True)`, which keeps the first; quota sets of
any number of clusters are six statements; the priority classes the migration seeds, and
updating one (concurrent updates on PostgreSQL cannot break their order); reservations (active ones for admission, every unended one for listings,
cancelling); a job's queue, window, dependencies, reservation and stored estimates, and node
labels, round trip; nothing is written on rollback.
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, time, timedelta
from typing import Any

import pytest
from sqlalchemy import event

from adapters.db.engine import Database
from domain.errors import Conflict
from domain.model.ids import ClusterId, JobId, TenantId
from domain.model.job import Estimate, JobPriority, TimeWindow
from domain.model.quota import (
    DEFAULT_PRIORITY_VALUES,
    GPU_LABEL,
    BorrowWithinCohort,
    BorrowWithinCohortPolicy,
    ClusterQueue,
    Cohort,
    FlavorFungibility,
    FlavorQuotas,
    FungibilityPolicy,
    FungibilityPreference,
    LocalQueue,
    PreemptionPolicy,
    QueueingStrategy,
    QuotaSettings,
    ReclaimWithinCohort,
    ResourceFlavor,
    ResourceGroup,
    ResourceQuota,
    WithinClusterQueue,
    tenant_namespace,
)
from domain.model.reservation import CapacityReservation, ReservationId
from tests.integration.test_repositories import SYSTEM, add_cluster, job_on, save
from tests.support.fakes import T0

TENANT = TenantId(uuid.uuid4())


def flavor(cluster: ClusterId, name: str = "a100") -> ResourceFlavor:
    return ResourceFlavor(cluster, name, {GPU_LABEL: "nvidia-a100-80gb"}, T0, T0)


def queue(cluster: ClusterId, name: str = "research", cohort: str | None = "lab") -> ClusterQueue:
    return ClusterQueue(
        cluster_id=cluster,
        name=name,
        created_at=T0,
        updated_at=T0,
        cohort=cohort,
        queueing_strategy=QueueingStrategy.STRICT_FIFO,
        resource_groups=(
            ResourceGroup(
                ("nvidia.com/gpu",),
                (FlavorQuotas("a100", (ResourceQuota("nvidia.com/gpu", 8, 4, 2.5),)),),
            ),
            ResourceGroup(
                ("cpu", "memory"),
                (FlavorQuotas("cpu", (ResourceQuota("cpu", 64), ResourceQuota("memory", 512))),),
            ),
        ),
        preemption=PreemptionPolicy(WithinClusterQueue.NEVER, ReclaimWithinCohort.ANY),
    )


def local(cluster: ClusterId, name: str = "team", tenant: TenantId = TENANT) -> LocalQueue:
    return LocalQueue(cluster, name, tenant_namespace(tenant), tenant, "research", T0)


def reservation(cluster: ClusterId, **changes: Any) -> CapacityReservation:
    base = CapacityReservation(
        id=ReservationId(uuid.uuid4()),
        cluster_id=cluster,
        tenant_id=TENANT,
        name="launch",
        cluster_queue="research",
        flavor="a100",
        gpu_count=4,
        start=T0 + timedelta(hours=1),
        end=T0 + timedelta(hours=3),
        created_at=T0,
    )
    for key, value in changes.items():
        setattr(base, key, value)
    return base


async def add_objects(db: Database, cluster: ClusterId) -> None:
    async with db.unit_of_work(SYSTEM) as uow:
        await uow.quotas.add_cohort(Cohort(cluster, "lab", T0, "the lab's queues"))
        await uow.quotas.add_flavor(flavor(cluster))
        await uow.quotas.add_flavor(ResourceFlavor(cluster, "cpu", {}, T0, T0))
        await uow.quotas.add_cluster_queue(queue(cluster))
        await uow.quotas.add_local_queue(local(cluster))
        await uow.commit()


async def test_quota_objects_round_trip_per_cluster(db: Database) -> None:
    one, two = await add_cluster(db, "one"), await add_cluster(db, "two")
    await add_objects(db, one)
    async with db.unit_of_work(SYSTEM) as uow:
        mine = await uow.quotas.quota_set(one)
        other = await uow.quotas.quota_set(two)
        assert await uow.quotas.get_cluster_queue(cluster_id=one, name="research") == queue(one)
        assert await uow.quotas.get_flavor(cluster_id=one, name="a100") == flavor(one)
        assert await uow.quotas.get_cohort(cluster_id=one, name="lab") == Cohort(
            one, "lab", T0, "the lab's queues"
        )
        assert await uow.quotas.get_local_queue(
            cluster_id=one, namespace=tenant_namespace(TENANT), name="team"
        ) == local(one)
    assert [f.name for f in mine.flavors] == ["a100", "cpu"]
    assert mine.cluster_queues == (queue(one),)
    assert mine.local_queues == (local(one),)
    assert [c.name for c in mine.cohorts] == ["lab"]
    assert mine.local_queue(tenant_namespace(TENANT), "team") == local(one)
    assert (other.flavors, other.cluster_queues, other.local_queues, other.cohorts) == (
        (),
        (),
        (),
        (),
    )


async def test_update_and_delete(db: Database) -> None:
    cluster = await add_cluster(db)
    await add_objects(db, cluster)
    later = T0 + timedelta(minutes=5)
    changed = queue(cluster, cohort=None)
    changed.updated_at = later
    changed.queueing_strategy = QueueingStrategy.BEST_EFFORT_FIFO
    relabelled = ResourceFlavor(cluster, "a100", {"pool": "a"}, T0, later)
    async with db.unit_of_work(SYSTEM) as uow:
        await uow.quotas.update_cluster_queue(changed)
        await uow.quotas.update_flavor(relabelled)
        await uow.quotas.delete_local_queue(
            cluster_id=cluster, namespace=tenant_namespace(TENANT), name="team"
        )
        await uow.quotas.delete_cohort(cluster_id=cluster, name="lab")
        await uow.commit()
    async with db.unit_of_work(SYSTEM) as uow:
        quotas = await uow.quotas.quota_set(cluster)
        assert quotas.cluster_queues == (changed,)
        assert quotas.flavors[0] == relabelled
        assert quotas.local_queues == () and quotas.cohorts == ()
        await uow.quotas.delete_cluster_queue(cluster_id=cluster, name="research")
        await uow.quotas.delete_flavor(cluster_id=cluster, name="a100")
        await uow.commit()
    async with db.unit_of_work(SYSTEM) as uow:
        quotas = await uow.quotas.quota_set(cluster)
    assert quotas.cluster_queues == () and [f.name for f in quotas.flavors] == ["cpu"]


async def test_kueue_settings_round_trip(db: Database) -> None:
    cluster, other = await add_cluster(db, "one"), await add_cluster(db, "two")
    await add_objects(db, cluster)
    tuned = queue(cluster)
    tuned.preemption = PreemptionPolicy(
        WithinClusterQueue.NEVER,
        ReclaimWithinCohort.ANY,
        BorrowWithinCohort(BorrowWithinCohortPolicy.LOWER_PRIORITY, -5),
    )
    tuned.flavor_fungibility = FlavorFungibility(
        FungibilityPolicy.TRY_NEXT_FLAVOR,
        FungibilityPolicy.TRY_NEXT_FLAVOR,
        FungibilityPreference.PREEMPTION_OVER_BORROWING,
    )
    tuned.fair_sharing_weight = 0.25
    pool = (ResourceGroup(("cpu",), (FlavorQuotas("cpu", (ResourceQuota("cpu", 8, 2, 16),)),)),)
    child = Cohort(cluster, "team", T0, "a pool", "lab", pool, 2.5)
    async with db.unit_of_work(SYSTEM) as uow:
        await uow.quotas.update_cluster_queue(tuned)
        await uow.quotas.add_cohort(child)
        await uow.quotas.save_quota_settings(QuotaSettings(cluster, fair_sharing=True))
        await uow.commit()
    async with db.unit_of_work(SYSTEM) as uow:
        quotas = await uow.quotas.quota_set(cluster)
        assert quotas.cluster_queues == (tuned,)
        assert quotas.cohort("team") == child
        assert quotas.cohort("lab") == Cohort(cluster, "lab", T0, "the lab's queues")
        assert quotas.fair_sharing and not (await uow.quotas.quota_set(other)).fair_sharing
        moved = Cohort(cluster, "team", T0, None, "everyone", (), 0.0)
        await uow.quotas.update_cohort(moved)
        await uow.quotas.save_quota_settings(QuotaSettings(cluster, fair_sharing=False))
        await uow.commit()
    async with db.unit_of_work(SYSTEM) as uow:
        quotas = await uow.quotas.quota_set(cluster)
        settings = await uow.quotas.quota_settings_of([cluster, other])
    assert quotas.cohort("team") == moved and quotas.cohort("everyone") is None
    assert settings == {cluster: QuotaSettings(cluster), other: QuotaSettings(other)}


@pytest.mark.parametrize("kind", ["flavor", "cluster_queue", "local_queue", "cohort"])
async def test_a_taken_name_is_a_conflict(db: Database, kind: str) -> None:
    cluster = await add_cluster(db)
    await add_objects(db, cluster)
    again = {
        "flavor": flavor(cluster),
        "cluster_queue": queue(cluster),
        "local_queue": local(cluster),
        "cohort": Cohort(cluster, "lab", T0),
    }[kind]
    with pytest.raises(Conflict) as caught:
        async with db.unit_of_work(SYSTEM) as uow:
            await getattr(uow.quotas, f"add_{kind}")(again)
    assert caught.value.code == "ALREADY_EXISTS"


async def test_add_local_queue_if_absent_keeps_the_first(db: Database) -> None:
    cluster = await add_cluster(db)
    await add_objects(db, cluster)
    second = local(cluster)
    second.cluster_queue = "elsewhere"
    async with db.unit_of_work(SYSTEM) as uow:
        await uow.quotas.add_local_queue(second, if_absent=True)
        await uow.quotas.add_local_queue(local(cluster, "new"), if_absent=True)
        await uow.commit()
    async with db.unit_of_work(SYSTEM) as uow:
        quotas = await uow.quotas.quota_set(cluster)
    assert [(q.name, q.cluster_queue) for q in quotas.local_queues] == [
        ("new", "research"),
        ("team", "research"),
    ]


async def test_quota_sets_of_many_clusters_take_six_statements(db: Database) -> None:
    clusters = [await add_cluster(db, f"c{i}") for i in range(4)]
    for cluster in clusters:
        await add_objects(db, cluster)
    statements: list[str] = []

    def count(conn: object, cursor: object, statement: str, *args: object) -> None:
        if not statement.lstrip().upper().startswith("PRAGMA"):
            statements.append(statement)

    async with db.unit_of_work(SYSTEM) as uow:
        event.listen(db.engine.sync_engine, "before_cursor_execute", count)
        try:
            sets = await uow.quotas.quota_sets(clusters)
        finally:
            event.remove(db.engine.sync_engine, "before_cursor_execute", count)
    assert len(statements) == 6  # flavors, queues, local queues, cohorts, settings, priorities
    assert all(len(s.cluster_queues) == 1 and len(s.flavors) == 2 for s in sets.values())


async def test_priority_classes_are_seeded_and_updatable(db: Database) -> None:
    cluster = await add_cluster(db)
    async with db.unit_of_work(SYSTEM) as uow:
        classes = await uow.quotas.priority_classes()
        assert [(pc.priority, pc.value) for pc in classes] == list(DEFAULT_PRIORITY_VALUES.items())
        assert all(pc.description and pc.updated_at.tzinfo for pc in classes)
        high = classes[1]
        high.value, high.description, high.updated_at = 500, "launch week", T0
        await uow.quotas.update_priority_class(high)
        await uow.commit()
    async with db.unit_of_work(SYSTEM) as uow:
        assert (await uow.quotas.priority_classes())[1] == high
        quotas = await uow.quotas.quota_set(cluster)
    assert quotas.priority_value(JobPriority.HIGH) == 500
    assert quotas.priority_value(JobPriority.NORMAL) == 10


async def test_reservations(db: Database) -> None:
    cluster = await add_cluster(db)
    live = reservation(cluster)
    ended = reservation(
        cluster, name="old", end=T0 - timedelta(minutes=1), start=T0 - timedelta(hours=1)
    )
    cancelled = reservation(cluster, name="dropped")
    async with db.unit_of_work(SYSTEM) as uow:
        for r in (live, ended, cancelled):
            await uow.reservations.add(r)
        await uow.reservations.cancel(reservation_id=cancelled.id, at=T0)
        await uow.commit()
    async with db.unit_of_work(SYSTEM) as uow:
        assert await uow.reservations.get(live.id) == live
        stored = await uow.reservations.get(cancelled.id)
        assert stored is not None and stored.cancelled_at == T0
        active = await uow.reservations.active(cluster, active_after=T0)
        listed = await uow.reservations.of_clusters([cluster], ending_after=T0)
        assert await uow.reservations.get(ReservationId(uuid.uuid4())) is None
    assert [r.name for r in active] == ["launch"]
    assert sorted(r.name for r in listed) == ["dropped", "launch"]


async def test_jobs_keep_queue_window_dependencies_reservation_and_estimates(
    db: Database,
) -> None:
    cluster = await add_cluster(db)
    booked = reservation(cluster)
    async with db.unit_of_work(SYSTEM) as uow:
        await uow.reservations.add(booked)
        await uow.commit()
    estimate = Estimate(T0, T0 + timedelta(hours=1), "WAITING_FOR_QUOTA", ("MISSES_DEADLINE",))
    job = job_on(
        cluster,
        queue_name="team",
        window=TimeWindow(time(22, 0), time(6, 30)),
        depends_on=(JobId(uuid.uuid4()), JobId(uuid.uuid4())),
        reservation_id=booked.id,
        estimate_reason="WAITING_FOR_QUOTA",
        estimate_warnings=("MISSES_DEADLINE",),
        submission_estimate=estimate,
        admission_estimate=Estimate(None, None, "UNKNOWN"),
    )
    await save(db, job)
    async with db.unit_of_work(SYSTEM) as uow:
        loaded = await uow.jobs.get(job.id)
        assert loaded is not None
        assert (await uow.jobs.get_many([job.id, JobId(uuid.uuid4())])).keys() == {job.id}
    for name in (
        "queue_name",
        "window",
        "depends_on",
        "reservation_id",
        "estimate_reason",
        "estimate_warnings",
        "submission_estimate",
        "admission_estimate",
    ):
        assert getattr(loaded, name) == getattr(job, name), name
    assert loaded.submission_estimate and loaded.submission_estimate.start == T0
    assert loaded.submission_estimate.start.tzinfo is not None


async def test_node_labels_round_trip(db: Database) -> None:
    cluster = await add_cluster(db)
    async with db.unit_of_work(SYSTEM) as uow:
        loaded = await uow.clusters.get(cluster)
    assert loaded is not None
    assert loaded.nodes[0].labels == {
        GPU_LABEL: "nvidia-a100-80gb",
        "kubernetes.io/hostname": "node-0",
    }


async def test_nothing_is_written_on_rollback(db: Database) -> None:
    cluster = await add_cluster(db)
    async with db.unit_of_work(SYSTEM) as uow:
        await uow.quotas.add_flavor(flavor(cluster))
        await uow.reservations.add(reservation(cluster))
    async with db.unit_of_work(SYSTEM) as uow:
        assert (await uow.quotas.quota_set(cluster)).flavors == ()
        now = datetime.now(UTC) - timedelta(days=3650)
        assert await uow.reservations.active(cluster, active_after=now) == []


async def test_priority_classes_read_for_update_wait_for_the_writer(pg: Database) -> None:
    """Two updates of different classes cannot both pass the order check on stale values."""
    first, second = pg.unit_of_work(SYSTEM), pg.unit_of_work(SYSTEM)
    async with first, second:
        classes = await first.quotas.priority_classes(for_update=True)
        normal = classes[2]
        normal.value = 50
        waiting = asyncio.create_task(second.quotas.priority_classes(for_update=True))
        await asyncio.sleep(0.3)
        assert not waiting.done()  # held until the first commits
        await first.quotas.update_priority_class(normal)
        await first.commit()
        seen = await asyncio.wait_for(waiting, 5)
    assert seen[2].value == 50
