"""In-memory fakes of every port, for the domain's unit tests.

They keep the contracts the real adapters keep where the domain relies on them: the unit of work
scopes job reads to its tenant, writes nothing (jobs or quota objects) until `commit`, and numbers
events per cluster; a quota object of a taken name is a Conflict; the
task queue refuses a key that is already queued; the hub hands events to subscribers in order with
a bounded buffer.
"""

from __future__ import annotations

import asyncio
import collections
import copy
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from ipaddress import ip_address
from types import TracebackType
from typing import Any, Self

from adapters.shapes.documents import job_to_document
from domain.errors import Conflict, DuplicateIdempotencyKey
from domain.model.addons import Addon, AddonInstall
from domain.model.audit import AuditCursor, AuditEvent, AuditFilter, AuditPage
from domain.model.benchmark import Benchmark
from domain.model.budget import Budget
from domain.model.cluster import Cluster, ClusterStatus, GpuPrice, Node, NodeType, Platform
from domain.model.deployment import Deployment
from domain.model.drain import Drain, DrainId
from domain.model.events import Change, ClusterChanged, ServingChange
from domain.model.fleet import Fleet, FleetPlan, JobMove
from domain.model.ids import (
    BenchmarkId,
    ClusterId,
    DeploymentId,
    FleetId,
    JobId,
    NodeId,
    ProjectId,
    TenantId,
    TokenId,
)
from domain.model.job import (
    Job,
    JobChanged,
    JobEvent,
    JobPriority,
    JobStatus,
    JobType,
    RunRecord,
    Usage,
)
from domain.model.load import LoadRun, RequestSample
from domain.model.logs import LogLine
from domain.model.outbound import AllowList, OutboundRules, OutboundUrl, Verdict, judge
from domain.model.principal import ApiToken
from domain.model.quota import (
    DEFAULT_PRIORITY_VALUES,
    GPU_LABEL,
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
from domain.model.spend import SpendGroup, SpendQuery, SpendRow
from domain.model.tenant_secret import TenantSecret, TenantSecretId
from domain.model.timeline import Timeline
from domain.ports.events import Overflowed, StoredEvent
from domain.ports.gateways import PendingWorkload, Workload, WorkloadObservation
from domain.ports.repositories import JobCursor, JobFilter, JobPage, Page
from domain.ports.unit_of_work import TenantScope
from domain.scheduling.cost import PriceBook, ended_runs, meter
from domain.services.quota_defaults import default_quotas

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


class FakeClock:
    """Time for the domain's tests. By default a sleep moves time on by itself (one sleeper at a
    time); `manual` makes sleepers wait until the test moves time on (`run_for`), for loops that
    sleep side by side (a lease renewer beside a watch)."""

    def __init__(self, start: datetime = T0, *, manual: bool = False) -> None:
        self.current = start
        self.slept: list[float] = []
        self.manual = manual
        self._sleepers: list[tuple[datetime, asyncio.Future[None]]] = []

    def now(self) -> datetime:
        return self.current

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        if not self.manual:
            self.current += timedelta(seconds=seconds)
            await asyncio.sleep(0)
            return
        future = asyncio.get_running_loop().create_future()
        entry = (self.current + timedelta(seconds=max(seconds, 0.0)), future)
        self._sleepers.append(entry)
        try:
            await future
        finally:
            if entry in self._sleepers:
                self._sleepers.remove(entry)

    async def run_for(self, seconds: float, *, step: float = 0.1, turns: int = 50) -> None:
        """Manual time: move on by `seconds` in `step`s; at each, wake the sleepers whose time
        has come and let the event loop run what they do (`turns` passes)."""
        end = self.current + timedelta(seconds=seconds)
        while True:
            for entry in [e for e in self._sleepers if e[0] <= self.current]:
                self._sleepers.remove(entry)
                if not entry[1].done():
                    entry[1].set_result(None)
            for _ in range(turns):
                await asyncio.sleep(0)
            if self.current >= end:
                return
            self.current = min(end, self.current + timedelta(seconds=step))

    def advance(self, seconds: float) -> None:
        self.current += timedelta(seconds=seconds)


@dataclass
class QuotaState:
    """Kueue's objects and reservations as the fake database holds them."""

    flavors: dict[tuple[ClusterId, str], ResourceFlavor] = field(default_factory=dict)
    cluster_queues: dict[tuple[ClusterId, str], ClusterQueue] = field(default_factory=dict)
    local_queues: dict[tuple[ClusterId, str, str], LocalQueue] = field(default_factory=dict)
    cohorts: dict[tuple[ClusterId, str], Cohort] = field(default_factory=dict)
    settings: dict[ClusterId, QuotaSettings] = field(default_factory=dict)
    reservations: dict[ReservationId, CapacityReservation] = field(default_factory=dict)
    priority_classes: dict[JobPriority, WorkloadPriorityClass] = field(
        default_factory=lambda: {
            p: WorkloadPriorityClass(p, v, f"{p.value.lower()} work", T0)
            for p, v in DEFAULT_PRIORITY_VALUES.items()
        }
    )


@dataclass
class Store:
    """What the fake database holds."""

    jobs: dict[JobId, Job] = field(default_factory=dict)
    history: list[JobEvent] = field(default_factory=list)
    clusters: dict[ClusterId, Cluster] = field(default_factory=dict)
    tokens: dict[TokenId, ApiToken] = field(default_factory=dict)
    audit: list[AuditEvent] = field(default_factory=list)
    events: dict[ClusterId, list[StoredEvent]] = field(
        default_factory=lambda: collections.defaultdict(list)
    )
    sequences: dict[ClusterId, int] = field(default_factory=lambda: collections.defaultdict(int))
    retained_after: dict[ClusterId, int] = field(
        default_factory=lambda: collections.defaultdict(int)
    )
    quota: QuotaState = field(default_factory=QuotaState)
    timelines: dict[ClusterId, tuple[int, Timeline]] = field(default_factory=dict)
    deployments: dict[DeploymentId, Deployment] = field(default_factory=dict)
    benchmarks: dict[BenchmarkId, Benchmark] = field(default_factory=dict)
    samples: dict[BenchmarkId, list[RequestSample]] = field(default_factory=dict)
    prices: list[GpuPrice] = field(default_factory=list)
    usage: list[tuple[Usage, Decimal]] = field(default_factory=list)
    budgets: dict[str, Budget] = field(default_factory=dict)
    fleets: dict[FleetId, Fleet] = field(default_factory=dict)
    plans: dict[FleetId, FleetPlan] = field(default_factory=dict)
    moves: list[JobMove] = field(default_factory=list)
    drains: dict[DrainId, Drain] = field(default_factory=dict)
    secrets: dict[TenantSecretId, TenantSecret] = field(default_factory=dict)
    addons: dict[tuple[ClusterId, Addon], AddonInstall] = field(default_factory=dict)
    log_tails: dict[tuple[JobId, int], list[LogLine]] = field(default_factory=dict)
    commits: int = 0


class FakeJobRepository:
    def __init__(self, uow: FakeUnitOfWork) -> None:
        self._uow = uow

    def _visible(self, job: Job) -> bool:
        tenant = self._uow.scope.tenant_id
        return tenant is None or job.tenant_id == tenant

    def _load(self, job: Job) -> Job:
        return self._uow.track(copy.deepcopy(job))

    async def add(self, job: Job) -> None:
        if job.idempotency_key is not None and any(
            (j.tenant_id, j.project_id, j.idempotency_key)
            == (job.tenant_id, job.project_id, job.idempotency_key)
            for j in [*self._uow.store.jobs.values(), *self._uow.pending_new.values()]
        ):
            raise DuplicateIdempotencyKey(job.idempotency_key)
        self._uow.pending_new[job.id] = job
        self._uow.track(job)

    async def get(self, job_id: JobId, *, for_update: bool = False) -> Job | None:
        if job_id in self._uow.seen:
            return self._uow.seen[job_id]
        job = self._uow.store.jobs.get(job_id)
        return self._load(job) if job is not None and self._visible(job) else None

    async def get_many(
        self, job_ids: Sequence[JobId], *, for_update: bool = False
    ) -> dict[JobId, Job]:
        found = {job_id: await self.get(job_id) for job_id in job_ids}
        return {job_id: job for job_id, job in found.items() if job is not None}

    async def get_by_idempotency_key(
        self, tenant_id: TenantId, project_id: ProjectId, key: str
    ) -> Job | None:
        for job in self._uow.store.jobs.values():
            if (job.tenant_id, job.project_id, job.idempotency_key) == (
                tenant_id,
                project_id,
                key,
            ) and self._visible(job):
                return self._load(job)
        return None

    def _matching(self, job_filter: JobFilter) -> list[Job]:
        return [
            j for j in self._uow.store.jobs.values() if self._visible(j) and job_filter.matches(j)
        ]

    async def page(
        self, job_filter: JobFilter, *, first: int, after: JobCursor | None = None
    ) -> JobPage:
        jobs = sorted(self._matching(job_filter), key=lambda j: (j.created_at, j.id), reverse=True)
        if after is not None:
            jobs = [j for j in jobs if (j.created_at, j.id) < (after.created_at, after.job_id)]
        return JobPage([self._load(j) for j in jobs[:first]], len(jobs) > first)

    async def list_for_cluster(
        self, cluster_id: ClusterId, job_filter: JobFilter, *, limit: int
    ) -> list[Job]:
        jobs = [j for j in self._matching(job_filter) if j.cluster_id == cluster_id]
        jobs.sort(key=lambda j: (j.updated_at, j.id), reverse=True)
        return [self._load(j) for j in jobs[:limit]]

    async def active_on_cluster(self, cluster_id: ClusterId) -> list[Job]:
        return await self.active_on_clusters([cluster_id])

    async def active_on_clusters(self, cluster_ids: Sequence[ClusterId]) -> list[Job]:
        return [
            self._load(j)
            for j in self._uow.store.jobs.values()
            if j.cluster_id in cluster_ids and j.status.is_active and self._visible(j)
        ]

    async def active_via(self, cluster_id: ClusterId) -> list[Job]:
        found = [
            j
            for j in self._uow.store.jobs.values()
            if j.copy_cluster == cluster_id and j.status.is_active and self._visible(j)
        ]
        return [self._load(j) for j in sorted(found, key=lambda j: j.created_at)]

    async def waiting_in_fleet(self, fleet_id: FleetId) -> list[Job]:
        waiting = (JobStatus.PENDING, JobStatus.QUEUED)
        found = [
            j
            for j in self._uow.store.jobs.values()
            if j.fleet_id == fleet_id and j.status in waiting and self._visible(j)
        ]
        return [self._load(j) for j in sorted(found, key=lambda j: (j.created_at, str(j.id)))]

    async def keep_log_tail(
        self, job_id: JobId, attempt: int, lines: Sequence[LogLine], at: datetime
    ) -> None:
        self._uow.store.log_tails[(job_id, attempt)] = list(lines)

    async def log_tail(self, job_id: JobId, attempt: int) -> list[LogLine] | None:
        job = self._uow.store.jobs.get(job_id)
        if job is None or not self._visible(job):
            return None
        return self._uow.store.log_tails.get((job_id, attempt))

    async def moves(self, job_ids: Sequence[JobId]) -> dict[JobId, list[JobMove]]:
        result: dict[JobId, list[JobMove]] = {job_id: [] for job_id in job_ids}
        for move in self._uow.store.moves:
            job = self._uow.store.jobs.get(move.job_id)
            if move.job_id in result and job is not None and self._visible(job):
                result[move.job_id].append(move)
        return result

    async def running_over(self, share: int, *, after: Job | None = None, limit: int) -> list[Job]:
        found = sorted(
            (
                j
                for j in self._uow.store.jobs.values()
                if j.status.value == "RUNNING"
                and j.budget_limit is not None
                and j.budget_alerted < share
                and self._visible(j)
                and (after is None or (j.created_at, str(j.id)) > (after.created_at, str(after.id)))
            ),
            key=lambda j: (j.created_at, str(j.id)),
        )
        return [self._load(j) for j in found[:limit]]

    async def naming_secret(self, tenant_id: TenantId, name: str) -> list[Job]:
        found = sorted(
            (
                j
                for j in self._uow.store.jobs.values()
                if j.tenant_id == tenant_id
                and (j.status.is_active or j.status is JobStatus.PREEMPTED)
                and any(ref.name == name for ref in j.secrets)
                and self._visible(j)
            ),
            key=lambda j: (j.created_at, str(j.id)),
        )
        return [self._load(j) for j in found]

    async def queued_in_windows(self, cluster_ids: Sequence[ClusterId]) -> list[Job]:
        return [
            self._load(j)
            for j in self._uow.store.jobs.values()
            if j.cluster_id in cluster_ids
            and j.status.value == "QUEUED"
            and j.window is not None
            and self._visible(j)
        ]

    async def of_tenants(
        self,
        tenant_ids: Sequence[TenantId],
        statuses: Collection[JobStatus],
        *,
        held: bool | None = None,
        limit: int,
    ) -> list[Job]:
        found = sorted(
            (
                j
                for j in self._uow.store.jobs.values()
                if j.tenant_id in tenant_ids
                and j.status in statuses
                and (held is None or (j.held_by is not None) == held)
                and self._visible(j)
            ),
            key=lambda j: (j.created_at, str(j.id)),
        )
        return [self._load(j) for j in found[:limit]]

    async def due_for_submission(self, before: datetime, *, limit: int) -> list[Job]:
        due = [
            j
            for j in self._uow.store.jobs.values()
            if j.status.value == "PENDING"
            and j.held_by is None
            and ((j.next_attempt_at or j.updated_at) <= before)
            and self._visible(j)
        ]
        return [self._load(j) for j in due[:limit]]

    async def finished_on_cluster(
        self, cluster_id: ClusterId, *, ended_after: datetime, limit: int
    ) -> list[Job]:
        done = [
            j
            for j in self._uow.store.jobs.values()
            if j.cluster_id == cluster_id
            and not j.status.is_active
            and j.actual_start
            and j.actual_end
            and j.actual_end > ended_after
            and self._visible(j)
        ]
        done.sort(key=lambda j: j.actual_end or T0, reverse=True)
        return [copy.deepcopy(j) for j in done[:limit]]

    async def run_times(
        self, cluster_id: ClusterId, *, limit: int, time_scale: float = 1.0
    ) -> list[RunRecord]:
        done = [
            j
            for j in self._uow.store.jobs.values()
            if j.cluster_id == cluster_id
            and j.status is JobStatus.COMPLETED
            and j.actual_start
            and j.actual_end
            and self._visible(j)
        ]
        done.sort(key=lambda j: j.actual_end or T0, reverse=True)
        return [
            RunRecord(
                j.tenant_id,
                j.name,
                j.job_type,
                j.resources.gpu_type if j.resources.gpu_count else None,
                j.resources.total_gpus,
                (j.actual_end - j.actual_start).total_seconds() * time_scale,
                None
                if j.estimated_duration_seconds is None
                else float(j.estimated_duration_seconds),
            )
            for j in done[:limit]
            if j.actual_start and j.actual_end
        ]

    async def failed_runs(
        self, cluster_id: ClusterId, *, limit: int, time_scale: float = 1.0
    ) -> list[RunRecord]:
        jobs = self._uow.store.jobs
        running: dict[tuple[JobId, int], datetime] = {}
        found: list[tuple[datetime, RunRecord]] = []
        for e in self._uow.store.history:
            job = jobs.get(e.job_id)
            if job is None or job.cluster_id != cluster_id or not self._visible(job):
                continue
            if e.to_status is JobStatus.RUNNING:
                running[(e.job_id, e.attempt)] = e.at
            elif e.to_status is JobStatus.FAILED and e.from_status is JobStatus.RUNNING:
                since = running.get((e.job_id, e.attempt))
                if since is not None:
                    seconds = max(0.0, (e.at - since).total_seconds()) * time_scale
                    gpu_type = job.resources.gpu_type if job.resources.total_gpus else None
                    record = RunRecord(
                        job.tenant_id,
                        job.name,
                        job.job_type,
                        gpu_type,
                        job.resources.total_gpus,
                        seconds,
                        failed=True,
                    )
                    found.append((e.at, record))
        found.sort(key=lambda f: f[0], reverse=True)
        return [record for _, record in found[:limit]]

    async def startup_times(
        self, cluster_id: ClusterId, *, limit: int
    ) -> list[tuple[JobType, float]]:
        jobs = self._uow.store.jobs
        admitted: dict[tuple[JobId, int], datetime] = {}
        found: list[tuple[datetime, JobType, float]] = []
        for e in self._uow.store.history:
            job = jobs.get(e.job_id)
            if job is None or job.cluster_id != cluster_id or not self._visible(job):
                continue
            if e.to_status is JobStatus.ADMITTED:
                admitted[(e.job_id, e.attempt)] = e.at
            elif e.to_status is JobStatus.RUNNING and e.from_status is JobStatus.ADMITTED:
                since = admitted.get((e.job_id, e.attempt))
                if since is not None:
                    found.append((e.at, job.job_type, max(0.0, (e.at - since).total_seconds())))
        found.sort(key=lambda f: f[0], reverse=True)
        return [(job_type, seconds) for _, job_type, seconds in found[:limit]]

    async def store_estimates(self, estimates: Sequence[tuple[Job, bool]]) -> None:
        for job, kept in estimates:
            stored = copy.deepcopy(self._uow.store.jobs[job.id])
            stored.estimated_start, stored.estimated_end = job.estimated_start, job.estimated_end
            stored.estimate_reason = job.estimate_reason
            stored.estimate_warnings = job.estimate_warnings
            stored.estimated_cost = job.estimated_cost
            if kept:
                stored.submission_estimate = job.submission_estimate
                stored.admission_estimate = job.admission_estimate
            self._uow.estimated[job.id] = (stored, kept)

    async def events(self, job_ids: Sequence[JobId]) -> dict[JobId, list[JobEvent]]:
        result: dict[JobId, list[JobEvent]] = {}
        for job_id in job_ids:
            job = self._uow.store.jobs.get(job_id)
            if job is None or not self._visible(job):
                result[job_id] = []
                continue
            result[job_id] = [e for e in self._uow.store.history if e.job_id == job_id]
        return result


class FakeClusterRepository:
    def __init__(self, store: Store) -> None:
        self._store = store

    async def add(self, cluster: Cluster) -> None:
        self._store.clusters[cluster.id] = cluster

    async def get(self, cluster_id: ClusterId) -> Cluster | None:
        return self._store.clusters.get(cluster_id)

    async def get_many(self, cluster_ids: Sequence[ClusterId]) -> dict[ClusterId, Cluster]:
        return {c: self._store.clusters[c] for c in cluster_ids if c in self._store.clusters}

    async def get_by_name(self, name: str) -> Cluster | None:
        return next((c for c in self._store.clusters.values() if c.name == name), None)

    async def all(self) -> list[Cluster]:
        return sorted(self._store.clusters.values(), key=lambda c: c.name)

    async def replace_nodes(self, cluster_id: ClusterId, nodes: Sequence[Node]) -> None:
        self._store.clusters[cluster_id].nodes = list(nodes)

    async def save(self, cluster: Cluster) -> None:
        stored = self._store.clusters.get(cluster.id)
        kept = stored.configuration if stored is not None else cluster.configuration
        self._store.clusters[cluster.id] = replace(cluster, configuration=kept)

    async def swap_configuration(
        self, cluster_id: ClusterId, expected: Envelope | None, new: Envelope
    ) -> bool:
        stored = self._store.clusters.get(cluster_id)
        if stored is None or stored.configuration != expected:
            return False
        self._store.clusters[cluster_id] = replace(stored, configuration=new)
        return True

    async def delete(self, cluster_id: ClusterId) -> None:
        self._store.clusters.pop(cluster_id, None)
        for job_id in [j for j, job in self._store.jobs.items() if job.cluster_id == cluster_id]:
            del self._store.jobs[job_id]

    async def prices(self, cluster_ids: Sequence[ClusterId]) -> dict[ClusterId, list[GpuPrice]]:
        return {
            c: sorted((p for p in self._store.prices if p.cluster_id == c), key=lambda p: p.since)
            for c in cluster_ids
        }

    async def add_price(self, price: GpuPrice) -> None:
        self._store.prices.append(price)


class FakeUsageRepository:
    """Spend summed in Python over the metered pieces the fake unit of work kept."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def _groups(self, query: SpendQuery) -> dict[tuple[Any, ...], list[tuple[Usage, Decimal]]]:
        groups: dict[tuple[Any, ...], list[tuple[Usage, Decimal]]] = collections.defaultdict(list)
        for usage, cost in self._store.usage:
            if not query.first_day <= usage.day <= query.last_day:
                continue
            if query.tenant_id is not None and usage.tenant_id != query.tenant_id:
                continue
            if query.project_ids is not None and usage.project_id not in query.project_ids:
                continue
            key = tuple(getattr(usage, _SPEND_FIELD[g]) for g in query.group_by)
            groups[key].append((usage, cost))
        return groups

    @staticmethod
    def _summed(
        query: SpendQuery, key: tuple[Any, ...], items: list[tuple[Usage, Decimal]]
    ) -> SpendRow:
        return SpendRow(
            gpu_hours=sum(u.gpus * u.seconds for u, _ in items) / 3600.0,
            cost=sum((c for _, c in items), Decimal(0)),
            **{_SPEND_FIELD[g]: v for g, v in zip(query.group_by, key, strict=True)},
        )

    async def spend(self, query: SpendQuery, *, offset: int, limit: int) -> list[SpendRow]:
        groups = self._groups(query)
        keys = sorted(groups, key=lambda k: tuple((v is None, str(v)) for v in k))
        return [self._summed(query, k, groups[k]) for k in keys[offset : offset + limit]]

    async def spend_total(self, query: SpendQuery) -> SpendRow:
        everything = [i for items in self._groups(query).values() for i in items]
        return self._summed(replace(query, group_by=()), (), everything)

    async def spend_page(
        self, query: SpendQuery, *, offset: int, limit: int
    ) -> tuple[list[SpendRow], SpendRow]:
        return await self.spend(query, offset=offset, limit=limit), await self.spend_total(query)


_SPEND_FIELD = {
    SpendGroup.TENANT: "tenant_id",
    SpendGroup.PROJECT: "project_id",
    SpendGroup.CLUSTER: "cluster_id",
    SpendGroup.GPU_TYPE: "gpu_type",
    SpendGroup.JOB_TYPE: "job_type",
    SpendGroup.DAY: "day",
}


class FakeBudgetRepository:
    """Budgets in a dict (written at once: the fakes have no transactions)."""

    def __init__(self, store: Store) -> None:
        self._store = store

    async def get(self, key: str, *, for_update: bool = False) -> Budget | None:
        found = self._store.budgets.get(key)
        return None if found is None else replace(found)

    async def of_tenant(self, tenant_id: TenantId) -> list[Budget]:
        mine = [replace(b) for b in self._store.budgets.values() if b.tenant_id == tenant_id]
        return sorted(mine, key=lambda b: (b.project_id is not None, b.key))

    async def all(self) -> list[Budget]:
        return [replace(b) for _, b in sorted(self._store.budgets.items())]

    async def put(self, budget: Budget) -> None:
        self._store.budgets[budget.key] = replace(budget)

    async def remove(self, key: str) -> bool:
        return self._store.budgets.pop(key, None) is not None


class FakeDrainRepository:
    """Drains in a dict (written at once: the fakes have no transactions)."""

    def __init__(self, store: Store) -> None:
        self._store = store

    async def get(self, drain_id: DrainId, *, for_update: bool = False) -> Drain | None:
        return self._store.drains.get(drain_id)

    async def on(
        self, cluster_ids: Sequence[ClusterId], *, ended_after: datetime | None = None
    ) -> list[Drain]:
        return sorted(
            (
                d
                for d in self._store.drains.values()
                if d.cluster_id in cluster_ids
                and (d.ended_at is None or (ended_after is not None and d.ended_at > ended_after))
            ),
            key=lambda d: (d.started_at, d.id),
        )

    async def put(self, drain: Drain) -> None:
        self._store.drains[drain.id] = drain


class FakeAddonRepository:
    """Add-on requests in a dict (written at once: the fakes have no transactions)."""

    def __init__(self, store: Store) -> None:
        self._store = store

    async def of(self, cluster_ids: Sequence[ClusterId]) -> dict[ClusterId, list[AddonInstall]]:
        found: dict[ClusterId, list[AddonInstall]] = {}
        for (cluster_id, _), install in sorted(self._store.addons.items()):
            if cluster_id in cluster_ids:
                found.setdefault(cluster_id, []).append(replace(install))
        return found

    async def get(
        self, cluster_id: ClusterId, addon: Addon, *, for_update: bool = False
    ) -> AddonInstall | None:
        found = self._store.addons.get((cluster_id, addon))
        return None if found is None else replace(found)

    async def put(self, install: AddonInstall) -> None:
        self._store.addons[(install.cluster_id, install.addon)] = replace(install)

    async def remove(self, cluster_id: ClusterId, addon: Addon, request_id: str) -> bool:
        found = self._store.addons.get((cluster_id, addon))
        if found is None or found.request_id != request_id:
            return False
        del self._store.addons[(cluster_id, addon)]
        return True


class FakeTenantSecretRepository:
    """Tenant secrets in a dict (written at once: the fakes have no transactions)."""

    def __init__(self, store: Store) -> None:
        self._store = store

    async def named(
        self, tenant_id: TenantId, names: Collection[str], *, for_update: bool = False
    ) -> dict[str, TenantSecret]:
        return {
            s.name: s
            for s in self._store.secrets.values()
            if s.tenant_id == tenant_id and s.name in names
        }

    async def of_tenant(self, tenant_id: TenantId) -> list[TenantSecret]:
        mine = (s for s in self._store.secrets.values() if s.tenant_id == tenant_id)
        return sorted(mine, key=lambda s: s.name)

    async def count(self, tenant_id: TenantId) -> int:
        return len(await self.of_tenant(tenant_id))

    async def put(self, secret: TenantSecret) -> None:
        self._store.secrets[secret.id] = secret

    async def remove(self, tenant_id: TenantId, name: str) -> bool:
        found = await self.named(tenant_id, [name])
        for s in found.values():
            del self._store.secrets[s.id]
        return bool(found)

    async def used(self, ids: Collection[TenantSecretId], at: datetime) -> None:
        for i in ids:
            if i in self._store.secrets:
                self._store.secrets[i] = replace(self._store.secrets[i], last_used_at=at)


class FakeFleetRepository:
    """Fleets in a dict (written at once: the fakes have no transactions)."""

    def __init__(self, store: Store) -> None:
        self._store = store

    async def get(self, fleet_id: FleetId, *, for_update: bool = False) -> Fleet | None:
        found = self._store.fleets.get(fleet_id)
        return None if found is None else replace(found)

    async def get_by_name(self, name: str) -> Fleet | None:
        return next((replace(f) for f in self._store.fleets.values() if f.name == name), None)

    async def all(self) -> list[Fleet]:
        return sorted((replace(f) for f in self._store.fleets.values()), key=lambda f: f.name)

    async def with_member(self, cluster_id: ClusterId) -> list[Fleet]:
        return [f for f in await self.all() if f.has(cluster_id)]

    async def put(self, fleet: Fleet) -> None:
        self._store.fleets[fleet.id] = replace(fleet)

    async def remove(self, fleet_id: FleetId) -> bool:
        self._store.plans.pop(fleet_id, None)
        return self._store.fleets.pop(fleet_id, None) is not None

    async def plan(self, fleet_id: FleetId) -> FleetPlan | None:
        return self._store.plans.get(fleet_id)

    async def set_plan(self, fleet_id: FleetId, plan: FleetPlan) -> None:
        if fleet_id in self._store.fleets:
            self._store.plans[fleet_id] = plan


class FakeAuditRepository:
    """The audit trail in a list (written at once: the fakes have no transactions)."""

    def __init__(self, store: Store) -> None:
        self._store = store

    async def add(self, event: AuditEvent) -> None:
        self._store.audit.append(event)

    async def settle(self, event: AuditEvent, stored: Sequence[str] = ()) -> None:
        self._store.audit = [
            replace(event, at=e.at) if e.id == event.id else e for e in self._store.audit
        ]

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
        events = sorted(self._store.audit, key=lambda e: (e.at, e.id), reverse=True)
        shown = [
            e
            for e in events
            if e.seen_by(tenant_id, project_ids, token_id)
            and (after is None or (e.at, e.id) < (after.at, after.event_id))
        ]
        return AuditPage(tuple(shown[:first]), len(shown) > first)

    async def prune(self, before: datetime) -> int:
        kept = [e for e in self._store.audit if e.at >= before]
        pruned, self._store.audit = len(self._store.audit) - len(kept), kept
        return pruned


class FakeTokenRepository:
    def __init__(self, store: Store) -> None:
        self._store = store

    async def add(self, token: ApiToken) -> None:
        self._store.tokens[token.id] = token

    async def get(self, token_id: TokenId) -> ApiToken | None:
        return self._store.tokens.get(token_id)

    async def revoke(self, token_id: TokenId, at: datetime) -> bool:
        token = self._store.tokens.get(token_id)
        if token is None or token.revoked:
            return False
        token.revoked_at = at
        return True

    async def count(self) -> int:
        return len(self._store.tokens)

    async def unusable(self, token_ids: Collection[TokenId], now: datetime) -> set[TokenId]:
        return {
            t
            for t in token_ids
            if (token := self._store.tokens.get(t)) is None or token.revoked or token.expired(now)
        }


class FakeQuotaRepository:
    """Reads and writes a copy of the store's quota objects, made on first use; the unit of work
    puts the copy in the store on commit."""

    def __init__(self, uow: FakeUnitOfWork) -> None:
        self._uow = uow

    @property
    def _q(self) -> QuotaState:
        return self._uow.staged_quota(write=False)

    @property
    def _w(self) -> QuotaState:
        return self._uow.staged_quota(write=True)

    @staticmethod
    def _add(table: dict[Any, Any], key: Any, value: Any, what: str) -> None:
        if key in table:
            raise Conflict(f"{what} {key[-1]} already exists", code="ALREADY_EXISTS")
        table[key] = copy.deepcopy(value)

    async def quota_set(self, cluster_id: ClusterId) -> QuotaSet:
        q = self._q

        def of(table: dict[Any, Any]) -> tuple[Any, ...]:
            return tuple(copy.deepcopy(v) for k, v in sorted(table.items()) if k[0] == cluster_id)

        return QuotaSet(
            flavors=of(q.flavors),
            cluster_queues=of(q.cluster_queues),
            local_queues=of(q.local_queues),
            cohorts=of(q.cohorts),
            priority_values={p: pc.value for p, pc in q.priority_classes.items()},
            fair_sharing=q.settings.get(cluster_id, QuotaSettings(cluster_id)).fair_sharing,
        )

    async def quota_sets(self, cluster_ids: Sequence[ClusterId]) -> dict[ClusterId, QuotaSet]:
        return {c: await self.quota_set(c) for c in cluster_ids}

    async def get_flavor(self, *, cluster_id: ClusterId, name: str) -> ResourceFlavor | None:
        return copy.deepcopy(self._q.flavors.get((cluster_id, name)))

    async def add_flavor(self, flavor: ResourceFlavor) -> None:
        self._add(self._w.flavors, (flavor.cluster_id, flavor.name), flavor, "resource flavor")

    async def update_flavor(self, flavor: ResourceFlavor) -> None:
        self._w.flavors[(flavor.cluster_id, flavor.name)] = copy.deepcopy(flavor)

    async def delete_flavor(self, *, cluster_id: ClusterId, name: str) -> None:
        self._w.flavors.pop((cluster_id, name), None)

    async def get_cluster_queue(self, *, cluster_id: ClusterId, name: str) -> ClusterQueue | None:
        return copy.deepcopy(self._q.cluster_queues.get((cluster_id, name)))

    async def add_cluster_queue(self, queue: ClusterQueue) -> None:
        self._add(self._w.cluster_queues, (queue.cluster_id, queue.name), queue, "cluster queue")

    async def update_cluster_queue(self, queue: ClusterQueue) -> None:
        self._w.cluster_queues[(queue.cluster_id, queue.name)] = copy.deepcopy(queue)

    async def delete_cluster_queue(self, *, cluster_id: ClusterId, name: str) -> None:
        self._w.cluster_queues.pop((cluster_id, name), None)

    async def get_local_queue(
        self, *, cluster_id: ClusterId, namespace: str, name: str
    ) -> LocalQueue | None:
        return copy.deepcopy(self._q.local_queues.get((cluster_id, namespace, name)))

    async def add_local_queue(self, queue: LocalQueue, *, if_absent: bool = False) -> None:
        key = (queue.cluster_id, queue.namespace, queue.name)
        if not (if_absent and key in self._w.local_queues):
            self._add(self._w.local_queues, key, queue, "local queue")

    async def delete_local_queue(self, *, cluster_id: ClusterId, namespace: str, name: str) -> None:
        self._w.local_queues.pop((cluster_id, namespace, name), None)

    async def get_cohort(self, *, cluster_id: ClusterId, name: str) -> Cohort | None:
        return copy.deepcopy(self._q.cohorts.get((cluster_id, name)))

    async def add_cohort(self, cohort: Cohort) -> None:
        self._add(self._w.cohorts, (cohort.cluster_id, cohort.name), cohort, "cohort")

    async def update_cohort(self, cohort: Cohort) -> None:
        self._w.cohorts[(cohort.cluster_id, cohort.name)] = copy.deepcopy(cohort)

    async def delete_cohort(self, *, cluster_id: ClusterId, name: str) -> None:
        self._w.cohorts.pop((cluster_id, name), None)

    async def quota_settings_of(
        self, cluster_ids: Sequence[ClusterId]
    ) -> dict[ClusterId, QuotaSettings]:
        return {c: self._q.settings.get(c, QuotaSettings(c)) for c in cluster_ids}

    async def save_quota_settings(self, settings: QuotaSettings) -> None:
        self._w.settings[settings.cluster_id] = settings

    async def priority_classes(self, *, for_update: bool = False) -> list[WorkloadPriorityClass]:
        return [copy.deepcopy(self._q.priority_classes[p]) for p in JobPriority]

    async def update_priority_class(self, priority_class: WorkloadPriorityClass) -> None:
        self._w.priority_classes[priority_class.priority] = copy.deepcopy(priority_class)


class FakeReservationRepository:
    """Reservations in the same staged copy of the store's quota state as the quota objects."""

    def __init__(self, uow: FakeUnitOfWork) -> None:
        self._uow = uow

    async def active(
        self, cluster_id: ClusterId, *, active_after: datetime
    ) -> list[CapacityReservation]:
        found = await self.of_clusters([cluster_id], ending_after=active_after)
        return [r for r in found if r.cancelled_at is None]

    async def of_clusters(
        self, cluster_ids: Sequence[ClusterId], *, ending_after: datetime
    ) -> list[CapacityReservation]:
        found = [
            copy.deepcopy(r)
            for r in self._uow.staged_quota(write=False).reservations.values()
            if r.cluster_id in cluster_ids and r.end > ending_after
        ]
        return sorted(found, key=lambda r: (r.start, r.id))

    async def get(self, reservation_id: ReservationId) -> CapacityReservation | None:
        return copy.deepcopy(self._uow.staged_quota(write=False).reservations.get(reservation_id))

    async def add(self, reservation: CapacityReservation) -> None:
        self._uow.staged_quota(write=True).reservations[reservation.id] = copy.deepcopy(reservation)

    async def cancel(self, *, reservation_id: ReservationId, at: datetime) -> None:
        found = self._uow.staged_quota(write=True).reservations.get(reservation_id)
        if found is not None and found.cancelled_at is None:
            found.cancelled_at = at


class _FakeServingRepository:
    """Deployments or benchmarks kept whole in the store, written at commit."""

    def __init__(self, uow: FakeUnitOfWork) -> None:
        self._uow = uow

    def _visible(self, tenant_id: TenantId) -> bool:
        tenant = self._uow.scope.tenant_id
        return tenant is None or tenant_id == tenant

    def _drain(self, entity: Deployment | Benchmark) -> None:
        for change in entity.changes:
            self._uow.record(change)
        entity.changes.clear()


class FakeDeploymentRepository(_FakeServingRepository):
    async def add(self, deployment: Deployment) -> None:
        self._uow.staged_deployments[deployment.id] = deployment
        self._drain(deployment)

    async def get(
        self, deployment_id: DeploymentId, *, for_update: bool = False
    ) -> Deployment | None:
        found = self._uow.store.deployments.get(deployment_id)
        if found is None or not self._visible(found.tenant_id):
            return None
        return copy.deepcopy(found)

    async def save(self, deployment: Deployment) -> None:
        stored = self._uow.store.deployments.get(deployment.id)
        if stored is not None and stored.version != deployment.version:
            raise Conflict("stale deployment", code="STALE_DEPLOYMENT")
        deployment.version += 1
        self._uow.staged_deployments[deployment.id] = deployment
        self._drain(deployment)

    async def on_cluster(self, cluster_id: ClusterId, *, limit: int) -> list[Deployment]:
        found = [
            copy.deepcopy(d)
            for d in self._uow.store.deployments.values()
            if d.cluster_id == cluster_id and self._visible(d.tenant_id)
        ]
        return sorted(found, key=lambda d: (d.created_at, d.id), reverse=True)[:limit]

    async def with_endpoints(self) -> list[Deployment]:
        return [
            copy.deepcopy(d)
            for d in self._uow.store.deployments.values()
            if d.endpoint_url and not d.stopped and self._visible(d.tenant_id)
        ]

    async def autoscaled(self) -> list[Deployment]:
        found = [
            copy.deepcopy(d)
            for d in self._uow.store.deployments.values()
            if d.autoscaling is not None and not d.stopped and self._visible(d.tenant_id)
        ]
        return sorted(found, key=lambda d: (d.created_at, str(d.id)))

    async def naming_secret(self, name: str) -> list[Deployment]:
        found = [
            copy.deepcopy(d)
            for d in self._uow.store.deployments.values()
            if not d.stopped
            and any(ref.name == name for ref in d.secrets)
            and self._visible(d.tenant_id)
        ]
        return sorted(found, key=lambda d: (d.created_at, str(d.id)))

    async def page(
        self,
        *,
        cluster_ids: frozenset[ClusterId],
        project_ids: frozenset[ProjectId] | None,
        statuses: frozenset[str],
        first: int,
        after: JobCursor | None,
    ) -> Page[Deployment]:
        found = sorted(
            (
                copy.deepcopy(d)
                for d in self._uow.store.deployments.values()
                if self._visible(d.tenant_id)
                and (not cluster_ids or d.cluster_id in cluster_ids)
                and (project_ids is None or d.project_id in project_ids)
                and (not statuses or d.status.value in statuses)
                and (
                    after is None or (d.created_at, d.id.int) < (after.created_at, after.job_id.int)
                )
            ),
            key=lambda d: (d.created_at, d.id),
            reverse=True,
        )
        return Page(found[:first], len(found) > first)


class FakeBenchmarkRepository(_FakeServingRepository):
    async def add(self, benchmark: Benchmark) -> None:
        self._uow.staged_benchmarks[benchmark.id] = benchmark
        self._drain(benchmark)

    async def get(self, benchmark_id: BenchmarkId, *, for_update: bool = False) -> Benchmark | None:
        found = self._uow.store.benchmarks.get(benchmark_id)
        if found is None or not self._visible(found.tenant_id):
            return None
        return copy.deepcopy(found)

    async def get_many(self, benchmark_ids: Sequence[BenchmarkId]) -> dict[BenchmarkId, Benchmark]:
        return {i: b for i in benchmark_ids if (b := await self.get(i)) is not None}

    async def save(self, benchmark: Benchmark) -> None:
        stored = self._uow.store.benchmarks.get(benchmark.id)
        if stored is not None and stored.version != benchmark.version:
            raise Conflict("stale benchmark", code="STALE_BENCHMARK")
        benchmark.version += 1
        self._uow.staged_benchmarks[benchmark.id] = benchmark
        self._drain(benchmark)

    async def page(
        self,
        *,
        deployment_id: DeploymentId | None,
        project_ids: frozenset[ProjectId] | None,
        first: int,
        after: JobCursor | None,
    ) -> Page[Benchmark]:
        found = sorted(
            (
                copy.deepcopy(b)
                for b in self._uow.store.benchmarks.values()
                if self._visible(b.tenant_id)
                and (deployment_id is None or b.deployment_id == deployment_id)
                and (project_ids is None or b.project_id in project_ids)
                and (
                    after is None or (b.created_at, b.id.int) < (after.created_at, after.job_id.int)
                )
            ),
            key=lambda b: (b.created_at, b.id),
            reverse=True,
        )
        return Page(found[:first], len(found) > first)

    async def unfinished(self) -> list[Benchmark]:
        return [
            copy.deepcopy(b)
            for b in self._uow.store.benchmarks.values()
            if b.status.value in ("PENDING", "RUNNING") and self._visible(b.tenant_id)
        ]

    async def save_samples(
        self, benchmark_id: BenchmarkId, samples: Sequence[RequestSample]
    ) -> None:
        self._uow.staged_samples[benchmark_id] = list(samples)

    async def samples(self, benchmark_id: BenchmarkId) -> list[RequestSample] | None:
        if await self.get(benchmark_id) is None:
            return None
        return self._uow.store.samples.get(benchmark_id)


class FakeUnitOfWork:
    def __init__(
        self,
        store: Store,
        scope: TenantScope,
        after_commit: Callable[[Sequence[StoredEvent]], Awaitable[None]] | None = None,
    ) -> None:
        self.store = store
        self.scope = scope
        self.after_commit = after_commit
        self.committed_events: list[StoredEvent] = []
        self.seen: dict[JobId, Job] = {}
        self.pending_new: dict[JobId, Job] = {}
        self.committed = False
        self.jobs = FakeJobRepository(self)
        self.clusters = FakeClusterRepository(store)
        self.tokens = FakeTokenRepository(store)
        self.audit = FakeAuditRepository(store)
        self.usage = FakeUsageRepository(store)
        self.budgets = FakeBudgetRepository(store)
        self.fleets = FakeFleetRepository(store)
        self.drains = FakeDrainRepository(store)
        self.secrets = FakeTenantSecretRepository(store)
        self.addons = FakeAddonRepository(store)
        self.quotas = FakeQuotaRepository(self)
        self.reservations = FakeReservationRepository(self)
        self.deployments = FakeDeploymentRepository(self)
        self.benchmarks = FakeBenchmarkRepository(self)
        self.staged_deployments: dict[DeploymentId, Deployment] = {}
        self.staged_benchmarks: dict[BenchmarkId, Benchmark] = {}
        self.staged_samples: dict[BenchmarkId, list[RequestSample]] = {}
        self.cluster_changes: list[ClusterChanged | ServingChange] = []
        self.estimated: dict[JobId, tuple[Job, bool]] = {}
        self.quota_copy: QuotaState | None = None
        self.quota_written = False

    def track(self, job: Job) -> Job:
        return self.seen.setdefault(job.id, job)

    def staged_quota(self, *, write: bool) -> QuotaState:
        if self.quota_copy is None:
            self.quota_copy = copy.deepcopy(self.store.quota)
        self.quota_written = self.quota_written or write
        return self.quota_copy

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.rollback()
        committed, self.committed_events = self.committed_events, []
        if committed and self.after_commit is not None:
            await self.after_commit(committed)

    async def current_sequence(self, cluster_id: ClusterId) -> int:
        return self.store.sequences[cluster_id]

    async def rollback(self) -> None:
        self.seen.clear()
        self.pending_new.clear()
        self.quota_copy, self.quota_written = None, False
        self.staged_deployments.clear()
        self.staged_benchmarks.clear()
        self.staged_samples.clear()

    def record(self, change: ClusterChanged | ServingChange) -> None:
        self.cluster_changes.append(change)

    async def latest_timeline(self, cluster_id: ClusterId) -> tuple[int, Timeline] | None:
        return self.store.timelines.get(cluster_id)

    async def timeline_sequence(self, cluster_id: ClusterId) -> int | None:
        found = self.store.timelines.get(cluster_id)
        return None if found is None else found[0]

    async def events_after(
        self, cluster_id: ClusterId, after: int, *, limit: int
    ) -> list[StoredEvent]:
        return retained_events(self.store, cluster_id, after, limit)

    async def commit(self) -> list[StoredEvent]:
        job_changes: list[JobChanged] = []
        ended = ended_runs(self.seen.values())
        if ended:  # metered as the SQL unit of work does
            ids = {u.cluster_id for u in ended}
            set_prices = await self.clusters.prices(list(ids))
            books = {c: PriceBook.of(self.store.clusters[c].settings, set_prices[c]) for c in ids}
            for job in self.seen.values():
                self.store.usage.extend(meter(job, books))
        for job in self.seen.values():
            before = self.store.jobs.get(job.id)
            if (
                before is not None
                and not job.changes
                and job_to_document(before) != (job_to_document(job))
            ):  # as the SQL unit of work: no committed change without its event
                raise AssertionError(f"job {job.id} changed without recording it")
            job_changes.extend(job.changes)
            job.changes = []
            self.store.jobs[job.id] = copy.deepcopy(job)
        job_changes.sort(key=lambda c: c.recorded)  # as the SQL unit of work
        for job_id, (estimated, _) in self.estimated.items():
            self.store.jobs[job_id] = copy.deepcopy(estimated)
        self.estimated.clear()
        changes: list[Change] = [*job_changes, *self.cluster_changes]
        self.cluster_changes = []
        for d in self.staged_deployments.values():
            self.store.deployments[d.id] = copy.deepcopy(d)
        for b in self.staged_benchmarks.values():
            self.store.benchmarks[b.id] = copy.deepcopy(b)
        self.store.samples.update(self.staged_samples)
        self.staged_deployments.clear()
        self.staged_benchmarks.clear()
        self.staged_samples.clear()
        stored: list[StoredEvent] = []
        for change in changes:
            if isinstance(change, ClusterChanged):
                cluster, at = change.cluster_id, T0
            elif not isinstance(change, JobChanged):
                cluster, at = change.cluster_id, change.at
            else:
                cluster = change.cluster_id
                at = change.transition.at if change.transition else change.job.updated_at
                if change.move is not None:
                    self.store.moves.append(change.move)
            self.store.sequences[cluster] += 1
            event = StoredEvent(cluster, self.store.sequences[cluster], change, at)
            self.store.events[cluster].append(event)
            stored.append(event)
            if isinstance(change, ClusterChanged):
                if change.state is not None:
                    self.store.timelines[cluster] = (event.sequence, change.state)
            elif isinstance(change, JobChanged) and change.transition is not None:
                self.store.history.append(change.transition)
        self.pending_new.clear()
        if self.quota_copy is not None and self.quota_written:
            self.store.quota = self.quota_copy
        self.quota_copy, self.quota_written = None, False
        self.committed = True
        self.store.commits += 1
        self.committed_events.extend(stored)
        return stored


class FakeUnitOfWorkFactory:
    def __init__(self, store: Store | None = None) -> None:
        self.store = store or Store()
        self.opened: list[FakeUnitOfWork] = []
        self.after_commit: Callable[[Sequence[StoredEvent]], Awaitable[None]] | None = None
        """As the database's: what committed events are handed to, after the unit of work."""

    def __call__(self, scope: TenantScope, *, consistent_read: bool = False) -> FakeUnitOfWork:
        uow = FakeUnitOfWork(self.store, scope, self.after_commit)
        self.opened.append(uow)
        return uow


@dataclass
class Enqueued:
    task: str
    key: str
    defer_until: datetime | None
    kwargs: dict[str, Any]


class FakeTaskQueue:
    def __init__(self) -> None:
        self.enqueued: list[Enqueued] = []

    async def enqueue(
        self, task: str, *, key: str, defer_until: datetime | None = None, **kwargs: Any
    ) -> bool:
        if any(e.key == key for e in self.enqueued):
            return False
        self.enqueued.append(Enqueued(task, key, defer_until, kwargs))
        return True

    async def answers(self) -> bool:
        return True

    def names(self) -> list[str]:
        return [e.task for e in self.enqueued]


class FakePublisher:
    def __init__(self) -> None:
        self.published: list[StoredEvent] = []

    async def publish(self, events: Sequence[StoredEvent]) -> None:
        self.published.extend(events)


class FakeGateway:
    def __init__(self) -> None:
        self.submitted: list[Workload] = []
        self.cancelled: list[tuple[JobId, int]] = []
        self.evicted: list[tuple[JobId, int, int]] = []
        """(job, attempt, grace seconds) of each eviction (also in `cancelled`)."""
        self.cordoned: set[str] = set()
        self.priorities: list[tuple[JobId, int, JobPriority]] = []
        self.workloads: list[WorkloadObservation] = []
        self.stream: asyncio.Queue[WorkloadObservation | list[WorkloadObservation]] = (
            asyncio.Queue()
        )
        """What the watch yields: one observation, or a batch (an admission cycle's, or [])."""
        self.node_list: list[Node] = []
        self.fail_with: Exception | None = None
        self.list_calls = 0
        self.exited: list[tuple[JobId, int, bool, str]] = []

    async def submit(self, workload: Workload) -> None:
        if self.fail_with:
            raise self.fail_with
        if all(w.name != workload.name for w in self.submitted):
            self.submitted.append(workload)

    async def cancel(self, job_id: JobId, attempt: int) -> None:
        if self.fail_with:
            raise self.fail_with
        self.cancelled.append((job_id, attempt))

    async def evict(self, job_id: JobId, attempt: int, *, grace_seconds: int) -> None:
        await self.cancel(job_id, attempt)
        self.evicted.append((job_id, attempt, grace_seconds))

    async def drain_node(self, node: str) -> list[str]:
        self.cordoned.add(node)
        return []

    async def logs(
        self,
        job_id: JobId,
        attempt: int,
        *,
        pod: str | None = None,
        since: datetime | None = None,
        tail: int | None = None,
    ) -> list[LogLine]:
        return []

    async def undrain_node(self, node: str) -> None:
        self.cordoned.discard(node)

    async def set_priority(self, job_id: JobId, attempt: int, priority: JobPriority) -> None:
        self.priorities.append((job_id, attempt, priority))

    async def nodes(self) -> list[Node]:
        return list(self.node_list)

    async def list_workloads(self) -> list[WorkloadObservation]:
        self.list_calls += 1
        return list(self.workloads)

    async def watch(self) -> AsyncIterator[list[WorkloadObservation]]:
        while True:
            item = await self.stream.get()
            yield item if isinstance(item, list) else [item]

    async def workload_exited(
        self, job_id: JobId, attempt: int, *, succeeded: bool, reason: str
    ) -> bool:
        """Recorded, as a simulated cluster would end the workload."""
        self.exited.append((job_id, attempt, succeeded, reason))
        return True

    async def benchmark_run(self, job_id: JobId, attempt: int) -> LoadRun | None:
        return None

    async def pending_in_queue(self, namespace: str, queue: str) -> list[PendingWorkload] | None:
        return None


class FakeGatewayFactory:
    def __init__(self, gateway: FakeGateway | None = None) -> None:
        self.gateway = gateway or FakeGateway()

    def for_cluster(self, cluster: Cluster) -> FakeGateway:
        return self.gateway


class FakeOutboundPolicy:
    """The OutboundPolicy with a table of names instead of DNS: the real rules
    (domain.model.outbound) judge the addresses a name is given in `hosts`; a name not there
    does not resolve. `allow`: the operator's allow-list."""

    def __init__(
        self, allow: Sequence[str] = (), hosts: Mapping[str, Sequence[str]] | None = None
    ) -> None:
        self.rules = OutboundRules(AllowList.parse(allow))
        self.hosts = {name: [ip_address(a) for a in found] for name, found in (hosts or {}).items()}
        self.checked: list[str] = []

    async def check(self, url: OutboundUrl) -> Verdict:
        self.checked.append(url.text)
        found = [url.address] if url.address is not None else self.hosts.get(url.host, [])
        return judge(url, found, self.rules)


class FakeHasher:
    def hash(self, secret: str) -> str:
        return "fake$" + secret[::-1]

    def verify(self, secret: str, hashed: str) -> bool:
        return self.hash(secret) == hashed


class FakeLease:
    def __init__(self, grant: bool = True) -> None:
        self.grant = grant
        self.held: set[str] = set()

    async def acquire(self, name: str, *, ttl_seconds: float) -> bool:
        if self.grant:
            self.held.add(name)
        return self.grant

    async def renew(self, name: str, *, ttl_seconds: float) -> bool:
        return name in self.held

    async def release(self, name: str) -> None:
        self.held.discard(name)


class FakeEventLog:
    def __init__(self, store: Store) -> None:
        self.store = store

    async def current_sequence(self, cluster_id: ClusterId) -> int:
        return self.store.sequences[cluster_id]

    async def retained_after(self, cluster_id: ClusterId) -> int:
        return self.store.retained_after[cluster_id]

    async def read_after(
        self, cluster_id: ClusterId, after: int, *, limit: int
    ) -> list[StoredEvent]:
        return retained_events(self.store, cluster_id, after, limit)


def retained_events(
    store: Store, cluster_id: ClusterId, after: int, limit: int
) -> list[StoredEvent]:
    floor = store.retained_after[cluster_id]
    return [e for e in store.events[cluster_id] if e.sequence > max(after, floor)][:limit]


class FakeSubscription:
    def __init__(self, hub: FakeHub, buffer: int) -> None:
        self.hub = hub
        self.buffer = buffer
        self.queue: collections.deque[StoredEvent | Overflowed] = collections.deque()
        self.ready = asyncio.Event()
        self.closed = False

    def push(self, event: StoredEvent) -> None:
        if len(self.queue) >= self.buffer:
            self.queue.clear()
            self.queue.append(Overflowed())
        else:
            self.queue.append(event)
        self.ready.set()

    def __aiter__(self) -> AsyncIterator[StoredEvent | Overflowed]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[StoredEvent | Overflowed]:
        while not self.closed:
            if self.queue:
                yield self.queue.popleft()
            else:
                self.ready.clear()
                await self.ready.wait()

    async def close(self) -> None:
        self.closed = True
        self.hub.subscriptions.remove(self)


class FakeHub:
    def __init__(self) -> None:
        self.subscriptions: list[FakeSubscription] = []

    async def subscribe(self, cluster_id: ClusterId, *, buffer: int) -> FakeSubscription:
        sub = FakeSubscription(self, buffer)
        self.subscriptions.append(sub)
        return sub

    def deliver(self, events: Sequence[StoredEvent]) -> None:
        for sub in self.subscriptions:
            for event in events:
                sub.push(event)


def make_cluster(
    cluster_id: ClusterId,
    *,
    name: str = "sim",
    nodes: Sequence[tuple[str, int]] = (
        ("nvidia-a100-80gb", 8),
        ("nvidia-a100-80gb", 8),
        ("nvidia-tesla-t4", 4),
    ),
    status: ClusterStatus = ClusterStatus.AVAILABLE,
) -> Cluster:
    import uuid

    cluster = Cluster(
        id=cluster_id,
        name=name,
        platform=Platform.SIMULATED,
        status=status,
        created_at=T0,
        updated_at=T0,
    )
    cluster.nodes = [
        Node(
            id=NodeId(uuid.uuid4()),
            cluster_id=cluster_id,
            name=f"node-{i}",
            node_type=NodeType.GPU,
            gpu_type=gpu_type,
            gpu_count=count,
            cpu_cores=64,
            memory_gb=512,
            labels={GPU_LABEL: gpu_type, "kubernetes.io/hostname": f"node-{i}"},
        )
        for i, (gpu_type, count) in enumerate(nodes)
    ]
    return cluster


def install_cluster(store: Store, cluster: Cluster) -> Cluster:
    """Put a cluster in the fake store as `ClusterService.create_simulated` leaves it: with its
    default flavors and ClusterQueue."""
    store.clusters[cluster.id] = cluster
    flavors, queue = default_quotas(cluster, T0)
    for flavor in flavors:
        store.quota.flavors[(cluster.id, flavor.name)] = flavor
    store.quota.cluster_queues[(cluster.id, queue.name)] = queue
    return cluster
