"""The cluster schedule timeline: one row per GPU (and a CPU pool row), segments on the rows.

A segment is one attempt of a job on the GPUs it holds (or a reservation on its GPUs): COMPLETED
for what ran, RUNNING from its actual start to its estimated end, ESTIMATED for what the
estimator expects, RESERVED for a capacity reservation. The queue lists waiting jobs in the order
they are expected to start, and the forecast gives free GPUs per type over time.

Timelines are compared, not resent: `diff` names the segments added, moved (any field changed)
and removed, and the queue and forecast when they changed; `apply(old, diff(old, new)) == new`.

A segment's id is stable (the same attempt keeps it across recomputes, so diffs can name it) but
opaque: a keyed hash of what it stands for, so other tenants, who see the segment but not whose
it is, cannot learn a job or reservation id from it.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from domain.model.cluster import Node
from domain.model.job import Job, JobStatus, Placement
from domain.model.reservation import CapacityReservation
from domain.model.timeline import (
    CPU_ROW,
    QueueEntry,
    Row,
    Segment,
    SegmentKind,
    Timeline,
    TimelineDiff,
)
from domain.scheduling.durations import Durations
from domain.scheduling.estimator import Schedule
from domain.scheduling.windows import Calibration

WAITING = (JobStatus.PENDING, JobStatus.QUEUED)


def rows_of(nodes: Iterable[Node]) -> tuple[Row, ...]:
    rows = [
        Row(f"{n.name}/{i}", n.name, i, n.gpu_type)
        for n in sorted(nodes, key=lambda n: n.name)
        for i in range(n.gpu_count)
    ]
    rows.append(Row(CPU_ROW, None, None, None))
    return tuple(rows)


def _rows(placements: Sequence[Placement], gpu_count: int) -> tuple[str, ...]:
    if not gpu_count:
        return (CPU_ROW,)
    return tuple(f"{p.node}/{i}" for p in placements for i in p.gpu_indices)


class SegmentIds:
    """Stable, opaque segment ids: HMAC-SHA256 of what a segment stands for, under `key`."""

    def __init__(self, key: bytes) -> None:
        self._key = key

    def __call__(self, what: str) -> str:
        return hmac.new(self._key, what.encode(), hashlib.sha256).hexdigest()[:32]


def _job_segment(ids: SegmentIds, job: Job, suffix: str = "", **fields: Any) -> Segment:
    return Segment(
        id=ids(f"job/{job.id}/{job.attempt}{suffix}"),
        job_id=str(job.id),
        tenant_id=str(job.tenant_id),
        project_id=str(job.project_id),
        name=job.name,
        status=job.status.value,
        priority=job.priority.value,
        job_type=job.job_type.value,
        **fields,
    )


def _located(job: Job) -> bool:
    """The job's placements name its pods' GPUs (a real cluster names only the nodes: the
    estimator then chose the nodes' GPUs it counts as busy, in the job's plan)."""
    gpus = job.resources.total_gpus
    return bool(job.placements) and sum(len(p.gpu_indices) for p in job.placements) >= gpus


def build(
    schedule: Schedule,
    nodes: Sequence[Node],
    active: Sequence[Job],
    finished: Sequence[Job],
    reservations: Sequence[CapacityReservation],
    durations: Durations,
    ids: SegmentIds,
    calibration: Calibration | None = None,
) -> Timeline:
    """The timeline of `schedule`; with `calibration`, a waiting job's estimated segment
    carries its start window at the default confidence."""
    segments: dict[str, Segment] = {}
    windows = {
        job.id: calibration.window(schedule.now, plan.start, wide=job.resources.total_pods > 1)
        for job in active
        if calibration is not None
        and job.status in WAITING
        and (plan := schedule.jobs.get(job.id)) is not None
        and plan.start is not None
    }
    for job in finished:
        if job.actual_start is None or not _located(job):
            continue
        seg = _job_segment(
            ids,
            job,
            rows=_rows(job.placements, job.resources.widest_pod),
            start=job.actual_start,
            end=job.actual_end,
            kind=SegmentKind.COMPLETED,
            source="actual",
        )
        segments[seg.id] = seg
    by_id = {str(r.id): r for r in reservations}
    for held in schedule.reservations:
        booked = by_id.get(held.reservation_id)
        if booked is None or not held.placements:
            continue
        seg = Segment(
            id=ids(f"reservation/{booked.id}"),
            rows=_rows(held.placements, 1),
            start=held.start,
            end=held.end,
            kind=SegmentKind.RESERVED,
            source="reservation",
            tenant_id=str(booked.tenant_id),
            name=booked.name,
            reservation_id=str(booked.id),
        )
        segments[seg.id] = seg
    for job in active:
        plan = schedule.jobs.get(job.id)
        if plan is None:
            continue
        source = durations.source(job)
        gpus = job.resources.widest_pod  # a job of several pod sets is drawn on every GPU
        if job.status in (JobStatus.ADMITTED, JobStatus.RUNNING) and job.placements:
            started = job.actual_start or job.updated_at
            end = plan.preempted_at if plan.preempted_at is not None else plan.end
            where = job.placements if _located(job) or plan.preempted_at else plan.placements
            seg = _job_segment(
                ids,
                job,
                rows=_rows(where, gpus),
                start=started,
                end=end,
                kind=SegmentKind.RUNNING,
                source=source,
            )
            segments[seg.id] = seg
            if plan.preempted_at is None or plan.start is None or plan.start == started:
                continue
            seg = _job_segment(
                ids,
                job,
                "/requeued",
                rows=_rows(plan.placements, gpus),
                start=plan.start,
                end=plan.end,
                kind=SegmentKind.ESTIMATED,
                source=source,
            )
            segments[seg.id] = seg
        elif plan.start is not None:
            window = windows.get(job.id)
            seg = _job_segment(
                ids,
                job,
                rows=_rows(plan.placements, gpus),
                start=plan.start,
                end=plan.end,
                kind=SegmentKind.ESTIMATED,
                source=source,
                earliest_start=window.earliest if window else None,
                latest_start=window.latest if window else None,
            )
            segments[seg.id] = seg
    jobs_by_id = {job.id: job for job in active}
    queue = tuple(
        QueueEntry(
            job_id=str(job_id),
            tenant_id=str(jobs_by_id[job_id].tenant_id),
            name=jobs_by_id[job_id].name,
            position=position,
            estimated_start=schedule.jobs[job_id].start,
            reason=schedule.jobs[job_id].reason,
            warnings=schedule.jobs[job_id].warnings,
            priority=jobs_by_id[job_id].priority.value,
            gpu_type=jobs_by_id[job_id].resources.gpu_type,
            gpu_count=jobs_by_id[job_id].resources.gpu_count,
            pod_count=jobs_by_id[job_id].resources.pod_count,
            job_type=jobs_by_id[job_id].job_type.value,
            earliest_start=window.earliest if (window := windows.get(job_id)) else None,
            latest_start=window.latest if window else None,
            project_id=str(jobs_by_id[job_id].project_id),
        )
        for position, job_id in enumerate(schedule.queue, start=1)
        if job_id in jobs_by_id
    )
    forecast = {k: tuple(v) for k, v in schedule.free_gpus.items()}
    return Timeline(schedule.now, rows_of(nodes), segments, queue, forecast)


WINDOW_SLACK = 0.05
"""A start window shown before is kept while the one worked out now is within this share of
its width of it (each bound). The bounds are the wait times e^score (`Calibration.window`),
so with the estimated start fixed they move with every recompute as time passes, and each such
move marked every waiting job's segment changed and sent the whole queue to every subscriber.
A twentieth of an 80 % band is well inside what the band means; chosen, not fitted."""


def steady(old: Timeline | None, new: Timeline) -> Timeline:
    """`new`, with the start windows `old` showed for the same estimate kept where the new ones
    differ by no more than `WINDOW_SLACK` of their width: time passing alone is no change."""
    if old is None:
        return new
    segments = dict(new.segments)
    for key, seg in new.segments.items():
        before = old.segments.get(key)
        if (
            before is not None
            and before is not seg
            and seg.earliest_start is not None
            and before.earliest_start is not None
            and _close(before, seg, seg.start)
            and replace(seg, earliest_start=before.earliest_start, latest_start=before.latest_start)
            == before
        ):
            segments[key] = before
    old_entries = {e.job_id: e for e in old.queue}
    queue = []
    for entry in new.queue:
        before_entry = old_entries.get(entry.job_id)
        if (
            before_entry is not None
            and entry.earliest_start is not None
            and before_entry.earliest_start is not None
            and before_entry.estimated_start == entry.estimated_start
            and _close(before_entry, entry, entry.estimated_start)
        ):
            entry = replace(
                entry,
                earliest_start=before_entry.earliest_start,
                latest_start=before_entry.latest_start,
            )
        queue.append(entry)
    return replace(new, segments=segments, queue=tuple(queue))


def _close(before: Segment | QueueEntry, now: Segment | QueueEntry, start: datetime | None) -> bool:
    """Whether `now`'s window is within the slack of `before`'s: a share of its width, or of
    how far before the estimated start it opens when it has no latest start."""
    assert before.earliest_start is not None and now.earliest_start is not None
    if (before.latest_start is None) != (now.latest_start is None):
        return False
    if before.latest_start is None or now.latest_start is None:
        reach = abs((start or now.earliest_start) - now.earliest_start)
        return abs(before.earliest_start - now.earliest_start) <= reach * WINDOW_SLACK
    slack = (now.latest_start - now.earliest_start) * WINDOW_SLACK
    return (
        abs(before.earliest_start - now.earliest_start) <= slack
        and abs(before.latest_start - now.latest_start) <= slack
    )


def diff(old: Timeline | None, new: Timeline) -> TimelineDiff:
    if old is None:
        return TimelineDiff(
            new.computed_at,
            added=tuple(new.segments.values()),
            queue=new.queue,
            forecast=new.forecast,
            rows=new.rows,
        )
    added = tuple(s for k, s in new.segments.items() if k not in old.segments)
    moved = tuple(s for k, s in new.segments.items() if k in old.segments and old.segments[k] != s)
    removed = tuple(k for k in old.segments if k not in new.segments)
    return TimelineDiff(
        new.computed_at,
        added,
        moved,
        removed,
        queue=new.queue if new.queue != old.queue else None,
        forecast=new.forecast if _shape(new.forecast) != _shape(old.forecast) else None,
        rows=new.rows if new.rows != old.rows else None,
    )


def _shape(
    forecast: Mapping[str, tuple[tuple[datetime, int], ...]],
) -> dict[str, tuple[tuple[datetime | None, int], ...]]:
    """A forecast without the time of its first step, which is always `now`: time passing
    alone is no change."""
    return {
        k: tuple((None if i == 0 else at, free) for i, (at, free) in enumerate(points))
        for k, points in forecast.items()
    }


def apply(old: Timeline, change: TimelineDiff) -> Timeline:
    segments = {k: s for k, s in old.segments.items() if k not in change.removed}
    for seg in (*change.added, *change.moved):
        segments[seg.id] = seg
    return Timeline(
        change.computed_at,
        change.rows if change.rows is not None else old.rows,
        segments,
        change.queue if change.queue is not None else old.queue,
        change.forecast if change.forecast is not None else old.forecast,
    )
