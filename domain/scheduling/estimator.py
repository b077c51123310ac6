"""The schedule estimator: when will each job start and end, on which GPUs, and why does it wait.

A pure function of a cluster snapshot. It replays the future with the admission rules the
simulated cluster runs (`domain.scheduling.admission`): running jobs end when their expected
duration is up (a job already past its estimate is extended, never shown ending in the past),
and at every moment something ends, a reservation starts or ends, a time window opens or closes,
or a dependency completes, one admission cycle runs. A job admitted at t holds its GPUs from t
and runs from t + the cluster's start-up for its type (learned, `Durations.startup`), so each
wave of a queue starts one start-up later. Each job gets the start and end of that
replay, the GPU slots it would hold (the rows of the Gantt chart), and the reason it waits now.
Jobs that can never be admitted (no flavor fits, more than the quota can ever give) are flagged
at once; so is a deadline the estimate misses and a dependency that failed.

The cost is one admission cycle per event, and a cycle looks only at what could fit (lanes of
work that changed). Ten thousand waiting jobs on a thousand GPUs take a few seconds on a small
machine, a thousand about half a second (benchmarks/estimator.py, figures in the README); there
is no incremental update yet: one more job is a full replay.
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from domain.model.cluster import Node
from domain.model.ids import JobId
from domain.model.job import Job, JobPriority, JobStatus, Placement, TimeWindow
from domain.model.quota import QuotaSet, tenant_namespace
from domain.model.reservation import CapacityReservation
from domain.scheduling.admission import KUEUE_NEXT_CYCLE, ClusterModel
from domain.scheduling.demand import INFINITE_PRIORITY, Demand, Holding, ask, gang_of
from domain.scheduling.durations import Durations

NEVER_FITS = "NEVER_FITS"
MISSES_DEADLINE = "MISSES_DEADLINE"
DEPENDENCY_FAILED = "DEPENDENCY_FAILED"
HORIZON = timedelta(days=60)
MAX_EVENTS = 2_000_000


@dataclass(frozen=True)
class JobPlan:
    """The estimator's answer for one job."""

    job_id: JobId
    start: datetime | None
    end: datetime | None
    """None with a start: runs until stopped (a service)."""
    placements: tuple[Placement, ...]
    reason: str
    warnings: tuple[str, ...] = ()
    preempted_at: datetime | None = None
    """When the replay expects a higher-priority job to evict this one."""


@dataclass(frozen=True)
class ReservationPlan:
    reservation_id: str
    placements: tuple[Placement, ...]
    start: datetime | None
    end: datetime


@dataclass
class Schedule:
    now: datetime
    jobs: dict[JobId, JobPlan] = field(default_factory=dict)
    queue: list[JobId] = field(default_factory=list)
    """Waiting jobs in admission order (by estimated start, then queue order)."""
    reservations: list[ReservationPlan] = field(default_factory=list)
    free_gpus: dict[str, list[tuple[datetime, int]]] = field(default_factory=dict)
    """Per GPU type: (from this moment, this many GPUs are free) steps over the horizon."""
    cycles: int = 0


@dataclass(frozen=True)
class Snapshot:
    now: datetime
    nodes: Sequence[Node]
    quotas: QuotaSet
    jobs: Sequence[Job]
    """Active jobs of the cluster (PENDING, QUEUED, ADMITTED, RUNNING)."""
    durations: Durations
    reservations: Sequence[CapacityReservation] = ()
    finished: Mapping[JobId, JobStatus] = field(default_factory=dict)
    """Status of finished jobs that active ones depend on (COMPLETED, FAILED, ...)."""
    time_scale: float = 1.0
    """Simulated seconds per real second (simulated clusters): durations shrink by it."""
    eviction_seconds: float = 0.0
    """How long preempted workloads take to be gone (`eviction_seconds`): a preemptor starts
    that much after the cycle that evicted its victims."""


KUBERNETES_GRACE_SECONDS = 30.0
"""A pod's terminationGracePeriodSeconds when its spec sets none (Kubernetes core/v1 PodSpec:
"Defaults to 30 seconds"); budcluster renders its Jobs without one."""


def eviction_seconds(real: bool) -> float:
    """How long a preemption takes to free what its victims hold. Kueue evicts in one cycle and
    admits the preemptor in a later one, once the victims' quota is released: its job
    reconciler suspends each victim's Job and releases the quota reservation only when the Job
    has no active pods left (pkg/controller/jobframework, Kueue ff69552e), so after their pods
    have terminated: at most their termination grace period, which a job that checkpoints on
    SIGTERM uses. A simulated cluster's pods are gone at once, and it admits the preemptor in
    the step of the evictions (0)."""
    return KUBERNETES_GRACE_SECONDS if real else 0.0


