"""The cluster schedule timeline in GraphQL: rows per GPU, segments, the queue, the forecast.

`mine` says a segment or queue entry is the caller's to see (`visible_to`): named, with its job,
which the caller may read and act on; for the operator, every one."""

from __future__ import annotations

import uuid
from datetime import datetime
from decimal import Decimal
from typing import Annotated

import strawberry

from domain.model import timeline as model
from domain.model.ids import ClusterId
from domain.model.job import JobPriority, JobStatus, JobType
from domain.model.principal import Principal
from domain.scheduling.accuracy import Accuracy
from domain.services.timeline import visible_to
from schema.context import Info
from schema.types.dispatch import FleetMemberPreview
from schema.types.enums import SegmentKind
from schema.types.placement import Placement
from schema.types.windows import WINDOW_DESCRIPTION, StartWindow, start_window


@strawberry.type(description="One job attempt (or reservation) on the GPUs it holds.")
class TimelineSegment:
    id: str
    rows: list[str] = strawberry.field(description="Ids of the rows (GPUs) it occupies.")
    start: datetime | None
    end: datetime | None = strawberry.field(description="Null: runs until stopped.")
    kind: SegmentKind
    source: str = strawberry.field(
        description="Where the end comes from: actual, estimate, history, default, service, "
        "reservation."
    )
    job_id: strawberry.ID | None = strawberry.field(
        description="Null for other tenants' work (shown, not named)."
    )
    name: str
    status: JobStatus | None
    priority: JobPriority | None
    reservation_id: strawberry.ID | None
    mine: bool = strawberry.field(
        description="Yours to see: named with its job (your tenant's, within your token's "
        "projects; every tenant's for the operator)."
    )
    earliest_start: datetime | None = strawberry.field(
        description="A waiting job's start window at 80 % confidence (the band around its "
        "estimated segment): its earliest start; null without a window."
    )
    latest_start: datetime | None = strawberry.field(
        description="The window's latest start; null without a window or a later bound."
    )
    job_type: JobType | None = strawberry.field(
        description="Null for reservations and other tenants' work."
    )

    @classmethod
    def from_domain(cls, seg: model.Segment, principal: Principal) -> TimelineSegment:
        return cls(
            id=seg.id,
            rows=list(seg.rows),
            start=seg.start,
            end=seg.end,
            kind=seg.kind,
            source=seg.source,
            job_id=strawberry.ID(seg.job_id) if seg.job_id else None,
            name=seg.name,
            status=JobStatus(seg.status) if seg.status else None,
            priority=JobPriority(seg.priority) if seg.priority else None,
            reservation_id=strawberry.ID(seg.reservation_id) if seg.reservation_id else None,
            mine=visible_to(principal)(seg),
            earliest_start=seg.earliest_start,
            latest_start=seg.latest_start,
            job_type=JobType(seg.job_type) if seg.job_type else None,
        )


@strawberry.type(description="A GPU of a node, or the CPU pool (id `cpu`).")
class TimelineRow:
    id: str
    node: str | None
    gpu_index: int | None
    gpu_type: str | None
    segments: list[TimelineSegment]


@strawberry.type(
    description="A row of the schedule without its segments: a GPU of a node, or the CPU pool "
    "(id `cpu`)."
)
class ScheduleRow:
    id: str
    node: str | None
    gpu_index: int | None
    gpu_type: str | None

    @classmethod
    def from_domain(cls, row: model.Row) -> ScheduleRow:
        return cls(id=row.id, node=row.node, gpu_index=row.gpu_index, gpu_type=row.gpu_type)


