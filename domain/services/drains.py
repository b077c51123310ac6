"""Drains before maintenance or removal: `drainNode`, `drainCluster`, and undraining.

A drain is the operator's. Starting one, in one transaction:

  nothing new is admitted where it covers   the node is cordoned (a cluster drained whole: every
                                            node, and on Kubernetes its ClusterQueues hold)
  a batch or training job running there     gets its checkpoint signal: SIGTERM, then the grace
                                            period it declares, and is requeued in the same
                                            attempt (`Job.requeue`): not failed, no retry used
  a deployment's replica running there      is started elsewhere first; the old one stops once
                                            its replacement runs (`DeploymentService
                                            .replace_replicas`)
  a standalone service job                  is requeued as a batch job is (one replica: nothing
                                            else serves for it)
  a fleet's job waiting on a drained        moves to another member (the balancer, at once and
  cluster                                   on each pass); one of no fleet waits, with the reason

Then `advance` (at once, and on the runtime's drain loop: level-triggered, so a lost task or an
admission that raced the drain is caught) evicts on Kubernetes what budcluster does not run itself
(honouring PodDisruptionBudgets: a pod a budget keeps is said in `blocked` and tried again), and
marks the drain DRAINED once nothing of budcluster's holds resources where it covers and the last
grace period is over. The timeline shows it as a band on the node's (or every) row, to its
estimated end. `deleteCluster` of a cluster drained whole needs no force: nothing runs there.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from domain.errors import Conflict, NotFound, ValidationFailed
from domain.model.cluster import Cluster, ClusterStatus
from domain.model.drain import Drain, DrainId, DrainState, cordoned, grace_of, new_drain_id
from domain.model.events import ClusterChanged, ClusterChangeKind, ClusterState
from domain.model.ids import ClusterId
from domain.model.job import Job, JobStatus, JobType
from domain.model.principal import Principal
from domain.names import text_problem
from domain.ports.clock import Clock
from domain.ports.gateways import GatewayFactory, GatewayUnavailable
from domain.ports.unit_of_work import TenantScope, UnitOfWork, UnitOfWorkFactory
from domain.services.balancing import FleetBalancer
from domain.services.deployments import DeploymentService, replica_of

log = logging.getLogger(__name__)

HOLDING = frozenset({JobStatus.ADMITTED, JobStatus.RUNNING})
MAX_REASON = 500
SHOWN_ENDED = timedelta(hours=24)
"""How long an ended drain is still shown (the timeline's past is a day)."""


@dataclass(frozen=True)
class DrainView:
    """A drain as it stands now: its state, what still holds resources where it covers, and
    when it is expected to be done."""

    drain: Drain
    state: DrainState
    remaining: int
    """budcluster's jobs still holding resources where it covers."""
    estimated_end: datetime | None
    """When it is expected to be DRAINED (it is, or was, at `drained_at`); None when a
    replacement replica has no estimated start yet."""


def covered(drain: Drain, job: Job) -> bool:
    """`job` holds resources where `drain` covers."""
    if job.status not in HOLDING or job.cluster_id != drain.cluster_id:
        return False
    if drain.node is None:
        return True
    return any(p.node == drain.node for p in job.placements)


def view(drain: Drain, jobs: Sequence[Job], now: datetime) -> DrainView:
    """Where `drain` stands with the cluster's active jobs `jobs`: DRAINING until nothing of
    budcluster's holds resources where it covers, expected to end when the last grace period
    given ends, or, for a replica being replaced, when its deployment's waiting replicas are
    estimated to start (the old one stops once its replacement runs)."""
    if drain.state is not DrainState.DRAINING:
        return DrainView(drain, drain.state, 0, drain.drained_at or drain.ended_at)
    on = [j for j in jobs if covered(drain, j)]
    ends = [max(drain.evictions_end, now)]
    known = True
    for job in on:
        owner = replica_of(job)
        starts = [
            j.estimated_start
            for j in jobs
            if owner is not None and replica_of(j) == owner and j.status not in HOLDING
        ]
        if not starts or None in starts:
            known = False  # not a replica being replaced, or one not estimated yet
            continue
        ends.extend(s for s in starts if s is not None)
    return DrainView(drain, DrainState.DRAINING, len(on), max(ends) if known else None)


class DrainService:
    def __init__(
        self,
        *,
        uow: UnitOfWorkFactory,
        clock: Clock,
        gateways: GatewayFactory,
        deployments: DeploymentService,
        balancer: FleetBalancer | None = None,
    ) -> None:
        self._uow = uow
        self._clock = clock
        self._gateways = gateways
        self._deployments = deployments
        self._balancer = balancer

    # --- commands ---------------------------------------------------------------------------

    async def drain(
        self, principal: Principal, cluster_id: ClusterId, node: str | None, reason: str | None
    ) -> DrainView:
        """Drain `node` of the cluster (None: the whole cluster). Draining what is already
        drained answers with that drain."""
        why = (reason or "").strip() or "maintenance"
        if problem := text_problem(why):
            raise ValidationFailed.single("reason", problem)
        if len(why) > MAX_REASON:
            raise ValidationFailed.single("reason", f"must be at most {MAX_REASON} characters")
        now = self._clock.now()
        async with self._uow(TenantScope.system()) as uow:
            cluster = await uow.clusters.get(cluster_id)
            if cluster is None:
                raise NotFound("cluster", cluster_id)
            if cluster.status is ClusterStatus.DELETING:
                raise Conflict(f"cluster {cluster.name} is being deleted", code="CLUSTER_GONE")
            if node is not None and node not in {n.name for n in cluster.nodes}:
                raise ValidationFailed.single(
                    "node", f"cluster {cluster.name} has no node {node!r}", code="NOT_FOUND"
                )
            drains = await uow.drains.on([cluster_id])
            same = next((d for d in drains if d.node == node), None)
            if same is not None:
                return view(same, await uow.jobs.active_on_cluster(cluster_id), now)
            drain = Drain(
                id=new_drain_id(),
                cluster_id=cluster_id,
                node=node,
                reason=why,
                started_at=now,
                started_by=actor_of(principal),
                evictions_end=now,
            )
            drain = await self._evict(uow, drain, now)
            await uow.drains.put(drain)
            self._announce(uow, cluster, [*drains, drain])
            await uow.commit()
        log.info("drain %s of cluster %s (%s) started", drain.id, cluster.name, node or "all")
        await self._store_nodes(cluster)
        await self._after(drain)
        return await self.get(drain.id) or view(drain, await self._active(drain), now)

    async def undrain(self, principal: Principal, drain_id: DrainId) -> DrainView:
        """End a drain: the node (or cluster) takes new work again. Ending an ended one answers
        with it."""
        now = self._clock.now()
        async with self._uow(TenantScope.system()) as uow:
            drain = await uow.drains.get(drain_id, for_update=True)
            if drain is None:
                raise NotFound("drain", drain_id)
            if not drain.active:
                return view(drain, [], now)
            cluster = await uow.clusters.get(drain.cluster_id)
            drain = drain.end(now)
            await uow.drains.put(drain)
            if cluster is not None:
                self._announce(uow, cluster, await uow.drains.on([drain.cluster_id]))
            await uow.commit()
        log.info("drain %s ended by %s", drain.id, actor_of(principal))
        if cluster is not None:
            await self._store_nodes(cluster)
        if drain.node is not None and cluster is not None:
            try:
                await self._gateways.for_cluster(cluster).undrain_node(drain.node)
            except GatewayUnavailable as exc:  # the registry's node sync shows it cordoned
                log.warning("uncordoning %s: the cluster did not answer (%s)", drain.node, exc)
        return view(drain, [], now)

    async def advance(self, drain_id: DrainId) -> DrainView | None:
        """One round of a drain (see the module's docstring); its view after it."""
        now = self._clock.now()
        async with self._uow(TenantScope.system()) as uow:
            drain = await uow.drains.get(drain_id, for_update=True)
            if drain is None or drain.state is not DrainState.DRAINING:
                return None
            cluster = await uow.clusters.get(drain.cluster_id)
            if cluster is None:
                return None
            drain = await self._evict(uow, drain, now)
            await uow.drains.put(drain)
            await uow.commit()
        blocked: list[str] = []
        if drain.node is not None and cluster.is_real:
            try:
                blocked = await self._gateways.for_cluster(cluster).drain_node(drain.node)
            except GatewayUnavailable as exc:
                log.warning("draining %s: the cluster did not answer (%s)", drain.node, exc)
                blocked = list(drain.blocked) or ["(the cluster did not answer)"]
        jobs = await self._active(drain)
        now = self._clock.now()
        current = view(drain, jobs, now)
        async with self._uow(TenantScope.system()) as uow:
            stored = await uow.drains.get(drain_id, for_update=True)
            if stored is None or stored.state is not DrainState.DRAINING:
                return None
            if current.remaining == 0 and now >= stored.evictions_end and not blocked:
                stored = stored.done(now)
                log.info("drain %s: drained", drain_id)
            else:
                stored = replace(stored, blocked=tuple(blocked))
            await uow.drains.put(stored)
            await uow.commit()
        return view(stored, jobs, now)

    async def advance_all(self) -> int:
        """A round of every drain that is DRAINING; how many there were."""
        async with self._uow(TenantScope.system()) as uow:
            clusters = [c.id for c in await uow.clusters.all()]
            draining = [d for d in await uow.drains.on(clusters) if d.drained_at is None]
        for drain in draining:
            try:
                await self.advance(drain.id)
            except Conflict:  # a job changed meanwhile: the next round
                continue
        return len(draining)

    # --- reading ----------------------------------------------------------------------------

    async def drains(self, cluster_ids: Sequence[ClusterId]) -> list[DrainView]:
        """The clusters' drains that are on, and those ended in the last day."""
        now = self._clock.now()
        async with self._uow(TenantScope.system()) as uow:
            found = await uow.drains.on(cluster_ids, ended_after=now - SHOWN_ENDED)
            active = await uow.jobs.active_on_clusters(sorted({d.cluster_id for d in found}))
        return [view(d, [j for j in active if j.cluster_id == d.cluster_id], now) for d in found]

    async def get(self, drain_id: DrainId) -> DrainView | None:
        async with self._uow(TenantScope.system()) as uow:
            drain = await uow.drains.get(drain_id)
        if drain is None:
            return None
        return view(drain, await self._active(drain), self._clock.now())

    # --- the work ---------------------------------------------------------------------------

    async def _active(self, drain: Drain) -> list[Job]:
        async with self._uow(TenantScope.system()) as uow:
            return await uow.jobs.active_on_cluster(drain.cluster_id)

    async def _evict(self, uow: UnitOfWork, drain: Drain, now: datetime) -> Drain:
        """Requeue or replace what holds resources where `drain` covers (in `uow`)."""
        jobs = await uow.jobs.active_on_cluster(drain.cluster_id)
        where = f"node {drain.node}" if drain.node else "its cluster"
        reason = f"{where} is drained ({drain.reason})"
        replicas: list[Job] = []
        ends = [drain.evictions_end]
        for job in jobs:
            if not covered(drain, job):
                continue
            if job.job_type is JobType.SERVICE and replica_of(job) is not None:
                replicas.append(job)
                continue
            current = await uow.jobs.get(job.id, for_update=True)
            if current is None or current.status not in HOLDING:
                continue
            current.requeue(reason, now)
            ends.append(now + timedelta(seconds=grace_of(current)))
        made = await self._deployments.replace_replicas(uow, replicas, reason) if replicas else []
        return replace(drain, evictions_end=max(ends), replacing=drain.replacing + len(made))

    async def _store_nodes(self, cluster: Cluster) -> None:
        """A simulated cluster's nodes as it reports them now, cordons included (a real one's
        come through its node watch, once the cordon is in place there)."""
        if cluster.is_real:
            return
        nodes = await self._gateways.for_cluster(cluster).nodes()
        async with self._uow(TenantScope.system()) as uow:
            await uow.clusters.replace_nodes(cluster.id, nodes)
            await uow.commit()

    def _announce(self, uow: UnitOfWork, cluster: Cluster, drains: Sequence[Drain]) -> None:
        """The cordons as the cluster's state (`clusterUpdates`), and a recompute of its
        timeline; a drain of the whole cluster is a change of what its queues admit (on
        Kubernetes, their stopPolicy)."""
        shown = replace(cluster, nodes=cordoned(cluster.nodes, drains))
        uow.record(
            ClusterChanged(ClusterChangeKind.NODES, cluster.id, cluster=ClusterState.of(shown))
        )
        uow.record(ClusterChanged(ClusterChangeKind.QUOTAS, cluster.id))

    async def _after(self, drain: Drain) -> None:
        """What follows a drain's start at once: a round of it, and for a cluster drained
        whole, its fleets' waiting jobs moved to the other members."""
        try:
            await self.advance(drain.id)
        except Exception:  # the drain loop's next round
            log.exception("the first round of drain %s failed", drain.id)
        if drain.node is not None or self._balancer is None:
            return
        async with self._uow(TenantScope.system()) as uow:
            fleets = await uow.fleets.with_member(drain.cluster_id)
        for fleet in fleets:
            try:
                await self._balancer.balance(fleet.id)
            except Exception:
                log.exception("moving the waiting jobs of fleet %s failed", fleet.name)


def actor_of(principal: Principal) -> str:
    """Who asked, as the audit trail names a token."""
    return f"token:{principal.token_id}" if principal.token_id else "cli:operator"
