"""What a unit of work reads and writes, one repository per kind of thing.

Jobs, deployments and benchmarks are limited to the unit of work's tenant by the repository itself
(`domain.ports.unit_of_work.TenantScope`); the other repositories hold what tenants share or the
system's own records, and their callers check who may see what. A repository works inside the
unit of work's transaction and commits nothing itself.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Generic, Protocol, TypeVar

from domain.model.addons import Addon, AddonInstall
from domain.model.audit import AuditCursor, AuditEvent, AuditFilter, AuditPage
from domain.model.benchmark import Benchmark
from domain.model.budget import Budget
from domain.model.cluster import Cluster, GpuPrice, Node
from domain.model.deployment import Deployment
from domain.model.drain import Drain, DrainId
from domain.model.fleet import Fleet, FleetPlan, JobMove
from domain.model.ids import (
    BenchmarkId,
    ClusterId,
    DeploymentId,
    FleetId,
    JobId,
    ProjectId,
    TenantId,
    TokenId,
)
from domain.model.job import Job, JobEvent, JobPriority, JobStatus, JobType, RunRecord
from domain.model.load import RequestSample
from domain.model.logs import LogLine
from domain.model.principal import ApiToken
from domain.model.quota import (
    ClusterQueue,
    Cohort,
    LocalQueue,
    QuotaSet,
    QuotaSettings,
    ResourceFlavor,
    WorkloadPriorityClass,
)
from domain.model.reservation import CapacityReservation, ReservationId
from domain.model.secrets import Envelope
from domain.model.spend import SpendQuery, SpendRow
from domain.model.tenant_secret import TenantSecret, TenantSecretId


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

    async def active_via(self, cluster_id: ClusterId) -> list[Job]:
        """Active jobs whose objects are on this cluster (`Job.copy_cluster`): its own but those
        dispatched through a MultiKueue manager, and those of other members dispatched through
        it, oldest first."""

    async def waiting_in_fleet(self, fleet_id: FleetId) -> list[Job]:
        """The fleet's jobs not yet admitted (PENDING or QUEUED), oldest first."""

    async def keep_log_tail(
        self, job_id: JobId, attempt: int, lines: Sequence[LogLine], at: datetime
    ) -> None:
        """Keep an attempt's last log lines (over what was kept of it before)."""

    async def log_tail(self, job_id: JobId, attempt: int) -> list[LogLine] | None:
        """What was kept of an attempt's log (None: nothing), if the job is visible."""

    async def moves(self, job_ids: Sequence[JobId]) -> dict[JobId, list[JobMove]]:
        """Each job's moves between members of its fleet, oldest first (every id asked is a
        key; a job not visible has none)."""

    async def running_over(self, share: int, *, after: Job | None = None, limit: int) -> list[Job]:
        """RUNNING jobs with a budget, none of whose shares from `share` on was said yet
        (`Job.budget_alerted` below it), oldest first (by creation, then id), after `after`."""

    async def of_tenants(
        self,
        tenant_ids: Sequence[TenantId],
        statuses: Collection[JobStatus],
        *,
        held: bool | None = None,
        limit: int,
    ) -> list[Job]:
        """Jobs of these tenants in these statuses (with `held`, only those a budget holds, or
        only those it does not), oldest first: what a tenant's or project's budget acts on."""

    async def naming_secret(self, tenant_id: TenantId, name: str) -> list[Job]:
        """The tenant's jobs not ended (active, or PREEMPTED and to be requeued) that name the
        secret `name`: each opens it at its next hand-over. Oldest first."""

    async def queued_in_windows(self, cluster_ids: Sequence[ClusterId]) -> list[Job]:
        """QUEUED jobs of these clusters that have a time window (the window sweeper), without
        reading every other waiting job."""

    async def due_for_submission(self, before: datetime, *, limit: int) -> list[Job]:
        """PENDING jobs whose next attempt is due before `before` (the submission sweeper),
        but none a budget holds (released when it allows: `BudgetService`)."""

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

    async def failed_runs(
        self, cluster_id: ClusterId, *, limit: int, time_scale: float = 1.0
    ) -> list[RunRecord]:
        """The latest attempts on the cluster that failed after they ran, newest first: how long
        each ran before it failed (job time), marked `failed`."""

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

    async def prices(self, cluster_ids: Sequence[ClusterId]) -> dict[ClusterId, list[GpuPrice]]:
        """Every price change set on each cluster, oldest first."""

    async def add_price(self, price: GpuPrice) -> None:
        """Record a price change (never changes one already recorded)."""


