"""Kueue's objects, the priority classes and capacity reservations, as the API shows them.

Names follow Kueue's (and the domain's): ResourceFlavor, ClusterQueue with resourceGroups,
preemption, flavorFungibility and its fair-sharing weight, LocalQueue, Cohort (a tree: parent,
quotas of its own, weight), WorkloadPriorityClass, and a cluster's QuotaSettings. Descriptions say
what Kueue does with each setting (budcluster's estimate is not said to follow them all). A
ClusterQueue's `usage` and a cluster's quota fields come from one per-request DataLoader
(`loaders.quotas`), which reads every cluster asked for at once, with the caller's visibility
applied by the domain: any number of clusters and queues is a constant number of statements.
"""

from __future__ import annotations

import uuid
from datetime import datetime

import strawberry

from domain.model import quota as model
from domain.model.ids import ClusterId
from domain.model.reservation import CapacityReservation as DomainReservation
from domain.services.quota_usage import FlavorUsage as DomainFlavorUsage
from domain.services.quotas import ClusterQuotas
from schema.context import Info
from schema.types.derive import derive
from schema.types.enums import (
    BorrowWithinCohortPolicy,
    FungibilityPolicy,
    FungibilityPreference,
    JobPriority,
    QueueingStrategy,
    ReclaimWithinCohort,
    WithinClusterQueue,
)

FAIR_SHARING_WEIGHT = (
    "Kueue's fairSharing.weight: with fair sharing on (QuotaSettings.fairSharing), unused quota "
    "goes first to the queue or cohort with the lowest share (its usage above nominal quota "
    "divided by this weight), and preemption evens shares out; 0 puts it always last. Ignored "
    "while fair sharing is off."
)

PREFERENCE = (
    "Which the workload prefers when every flavor it may take needs borrowing or preemption "
    "(Kueue's flavorFungibility.preference): BORROWING_OVER_PREEMPTION borrows where it fits, "
    "PREEMPTION_OVER_BORROWING preempts within the queue's nominal quota rather than borrow; "
    "null: none set, Kueue's default BORROWING_OVER_PREEMPTION. Set only while whenCanBorrow and "
    "whenCanPreempt are both TRY_NEXT_FLAVOR (Kueue's rule)."
)


async def quotas_of(info: Info, cluster_id: str) -> ClusterQuotas:
    """The cluster's quota objects as the caller may see them (batched per request)."""
    return await info.context.loaders.quotas.load(ClusterId(uuid.UUID(cluster_id)))


@strawberry.type(description="A Kubernetes node label.")
class NodeLabel:
    key: str
    value: str


@strawberry.type(description="A kind of node, chosen by node labels (e.g. the GPU product).")
class ResourceFlavor:
    cluster_id: strawberry.ID
    name: str
    node_labels: list[NodeLabel]
    created_at: datetime
    updated_at: datetime

    @classmethod
    def from_domain(cls, flavor: model.ResourceFlavor) -> ResourceFlavor:
        return cls(
            cluster_id=strawberry.ID(str(flavor.cluster_id)),
            name=flavor.name,
            node_labels=[NodeLabel(key=k, value=v) for k, v in sorted(flavor.node_labels.items())],
            created_at=flavor.created_at,
            updated_at=flavor.updated_at,
        )


@strawberry.type(description="A queue's quota of one resource in one flavor.")
class ResourceQuota:
    name: str
    nominal_quota: float
    borrowing_limit: float | None = strawberry.field(
        description="How much more it may borrow from its cohort; null: whatever is unused."
    )
    lending_limit: float | None = strawberry.field(
        description="How much of its unused quota its cohort may borrow; null: all of it."
    )


@strawberry.type
class FlavorQuotas:
    flavor: str
    resources: list[ResourceQuota]


@strawberry.type(description="Resources whose quotas are given together, per flavor in order.")
class ResourceGroup:
    covered_resources: list[str]
    flavors: list[FlavorQuotas]


@strawberry.type(
    description="Kueue's borrowWithinCohort: preemption in other queues of the cohort for a "
    "workload that has to borrow to fit (classical preemption only; Kueue ignores it with fair "
    "sharing)."
)
class BorrowWithinCohort:
    policy: BorrowWithinCohortPolicy
    max_priority_threshold: int | None = strawberry.field(
        description="Only workloads of at most this priority value may be preempted; null: any "
        "the policy allows."
    )


@strawberry.type
class PreemptionPolicy:
    within_cluster_queue: WithinClusterQueue
    reclaim_within_cohort: ReclaimWithinCohort
    borrow_within_cohort: BorrowWithinCohort = strawberry.field(
        description="Not NEVER only while reclaimWithinCohort is not NEVER (Kueue's rule)."
    )


@strawberry.type(
    description="Kueue's flavorFungibility: when a workload fits a flavor only by borrowing, or "
    "only by preempting, whether it takes that flavor or first tries the queue's next one."
)
class FlavorFungibility:
    when_can_borrow: FungibilityPolicy
    when_can_preempt: FungibilityPolicy
    preference: FungibilityPreference | None = strawberry.field(description=PREFERENCE)


