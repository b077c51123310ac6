"""The live schedule timeline of each cluster: recomputed, stored, diffed, and shown per caller.

`refresh` reads a cluster's state in one consistent read (nodes, quotas, reservations, active
jobs, what they depend on; what ran, which changes slowly and is large, is kept between reads:
learned run and start-up times for 30 s, the past day's finished jobs topped up with what ended
since, and read whole every minute), runs the estimator, writes each job's estimate
(keeping the first of each attempt and the one at admission, for accuracy), and, when the
timeline changed, commits the change as a TIMELINE event of the cluster with the new timeline,
in one transaction: the stream of diffs and the stored timeline can never disagree.

`view` is what one caller sees: the stored timeline cut to a time window, with the segments and
queue entries it may not see anonymised (their GPUs are busy, but not with anything you may know
about): other tenants' work, and, for a token limited to projects, its tenant's jobs in other
projects (`visible_to`); the operator sees every tenant's, named. `preview` answers where and
when a job would start, and what it would cost, without submitting it.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
import uuid
from collections import Counter, OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from decimal import Decimal

from domain.aio import InThread, cancel_and_wait, wait_event
from domain.errors import NotFound, ValidationFailed
from domain.model.cluster import Cluster
from domain.model.drain import cordoned
from domain.model.events import ClusterChanged, ClusterChangeKind
from domain.model.ids import ClusterId, JobId, ProjectId, TenantId
from domain.model.job import Estimate, Job, JobType, Placement
from domain.model.principal import Principal
from domain.model.quota import LocalQueue, tenant_namespace
from domain.model.timeline import QueueEntry, Segment, Timeline
from domain.ports.clock import Clock
from domain.ports.compute import Compute
from domain.ports.events import EventHub, Overflowed
from domain.ports.unit_of_work import TenantScope, UnitOfWork, UnitOfWorkFactory
from domain.scheduling import timeline as timelines
from domain.scheduling.accuracy import Accuracy, measure
from domain.scheduling.budgets import BudgetStanding, Exhaustion, exhaustion
from domain.scheduling.cost import CostForecast, SpendHour, estimate_cost, forecast_spend
from domain.scheduling.durations import Durations, History, startup_medians
from domain.scheduling.estimator import JobPlan, Schedule, Snapshot, estimate, eviction_seconds
from domain.scheduling.windows import MIN_SCORES, Calibration, Window, late_grace, startup_spread
from domain.scheduling.windows import Outcome as WindowOutcome
from domain.services.jobs import JobService
from domain.services.prices import price_books
from domain.services.submission import JobSubmission

log = logging.getLogger(__name__)
HISTORY_RUNS = 5000
STARTUP_RUNS = 200
"""The latest attempts whose start-up (admission to running) the estimates learn from."""
PAST = timedelta(hours=24)
PAST_JOBS = 2000
"""The most finished jobs the timeline's past shows (the latest)."""
PAST_TTL = timedelta(seconds=60)
"""How often the past is read whole; in between, only what ended since the latest end read
(less `PAST_OVERLAP`, for writers whose clocks lag) is read."""
PAST_OVERLAP = timedelta(minutes=5)
LEARNED_TTL = timedelta(seconds=30)
"""How long learned run and start-up times are kept (re-read each time while the record is
shorter than `LEARNED_MIN_RUNS`)."""
LEARNED_MIN_RUNS = 20
ACTIVE_TTL = timedelta(seconds=60)
"""How often a cluster's active jobs are read whole; in between they are kept current from the
cluster's events (`_active`)."""
ACTIVE_FOLD_LIMIT = 5000
"""More events than this since the last read: read the active jobs whole instead."""
CUTS_KEPT = 16
"""Cuts of stored timelines kept for the views that ask again (a few windows of a few
tenants: what arrives together)."""
CALIBRATION_PAST = timedelta(days=30)
CALIBRATION_JOBS = 5000
CALIBRATION_TTL = timedelta(seconds=30)
MAX_PACING = 5.0
"""The longest a recompute waits for the process to serve changes (a slow recompute's time)."""
QUIET_SHARE = 4.0
"""A stream of changes has ended when none came for the last recompute's time / this. Not
measured on a trace: a client's stream of submissions comes tens of ms apart
(benchmarks.submissions: 30/s), and a recompute under one takes a second or more, so a quarter
of it is many gaps long; a change that comes later waits at most that quarter more."""
SHOWN_CONFIDENCES = (0.5, 0.8, 0.95)
"""The windows kept with a submission estimate, whose coverage `estimateAccuracy` reports."""


