"""Clusters, their nodes, and their quota objects (Kueue's, and capacity reservations)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, cast

import strawberry
from strawberry.scalars import JSON

from domain.model import cluster as model
from schema.context import Info
from schema.schedule import accuracy_for, schedule_for
from schema.types.enums import ClusterStatus, NodeType, Platform
from schema.types.quota import (
    CapacityReservation,
    ClusterQueue,
    Cohort,
    LocalQueue,
    ResourceFlavor,
    quotas_of,
)
from schema.types.timeline import EstimateAccuracy, Schedule, ScheduleFilter


@strawberry.type(description="A GPU type on a cluster and how many of it there are.")
class GpuCapacity:
    gpu_type: str
    total: int
    largest_node: int


@strawberry.type
class Node:
    id: strawberry.ID
    name: str
    node_type: NodeType
    gpu_type: str | None
    gpu_count: int
    cpu_cores: float
    memory_gb: float
    ready: bool
    schedulable: bool
    hardware_info: JSON

    @classmethod
    def from_domain(cls, node: model.Node) -> Node:
        return cls(
            id=strawberry.ID(str(node.id)),
            name=node.name,
            node_type=node.node_type,
            gpu_type=node.gpu_type,
            gpu_count=node.gpu_count,
            cpu_cores=node.cpu_cores,
            memory_gb=node.memory_gb,
            ready=node.ready,
            schedulable=node.schedulable,
            hardware_info=cast(JSON, node.hardware_info),
        )


@strawberry.type
class Cluster:
    id: strawberry.ID
    name: str
    platform: Platform
    status: ClusterStatus
    reason: str | None
    created_at: datetime
    updated_at: datetime
    nodes: list[Node]
    capacity: list[GpuCapacity]

    @strawberry.field
    async def resource_flavors(self, info: Info) -> list[ResourceFlavor]:
        return [ResourceFlavor.from_domain(f) for f in (await quotas_of(info, self.id)).flavors]

    @strawberry.field
    async def cluster_queues(self, info: Info) -> list[ClusterQueue]:
        queues = (await quotas_of(info, self.id)).cluster_queues
        return [ClusterQueue.from_domain(q) for q in queues]

    @strawberry.field
    async def cohorts(self, info: Info) -> list[Cohort]:
        return [Cohort.from_domain(c) for c in (await quotas_of(info, self.id)).cohorts]

    @strawberry.field(description="Your tenant's LocalQueues (an admin sees every tenant's).")  # type: ignore[untyped-decorator]
    async def local_queues(self, info: Info) -> list[LocalQueue]:
        queues = (await quotas_of(info, self.id)).local_queues
        return [LocalQueue.from_domain(q) for q in queues]

    @strawberry.field(  # type: ignore[untyped-decorator]
        description="Your tenant's reservations that have not ended, cancelled ones included "
        "(an admin sees every tenant's)."
    )
    async def reservations(self, info: Info) -> list[CapacityReservation]:
        booked = (await quotas_of(info, self.id)).reservations
        return [CapacityReservation.from_domain(r) for r in booked]

    @strawberry.field(  # type: ignore[untyped-decorator]
        description="What runs on which GPU in [from, to), what will run when, the queue and "
        "the free-GPU forecast. Defaults: from an hour ago (rounded down to 5 minutes), to 24 "
        "hours after `from`."
    )
    async def schedule(
        self,
        info: Info,
        from_: Annotated[datetime | None, strawberry.argument(name="from")] = None,
        to: datetime | None = None,
        filter: ScheduleFilter | None = None,
    ) -> Schedule:
        return await schedule_for(info, self.id, from_, to, filter)

    @strawberry.field(  # type: ignore[untyped-decorator]
        description="How close estimates came to what happened, over jobs that ended since "
        "`since` (default: 30 days)."
    )
    async def estimate_accuracy(
        self, info: Info, since: datetime | None = None
    ) -> EstimateAccuracy:
        return await accuracy_for(info, self.id, since)

    @classmethod
    def from_domain(cls, cluster: model.Cluster) -> Cluster:
        return cls(
            id=strawberry.ID(str(cluster.id)),
            name=cluster.name,
            platform=cluster.platform,
            status=cluster.status,
            reason=cluster.reason,
            created_at=cluster.created_at,
            updated_at=cluster.updated_at,
            nodes=[Node.from_domain(n) for n in cluster.nodes],
            capacity=[
                GpuCapacity(gpu_type=t, total=n, largest_node=cluster.largest_node_gpus(t))
                for t, n in sorted(cluster.gpu_capacity().items())
            ],
        )
