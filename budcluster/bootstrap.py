"""Wiring: which adapter stands behind each port, one factory per way a process runs.

`embedded` is an API process that runs its own tasks (`./dev serve`), `production_api` one whose
tasks go to arq workers, `worker` an arq worker and `cli` one command; `api` picks the API's by
the settings. Each is a few lines over the same pieces: the stores (database, tracing and Redis),
the event log and hub, the task queue, the gateways to simulated and real clusters, and the
domain services. Which database, event transport and rate limiter stand behind the ports follows
the settings in every mode; a mode fixes its task queue (the worker and the CLI take the
settings') and the role its traces carry. A factory builds objects and starts nothing:
`budcluster.runtime.Runtime` starts and stops what runs, `App.close` releases what was built.
Tests build the same graph with their own settings and clock.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta
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
from adapters.metrics import PrometheusMetrics
from adapters.outbound import ResolvingOutboundPolicy
from adapters.secrets.envelope import LazySecretBox
from adapters.secrets.keyring import directory_stamp, load_or_create
from adapters.simulated.endpoints import SimulatedEndpoints, parse_key, served_model
from adapters.simulated.gateway import SimulatedClusters
from adapters.simulated.serving import ServedModel, SimulatedServing
from adapters.tasks.arq import ArqTaskQueue, deserialize, serialize
from adapters.tasks.inprocess import InProcessTaskQueue
from adapters.tracing import Tracing, install_otlp
from budcluster import datadir
from budcluster.container import App
from budcluster.routers import GatewayRouter, ServingRouter
from budcluster.settings import Settings
from domain.aio import InThread
from domain.model.drain import Drain
from domain.model.ids import ClusterId, DeploymentId
from domain.model.job import JobPriority, JobStatus
from domain.model.outbound import AllowList, OutboundRules
from domain.model.quota import QuotaSet
from domain.model.reservation import CapacityReservation
from domain.ports.clock import Clock
from domain.ports.compute import Compute
from domain.ports.events import EventPublisher
from domain.ports.leases import Lease
from domain.ports.limits import RateLimiter
from domain.ports.secrets import SecretBox
from domain.ports.tasks import TaskQueue
from domain.ports.unit_of_work import TenantScope
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
from domain.services.destinations import Destinations
from domain.services.dispatch import Dispatcher
from domain.services.drains import DrainService
from domain.services.fleets import FleetService
from domain.services.jobs import JobService
from domain.services.logs import LogService
from domain.services.observations import ObservationService
from domain.services.queue_positions import QueuePositionService
from domain.services.quotas import QuotaService
from domain.services.reactions import Reactions
from domain.services.registry import ClusterRegistry
from domain.services.reservations import ReservationLimits, ReservationService
from domain.services.schedule_updates import ScheduleUpdatesService
from domain.services.spend import SpendService
from domain.services.task_names import TaskBacklog
from domain.services.tenant_secrets import SecretService
from domain.services.timeline import TimelineRefresher, TimelineService
from domain.services.tokens import TokenService
from domain.services.updates import UpdatesService
from domain.services.watch import ClusterSupervisor
from domain.services.workloads import WorkloadService
from workers.tasks import TASKS

__all__ = ["App", "api", "cli", "embedded", "production_api", "worker"]

Queue = tuple[TaskQueue, ArqRedis | None]
QueueFactory = Callable[[Settings, Clock], Awaitable[Queue]]


# --- the modes ---------------------------------------------------------------------------------


async def embedded(
    settings: Settings, *, clock: Clock | None = None, connector: KubeConnector | None = None
) -> App:
    """An API process that runs its own tasks, the same task functions as arq's workers: one
    command on a laptop (SQLite, a simulated cluster made on first start), or PostgreSQL with
    several such processes sharing events through Redis."""
    if settings.tasks == "arq":
        raise ValueError("an embedded process runs its own tasks: not BUDCLUSTER_TASKS=arq")
    return await _wire(settings, clock, connector, role="api", queue=_in_process_tasks)


async def production_api(
    settings: Settings, *, clock: Clock | None = None, connector: KubeConnector | None = None
) -> App:
    """A production API process: tasks go to arq workers through Redis."""
    if settings.tasks != "arq":
        raise ValueError("a production API process hands its tasks to arq: BUDCLUSTER_TASKS=arq")
    return await _wire(settings, clock, connector, role="api", queue=_arq_tasks)


async def api(
    settings: Settings, *, clock: Clock | None = None, connector: KubeConnector | None = None
) -> App:
    """The API process the settings describe: production's when arq runs the tasks."""
    factory = production_api if settings.tasks == "arq" else embedded
    return await factory(settings, clock=clock, connector=connector)


