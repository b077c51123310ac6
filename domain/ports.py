"""The core's only doors to the outside world.

Each port is a small Protocol. Adapters implement them (SQLAlchemy, Redis, arq, the simulated or
Kubernetes cluster); tests use fakes that satisfy the same Protocols. The composition root
(`budcluster.bootstrap`) chooses which adapter stands behind each port for a given way of running.

Tenant isolation lives here too: a unit of work is opened for a `TenantScope`, and every job read
through it is limited to that tenant by the repository itself, so a resolver cannot forget it.
"""

from __future__ import annotations

import asyncio
import enum
import uuid
from collections.abc import AsyncIterator, Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from types import TracebackType
from typing import Any, Generic, Protocol, Self, TypeVar

from domain.model.audit import AuditCursor, AuditEvent, AuditFilter, AuditPage
from domain.model.benchmark import Benchmark, BenchmarkChanged
from domain.model.cluster import Cluster, HealthCheck, Node
from domain.model.deployment import Deployment, DeploymentChanged, EndpointState
from domain.model.events import Change, ClusterChanged, ServingChange
from domain.model.ids import (
    BenchmarkId,
    ClusterId,
    DeploymentId,
    JobId,
    ProjectId,
    TenantId,
    TokenId,
)
from domain.model.job import (
    DeploymentType,
    Job,
    JobChanged,
    JobEvent,
    JobPriority,
    JobStatus,
    JobType,
    Placement,
    Resources,
    RunRecord,
)
from domain.model.load import LoadPlan, LoadRun, RequestSample
from domain.model.outbound import OutboundUrl, Verdict
from domain.model.principal import ApiToken, Principal
from domain.model.quota import (
    ClusterQueue,
    Cohort,
    LocalQueue,
    QuotaSet,
    ResourceFlavor,
    WorkloadPriorityClass,
    tenant_namespace,
)
from domain.model.reservation import CapacityReservation, ReservationId
from domain.model.secrets import Envelope
from domain.model.timeline import Timeline

# --- time -----------------------------------------------------------------------------------


T = TypeVar("T")


class Compute(Protocol):
    """Runs CPU-heavy pure functions (the estimator, parsing a kubeconfig) off the event loop.
    Arguments and results may be copied to another process: plain data only."""

    async def run(self, fn: Callable[..., T], *args: Any) -> T: ...


@dataclass(frozen=True)
class Bucket:
    """A token bucket: holds up to `capacity` points and gains `per_second` a second."""

    key: str
    capacity: float
    per_second: float


class RateLimiter(Protocol):
    """Token buckets by key, shared by every process that uses the same store."""

    async def take(self, key: str, amount: float) -> float:
        """Take `amount` from `key`'s bucket (of the limiter's own capacity and rate): 0.0 if
        taken, else the seconds until it could be (and nothing is taken)."""
        ...

    async def take_each(self, buckets: Sequence[Bucket], amount: float) -> float:
        """Take `amount` from every one of `buckets`, or from none: 0.0 if taken, else the
        seconds until all could give it (infinite when one never can)."""
        ...