def queued_since(job: Job) -> datetime:
    """Where the job's current attempt stands in its queue: a retry, or an attempt taken back
    until its window reopens, is a new workload, handed to the cluster at `next_attempt_at`,
    and Kueue orders it by its creation, behind what queued before it; a first attempt by the
    job's submission."""
    if (job.attempt or job.generation) and job.next_attempt_at is not None:
        return job.next_attempt_at
    return job.created_at


def demand_for(job: Job, quotas: QuotaSet) -> Demand:
    local = quotas.local_queue(tenant_namespace(job.tenant_id), job.queue_name)
    gpu_type = job.resources.gpu_type if job.resources.widest_pod else None
    first = Demand(
        key=str(job.id),
        cluster_queue=local.cluster_queue if local else f"(no local queue {job.queue_name})",
        priority=quotas.priority_value(job.priority),
        created_at=queued_since(job),
        gpu_type=gpu_type,
        gpu_count=job.resources.gpu_count,
        cpu=job.resources.cpu_cores,
        memory=job.resources.memory_gb,
        pods=job.resources.pod_count,
        preemptible=job.preemptible,
        critical=job.priority is JobPriority.CRITICAL,
        reservation=str(job.reservation_id) if job.reservation_id else None,
    )
    return gang_of(first, job.resources.pod_sets)


def reservation_demand(reservation: CapacityReservation, gpu_type: str | None) -> Demand:
    return Demand(
        key=str(reservation.id),
        cluster_queue=reservation.cluster_queue,
        priority=INFINITE_PRIORITY,
        created_at=reservation.start,
        gpu_type=gpu_type,
        gpu_count=reservation.gpu_count,
        cpu=0.0,
        memory=0.0,
        is_reservation=True,
        flavor=reservation.flavor,
    )


