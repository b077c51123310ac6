"""Wiring: which adapter stands behind each port, for the way this process runs.

`build` makes the whole object graph from Settings; `App.start` starts what runs in the
background (the Redis relay, the hub's catch-up, the cluster supervisor); `App.close` stops it.
Tests build the same graph with their own settings and clock.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import partial
from typing import Any

from arq import create_pool
from arq.connections import ArqRedis, RedisSettings
from redis.asyncio import Redis

from adapters.auth.hashing import HmacSecretHasher
from adapters.clock import SystemClock
from adapters.compute.pool import ProcessCompute
from adapters.db.admission_check import unwanted_attempts
from adapters.db.engine import Database
from adapters.db.eventlog import SqlEventLog
from adapters.db.leases import PostgresLease
from adapters.db.uow import unanswered
from adapters.events.hub import EventHubImpl, InProcessPublisher
from adapters.events.redis import RedisPublisher, RedisRelay
from adapters.helm.releases import PyHelmReleaseFactory
from adapters.kubernetes.connection import KubeClusterApi, KubeConnector
from adapters.kubernetes.gateway import KueueGateways
from adapters.kubernetes.kueue.check import check_workload
from adapters.kubernetes.serving import KubeEndpoints
from adapters.leases import LocalLease
from adapters.limits.buckets import LocalRateLimiter, RedisRateLimiter
from adapters.loadgen.client import StreamingLoadGenerator
from adapters.metrics import ClusterGauges, PrometheusMetrics
from adapters.outbound import ResolvingOutboundPolicy
from adapters.secrets.envelope import LazySecretBox
from adapters.secrets.keyring import directory_stamp, load_or_create
from adapters.simulated.config import parse_node_groups, settings_for
from adapters.simulated.endpoints import SimulatedEndpoints, parse_key, served_model
from adapters.simulated.gateway import SimulatedClusters
from adapters.simulated.serving import ServedModel, SimulatedServing
from adapters.tasks.arq import ArqTaskQueue, deserialize, serialize
from adapters.tasks.inprocess import InProcessTaskQueue
from adapters.tracing import Tracing, install_otlp
from budcluster import datadir
from budcluster.settings import Settings
from domain.aio import InThread, cancel_and_wait, wait_event
from domain.errors import Conflict, Unavailable
from domain.model.audit import OK, AuditedOperation
from domain.model.audit import current as audit_context
from domain.model.cluster import Cluster, Platform
from domain.model.deployment import Deployment, EndpointState
from domain.model.ids import ClusterId, DeploymentId, JobId, TenantId
from domain.model.job import JobStatus
from domain.model.outbound import AllowList, OutboundRules
from domain.model.principal import Principal, Scope
from domain.model.quota import QuotaSet
from domain.model.reservation import CapacityReservation
from domain.ports.clock import Clock
from domain.ports.compute import Compute
from domain.ports.events import EventPublisher
from domain.ports.gateways import ClusterGateway
from domain.ports.leases import Lease
from domain.ports.limits import RateLimiter
from domain.ports.tasks import TaskQueue
from domain.ports.unit_of_work import TenantScope
from domain.services.audit import AuditService
from domain.services.benchmark_runs import BenchmarkRunner
from domain.services.benchmarks import BenchmarkService
from domain.services.cluster_updates import ClusterUpdatesService
from domain.services.clusters import ClusterService
from domain.services.deployments import DeploymentService
from domain.services.jobs import JobService
from domain.services.observations import ObservationService
from domain.services.queue_positions import QueuePositionService
from domain.services.quotas import QuotaService
from domain.services.reactions import Reactions
from domain.services.registry import ClusterRegistry
from domain.services.reservations import ReservationLimits, ReservationService
from domain.services.schedule_updates import ScheduleUpdatesService
from domain.services.serving_updates import ServingUpdatesService
from domain.services.task_names import TaskBacklog
from domain.services.timeline import TimelineRefresher, TimelineService
from domain.services.tokens import IssuedToken, TokenService
from domain.services.updates import UpdatesService
from domain.services.watch import ClusterSupervisor
from domain.services.workloads import WorkloadService
from workers.tasks import TASKS

log = logging.getLogger(__name__)

DEFAULT_CLUSTER = "local-sim"
GAUGES_SECONDS = 10.0
OPERATOR = Principal(TenantId(uuid.UUID(int=0)), frozenset({Scope.ADMIN}))
"""Who reads the cluster gauges: every tenant's queues."""
HOLDING = frozenset({JobStatus.ADMITTED, JobStatus.RUNNING})