async def worker(
    settings: Settings, *, clock: Clock | None = None, connector: KubeConnector | None = None
) -> App:
    """An arq worker process (`budcluster worker`): the task functions with the services in
    their context, and the cluster supervisor unless disabled."""
    return await _wire(settings, clock, connector, role="worker", queue=_task_queue)


async def cli(
    settings: Settings, *, clock: Clock | None = None, connector: KubeConnector | None = None
) -> App:
    """One command of the `budcluster` CLI, on the service's stores; it starts no Runtime."""
    return await _wire(settings, clock, connector, role="cli", queue=_task_queue)


# --- the pieces --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Stores:
    db: Database
    tracing: Tracing | None
    redis: Redis | None


@dataclass(frozen=True)
class Events:
    log: SqlEventLog
    hub: EventHubImpl
    publisher: EventPublisher
    relay: RedisRelay | None


def _stores(settings: Settings, role: str) -> Stores:
    """The database (an embedded one's directory made private first), the tracing pipeline
    (instrumented before the clients it traces are made; `role` names the process in its
    traces) and the Redis client when Redis is configured."""
    if settings.is_embedded:
        datadir.secure(settings.data_dir, settings.database_url)
    db = Database(settings.database_url)
    tracing: Tracing | None = None
    if settings.tracing:
        if settings.otlp_traces_url:
            install_otlp(settings.otlp_traces_url, role=role)
        tracing = Tracing.instrument(db.engine)
    redis = Redis.from_url(settings.redis_url) if settings.redis_url else None
    return Stores(db, tracing, redis)


def _events(settings: Settings, stores: Stores, clock: Clock) -> Events:
    """The event log and the hub subscribers read from; events reach the hub in-process, or
    through Redis with a relay when several processes serve subscribers."""
    log = SqlEventLog(stores.db)
    hub = EventHubImpl(log)
    if settings.events == "redis":
        assert stores.redis is not None
        publisher = RedisPublisher(stores.redis, hub, channel=settings.event_channel)
        relay = RedisRelay(stores.redis, hub, channel=settings.event_channel, clock=clock)
        return Events(log, hub, publisher, relay)
    return Events(log, hub, InProcessPublisher(hub), None)


async def _in_process_tasks(settings: Settings, clock: Clock) -> Queue:
    return InProcessTaskQueue(TASKS, clock), None


async def _arq_tasks(settings: Settings, clock: Clock) -> Queue:
    assert settings.redis_url is not None
    pool = await create_pool(
        RedisSettings.from_dsn(settings.redis_url),
        job_serializer=serialize,
        job_deserializer=deserialize,
        default_queue_name=settings.queue_name,
    )
    return ArqTaskQueue(pool, queue_name=settings.queue_name), pool


async def _task_queue(settings: Settings, clock: Clock) -> Queue:
    """The queue the settings name."""
    return await (_arq_tasks if settings.tasks == "arq" else _in_process_tasks)(settings, clock)


def _limiter(settings: Settings, redis: Redis | None, clock: Clock) -> RateLimiter:
    """Token buckets shared through Redis by every production process, else this process's."""
    buckets = {"capacity": settings.rate_burst, "per_second": settings.rate_points_per_minute / 60}
    if redis is not None and not settings.is_embedded:
        return RedisRateLimiter(redis, clock, prefix=settings.redis_prefix, **buckets)
    return LocalRateLimiter(clock, **buckets)


