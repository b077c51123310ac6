"""The Job: the atomic unit of GPU work, and the one table of its allowed status transitions.

A job is created PENDING, handed to its cluster (QUEUED), given resources by the cluster's admission
(ADMITTED, the seed's SCHEDULED), runs (RUNNING) and ends COMPLETED, FAILED, CANCELLED or PREEMPTED.
FAILED and PREEMPTED jobs may be retried: a retry is a new attempt of the same job, back to PENDING.
Every transition goes through `Job.transition`, which checks `ALLOWED_TRANSITIONS`, stamps the times
and records a `JobEvent`; the unit of work stores those events with the job, in one transaction, and
turns them into outbox events for subscribers.
"""

from __future__ import annotations

import enum
import itertools
import uuid
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from typing import Any

from domain.errors import InvalidTransition
from domain.model.fleet import JobMove
from domain.model.ids import ClusterId, FleetId, JobId, ProjectId, TenantId
from domain.model.tenant_secret import SecretRef


class JobType(enum.StrEnum):
    SERVICE = "SERVICE"
    BATCH = "BATCH"
    TRAINING = "TRAINING"


class DeploymentType(enum.StrEnum):
    HELM = "HELM"
    DOCKER = "DOCKER"
    MODEL = "MODEL"


class SourceKind(enum.StrEnum):
    DIRECT = "DIRECT"
    PIPELINE = "PIPELINE"
    USECASE = "USECASE"
    DEPLOYMENT = "DEPLOYMENT"
    """A replica of a model deployment (`source_id`): made by budcluster only."""
    BENCHMARK = "BENCHMARK"
    """A benchmark's run (`source_id`): made by budcluster only."""


MANAGED_SOURCES = frozenset({SourceKind.DEPLOYMENT, SourceKind.BENCHMARK})


class JobPriority(enum.StrEnum):
    CRITICAL = "CRITICAL"
    HIGH = "HIGH"
    NORMAL = "NORMAL"
    LOW = "LOW"
    SPOT = "SPOT"


class JobStatus(enum.StrEnum):
    PENDING = "PENDING"
    QUEUED = "QUEUED"
    ADMITTED = "ADMITTED"
    RUNNING = "RUNNING"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"
    PREEMPTED = "PREEMPTED"

    @property
    def is_active(self) -> bool:
        """Holds or waits for cluster resources."""
        return self in _ACTIVE

    @property
    def is_finished(self) -> bool:
        """Done for good unless someone retries it (COMPLETED and CANCELLED never are)."""
        return self in (JobStatus.COMPLETED, JobStatus.FAILED, JobStatus.CANCELLED)


_ACTIVE = frozenset({JobStatus.PENDING, JobStatus.QUEUED, JobStatus.ADMITTED, JobStatus.RUNNING})

S = JobStatus
ALLOWED_TRANSITIONS: dict[JobStatus, frozenset[JobStatus]] = {
    S.PENDING: frozenset({S.QUEUED, S.CANCELLED, S.FAILED}),
    S.QUEUED: frozenset({S.ADMITTED, S.CANCELLED, S.FAILED, S.PREEMPTED, S.PENDING}),
    S.ADMITTED: frozenset({S.RUNNING, S.QUEUED, S.CANCELLED, S.FAILED, S.PREEMPTED}),
    S.RUNNING: frozenset({S.COMPLETED, S.FAILED, S.CANCELLED, S.PREEMPTED}),
    S.FAILED: frozenset({S.PENDING}),
    S.PREEMPTED: frozenset({S.PENDING, S.CANCELLED}),
    S.COMPLETED: frozenset(),
    S.CANCELLED: frozenset(),
}
"""The one table of allowed transitions. ADMITTED -> QUEUED is Kueue releasing a reservation;
QUEUED -> PENDING is budcluster taking a workload back when its time window closed."""


MAIN_POD_SET = "main"
"""The name of a job's own pod set (Kueue names a batch Job's one pod set so)."""


@dataclass(frozen=True)
class PodSet:
    """A further pod set of a job (Kueue's PodSet: a JobSet's replicated job, a LeaderWorkerSet's
    leader or workers, an MPI launcher): `pod_count` pods of one shape. A job's pod sets are
    admitted all or nothing, together, each on a flavor of its own; their GPUs are of the job's
    GPU type (`Resources.gpu_type`)."""

    name: str
    pod_count: int = 1
    gpu_count: int = 0
    """GPUs per pod."""
    cpu_cores: float = 1.0
    memory_gb: float = 4.0


