"""The Job type and its parts."""

from __future__ import annotations

import uuid
from datetime import datetime
from decimal import Decimal

import strawberry
from strawberry.scalars import JSON

from domain.model import job as model
from domain.model.drain import grace_of
from domain.model.ids import ClusterId, JobId
from domain.services.queue_positions import PositionQuery
from schema.context import Info
from schema.types.cluster import Cluster
from schema.types.derive import derive
from schema.types.dispatch import JobMove
from schema.types.enums import (
    BudgetAction,
    BudgetScope,
    DeploymentType,
    JobPriority,
    JobStatus,
    JobType,
    SourceKind,
)
from schema.types.placement import Placement
from schema.types.secrets import SecretRef
from schema.types.windows import WINDOW_DESCRIPTION, StartWindow, kept_window, start_window


@strawberry.type(description="One pod set of a job: podCount pods of one shape.")
class PodSet:
    name: str = strawberry.field(description='"main" for the job\'s own pod set.')
    pod_count: int
    gpu_count: int = strawberry.field(description="GPUs per pod, of the job's gpuType.")
    cpu_cores: float = strawberry.field(description="Cores per pod.")
    memory_gb: float = strawberry.field(description="GB of memory per pod.")


@strawberry.type
class Resources:
    gpu_type: str | None
    gpu_count: int = strawberry.field(description="GPUs per pod.")
    cpu_cores: float = strawberry.field(description="Cores per pod.")
    memory_gb: float = strawberry.field(description="GB of memory per pod.")
    storage_gb: int | None
    pod_count: int = strawberry.field(
        description="Pods of the job, each on one node, admitted all or nothing."
    )
    pod_sets: list[PodSet] = strawberry.field(
        description='Every pod set of the job, its own ("main": podCount pods of the fields '
        "above) first, then its further ones; admitted together or not at all."
    )
    total_gpus: int = strawberry.field(
        description="GPUs of the whole job: gpuCount x podCount, plus those of its further pod "
        "sets."
    )

    @classmethod
    def from_domain(cls, resources: model.Resources) -> Resources:
        return derive(cls, resources, pod_sets=[derive(PodSet, p) for p in resources.all_pod_sets])


@strawberry.type
class JobSource:
    kind: SourceKind
    source_id: str | None


@strawberry.type(description="A daily window, in UTC, in which a job may start.")
class TimeWindow:
    start: str = strawberry.field(description="HH:MM, UTC.")
    end: str = strawberry.field(description="HH:MM, UTC; before start means across midnight.")


@strawberry.type(description="When the schedule estimator expects a job to start and end, and why.")
class Estimate:
    start: datetime | None = strawberry.field(description="Null while it cannot be known.")
    end: datetime | None
    reason: str
    warnings: list[str] = strawberry.field(
        description="Problems found at once: NEVER_FITS, MISSES_DEADLINE, DEPENDENCY_FAILED."
    )
    waiting_on: strawberry.Private[ClusterId | None] = None
    """The cluster of a job that waits (a window is shown for it), else None."""
    wide: strawberry.Private[bool] = False
    """The job asks more than one node."""
    windows: strawberry.Private[tuple[tuple[float, datetime, datetime | None], ...]] = ()
    """A submission estimate's windows, as shown at submission (`model.Estimate.windows`)."""

    @strawberry.field(  # type: ignore[untyped-decorator]
        description=WINDOW_DESCRIPTION
        + " On submissionEstimate: the window shown at submission, kept with it (at 0.5, 0.8 "
        "and 0.95; null at another confidence, or if the record was too short then)."
    )
    async def start_window(self, info: Info, confidence: float = 0.8) -> StartWindow | None:
        if self.windows:
            return kept_window(self.windows, confidence)
        return await start_window(info, self.waiting_on, self.start, confidence, wide=self.wide)

    @classmethod
    def from_domain(cls, estimate: model.Estimate | None) -> Estimate | None:
        return None if estimate is None else derive(cls, estimate)


@strawberry.type(description="One status transition of one attempt of a job.")
class JobEvent:
    attempt: int
    from_status: JobStatus | None
    to_status: JobStatus
    reason: str
    at: datetime

    @classmethod
    def from_domain(cls, event: model.JobEvent) -> JobEvent:
        return derive(cls, event)