@strawberry.type(description="A waiting job, in the order the estimator expects them to start.")
class QueueEntry:
    position: int
    job_id: strawberry.ID | None
    name: str
    estimated_start: datetime | None
    reason: str = strawberry.field(description="Why it waits, e.g. needs 4 x A100 in cq; 3 ahead.")
    warnings: list[str]
    priority: JobPriority | None
    gpu_type: str | None
    gpu_count: int = strawberry.field(description="GPUs per pod.")
    pod_count: int
    mine: bool = strawberry.field(
        description="Yours to see: named with its job (your tenant's, within your token's "
        "projects; every tenant's for the operator)."
    )
    job_type: JobType | None = strawberry.field(description="Null for other tenants' jobs.")
    earliest_start: datetime | None = strawberry.field(
        description="Its start window at 80 % confidence, as on its estimated segment: the "
        "earliest start; null without a window (and for other tenants' jobs)."
    )
    latest_start: datetime | None = strawberry.field(
        description="The window's latest start; null without a window or a later bound."
    )

    @classmethod
    def from_domain(cls, entry: model.QueueEntry, principal: Principal) -> QueueEntry:
        return cls(
            position=entry.position,
            job_id=strawberry.ID(entry.job_id) if entry.tenant_id else None,
            name=entry.name,
            estimated_start=entry.estimated_start,
            reason=entry.reason,
            warnings=list(entry.warnings),
            priority=JobPriority(entry.priority) if entry.priority else None,
            gpu_type=entry.gpu_type,
            gpu_count=entry.gpu_count,
            pod_count=entry.pod_count,
            mine=visible_to(principal)(entry),
            job_type=JobType(entry.job_type) if entry.job_type else None,
            earliest_start=entry.earliest_start,
            latest_start=entry.latest_start,
        )


@strawberry.type
class ForecastPoint:
    at: datetime
    free_gpus: int


@strawberry.type(description="Free GPUs of one type over time, as the estimate expects.")
class GpuForecast:
    gpu_type: str
    points: list[ForecastPoint]


def forecast_of(forecast: dict[str, tuple[tuple[datetime, int], ...]]) -> list[GpuForecast]:
    return [
        GpuForecast(gpu_type=t, points=[ForecastPoint(at=at, free_gpus=n) for at, n in points])
        for t, points in sorted(forecast.items())
    ]


@strawberry.type(description="A cluster's schedule in a time window, as of `sequence`.")
class Schedule:
    sequence: int
    computed_at: datetime
    start: datetime
    end: datetime
    segments: list[TimelineSegment]
    queue: list[QueueEntry]
    forecast: list[GpuForecast]
    reason: str = strawberry.field(
        description="For subscription snapshots: subscribed, or resync (history gone or behind)."
    )
    row_list: strawberry.Private[list[model.Row]]
    shared: strawberry.Private[bool] = False
    """A subscription snapshot handed to every subscriber of one view (schema/execution.py)."""
    large: strawberry.Private[bool] = False

    @strawberry.field(description="One row per GPU and the CPU pool, each with its segments.")  # type: ignore[untyped-decorator]
    def rows(self) -> list[TimelineRow]:
        by_row: dict[str, list[TimelineSegment]] = {r.id: [] for r in self.row_list}
        for seg in self.segments:
            for row in seg.rows:
                if row in by_row:
                    by_row[row].append(seg)
        return [
            TimelineRow(
                id=r.id,
                node=r.node,
                gpu_index=r.gpu_index,
                gpu_type=r.gpu_type,
                segments=sorted(by_row[r.id], key=lambda s: (s.start is None, s.start)),
            )
            for r in self.row_list
        ]


def schedule_of(
    sequence: int,
    timeline: model.Timeline,
    principal: Principal,
    start: datetime,
    end: datetime,
    reason: str = "",
) -> Schedule:
    return Schedule(
        sequence=sequence,
        computed_at=timeline.computed_at,
        start=start,
        end=end,
        segments=[TimelineSegment.from_domain(s, principal) for s in timeline.segments.values()],
        queue=[QueueEntry.from_domain(e, principal) for e in timeline.queue],
        forecast=forecast_of(dict(timeline.forecast)),
        reason=reason,
        row_list=list(timeline.rows),
    )