@dataclass(frozen=True)
class Resources:
    """What one pod asks for, and how many such pods the job runs (a Kueue pod set, named
    `MAIN_POD_SET`: `pod_count` pods of `gpu_count` GPUs each, admitted all or nothing, each on
    one node), and the job's further pod sets, if it has any (`pod_sets`)."""

    gpu_type: str | None = None
    gpu_count: int = 0
    """GPUs per pod."""
    cpu_cores: float = 1.0
    memory_gb: float = 4.0
    storage_gb: int | None = None
    pod_count: int = 1
    pod_sets: tuple[PodSet, ...] = ()
    """Pod sets after the job's own, in the order Kueue assigns them flavors."""

    @property
    def all_pod_sets(self) -> tuple[PodSet, ...]:
        """Every pod set of the job, its own (`MAIN_POD_SET`) first."""
        own = PodSet(MAIN_POD_SET, self.pod_count, self.gpu_count, self.cpu_cores, self.memory_gb)
        return (own, *self.pod_sets)

    @property
    def total_gpus(self) -> int:
        return self.gpu_count * self.pod_count + sum(
            p.gpu_count * p.pod_count for p in self.pod_sets
        )

    @property
    def total_cpu_cores(self) -> float:
        return self.cpu_cores * self.pod_count + sum(
            p.cpu_cores * p.pod_count for p in self.pod_sets
        )

    @property
    def total_memory_gb(self) -> float:
        return self.memory_gb * self.pod_count + sum(
            p.memory_gb * p.pod_count for p in self.pod_sets
        )

    @property
    def total_pods(self) -> int:
        return self.pod_count + sum(p.pod_count for p in self.pod_sets)

    @property
    def pod_gpus(self) -> tuple[int, ...]:
        """GPUs of each pod, in the order admission places them and the placements list them:
        the first pod set that asks GPUs first, then the others in their order."""
        sets = list(self.all_pod_sets)
        lead = next((i for i, p in enumerate(sets) if p.gpu_count), 0)
        sets.insert(0, sets.pop(lead))
        return tuple(p.gpu_count for p in sets for _ in range(p.pod_count))

    @property
    def widest_pod(self) -> int:
        """The most GPUs any one pod of the job asks."""
        return max((p.gpu_count for p in self.all_pod_sets), default=0)


@dataclass(frozen=True)
class JobSource:
    kind: SourceKind = SourceKind.DIRECT
    source_id: str | None = None


@dataclass(frozen=True)
class TimeWindow:
    """A daily window, in UTC, in which a job may start (e.g. 22:00 to 06:00, across midnight)."""

    start: time
    end: time

    def contains(self, moment: datetime) -> bool:
        now = moment.astimezone(UTC).time().replace(tzinfo=None)
        if self.start < self.end:
            return self.start <= now < self.end
        return now >= self.start or now < self.end

    def next_open(self, moment: datetime) -> datetime:
        """`moment` if the window is open then, else when it next opens."""
        if self.contains(moment):
            return moment
        moment = moment.astimezone(UTC)
        opening = moment.replace(
            hour=self.start.hour, minute=self.start.minute, second=0, microsecond=0
        )
        return opening if opening > moment else opening + timedelta(days=1)

    def closes_after(self, moment: datetime) -> datetime:
        """When the window that is open at `moment` closes."""
        moment = moment.astimezone(UTC)
        closing = moment.replace(
            hour=self.end.hour, minute=self.end.minute, second=0, microsecond=0
        )
        return closing if closing > moment else closing + timedelta(days=1)

    def __str__(self) -> str:
        return f"{self.start:%H:%M}-{self.end:%H:%M} UTC"


@dataclass(frozen=True)
class Estimate:
    """When the schedule estimator expects a job to start and end, and why it waits."""

    start: datetime | None
    end: datetime | None
    reason: str
    warnings: tuple[str, ...] = ()
    """NEVER_FITS, MISSES_DEADLINE, DEPENDENCY_FAILED: problems found at once, not left waiting."""
    windows: tuple[tuple[float, datetime, datetime | None], ...] = ()
    """(confidence, earliest, latest or None: no later bound) start windows shown with it; kept
    on a submission estimate to measure their coverage."""


