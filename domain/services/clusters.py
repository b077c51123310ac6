"""Clusters: reading them, creating simulated ones, and refreshing their node inventory.

A new cluster gets its default quotas (`QuotaService.ensure_defaults`) in the transaction that
registers it, so jobs can be submitted to it at once.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from domain.errors import Conflict, FieldIssue, NotFound, ValidationFailed
from domain.model.cluster import Cluster, ClusterStatus, GpuPrice, Node, Platform
from domain.model.events import ClusterChanged, ClusterChangeKind, ClusterState
from domain.model.ids import ClusterId, new_cluster_id
from domain.model.job import Job, JobStatus
from domain.names import name_problem
from domain.ports.clock import Clock
from domain.ports.gateways import GatewayFactory
from domain.ports.unit_of_work import TenantScope, UnitOfWorkFactory
from domain.scheduling.cost import PriceBook, PriceNow, cost_so_far
from domain.services.prices import price_books
from domain.services.quotas import QuotaService

MAX_HOURLY_PRICE = Decimal("100000")
"""The most one GPU may cost an hour (the price column keeps 10 digits before the point; no GPU
rents for anywhere near this)."""
GPU_TYPE = re.compile(r"[A-Za-z0-9]([A-Za-z0-9._-]{0,98}[A-Za-z0-9])?")
"""A GPU type is a Kubernetes label value (`nvidia.com/gpu.product` as Node Feature Discovery
or the GPU operator sets it, lower-cased by budcluster): at most 63 characters there; 100 here,
the column's width."""


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

    async def price_books(self, cluster_ids: Sequence[ClusterId]) -> dict[ClusterId, PriceBook]:
        """Each cluster's prices over time (`PriceBook`); an unknown cluster has none."""
        async with self._uow(TenantScope.system()) as uow:
            return await price_books(uow, (await uow.clusters.get_many(cluster_ids)).values())

    async def prices_now(self, cluster_ids: Sequence[ClusterId]) -> list[list[PriceNow]]:
        """Each cluster's GPU prices now: for the GPU types of its nodes and those set on it."""
        books = await self.price_books(cluster_ids)
        clusters = await self.get_many([c for c in cluster_ids if c in books])
        now = self._clock.now()
        return [
            books[c].now((n.gpu_type for n in clusters[c].nodes if n.gpu_type), now)
            if c in books and c in clusters
            else []
            for c in cluster_ids
        ]

    async def costs_so_far(self, jobs: Sequence[Job]) -> list[Decimal | None]:
        """What each job has cost by now (`cost_so_far`): a running one's run is priced up to
        now, at the price in force at each moment."""
        running = list({j.cluster_id for j in jobs if j.status is JobStatus.RUNNING})
        books = await self.price_books(running) if running else {}
        now = self._clock.now()
        return [
            cost_so_far(j, books[j.cluster_id], now) if j.cluster_id in books else j.actual_cost
            for j in jobs
        ]

    async def set_gpu_price(
        self, cluster_id: ClusterId, gpu_type: str, hourly: Decimal
    ) -> GpuPrice:
        """The price of one GPU of `gpu_type` for an hour on the cluster, from now on: what runs
        from now is metered at it (what ran before keeps its price), and estimates use it from
        the cluster's next recompute."""
        issues = []
        if not GPU_TYPE.fullmatch(gpu_type):
            issues.append(
                (
                    "gpu_type",
                    "must be a GPU type as its nodes' labels name it (letters, digits, "
                    "'.', '_', '-'; at most 100)",
                )
            )
        if not hourly.is_finite() or not 0 <= hourly <= MAX_HOURLY_PRICE:
            issues.append(("hourly_price", f"must be an amount from 0 to {MAX_HOURLY_PRICE}"))
        elif hourly != hourly.quantize(Decimal("0.0001")):
            issues.append(("hourly_price", "has at most 4 decimals"))
        if issues:
            raise ValidationFailed([FieldIssue(f, m) for f, m in issues])
        async with self._uow(TenantScope.system()) as uow:
            if await uow.clusters.get(cluster_id) is None:
                raise NotFound("cluster", cluster_id)
            price = GpuPrice(cluster_id, gpu_type, hourly, self._clock.now())
            await uow.clusters.add_price(price)
            await uow.commit()
        return price

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
