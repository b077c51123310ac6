"""Inputs of the quota and reservation mutations, shaped like the objects they make."""

from __future__ import annotations

from datetime import datetime

import strawberry

from schema.types.enums import (
    BorrowWithinCohortPolicy,
    FungibilityPolicy,
    FungibilityPreference,
    QueueingStrategy,
    ReclaimWithinCohort,
    WithinClusterQueue,
)

PREFERENCE = (
    "Which the workload prefers when every flavor it may take needs borrowing or preemption "
    "(Kueue's flavorFungibility.preference); null: none set, Kueue's default "
    "BORROWING_OVER_PREEMPTION. Only while whenCanBorrow and whenCanPreempt are both "
    "TRY_NEXT_FLAVOR (Kueue's rule)."
)
WEIGHT = "Kueue's fairSharing.weight (see ClusterQueue.fairSharingWeight): 0, or more than 1e-9."


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
        default=None, description="Only for a queue in a cohort (a cohort: with a parent)."
    )
    lending_limit: float | None = strawberry.field(
        default=None,
        description="Only for a queue in a cohort, at most nominalQuota (a cohort: with a parent).",
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
class BorrowWithinCohortInput:
    policy: BorrowWithinCohortPolicy = strawberry.field(
        default=BorrowWithinCohortPolicy.NEVER,
        description="Not NEVER only while reclaimWithinCohort is not NEVER (Kueue's rule).",
    )
    max_priority_threshold: int | None = strawberry.field(
        default=None,
        description="Only workloads of at most this priority value may be preempted; null: any "
        "the policy allows.",
    )


@strawberry.input
class PreemptionPolicyInput:
    within_cluster_queue: WithinClusterQueue = WithinClusterQueue.LOWER_PRIORITY
    reclaim_within_cohort: ReclaimWithinCohort = ReclaimWithinCohort.NEVER
    borrow_within_cohort: BorrowWithinCohortInput = strawberry.field(
        default_factory=BorrowWithinCohortInput
    )


@strawberry.input
class FlavorFungibilityInput:
    when_can_borrow: FungibilityPolicy = FungibilityPolicy.MAY_STOP_SEARCH
    when_can_preempt: FungibilityPolicy = FungibilityPolicy.TRY_NEXT_FLAVOR
    preference: FungibilityPreference | None = strawberry.field(
        default=None, description=PREFERENCE
    )


@strawberry.input(description="A ClusterQueue whole: on update, its complete new state.")
class ClusterQueueInput:
    cluster_id: strawberry.ID
    name: str
    cohort: str | None = None
    queueing_strategy: QueueingStrategy = QueueingStrategy.BEST_EFFORT_FIFO
    resource_groups: list[ResourceGroupInput] = strawberry.field(default_factory=list)
    preemption: PreemptionPolicyInput = strawberry.field(default_factory=PreemptionPolicyInput)
    flavor_fungibility: FlavorFungibilityInput = strawberry.field(
        default_factory=FlavorFungibilityInput
    )
    fair_sharing_weight: float = strawberry.field(default=1.0, description=WEIGHT)


@strawberry.input
class LocalQueueInput:
    cluster_id: strawberry.ID
    name: str
    cluster_queue: str
    tenant_id: strawberry.ID | None = strawberry.field(
        default=None, description="Admins only: make it for another tenant."
    )


@strawberry.input(description="A Cohort whole: on update, its complete new state.")
class CohortInput:
    cluster_id: strawberry.ID
    name: str
    description: str | None = None
    parent: str | None = strawberry.field(
        default=None,
        description="Its parent cohort; one with no Cohort object is implicit, as in Kueue. It "
        "must not make the cohort its own ancestor.",
    )
    resource_groups: list[ResourceGroupInput] = strawberry.field(
        default_factory=list,
        description="The cohort's own quotas; borrowingLimit and lendingLimit only with a "
        "parent (a cohort may lend more than its nominalQuota: its subtree's quota too).",
    )
    fair_sharing_weight: float = strawberry.field(default=1.0, description=WEIGHT)


@strawberry.input
class QuotaSettingsInput:
    cluster_id: strawberry.ID
    fair_sharing: bool = strawberry.field(
        description="Whether the cluster's Kueue runs fair sharing (its configuration's "
        "fairSharing.enable, which budcluster records but does not set on the cluster)."
    )


@strawberry.input
class CapacityReservationInput:
    cluster_id: strawberry.ID
    name: str
    cluster_queue: str = strawberry.field(description="The ClusterQueue whose quota pays for it.")
    flavor: str
    gpu_count: int
    start: datetime
    end: datetime