@strawberry.type(
    description="Where Kueue holds a queued job: its own order of the job's LocalQueue and of "
    "the ClusterQueue behind it (Kueue's visibility API). Positions count from 0 (0 is "
    "considered next); Kueue gives positions, not times: the job's estimate gives times."
)
class KueueQueuePosition:
    local_queue: str
    position_in_local_queue: int
    position_in_cluster_queue: int
    pending_in_local_queue: int = strawberry.field(
        description="Workloads pending in that LocalQueue (Kueue lists at most 1000)."
    )
    priority: int = strawberry.field(description="The priority value Kueue orders it by.")
    observed_at: datetime = strawberry.field(
        description="When the cluster was asked (answers are reused for a few seconds)."
    )


@strawberry.type(
    description="A job's cost against its budget: `share` % of budgetLimit reached (80 or "
    "100), or, `expected`, what it was expected to cost when submitted (over its budget)."
)
class BudgetNotice:
    share: int
    cost: Decimal
    limit: Decimal
    action: BudgetAction
    expected: bool
    message: str
    scope: BudgetScope = strawberry.field(
        description="Whose budget: the job's own, or its project's or tenant's (then `limit` "
        "is that budget's for its period, and `spent` what it had spent)."
    )
    spent: Decimal | None = strawberry.field(
        description="A project's or tenant's budget: what it had spent this period."
    )

    @classmethod
    def from_domain(cls, notice: model.BudgetNotice) -> BudgetNotice:
        return cls(
            share=notice.share,
            cost=notice.cost,
            limit=notice.limit,
            action=notice.action,
            expected=notice.expected,
            message=notice.message,
            scope=notice.scope,
            spent=notice.spent,
        )