@dataclass(frozen=True)
class Arrival:
    """A job's plan on a cluster it would arrive at (`TimelineService.what_if`), and how many
    jobs there the estimate has its start evict."""

    plan: JobPlan
    evicts: int = 0


@dataclass(frozen=True)
class Preview:
    start: datetime | None
    end: datetime | None
    placements: tuple[Placement, ...]
    reason: str
    warnings: tuple[str, ...]
    estimated_cost: Decimal | None
    duration_source: str
    load: float = 0.0
    """How loaded the cluster is for the job (`load`)."""
    evicts: int = 0
    """Jobs the estimate has its start evict."""


def load(snapshot: Snapshot, job: Job) -> float:
    """The share of the cluster's GPUs of the job's type (its cores, for a job without GPUs)
    that its other active jobs hold or wait for: how a fleet tells apart members that would
    start a job equally soon at an equal cost."""
    gpu_type = job.resources.gpu_type if job.resources.total_gpus else None
    others = [j for j in snapshot.jobs if j.id != job.id]
    total: float
    asked: float
    if gpu_type is not None:
        total = sum(n.gpu_count for n in snapshot.nodes if n.usable and n.gpu_type == gpu_type)
        asked = sum(j.resources.total_gpus for j in others if j.resources.gpu_type == gpu_type)
    else:
        total = sum(n.cpu_cores for n in snapshot.nodes if n.usable)
        asked = sum(j.resources.total_cpu_cores for j in others)
    return asked / total if total else math.inf


@dataclass(frozen=True)
class _Learned:
    read_at: datetime
    history: History
    startup: dict[JobType, float]
    runs: int
    startup_spread: timedelta = timedelta(0)
    """How widely start-up times spread: no start window is narrower."""


@dataclass
class _Past:
    read_at: datetime
    jobs: dict[JobId, Job]


@dataclass(frozen=True)
class _Active:
    read_at: datetime
    """When they were last read whole."""
    sequence: int
    """The cluster's event sequence they are current to."""
    jobs: dict[JobId, Job]


@dataclass(frozen=True)
class TimelineView:
    sequence: int
    timeline: Timeline


def plan(
    snapshot: Snapshot,
    active: list[Job],
    finished: list[Job],
    ids: timelines.SegmentIds,
    calibration: Calibration | None = None,
) -> tuple[Schedule, Timeline]:
    """The estimate and the timeline drawn from it: the CPU-heavy part of a recompute, run on
    the Compute port (in a worker process: everything here is plain, picklable data)."""
    schedule = estimate(snapshot)
    timeline = timelines.build(
        schedule,
        snapshot.nodes,
        active,
        finished,
        snapshot.reservations,
        snapshot.durations,
        ids,
        calibration,
    )
    return schedule, timeline


def anonymous(segment: Segment) -> Segment:
    return Segment(
        segment.id,
        segment.rows,
        segment.start,
        segment.end,
        segment.kind,
        segment.source,
        name="another tenant",
    )


def anonymous_entry(entry: QueueEntry) -> QueueEntry:
    return QueueEntry(
        "",
        "",
        "another tenant",
        entry.position,
        entry.estimated_start,
        "",
        (),
        "",
        entry.gpu_type,
        entry.gpu_count,
        entry.pod_count,
    )


def visible_to(principal: Principal) -> Callable[[Segment | QueueEntry], bool]:
    """Whether `principal` may see a segment or queue entry named, as `Principal.may_see`: a
    job is of its project; a reservation (a segment without a job) is of its whole tenant."""
    if principal.sees_every_tenant:
        return lambda item: True
    tenant = str(principal.tenant_id)
    projects = None if principal.project_ids is None else {str(p) for p in principal.project_ids}

    def visible(item: Segment | QueueEntry) -> bool:
        if item.tenant_id != tenant:
            return False
        return projects is None or not item.job_id or item.project_id in projects

    return visible


def viewer_key(principal: Principal) -> str:
    """What decides a principal's cut of a timeline: who sees what is `visible_to`'s."""
    if principal.sees_every_tenant:
        return "*"
    if principal.project_ids is None:
        return str(principal.tenant_id)
    return f"{principal.tenant_id}/{','.join(sorted(map(str, principal.project_ids)))}"


