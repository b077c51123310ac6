"""Inputs of the quota and reservation mutations, shaped like the objects they make."""

from __future__ import annotations

from datetime import datetime

import strawberry

from schema.types.enums import QueueingStrategy, ReclaimWithinCohort, WithinClusterQueue


@strawberry.input
class NodeLabelInput:
    key: str
    value: str


@strawberry.input
class ResourceFlavorInput:
    cluster_id: strawberry.ID
    name: str = strawberry.field(description="A DNS-1123 label of at most 63 characters.")
    node_labels: list[NodeLabelInput] = strawberry.field(
        default_factory=list, description="The labels a node must carry to be of this flavor."
    )


@strawberry.input
class ResourceQuotaInput:
    name: str = strawberry.field(description="A resource: nvidia.com/gpu, cpu, memory (GB), ...")
    nominal_quota: float
    borrowing_limit: float | None = strawberry.field(
        default=None, description="Only for a queue in a cohort."
    )
    lending_limit: float | None = strawberry.field(
        default=None, description="Only for a queue in a cohort; at most nominalQuota."
    )


@strawberry.input
class FlavorQuotasInput:
    flavor: str
    resources: list[ResourceQuotaInput]


@strawberry.input
class ResourceGroupInput:
    covered_resources: list[str]
    flavors: list[FlavorQuotasInput] = strawberry.field(
        description="In order of preference; each flavor in at most one group of the queue."
    )


@strawberry.input
class PreemptionPolicyInput:
    within_cluster_queue: WithinClusterQueue = WithinClusterQueue.LOWER_PRIORITY
    reclaim_within_cohort: ReclaimWithinCohort = ReclaimWithinCohort.NEVER


@strawberry.input(description="A ClusterQueue whole: on update, its complete new state.")
class ClusterQueueInput:
    cluster_id: strawberry.ID
    name: str
    cohort: str | None = None
    queueing_strategy: QueueingStrategy = QueueingStrategy.BEST_EFFORT_FIFO
    resource_groups: list[ResourceGroupInput] = strawberry.field(default_factory=list)
    preemption: PreemptionPolicyInput = strawberry.field(default_factory=PreemptionPolicyInput)


@strawberry.input
class LocalQueueInput:
    cluster_id: strawberry.ID
    name: str
    cluster_queue: str
    tenant_id: strawberry.ID | None = strawberry.field(
        default=None, description="Admins only: make it for another tenant."
    )


@strawberry.input
class CohortInput:
    cluster_id: strawberry.ID
    name: str
    description: str | None = None


@strawberry.input
class CapacityReservationInput:
    cluster_id: strawberry.ID
    name: str
    cluster_queue: str = strawberry.field(description="The ClusterQueue whose quota pays for it.")
    flavor: str
    gpu_count: int
    start: datetime
    end: datetime
