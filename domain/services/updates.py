"""The job update stream behind the `jobUpdates` subscription: a stamped snapshot, then changes.

The contract (ARCHITECTURE.md, events): a subscriber first gets a snapshot of the jobs it may see
on the cluster (`Principal.may_see`: its tenant's in its projects; every tenant's, for the
operator), stamped with the cluster's event sequence it reflects, then every later change in
sequence order. Resuming with `since: N` replays exactly the events after N from the retained
history, or sends a fresh snapshot when N is older than that history. The live subscription is
opened before the snapshot is read, so nothing committed in between is lost; events at or below
the snapshot's sequence are skipped, so nothing is delivered twice. A subscriber whose bounded
buffer overflowed is resynchronised with a new snapshot rather than held in memory.

A change is sent when the job matches the filter now (`matches_filter`) or matched it before the
change, so a client holding a filtered view learns when a job leaves it.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field

from domain.errors import NotFound
from domain.model.ids import ClusterId
from domain.model.job import Job, JobChanged
from domain.model.principal import Principal
from domain.ports.events import StoredEvent
from domain.ports.repositories import JobFilter
from domain.ports.unit_of_work import TenantScope, UnitOfWorkFactory
from domain.services.jobs import scoped_filter
from domain.services.replay import ClusterStreams, events_after


@dataclass(frozen=True)
class Snapshot:
    sequence: int
    jobs: list[Job]
    truncated: bool
    reason: str
    """Why a snapshot: `subscribed`, `history-gone` (since too old) or `resync` (fell behind)."""


@dataclass(frozen=True)
class Change:
    sequence: int
    change: JobChanged
    matches_filter: bool


JobUpdate = Snapshot | Change


def _matched_before(job_filter: JobFilter, change: JobChanged) -> bool:
    before = change.previous_view()
    if before is None:
        return False
    status, priority = before
    return (
        (not job_filter.statuses or status in job_filter.statuses)
        and (not job_filter.priorities or priority in job_filter.priorities)
        and (not job_filter.job_types or change.job.job_type in job_filter.job_types)
        and (not job_filter.project_ids or change.job.project_id in job_filter.project_ids)
    )


SHARED_SNAPSHOTS = 8
"""Snapshots kept for sharing, by (cluster, caller's view, filter): subscribers that connect
together (a page reload across a team) read the database once, and share one object."""
SHARED_GAP = 500
"""A snapshot still being read serves the subscribers that arrive meanwhile if at most this many
events followed it (they are sent after it, from the retained history); one already read serves
new subscribers only while nothing has happened since (a new subscriber sees the present)."""


@dataclass(frozen=True)
class _Read:
    sequence: int
    jobs: list[Job]
    truncated: bool


_ViewKey = tuple[ClusterId, object, object, object, JobFilter]


@dataclass(kw_only=True, eq=False)
class UpdatesService(ClusterStreams):
    uow: UnitOfWorkFactory
    snapshot_limit: int = 1000
    reads: int = field(default=0, init=False)
    """Snapshots read from the database (for tests and operators)."""
    _reads: OrderedDict[_ViewKey, asyncio.Future[_Read]] = field(
        default_factory=OrderedDict, init=False, repr=False
    )

    async def job_updates(
        self,
        principal: Principal,
        cluster_id: ClusterId,
        job_filter: JobFilter,
        since: int | None = None,
    ) -> AsyncGenerator[JobUpdate, None]:
        """Raises NotFound (before anything is sent) for an unknown cluster."""
        async with self.uow(TenantScope.system()) as uow:
            if await uow.clusters.get(cluster_id) is None:
                raise NotFound("cluster", cluster_id)
        return self._stream(principal, cluster_id, job_filter, since)

    async def _stream(
        self,
        principal: Principal,
        cluster_id: ClusterId,
        job_filter: JobFilter,
        since: int | None,
    ) -> AsyncGenerator[JobUpdate, None]:
        narrowed = scoped_filter(principal, job_filter)
        updates = await self._snapshot_then_changes(
            cluster_id,
            since,
            snapshot=lambda reason: self._snapshot(principal, cluster_id, narrowed, reason),
            change=lambda event: self._visible(principal, narrowed, event),
            opening=lambda reason: self._shared_snapshot(principal, cluster_id, narrowed, reason),
        )
        try:
            async for update in updates:
                yield update
        finally:
            await updates.aclose()

    async def _shared_snapshot(
        self,
        principal: Principal,
        cluster_id: ClusterId,
        job_filter: JobFilter | None,
        reason: str,
    ) -> tuple[Snapshot, list[StoredEvent]]:
        """A snapshot for a new subscriber, and the events that followed it: one being read
        for another subscriber with the same view (if few events followed it), or one read
        before that is still current, else a fresh one. The live subscription is open already,
        so the events from the snapshot's sequence on are either in the history read here or
        still to come live."""
        if job_filter is None:
            return await self._snapshot(principal, cluster_id, job_filter, reason), []
        key: _ViewKey = (
            cluster_id,
            principal.tenant_id,
            principal.project_ids,
            principal.scopes,  # what the caller may see of each job follows from its scopes
            job_filter,
        )
        pending = self._reads.get(key)
        if pending is not None:
            in_flight = not pending.done()
            self._reads.move_to_end(key)
            try:
                read: _Read | None = await asyncio.shield(pending)
            except asyncio.CancelledError:
                if not pending.cancelled():
                    raise  # this subscriber is going away
                read = None  # the other subscriber went away first: read again below
            except Exception:
                read = None  # the other subscriber's read failed: read again below
            if read is not None:
                gap = SHARED_GAP if in_flight else 0
                after = await events_after(self.log, cluster_id, read.sequence, limit=gap)
                if after is not None:
                    return Snapshot(read.sequence, read.jobs, read.truncated, reason), after
        snapshot = await self._snapshot(principal, cluster_id, job_filter, reason, share=key)
        return snapshot, []

    async def _snapshot(
        self,
        principal: Principal,
        cluster_id: ClusterId,
        job_filter: JobFilter | None,
        reason: str,
        *,
        share: _ViewKey | None = None,
    ) -> Snapshot:
        if job_filter is None:
            async with self.uow(TenantScope(principal.tenant_id), consistent_read=True) as uow:
                return Snapshot(await uow.current_sequence(cluster_id), [], False, reason)
        future: asyncio.Future[_Read] = asyncio.get_running_loop().create_future()
        if share is not None:
            self._reads[share] = future
            self._reads.move_to_end(share)
            while len(self._reads) > SHARED_SNAPSHOTS:
                self._reads.popitem(last=False)
        try:
            read = await self._read(principal, cluster_id, job_filter)
        except BaseException as exc:
            if share is not None and self._reads.get(share) is future:
                del self._reads[share]
            if isinstance(exc, Exception):
                future.set_exception(exc)
                future.exception()  # retrieved: no "never retrieved" warning if nobody waits
            else:
                future.cancel()
            raise
        future.set_result(read)
        return Snapshot(read.sequence, read.jobs, read.truncated, reason)

    async def _read(
        self, principal: Principal, cluster_id: ClusterId, job_filter: JobFilter
    ) -> _Read:
        self.reads += 1
        scope = TenantScope.of(principal)
        async with self.uow(scope, consistent_read=True) as uow:
            sequence = await uow.current_sequence(cluster_id)
            jobs = await uow.jobs.list_for_cluster(
                cluster_id, job_filter, limit=self.snapshot_limit + 1
            )
        truncated = len(jobs) > self.snapshot_limit
        return _Read(sequence, jobs[: self.snapshot_limit], truncated)

    @staticmethod
    def _visible(
        principal: Principal, job_filter: JobFilter | None, event: StoredEvent
    ) -> Change | None:
        change = event.job_change
        if (
            job_filter is None
            or change is None
            or not principal.may_see(change.job.tenant_id, change.job.project_id)
        ):
            return None
        here = change.job.cluster_id == event.cluster_id  # else it moved to another member
        matches = here and job_filter.matches(change.job)
        if matches or _matched_before(job_filter, change):
            return Change(event.sequence, change, matches)
        return None
