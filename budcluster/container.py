"""The App: every object one process's wiring built (`budcluster.bootstrap`), by name.

Besides holding the services the GraphQL view, the task functions and the CLI call, it answers
what is asked of a process from outside (readiness, the metrics scrape), makes the first start's
defaults, and releases what was built (`close`). It starts nothing: what runs in the background
is `budcluster.runtime.Runtime`'s.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from arq.connections import ArqRedis
from redis.asyncio import Redis

from adapters.compute.pool import ProcessCompute
from adapters.db.engine import Database
from adapters.db.eventlog import SqlEventLog
from adapters.events.hub import EventHubImpl
from adapters.events.redis import RedisRelay
from adapters.metrics import ClusterGauges, PrometheusMetrics
from adapters.simulated.config import parse_node_groups, settings_for
from adapters.simulated.serving import SimulatedServing
from adapters.tasks.inprocess import InProcessTaskQueue
from adapters.tracing import Tracing
from budcluster.routers import GatewayRouter
from budcluster.runtime import log_failure
from budcluster.settings import Settings
from domain.errors import Conflict
from domain.model.audit import OK, AuditedOperation
from domain.model.audit import current as audit_context
from domain.model.ids import TenantId
from domain.model.job import JobStatus
from domain.model.principal import Principal, Scope
from domain.ports.clock import Clock
from domain.ports.compute import Compute
from domain.ports.events import EventPublisher
from domain.ports.limits import RateLimiter
from domain.ports.tasks import TaskQueue
from domain.services.addons import AddonService
from domain.services.audit import AuditService
from domain.services.autoscaler import Autoscaler
from domain.services.balancing import FleetBalancer
from domain.services.benchmark_progress import BenchmarkProgressService
from domain.services.benchmark_runs import BenchmarkRunner
from domain.services.benchmarks import BenchmarkService
from domain.services.budgets import BudgetService
from domain.services.cluster_updates import ClusterUpdatesService
from domain.services.clusters import ClusterService
from domain.services.deployment_updates import DeploymentUpdatesService
from domain.services.deployments import DeploymentService
from domain.services.dispatch import Dispatcher
from domain.services.drains import DrainService
from domain.services.fleets import FleetService
from domain.services.jobs import JobService
from domain.services.logs import LogService
from domain.services.observations import ObservationService
from domain.services.queue_positions import QueuePositionService
from domain.services.quotas import QuotaService
from domain.services.registry import ClusterRegistry
from domain.services.reservations import ReservationService
from domain.services.schedule_updates import ScheduleUpdatesService
from domain.services.spend import SpendService
from domain.services.task_names import TaskBacklog
from domain.services.tenant_secrets import SecretService
from domain.services.timeline import TimelineRefresher, TimelineService
from domain.services.tokens import IssuedToken, TokenService
from domain.services.updates import UpdatesService
from domain.services.watch import ClusterSupervisor
from domain.services.workloads import WorkloadService

log = logging.getLogger(__name__)

DEFAULT_CLUSTER = "local-sim"
GAUGES_SECONDS = 10.0
OPERATOR = Principal(TenantId(uuid.UUID(int=0)), frozenset({Scope.ADMIN}))
"""Who reads the cluster gauges: every tenant's queues."""
HOLDING = frozenset({JobStatus.ADMITTED, JobStatus.RUNNING})