class GatewayRouter:
    """Chooses the gateway adapter for a cluster by its platform."""

    def __init__(self, simulated: SimulatedClusters, real: KueueGateways) -> None:
        self.simulated = simulated
        self.real = real

    def for_cluster(self, cluster: Cluster) -> ClusterGateway:
        if cluster.platform is Platform.SIMULATED:
            return self.simulated.for_cluster(cluster)
        return self.real.for_cluster(cluster)


class ServingRouter:
    """Chooses where a cluster serves models by its platform (ServingEndpoints)."""

    def __init__(self, simulated: SimulatedEndpoints, real: KubeEndpoints | None = None) -> None:
        self.simulated = simulated
        self.real = real or KubeEndpoints()

    async def endpoint(
        self, cluster: Cluster, deployment: Deployment, running: Sequence[JobId]
    ) -> EndpointState:
        if cluster.platform is Platform.SIMULATED:
            return await self.simulated.endpoint(cluster, deployment, running)
        return await self.real.endpoint(cluster, deployment, running)


def _log_failure(what: str, exc: Exception) -> None:
    """A periodic chore failed: an outage is a warning (the next round tries again), anything
    else a bug with its traceback. (Found by the fault suite: a PostgreSQL restart logged
    tracebacks from event pruning.)"""
    if isinstance(exc, Unavailable) or unanswered(exc):
        log.warning("%s: the database does not answer (%s); next round", what, exc)
    else:
        log.exception("%s failed", what)


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
    benchmarks: BenchmarkService
    benchmark_runner: BenchmarkRunner
    serving_updates: ServingUpdatesService
    serving: SimulatedServing
    limiter: RateLimiter
    compute: Compute
    metrics: PrometheusMetrics
    audit: AuditService
    redis: Redis | None = None
    arq: ArqRedis | None = None
    relay: RedisRelay | None = None
    tracing: Tracing | None = None
    background: list[asyncio.Task[Any]] = field(default_factory=list)
    _gauges_at: datetime | None = None

    @property
    def task_context(self) -> dict[str, Any]:
        return {
            "workloads": self.workloads,
            "registry": self.registry,
            "deployments": self.deployments,
            "benchmark_runner": self.benchmark_runner,
            "app": self,
        }

    async def start(self, *, supervisor: bool | None = None) -> None:
        if isinstance(self.tasks, InProcessTaskQueue):
            self.tasks.context.update(self.task_context)
        await self.serving.start(remembered=await self._endpoints_port())
        self.background.append(asyncio.create_task(self._serve(), name="model-serving"))
        if self.relay is not None:
            self.background.append(asyncio.create_task(self.relay.run(), name="event-relay"))
            await wait_event(self.relay.connected, 5)
        self.background.append(
            asyncio.create_task(
                self.hub.run_catch_up(self.settings.catch_up_seconds), name="event-catch-up"
            )
        )
        self.background.append(asyncio.create_task(self.backlog.run(), name="task-backlog"))
        if self.settings.run_supervisor if supervisor is None else supervisor:
            self.background.append(
                asyncio.create_task(self.supervisor.run(), name="cluster-supervisor")
            )
            self.background.append(asyncio.create_task(self._prune(), name="event-pruning"))
            if not isinstance(self.tasks, ArqTaskQueue):  # arq workers run it as a cron job
                self.background.append(
                    asyncio.create_task(self._sync_clusters(), name="cluster-sync")
                )

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
                _log_failure("reading the cluster gauges", exc)
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
                    gpus[used] += job.resources.gpu_count * job.resources.pod_count
        return ClusterGauges(
            gpus=gpus,
            status={c.name: c.status.value for c in clusters},
            quota=quota,
            jobs=jobs,
        )

    async def _endpoints_port(self) -> int | None:
        """The port the simulated deployments' endpoint URLs name: where this service served
        them before it restarted (the most named, should processes have disagreed)."""
        try:
            found = await self.deployments.with_endpoints(Platform.SIMULATED)
        except Exception as exc:  # not migrated yet, or the database does not answer
            log.warning("model endpoints: where they were is unknown (%s)", type(exc).__name__)
            return None
        urls = [d.endpoint_url for d in found if d.endpoint_url]
        ports = Counter(p for p in map(self.serving.port_of, urls) if p)
        return ports.most_common(1)[0][0] if ports else None

    async def _serve(self) -> None:
        """Deployments learn where this process serves their endpoints (the port of before a
        restart, unless it was taken), then benchmark runs whose process stopped are failed,
        every 15 s."""
        try:
            await self.deployments.refresh_all()
        except Exception as exc:
            _log_failure("refreshing deployments", exc)
        while True:
            await asyncio.sleep(15)
            try:
                await self.benchmark_runner.sweep()
            except Exception as exc:
                _log_failure("sweeping benchmark runs", exc)

    async def _sync_clusters(self) -> None:
        while True:
            await asyncio.sleep(self.settings.cluster_sync_seconds)
            try:
                await self.registry.sync_all()
            except Exception as exc:
                _log_failure("syncing clusters", exc)

    async def _prune(self) -> None:
        while True:
            await asyncio.sleep(60)
            try:
                for cluster in await self.clusters.all():
                    await self.event_log.prune(cluster.id, keep=self.settings.event_retention)
                await self.audit.prune()
            except Exception as exc:
                _log_failure("pruning events", exc)

    async def close(self) -> None:
        await cancel_and_wait(self.background)
        self.background.clear()
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