@dataclass(frozen=True)
class Placement:
    """Where the cluster put the job: a node, the GPU indices on it, and the ResourceFlavor
    whose quota it was admitted against."""

    node: str
    gpu_indices: tuple[int, ...] = ()
    flavor: str | None = None


@dataclass(frozen=True)
class RunRecord:
    """One finished run of a job, as duration learning sees it: how long it ran (job time)
    beside what its user estimated."""

    tenant_id: TenantId
    name: str
    job_type: JobType
    gpu_type: str | None
    gpu_count: int
    """GPUs of the whole job (all its pods)."""
    seconds: float
    estimated: float | None = None
    finished: bool = True
    """False: a run still going, `seconds` its time so far (not learned from: see
    `domain.scheduling.durations`)."""
    failed: bool = False
    """An attempt that failed after running `seconds` (its job was retried or gave up)."""


@dataclass(frozen=True)
class JobEvent:
    """One transition of one attempt of a job: the job's history is the list of these."""

    job_id: JobId
    attempt: int
    from_status: JobStatus | None
    to_status: JobStatus
    reason: str
    at: datetime


_RECORDED = itertools.count()
CONTAINER_RESTARTS = "container_restarts"
"""The key in `Job.outputs` of its containers' restarts (`Job.report_restarts`)."""


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment else None


class ChangeKind(enum.StrEnum):
    SUBMITTED = "SUBMITTED"
    TRANSITION = "TRANSITION"
    PRIORITY_CHANGED = "PRIORITY_CHANGED"
    PLACED = "PLACED"
    """Where it runs changed (a real cluster may report the node after RUNNING), or how often
    its containers were restarted there."""
    BUDGET = "BUDGET"
    """Its cost reached 80 % or 100 % of its budget, or is expected to pass it
    (`JobChanged.budget` says which); or, with no notice, its budget was changed."""
    MOVED = "MOVED"
    """It moved to another member of its fleet before admission (`JobChanged.moved_from`):
    said on the stream of the cluster it left (`on_cluster`) and of the one it joined."""


class BudgetAction(enum.StrEnum):
    """What happens when a job's cost reaches its budget (`Job.budget_limit`)."""

    WARN = "WARN"
    """Say so (the job's events, audit, metrics) and let it run."""
    PAUSE = "PAUSE"
    """Hold it PENDING at submission when it is expected to cost more; once it has, take it
    back from its cluster as a preemption does (not a failure: no retry is used) and hold it
    until its budget allows (a raised limit; for a project's or tenant's, a new period)."""
    CANCEL = "CANCEL"
    """Refuse it at submission when it is expected to cost more; cancel it once it has."""


class BudgetScope(enum.StrEnum):
    """Whose budget: a job's own (`Job.budget_limit`), or a project's or tenant's per period
    (`domain.model.budget.Budget`)."""

    JOB = "JOB"
    PROJECT = "PROJECT"
    TENANT = "TENANT"


BUDGET_WARNING_SHARE = 80
"""The share of its budget (%) at which a job's cost is first said, then at 100 %: the
notices issue 32 asks for (a warning before the limit, early enough to act on)."""


@dataclass(frozen=True)
class BudgetNotice:
    """A job's cost against its budget: `share` % reached (80 or 100), or, `expected`, what it
    is expected to cost at submission."""

    share: int
    cost: Decimal
    limit: Decimal
    action: BudgetAction
    expected: bool = False
    scope: BudgetScope = BudgetScope.JOB
    spent: Decimal | None = None
    """A project's or tenant's budget: what it had spent in its period when this was said
    (`cost` is then the job's expected cost with `expected`, else the budget's spend)."""

    @property
    def message(self) -> str:
        if self.scope is not BudgetScope.JOB:
            whose = f"its {self.scope.value.lower()}'s budget"
            spent = self.cost if self.spent is None else self.spent
            said = f"{whose} of {self.limit:.2f} this period has {spent:.2f} spent"
            if self.expected:
                return f"expected to cost {self.cost:.2f}; {said} ({self.action.value})"
            return f"{said}, {self.share} % ({self.action.value})"
        if self.expected:
            return (
                f"expected to cost {self.cost:.2f}, over its budget of {self.limit:.2f} "
                f"({self.action.value})"
            )
        return (
            f"has cost {self.cost:.2f}, {self.share} % of its budget of {self.limit:.2f} "
            f"({self.action.value})"
        )


