"""Kueue's objects, the priority classes and capacity reservations, as the API shows them.

Names follow Kueue's (and the domain's): ResourceFlavor, ClusterQueue with resourceGroups and
preemption, LocalQueue, Cohort, WorkloadPriorityClass. A ClusterQueue's `usage` and a cluster's
quota fields come from one per-request DataLoader (`loaders.quotas`), which reads every cluster
asked for at once, with the caller's visibility applied by the domain: any number of clusters and
queues is a constant number of statements.
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
from schema.types.enums import (
    JobPriority,
    QueueingStrategy,
    ReclaimWithinCohort,
    WithinClusterQueue,
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


@strawberry.type
class PreemptionPolicy:
    within_cluster_queue: WithinClusterQueue
    reclaim_within_cohort: ReclaimWithinCohort


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
    created_at: datetime
    updated_at: datetime

    @strawberry.field(description="A row per flavor and resource of its quota.")  # type: ignore[untyped-decorator]
    async def usage(self, info: Info) -> list[FlavorUsage]:
        rows = (await quotas_of(info, self.cluster_id)).usage.get(self.name, ())
        return [FlavorUsage.from_domain(row) for row in rows]

    @classmethod
    def from_domain(cls, queue: model.ClusterQueue) -> ClusterQueue:
        return cls(
            cluster_id=strawberry.ID(str(queue.cluster_id)),
            name=queue.name,
            cohort=queue.cohort,
            queueing_strategy=queue.queueing_strategy,
            resource_groups=[
                ResourceGroup(
                    covered_resources=list(group.covered_resources),
                    flavors=[
                        FlavorQuotas(
                            flavor=fq.flavor,
                            resources=[
                                ResourceQuota(
                                    name=q.name,
                                    nominal_quota=q.nominal_quota,
                                    borrowing_limit=q.borrowing_limit,
                                    lending_limit=q.lending_limit,
                                )
                                for q in fq.resources
                            ],
                        )
                        for fq in group.flavors
                    ],
                )
                for group in queue.resource_groups
            ],
            preemption=PreemptionPolicy(
                within_cluster_queue=queue.preemption.within_cluster_queue,
                reclaim_within_cohort=queue.preemption.reclaim_within_cohort,
            ),
            created_at=queue.created_at,
            updated_at=queue.updated_at,
        )


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


@strawberry.type(description="ClusterQueues that lend each other their unused quota.")
class Cohort:
    cluster_id: strawberry.ID
    name: str
    description: str | None
    created_at: datetime

    @classmethod
    def from_domain(cls, cohort: model.Cohort) -> Cohort:
        return cls(
            cluster_id=strawberry.ID(str(cohort.cluster_id)),
            name=cohort.name,
            description=cohort.description,
            created_at=cohort.created_at,
        )


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
