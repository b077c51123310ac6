"""The live streams of jobs, schedules and clusters (each relayed by resolvers/streams.py)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import AsyncGenerator
from datetime import datetime
from typing import Annotated

import strawberry

from domain.model.job import Job as DomainJob
from domain.model.principal import Principal, Scope
from domain.services.cluster_updates import ClusterUpdate as DomainClusterUpdate
from domain.services.schedule_updates import ScheduleChange, ScheduleSnapshot
from domain.services.timeline import viewer_key
from domain.services.updates import JobUpdate as Update
from domain.services.updates import Snapshot
from resolvers.jobs import to_domain_filter
from resolvers.streams import relay, resumable
from schema.access import requires
from schema.context import Info
from schema.schedule import window
from schema.types.cluster import operator_text
from schema.types.cluster_inputs import ClusterChange, ClusterSnapshot, ClusterUpdate, nodes_of
from schema.types.dispatch import JobMove
from schema.types.inputs import JobFilter
from schema.types.job import BudgetNotice, Job, JobEvent
from schema.types.timeline import (
    QueueEntry,
    Schedule,
    ScheduleDiff,
    ScheduleRow,
    ScheduleUpdate,
    TimelineSegment,
    forecast_of,
    schedule_of,
)
from schema.types.updates import JobChange, JobSnapshot, JobUpdate


@requires(Scope.JOBS_READ)
def job_updates(
    info: Info,
    cluster_id: strawberry.ID,
    filter: JobFilter | None = None,
    since: int | None = None,
) -> AsyncGenerator[JobUpdate, None]:
    principal = info.context.authenticated()
    key = resumable(cluster_id, since)
    return relay(
        info,
        lambda: info.context.services.updates.job_updates(
            principal, key, to_domain_filter(filter), since
        ),
        _message,
        heavy=True,
        fresh_loaders=True,
    )


_snapshots: OrderedDict[tuple[int, str], tuple[list[DomainJob], JobSnapshot]] = OrderedDict()
SNAPSHOTS_KEPT = 8


def _message(update: Update) -> JobUpdate:
    if isinstance(update, Snapshot):
        return _snapshot(update)
    change = update.change
    return JobChange(
        sequence=update.sequence,
        kind=change.kind,
        job=Job.from_domain(change.job),
        transition=JobEvent.from_domain(change.transition) if change.transition else None,
        budget=BudgetNotice.from_domain(change.budget) if change.budget else None,
        move=JobMove.from_domain(move) if (move := change.moved) is not None else None,
        matches_filter=update.matches_filter,
    )


def _snapshot(update: Snapshot) -> JobSnapshot:
    """One GraphQL object per shared snapshot: the service hands subscribers with the same view
    (tenant, projects, scopes, filter) the same list of jobs, so the snapshot is executed and
    serialised once for all of them (a snapshot of 1,000 jobs is megabytes)."""
    key = (id(update.jobs), update.reason)
    found = _snapshots.get(key)
    if found is not None and found[0] is update.jobs and found[1].sequence == update.sequence:
        _snapshots.move_to_end(key)
        return found[1]
    message = JobSnapshot(
        sequence=update.sequence,
        jobs=[Job.from_domain(j) for j in update.jobs],
        truncated=update.truncated,
        reason=update.reason,
        shared=True,
    )
    _snapshots[key] = (update.jobs, message)
    while len(_snapshots) > SNAPSHOTS_KEPT:
        _snapshots.popitem(last=False)
    return message


@requires(Scope.CLUSTERS_READ, Scope.JOBS_READ)
def schedule_timeline(
    info: Info,
    cluster_id: strawberry.ID,
    from_: Annotated[datetime | None, strawberry.argument(name="from")] = None,
    to: datetime | None = None,
    since: int | None = None,
) -> AsyncGenerator[ScheduleUpdate, None]:
    principal = info.context.authenticated()
    key = resumable(cluster_id, since)
    services = info.context.services
    start, end = window(services.timeline.now(), from_, to)

    def message(update: ScheduleSnapshot | ScheduleChange) -> ScheduleUpdate:
        if isinstance(update, ScheduleSnapshot):
            return _schedule(update, principal, start, end)
        return _diff(update, principal)

    return relay(
        info,
        lambda: services.schedule_updates.updates(principal, key, start, end, since),
        message,
        heavy=True,
    )


_schedules: OrderedDict[tuple[object, ...], tuple[ScheduleSnapshot, Schedule]] = OrderedDict()
SCHEDULES_KEPT = 8


def _schedule(
    update: ScheduleSnapshot, principal: Principal, start: datetime, end: datetime
) -> Schedule:
    """One GraphQL object per shared snapshot: subscribers of one view given the same cut
    (TimelineService keeps recent cuts) get the same Schedule, executed and serialised once."""
    key = (id(update.timeline), update.sequence, viewer_key(principal), start, end, update.reason)
    found = _schedules.get(key)
    if found is not None and found[0].timeline is update.timeline:
        _schedules.move_to_end(key)
        return found[1]
    schedule = schedule_of(update.sequence, update.timeline, principal, start, end, update.reason)
    schedule.shared = schedule.large = True
    _schedules[key] = (update, schedule)
    while len(_schedules) > SCHEDULES_KEPT:
        _schedules.popitem(last=False)
    return schedule


_diffs: OrderedDict[tuple[int, str], tuple[ScheduleChange, ScheduleDiff]] = OrderedDict()
DIFFS_KEPT = 512


def _diff(change: ScheduleChange, principal: Principal) -> ScheduleDiff:
    """One GraphQL object per (change, tenant): the service hands every subscriber with the same
    view the same change, so the result is executed and serialised once for all of them."""
    key = (id(change), str(principal.tenant_id))
    found = _diffs.get(key)
    if found is not None and found[0] is change:
        _diffs.move_to_end(key)
        return found[1]
    diff = ScheduleDiff(
        sequence=change.sequence,
        computed_at=change.computed_at,
        added=[TimelineSegment.from_domain(s, principal) for s in change.added],
        moved=[TimelineSegment.from_domain(s, principal) for s in change.moved],
        removed=list(change.removed),
        queue_update=None
        if change.queue is None
        else [QueueEntry.from_domain(e, principal) for e in change.queue],
        forecast_update=None if change.forecast is None else forecast_of(change.forecast),
        rows_update=None
        if change.rows is None
        else [ScheduleRow.from_domain(r) for r in change.rows],
        shared=True,
    )
    _diffs[key] = (change, diff)
    while len(_diffs) > DIFFS_KEPT:
        _diffs.popitem(last=False)
    return diff


@requires(Scope.CLUSTERS_READ)
def cluster_updates(
    info: Info, cluster_id: strawberry.ID, since: int | None = None
) -> AsyncGenerator[ClusterUpdate, None]:
    key = resumable(cluster_id, since)

    def message(update: DomainClusterUpdate) -> ClusterUpdate:
        if update.kind is None:
            return ClusterSnapshot(
                sequence=update.sequence,
                status=update.state.status,
                reason=operator_text(info, update.state.reason),
                nodes=nodes_of(update.state),
                snapshot_reason=update.reason or "subscribed",
            )
        return ClusterChange(
            sequence=update.sequence,
            kind=update.kind.value,
            status=update.state.status,
            reason=operator_text(info, update.state.reason),
            nodes=nodes_of(update.state),
        )

    return relay(info, lambda: info.context.services.cluster_updates.updates(key, since), message)