@strawberry.type
class Job:
    id: strawberry.ID
    name: str
    tenant_id: strawberry.ID
    project_id: strawberry.ID
    cluster_id: strawberry.ID
    source: JobSource
    job_type: JobType
    deployment_type: DeploymentType
    spec: JSON
    resources: Resources
    estimated_duration_seconds: int | None
    max_duration_seconds: int | None
    termination_grace_period_seconds: int = strawberry.field(
        description="Seconds its containers get between SIGTERM and being killed (a drain's "
        "checkpoint signal): as submitted, else 30 (Kubernetes' default)."
    )
    secrets: list[SecretRef] = strawberry.field(
        description="The secrets of its tenant's its containers get (names, never values)."
    )
    deadline: datetime | None
    priority: JobPriority
    preemptible: bool
    status: JobStatus
    status_message: str | None
    retry_count: int
    max_retries: int
    attempt: int = strawberry.field(description="0 for the first run, then one more per retry.")
    estimated_start: datetime | None
    estimated_end: datetime | None
    actual_start: datetime | None
    actual_end: datetime | None
    estimated_cost: Decimal | None = strawberry.field(
        description="Expected GPU-hours (core-hours without GPUs) times the cluster's hourly "
        "price per GPU type: in US dollars at list prices, unless the cluster's "
        "gpu_hourly_prices set another currency."
    )
    actual_cost: Decimal | None = strawberry.field(
        description="What the job's ended runs cost, in the unit of estimatedCost: each run "
        "metered per second, from RUNNING to its end, its GPUs (cores without GPUs) times the "
        "price in force at each moment; preempted and failed runs count. Null until a run ends."
    )
    budget_limit: Decimal | None = strawberry.field(
        description="The most the job may cost, in the unit of estimatedCost."
    )
    budget_action: BudgetAction = strawberry.field(
        description="What happens when its cost reaches budgetLimit."
    )
    budget_alerted: int = strawberry.field(
        description="The highest share of its budget (%) it has cost and was said: 0, 80 or 100."
    )
    held_by: BudgetScope | None = strawberry.field(
        description="A PENDING job a budget holds (PAUSE): whose budget. It is not handed to its "
        "cluster until released, and its estimate says when it may start (a project's or "
        "tenant's: the next period at the earliest; its own: not until raised)."
    )
    hold_reason: str | None = strawberry.field(description="Why a budget holds it.")
    outputs: JSON
    idempotency_key: str | None
    placement: Placement | None = strawberry.field(
        description="Where its first pod runs (see placements for every pod)."
    )
    placements: list[Placement] = strawberry.field(
        description="Where each of its pods runs, one per pod; empty while it holds nothing."
    )
    next_attempt_at: datetime | None = strawberry.field(
        description="When a retried job is next handed to its cluster."
    )
    queue_name: str = strawberry.field(description="The LocalQueue, in your namespace.")
    window: TimeWindow | None
    depends_on: list[strawberry.ID] = strawberry.field(
        description="Jobs that must complete before this one may start."
    )
    reservation_id: strawberry.ID | None
    fleet_id: strawberry.ID | None = strawberry.field(
        description="The fleet it was submitted to: it waits on one member (clusterId) and may "
        "move to another before it is admitted (moves)."
    )
    dispatched_via: strawberry.ID | None = strawberry.field(
        description="Its fleet's MultiKueue manager cluster, where its Kubernetes objects are: "
        "Kueue runs it on clusterId, which budcluster nominated."
    )
    estimate: Estimate | None = strawberry.field(
        description="The latest estimate (estimatedStart and estimatedEnd with the reason); "
        "null until the job was first estimated."
    )
    submission_estimate: Estimate | None = strawberry.field(
        description="The first estimate of this attempt, kept to measure accuracy."
    )
    admission_estimate: Estimate | None = strawberry.field(
        description="The estimate when the job was admitted."
    )
    created_at: datetime
    updated_at: datetime
    position_query: strawberry.Private[PositionQuery]
    under_way: strawberry.Private[model.Job | None]
    """The job, while it runs (its cost so far grows with time)."""

    @strawberry.field
    async def cluster(self, info: Info) -> Cluster | None:
        found = await info.context.loaders.cluster.load(ClusterId(uuid.UUID(self.cluster_id)))
        return Cluster.from_domain(found) if found else None

    @strawberry.field(  # type: ignore[untyped-decorator]
        description="Its moves between members of its fleet, oldest first."
    )
    async def moves(self, info: Info) -> list[JobMove]:
        found = await info.context.loaders.job_moves.load(JobId(uuid.UUID(self.id)))
        return [JobMove.from_domain(m) for m in found]

    @strawberry.field(description="The job's history: every transition of every attempt.")  # type: ignore[untyped-decorator]
    async def events(self, info: Info) -> list[JobEvent]:
        found = await info.context.loaders.job_events.load(JobId(uuid.UUID(self.id)))
        return [JobEvent.from_domain(e) for e in found]

    @strawberry.field(  # type: ignore[untyped-decorator]
        description="Kueue's own position of the job while it is QUEUED on a real cluster that "
        "serves Kueue's visibility API, beside budcluster's estimate; null otherwise (not "
        "queued, a simulated cluster, no visibility API, or the cluster not answering)."
    )
    async def kueue_position(self, info: Info) -> KueueQueuePosition | None:
        found = await info.context.loaders.queue_position.load(self.position_query)
        if found is None:
            return None
        return KueueQueuePosition(
            local_queue=found.local_queue,
            position_in_local_queue=found.position_in_local_queue,
            position_in_cluster_queue=found.position_in_cluster_queue,
            pending_in_local_queue=found.pending_in_local_queue,
            priority=found.priority,
            observed_at=found.observed_at,
        )

    @strawberry.field(  # type: ignore[untyped-decorator]
        description="What the job has cost by now: actualCost, and while it runs, its run so "
        "far at the price in force (worked out when read)."
    )
    async def cost_so_far(self, info: Info) -> Decimal | None:
        if self.under_way is None:
            return self.actual_cost
        return await info.context.loaders.cost_so_far.load(self.under_way)

    @classmethod
    def from_domain(cls, job: model.Job) -> Job:
        """Every field from the job's field of the same name (see `derive`), but these."""
        return derive(
            cls,
            job,
            window=(
                TimeWindow(start=f"{job.window.start:%H:%M}", end=f"{job.window.end:%H:%M}")
                if job.window
                else None
            ),
            estimate=(
                Estimate(
                    start=job.estimated_start,
                    end=job.estimated_end,
                    reason=job.estimate_reason,
                    warnings=list(job.estimate_warnings),
                    waiting_on=(
                        job.cluster_id
                        if job.status in (model.JobStatus.PENDING, model.JobStatus.QUEUED)
                        else None
                    ),
                    wide=job.resources.total_pods > 1,
                )
                if job.estimate_reason is not None
                else None
            ),
            retry_count=job.attempt,
            termination_grace_period_seconds=grace_of(job),
            under_way=job if job.status is model.JobStatus.RUNNING else None,
            position_query=PositionQuery(
                job_id=job.id,
                cluster_id=job.cluster_id,
                tenant_id=job.tenant_id,
                queue_name=job.queue_name,
                workload_name=job.workload_name,
                status=job.status,
            ),
        )