class QuotaRepository(Protocol):
    """Kueue's objects per cluster and the priority classes.

    Objects are keyed as in Kueue: flavors, cluster queues and cohorts by (cluster, name), local
    queues by (cluster, namespace, name). The batch reads take many clusters at once, so a
    listing costs a constant number of statements. Writes of a name that is taken raise
    `Conflict` (code ALREADY_EXISTS).
    """

    async def quota_set(self, cluster_id: ClusterId) -> QuotaSet:
        """Flavors, cluster queues, local queues, cohorts, priority values and settings of one
        cluster."""

    async def quota_sets(self, cluster_ids: Sequence[ClusterId]) -> dict[ClusterId, QuotaSet]:
        """`quota_set` of each cluster, in a constant number of statements."""

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

    async def update_cohort(self, cohort: Cohort) -> None: ...

    async def delete_cohort(self, *, cluster_id: ClusterId, name: str) -> None: ...

    async def quota_settings_of(
        self, cluster_ids: Sequence[ClusterId]
    ) -> dict[ClusterId, QuotaSettings]:
        """Each cluster's settings; Kueue's defaults for one that never had them set."""

    async def save_quota_settings(self, settings: QuotaSettings) -> None: ...

    async def priority_classes(self, *, for_update: bool = False) -> list[WorkloadPriorityClass]:
        """Every priority class, highest priority first; `for_update` holds them until commit
        (a change is checked against the others' values)."""

    async def update_priority_class(self, priority_class: WorkloadPriorityClass) -> None: ...


class ReservationRepository(Protocol):
    """Capacity reservations of clusters' GPUs (cancelled ones are kept, marked cancelled)."""

    async def active(
        self, cluster_id: ClusterId, *, active_after: datetime
    ) -> list[CapacityReservation]:
        """Reservations not cancelled that end after `active_after`."""

    async def of_clusters(
        self, cluster_ids: Sequence[ClusterId], *, ending_after: datetime
    ) -> list[CapacityReservation]:
        """Reservations (cancelled ones too) of these clusters that end after `ending_after`."""

    async def get(self, reservation_id: ReservationId) -> CapacityReservation | None: ...

    async def add(self, reservation: CapacityReservation) -> None: ...

    async def cancel(self, *, reservation_id: ReservationId, at: datetime) -> None:
        """Mark it cancelled at `at`; one already cancelled keeps its time."""


class TokenRepository(Protocol):
    async def add(self, token: ApiToken) -> None: ...

    async def get(self, token_id: TokenId) -> ApiToken | None: ...

    async def revoke(self, token_id: TokenId, at: datetime) -> bool: ...

    async def count(self) -> int: ...

    async def unusable(self, token_ids: Collection[TokenId], now: datetime) -> set[TokenId]:
        """Those of `token_ids` that are revoked, expired at `now`, or unknown."""
        ...


T = TypeVar("T")


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

    async def autoscaled(self) -> list[Deployment]:
        """Those that scale themselves and were not stopped by their user (under the system
        scope, every tenant's): the autoscaler's round, without reading the others."""
        ...

    async def naming_secret(self, name: str) -> list[Deployment]:
        """The scope's deployments not stopped by their user that name the secret `name` (each
        replica they start opens it). Oldest first."""
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


class AuditRepository(Protocol):
    async def add(self, event: AuditEvent) -> None: ...

    async def settle(self, event: AuditEvent, stored: Sequence[str] = ()) -> None:
        """The outcome, targets, tenant and project of an event written before its mutation
        ended (its `at` stays); `stored`: the targets it was written with (targets are only
        ever added)."""
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