class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, timezone-aware UTC."""

    async def sleep(self, seconds: float) -> None: ...


# --- persistence ----------------------------------------------------------------------------


class AuditRepository(Protocol):
    async def add(self, event: AuditEvent) -> None: ...

    async def settle(self, event: AuditEvent) -> None:
        """The outcome, targets, tenant and project of an event written before its mutation
        ended (its `at` stays)."""
        ...

    async def page(
        self,
        audit_filter: AuditFilter,
        *,
        tenant_id: TenantId | None,
        first: int,
        after: AuditCursor | None = None,
        project_ids: frozenset[ProjectId] | None = None,
        token_id: uuid.UUID | None = None,
    ) -> AuditPage:
        """Newest first; only `tenant_id`'s events unless it is None (an administrator); with
        `project_ids`, only those of them in one of these projects, or made by `token_id`
        (`AuditEvent.seen_by`)."""
        ...

    async def prune(self, before: datetime) -> int: ...


@dataclass(frozen=True)
class TenantScope:
    """Whose data a unit of work may see. `tenant_id=None` is the system (workers, watchers)."""

    tenant_id: TenantId | None

    @classmethod
    def system(cls) -> TenantScope:
        return cls(None)

    @classmethod
    def of(cls, principal: Principal) -> TenantScope:
        """What `principal` may read: its tenant's data, or, for the operator, every tenant's
        (a read still checks the projects: `Principal.may_see`)."""
        return cls.system() if principal.sees_every_tenant else cls(principal.tenant_id)


@dataclass(frozen=True)
class JobFilter:
    statuses: frozenset[JobStatus] = frozenset()
    priorities: frozenset[JobPriority] = frozenset()
    job_types: frozenset[JobType] = frozenset()
    cluster_ids: frozenset[ClusterId] = frozenset()
    project_ids: frozenset[ProjectId] = frozenset()

    def matches(self, job: Job) -> bool:
        return (
            (not self.statuses or job.status in self.statuses)
            and (not self.priorities or job.priority in self.priorities)
            and (not self.job_types or job.job_type in self.job_types)
            and (not self.cluster_ids or job.cluster_id in self.cluster_ids)
            and (not self.project_ids or job.project_id in self.project_ids)
        )


@dataclass(frozen=True)
class JobCursor:
    """Keyset position in the newest-first job listing."""

    created_at: datetime
    job_id: JobId


@dataclass(frozen=True)
class JobPage:
    jobs: list[Job]
    has_next: bool


class JobRepository(Protocol):
    async def add(self, job: Job) -> None:
        """Insert a new job; raises DuplicateIdempotencyKey if its key is taken in its tenant's
        project."""

    async def get(self, job_id: JobId, *, for_update: bool = False) -> Job | None: ...

    async def get_many(
        self, job_ids: Sequence[JobId], *, for_update: bool = False
    ) -> dict[JobId, Job]:
        """The jobs among `job_ids` that exist and are visible; missing ones are left out.
        `for_update` locks them until the commit (in id order: two callers cannot deadlock)."""

    async def get_by_idempotency_key(
        self, tenant_id: TenantId, project_id: ProjectId, key: str
    ) -> Job | None:
        """Keys are the submitter's: one tenant's, in one of its projects."""
        ...

    async def page(
        self, job_filter: JobFilter, *, first: int, after: JobCursor | None = None
    ) -> JobPage: ...

    async def list_for_cluster(
        self, cluster_id: ClusterId, job_filter: JobFilter, *, limit: int
    ) -> list[Job]: ...

    async def active_on_cluster(self, cluster_id: ClusterId) -> list[Job]: ...

    async def active_on_clusters(self, cluster_ids: Sequence[ClusterId]) -> list[Job]:
        """Active jobs (PENDING to RUNNING) of all these clusters, in one statement."""

    async def queued_in_windows(self, cluster_ids: Sequence[ClusterId]) -> list[Job]:
        """QUEUED jobs of these clusters that have a time window (the window sweeper), without
        reading every other waiting job."""

    async def due_for_submission(self, before: datetime, *, limit: int) -> list[Job]:
        """PENDING jobs whose next attempt is due before `before` (the submission sweeper)."""

    async def events(self, job_ids: Sequence[JobId]) -> dict[JobId, list[JobEvent]]: ...

    async def finished_on_cluster(
        self, cluster_id: ClusterId, *, ended_after: datetime, limit: int
    ) -> list[Job]:
        """Jobs of the cluster that ran and ended after `ended_after` (the timeline's past)."""

    async def run_times(
        self, cluster_id: ClusterId, *, limit: int, time_scale: float = 1.0
    ) -> list[RunRecord]:
        """The latest COMPLETED runs on the cluster, newest first: run time (measured seconds
        x `time_scale`, job time) beside the user's estimate."""

    async def startup_times(
        self, cluster_id: ClusterId, *, limit: int
    ) -> list[tuple[JobType, float]]:
        """(job type, seconds from ADMITTED to RUNNING) of the latest attempts that started on
        the cluster: its pods' start-up time (image pull, scheduling, containers starting)."""

    async def store_estimates(self, estimates: Sequence[tuple[Job, bool]]) -> None:
        """Write jobs' estimate fields only (the bool: also their kept submission/admission
        estimates), without touching anything else a concurrent command may be changing."""


class ClusterRepository(Protocol):
    async def add(self, cluster: Cluster) -> None: ...

    async def get(self, cluster_id: ClusterId) -> Cluster | None: ...

    async def get_many(self, cluster_ids: Sequence[ClusterId]) -> dict[ClusterId, Cluster]: ...

    async def get_by_name(self, name: str) -> Cluster | None: ...

    async def all(self) -> list[Cluster]: ...

    async def replace_nodes(self, cluster_id: ClusterId, nodes: Sequence[Node]) -> None: ...

    async def save(self, cluster: Cluster) -> None:
        """Store the cluster's own columns, but not its nodes and not its sealed configuration
        (`swap_configuration`), so a save from a stale read never undoes a re-wrap."""

    async def swap_configuration(
        self, cluster_id: ClusterId, expected: Envelope | None, new: Envelope
    ) -> bool:
        """Store `new` as the sealed configuration if the stored one is still `expected`
        (compare-and-set); False when it has changed meanwhile, or the cluster is gone."""

    async def delete(self, cluster_id: ClusterId) -> None:
        """The cluster and everything of it, its jobs included."""


class QuotaRepository(Protocol):
    """Kueue's objects per cluster, the priority classes, and capacity reservations.

    Objects are keyed as in Kueue: flavors, cluster queues and cohorts by (cluster, name), local
    queues by (cluster, namespace, name). The batch reads take many clusters at once, so a
    listing costs a constant number of statements. Writes of a name that is taken raise
    `Conflict` (code ALREADY_EXISTS).
    """

    async def quota_set(self, cluster_id: ClusterId) -> QuotaSet:
        """Flavors, cluster queues, local queues, cohorts and priority values of one cluster."""

    async def quota_sets(self, cluster_ids: Sequence[ClusterId]) -> dict[ClusterId, QuotaSet]:
        """`quota_set` of each cluster, in a constant number of statements."""

    async def reservations(
        self, cluster_id: ClusterId, *, active_after: datetime
    ) -> list[CapacityReservation]:
        """Reservations not cancelled that end after `active_after`."""

    async def reservations_of(
        self, cluster_ids: Sequence[ClusterId], *, ending_after: datetime
    ) -> list[CapacityReservation]:
        """Reservations (cancelled ones too) of these clusters that end after `ending_after`."""

    async def get_reservation(
        self, reservation_id: ReservationId
    ) -> CapacityReservation | None: ...

    async def add_reservation(self, reservation: CapacityReservation) -> None: ...

    async def cancel_reservation(self, *, reservation_id: ReservationId, at: datetime) -> None: ...

    async def get_flavor(self, *, cluster_id: ClusterId, name: str) -> ResourceFlavor | None: ...

    async def add_flavor(self, flavor: ResourceFlavor) -> None: ...

    async def update_flavor(self, flavor: ResourceFlavor) -> None: ...

    async def delete_flavor(self, *, cluster_id: ClusterId, name: str) -> None: ...

    async def get_cluster_queue(
        self, *, cluster_id: ClusterId, name: str
    ) -> ClusterQueue | None: ...

    async def add_cluster_queue(self, queue: ClusterQueue) -> None: ...

    async def update_cluster_queue(self, queue: ClusterQueue) -> None: ...

    async def delete_cluster_queue(self, *, cluster_id: ClusterId, name: str) -> None: ...

    async def get_local_queue(
        self, *, cluster_id: ClusterId, namespace: str, name: str
    ) -> LocalQueue | None: ...

    async def add_local_queue(self, queue: LocalQueue, *, if_absent: bool = False) -> None:
        """With `if_absent`, a queue of that name already there is kept and no error raised
        (two first submissions racing to create a tenant's default queue both succeed)."""

    async def delete_local_queue(
        self, *, cluster_id: ClusterId, namespace: str, name: str
    ) -> None: ...

    async def get_cohort(self, *, cluster_id: ClusterId, name: str) -> Cohort | None: ...

    async def add_cohort(self, cohort: Cohort) -> None: ...

    async def delete_cohort(self, *, cluster_id: ClusterId, name: str) -> None: ...

    async def priority_classes(self, *, for_update: bool = False) -> list[WorkloadPriorityClass]:
        """Every priority class, highest priority first; `for_update` holds them until commit
        (a change is checked against the others' values)."""

    async def update_priority_class(self, priority_class: WorkloadPriorityClass) -> None: ...


class TokenRepository(Protocol):
    async def add(self, token: ApiToken) -> None: ...

    async def get(self, token_id: TokenId) -> ApiToken | None: ...

    async def revoke(self, token_id: TokenId, at: datetime) -> bool: ...

    async def count(self) -> int: ...

    async def unusable(self, token_ids: Collection[TokenId], now: datetime) -> set[TokenId]:
        """Those of `token_ids` that are revoked, expired at `now`, or unknown."""
        ...


@dataclass(frozen=True)
class Page(Generic[T]):
    items: list[T]
    has_next: bool


class DeploymentRepository(Protocol):
    """Deployments, limited to the unit of work's tenant. `add` and `save` write the events the
    deployment recorded with the same commit; `save` refuses a stale version (Conflict)."""

    async def add(self, deployment: Deployment) -> None: ...

    async def get(
        self, deployment_id: DeploymentId, *, for_update: bool = False
    ) -> Deployment | None: ...

    async def save(self, deployment: Deployment) -> None: ...

    async def on_cluster(self, cluster_id: ClusterId, *, limit: int) -> list[Deployment]:
        """Newest first."""
        ...

    async def with_endpoints(self) -> list[Deployment]:
        """Those not stopped that have an endpoint URL (under the system scope, every
        tenant's: a URL is recognised as a deployment's whoever gives it)."""
        ...

    async def page(
        self,
        *,
        cluster_ids: frozenset[ClusterId],
        project_ids: frozenset[ProjectId] | None,
        statuses: frozenset[str],
        first: int,
        after: JobCursor | None,
    ) -> Page[Deployment]:
        """Newest first; `project_ids` None: every project (of the scope's tenant)."""
        ...


class BenchmarkRepository(Protocol):
    """Benchmarks, limited to the unit of work's tenant (as deployments)."""

    async def add(self, benchmark: Benchmark) -> None: ...

    async def get(
        self, benchmark_id: BenchmarkId, *, for_update: bool = False
    ) -> Benchmark | None: ...

    async def get_many(
        self, benchmark_ids: Sequence[BenchmarkId]
    ) -> dict[BenchmarkId, Benchmark]: ...

    async def save(self, benchmark: Benchmark) -> None: ...

    async def page(
        self,
        *,
        deployment_id: DeploymentId | None,
        project_ids: frozenset[ProjectId] | None,
        first: int,
        after: JobCursor | None,
    ) -> Page[Benchmark]: ...

    async def unfinished(self) -> list[Benchmark]:
        """Every PENDING or RUNNING benchmark (the sweep: runs whose worker died, starts that
        were lost)."""
        ...

    async def save_samples(
        self, benchmark_id: BenchmarkId, samples: Sequence[RequestSample]
    ) -> None: ...

    async def samples(self, benchmark_id: BenchmarkId) -> list[RequestSample] | None: ...


@dataclass(frozen=True)
class StoredEvent:
    """An outbox event as committed: ordered within its cluster by `sequence`."""

    cluster_id: ClusterId
    sequence: int
    change: Change
    occurred_at: datetime

    @property
    def job_change(self) -> JobChanged | None:
        return self.change if isinstance(self.change, JobChanged) else None

    @property
    def cluster_change(self) -> ClusterChanged | None:
        return self.change if isinstance(self.change, ClusterChanged) else None

    @property
    def deployment_change(self) -> DeploymentChanged | None:
        return self.change if isinstance(self.change, DeploymentChanged) else None

    @property
    def benchmark_change(self) -> BenchmarkChanged | None:
        return self.change if isinstance(self.change, BenchmarkChanged) else None

    @property
    def affects_schedule(self) -> bool:
        """Whether the schedule timeline may follow from it: a job's change, or a change of
        what admission depends on (not a timeline of its own, nor a deployment's or benchmark's
        view, whose jobs raise their own events)."""
        if isinstance(self.change, JobChanged):
            return True
        if isinstance(self.change, ClusterChanged):
            return self.change.kind.value != "TIMELINE"
        return False


class EventLog(Protocol):
    """The committed, retained event history of each cluster (the outbox, read side)."""

    async def current_sequence(self, cluster_id: ClusterId) -> int: ...

    async def retained_after(self, cluster_id: ClusterId) -> int:
        """Events with a sequence above this are still held: a `since` below it needs a snapshot."""

    async def read_after(
        self, cluster_id: ClusterId, after: int, *, limit: int
    ) -> list[StoredEvent]: ...


class UnitOfWork(Protocol):
    """One transaction. Domain events of the jobs it touched are stored with the same commit."""

    @property
    def jobs(self) -> JobRepository: ...

    @property
    def clusters(self) -> ClusterRepository: ...

    @property
    def tokens(self) -> TokenRepository: ...

    @property
    def quotas(self) -> QuotaRepository: ...

    @property
    def deployments(self) -> DeploymentRepository: ...

    @property
    def benchmarks(self) -> BenchmarkRepository: ...

    @property
    def audit(self) -> AuditRepository: ...

    async def __aenter__(self) -> Self: ...

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...

    async def commit(self) -> list[StoredEvent]:
        """Commit; returns the events written, stamped with their sequences."""

    async def rollback(self) -> None: ...

    async def current_sequence(self, cluster_id: ClusterId) -> int:
        """The cluster's latest event sequence as this transaction sees it."""

    def record(self, change: ClusterChanged | ServingChange) -> None:
        """Write a cluster, deployment or benchmark event with the commit (a TIMELINE one also
        stores its timeline)."""

    async def latest_timeline(self, cluster_id: ClusterId) -> tuple[int, Timeline] | None:
        """The stored timeline and the event sequence it reflects."""

    async def timeline_sequence(self, cluster_id: ClusterId) -> int | None:
        """The event sequence the stored timeline reflects (without reading the timeline)."""

    async def events_after(
        self, cluster_id: ClusterId, after: int, *, limit: int
    ) -> list[StoredEvent]:
        """The cluster's retained events after `after`, in order, as this transaction sees
        them (at most `limit`)."""


class UnitOfWorkFactory(Protocol):
    def __call__(self, scope: TenantScope, *, consistent_read: bool = False) -> UnitOfWork:
        """`consistent_read` asks for one snapshot across statements (a stamped snapshot)."""


# --- events ---------------------------------------------------------------------------------


class EventPublisher(Protocol):
    async def publish(self, events: Sequence[StoredEvent]) -> None:
        """Announce committed events to every API process. Best effort: subscribers re-read gaps."""


class Overflowed:
    """Marker a live subscription yields when its bounded buffer overflowed and events were lost."""

    def __repr__(self) -> str:
        return "Overflowed()"


class LiveSubscription(Protocol):
    def __aiter__(self) -> AsyncIterator[StoredEvent | Overflowed]: ...

    async def close(self) -> None: ...


class EventHub(Protocol):
    """Per-process fan-out of a cluster's events, in sequence order without gaps."""

    async def subscribe(self, cluster_id: ClusterId, *, buffer: int) -> LiveSubscription: ...


# --- tasks ----------------------------------------------------------------------------------


class RetryTask(Exception):
    """Raised by a task function to be run again after `defer_seconds` (counts as a try)."""

    def __init__(self, defer_seconds: float) -> None:
        super().__init__(f"retry in {defer_seconds:.1f}s")
        self.defer_seconds = defer_seconds


class TaskQueue(Protocol):
    async def enqueue(
        self, task: str, *, key: str, defer_until: datetime | None = None, **kwargs: Any
    ) -> bool:
        """Run `task(**kwargs)` once per `key` (returns False if that key is already queued)."""

    async def answers(self) -> bool:
        """Whether the queue answers now (one cheap round trip, bounded in time)."""


# --- clusters -------------------------------------------------------------------------------


class WorkloadPhase(enum.StrEnum):
    QUEUED = "QUEUED"
    ADMITTED = "ADMITTED"
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    PREEMPTED = "PREEMPTED"
    DELETED = "DELETED"


@dataclass(frozen=True)
class Workload:
    """What budcluster asks a cluster to run: one attempt of one job."""

    job_id: JobId
    attempt: int
    name: str
    tenant_id: TenantId
    job_type: JobType
    priority: JobPriority
    preemptible: bool
    resources: Resources
    created_at: datetime
    deployment_type: DeploymentType = DeploymentType.DOCKER
    estimated_duration_seconds: int | None = None
    max_duration_seconds: int | None = None
    spec: Mapping[str, Any] = field(default_factory=dict)
    namespace: str = ""
    """The tenant's namespace, where its LocalQueues live."""
    queue_name: str = "default"
    reservation_id: uuid.UUID | None = None

    @classmethod
    def of(cls, job: Job) -> Workload:
        return cls(
            job_id=job.id,
            attempt=job.attempt,
            name=job.workload_name,
            tenant_id=job.tenant_id,
            job_type=job.job_type,
            deployment_type=job.deployment_type,
            priority=job.priority,
            preemptible=job.preemptible,
            resources=job.resources,
            created_at=job.created_at,
            estimated_duration_seconds=job.estimated_duration_seconds,
            max_duration_seconds=job.max_duration_seconds,
            spec=dict(job.spec),
            namespace=tenant_namespace(job.tenant_id),
            queue_name=job.queue_name,
            reservation_id=job.reservation_id,
        )


@dataclass(frozen=True)
class WorkloadObservation:
    """What the cluster reports about one workload: its whole current state, not a delta."""

    job_id: JobId
    attempt: int
    phase: WorkloadPhase
    reason: str
    observed_at: datetime
    admitted_at: datetime | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    placements: tuple[Placement, ...] = ()
    """Where its pods run (one per pod), when the cluster says."""
    workload: str | None = None
    """The workload's name: a report about an earlier hand-over of the attempt is stale."""
    restarts: int | None = None
    """Times its containers were restarted in place (its live pods' restart counts, summed);
    None when the cluster does not say."""
    last_restart_at: datetime | None = None
    """When a container of it last ended before being restarted."""


class GatewayUnavailable(Exception):
    """The cluster could not be reached; the caller retries with backoff. `attempt`, when
    known, counts the failures in a row (the stored retry_attempt of a real cluster), so the
    backoff restarts from its first step once the cluster has answered again."""

    def __init__(self, message: str = "", *, attempt: int | None = None) -> None:
        super().__init__(message)
        self.attempt = attempt


@dataclass(frozen=True)
class PendingWorkload:
    """One pending workload in Kueue's own order of a LocalQueue (its visibility API)."""

    owner_kind: str
    """What the Workload was made for: "Job" (a batch Job) or "Pod" (a service's pod)."""
    owner_name: str
    local_queue: str
    position_in_local_queue: int
    """From 0: 0 is the next to be considered."""
    position_in_cluster_queue: int
    priority: int


class ClusterGateway(Protocol):
    async def submit(self, workload: Workload) -> None:
        """Create the workload; a second call with the same name changes nothing."""

    async def cancel(self, job_id: JobId, attempt: int) -> None: ...

    async def set_priority(self, job_id: JobId, attempt: int, priority: JobPriority) -> None: ...

    async def nodes(self) -> list[Node]: ...

    async def list_workloads(self) -> list[WorkloadObservation]: ...

    def watch(self) -> AsyncIterator[list[WorkloadObservation]]:
        """What changes, as it happens; the caller lists first, then watches. Each item holds
        the observations that happened together (an admission cycle: the releases with the
        admissions they made room for), to be applied in one commit; an empty one is a sign of
        life, sent at least every few seconds while the watch is healthy."""

    async def pending_in_queue(self, namespace: str, queue: str) -> list[PendingWorkload] | None:
        """Kueue's own order of a LocalQueue's pending workloads; None where the cluster offers
        no such view (no Kueue visibility API, or not a Kueue cluster)."""
        return None

    async def workload_exited(
        self, job_id: JobId, attempt: int, *, succeeded: bool, reason: str
    ) -> bool:
        """The process of a workload that budcluster runs itself ended (a benchmark's load
        generator on a simulated cluster, whose pods run nothing): end the workload as its pod
        would have. False where workloads run their own processes (real clusters), or the
        workload is not live."""
        return False

    async def benchmark_run(self, job_id: JobId, attempt: int) -> LoadRun | None:
        """What a benchmark's job measured where the cluster ran its load itself (a real
        cluster's `vllm bench serve` Job, read back from its pod's log); None where budcluster
        runs the load (a simulated cluster). Raises ValueError saying why when the cluster's
        record of the run can't be read (no pod, no result), GatewayUnavailable when the cluster
        does not answer."""
        return None


class Superseded(Exception):
    """Another process has taken over this cluster's loop since this one claimed it (a newer
    fencing generation): this one wrote nothing and must stop."""

    def __init__(self, cluster_id: uuid.UUID) -> None:
        super().__init__(f"the loop of cluster {cluster_id} runs elsewhere now")


class GatewayFactory(Protocol):
    def for_cluster(self, cluster: Cluster) -> ClusterGateway: ...


SHIPPED_CHART = "bud-service"
"""The chart budcluster ships for DOCKER services (adapters/helm/charts/bud-service)."""
SHIPPED_VLLM_CHART = "bud-vllm"
"""The chart budcluster ships for model deployments (adapters/helm/charts/bud-vllm)."""
SHIPPED_CHARTS = frozenset({SHIPPED_CHART, SHIPPED_VLLM_CHART})


@dataclass(frozen=True)
class ReleaseSpec:
    """A Helm release to install (or find installed): one attempt of a SERVICE job."""

    name: str
    namespace: str
    chart: str
    """A chart reference Helm understands, or the name of a chart budcluster ships
    (SHIPPED_CHARTS)."""
    values: Mapping[str, Any] = field(default_factory=dict)
    repo: str | None = None
    version: str | None = None

    @property
    def shipped(self) -> bool:
        return self.chart in SHIPPED_CHARTS and self.repo is None


@dataclass(frozen=True)
class ReleaseInfo:
    name: str
    namespace: str
    status: str
    """Helm's: deployed, failed, pending-install, uninstalling..."""


class ReleaseRejected(Exception):
    """Helm refused the release for good (no such chart, values its schema rejects, a template
    that fails): retrying the same hand-over would fail the same way."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class HelmReleases(Protocol):
    """Helm releases on one cluster. Methods raise GatewayUnavailable (Helm or the cluster
    can't be reached; try again) or ReleaseRejected."""

    async def install(self, release: ReleaseSpec) -> None:
        """Install the release; one already there by that name is left as it is."""

    async def uninstall(self, name: str, namespace: str) -> None:
        """Remove the release; one already gone is fine."""

    async def releases(self) -> list[ReleaseInfo]:
        """Every release on the cluster, in all namespaces."""


class WatchExpired(Exception):
    """A watch can't go on from where it was (the cluster no longer keeps that point): list
    again."""


@dataclass(frozen=True)
class KubeconfigSummary:
    """What a kubeconfig says, without its secrets: the context it uses and its server."""

    context: str
    server_url: str


@dataclass(frozen=True)
class NodeChange:
    """One node added, changed or removed, as a watch of a real cluster reports it."""

    name: str
    node: Node | None
    """The node as it is now; None when it was removed."""


QUOTAS_CHECK = "kueue_quotas"
"""The health check that says whether a real cluster holds the quota model."""


@dataclass
class QuotasApplied:
    """What one pass of putting the quota model onto a real cluster found and did."""

    check: HealthCheck
    """QUOTAS_CHECK: ok when everything is in place, else why not."""
    applied: list[str] = field(default_factory=list)
    """Keys of every object in place after the pass (kept with the cluster, and given back as
    `applied_before`, to tell drift from a first creation)."""
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    """Found differing but not applied by us before: adopted, or the model changed."""
    restored: list[str] = field(default_factory=list)
    """Applied before, then changed or deleted in the cluster: put back, with the reason."""
    removed: list[str] = field(default_factory=list)


class ClusterApi(Protocol):
    """A live connection to one real cluster, in the domain's terms. Methods raise
    ClusterConnectionError (unreachable, unauthorized, forbidden, error)."""

    async def server_version(self) -> str: ...

    async def nodes(self) -> list[Node]:
        """The cluster's nodes now (one the cluster describes in a way that can't be read is
        left out, and logged). A later `watch_nodes` goes on from this listing."""

    def watch_nodes(self) -> AsyncIterator[NodeChange]:
        """The node changes after the last listing (or after the last change a watch reported),
        until the cluster ends the watch; raises WatchExpired (list again)."""

    async def health(self) -> list[HealthCheck]: ...

    async def apply_quotas(
        self,
        quotas: QuotaSet,
        *,
        priority_classes: Iterable[WorkloadPriorityClass] = (),
        applied_before: Iterable[str] = (),
    ) -> QuotasApplied:
        """Put the quota model onto the cluster: create what is missing, restore what drifted,
        remove what the model no longer has. A write the cluster refuses fails the check; a
        model the cluster can't take (two tenants' queues in one namespace) is a ValueError."""

    async def close(self) -> None: ...


class ClusterConnector(Protocol):
    def inspect(self, kubeconfig: str, context: str | None) -> KubeconfigSummary:
        """Check a kubeconfig without connecting. Raises ClusterConnectionError
        (invalid_kubeconfig, with the field: kubeconfig or context)."""

    async def connect(
        self, kubeconfig: str, context: str | None, *, cluster_id: ClusterId
    ) -> ClusterApi:
        """A connection to the cluster `cluster_id` (its nodes' ids derive from it, its quota
        objects are labelled with it). Raises ClusterConnectionError; the caller closes what it
        gets."""


class WorkloadCheck(Protocol):
    """Whether a real cluster can be given a workload as it is: the check a submission to a
    real cluster passes before it is stored."""

    def __call__(self, workload: Workload, *, cluster_id: ClusterId) -> None:
        """Raise ValueError("<field>: <problem>", e.g. "spec.image: ...") when it can't."""


class Lease(Protocol):
    """A time-limited, renewable claim that only one process watches a given cluster."""

    async def acquire(self, name: str, *, ttl_seconds: float) -> bool: ...

    async def renew(self, name: str, *, ttl_seconds: float) -> bool: ...

    async def release(self, name: str) -> None: ...


# --- secrets --------------------------------------------------------------------------------


class SecretBox(Protocol):
    """Envelope encryption (domain/model/secrets.py) with a keyring of RSA keys, one active."""

    def seal(self, plaintext: bytes, *, owner: str) -> Envelope:
        """Encrypt under a fresh data key wrapped with the active key, bound to `owner`."""

    def open(self, envelope: Envelope, *, owner: str) -> bytes:
        """Raises SecretUnreadable when tampered with, sealed for another owner, or wrapped
        with a key the keyring lacks."""

    def rewrap(self, envelope: Envelope) -> Envelope:
        """The same data key wrapped with the active key (the ciphertext is unchanged); the
        envelope itself when the active key already wraps it. Raises SecretUnreadable."""

    @property
    def active_key_id(self) -> str: ...


class SecretHasher(Protocol):
    def hash(self, secret: str) -> str: ...

    def verify(self, secret: str, hashed: str) -> bool: ...


# --- model serving --------------------------------------------------------------------------


class ServingEndpoints(Protocol):
    """Where a cluster serves a deployment's model, and whether it answers."""

    async def endpoint(
        self, cluster: Cluster, deployment: Deployment, running: Sequence[JobId]
    ) -> EndpointState:
        """`running`: the replica jobs that run now, in replica order. Called inside a unit
        of work: must not open another."""
        ...


class LoadGenerator(Protocol):
    """Sends a benchmark's requests and times them (an async streaming client)."""

    async def run(
        self,
        plan: LoadPlan,
        *,
        on_sample: Callable[[RequestSample], None] | None = None,
        stop: asyncio.Event | None = None,
        own_endpoint: bool = False,
    ) -> LoadRun:
        """Raises `domain.model.load.EndpointUnreachable` when the endpoint does not answer at
        all; a request that fails is a failed sample, never an exception. Connections go only
        to addresses the outbound rules allow, unless `own_endpoint`: the plan's endpoint is a
        deployment's that this service serves."""
        ...


class OutboundPolicy(Protocol):
    """Whether a caller's URL may be reached from here (domain.model.outbound): resolves its
    host and judges every address."""

    async def check(self, url: OutboundUrl) -> Verdict:
        """Never raises: a name that does not resolve is a refusal like any other."""
        ...