@dataclass(frozen=True)
class JobChanged:
    """A domain event: a job's state changed. Written to the outbox with the job's new state."""

    kind: ChangeKind
    job: Job
    transition: JobEvent | None = None
    previous_priority: JobPriority | None = None
    metered: Decimal | None = None
    """What the run this transition ended cost (`usage_ended`), priced by the unit of work that
    records the end, in the same transaction (`job.actual_cost` includes it)."""
    budget: BudgetNotice | None = None
    """With BUDGET: the cost against the budget."""
    released: bool = False
    """With BUDGET: a budget's hold on the job was lifted (`Job.release`): hand it over."""
    moved_from: ClusterId | None = None
    """With MOVED: the cluster it left (`job.cluster_id` is the one it joined)."""
    on_cluster: ClusterId | None = None
    """The cluster whose stream carries this change, when not the job's: a move is said on
    the cluster it left too."""
    recorded: int = field(default_factory=lambda: next(_RECORDED), compare=False, repr=False)
    """The order changes were made in, in this process: a commit writes its events in it (a
    release applied before an admission is seen before it), whatever order it loaded jobs in."""

    @property
    def cluster_id(self) -> ClusterId:
        """The cluster whose sequence orders this change."""
        return self.on_cluster or self.job.cluster_id

    @property
    def moved(self) -> JobMove | None:
        """With MOVED: the move (on the stream of either cluster)."""
        if self.kind is not ChangeKind.MOVED or self.moved_from is None:
            return None
        job = self.job
        reason = job.status_message or ""
        return JobMove(job.id, job.attempt, self.moved_from, job.cluster_id, job.updated_at, reason)

    @property
    def move(self) -> JobMove | None:
        """With MOVED, as the cluster it joined says it (once per move): the move to record."""
        return None if self.on_cluster else self.moved

    def previous_view(self) -> tuple[JobStatus, JobPriority] | None:
        """The job's status and priority before this change; None if it did not exist."""
        if self.kind is ChangeKind.SUBMITTED:
            return None
        status = self.transition.from_status if self.transition else self.job.status
        assert status is not None
        return status, self.previous_priority or self.job.priority


@dataclass(frozen=True)
class Usage:
    """What one run of a job held, from when the cluster reported it running to the end of the
    run: metered (GPU-seconds, or core-seconds for GPU-less work, times the price) once it ends.
    A preempted or failed run counts: it held the GPUs. Time between admission and RUNNING
    (pods pulling images, waiting for nodes) is not metered: no container of the job ran."""

    job_id: JobId
    attempt: int
    tenant_id: TenantId
    project_id: ProjectId
    cluster_id: ClusterId
    job_type: JobType
    gpu_type: str | None
    gpus: int
    """GPUs of every pod of the run (`held_gpus`)."""
    cpu_cores: float
    started_at: datetime
    ended_at: datetime
    outcome: JobStatus

    @property
    def seconds(self) -> float:
        return max(0.0, (self.ended_at - self.started_at).total_seconds())

    @property
    def day(self) -> date:
        """The UTC day it began on."""
        return self.started_at.astimezone(UTC).date()

    def by_day(self) -> list[Usage]:
        """The run cut at each UTC midnight it crossed: spend is counted on the day it was used."""
        pieces: list[Usage] = []
        start = self.started_at
        while True:
            midnight = datetime.combine(
                start.astimezone(UTC).date() + timedelta(days=1), time(), UTC
            )
            if midnight >= self.ended_at:
                pieces.append(replace(self, started_at=start))
                return pieces
            pieces.append(replace(self, started_at=start, ended_at=midnight))
            start = midnight


def held_gpus(job: Job) -> int:
    """The GPUs a running job's pods hold: every pod set's, since Kueue admits a workload's pod
    sets all or nothing (a real cluster may report a pod's node without its GPU indices, so the
    placements are not counted: they would miss GPUs the pods hold)."""
    return job.resources.total_gpus


