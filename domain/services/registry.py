"""Real clusters: registering them, reaching them, and keeping their node inventory live.

Registration checks the input and the kubeconfig (without connecting), seals the kubeconfig
(`SecretBox`, bound to the cluster's id) and stores the cluster as REGISTERING; a task then
connects, reads the version, the nodes and the health checks, and moves it to AVAILABLE, or to
NOT_AVAILABLE (the API server did not answer) or ERROR (the kubeconfig is refused, or unusable),
with the reason. The kubeconfig is opened only in memory, for as long as a connection is made.

While a cluster is AVAILABLE or NOT_AVAILABLE, whoever holds its watch lease follows it
(`follow`): list the nodes, then watch their changes from that listing on (list again when the
watch can't go on: WatchExpired), with a full sync every `sync_seconds` as a safety net. A failure
makes the cluster NOT_AVAILABLE (not_available_since kept from the first failure, retry_attempt
and last_retry_time counting the attempts) and raises GatewayUnavailable, so the supervisor
retries after its capped, jittered backoff; the first answer makes it AVAILABLE again. Its jobs
keep their last known state meanwhile.

Every status change and every change of the inventory that matters (not heartbeats) is a cluster
event (STATUS, NODES) carrying the cluster's state: what `clusterUpdates` streams; NODES also
makes the timeline be recomputed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from urllib.parse import urlparse

from domain.aio import InThread
from domain.errors import (
    ClusterConnectionError,
    Conflict,
    FieldIssue,
    NotFound,
    SecretsUnavailable,
    SecretUnreadable,
    ValidationFailed,
)
from domain.model.cluster import Cluster, ClusterStatus, HealthCheck, Node, NodeType, Platform
from domain.model.drain import holding_cluster
from domain.model.events import ClusterChanged, ClusterChangeKind, ClusterState
from domain.model.fleet import Fleet
from domain.model.ids import ClusterId, new_cluster_id
from domain.model.job import JobStatus
from domain.names import name_problem, text_problem
from domain.ports.clock import Clock
from domain.ports.cluster_api import (
    QUOTAS_CHECK,
    ClusterApi,
    ClusterConnector,
    MultiKueueFleet,
    MultiKueueWorker,
    NodeChange,
    WatchExpired,
)
from domain.ports.compute import Compute
from domain.ports.gateways import GatewayUnavailable
from domain.ports.leases import Lease
from domain.ports.secrets import SecretBox
from domain.ports.tasks import TaskQueue
from domain.ports.unit_of_work import TenantScope, UnitOfWork, UnitOfWorkFactory
from domain.services import task_names
from domain.services.fleets import forget_member
from domain.services.quotas import QuotaService

log = logging.getLogger(__name__)

MAX_KUBECONFIG_BYTES = 256 * 1024
QUOTA_TURN_TTL = 300.0
QUOTA_TURN_WAIT = 120.0
APPLIED_SETTING = "kueue_applied"
"""Cluster setting: the Kueue objects the last reconcile put in place (drift vs. first time)."""
REAL_PLATFORMS = (Platform.ON_PREM, Platform.EKS, Platform.AKS, Platform.OPENSHIFT)


@dataclass(frozen=True)
class Registration:
    name: str
    platform: Platform
    kubeconfig: str
    context: str | None = None
    ingress_url: str | None = None
    enable_master_node: bool = False

    def __repr__(self) -> str:  # the kubeconfig is never printed
        return f"Registration(name={self.name!r}, platform={self.platform.value})"


@dataclass(frozen=True)
class ClusterEdit:
    """What updateCluster changes: fields left None stay as they are."""

    name: str | None = None
    kubeconfig: str | None = None
    context: str | None = None
    ingress_url: str | None = None
    enable_master_node: bool | None = None

    def __repr__(self) -> str:
        return f"ClusterEdit(name={self.name!r}, kubeconfig={'***' if self.kubeconfig else None})"


@dataclass
class Rotation:
    """What `rewrap_secrets` did."""

    active_key_id: str
    rewrapped: int = 0
    current: int = 0
    failed: list[str] = field(default_factory=list)


def _significant(node: Node) -> tuple[object, ...]:
    """What a node change must touch to be stored and announced (heartbeats do not)."""
    return (
        node.node_type,
        node.gpu_type,
        node.gpu_count,
        node.cpu_cores,
        node.memory_gb,
        node.ready,
        node.schedulable,
        node.excluded,
        node.internal_ip,
        tuple(sorted(node.labels.items())),
        tuple(tuple(sorted(t.items())) for t in node.taints),
        tuple(sorted(node.allocatable.items())),
        tuple((c.get("type"), c.get("status"), c.get("reason")) for c in node.conditions),
    )


class ClusterRegistry:
    def __init__(
        self,
        *,
        uow: UnitOfWorkFactory,
        clock: Clock,
        secrets: SecretBox,
        connector: ClusterConnector,
        tasks: TaskQueue,
        quotas: QuotaService,
        sync_seconds: float = 180.0,
        lease: Lease | None = None,
        compute: Compute | None = None,
    ) -> None:
        self._lease = lease
        self._compute = compute or InThread()
        self.on_forget: Callable[[ClusterId], Awaitable[None]] | None = None
        """Told when a cluster's connection settings change or it is deleted: connections
        opened with the old ones are closed (the gateways)."""
        self._quota_locks: dict[ClusterId, asyncio.Lock] = {}
        self._uow = uow
        self._clock = clock
        self._secrets = secrets
        self._connector = connector
        self._tasks = tasks
        self._quotas = quotas
        self.sync_seconds = sync_seconds

    # --- the lifecycle (API) ------------------------------------------------------------------

    async def register(self, reg: Registration) -> Cluster:
        """Store the cluster as REGISTERING and queue the task that connects to it. Raises
        ValidationFailed (naming each bad field) or Conflict (the name is taken); nothing is
        stored then."""
        issues = _check_name(reg.name) + _check_ingress(reg.ingress_url)
        if reg.platform not in REAL_PLATFORMS:
            issues.append(FieldIssue("platform", "must be ON_PREM, EKS, AKS or OPENSHIFT"))
        summary_issues, server_url, context = await self._inspect(reg.kubeconfig, reg.context)
        issues += summary_issues
        if issues:
            raise ValidationFailed(issues)
        now = self._clock.now()
        cluster_id = new_cluster_id()
        cluster = Cluster(
            id=cluster_id,
            name=reg.name,
            platform=reg.platform,
            status=ClusterStatus.REGISTERING,
            created_at=now,
            updated_at=now,
            reason="connecting",
            configuration=self._secrets.seal(reg.kubeconfig.encode(), owner=str(cluster_id)),
            context=context,
            server_url=server_url,
            ingress_url=reg.ingress_url,
            enable_master_node=reg.enable_master_node,
        )
        async with self._uow(TenantScope.system()) as uow:
            if await uow.clusters.get_by_name(reg.name) is not None:
                raise Conflict(f"a cluster named {reg.name} exists", code="NAME_TAKEN")
            await uow.clusters.add(cluster)
            self._record(uow, cluster, ClusterChangeKind.STATUS)
            await uow.commit()
        await self.queue_connect(cluster.id)
        return cluster

    async def update(self, cluster_id: ClusterId, change: ClusterEdit) -> Cluster:
        """Change a real cluster's settings; a new kubeconfig (or context) makes it connect
        again (REGISTERING)."""
        issues: list[FieldIssue] = []
        if change.name is not None:
            issues += _check_name(change.name)
        issues += _check_ingress(change.ingress_url)
        async with self._uow(TenantScope.system()) as uow:
            cluster = await self._real(uow, cluster_id)
            reconnect = change.kubeconfig is not None or change.context is not None
            sealed = cluster.configuration
            server_url, context = cluster.server_url, cluster.context
            if reconnect:
                kubeconfig = change.kubeconfig
                if kubeconfig is None:
                    kubeconfig = self._open(cluster)
                found, server_url, context = await self._inspect(
                    kubeconfig, change.context if change.context is not None else context
                )
                issues += found
                if not found:
                    sealed = self._secrets.seal(kubeconfig.encode(), owner=str(cluster.id))
            if issues:
                raise ValidationFailed(issues)
            if change.name is not None and change.name != cluster.name:
                if await uow.clusters.get_by_name(change.name) is not None:
                    raise Conflict(f"a cluster named {change.name} exists", code="NAME_TAKEN")
                cluster.name = change.name
            if change.ingress_url is not None:
                cluster.ingress_url = change.ingress_url or None
            if change.enable_master_node is not None:
                cluster.enable_master_node = change.enable_master_node
                cluster.nodes = [self._exclusion(cluster, n) for n in cluster.nodes]
                await uow.clusters.replace_nodes(cluster.id, cluster.nodes)
                self._record(uow, cluster, ClusterChangeKind.NODES)
            if reconnect:
                if (
                    sealed is not None
                    and sealed != cluster.configuration
                    and not await uow.clusters.swap_configuration(
                        cluster.id, cluster.configuration, sealed
                    )
                ):
                    raise Conflict(
                        "the cluster's kubeconfig changed meanwhile: try again",
                        code="CONCURRENT_CHANGE",
                    )
                cluster.configuration, cluster.server_url, cluster.context = (
                    sealed,
                    server_url,
                    context,
                )
                cluster.status, cluster.reason = ClusterStatus.REGISTERING, "connecting"
                self._record(uow, cluster, ClusterChangeKind.STATUS)
            cluster.updated_at = self._clock.now()
            await uow.clusters.save(cluster)
            await uow.commit()
        if reconnect:
            await self._forget(cluster.id)
            await self.queue_connect(cluster.id)
        return cluster

    async def delete(self, cluster_id: ClusterId, *, force: bool = False) -> Cluster:
        """DELETING, then gone with its jobs. Refused while jobs are active, unless `force`, or
        the cluster is drained as a whole and none of them holds resources any more (what
        still waits there would wait for nothing: `domain.services.drains`)."""
        async with self._uow(TenantScope.system()) as uow:
            cluster = await self._real(uow, cluster_id, allow_simulated=True)
            jobs = await uow.jobs.active_on_cluster(cluster_id)
            drained = holding_cluster(await uow.drains.on([cluster_id])) is not None and not any(
                j.status in (JobStatus.ADMITTED, JobStatus.RUNNING) for j in jobs
            )
            if jobs and not force and not drained:
                raise Conflict(
                    f"{len(jobs)} job(s) are active on this cluster: drain it, cancel them or "
                    "delete with force",
                    code="CLUSTER_IN_USE",
                )
            cluster.status, cluster.reason = ClusterStatus.DELETING, "deleting"
            cluster.updated_at = self._clock.now()
            await uow.clusters.save(cluster)
            self._record(uow, cluster, ClusterChangeKind.STATUS)
            await uow.commit()
        async with self._uow(TenantScope.system()) as uow:
            await forget_member(uow, cluster_id)
            await uow.clusters.delete(cluster_id)
            await uow.commit()
        await self._forget(cluster_id)
        return cluster

    async def _forget(self, cluster_id: ClusterId) -> None:
        if self.on_forget is not None:
            await self.on_forget(cluster_id)

    async def refresh(self, cluster_id: ClusterId) -> Cluster:
        """Sync now: connect, read the nodes and the health checks."""
        async with self._uow(TenantScope.system()) as uow:
            await self._real(uow, cluster_id)
        return await self.connect(cluster_id)

    async def rewrap_secrets(self) -> Rotation:
        """Re-wrap every stored kubeconfig to the active key (`budcluster keys rotate`), while
        the service runs: each is a compare-and-set, so a kubeconfig replaced meanwhile (sealed
        with the active key anyway) is left as it is. A kubeconfig that cannot be opened is
        counted as failed and named by cluster in the log, never by content."""
        async with self._uow(TenantScope.system()) as uow:
            clusters = await uow.clusters.all()
        rotation = Rotation(active_key_id=self._secrets.active_key_id)
        for cluster in clusters:
            sealed = cluster.configuration
            if sealed is None:
                continue
            if sealed.key_id == rotation.active_key_id:
                rotation.current += 1
                continue
            try:
                rewrapped = self._secrets.rewrap(sealed)
            except SecretUnreadable as exc:
                log.error("cluster %s: its kubeconfig can't be re-wrapped: %s", cluster.name, exc)
                rotation.failed.append(cluster.name)
                continue
            async with self._uow(TenantScope.system()) as uow:
                swapped = await uow.clusters.swap_configuration(cluster.id, sealed, rewrapped)
                await uow.commit()
            if swapped:
                rotation.rewrapped += 1
            else:
                rotation.current += 1  # replaced (sealed with the active key) or removed meanwhile
        return rotation

    async def key_in_use(self, key_id: str) -> list[str]:
        """The clusters whose kubeconfig is still wrapped with `key_id` (it can't be retired)."""
        async with self._uow(TenantScope.system()) as uow:
            clusters = await uow.clusters.all()
        return [c.name for c in clusters if c.configuration and c.configuration.key_id == key_id]

    async def open_kubeconfig(self, cluster_id: ClusterId) -> tuple[str, str | None]:
        """A real cluster's kubeconfig, opened, and its context: for the cluster's gateway and
        for Helm, which open their own connections with it. Raises ClusterConnectionError."""
        cluster = await self._get(cluster_id)
        return self._open(cluster), cluster.context

    async def queue_reconcile(self, cluster_id: ClusterId) -> None:
        """Queue putting the quotas of a cluster onto it, after a quota change (passes are
        idempotent, and quota changes are an operator's: one pass each is cheap). Called while
        the change's unit of work may still be open, so it reads nothing: the task skips
        simulated and unavailable clusters."""
        await task_names.enqueue_after_commit(  # a key per change: each must reach the cluster
            self._tasks,
            task_names.RECONCILE_QUOTAS,
            key=f"reconcile:{cluster_id}:{uuid.uuid4().hex}",
            cluster_id=str(cluster_id),
        )

    async def queue_connect(self, cluster_id: ClusterId, *, retry: bool = False) -> None:
        """Queue a connection attempt. A user's change (a registration, a new kubeconfig) gets
        one of its own: task keys stay taken for a while after a run, and the attempt must see
        the change. The supervisor's retry of an overdue registration (`retry`) shares one key,
        so a slow attempt is not queued again on every tick."""
        key = f"connect:{cluster_id}" + ("" if retry else f":{uuid.uuid4().hex}")
        await task_names.enqueue_after_commit(
            self._tasks, task_names.CONNECT_CLUSTER, key=key, cluster_id=str(cluster_id)
        )

    # --- reaching the cluster (tasks, supervisor) -----------------------------------------------

    async def connect(self, cluster_id: ClusterId) -> Cluster:
        """One attempt: AVAILABLE with its nodes and health, or NOT_AVAILABLE / ERROR with the
        reason. Returns the cluster as stored after it."""
        cluster = await self._get(cluster_id)
        if not cluster.is_real or cluster.status is ClusterStatus.DELETING:
            return cluster
        try:
            api = await self._reach(cluster)
            try:
                await api.server_version()
                nodes = await api.nodes()
                health = await api.health()
                await self._available(cluster_id, nodes, health)
                return await self._sync_quotas(cluster_id, api)
            finally:
                await api.close()
        except ClusterConnectionError as exc:
            return await self._failed(cluster_id, exc)

    async def reconcile_quotas(self, cluster_id: ClusterId) -> Cluster:
        """Put the quota model onto the cluster as Kueue objects now (after a quota change)."""
        cluster = await self._get(cluster_id)
        if not cluster.is_real or cluster.status is not ClusterStatus.AVAILABLE:
            return cluster
        try:
            api = await self._reach(cluster)
            try:
                return await self._sync_quotas(cluster_id, api)
            finally:
                await api.close()
        except ClusterConnectionError as exc:
            return await self._failed(cluster_id, exc)

    async def sync_all(self) -> int:
        """The periodic safety net: queue a connection attempt for every real cluster that is
        not being set up or removed, each its own task (with its own time limit: a slow cluster
        holds up no other). One key per cluster and sync period, so several processes' syncs
        queue one attempt. Returns how many were queued."""
        async with self._uow(TenantScope.system()) as uow:
            clusters = await uow.clusters.all()
        period = int(self._clock.now().timestamp() // max(self.sync_seconds, 1.0))
        due = [
            c
            for c in clusters
            if c.is_real and c.status in (ClusterStatus.AVAILABLE, ClusterStatus.NOT_AVAILABLE)
        ]
        for cluster in due:
            await task_names.enqueue_after_commit(
                self._tasks,
                task_names.CONNECT_CLUSTER,
                key=f"connect:{cluster.id}:sync-{period}",
                cluster_id=str(cluster.id),
            )
        return len(due)

    async def follow(self, cluster_id: ClusterId) -> None:
        """List, then watch the nodes until the connection fails (GatewayUnavailable: the
        caller backs off and calls again). Runs under the cluster's watch lease."""
        cluster = await self._get(cluster_id)
        try:
            api = await self._reach(cluster)
        except ClusterConnectionError as exc:
            failed = await self._failed(cluster_id, exc)
            raise GatewayUnavailable(exc.message, attempt=failed.retry_attempt) from None
        try:
            while True:
                nodes = await api.nodes()
                await self._available(cluster_id, nodes, await api.health())
                await self._sync_quotas(cluster_id, api)
                listed_at = self._clock.now()
                try:
                    while (self._clock.now() - listed_at).total_seconds() < self.sync_seconds:
                        async for change in api.watch_nodes():
                            await self._node_event(cluster_id, change)
                except WatchExpired:
                    log.info("node watch of %s expired: listing again", cluster.name)
        except ClusterConnectionError as exc:
            failed = await self._failed(cluster_id, exc)
            raise GatewayUnavailable(exc.message, attempt=failed.retry_attempt) from None
        finally:
            await api.close()

    # --- internals ----------------------------------------------------------------------------

    async def _inspect(
        self, kubeconfig: str, context: str | None
    ) -> tuple[list[FieldIssue], str | None, str | None]:
        """Check a kubeconfig without connecting: parsing it is CPU work (YAML), so it runs on
        the Compute port, never on the event loop."""
        if not kubeconfig.strip():
            return [FieldIssue("kubeconfig", "must not be empty")], None, None
        if len(kubeconfig.encode("utf-8", "surrogatepass")) > MAX_KUBECONFIG_BYTES:
            return [FieldIssue("kubeconfig", "must be at most 256 KiB")], None, None
        if text_problem(kubeconfig) or (context is not None and text_problem(context)):
            field = "kubeconfig" if text_problem(kubeconfig) else "context"
            return [FieldIssue(field, "must be plain text (valid Unicode, no NUL)")], None, None
        if context is not None and not context.strip():
            return [FieldIssue("context", "must not be empty when given")], None, None
        try:
            summary = await self._compute.run(self._connector.inspect, kubeconfig, context)
        except ClusterConnectionError as exc:
            return [FieldIssue(exc.field or "kubeconfig", exc.message)], None, None
        return [], summary.server_url, summary.context

    def _open(self, cluster: Cluster) -> str:
        if cluster.configuration is None:
            raise ClusterConnectionError(
                "invalid_kubeconfig", "no kubeconfig is stored", field="kubeconfig"
            )
        try:
            return self._secrets.open(cluster.configuration, owner=str(cluster.id)).decode()
        except (SecretUnreadable, SecretsUnavailable) as exc:
            raise ClusterConnectionError(
                "invalid_kubeconfig", f"the stored kubeconfig can't be opened: {exc.message}"
            ) from None

    async def _reach(self, cluster: Cluster) -> ClusterApi:
        return await self._connector.connect(
            self._open(cluster), cluster.context, cluster_id=cluster.id
        )

    async def _get(self, cluster_id: ClusterId) -> Cluster:
        async with self._uow(TenantScope.system()) as uow:
            cluster = await uow.clusters.get(cluster_id)
        if cluster is None:
            raise NotFound("cluster", cluster_id)
        return cluster

    async def _real(
        self, uow: UnitOfWork, cluster_id: ClusterId, *, allow_simulated: bool = False
    ) -> Cluster:
        cluster = await uow.clusters.get(cluster_id)
        if cluster is None or cluster.status is ClusterStatus.DELETING:
            raise NotFound("cluster", cluster_id)
        if not cluster.is_real and not allow_simulated:
            raise ValidationFailed.single(
                "id", "a simulated cluster has no kubeconfig or inventory to change"
            )
        return cluster

    @staticmethod
    def _exclusion(cluster: Cluster, node: Node) -> Node:
        excluded = node.node_type is NodeType.MASTER and not cluster.enable_master_node
        return node if node.excluded == excluded else replace(node, excluded=excluded)

    async def _available(
        self,
        cluster_id: ClusterId,
        listed: Sequence[Node],
        health: Sequence[HealthCheck],
    ) -> Cluster:
        now = self._clock.now()
        async with self._uow(TenantScope.system()) as uow:
            cluster = await uow.clusters.get(cluster_id)
            if cluster is None or cluster.status is ClusterStatus.DELETING:
                raise NotFound("cluster", cluster_id)
            nodes = [self._exclusion(cluster, n) for n in listed]
            if [_significant(n) for n in cluster.nodes] != [
                _significant(n) for n in sorted(nodes, key=lambda n: n.name)
            ]:
                await uow.clusters.replace_nodes(cluster_id, nodes)
                cluster.nodes = sorted(nodes, key=lambda n: n.name)
                self._record(uow, cluster, ClusterChangeKind.NODES)
            if cluster.status is not ClusterStatus.AVAILABLE:
                cluster.status, cluster.reason = ClusterStatus.AVAILABLE, None
                cluster.not_available_since = None
                self._record(uow, cluster, ClusterChangeKind.STATUS)
            cluster.retry_attempt = 0
            cluster.last_sync_at = now
            cluster.health, cluster.health_checked_at = tuple(health), now
            cluster.updated_at = now
            await uow.clusters.save(cluster)
            await self._quotas.ensure_defaults(cluster, uow=uow)
            await uow.commit()
        return cluster

    @contextlib.asynccontextmanager
    async def _quota_turn(self, cluster_id: ClusterId) -> AsyncIterator[bool]:
        """One reconcile of a cluster's quotas at a time, across processes (the lease), so a
        pass that read an older model can't undo a newer one's work after it: passes run in
        turn, each reading the model once it has its turn. Yields False when the turn did not
        come within QUOTA_TURN_WAIT seconds (the pass is skipped; the periodic sync catches up)."""
        lock = self._quota_locks.setdefault(cluster_id, asyncio.Lock())
        async with lock:
            if self._lease is None:
                yield True
                return
            name = f"kueue-quotas:{cluster_id}"
            for _ in range(int(QUOTA_TURN_WAIT / 0.2)):
                if await self._lease.acquire(name, ttl_seconds=QUOTA_TURN_TTL):
                    break
                await self._clock.sleep(0.2)
            else:
                log.warning("cluster %s: another process keeps reconciling its quotas", cluster_id)
                yield False
                return
            try:
                yield True
            finally:
                await self._lease.release(name)

    async def _sync_quotas(self, cluster_id: ClusterId, api: ClusterApi) -> Cluster:
        """Put the quota model onto the cluster (`ClusterApi.apply_quotas`) and keep the result
        as the health check `kueue_quotas`, and what was applied with the cluster."""
        async with self._quota_turn(cluster_id) as turn:
            if not turn:
                return await self._get(cluster_id)
            return await self._reconcile_in_turn(cluster_id, api)

    async def _reconcile_in_turn(self, cluster_id: ClusterId, api: ClusterApi) -> Cluster:
        async with self._uow(TenantScope.system()) as uow:
            cluster = await uow.clusters.get(cluster_id)
            if cluster is None:
                raise NotFound("cluster", cluster_id)
            quotas = await uow.quotas.quota_set(cluster_id)
            classes = await uow.quotas.priority_classes()
            managed = [f for f in await uow.fleets.all() if f.manager_cluster_id == cluster_id]
            members = await uow.clusters.get_many(
                sorted({m for f in managed for m in f.members}, key=str)
            )
            held = holding_cluster(await uow.drains.on([cluster_id])) is not None
        try:
            result = await api.apply_quotas(
                quotas,
                priority_classes=classes,
                applied_before=cluster.settings.get(APPLIED_SETTING, ()),
                multikueue=[self._multikueue(f, members) for f in managed],
                hold=held,
            )
            check, applied = result.check, result.applied
        except ValueError as exc:  # a model Kueue can't take (e.g. two tenants, one namespace)
            check, applied = HealthCheck(QUOTAS_CHECK, False, str(exc)), None
        except ClusterConnectionError as exc:  # a worker's kubeconfig that can't be opened
            if exc.kind != "invalid_kubeconfig":
                raise
            check, applied = HealthCheck(QUOTAS_CHECK, False, exc.message), None
        async with self._uow(TenantScope.system()) as uow:
            cluster = await uow.clusters.get(cluster_id)
            if cluster is None:
                raise NotFound("cluster", cluster_id)
            others = tuple(h for h in cluster.health if h.name != QUOTAS_CHECK)
            cluster.health = (*others, check)
            if applied is not None:
                cluster.settings = {**cluster.settings, APPLIED_SETTING: sorted(applied)}
            await uow.clusters.save(cluster)
            await uow.commit()
        return cluster

    def _multikueue(self, fleet: Fleet, members: Mapping[ClusterId, Cluster]) -> MultiKueueFleet:
        """A fleet as its MultiKueue manager is given it: its real members, each with its
        kubeconfig opened (for the worker Secret on the manager; never logged)."""
        workers = []
        for member_id in fleet.members:
            member = members.get(member_id)
            if member is None or not member.is_real or member.configuration is None:
                continue
            try:
                kubeconfig = self._open(member)
            except ClusterConnectionError as exc:
                raise ClusterConnectionError(
                    "invalid_kubeconfig",
                    f"fleet {fleet.name}: member {member.name}'s kubeconfig can't be opened",
                ) from exc
            workers.append(MultiKueueWorker(member.name, kubeconfig, member.context))
        return MultiKueueFleet(fleet.name, fleet.cluster_queue, tuple(workers))

    async def _failed(self, cluster_id: ClusterId, exc: ClusterConnectionError) -> Cluster:
        now = self._clock.now()
        unreachable = exc.kind in ("unreachable", "error")
        status = ClusterStatus.NOT_AVAILABLE if unreachable else ClusterStatus.ERROR
        async with self._uow(TenantScope.system()) as uow:
            cluster = await uow.clusters.get(cluster_id)
            if cluster is None or cluster.status is ClusterStatus.DELETING:
                raise NotFound("cluster", cluster_id)
            if cluster.status is not status or cluster.reason != exc.message:
                if status is ClusterStatus.NOT_AVAILABLE and cluster.not_available_since is None:
                    cluster.not_available_since = now
                cluster.status, cluster.reason = status, exc.message
                self._record(uow, cluster, ClusterChangeKind.STATUS)
            cluster.retry_attempt += 1
            cluster.last_retry_time = now
            cluster.updated_at = now
            await uow.clusters.save(cluster)
            await uow.commit()
        log.warning("cluster %s is %s: %s", cluster.name, status.value, exc.message)
        return cluster

    async def _node_event(self, cluster_id: ClusterId, change: NodeChange) -> None:
        name = change.name
        async with self._uow(TenantScope.system()) as uow:
            cluster = await uow.clusters.get(cluster_id)
            if cluster is None or cluster.status is ClusterStatus.DELETING:
                return
            by_name = {n.name: n for n in cluster.nodes}
            before = by_name.get(name)
            if change.node is None:
                if before is None:
                    return
                del by_name[name]
            else:
                node = self._exclusion(cluster, change.node)
                if before is not None:
                    if _significant(before) == _significant(node):
                        return
                    node = replace(node, id=before.id)
                by_name[name] = node
            cluster.nodes = sorted(by_name.values(), key=lambda n: n.name)
            await uow.clusters.replace_nodes(cluster_id, cluster.nodes)
            self._record(uow, cluster, ClusterChangeKind.NODES)
            await uow.commit()

    @staticmethod
    def _record(uow: UnitOfWork, cluster: Cluster, kind: ClusterChangeKind) -> None:
        uow.record(ClusterChanged(kind, cluster.id, cluster=ClusterState.of(cluster)))


def _check_name(name: str) -> list[FieldIssue]:
    problem = name_problem(name, max_length=63)
    return [FieldIssue("name", problem)] if problem else []


def _check_ingress(url: str | None) -> list[FieldIssue]:
    if not url:
        return []
    parsed = urlparse(url)
    if len(url) > 2048 or parsed.scheme not in ("http", "https") or not parsed.hostname:
        return [FieldIssue("ingressUrl", "must be an http(s) URL with a host")]
    return []
