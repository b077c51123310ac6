"""The job update stream behind the `jobUpdates` subscription: a stamped snapshot, then changes.

The contract (ARCHITECTURE.md, events): a subscriber first gets a snapshot of the jobs it may see
on the cluster, stamped with the cluster's event sequence it reflects, then every later change in
sequence order. Resuming with `since: N` replays exactly the events after N from the retained
history, or sends a fresh snapshot when N is older than that history. The live subscription is
opened before the snapshot is read, so nothing committed in between is lost; events at or below
the snapshot's sequence are skipped, so nothing is delivered twice. A subscriber whose bounded
buffer overflowed is resynchronised with a new snapshot rather than held in memory.

A change is sent when the job matches the filter now (`matches_filter`) or matched it before the
change, so a client holding a filtered view learns when a job leaves it.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from dataclasses import dataclass

from domain.errors import NotFound
from domain.model.ids import ClusterId
from domain.model.job import Job, JobChanged
from domain.model.principal import Principal
from domain.ports import (
    EventHub,
    EventLog,
    JobFilter,
    Overflowed,
    StoredEvent,
    TenantScope,
    UnitOfWorkFactory,
)
from domain.services.jobs import scoped_filter
from domain.services.replay import events_after


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


class UpdatesService:
    def __init__(
        self,
        *,
        uow: UnitOfWorkFactory,
        hub: EventHub,
        log: EventLog,
        buffer: int = 256,
        snapshot_limit: int = 1000,
        replay_limit: int = 10_000,
    ) -> None:
        self._uow = uow
        self._hub = hub
        self._log = log
        self._buffer = buffer
        self._snapshot_limit = snapshot_limit
        self._replay_limit = replay_limit

    async def job_updates(
        self,
        principal: Principal,
        cluster_id: ClusterId,
        job_filter: JobFilter,
        since: int | None = None,
    ) -> AsyncGenerator[JobUpdate, None]:
        """Raises NotFound (before anything is sent) for an unknown cluster."""
        async with self._uow(TenantScope.system()) as uow:
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
        live = await self._hub.subscribe(cluster_id, buffer=self._buffer)
        try:
            replay = (
                None
                if since is None
                else await events_after(self._log, cluster_id, since, limit=self._replay_limit)
            )
            if replay is None:
                reason = (
                    "subscribed" if since is None else await self._why_no_replay(cluster_id, since)
                )
                snapshot = await self._snapshot(principal, cluster_id, narrowed, reason)
                last = snapshot.sequence
                yield snapshot
            else:
                assert since is not None
                last = since
                for event in replay:
                    last = event.sequence
                    change = self._visible(principal, narrowed, event)
                    if change is not None:
                        yield change
            async for item in live:
                if isinstance(item, Overflowed):
                    snapshot = await self._snapshot(principal, cluster_id, narrowed, "resync")
                    last = snapshot.sequence
                    yield snapshot
                    continue
                if item.sequence <= last:
                    continue
                last = item.sequence
                change = self._visible(principal, narrowed, item)
                if change is not None:
                    yield change
        finally:
            await live.close()

    async def _why_no_replay(self, cluster_id: ClusterId, since: int) -> str:
        if since > await self._log.current_sequence(cluster_id):
            return "unknown-since"
        return "history-gone"

    async def _snapshot(
        self,
        principal: Principal,
        cluster_id: ClusterId,
        job_filter: JobFilter | None,
        reason: str,
    ) -> Snapshot:
        scope = TenantScope(principal.tenant_id)
        async with self._uow(scope, consistent_read=True) as uow:
            sequence = await uow.current_sequence(cluster_id)
            if job_filter is None:
                return Snapshot(sequence, [], False, reason)
            jobs = await uow.jobs.list_for_cluster(
                cluster_id, job_filter, limit=self._snapshot_limit + 1
            )
        truncated = len(jobs) > self._snapshot_limit
        return Snapshot(sequence, jobs[: self._snapshot_limit], truncated, reason)

    @staticmethod
    def _visible(
        principal: Principal, job_filter: JobFilter | None, event: StoredEvent
    ) -> Change | None:
        change = event.job_change
        if job_filter is None or change is None or change.job.tenant_id != principal.tenant_id:
            return None
        matches = job_filter.matches(change.job)
        if matches or _matched_before(job_filter, change):
            return Change(event.sequence, change, matches)
        return None