def usage_ended(change: JobChanged) -> Usage | None:
    """The run a transition ended (RUNNING to COMPLETED, FAILED, CANCELLED or PREEMPTED), if any."""
    step, job = change.transition, change.job
    if (
        step is None
        or step.from_status is not JobStatus.RUNNING
        or step.to_status is JobStatus.RUNNING
        or job.actual_start is None
    ):
        return None
    return run_of(job, step.attempt, job.actual_start, step.at, step.to_status)


def usage_under_way(job: Job, now: datetime) -> Usage | None:
    """The run of a RUNNING job, as far as it has gone at `now`."""
    if job.status is not JobStatus.RUNNING or job.actual_start is None:
        return None
    return run_of(job, job.attempt, job.actual_start, max(now, job.actual_start), job.status)


def run_of(
    job: Job, attempt: int, started_at: datetime, ended_at: datetime, outcome: JobStatus
) -> Usage:
    gpus = held_gpus(job)
    return Usage(
        job_id=job.id,
        attempt=attempt,
        tenant_id=job.tenant_id,
        project_id=job.project_id,
        cluster_id=job.cluster_id,
        job_type=job.job_type,
        gpu_type=job.resources.gpu_type if gpus else None,
        gpus=gpus,
        cpu_cores=0.0 if gpus else job.resources.total_cpu_cores,
        started_at=started_at,
        ended_at=ended_at,
        outcome=outcome,
    )


