"""Clusters: reading them, creating simulated ones, and refreshing their node inventory.

A new cluster gets its default quotas (`QuotaService.ensure_defaults`) in the transaction that
registers it, so jobs can be submitted to it at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from domain.errors import Conflict, ValidationFailed
from domain.model.cluster import Cluster, ClusterStatus, Node, Platform
from domain.model.events import ClusterChanged, ClusterChangeKind, ClusterState
from domain.model.ids import ClusterId, new_cluster_id
from domain.names import name_problem
from domain.ports.clock import Clock
from domain.ports.gateways import GatewayFactory
from domain.ports.unit_of_work import TenantScope, UnitOfWorkFactory
from domain.services.quotas import QuotaService


class ClusterService:
    def __init__(
        self,
        *,
        uow: UnitOfWorkFactory,
        clock: Clock,
        gateways: GatewayFactory,
        quotas: QuotaService,
    ) -> None:
        self._uow = uow
        self._clock = clock
        self._gateways = gateways
        self._quotas = quotas

    async def get(self, cluster_id: ClusterId) -> Cluster | None:
        async with self._uow(TenantScope.system()) as uow:
            return await uow.clusters.get(cluster_id)

    async def get_many(self, cluster_ids: Sequence[ClusterId]) -> dict[ClusterId, Cluster]:
        async with self._uow(TenantScope.system()) as uow:
            return await uow.clusters.get_many(cluster_ids)

    async def all(self) -> list[Cluster]:
        async with self._uow(TenantScope.system()) as uow:
            return await uow.clusters.all()

    async def create_simulated(self, name: str, settings: dict[str, Any]) -> Cluster:
        """Register a simulated cluster and read its nodes from it; AVAILABLE at once."""
        problem = name_problem(name)
        if problem:
            raise ValidationFailed.single("name", problem)
        now = self._clock.now()
        cluster = Cluster(
            id=new_cluster_id(),
            name=name,
            platform=Platform.SIMULATED,
            status=ClusterStatus.AVAILABLE,
            created_at=now,
            updated_at=now,
            settings=settings,
        )
        nodes = await self._gateways.for_cluster(cluster).nodes()
        cluster.nodes = nodes
        async with self._uow(TenantScope.system()) as uow:
            if await uow.clusters.get_by_name(name) is not None:
                raise Conflict(f"a cluster named {name} exists", code="NAME_TAKEN")
            await uow.clusters.add(cluster)
            await self._quotas.ensure_defaults(cluster, uow=uow)
            await uow.commit()
        return cluster

    async def refresh_nodes(self, cluster: Cluster) -> Cluster:
        """Store the cluster's nodes as it reports them; a change of capacity is a cluster event
        (the timeline is recomputed for it)."""
        nodes = await self._gateways.for_cluster(cluster).nodes()
        async with self._uow(TenantScope.system()) as uow:
            stored = await uow.clusters.get(cluster.id)
            changed = stored is None or _capacity(stored.nodes) != _capacity(nodes)
            await uow.clusters.replace_nodes(cluster.id, nodes)
            if changed and stored is not None:
                stored.nodes = list(nodes)
                uow.record(
                    ClusterChanged(
                        ClusterChangeKind.NODES, cluster.id, cluster=ClusterState.of(stored)
                    )
                )
            await uow.commit()
        cluster.nodes = nodes
        return cluster


def _capacity(nodes: Sequence[Node]) -> set[tuple[str, str | None, int, float, float, bool]]:
    return {(n.name, n.gpu_type, n.gpu_count, n.cpu_cores, n.memory_gb, n.usable) for n in nodes}