class _Replay:
    def __init__(self, snap: Snapshot) -> None:
        self.snap = snap
        self.now = snap.now
        self.model = ClusterModel(snap.nodes, snap.quotas)
        self.jobs = {str(j.id): j for j in snap.jobs}
        self.events: list[tuple[datetime, int, str, str]] = []
        self.seq = 0
        self.start: dict[str, datetime] = {}
        self.admitted: dict[str, datetime] = {}
        self.end: dict[str, datetime | None] = {}
        self.placements: dict[str, tuple[Placement, ...]] = {}
        self.preempted_at: dict[str, datetime] = {}
        self.reasons: dict[str, str] = {}
        self.warnings: dict[str, set[str]] = defaultdict(set)
        self.done: set[str] = {str(k) for k, s in snap.finished.items() if s is JobStatus.COMPLETED}
        self.failed: set[str] = {
            str(k) for k, s in snap.finished.items() if s is not JobStatus.COMPLETED
        }
        self.blocked_on: dict[str, set[str]] = {}
        self.held: set[str] = set()
        """Jobs a budget holds until released: they do not start."""
        self.dependents: dict[str, list[str]] = defaultdict(list)
        self.windows: dict[str, TimeWindow] = {}
        self.demands: dict[str, Demand] = {}
        self.reservation_plans: dict[str, ReservationPlan] = {}
        gpu_type_of_flavor: dict[str, str | None] = {}
        for node in snap.nodes:
            for flavor in snap.quotas.flavors:
                if flavor.matches(node) and node.gpu_count:
                    gpu_type_of_flavor.setdefault(flavor.name, node.gpu_type)
        self.flavor_gpu = gpu_type_of_flavor

    def push(self, at: datetime, kind: str, key: str) -> None:
        self.seq += 1
        heapq.heappush(self.events, (at, self.seq, kind, key))

    def startup(self, job: Job) -> timedelta:
        """Admission to running, in real seconds (measured on the cluster: not scaled)."""
        return timedelta(seconds=self.snap.durations.startup_seconds(job))

    def duration(self, job: Job, elapsed: timedelta | None = None) -> timedelta | None:
        """How long the attempt is expected to hold its GPUs (given it has run `elapsed`), in
        real time: its run time, weighed with how often comparable attempts failed early
        (`Durations.holding`)."""
        scale = self.snap.time_scale
        if elapsed is None:
            seconds = self.snap.durations.holding(job)
        else:
            ran = max(0.0, elapsed.total_seconds()) * scale
            seconds = self.snap.durations.holding_total(job, ran)
        if seconds is None:
            return None
        if job.max_duration_seconds is not None:
            seconds = min(seconds, job.max_duration_seconds)
        return timedelta(seconds=seconds / scale)

    # --- the replay ---------------------------------------------------------------------------

    def run(self) -> Schedule:
        self._seed()
        schedule = Schedule(self.now)
        t = self.now
        horizon = self.now + HORIZON
        free_steps: dict[str, list[tuple[datetime, int]]] = defaultdict(list)
        gpu_types = sorted({n.gpu_type for n in self.snap.nodes if n.gpu_type})
        while True:
            while self.events and self.events[0][0] <= t:
                _, _, kind, key = heapq.heappop(self.events)
                self._handle(kind, key, t)
            decision = self.model.cycle(t, explain=t == self.now)  # reasons: now only
            schedule.cycles += 1
            if decision.again:  # what this cycle kept out may go in Kueue's next one
                self.push(t + KUEUE_NEXT_CYCLE, "cycle", "")
            for holding in decision.preempted:
                self._preempted(holding, t)
            if decision.preemptors and self.snap.eviction_seconds:
                evicted = t + timedelta(seconds=self.snap.eviction_seconds)
                for holding in decision.admitted:
                    preemptor = holding.demand.key in decision.preemptors
                    self._admitted(holding, evicted if preemptor else t)
            else:
                for holding in decision.admitted:
                    self._admitted(holding, t)
            for key, why in decision.never.items():
                self.warnings[key].add(NEVER_FITS)
                self.reasons.setdefault(key, f"never fits: {why}")
            if t == self.now:
                for key, why in decision.waiting.items():
                    self.reasons.setdefault(key, why)
            for gpu_type in gpu_types:
                free = self.model.free_gpus(gpu_type)
                steps = free_steps[gpu_type]
                if not steps or steps[-1][1] != free:
                    steps.append((t, free))
            if not self.events or schedule.cycles > MAX_EVENTS:
                break
            t = self.events[0][0]
            if t > horizon:
                break
        schedule.free_gpus = dict(free_steps)
        return self._answer(schedule)

    def _seed(self) -> None:
        snap = self.snap
        for job in sorted(snap.jobs, key=lambda j: (j.created_at, j.id)):
            key = str(job.id)
            demand = demand_for(job, snap.quotas)
            self.demands[key] = demand
            if job.status in (JobStatus.ADMITTED, JobStatus.RUNNING) and job.placements:
                self._seed_running(job, demand)
        for reservation in snap.reservations:
            if reservation.cancelled_at is not None or reservation.end <= self.now:
                continue
            key = str(reservation.id)
            self.demands[key] = reservation_demand(
                reservation, self.flavor_gpu.get(reservation.flavor)
            )
            self.push(max(reservation.start, self.now), "reservation-start", key)
            self.push(reservation.end, "reservation-end", key)
            self.reservation_plans[key] = ReservationPlan(key, (), None, reservation.end)
        for job in snap.jobs:
            if job.status in (JobStatus.ADMITTED, JobStatus.RUNNING) and job.placements:
                continue
            self._seed_waiting(job)

    def _seed_running(self, job: Job, demand: Demand) -> None:
        key = str(job.id)
        assert job.placement is not None
        flavor = job.placement.flavor
        cpu_flavor = self.model.flavors.cpu_flavor_on(demand.cluster_queue, job.placement.node)
        started = job.actual_start or job.updated_at
        demand = replace(demand, reservation=None)  # counted as its queue's own from here on
        holding = Holding(demand, flavor, cpu_flavor, list(job.placements), started)
        self.model.hold(demand, holding)  # a real cluster's node-only placement gets its GPUs
        self.start[key] = started
        self.placements[key] = tuple(holding.placements)
        if job.status is JobStatus.ADMITTED and job.actual_start is None:
            duration = self.duration(job)  # still starting up
            if duration is None:
                self.end[key] = None
                return
            runs_from = max(self.now, started + self.startup(job))
            end = max(started + self.startup(job) + duration, runs_from + duration)
        else:
            # what is left of it given how long it has run (`Durations.expected_total`): a
            # job past its estimate is not about to end "now"
            total = self.duration(job, elapsed=self.now - started)
            if total is None:
                self.end[key] = None
                return
            end = max(started + total, self.now + timedelta(seconds=1))
        self.end[key] = end
        self.push(end, "end", key)
        self.reasons[key] = "running" if job.status is JobStatus.RUNNING else "starting"

    def _seed_waiting(self, job: Job) -> None:
        key = str(job.id)
        waiting_on = {str(d) for d in job.depends_on} - self.done
        if not waiting_on:
            self._release_when_due(job, key)
            return
        failed = waiting_on & self.failed
        if failed:
            self.warnings[key].add(DEPENDENCY_FAILED)
            self.reasons[key] = f"dependency {sorted(failed)[0]} did not complete"
            return
        unknown = {d for d in waiting_on if d not in self.jobs}
        if unknown:
            self.warnings[key].add(DEPENDENCY_FAILED)
            self.reasons[key] = f"dependency {sorted(unknown)[0]} is not on this cluster"
            return
        self.blocked_on[key] = waiting_on
        self.reasons[key] = f"waits for jobs {', '.join(sorted(waiting_on))}"
        for dep in waiting_on:
            self.dependents[dep].append(key)
        self._release_when_due(job, key)

    def _release_when_due(self, job: Job, key: str) -> None:
        if job.held_by is not None and (
            job.next_attempt_at is None or job.next_attempt_at > self.now + HORIZON
        ):  # a budget holds it until released: it does not start (no start, no plan)
            self.held.add(key)
            self.reasons[key] = job.hold_reason or "held by a budget"
            return
        if job.window is not None:
            self.windows[key] = job.window
        if job.next_attempt_at is not None and job.next_attempt_at > self.now:
            self.push(job.next_attempt_at, "due", key)
            return
        self._maybe_enqueue(key, self.now)

    def _maybe_enqueue(self, key: str, t: datetime) -> None:
        if self.blocked_on.get(key):
            return
        window = self.windows.get(key)
        if window is not None and not window.contains(t):
            self.push(window.next_open(t), "window-open", key)
            return
        if window is not None:
            self.push(window.closes_after(t), "window-close", key)
        self.model.enqueue(self.demands[key])

    def _handle(self, kind: str, key: str, t: datetime) -> None:
        if kind == "end":
            if self.end.get(key) is None or self.end[key] != t or key not in self.model.holdings:
                return
            self.model.release(key)
            self.done.add(key)
            for dependent in self.dependents.pop(key, []):
                waiting = self.blocked_on.get(dependent)
                if waiting is not None:
                    waiting.discard(key)
                    if not waiting:
                        self._maybe_enqueue(dependent, t)
        elif kind in ("due", "window-open"):
            if key not in self.start and not self.model.is_waiting(key):
                self._maybe_enqueue(key, t)
        elif kind == "window-close":
            if self.model.is_waiting(key) and key not in self.start:
                self.model.withdraw(key)
                window = self.windows[key]
                self.push(window.next_open(t), "window-open", key)
        elif kind == "reservation-start":
            self.model.enqueue(self.demands[key])
        elif kind == "reservation-end":
            self.model.withdraw(key)
            holding = self.model.release(key)
            plan = self.reservation_plans[key]
            if holding is not None:
                self.reservation_plans[key] = ReservationPlan(
                    key, tuple(holding.placements), plan.start or holding.since, plan.end
                )

    def _admitted(self, holding: Holding, t: datetime) -> None:
        key = holding.demand.key
        job = self.jobs.get(key)
        if job is None:
            return
        runs_from = t + self.startup(job)  # its GPUs are held from t, it runs from here
        self.admitted[key] = t
        self.start[key] = runs_from
        self.placements[key] = tuple(holding.placements)
        duration = self.duration(job)
        self.end[key] = None if duration is None else runs_from + duration
        if duration is not None:
            self.push(runs_from + duration, "end", key)

    def _preempted(self, holding: Holding, t: datetime) -> None:
        key = holding.demand.key
        self.preempted_at.setdefault(key, t)
        job = self.jobs.get(key)
        self.end[key] = t
        if job is None or job.attempt >= job.max_retries:
            return
        requeued = replace(holding.demand, created_at=t)
        self.demands[key] = requeued
        self.start.pop(key, None)
        self.admitted.pop(key, None)
        self.model.enqueue(requeued)

    # --- the answer -------------------------------------------------------------------------

    def _answer(self, schedule: Schedule) -> Schedule:
        for key, plan in list(self.reservation_plans.items()):
            holding = self.model.holdings.get(key)
            if holding is not None:
                self.reservation_plans[key] = ReservationPlan(
                    key, tuple(holding.placements), holding.since, plan.end
                )
        schedule.reservations = list(self.reservation_plans.values())
        ahead = self._ahead()
        for job in self.snap.jobs:
            key = str(job.id)
            start = self.start.get(key)
            end = self.end.get(key) if start is not None else None
            warnings = set(self.warnings.get(key, ()))
            if (
                job.deadline is not None
                and ((end is not None and end > job.deadline) or start is None)
                and NEVER_FITS not in warnings
            ):
                warnings.add(MISSES_DEADLINE)
            reason = self._reason(job, key, start, ahead)
            schedule.jobs[job.id] = JobPlan(
                job.id,
                start,
                end,
                self.placements.get(key, ()),
                reason,
                tuple(sorted(warnings)),
                self.preempted_at.get(key),
            )
        waiting = [j for j in self.snap.jobs if j.status in (JobStatus.PENDING, JobStatus.QUEUED)]
        far = self.now + HORIZON * 2
        waiting.sort(
            key=lambda j: (schedule.jobs[j.id].start or far, self.demands[str(j.id)].order)
        )
        schedule.queue = [j.id for j in waiting]
        return schedule

    def _ahead(self) -> dict[str, int]:
        by_queue: dict[str, list[Demand]] = defaultdict(list)
        for job in self.snap.jobs:
            if job.status in (JobStatus.PENDING, JobStatus.QUEUED):
                demand = self.demands[str(job.id)]
                by_queue[demand.cluster_queue].append(demand)
        ahead: dict[str, int] = {}
        for demands in by_queue.values():
            demands.sort(key=lambda d: d.order)
            for position, demand in enumerate(demands):
                ahead[demand.key] = position
        return ahead

    def _reason(self, job: Job, key: str, start: datetime | None, ahead: Mapping[str, int]) -> str:
        if job.status in (JobStatus.ADMITTED, JobStatus.RUNNING):
            return self.reasons.get(key, "running")
        if job.held_by is not None:  # a budget holds it (until its next period, or released)
            return job.hold_reason or "held by a budget"
        demand = self.demands[key]
        if NEVER_FITS in self.warnings.get(key, ()) or DEPENDENCY_FAILED in self.warnings.get(
            key, ()
        ):
            return self.reasons[key]
        if start is not None and self.admitted.get(key) == self.now:
            return "admitted now"
        if key in self.blocked_on:
            return self.reasons[key]
        window = self.windows.get(key)
        if window is not None and not window.contains(self.now):
            return f"waits for its window {window}"
        if job.next_attempt_at is not None and job.next_attempt_at > self.now:
            return f"retry backs off until {job.next_attempt_at:%H:%M:%S}"
        why = self.reasons.get(key, "waits for capacity")
        n = ahead.get(key, 0)
        jobs = f"{n} job{'s' if n != 1 else ''}"
        said = f"needs {ask(demand)} in {demand.cluster_queue}; {jobs} ahead ({why})"
        if start is None:
            return f"{said}; {self._never_starts(job, demand)}"
        return said

    def _never_starts(self, job: Job, demand: Demand) -> str:
        """Why a waiting job has no start within the horizon: what still holds GPUs of its type
        when the replay ends, with no end in sight (a service, a deployment's replica), named
        if it is the job's own tenant's (another tenant's are only counted)."""
        gpus = 0
        named: list[str] = []
        others = 0
        for key, holding in self.model.holdings.items():
            holder = self.jobs.get(key)
            if (
                holder is None
                or key == str(job.id)
                or self.end.get(key, self.now) is not None
                or holding.demand.gpu_type != demand.gpu_type
            ):
                continue
            gpus += holding.gpus
            if holder.tenant_id == job.tenant_id:
                named.append(f"{holder.name} ({holder.job_type.value.lower()})")
            else:
                others += 1
        days = f"no start within {HORIZON.days} days"
        if not gpus:
            return f"{days}: capacity it needs does not come free in that time"
        held = sorted(named) + ([f"{others} of other tenants"] if others else [])
        kind = demand.gpu_type or "CPU"
        return f"{days}: {gpus} GPUs of {kind} are held with no end by {', '.join(held)}"


def estimate(snapshot: Snapshot) -> Schedule:
    """Replay the cluster's future from `snapshot`; see the module docstring."""
    return _Replay(snapshot).run()