async def build(
    settings: Settings,
    *,
    clock: Clock | None = None,
    connector: KubeConnector | None = None,
    role: str = "api",
) -> App:
    """The App. `role` names the process in its traces (api or worker)."""
    clock = clock or SystemClock()
    kube = connector or KubeConnector(allow_plain_http=settings.kube_plain_http)
    if settings.is_embedded:
        datadir.secure(settings.data_dir, settings.database_url)
    db = Database(settings.database_url)
    tracing: Tracing | None = None
    if settings.tracing:
        if settings.otlp_traces_url:
            install_otlp(settings.otlp_traces_url, role=role)
        tracing = Tracing.instrument(db.engine)  # before the clients below are made
    event_log = SqlEventLog(db)
    hub = EventHubImpl(event_log)
    redis: Redis | None = None
    arq: ArqRedis | None = None
    relay: RedisRelay | None = None
    if settings.redis_url:
        redis = Redis.from_url(settings.redis_url)
    publisher: EventPublisher
    if settings.events == "redis":
        assert redis is not None
        publisher = RedisPublisher(redis, hub, channel=settings.event_channel)
        relay = RedisRelay(redis, hub, channel=settings.event_channel, clock=clock)
    else:
        publisher = InProcessPublisher(hub)
    tasks: TaskQueue
    if settings.tasks == "arq":
        assert settings.redis_url is not None
        arq = await create_pool(
            RedisSettings.from_dsn(settings.redis_url),
            job_serializer=serialize,
            job_deserializer=deserialize,
            default_queue_name=settings.queue_name,
        )
        tasks = ArqTaskQueue(arq, queue_name=settings.queue_name)
    else:
        tasks = InProcessTaskQueue(TASKS, clock)
    backlog = TaskBacklog(tasks, clock)  # what the queue refused after a commit, queued again
    # in the source of truth: no cluster's progress waits on Redis (one process on SQLite)
    lease: Lease = PostgresLease(db.engine) if not db.is_sqlite else LocalLease()
    buckets = {"capacity": settings.rate_burst, "per_second": settings.rate_points_per_minute / 60}
    limiter: RateLimiter = (
        RedisRateLimiter(redis, clock, prefix=settings.redis_prefix, **buckets)
        if redis is not None and not settings.is_embedded
        else LocalRateLimiter(clock, **buckets)
    )

    uow = db.unit_of_work
    rules = OutboundRules(AllowList.parse(settings.outbound_allow))
    outbound = ResolvingOutboundPolicy(rules)  # every URL a caller gives: one policy
    compute: Compute = (
        ProcessCompute(settings.compute_workers) if settings.compute_workers > 0 else InThread()
    )

    async def configuration(cluster_id: ClusterId) -> tuple[QuotaSet, list[CapacityReservation]]:
        async with uow(TenantScope.system()) as reader:
            quotas = await reader.quotas.quota_set(cluster_id)
            reservations = await reader.reservations.active(cluster_id, active_after=clock.now())
        return quotas, reservations

    gateways = GatewayRouter(
        SimulatedClusters(
            db.engine,
            clock,
            configuration,
            serialised=db.serialised,
            poll_seconds=settings.sim_poll_seconds,
            admission_check=unwanted_attempts,
        ),
        KueueGateways(
            connect=lambda cluster_id: open_kube(cluster_id),
            clock=clock,
            releases=PyHelmReleaseFactory(
                open_kubeconfig=lambda cluster_id: registry.open_kubeconfig(cluster_id),
                executable=settings.helm_executable,
                timeout=settings.helm_timeout,
            ).for_cluster,
            benchmark_image=settings.benchmark_image,
        ),
    )
    from budcluster.http.persisted import operation_names  # the package imports this module

    metrics = PrometheusMetrics(
        known_operations=operation_names(), subscriber_count=lambda: hub.subscriber_count
    )
    hub.on_overflow = metrics.subscriber_overflowed
    reactions = Reactions(publisher=publisher, tasks=backlog, uow=uow, observe=metrics.record)
    db.after_commit = reactions
    jobs = JobService(
        uow=uow, clock=clock, tasks=backlog, check_workload=check_workload, outbound=outbound
    )
    workloads = WorkloadService(uow=uow, clock=clock, gateways=gateways)
    observations = ObservationService(
        uow=uow,
        clock=clock,
        jobs=jobs,
        orphan_grace=timedelta(seconds=settings.orphan_grace_seconds),
    )
    quotas = QuotaService(uow=uow, clock=clock)
    reservations = ReservationService(
        uow=uow,
        clock=clock,
        limits=ReservationLimits(
            max_length=timedelta(hours=settings.reservation_max_hours),
            max_lead=timedelta(days=settings.reservation_max_lead_days),
            max_share=settings.reservation_max_share,
        ),
    )
    timeline = TimelineService(
        uow=uow,
        clock=clock,
        jobs=jobs,
        segment_key=hmac.new(settings.pepper(), b"timeline segment ids", hashlib.sha256).digest(),
        compute=compute,
    )
    timeline.on_refreshed = metrics.reestimated
    refresher = TimelineRefresher(
        timeline,
        hub,
        clock,
        debounce_seconds=settings.timeline_debounce_seconds,
        period_seconds=settings.timeline_period_seconds,
    )
    clusters = ClusterService(uow=uow, clock=clock, gateways=gateways, quotas=quotas)
    tokens = TokenService(uow=uow, clock=clock, hasher=HmacSecretHasher(settings.pepper()))
    updates = UpdatesService(uow=uow, hub=hub, log=event_log, buffer=settings.subscriber_buffer)
    registry = ClusterRegistry(
        uow=uow,
        clock=clock,
        secrets=LazySecretBox(
            lambda: load_or_create(
                keys_dir=settings.keys_dir,
                keys_pem=settings.keys_pem,
                active=settings.active_key,
                create_in=settings.generated_keys_dir,
            ),
            stamp=(
                None
                if settings.keys_pem
                else partial(directory_stamp, settings.keys_dir or settings.generated_keys_dir)
            ),
        ),
        connector=kube,
        tasks=backlog,
        quotas=quotas,
        sync_seconds=settings.cluster_sync_seconds,
        lease=lease,
        compute=compute,
    )
    reactions.quotas_changed = registry.queue_reconcile

    async def open_kube(cluster_id: ClusterId) -> KubeClusterApi:
        """A gateway's connection: the registry opens the sealed kubeconfig, in memory only."""
        return await kube.open(*await registry.open_kubeconfig(cluster_id))

    async def served(key: str) -> ServedModel | None:
        """What a simulated endpoint serves: the deployment and its running replicas."""
        found = parse_key(key)
        if found is None:
            return None
        async with uow(TenantScope.system()) as reader:
            deployment = await reader.deployments.get(DeploymentId(found))
            if deployment is None or deployment.stopped:
                return None
            replicas = await reader.jobs.get_many(list(deployment.replica_jobs))
        running = sum(1 for j in replicas.values() if j.status is JobStatus.RUNNING)
        return served_model(deployment, running)

    serving = SimulatedServing(served, host=settings.serving_host, port=settings.serving_port)
    deployments = DeploymentService(
        uow=uow, clock=clock, jobs=jobs, endpoints=ServingRouter(SimulatedEndpoints(serving))
    )
    registry.on_forget = gateways.real.forget
    supervisor = ClusterSupervisor(
        clusters=clusters,
        jobs=jobs,
        observations=observations,
        gateways=gateways,
        lease=lease,
        clock=clock,
        poll_seconds=settings.supervisor_poll_seconds,
        timeline=refresher,
        workloads=workloads,
        registry=registry,
        queue_answers=tasks.answers,
    )
    return App(
        settings=settings,
        clock=clock,
        db=db,
        event_log=event_log,
        hub=hub,
        publisher=publisher,
        tasks=tasks,
        backlog=backlog,
        gateways=gateways,
        jobs=jobs,
        workloads=workloads,
        observations=observations,
        clusters=clusters,
        quotas=quotas,
        reservations=reservations,
        tokens=tokens,
        updates=updates,
        timeline=timeline,
        refresher=refresher,
        schedule_updates=ScheduleUpdatesService(
            timeline=timeline, hub=hub, log=event_log, buffer=settings.subscriber_buffer
        ),
        supervisor=supervisor,
        registry=registry,
        cluster_updates=ClusterUpdatesService(
            uow=uow, hub=hub, log=event_log, buffer=settings.subscriber_buffer
        ),
        queue_positions=QueuePositionService(uow=uow, gateways=gateways, clock=clock),
        deployments=deployments,
        benchmarks=BenchmarkService(uow=uow, clock=clock, jobs=jobs, outbound=outbound),
        benchmark_runner=BenchmarkRunner(
            uow=uow, clock=clock, gateways=gateways, loadgen=StreamingLoadGenerator(rules=rules)
        ),
        serving_updates=ServingUpdatesService(
            uow=uow, hub=hub, log=event_log, buffer=settings.subscriber_buffer
        ),
        serving=serving,
        limiter=limiter,
        compute=compute,
        metrics=metrics,
        audit=AuditService(
            uow=uow, clock=clock, retention=timedelta(days=settings.audit_retention_days)
        ),
        redis=redis,
        arq=arq,
        relay=relay,
        tracing=tracing,
    )