@strawberry.type(description="One (flavor, resource) of a ClusterQueue: its quota and its use now.")
class FlavorUsage:
    flavor: str
    resource: str
    nominal_quota: float
    borrowing_limit: float | None
    lending_limit: float | None
    used: float = strawberry.field(
        description="Requests of the queue's ADMITTED and RUNNING jobs: GPUs, cores or GB."
    )
    borrowed: float = strawberry.field(description="What `used` exceeds the nominal quota by.")
    reserved: int = strawberry.field(description="GPUs held by reservations active now.")
    pending_workloads: int = strawberry.field(description="The queue's PENDING and QUEUED jobs.")
    admitted_workloads: int = strawberry.field(description="The queue's ADMITTED and RUNNING jobs.")

    @classmethod
    def from_domain(cls, usage: DomainFlavorUsage) -> FlavorUsage:
        return cls(
            flavor=usage.flavor,
            resource=usage.resource,
            nominal_quota=usage.nominal_quota,
            borrowing_limit=usage.borrowing_limit,
            lending_limit=usage.lending_limit,
            used=usage.used,
            borrowed=usage.borrowed,
            reserved=usage.reserved,
            pending_workloads=usage.pending_workloads,
            admitted_workloads=usage.admitted_workloads,
        )


@strawberry.type(description="Quotas, per flavor, that LocalQueues submit into.")
class ClusterQueue:
    cluster_id: strawberry.ID
    name: str
    cohort: str | None
    queueing_strategy: QueueingStrategy
    resource_groups: list[ResourceGroup]
    preemption: PreemptionPolicy
    flavor_fungibility: FlavorFungibility
    fair_sharing_weight: float = strawberry.field(description=FAIR_SHARING_WEIGHT)
    created_at: datetime
    updated_at: datetime

    @strawberry.field(description="A row per flavor and resource of its quota.")  # type: ignore[untyped-decorator]
    async def usage(self, info: Info) -> list[FlavorUsage]:
        rows = (await quotas_of(info, self.cluster_id)).usage.get(self.name, ())
        return [FlavorUsage.from_domain(row) for row in rows]

    @classmethod
    def from_domain(cls, queue: model.ClusterQueue) -> ClusterQueue:
        return derive(cls, queue)


@strawberry.type(description="A tenant's queue (in its namespace) pointing at a ClusterQueue.")
class LocalQueue:
    cluster_id: strawberry.ID
    name: str
    namespace: str
    tenant_id: strawberry.ID
    cluster_queue: str
    created_at: datetime

    @classmethod
    def from_domain(cls, queue: model.LocalQueue) -> LocalQueue:
        return cls(
            cluster_id=strawberry.ID(str(queue.cluster_id)),
            name=queue.name,
            namespace=queue.namespace,
            tenant_id=strawberry.ID(str(queue.tenant_id)),
            cluster_queue=queue.cluster_queue,
            created_at=queue.created_at,
        )


@strawberry.type(
    description="ClusterQueues that lend each other their unused quota; cohorts form a tree "
    "(Kueue's hierarchical cohorts), each sharing its own quotas with everything below it."
)
class Cohort:
    cluster_id: strawberry.ID
    name: str
    description: str | None
    parent: str | None = strawberry.field(
        description="Kueue's parentName: the cohort this one borrows from and lends to. It may "
        "name a cohort with no Cohort object: Kueue takes that as an implicit cohort (no "
        "quotas, no parent)."
    )
    resource_groups: list[ResourceGroup] = strawberry.field(
        description="The cohort's own quotas, on top of its members': a pool shared by its "
        "subtree. borrowingLimit (what the subtree may borrow from the parent) and lendingLimit "
        "(what it may lend to it) only with a parent."
    )
    fair_sharing_weight: float = strawberry.field(description=FAIR_SHARING_WEIGHT)
    created_at: datetime

    @classmethod
    def from_domain(cls, cohort: model.Cohort) -> Cohort:
        return derive(cls, cohort)


@strawberry.type(description="How a cluster's Kueue is configured, as far as its quotas go.")
class QuotaSettings:
    cluster_id: strawberry.ID
    fair_sharing: bool = strawberry.field(
        description="Kueue's fairSharing.enable: queues and cohorts share unused quota by their "
        "fairSharingWeight, and preempt to even out shares. On a real cluster this is Kueue's "
        "controller configuration (its ConfigMap), which budcluster does not manage: this field "
        "records it, and the operator sets both alike."
    )

    @classmethod
    def from_domain(cls, settings: model.QuotaSettings) -> QuotaSettings:
        return derive(cls, settings)


@strawberry.type(description="The value a priority has for admission and preemption.")
class WorkloadPriorityClass:
    name: str
    priority: JobPriority
    value: int
    description: str
    updated_at: datetime

    @classmethod
    def from_domain(cls, pc: model.WorkloadPriorityClass) -> WorkloadPriorityClass:
        return cls(
            name=pc.name,
            priority=pc.priority,
            value=pc.value,
            description=pc.description,
            updated_at=pc.updated_at,
        )


@strawberry.type(description="GPUs of a flavor booked for a tenant from start to end.")
class CapacityReservation:
    id: strawberry.ID
    cluster_id: strawberry.ID
    tenant_id: strawberry.ID
    name: str
    cluster_queue: str
    flavor: str
    gpu_count: int
    start: datetime
    end: datetime
    created_at: datetime
    cancelled_at: datetime | None

    @classmethod
    def from_domain(cls, r: DomainReservation) -> CapacityReservation:
        return cls(
            id=strawberry.ID(str(r.id)),
            cluster_id=strawberry.ID(str(r.cluster_id)),
            tenant_id=strawberry.ID(str(r.tenant_id)),
            name=r.name,
            cluster_queue=r.cluster_queue,
            flavor=r.flavor,
            gpu_count=r.gpu_count,
            start=r.start,
            end=r.end,
            created_at=r.created_at,
            cancelled_at=r.cancelled_at,
        )