def _gateways(
    settings: Settings, db: Database, clock: Clock, registry: ClusterRegistry, kube: KubeConnector
) -> GatewayRouter:
    """Simulated clusters, whose admission reads the cluster's quotas, reservations and drains, and
    real ones through Kueue, connected with the kubeconfigs the registry keeps sealed."""
    uow = db.unit_of_work

    async def configuration(
        cluster_id: ClusterId,
    ) -> tuple[QuotaSet, list[CapacityReservation], list[Drain]]:
        async with uow(TenantScope.system()) as reader:
            quotas = await reader.quotas.quota_set(cluster_id)
            reservations = await reader.reservations.active(cluster_id, active_after=clock.now())
            drains = await reader.drains.on([cluster_id])
        return quotas, reservations, drains

    async def priority_values() -> dict[JobPriority, int]:
        async with uow(TenantScope.system()) as reader:
            return {pc.priority: pc.value for pc in await reader.quotas.priority_classes()}

    async def open_kube(cluster_id: ClusterId) -> KubeClusterApi:
        """A gateway's connection: the registry opens the sealed kubeconfig, in memory only."""
        return await kube.open(*await registry.open_kubeconfig(cluster_id))

    return GatewayRouter(
        SimulatedClusters(
            db.engine,
            clock,
            configuration,
            priority_values,
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


def _addons(
    settings: Settings, db: Database, clock: Clock, registry: ClusterRegistry, **ports: Any
) -> AddonService:
    """Cluster add-ons: Helm releases of pinned charts, on the clusters' sealed kubeconfigs."""
    return AddonService(
        uow=db.unit_of_work,
        clock=clock,
        releases=PyHelmReleaseFactory(
            open_kubeconfig=lambda cluster_id: registry.open_kubeconfig(cluster_id),
            executable=settings.helm_executable,
            timeout=settings.helm_timeout,
        ).for_cluster,
        health_changed=registry.queue_connect,
        **ports,
    )


def _secret_box(settings: Settings) -> LazySecretBox:
    """The keyring's envelopes: kubeconfigs and tenants' secrets are sealed with it."""
    return LazySecretBox(
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
    )


def _registry(
    settings: Settings,
    db: Database,
    clock: Clock,
    *,
    box: SecretBox,
    kube: KubeConnector,
    backlog: TaskBacklog,
    quotas: QuotaService,
    lease: Lease,
    compute: Compute,
) -> ClusterRegistry:
    """Real clusters, their kubeconfigs sealed with the keyring."""
    return ClusterRegistry(
        uow=db.unit_of_work,
        clock=clock,
        secrets=box,
        connector=kube,
        tasks=backlog,
        quotas=quotas,
        sync_seconds=settings.cluster_sync_seconds,
        lease=lease,
        compute=compute,
    )


def _serving(
    settings: Settings, db: Database, clock: Clock, autoscaler: Callable[[], Autoscaler]
) -> SimulatedServing:
    """The simulated clusters' model endpoints: one server answers for every deployment (a
    request to one at zero replicas wakes it through `autoscaler`, made after the server)."""
    uow = db.unit_of_work

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
        estimates = [
            j.estimated_start
            for j in replicas.values()
            if j.status in (JobStatus.PENDING, JobStatus.QUEUED, JobStatus.ADMITTED)
            and j.estimated_start is not None
        ]
        return served_model(deployment, running, min(estimates, default=None))

    async def wake(key: str) -> bool:
        found = parse_key(key)
        return found is not None and await autoscaler().wake(DeploymentId(found))

    return SimulatedServing(
        served,
        host=settings.serving_host,
        port=settings.serving_port,
        wake=wake,
        hold_seconds=settings.serving_hold_seconds,
        now=clock.now,
    )


async def _wire(
    settings: Settings,
    clock: Clock | None,
    connector: KubeConnector | None,
    *,
    role: str,
    queue: QueueFactory,
) -> App:
    """The stores, the events and the task queue of the mode, then the services over them."""
    clock = clock or SystemClock()
    kube = connector or KubeConnector(allow_plain_http=settings.kube_plain_http)
    stores = _stores(settings, role)
    events = _events(settings, stores, clock)
    return _services(settings, clock, stores, events, await queue(settings, clock), kube)


def _services(
    settings: Settings,
    clock: Clock,
    stores: Stores,
    events: Events,
    queue: Queue,
    kube: KubeConnector,
) -> App:
    """The domain services over the ports, and the reactions every commit triggers."""
    db, (tasks, arq) = stores.db, queue
    backlog = TaskBacklog(tasks, clock)  # what the queue refused after a commit, queued again
    # in the source of truth: no cluster's progress waits on Redis (one process on SQLite)
    lease: Lease = PostgresLease(db.engine) if not db.is_sqlite else LocalLease()
    uow = db.unit_of_work
    hub, event_log = events.hub, events.log
    buffer = settings.subscriber_buffer
    rules = OutboundRules(AllowList.parse(settings.outbound_allow))
    outbound = ResolvingOutboundPolicy(rules)  # every URL a caller gives: one policy
    compute: Compute = (
        ProcessCompute(settings.compute_workers) if settings.compute_workers > 0 else InThread()
    )
    from budcluster.http.persisted import operation_names  # the package imports this module

    metrics = PrometheusMetrics(
        known_operations=operation_names(), subscriber_count=lambda: hub.subscriber_count
    )
    hub.on_overflow = metrics.subscriber_overflowed
    reactions = Reactions(
        publisher=events.publisher, tasks=backlog, uow=uow, observe=metrics.record
    )
    db.after_commit = reactions
    quotas = QuotaService(uow=uow, clock=clock)
    box = _secret_box(settings)
    registry = _registry(
        settings,
        db,
        clock,
        box=box,
        kube=kube,
        backlog=backlog,
        quotas=quotas,
        lease=lease,
        compute=compute,
    )
    reactions.quotas_changed = registry.queue_reconcile
    gateways = _gateways(settings, db, clock, registry, kube)
    registry.on_forget = gateways.real.forget
    jobs = JobService(
        uow=uow, clock=clock, tasks=backlog, check_workload=check_workload, outbound=outbound
    )
    secrets = SecretService(uow=uow, box=box, clock=clock)
    workloads = WorkloadService(uow=uow, clock=clock, gateways=gateways, secrets=secrets)
    observations = ObservationService(
        uow=uow,
        clock=clock,
        jobs=jobs,
        orphan_grace=timedelta(seconds=settings.orphan_grace_seconds),
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
    made: list[Autoscaler] = []
    serving = _serving(settings, db, clock, lambda: made[0])
    endpoints = ServingRouter(SimulatedEndpoints(serving), KubeEndpoints(gateways.real))
    deployments = DeploymentService(uow=uow, clock=clock, jobs=jobs, endpoints=endpoints)
    autoscaler = Autoscaler(uow=uow, clock=clock, deployments=deployments, endpoints=endpoints)
    made.append(autoscaler)
    reactions.deployment_changed = serving.changed
    balancer = FleetBalancer(uow=uow, clock=clock, timeline=timeline)
    return App(
        settings=settings,
        clock=clock,
        db=db,
        event_log=event_log,
        hub=hub,
        publisher=events.publisher,
        tasks=tasks,
        backlog=backlog,
        gateways=gateways,
        jobs=jobs,
        workloads=workloads,
        observations=observations,
        clusters=clusters,
        quotas=quotas,
        reservations=ReservationService(
            uow=uow,
            clock=clock,
            limits=ReservationLimits(
                max_length=timedelta(hours=settings.reservation_max_hours),
                max_lead=timedelta(days=settings.reservation_max_lead_days),
                max_share=settings.reservation_max_share,
            ),
        ),
        tokens=TokenService(uow=uow, clock=clock, hasher=HmacSecretHasher(settings.pepper())),
        updates=UpdatesService(uow=uow, hub=hub, log=event_log, buffer=buffer),
        timeline=timeline,
        refresher=refresher,
        schedule_updates=ScheduleUpdatesService(
            timeline=timeline, hub=hub, log=event_log, buffer=buffer
        ),
        supervisor=ClusterSupervisor(
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
        ),
        registry=registry,
        cluster_updates=ClusterUpdatesService(uow=uow, hub=hub, log=event_log, buffer=buffer),
        queue_positions=QueuePositionService(uow=uow, gateways=gateways, clock=clock),
        deployments=deployments,
        autoscaler=autoscaler,
        benchmarks=BenchmarkService(uow=uow, clock=clock, jobs=jobs, outbound=outbound),
        benchmark_runner=BenchmarkRunner(
            uow=uow, clock=clock, gateways=gateways, loadgen=StreamingLoadGenerator(rules=rules)
        ),
        deployment_updates=DeploymentUpdatesService(uow=uow, hub=hub, log=event_log, buffer=buffer),
        benchmark_progress=BenchmarkProgressService(uow=uow, hub=hub, log=event_log, buffer=buffer),
        serving=serving,
        limiter=_limiter(settings, stores.redis, clock),
        compute=compute,
        metrics=metrics,
        spend=SpendService(uow=uow),
        budgets=BudgetService(uow=uow, clock=clock),
        fleets=FleetService(uow=uow, clock=clock),
        dispatcher=Dispatcher(
            uow=uow, clock=clock, jobs=jobs, timeline=timeline, deployments=deployments
        ),
        balancer=balancer,
        drains=DrainService(
            uow=uow,
            clock=clock,
            gateways=gateways,
            deployments=deployments,
            balancer=balancer,
        ),
        logs=LogService(uow=uow, clock=clock, gateways=gateways),
        secrets=secrets,
        addons=_addons(
            settings,
            db,
            clock,
            registry,
            tasks=backlog,
            destinations=Destinations(uow=uow, outbound=outbound),
        ),
        audit=AuditService(
            uow=uow, clock=clock, retention=timedelta(days=settings.audit_retention_days)
        ),
        redis=stores.redis,
        arq=arq,
        relay=events.relay,
        tracing=stores.tracing,
    )
