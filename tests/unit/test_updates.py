"""The job update stream's contract, with a fake hub and event log.

Covers: a snapshot stamped with the sequence it reflects, then changes in order; nothing committed
between subscribing and the snapshot is lost or repeated; `since` replays exactly the missed events,
or sends a snapshot when that history is gone or `since` is ahead; a subscriber that overflows its
buffer is sent what it missed from the history (a snapshot only when that is gone); subscribers
with one view (tenant, projects, scopes, filter) that connect together share one snapshot read, a
later one shares it only while nothing happened since, different views never share; other tenants'
jobs never appear; a job leaving the filter is announced once with matches_filter false; an
unknown cluster is NotFound.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncGenerator
from dataclasses import replace
from typing import Any

import pytest

from domain.errors import NotFound
from domain.model.ids import ClusterId, JobId
from domain.model.job import Job, JobStatus
from domain.model.principal import Principal, Scope
from domain.ports.repositories import JobFilter
from domain.ports.unit_of_work import TenantScope
from domain.services.updates import Change, JobUpdate, Snapshot, UpdatesService
from tests.support.fakes import FakeEventLog, FakeHub, FakeUnitOfWork
from tests.unit.test_job_service import HubPublisher, World
from tests.unit.test_submission import GOOD


class UpdatesWorld(World):
    """The job service's world; what it publishes goes to the hub, as in one process."""

    def __init__(self) -> None:
        self.hub = FakeHub()
        super().__init__(HubPublisher(self.hub))


class Stream:
    def __init__(self, world: World, hub: FakeHub, buffer: int = 100) -> None:
        self.world = world
        self.hub = hub
        self.service = UpdatesService(
            uow=world.uow,
            hub=hub,
            log=FakeEventLog(world.uow.store),
            buffer=buffer,
            snapshot_limit=50,
        )

    async def open(
        self, principal: Principal, job_filter: JobFilter = JobFilter(), since: int | None = None
    ) -> AsyncGenerator[JobUpdate, None]:
        return await self.service.job_updates(principal, self.world.cluster.id, job_filter, since)


@pytest.fixture
def world() -> UpdatesWorld:
    return UpdatesWorld()


async def take(stream: AsyncGenerator[JobUpdate, None], n: int) -> list[JobUpdate]:
    return [await asyncio.wait_for(anext(stream), 1) for _ in range(n)]


def changed(update: JobUpdate) -> Change:
    """The update, which must be a Change."""
    assert isinstance(update, Change)
    return update


def snapshotted(update: JobUpdate) -> Snapshot:
    """The update, which must be a Snapshot."""
    assert isinstance(update, Snapshot)
    return update


async def test_snapshot_then_changes_in_order(world: UpdatesWorld) -> None:
    first = await world.service.submit(world.alice, GOOD)
    stream = await Stream(world, world.hub).open(world.alice)
    [snapshot] = await take(stream, 1)
    assert isinstance(snapshot, Snapshot)
    assert (snapshot.sequence, [j.id for j in snapshot.jobs]) == (1, [first.id])
    second = await world.service.submit(world.alice, replace(GOOD, name="second"))
    await world.service.cancel(world.alice, first.id, None)
    changes = await take(stream, 2)
    assert [
        (c.sequence, changed(c).change.job.id, changed(c).change.job.status) for c in changes
    ] == [
        (2, second.id, JobStatus.PENDING),
        (3, first.id, JobStatus.CANCELLED),
    ]
    await stream.aclose()
    assert world.hub.subscriptions == []


async def test_commits_between_subscribing_and_the_snapshot_are_neither_lost_nor_repeated(
    world: UpdatesWorld,
) -> None:
    hub = world.hub
    stream_maker = Stream(world, hub)
    real_factory = world.uow
    racing: dict[str, asyncio.Future[Job]] = {}

    class RacingFactory:
        """Commits a submission just as the snapshot's transaction opens."""

        def __call__(self, scope: TenantScope, *, consistent_read: bool = False) -> FakeUnitOfWork:
            if consistent_read and not racing:
                racing["job"] = asyncio.ensure_future(
                    world.service.submit(world.alice, replace(GOOD, name="racer"))
                )
            return real_factory(scope, consistent_read=consistent_read)

    stream_maker.service.uow = RacingFactory()
    stream = await stream_maker.open(world.alice)
    first = await take(stream, 1)
    racer = await racing["job"]
    await world.service.cancel(world.alice, racer.id, None)
    updates = first + await take(stream, 1 if racer.id in _ids(first[0]) else 2)
    snapshot = updates[0]
    assert isinstance(snapshot, Snapshot)
    changes = updates[1:]
    assert all(isinstance(c, Change) and c.sequence > snapshot.sequence for c in changes)
    statuses = [j.status for j in snapshot.jobs] + [changed(c).change.job.status for c in changes]
    assert statuses == [JobStatus.PENDING, JobStatus.CANCELLED]
    assert [c.sequence for c in changes] == sorted({c.sequence for c in changes})