@dataclass
class App:
    settings: Settings
    clock: Clock
    db: Database
    event_log: SqlEventLog
    hub: EventHubImpl
    publisher: EventPublisher
    tasks: TaskQueue
    backlog: TaskBacklog
    gateways: GatewayRouter
    jobs: JobService
    workloads: WorkloadService
    observations: ObservationService
    clusters: ClusterService
    quotas: QuotaService
    reservations: ReservationService
    tokens: TokenService
    updates: UpdatesService
    timeline: TimelineService
    refresher: TimelineRefresher
    schedule_updates: ScheduleUpdatesService
    supervisor: ClusterSupervisor
    registry: ClusterRegistry
    cluster_updates: ClusterUpdatesService
    queue_positions: QueuePositionService
    deployments: DeploymentService
    autoscaler: Autoscaler
    benchmarks: BenchmarkService
    benchmark_runner: BenchmarkRunner
    deployment_updates: DeploymentUpdatesService
    benchmark_progress: BenchmarkProgressService
    serving: SimulatedServing
    limiter: RateLimiter
    compute: Compute
    metrics: PrometheusMetrics
    audit: AuditService
    spend: SpendService
    budgets: BudgetService
    fleets: FleetService
    dispatcher: Dispatcher
    balancer: FleetBalancer
    drains: DrainService
    secrets: SecretService
    logs: LogService
    addons: AddonService
    redis: Redis | None = None
    arq: ArqRedis | None = None
    relay: RedisRelay | None = None
    tracing: Tracing | None = None
    _gauges_at: datetime | None = None

    @property
    def task_context(self) -> dict[str, Any]:
        return {
            "workloads": self.workloads,
            "registry": self.registry,
            "deployments": self.deployments,
            "benchmark_runner": self.benchmark_runner,
            "logs": self.logs,
            "addons": self.addons,
            "app": self,
        }

    async def metrics_text(self) -> tuple[bytes, str]:
        """What a scrape of /metrics gets. The cluster gauges are read again when the last read
        is older than GAUGES_SECONDS (scrapes come every 15 to 60 s); a failed read keeps the
        last one."""
        now = self.clock.now()
        if self._gauges_at is None or (now - self._gauges_at).total_seconds() >= GAUGES_SECONDS:
            self._gauges_at = now
            try:
                async with asyncio.timeout(5):
                    self.metrics.clusters = await self.cluster_gauges()
            except Exception as exc:
                log_failure("reading the cluster gauges", exc)
        return self.metrics.exposition()

    async def cluster_gauges(self) -> ClusterGauges:
        """GPUs per cluster and type (total, usable, used), each cluster's status, every
        ClusterQueue's quota and use, and the active jobs by source, type and status."""
        clusters = await self.clusters.all()
        ids = [c.id for c in clusters]
        overview = await self.quotas.overview(OPERATOR, ids) if ids else {}
        active = await self.jobs.active_on(ids)
        gpus: dict[tuple[str, str, str], float] = {}
        quota: dict[tuple[str, str, str, str, str], float] = {}
        for cluster in clusters:
            usable = cluster.gpu_capacity(usable_only=True)
            for gpu_type, total in cluster.gpu_capacity().items():
                gpus[(cluster.name, gpu_type, "total")] = total
                gpus[(cluster.name, gpu_type, "usable")] = usable.get(gpu_type, 0)
                gpus[(cluster.name, gpu_type, "used")] = 0
            for queue, rows in (
                overview[cluster.id].usage if cluster.id in overview else {}
            ).items():
                for row in rows:
                    key = (cluster.name, queue, row.flavor, row.resource)
                    quota[(*key, "nominal")] = row.nominal_quota
                    quota[(*key, "used")] = row.used
                    quota[(*key, "borrowed")] = row.borrowed
                    if row.borrowing_limit is not None:
                        quota[(*key, "borrowing_limit")] = row.borrowing_limit
        names = {c.id: c.name for c in clusters}
        jobs: dict[tuple[str, str, str], int] = {}
        for job in active:
            kind = (job.source.kind.value, job.job_type.value, job.status.value)
            jobs[kind] = jobs.get(kind, 0) + 1
            if job.status in HOLDING and job.resources.gpu_type:
                used = (names[job.cluster_id], job.resources.gpu_type, "used")
                if used in gpus:
                    gpus[used] += job.resources.total_gpus
        return ClusterGauges(
            gpus=gpus,
            status={c.name: c.status.value for c in clusters},
            quota=quota,
            jobs=jobs,
        )

    async def close(self) -> None:
        """Release what was built: running benchmarks, the model endpoints' server, in-process
        tasks, the real clusters' connections, the compute processes, the Redis clients, the
        database's connections and the tracing pipeline (its last spans flushed). Stop the
        process's Runtime first, as its loops use these."""
        await self.benchmark_runner.close()
        await self.serving.close()
        if isinstance(self.tasks, InProcessTaskQueue):
            await self.tasks.close()
        await self.gateways.real.close()
        if isinstance(self.compute, ProcessCompute):
            self.compute.close()
        if self.arq is not None:
            await self.arq.aclose()
        if self.redis is not None:
            await self.redis.aclose()
        await self.db.dispose()
        if self.tracing is not None:
            tracing, self.tracing = self.tracing, None
            tracing.close()
            await asyncio.to_thread(tracing.flush)

    async def readiness(self) -> dict[str, bool]:
        """Whether each store this process needs answers (within two seconds), and the database
        has this release's migrations (at head, or ahead during a rolling upgrade)."""
        checks: dict[str, bool] = {}

        async def database() -> None:
            await self.clusters.all()

        async def redis() -> None:
            assert self.redis is not None
            await self.redis.ping()

        async def migrations() -> None:
            from budcluster import migrate

            if not await migrate.serves_this_code(self.db.engine):
                raise LookupError("the database is behind this release's migrations")

        probes = {"database": database, "migrations": migrations} | (
            {"redis": redis} if self.redis is not None else {}
        )
        for name, probe in probes.items():
            try:
                async with asyncio.timeout(2):
                    await probe()
                checks[name] = True
            except Exception as exc:
                log.warning("readiness: %s does not answer (%s)", name, type(exc).__name__)
                checks[name] = False
        return checks

    async def ensure_defaults(self, actor: str = "cli:budcluster") -> IssuedToken | None:
        """First start: a simulated cluster if there is none, default quotas for clusters that
        have no ClusterQueue (ones registered before quotas existed), and an admin token if there
        is none (returned so the caller can show it once; audited as a `token create` by
        `actor`, the machine user who started the service, in the token's transaction)."""
        clusters = await self.clusters.all()
        if not clusters:
            groups = parse_node_groups(self.settings.sim_nodes)
            await self.clusters.create_simulated(
                DEFAULT_CLUSTER, settings_for(groups, time_scale=self.settings.sim_time_scale)
            )
            log.info(
                "created the simulated cluster %s (%s)", DEFAULT_CLUSTER, self.settings.sim_nodes
            )
        for cluster in clusters:
            try:
                if await self.quotas.ensure_defaults(cluster):
                    log.info("gave cluster %s its default quotas", cluster.name)
            except Conflict:
                pass  # another process did it at the same time
        if await self.tokens.any_issued():
            return None
        tenant, name = TenantId(uuid.uuid4()), "admin (first start)"
        operation = AuditedOperation(
            tenant_id=tenant,
            actor=actor,
            token_id=None,
            operation="token create",
            input={"name": name, "first_start": True, "operator": True, "scopes": ["admin"]},
            source="cli",
        )
        audited = audit_context.set(operation)
        outcome = "ERROR"
        try:
            issued = await self.tokens.issue(
                tenant_id=tenant, name=name, scopes=frozenset({Scope.ADMIN}), operator=True
            )
            operation.target(issued.token.id)
            outcome = OK
        finally:
            audit_context.reset(audited)
            await self.audit.finish(operation, outcome)
        return issued