@strawberry.type(description="Changes to the schedule since the previous message.")
class ScheduleDiff:
    sequence: int
    computed_at: datetime
    added: list[TimelineSegment]
    moved: list[TimelineSegment] = strawberry.field(
        description="Changed segments that overlap your window: upsert them by id."
    )
    removed: list[str] = strawberry.field(
        description="Ids that left the timeline or your window (unknown ids can be ignored)."
    )
    queue_update: list[QueueEntry] | None = strawberry.field(
        description="The whole new queue, if it changed (named apart from Schedule.queue so one "
        "selection can ask for both)."
    )
    forecast_update: list[GpuForecast] | None = strawberry.field(
        description="The whole new forecast, if it changed."
    )
    rows_update: list[ScheduleRow] | None = strawberry.field(
        default=None,
        description="The whole new list of rows, if a node joined, left or changed its GPUs. "
        "Completed work may still name rows that are gone.",
    )
    shared: strawberry.Private[bool] = False  # the same for every subscriber of a tenant


@strawberry.type(description="How often starts fell in the windows shown at one confidence.")
class WindowCoverage:
    confidence: float
    jobs: int = strawberry.field(description="Jobs shown such a window at submission that started.")
    inside: float = strawberry.field(description="Share (0 to 1) whose start fell inside.")
    median_width_seconds: float | None = strawberry.field(
        description="Null when most of the windows had no later bound."
    )


@strawberry.type(description="How close estimates came to what happened (seconds).")
class EstimateAccuracy:
    jobs: int
    start_p50_seconds: float | None
    start_p95_seconds: float | None
    start_within_10_minutes: float | None = strawberry.field(
        description="Share (0 to 1) of starts estimated within ten minutes at submission."
    )
    finished: int
    end_p50_seconds: float | None
    end_p95_seconds: float | None
    start_window_coverage: list[WindowCoverage] = strawberry.field(
        description="For the start windows shown at submission (50, 80 and 95 %): how often "
        "the start fell inside. Calibrated windows cover about their confidence."
    )

    @classmethod
    def from_domain(cls, a: Accuracy) -> EstimateAccuracy:
        return cls(
            jobs=a.jobs,
            start_p50_seconds=a.start_p50_seconds,
            start_p95_seconds=a.start_p95_seconds,
            start_within_10_minutes=a.start_within_10_minutes,
            finished=a.finished,
            end_p50_seconds=a.end_p50_seconds,
            end_p95_seconds=a.end_p95_seconds,
            start_window_coverage=[
                WindowCoverage(
                    confidence=c.confidence,
                    jobs=c.jobs,
                    inside=c.inside,
                    median_width_seconds=c.median_width_seconds,
                )
                for c in a.coverage
            ],
        )


@strawberry.type(description="Where and when a job would start, and its cost, if submitted now.")
class JobPreview:
    estimated_start: datetime | None
    estimated_end: datetime | None
    placements: list[Placement]
    reason: str
    warnings: list[str]
    estimated_cost: Decimal | None = strawberry.field(
        description="Expected GPU-hours (core-hours without GPUs) times the cluster's hourly "
        "price per GPU type: in US dollars at list prices, unless the cluster's "
        "gpu_hourly_prices set another currency."
    )
    duration_source: str
    cluster_id: strawberry.ID = strawberry.field(
        description="The cluster it would run on (on a fleet: the member it would go to)."
    )
    members: list[FleetMemberPreview] = strawberry.field(
        description="On a fleet: every member's offer, the one it would go to first (rank 1), "
        "then the others best first, then those that cannot take it; empty for a cluster."
    )
    wide: strawberry.Private[bool] = False
    """The job asks more than one node."""

    @strawberry.field(description=WINDOW_DESCRIPTION)  # type: ignore[untyped-decorator]
    async def start_window(self, info: Info, confidence: float = 0.8) -> StartWindow | None:
        cluster = ClusterId(uuid.UUID(self.cluster_id))
        return await start_window(info, cluster, self.estimated_start, confidence, wide=self.wide)


@strawberry.input
class ScheduleFilter:
    kinds: list[SegmentKind] | None = None
    priorities: list[JobPriority] | None = None
    only_mine: bool = False


ScheduleUpdate = Annotated[Schedule | ScheduleDiff, strawberry.union("ScheduleUpdate")]