def _ids(update: JobUpdate) -> set[JobId]:
    return {j.id for j in update.jobs} if isinstance(update, Snapshot) else set()


async def test_since_replays_exactly_what_was_missed(world: UpdatesWorld) -> None:
    job = await world.service.submit(world.alice, GOOD)
    await world.service.change_priority(world.alice, job.id, type(job.priority).HIGH)
    await world.service.cancel(world.alice, job.id, None)
    stream = await Stream(world, world.hub).open(world.alice, since=1)
    replayed = await take(stream, 2)
    assert [u.sequence for u in replayed] == [2, 3]
    assert all(isinstance(u, Change) for u in replayed)
    later = await world.service.submit(world.alice, replace(GOOD, name="later"))
    [live] = await take(stream, 1)
    assert (live.sequence, changed(live).change.job.id) == (4, later.id)


@pytest.mark.parametrize("since", [0, 3])
async def test_since_within_history_is_not_a_snapshot(world: UpdatesWorld, since: int) -> None:
    job = await world.service.submit(world.alice, GOOD)
    await world.service.cancel(world.alice, job.id, None)
    stream = await Stream(world, world.hub).open(world.alice, since=2)
    await world.service.submit(world.alice, replace(GOOD, name="next"))
    [update] = await take(stream, 1)
    assert isinstance(update, Change) and update.sequence == 3


async def test_since_older_than_history_gets_a_snapshot(world: UpdatesWorld) -> None:
    for i in range(3):
        await world.service.submit(world.alice, replace(GOOD, name=f"job-{i}"))
    world.uow.store.retained_after[world.cluster.id] = 2
    stream = await Stream(world, world.hub).open(world.alice, since=1)
    [update] = await take(stream, 1)
    assert isinstance(update, Snapshot)
    assert (update.sequence, update.reason, len(update.jobs)) == (3, "history-gone", 3)


async def test_since_ahead_of_the_cluster_gets_a_snapshot(world: UpdatesWorld) -> None:
    await world.service.submit(world.alice, GOOD)
    stream = await Stream(world, world.hub).open(world.alice, since=99)
    [update] = await take(stream, 1)
    assert isinstance(update, Snapshot)
    assert (update.sequence, update.reason) == (1, "unknown-since")


async def test_overflow_is_caught_up_from_history_not_a_snapshot(world: UpdatesWorld) -> None:
    stream = await Stream(world, world.hub, buffer=3).open(world.alice)
    [initial] = await take(stream, 1)
    for i in range(5):  # the consumer reads nothing meanwhile: its buffer overflows
        await world.service.submit(world.alice, replace(GOOD, name=f"burst-{i}"))
    missed = await take(stream, 5)
    assert [(type(u), u.sequence) for u in missed] == [(Change, n) for n in range(1, 6)]
    await world.service.submit(world.alice, replace(GOOD, name="after"))
    [later] = await take(stream, 1)  # and on it goes, nothing twice
    assert isinstance(later, Change) and later.sequence == 6
    assert initial.sequence == 0


async def test_overflow_past_the_history_resynchronises_with_a_snapshot(
    world: UpdatesWorld,
) -> None:
    stream = await Stream(world, world.hub, buffer=3).open(world.alice)
    [initial] = await take(stream, 1)
    for i in range(5):
        await world.service.submit(world.alice, replace(GOOD, name=f"burst-{i}"))
    world.uow.store.retained_after[world.cluster.id] = 4  # what it missed is pruned
    [resync] = await take(stream, 1)
    assert isinstance(resync, Snapshot)
    assert (resync.reason, resync.sequence, len(resync.jobs)) == ("resync", 5, 5)
    assert initial.sequence == 0