class BudgetRepository(Protocol):
    """Project and tenant budgets, one per (tenant, project or none): `Budget.key`."""

    async def get(self, key: str, *, for_update: bool = False) -> Budget | None: ...

    async def of_tenant(self, tenant_id: TenantId) -> list[Budget]:
        """The tenant's budget and its projects' (the tenant's first)."""

    async def all(self) -> list[Budget]:
        """Every budget (the budget check's round)."""

    async def put(self, budget: Budget) -> None:
        """Store it, over the budget of the same key if there is one."""

    async def remove(self, key: str) -> bool: ...


class UsageRepository(Protocol):
    """The usage ledger: one row per metered run and UTC day (written by the unit of work)."""

    async def spend(self, query: SpendQuery, *, offset: int, limit: int) -> list[SpendRow]:
        """The groups of `query`, ordered by their keys in `query.group_by` order."""

    async def spend_total(self, query: SpendQuery) -> SpendRow:
        """All of `query`'s rows, summed into one."""

    async def spend_page(
        self, query: SpendQuery, *, offset: int, limit: int
    ) -> tuple[list[SpendRow], SpendRow]:
        """`spend` and `spend_total` at once."""


class FleetRepository(Protocol):
    """Fleets are the operator's, shared by every tenant (no tenant scope)."""

    async def get(self, fleet_id: FleetId, *, for_update: bool = False) -> Fleet | None: ...

    async def get_by_name(self, name: str) -> Fleet | None: ...

    async def all(self) -> list[Fleet]:
        """By name."""

    async def with_member(self, cluster_id: ClusterId) -> list[Fleet]: ...

    async def put(self, fleet: Fleet) -> None:
        """Insert or replace (its plan is kept)."""

    async def remove(self, fleet_id: FleetId) -> bool: ...

    async def plan(self, fleet_id: FleetId) -> FleetPlan | None: ...

    async def set_plan(self, fleet_id: FleetId, plan: FleetPlan) -> None: ...


class AddonRepository(Protocol):
    """The operator's add-on requests (no tenant scope): the latest per cluster and add-on."""

    async def of(self, cluster_ids: Sequence[ClusterId]) -> dict[ClusterId, list[AddonInstall]]:
        """Each cluster's requests (a cluster with none is left out)."""

    async def get(
        self, cluster_id: ClusterId, addon: Addon, *, for_update: bool = False
    ) -> AddonInstall | None: ...

    async def put(self, install: AddonInstall) -> None:
        """Insert or replace."""

    async def remove(self, cluster_id: ClusterId, addon: Addon, request_id: str) -> bool:
        """Forget the request, if it is still `request_id`'s (a release uninstalled)."""


class DrainRepository(Protocol):
    """Drains are the operator's (no tenant scope); kept after they end."""

    async def get(self, drain_id: DrainId, *, for_update: bool = False) -> Drain | None: ...

    async def on(
        self, cluster_ids: Sequence[ClusterId], *, ended_after: datetime | None = None
    ) -> list[Drain]:
        """The clusters' drains that are on (with `ended_after`: also those ended since),
        oldest first."""

    async def put(self, drain: Drain) -> None:
        """Insert or replace."""


class TenantSecretRepository(Protocol):
    """A tenant's sealed secrets, by name; every call names the tenant (no other is read)."""

    async def named(
        self, tenant_id: TenantId, names: Collection[str], *, for_update: bool = False
    ) -> dict[str, TenantSecret]: ...

    async def of_tenant(self, tenant_id: TenantId) -> list[TenantSecret]:
        """By name."""

    async def count(self, tenant_id: TenantId) -> int: ...

    async def put(self, secret: TenantSecret) -> None:
        """Insert or replace (by id)."""

    async def remove(self, tenant_id: TenantId, name: str) -> bool: ...

    async def used(self, ids: Collection[TenantSecretId], at: datetime) -> None:
        """Note when they were last opened for a hand-over."""
