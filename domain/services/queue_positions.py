"""Kueue's own view of where a queued job stands, shown beside budcluster's estimate.

Kueue offers queue positions, not times; budcluster's estimator offers times. Where a real
cluster serves Kueue's visibility API, a job QUEUED there gets its position in its LocalQueue
and in the ClusterQueue behind it (from 0: 0 is considered next), and how many wait in the
LocalQueue. One read per (cluster, namespace, LocalQueue) per request, and a read is reused
for `ttl_seconds` across requests, so a page of many jobs, or many viewers, cost the cluster
one call per queue per few seconds. No position (None): the job is not QUEUED, its cluster is
simulated or offers no visibility API, cannot be reached right now, or Kueue does not list the
job (it may have just been admitted).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from domain.model.ids import ClusterId, JobId, TenantId
from domain.model.job import JobStatus
from domain.model.quota import tenant_namespace
from domain.ports.clock import Clock
from domain.ports.gateways import GatewayFactory, GatewayUnavailable, PendingWorkload
from domain.ports.unit_of_work import TenantScope, UnitOfWorkFactory

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class QueuePosition:
    local_queue: str
    position_in_local_queue: int
    position_in_cluster_queue: int
    pending_in_local_queue: int
    priority: int
    observed_at: datetime


@dataclass(frozen=True)
class PositionQuery:
    """What it takes to find a job in Kueue's queue (hashable: a DataLoader key)."""

    job_id: JobId
    cluster_id: ClusterId
    tenant_id: TenantId
    queue_name: str
    workload_name: str
    status: JobStatus


QueueKey = tuple[ClusterId, str, str]
Reading = tuple[datetime, list[PendingWorkload] | None]


class QueuePositionService:
    def __init__(
        self,
        *,
        uow: UnitOfWorkFactory,
        gateways: GatewayFactory,
        clock: Clock,
        ttl_seconds: float = 5.0,
    ) -> None:
        self._uow = uow
        self._gateways = gateways
        self._clock = clock
        self._ttl = ttl_seconds
        self._read: dict[QueueKey, Reading] = {}

    async def positions(self, queries: Sequence[PositionQuery]) -> list[QueuePosition | None]:
        queued = [q for q in queries if q.status is JobStatus.QUEUED]
        keys = {(q.cluster_id, tenant_namespace(q.tenant_id), q.queue_name) for q in queued}
        readings = dict(
            zip(keys, await asyncio.gather(*(self._reading(k) for k in keys)), strict=True)
        )
        found: list[QueuePosition | None] = []
        for query in queries:
            key = (query.cluster_id, tenant_namespace(query.tenant_id), query.queue_name)
            reading = readings.get(key) if query.status is JobStatus.QUEUED else None
            found.append(_position(query, reading) if reading else None)
        return found

    async def _reading(self, key: QueueKey) -> Reading | None:
        now = self._clock.now()
        cached = self._read.get(key)
        if cached is not None and (now - cached[0]).total_seconds() < self._ttl:
            return cached
        cluster_id, namespace, queue = key
        async with self._uow(TenantScope.system()) as uow:
            cluster = await uow.clusters.get(cluster_id)
        if cluster is None or not cluster.is_real:
            return None
        try:
            pending = await self._gateways.for_cluster(cluster).pending_in_queue(namespace, queue)
        except GatewayUnavailable as exc:
            log.info("no queue positions from cluster %s: %s", cluster.name, exc)
            return None
        self._read[key] = (now, pending)
        if len(self._read) > 1000:  # forget the oldest readings
            for old in sorted(self._read, key=lambda k: self._read[k][0])[:500]:
                del self._read[old]
        return now, pending


def _position(query: PositionQuery, reading: Reading) -> QueuePosition | None:
    observed_at, pending = reading
    if pending is None:
        return None
    mine = [p for p in pending if _is_of(p, query.workload_name)]
    if not mine:
        return None
    first = min(mine, key=lambda p: p.position_in_local_queue)
    return QueuePosition(
        local_queue=first.local_queue or query.queue_name,
        position_in_local_queue=first.position_in_local_queue,
        position_in_cluster_queue=first.position_in_cluster_queue,
        pending_in_local_queue=len(pending),
        priority=first.priority,
        observed_at=observed_at,
    )


def _is_of(pending: PendingWorkload, workload_name: str) -> bool:
    """A batch Job is named after the attempt; a service's pods after its release, with the
    ReplicaSet's and the pod's suffixes."""
    if pending.owner_kind == "Job":
        return pending.owner_name == workload_name
    return pending.owner_name.startswith(f"{workload_name}-")