@dataclass(eq=False)
class Job:
    id: JobId
    name: str
    tenant_id: TenantId
    project_id: ProjectId
    cluster_id: ClusterId
    job_type: JobType
    deployment_type: DeploymentType
    created_at: datetime
    updated_at: datetime
    source: JobSource = JobSource()
    spec: dict[str, Any] = field(default_factory=dict)
    resources: Resources = Resources()
    estimated_duration_seconds: int | None = None
    max_duration_seconds: int | None = None
    termination_grace_seconds: int | None = None
    """What its containers get between SIGTERM (a drain's checkpoint signal) and being killed,
    as it declares (its pods' terminationGracePeriodSeconds); None: DEFAULT_GRACE_SECONDS."""
    secrets: tuple[SecretRef, ...] = ()
    """The tenant's secrets its containers get (each attempt opens them at its hand-over)."""
    deadline: datetime | None = None
    priority: JobPriority = JobPriority.NORMAL
    preemptible: bool = False
    status: JobStatus = JobStatus.PENDING
    status_message: str | None = None
    attempt: int = 0
    """0 for the first run, then one more per retry (the contract also calls it retryCount)."""
    max_retries: int = 3
    estimated_start: datetime | None = None
    estimated_end: datetime | None = None
    actual_start: datetime | None = None
    actual_end: datetime | None = None
    estimated_cost: Decimal | None = None
    actual_cost: Decimal | None = None
    budget_limit: Decimal | None = None
    budget_action: BudgetAction = BudgetAction.WARN
    budget_alerted: int = 0
    """The highest share of its budget (%) it has cost and was said (`notice_budget`): each is
    said once."""
    held_by: BudgetScope | None = None
    """A PENDING job a budget holds (`hold`): it is not handed to its cluster, and the
    estimator starts it no earlier than `next_attempt_at` (None: not until released)."""
    hold_reason: str | None = None
    outputs: dict[str, Any] = field(default_factory=dict)
    idempotency_key: str | None = None
    placements: tuple[Placement, ...] = ()
    """Where its pods run, one placement per pod (empty while it does not hold resources)."""
    next_attempt_at: datetime | None = None
    queue_name: str = "default"
    """The LocalQueue (in the tenant's namespace) the job is submitted to."""
    window: TimeWindow | None = None
    depends_on: tuple[JobId, ...] = ()
    """Jobs that must complete before this one may start."""
    generation: int = 0
    """Times this attempt was taken back from its cluster (its window closed first): each
    hand-over of an attempt is a workload of its own name."""
    reservation_id: uuid.UUID | None = None
    """A capacity reservation (of the same tenant) the job runs in."""
    estimate_reason: str | None = None
    estimate_warnings: tuple[str, ...] = ()
    submission_estimate: Estimate | None = None
    """The estimate made when the job was submitted, kept to measure accuracy."""
    admission_estimate: Estimate | None = None
    """The estimate made when the job was admitted (its start is the admission time)."""
    fleet_id: FleetId | None = None
    """The fleet it was submitted to: it runs on one member (`cluster_id`) and may move to
    another before it is admitted (`move`)."""
    moves: int = 0
    """Times it moved between members of its fleet."""
    withdraw_from: ClusterId | None = None
    """The cluster whose copy of it must be gone before it is handed over again, after a move
    (never two live copies); cleared by that hand-over."""
    dispatched_via: ClusterId | None = None
    """MultiKueue's manager cluster of its fleet: its objects live there, and Kueue runs it on
    the member `cluster_id` that budcluster nominates (`copy_cluster`)."""
    version: int = 0
    """Bumped on every stored change; guards against lost updates between processes."""

    changes: list[JobChanged] = field(default_factory=list, repr=False, compare=False)
    """Domain events raised since the job was loaded; the unit of work drains them on commit."""

    @property
    def placement(self) -> Placement | None:
        """Where its first pod runs."""
        return self.placements[0] if self.placements else None

    @property
    def copy_cluster(self) -> ClusterId:
        """The cluster its objects are handed to, watched on and taken back from: its own, or
        the MultiKueue manager it is dispatched through."""
        return self.dispatched_via or self.cluster_id

    @property
    def workload_name(self) -> str:
        """Deterministic cluster object name for this attempt: retried tasks never make a second."""
        suffix = f"g{self.generation}" if self.generation else ""
        return f"bud-{self.id.hex[:20]}-a{self.attempt}{suffix}"

    def can_transition_to(self, target: JobStatus) -> bool:
        return target in ALLOWED_TRANSITIONS[self.status]

    def transition(
        self,
        target: JobStatus,
        reason: str,
        at: datetime,
        *,
        placements: tuple[Placement, ...] = (),
    ) -> JobEvent:
        """Move to `target` (checked against ALLOWED_TRANSITIONS), recording the change;
        placements given with ADMITTED or RUNNING are where its pods now run."""
        if not self.can_transition_to(target):
            raise InvalidTransition(self.id, self.status.value, target.value)
        event = JobEvent(self.id, self.attempt, self.status, target, reason, at)
        if placements and target in (JobStatus.ADMITTED, JobStatus.RUNNING):
            self.placements = placements
        self.status = target
        self.status_message = reason
        self.updated_at = at
        if target is JobStatus.RUNNING:
            self.actual_start = at
        if target in (JobStatus.QUEUED, JobStatus.PENDING):
            self.placements = ()
        if target in (
            JobStatus.COMPLETED,
            JobStatus.FAILED,
            JobStatus.CANCELLED,
            JobStatus.PREEMPTED,
        ):
            self.actual_end = at
            self.next_attempt_at = None
        self.changes.append(JobChanged(ChangeKind.TRANSITION, self.snapshot(), event))
        return event

    def record_submission(self) -> JobEvent:
        event = JobEvent(self.id, self.attempt, None, self.status, "submitted", self.created_at)
        self.changes.append(JobChanged(ChangeKind.SUBMITTED, self.snapshot(), event))
        return event

    def begin_retry(self, at: datetime, not_before: datetime, reason: str) -> JobEvent:
        """Start the next attempt: back to PENDING, to be handed to the cluster at `not_before`."""
        if not self.can_transition_to(JobStatus.PENDING):
            raise InvalidTransition(self.id, self.status.value, JobStatus.PENDING.value)
        self.attempt += 1
        self.actual_start = None
        self.actual_end = None
        self.estimated_start = None
        self.estimated_end = None
        self.estimate_reason = None
        self.estimate_warnings = ()
        self.submission_estimate = None
        self.admission_estimate = None
        event = self.transition(JobStatus.PENDING, reason, at)
        self.next_attempt_at = not_before
        self.changes[-1] = replace(self.changes[-1], job=self.snapshot())
        return event

    def hold_back(self, at: datetime, until: datetime, reason: str) -> JobEvent:
        """Take a queued attempt back from its cluster until `until` (its window reopens)."""
        event = self.transition(JobStatus.PENDING, reason, at)
        self.next_attempt_at = until
        self.generation += 1
        self.changes[-1] = replace(self.changes[-1], job=self.snapshot())
        return event

    def move(self, to: ClusterId, reason: str, at: datetime, *, withdraw: bool = True) -> ClusterId:
        """Take a waiting attempt (PENDING or QUEUED) to another member of its fleet: a new
        hand-over of the same attempt (`generation` + 1, so a report about the copy it left is
        stale), handed over once the copy it had is gone (`withdraw_from`: where its copy was,
        its member or its MultiKueue manager; `withdraw` False: that copy cannot be reached,
        see `domain.services.balancing`). Its estimates are of the cluster it left, so they go
        with it. Returns the cluster it left."""
        if self.status not in (JobStatus.PENDING, JobStatus.QUEUED) or self.fleet_id is None:
            raise InvalidTransition(self.id, self.status.value, JobStatus.PENDING.value)
        origin = self.cluster_id
        if self.status is JobStatus.QUEUED:
            if withdraw and self.withdraw_from is None:
                self.withdraw_from = self.copy_cluster  # (one set before: not withdrawn yet)
            self.transition(JobStatus.PENDING, f"moving: {reason}", at)
        self.cluster_id = to
        self.generation += 1
        self.moves += 1
        self.estimated_start = self.estimated_end = None
        self.estimate_reason, self.estimate_warnings = None, ()
        self.submission_estimate = None
        self.status_message = reason
        self.updated_at = at
        snapshot = self.snapshot()
        self.changes.append(
            JobChanged(ChangeKind.MOVED, snapshot, moved_from=origin, on_cluster=origin)
        )
        self.changes.append(JobChanged(ChangeKind.MOVED, snapshot, moved_from=origin))
        return origin

    def admitted_on(self, member: ClusterId, reason: str, at: datetime) -> None:
        """MultiKueue admitted it on another member than the one it was nominated to (its
        `status.clusterName`): it runs there, so it is that member's job from now on, said as
        a move on both clusters' streams (no new hand-over: its objects are the manager's)."""
        origin, self.cluster_id = self.cluster_id, member
        self.moves += 1
        self.status_message, self.updated_at = reason, at
        snapshot = self.snapshot()
        self.changes.append(
            JobChanged(ChangeKind.MOVED, snapshot, moved_from=origin, on_cluster=origin)
        )
        self.changes.append(JobChanged(ChangeKind.MOVED, snapshot, moved_from=origin))

    def notice_budget(self, notice: BudgetNotice, at: datetime) -> None:
        """Say the job's cost against its budget: a share it has cost (once each: 80, then 100),
        or what it is expected to cost at submission (which leaves the shares to be said)."""
        if not notice.expected and notice.scope is BudgetScope.JOB:
            self.budget_alerted = max(self.budget_alerted, notice.share)
        self.updated_at = at
        self.changes.append(JobChanged(ChangeKind.BUDGET, self.snapshot(), budget=notice))

    def hold(self, scope: BudgetScope, reason: str, until: datetime | None, at: datetime) -> None:
        """Hold a PENDING job for a budget: not handed over until released (`release`), and
        not expected to start before `until` (a project's or tenant's new period; None: a
        raised limit alone releases it)."""
        assert self.status is JobStatus.PENDING, self.status
        self.held_by, self.hold_reason, self.next_attempt_at = scope, reason, until
        self.updated_at = at
        if self.changes:  # the change that left it PENDING shows it held
            self.changes[-1] = replace(self.changes[-1], job=self.snapshot())

    def pause(self, scope: BudgetScope, reason: str, until: datetime | None, at: datetime) -> None:
        """Take a queued, admitted or running attempt back for a budget, as a preemption does
        (PREEMPTED: the run is metered and its workload taken back from its cluster), and hold
        it PENDING (`hold`) as a new hand-over of the same attempt: no retry is used."""
        self.transition(JobStatus.PREEMPTED, f"paused: {reason}", at)
        self.transition(JobStatus.PENDING, f"held: {reason}", at)
        self.generation += 1
        self.actual_start = self.actual_end = None
        self.hold(scope, reason, until, at)

    def requeue(self, reason: str, at: datetime) -> None:
        """Take an admitted or running attempt off where it runs, as a drain does, and queue it
        again as a new hand-over of the same attempt (`generation` + 1): no retry is used.
        PREEMPTED (the run so far is metered), then PENDING. Its copy is withdrawn by the
        hand-over that follows (`withdraw_from`), which gives its containers their checkpoint
        signal and grace period (`ClusterGateway.evict`) before the new copy is handed over."""
        if self.status not in (JobStatus.ADMITTED, JobStatus.RUNNING):
            raise InvalidTransition(self.id, self.status.value, JobStatus.PENDING.value)
        self.withdraw_from = self.copy_cluster
        self.transition(JobStatus.PREEMPTED, f"evicted: {reason}", at)
        self.transition(JobStatus.PENDING, f"requeued: {reason}", at)
        self.generation += 1
        self.actual_start = self.actual_end = None
        self.changes[-1] = replace(self.changes[-1], job=self.snapshot())

    def release(self, at: datetime) -> None:
        """Let a held job go: its hand-over follows (reactions: a BUDGET change with
        `released`)."""
        self.held_by = self.hold_reason = None
        self.next_attempt_at = at
        self.updated_at = at
        self.changes.append(JobChanged(ChangeKind.BUDGET, self.snapshot(), released=True))

    def change_budget(self, limit: Decimal | None, action: BudgetAction, at: datetime) -> None:
        """A new budget (None: none): the shares of it are said again as they are reached."""
        self.budget_limit, self.budget_action, self.budget_alerted = limit, action, 0
        self.updated_at = at
        self.changes.append(JobChanged(ChangeKind.BUDGET, self.snapshot()))

    def change_priority(self, priority: JobPriority, at: datetime) -> None:
        previous, self.priority = self.priority, priority
        self.updated_at = at
        self.changes.append(
            JobChanged(ChangeKind.PRIORITY_CHANGED, self.snapshot(), previous_priority=previous)
        )

    def place(self, placements: tuple[Placement, ...], at: datetime) -> bool:
        """Where its pods run, learned without a change of status; True (and the change
        recorded) if it moved."""
        if placements == self.placements:
            return False
        self.placements = placements
        self.updated_at = at
        self.changes.append(JobChanged(ChangeKind.PLACED, self.snapshot()))
        return True

    def report_restarts(self, count: int, last_at: datetime | None, at: datetime) -> bool:
        """How often the current attempt's containers were restarted in place, and when one
        last ended, as its cluster says; True (and the change recorded) if that changed. Kept
        in `outputs` under CONTAINER_RESTARTS, with the attempt it is about."""
        if (count, last_at) == self.container_restarts:
            return False
        report = {"attempt": self.attempt, "count": count, "last_at": _iso(last_at)}
        self.outputs = {**self.outputs, CONTAINER_RESTARTS: report}
        self.updated_at = at
        self.changes.append(JobChanged(ChangeKind.PLACED, self.snapshot()))
        return True

    @property
    def container_restarts(self) -> tuple[int, datetime | None]:
        """The current attempt's container restarts and when one last ended ((0, None) until
        its cluster reports one)."""
        report = self.outputs.get(CONTAINER_RESTARTS)
        if not isinstance(report, dict) or report.get("attempt") != self.attempt:
            return 0, None
        last_at = report.get("last_at")
        return int(report.get("count") or 0), datetime.fromisoformat(last_at) if last_at else None

    def apply_estimate(
        self,
        estimate: Estimate,
        windows: tuple[tuple[float, datetime, datetime | None], ...] = (),
    ) -> bool:
        """Store a new estimate; True if anything a viewer sees changed. The first estimate of
        each attempt is kept as its submission estimate (with the start `windows` shown then),
        the first after admission as its admission estimate."""
        changed = (
            self.estimated_start != estimate.start
            or self.estimated_end != estimate.end
            or self.estimate_reason != estimate.reason
            or self.estimate_warnings != estimate.warnings
        )
        self.estimated_start, self.estimated_end = estimate.start, estimate.end
        self.estimate_reason, self.estimate_warnings = estimate.reason, estimate.warnings
        if self.submission_estimate is None and self.status.is_active:
            self.submission_estimate = replace(estimate, windows=windows)
            changed = True
        if self.admission_estimate is None and self.status in (
            JobStatus.ADMITTED,
            JobStatus.RUNNING,
        ):
            self.admission_estimate = estimate
            changed = True
        return changed

    def snapshot(self) -> Job:
        """An immutable-by-convention copy for events: later changes to self do not leak into it."""
        return replace(self, changes=[], spec=dict(self.spec), outputs=dict(self.outputs))