async def test_other_tenants_never_appear(world: UpdatesWorld) -> None:
    await world.service.submit(world.bob, GOOD)
    stream = await Stream(world, world.hub).open(world.alice)
    [snapshot] = await take(stream, 1)
    assert snapshotted(snapshot).jobs == []
    await world.service.submit(world.bob, replace(GOOD, name="bobs"))
    mine = await world.service.submit(world.alice, replace(GOOD, name="mine"))
    [change] = await take(stream, 1)
    assert changed(change).change.job.id == mine.id


async def test_leaving_the_filter_is_announced_once(world: UpdatesWorld) -> None:
    job = await world.service.submit(world.alice, GOOD)
    pending_only = JobFilter(statuses=frozenset({JobStatus.PENDING}))
    stream = await Stream(world, world.hub).open(world.alice, pending_only)
    [snapshot] = await take(stream, 1)
    assert [j.id for j in snapshotted(snapshot).jobs] == [job.id]
    await world.service.cancel(world.alice, job.id, None)
    other = await world.service.submit(world.alice, replace(GOOD, name="other"))
    updates = await take(stream, 2)
    assert [(changed(u).change.job.id, changed(u).matches_filter) for u in updates] == [
        (job.id, False),
        (other.id, True),
    ]


async def test_unknown_cluster_is_not_found(world: UpdatesWorld) -> None:
    service = Stream(world, world.hub).service
    with pytest.raises(NotFound):
        await service.job_updates(world.alice, ClusterId(uuid.uuid4()), JobFilter(), None)


async def test_subscribers_with_one_view_share_one_snapshot(
    world: UpdatesWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(3):
        await world.service.submit(world.alice, replace(GOOD, name=f"job-{i}"))
    streams = Stream(world, world.hub)
    gate = asyncio.Event()
    read = streams.service._read

    async def slow_read(*args: Any) -> Any:
        await gate.wait()  # the database takes its time; others connect meanwhile
        return await read(*args)

    monkeypatch.setattr(streams.service, "_read", slow_read)
    first, second = await streams.open(world.alice), await streams.open(world.alice)
    a_task = asyncio.create_task(take(first, 1))
    b_task = asyncio.create_task(take(second, 1))
    for _ in range(5):
        await asyncio.sleep(0)
    later = await world.service.submit(world.alice, replace(GOOD, name="later"))
    gate.set()
    [a], [b] = await a_task, await b_task
    assert isinstance(a, Snapshot) and isinstance(b, Snapshot)
    assert streams.service.reads == 1 and b.jobs is a.jobs  # one read, one object
    assert (b.sequence, len(b.jobs)) == (4, 4)
    await world.service.cancel(world.alice, later.id, None)
    assert [u.sequence for u in await take(first, 1)] == [5]
    assert [u.sequence for u in await take(second, 1)] == [5]  # each once, in order

    # read already: a new subscriber shares it while it is current, not once anything happened
    third = await streams.open(world.alice)
    [c] = await take(third, 1)
    assert isinstance(c, Snapshot) and c.sequence == 5 and streams.service.reads == 2
    [d] = await take(await streams.open(world.alice), 1)
    assert isinstance(d, Snapshot) and d.jobs is c.jobs and streams.service.reads == 2


async def test_different_views_never_share_a_snapshot(world: UpdatesWorld) -> None:
    await world.service.submit(world.alice, GOOD)
    await world.service.submit(world.bob, GOOD)
    streams = Stream(world, world.hub)
    [alices] = await take(await streams.open(world.alice), 1)
    [bobs] = await take(await streams.open(world.bob), 1)
    narrower = replace(world.alice, scopes=frozenset({Scope.JOBS_READ}))
    [scoped] = await take(await streams.open(narrower), 1)
    pending = JobFilter(statuses=frozenset({JobStatus.PENDING}))
    [filtered] = await take(await streams.open(world.alice, pending), 1)
    assert streams.service.reads == 4
    assert isinstance(alices, Snapshot) and isinstance(bobs, Snapshot)
    assert {j.tenant_id for j in alices.jobs} == {world.alice.tenant_id}
    assert {j.tenant_id for j in bobs.jobs} == {world.bob.tenant_id}
    assert isinstance(scoped, Snapshot) and scoped.jobs is not alices.jobs
    assert isinstance(filtered, Snapshot) and filtered.jobs is not alices.jobs