def cut(
    timeline: Timeline,
    principal: Principal,
    start: datetime,
    end: datetime,
    *,
    only_mine: bool = False,
) -> Timeline:
    """The part of `timeline` in [start, end) that `principal` may see."""
    mine = visible_to(principal)
    segments = {}
    for key, seg in timeline.segments.items():
        if not seg.overlaps(start, end):
            continue
        if mine(seg):
            segments[key] = seg
        elif not only_mine:
            segments[key] = anonymous(seg)
    queue = tuple(
        e if mine(e) else anonymous_entry(e) for e in timeline.queue if mine(e) or not only_mine
    )
    return replace(timeline, segments=segments, queue=queue)


MAX_FORECAST_HOURS = 24 * 14
"""The longest cost forecast: two weeks of hours."""


class TimelineService:
    def __init__(
        self,
        *,
        uow: UnitOfWorkFactory,
        clock: Clock,
        jobs: JobService,
        segment_key: bytes = b"",
        compute: Compute | None = None,
    ) -> None:
        self._compute = compute or InThread()
        self._uow = uow
        self._clock = clock
        self._jobs = jobs
        self._segment_ids = timelines.SegmentIds(segment_key)
        self._timelines: dict[ClusterId, TimelineView] = {}
        self._calibrations: dict[ClusterId, tuple[datetime, Calibration]] = {}
        self._learned: dict[ClusterId, _Learned] = {}
        self._pasts: dict[ClusterId, _Past] = {}
        self._actives: dict[ClusterId, _Active] = {}
        self._cuts: OrderedDict[tuple[object, ...], TimelineView] = OrderedDict()
        """Recent cuts by (cluster, version, viewer, window): subscribers of one view that
        arrive together (a thousand at a page's reload) share one cut, and its objects."""
        self.active_reads = 0
        """Whole reads of a cluster's active jobs (the rest were folded from events)."""
        self.on_refreshed: Callable[[float], None] = lambda seconds: None
        """Called with the seconds each recompute took (the wiring records them as a metric)."""

    def now(self) -> datetime:
        return self._clock.now()

    # --- computing --------------------------------------------------------------------------

    async def _snapshot(
        self, uow: UnitOfWork, cluster: Cluster, extras: Sequence[Job] = ()
    ) -> tuple[Snapshot, list[Job]]:
        now = self._clock.now()
        quotas = await uow.quotas.quota_set(cluster.id)
        reservations = await uow.reservations.active(cluster.id, active_after=now)
        active = await self._active(uow, cluster.id, now)
        if extras:
            added = {job.id for job in extras}
            active = [*(j for j in active if j.id not in added), *extras]
        wanted = {d for job in active for d in job.depends_on} - {j.id for j in active}
        finished = await uow.jobs.get_many(sorted(wanted, key=str)) if wanted else {}
        learned = await self._learn(uow, cluster, now)
        drains = await uow.drains.on([cluster.id])
        snapshot = Snapshot(
            now=now,
            nodes=cordoned(cluster.nodes, drains),
            quotas=quotas,
            jobs=active,
            durations=Durations(learned.history, startup=learned.startup),
            reservations=reservations,
            finished={job_id: job.status for job_id, job in finished.items()},
            time_scale=cluster.time_scale,
            eviction_seconds=eviction_seconds(cluster.is_real),
        )
        return snapshot, active

    async def _active(self, uow: UnitOfWork, cluster_id: ClusterId, now: datetime) -> list[Job]:
        """The cluster's active jobs (oldest first), read whole at most once per `ACTIVE_TTL`
        and in between brought up to date from the events committed since, read in the same
        snapshot: every committed change of a job is an event carrying the job (the unit of
        work refuses one without), save the estimates, which are this service's own output.
        Each call folds into a copy, so concurrent callers never see each other's halves."""
        sequence = await uow.current_sequence(cluster_id)
        cached = self._actives.get(cluster_id)
        folded: dict[JobId, Job] | None = None
        if (
            cached is not None
            and now - cached.read_at < ACTIVE_TTL
            and 0 <= sequence - cached.sequence <= ACTIVE_FOLD_LIMIT
        ):
            folded = await self._fold(uow, cluster_id, cached, sequence)
        if folded is None:
            read = await uow.jobs.active_on_cluster(cluster_id)
            self.active_reads += 1
            folded, cached = {job.id: job for job in read}, None
        latest = self._actives.get(cluster_id)
        if latest is None or latest.sequence <= sequence:
            self._actives[cluster_id] = _Active(
                cached.read_at if cached is not None else now, sequence, folded
            )
        return sorted(folded.values(), key=lambda j: (j.created_at, str(j.id)))

    async def active_jobs(self, cluster_id: ClusterId) -> list[Job]:
        """The cluster's active jobs as the next recompute will see them (oldest first)."""
        async with self._uow(TenantScope.system(), consistent_read=True) as uow:
            return await self._active(uow, cluster_id, self._clock.now())

    @staticmethod
    async def _fold(
        uow: UnitOfWork, cluster_id: ClusterId, cached: _Active, sequence: int
    ) -> dict[JobId, Job] | None:
        """`cached` with the events after it applied; None if some are no longer held."""
        missing = sequence - cached.sequence
        if not missing:
            return dict(cached.jobs)
        events = await uow.events_after(cluster_id, cached.sequence, limit=missing)
        if [e.sequence for e in events] != list(range(cached.sequence + 1, sequence + 1)):
            return None
        jobs = dict(cached.jobs)
        for event in events:
            change = event.job_change
            if change is None:
                continue
            if change.job.status.is_active and change.job.cluster_id == cluster_id:
                jobs[change.job.id] = change.job.snapshot()
            else:
                jobs.pop(change.job.id, None)
        return jobs

    async def _learn(self, uow: UnitOfWork, cluster: Cluster, now: datetime) -> _Learned:
        """Run and start-up times of what ran (the latest `HISTORY_RUNS`), read at most once per
        `LEARNED_TTL`: thousands of rows that one more finished job hardly moves."""
        cached = self._learned.get(cluster.id)
        if (
            cached is not None
            and now - cached.read_at < LEARNED_TTL
            and cached.runs >= LEARNED_MIN_RUNS
        ):
            return cached
        runs = await uow.jobs.run_times(
            cluster.id, limit=HISTORY_RUNS, time_scale=cluster.time_scale
        )
        runs += await uow.jobs.failed_runs(
            cluster.id, limit=HISTORY_RUNS, time_scale=cluster.time_scale
        )  # how often and how early attempts fail (`Durations.holding`)
        startups = await uow.jobs.startup_times(cluster.id, limit=STARTUP_RUNS)
        learned = self._learned[cluster.id] = _Learned(
            now,
            History(runs),
            startup_medians(startups),
            len(runs),
            startup_spread(seconds for _, seconds in startups),
        )
        return learned

    @staticmethod
    async def _prices(uow: UnitOfWork, cluster: Cluster, now: datetime) -> dict[str, Decimal]:
        """The cluster's GPU prices now (`PriceBook`): what estimated costs use."""
        return (await price_books(uow, [cluster]))[cluster.id].table(now)

    async def _past(
        self, uow: UnitOfWork, cluster_id: ClusterId, now: datetime, active: list[Job]
    ) -> list[Job]:
        """The jobs that ran and ended in the last `PAST` (the timeline's past), newest first.
        Read whole once per `PAST_TTL`; in between, only what ended since the latest end seen
        (less `PAST_OVERLAP`), merged in: a busy cluster's day is thousands of finished jobs,
        which do not change. A job retried since (active again) leaves the past."""
        cutoff = now - PAST
        cached = self._pasts.get(cluster_id)
        if cached is None or now - cached.read_at >= PAST_TTL:
            read = await uow.jobs.finished_on_cluster(
                cluster_id, ended_after=cutoff, limit=PAST_JOBS
            )
            cached = self._pasts[cluster_id] = _Past(now, {job.id: job for job in read})
        else:
            ends = [job.actual_end for job in cached.jobs.values() if job.actual_end]
            since = max(cutoff, max(ends, default=cutoff) - PAST_OVERLAP)
            for job in await uow.jobs.finished_on_cluster(
                cluster_id, ended_after=since, limit=PAST_JOBS
            ):
                cached.jobs[job.id] = job
        again = {job.id for job in active}
        for job_id in [
            k
            for k, job in cached.jobs.items()
            if k in again or job.actual_end is None or job.actual_end <= cutoff
        ]:
            del cached.jobs[job_id]
        past = sorted(
            cached.jobs.values(), key=lambda j: (j.actual_end or cutoff, str(j.id)), reverse=True
        )
        if len(past) > PAST_JOBS:
            for job in past[PAST_JOBS:]:
                del cached.jobs[job.id]
            past = past[:PAST_JOBS]
        return past

    async def refresh(self, cluster_id: ClusterId) -> bool:
        """Recompute the cluster's timeline and estimates; True if the timeline changed."""
        started = time.perf_counter()
        try:
            return await self._refresh(cluster_id)
        finally:
            self.on_refreshed(time.perf_counter() - started)

    async def _refresh(self, cluster_id: ClusterId) -> bool:
        async with self._uow(TenantScope.system(), consistent_read=True) as uow:
            cluster = await uow.clusters.get(cluster_id)
            if cluster is None:
                return False
            snapshot, active = await self._snapshot(uow, cluster)
            finished = await self._past(uow, cluster_id, snapshot.now, active)
            prices = await self._prices(uow, cluster, snapshot.now)
        calibration = await self.calibration(cluster_id)
        schedule, timeline = await self._compute.run(
            plan, snapshot, active, finished, self._segment_ids, calibration
        )
        estimates = self._estimates(schedule, active, snapshot.durations, prices, calibration)
        async with self._uow(TenantScope.system()) as uow:
            latest = await self._latest(uow, cluster_id)
            timeline = timelines.steady(latest.timeline if latest else None, timeline)
            change = timelines.diff(latest.timeline if latest else None, timeline)
            await uow.jobs.store_estimates(estimates)
            if not change.empty:
                uow.record(
                    ClusterChanged(ClusterChangeKind.TIMELINE, cluster_id, change, state=timeline)
                )
            events = await uow.commit()
        for event in events:
            kept = event.cluster_change
            if kept is not None and kept.kind is ClusterChangeKind.TIMELINE:
                self._timelines[cluster_id] = TimelineView(event.sequence, timeline)
        return not change.empty

    async def _latest(self, uow: UnitOfWork, cluster_id: ClusterId) -> TimelineView | None:
        """The stored timeline, decoded once per version: reading a big one (10,000 jobs) is
        a tenth of a second of CPU, and every schedule request and recompute needs it."""
        sequence = await uow.timeline_sequence(cluster_id)
        if sequence is None:
            return None
        cached = self._timelines.get(cluster_id)
        if cached is not None and cached.sequence == sequence:
            return cached
        latest = await uow.latest_timeline(cluster_id)
        if latest is None:
            return None
        view = self._timelines[cluster_id] = TimelineView(*latest)
        return view

    @staticmethod
    def _estimates(
        schedule: Schedule,
        active: list[Job],
        durations: Durations,
        prices: Mapping[str, Decimal],
        calibration: Calibration,
    ) -> list[tuple[Job, bool]]:
        changed: list[tuple[Job, bool]] = []
        for job in active:
            plan = schedule.jobs.get(job.id)
            if plan is None:
                continue
            kept_before = (job.submission_estimate, job.admission_estimate)
            cost = estimate_cost(job.resources, durations.expected(job), prices)
            windows: list[tuple[float, datetime, datetime | None]] = []
            if (
                job.submission_estimate is None
                and plan.start is not None
                and job.status in timelines.WAITING
            ):
                for confidence in SHOWN_CONFIDENCES:  # kept with the submission estimate
                    window = calibration.window(
                        schedule.now, plan.start, confidence, wide=job.resources.total_pods > 1
                    )
                    if window is not None:
                        windows.append((confidence, window.earliest, window.latest))
            estimate = Estimate(plan.start, plan.end, plan.reason, plan.warnings)
            moved = job.apply_estimate(estimate, tuple(windows))
            if cost != job.estimated_cost:
                job.estimated_cost = cost
                moved = True
            if moved:
                kept = kept_before != (job.submission_estimate, job.admission_estimate)
                changed.append((job, kept))
        return changed

    # --- reading ----------------------------------------------------------------------------

    async def view(
        self,
        principal: Principal,
        cluster_id: ClusterId,
        start: datetime,
        end: datetime,
        *,
        only_mine: bool = False,
    ) -> TimelineView:
        stored = await self._stored(cluster_id)
        key = (cluster_id, stored.sequence, viewer_key(principal), start, end, only_mine)
        found = self._cuts.get(key)
        if found is not None:
            self._cuts.move_to_end(key)
            return found
        view = self._cuts[key] = TimelineView(
            stored.sequence, cut(stored.timeline, principal, start, end, only_mine=only_mine)
        )
        while len(self._cuts) > CUTS_KEPT:
            self._cuts.popitem(last=False)
        return view

    async def _stored(self, cluster_id: ClusterId) -> TimelineView:
        for _ in range(2):
            async with self._uow(TenantScope.system(), consistent_read=True) as uow:
                if await uow.clusters.get(cluster_id) is None:
                    raise NotFound("cluster", cluster_id)
                latest = await self._latest(uow, cluster_id)
            if latest is not None:
                return latest
            await self.refresh(cluster_id)  # never computed yet: do it now
        raise NotFound("timeline", cluster_id)

    async def cost_forecast(
        self, principal: Principal, cluster_id: ClusterId, hours: int
    ) -> CostForecast:
        """What the cluster's running and waiting work that `principal` may see is expected to
        cost, by hour and by project, from its schedule (`forecast_spend`)."""
        if not 1 <= hours <= MAX_FORECAST_HOURS:
            raise ValidationFailed.single("hours", f"must be from 1 to {MAX_FORECAST_HOURS}")
        stored = await self._stored(cluster_id)
        now = self._clock.now()
        async with self._uow(TenantScope.system()) as uow:
            cluster = await uow.clusters.get(cluster_id)
            if cluster is None:
                raise NotFound("cluster", cluster_id)
            prices = await self._prices(uow, cluster, now)

        def sees(segment: Segment) -> bool:
            if segment.tenant_id is None:
                return False
            project = ProjectId(uuid.UUID(segment.project_id)) if segment.project_id else None
            return principal.may_see(TenantId(uuid.UUID(segment.tenant_id)), project)

        timeline = stored.timeline
        seen = [s for s in timeline.segments.values() if sees(s)]
        return await self._compute.run(forecast_spend, timeline.rows, seen, prices, now, hours)

    async def budget_exhaustion(self, standing: BudgetStanding) -> Exhaustion:
        """When `standing`'s budget is expected to be spent in its period: what it has spent,
        then what its scope's running and waiting work costs by hour on every cluster's
        schedule (`forecast_spend` over its segments), until the period's end."""
        now = self._clock.now()
        budget = standing.budget
        if standing.exhausted:
            return exhaustion(standing, [], now)
        hours = max(1, math.ceil((standing.next_period - now).total_seconds() / 3600))
        tenant, project = str(budget.tenant_id), budget.project_id and str(budget.project_id)
        summed: list[SpendHour] | None = None
        async with self._uow(TenantScope.system()) as uow:
            clusters = await uow.clusters.all()
        for cluster in clusters:
            async with self._uow(TenantScope.system()) as uow:
                stored = await self._latest(uow, cluster.id)
                if stored is None:
                    continue
                prices = await self._prices(uow, cluster, now)
            mine = [
                s
                for s in stored.timeline.segments.values()
                if s.tenant_id == tenant and (project is None or s.project_id == project)
            ]
            if not mine:
                continue
            forecast = await self._compute.run(
                forecast_spend, stored.timeline.rows, mine, prices, now, hours
            )
            summed = (
                list(forecast.hours)
                if summed is None
                else [
                    SpendHour(a.start, a.cost + b.cost, a.low + b.low, a.high + b.high)
                    for a, b in zip(summed, forecast.hours, strict=True)
                ]
            )
        return exhaustion(standing, summed or [], now)

    async def preview(self, principal: Principal, sub: JobSubmission) -> Preview:
        """Where and when the job would start, and its cost, without submitting it."""
        now = self._clock.now()
        async with self._uow(TenantScope(principal.tenant_id), consistent_read=True) as uow:
            job, default_queue = await self._jobs.prepare(uow, principal, sub, now)
            cluster = await uow.clusters.get(sub.cluster_id)
            assert cluster is not None
        async with self._uow(TenantScope.system(), consistent_read=True) as uow:
            snapshot, _ = await self._snapshot(uow, cluster, extras=[job])
            prices = await self._prices(uow, cluster, snapshot.now)
        if default_queue is not None:
            quotas = replace(
                snapshot.quotas, local_queues=(*snapshot.quotas.local_queues, default_queue)
            )
            snapshot = replace(snapshot, quotas=quotas)
        schedule = await self._compute.run(estimate, snapshot)
        plan = schedule.jobs[job.id]
        seconds = snapshot.durations.expected(job)
        return Preview(
            start=plan.start,
            end=plan.end,
            placements=plan.placements,
            reason=plan.reason,
            warnings=plan.warnings,
            estimated_cost=estimate_cost(job.resources, seconds, prices),
            duration_source=snapshot.durations.source(job),
            load=load(snapshot, job),
            evicts=sum(
                1
                for p in schedule.jobs.values()
                if p is not plan and plan.start is not None and p.preempted_at == plan.start
            ),
        )

    async def what_if(
        self, cluster_id: ClusterId, arrivals: Sequence[Job], cluster_queue: str
    ) -> dict[JobId, Arrival]:
        """When `arrivals` (jobs of other clusters, given as if submitted here) would start and
        end on this cluster beside its own work, all of them at once: what a fleet's balancing
        weighs a move by (`domain.services.balancing`). A tenant with no LocalQueue of an
        arrival's name here is given one in `cluster_queue`, as its first submission would."""
        async with self._uow(TenantScope.system(), consistent_read=True) as uow:
            cluster = await uow.clusters.get(cluster_id)
            if cluster is None or not arrivals:
                return {}
            snapshot, _ = await self._snapshot(uow, cluster, extras=arrivals)
        have = {(q.namespace, q.name) for q in snapshot.quotas.local_queues}
        made = {
            (tenant_namespace(j.tenant_id), j.queue_name): LocalQueue(
                cluster_id=cluster_id,
                name=j.queue_name,
                namespace=tenant_namespace(j.tenant_id),
                tenant_id=j.tenant_id,
                cluster_queue=cluster_queue,
                created_at=snapshot.now,
            )
            for j in arrivals
            if (tenant_namespace(j.tenant_id), j.queue_name) not in have
        }
        if made:
            local = (*snapshot.quotas.local_queues, *made.values())
            snapshot = replace(snapshot, quotas=replace(snapshot.quotas, local_queues=local))
        schedule = await self._compute.run(estimate, snapshot)
        evicted = Counter(p.preempted_at for p in schedule.jobs.values() if p.preempted_at)
        return {
            j.id: Arrival(plan, evicted[plan.start] if plan.start else 0)
            for j in arrivals
            if (plan := schedule.jobs.get(j.id)) is not None
        }

    async def accuracy(self, cluster_id: ClusterId, *, since: datetime | None = None) -> Accuracy:
        after = since or self._clock.now() - timedelta(days=30)
        async with self._uow(TenantScope.system()) as uow:
            finished = await uow.jobs.finished_on_cluster(
                cluster_id, ended_after=after, limit=100_000
            )
        return measure(finished)

    async def calibration(self, cluster_id: ClusterId) -> Calibration:
        """The cluster's record of estimates at submission against real starts (the jobs that
        ended in the last `CALIBRATION_PAST`, and those that started or still wait past their
        estimate among the active jobs the last recompute read), read at most once per
        `CALIBRATION_TTL`."""
        now = self._clock.now()
        cached = self._calibrations.get(cluster_id)
        if (
            cached is not None
            and now - cached[0] < CALIBRATION_TTL
            and cached[1].size(waits=True) + cached[1].size(waits=False) >= 2 * MIN_SCORES
        ):
            return cached[1]  # a short record is read again: a young cluster's fills fast
        async with self._uow(TenantScope.system()) as uow:
            finished = await uow.jobs.finished_on_cluster(
                cluster_id, ended_after=now - CALIBRATION_PAST, limit=CALIBRATION_JOBS
            )
        # what the last recompute read (no statement of its own): the active jobs, and the
        # spread of start-up times learned with the durations
        held = self._actives.get(cluster_id)
        active = list(held.jobs.values()) if held is not None else []
        learned = self._learned.get(cluster_id)
        floor = learned.startup_spread if learned is not None else timedelta(0)
        record = [
            WindowOutcome(
                job.created_at,
                job.submission_estimate.start,
                job.actual_start,
                wide=job.resources.total_pods > 1,
            )
            for job in [*finished, *active]  # a job that started counts, ended or not
            if job.submission_estimate is not None
            and job.submission_estimate.start is not None
            and job.actual_start is not None
        ]
        grace = late_grace(floor)
        record += [  # still waiting well past the start estimated for it: a lower bound
            WindowOutcome(
                job.created_at,
                job.submission_estimate.start,
                now,
                wide=job.resources.total_pods > 1,
                censored=True,
            )
            for job in active
            if job.status in timelines.WAITING
            and job.submission_estimate is not None
            and job.submission_estimate.start is not None
            and job.submission_estimate.start < now - grace
        ]
        record.sort(key=lambda o: o.actual)
        calibration = Calibration(record, floor=floor)
        self._calibrations[cluster_id] = (now, calibration)
        return calibration

    async def start_window(
        self,
        cluster_id: ClusterId,
        start: datetime | None,
        confidence: float,
        *,
        wide: bool = False,
    ) -> Window | None:
        """Where a waiting job estimated to start at `start` will start, with probability
        `confidence`; None while the cluster's record is too short (or nothing is estimated).
        `wide`: the job asks more than one node."""
        if not 0.0 < confidence < 1.0:
            raise ValueError("confidence must be between 0 and 1, exclusive")
        if start is None:
            return None
        calibration = await self.calibration(cluster_id)
        return calibration.window(self._clock.now(), start, confidence, wide=wide)

    async def estimate_of(self, job_id: JobId) -> Estimate | None:
        async with self._uow(TenantScope.system()) as uow:
            job = await uow.jobs.get(job_id)
        if job is None or job.estimate_reason is None:
            return None
        return Estimate(
            job.estimated_start, job.estimated_end, job.estimate_reason, job.estimate_warnings
        )


