"""Clusters and their nodes."""

from __future__ import annotations

from datetime import datetime
from typing import cast

import strawberry
from strawberry.scalars import JSON

from domain.model import cluster as model
from schema.types.enums import ClusterStatus, NodeType, Platform


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