class TimelineRefresher:
    """Keeps one cluster's timeline fresh: after every event of the cluster (bursts coalesce into
    one recompute), and every `period` anyway, as time moves estimates along.

    A recompute is not started sooner after the last one ended than that one took: under a
    stream of changes (a client submitting hundreds of jobs) at most half of the process's time
    goes to recomputing, and the rest to serving the changes. That pacing lasts only while the
    changes go on: once none came for a quarter of the last recompute's time (`QUIET_SHARE`),
    the stream has ended and the recompute starts, so the timeline lags the last change of a
    stream by what is left of the recompute under way, that quiet and one recompute. A change
    after a quiet spell waits only the debounce."""

    def __init__(
        self,
        service: TimelineService,
        hub: EventHub,
        clock: Clock,
        *,
        debounce_seconds: float = 0.05,
        period_seconds: float = 30.0,
    ) -> None:
        self._service = service
        self._hub = hub
        self._clock = clock
        self._debounce = debounce_seconds
        self._period = period_seconds
        self.refreshes = 0

    async def run(self, cluster_id: ClusterId) -> None:
        dirty = asyncio.Event()
        dirty.set()
        live = await self._hub.subscribe(cluster_id, buffer=1024)

        changed = [self._clock.now()]
        """When the last change that dirties the timeline came: has a stream gone quiet?"""

        async def listen() -> None:
            async for item in live:
                if isinstance(item, Overflowed) or item.affects_schedule:
                    dirty.set()
                    changed[0] = self._clock.now()

        listener = asyncio.create_task(listen())
        took = 0.0
        ended = self._clock.now()
        try:
            while True:
                await wait_event(dirty, self._period, sleep=self._clock.sleep)
                # let a burst end (one recompute for it), and, in a stream of changes, the
                # process serve them as long as the last recompute took, or until they stop
                since = (self._clock.now() - ended).total_seconds()
                pace = max(self._debounce, took - since)
                quiet = max(self._debounce, took / QUIET_SHARE)
                deadline = self._clock.now() + timedelta(seconds=pace)
                await self._clock.sleep(min(self._debounce, pace))
                while (left := (deadline - self._clock.now()).total_seconds()) > 0:
                    still = quiet - (self._clock.now() - changed[0]).total_seconds()
                    if still <= 0:
                        break
                    await self._clock.sleep(min(still, left))
                dirty.clear()
                began = self._clock.now()
                try:
                    await self._service.refresh(cluster_id)
                    self.refreshes += 1
                except Exception:
                    log.exception("refreshing the timeline of cluster %s failed", cluster_id)
                    await self._clock.sleep(1.0)
                ended = self._clock.now()
                took = min(MAX_PACING, (ended - began).total_seconds())
        finally:
            await cancel_and_wait([listener])
            await live.close()
