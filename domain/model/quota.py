"""Kueue's quota model, with Kueue's own names: what each queue may use of each GPU flavor.

A ResourceFlavor names a kind of node (by node labels, e.g. the GPU product). A ClusterQueue holds
quotas: for each flavor of its resource groups, a nominal quota per resource, optionally a
borrowing limit (how much more it may take from its cohort) and a lending limit (how much of its
unused quota the cohort may take). ClusterQueues in the same cohort share unused quota. A tenant
submits to a LocalQueue in its namespace, which points at a ClusterQueue. WorkloadPriorityClasses
give each priority its value. All of these belong to one cluster, as Kueue's objects do.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from domain.model.cluster import Node
from domain.model.ids import ClusterId, TenantId
from domain.model.job import JobPriority

GPU_LABEL = "nvidia.com/gpu.product"
"""The node label GPU Feature Discovery sets to the GPU product; simulated nodes carry it too."""

NVIDIA_GPU = "nvidia.com/gpu"
AMD_GPU = "amd.com/gpu"
GAUDI = "habana.ai/gaudi"
CPU = "cpu"
MEMORY = "memory"
"""Memory quotas are in GB, as job requests are."""

DEFAULT_QUEUE = "default"
DEFAULT_PRIORITY_VALUES: Mapping[JobPriority, int] = {
    JobPriority.CRITICAL: 1000,
    JobPriority.HIGH: 100,
    JobPriority.NORMAL: 10,
    JobPriority.LOW: 1,
    JobPriority.SPOT: 0,
}


def gpu_resource(gpu_type: str | None) -> str:
    """The extended resource a GPU type is requested as."""
    name = (gpu_type or "").lower()
    if name.startswith("amd"):
        return AMD_GPU
    if "gaudi" in name or name.startswith("habana"):
        return GAUDI
    return NVIDIA_GPU


def tenant_namespace(tenant_id: TenantId) -> str:
    """The Kubernetes namespace of a tenant's LocalQueues and workloads."""
    return f"tenant-{tenant_id.hex[:12]}"


class QueueingStrategy(enum.StrEnum):
    STRICT_FIFO = "StrictFIFO"
    """Only the head of the queue may be admitted; a head that does not fit blocks the rest."""
    BEST_EFFORT_FIFO = "BestEffortFIFO"
    """A head that does not fit lets later workloads that do fit go first."""


class WithinClusterQueue(enum.StrEnum):
    NEVER = "Never"
    LOWER_PRIORITY = "LowerPriority"
    LOWER_OR_NEWER_EQUAL_PRIORITY = "LowerOrNewerEqualPriority"


class ReclaimWithinCohort(enum.StrEnum):
    NEVER = "Never"
    LOWER_PRIORITY = "LowerPriority"
    ANY = "Any"


@dataclass(frozen=True)
class ResourceQuota:
    name: str
    nominal_quota: float
    borrowing_limit: float | None = None
    """None: may borrow whatever the cohort has unused."""
    lending_limit: float | None = None
    """None: lends all of its unused nominal quota."""

    @property
    def lendable(self) -> float:
        return self.nominal_quota if self.lending_limit is None else self.lending_limit

    @property
    def guaranteed(self) -> float:
        """The part of the nominal quota the cohort can never take."""
        return self.nominal_quota - self.lendable


@dataclass(frozen=True)
class FlavorQuotas:
    flavor: str
    resources: tuple[ResourceQuota, ...]

    def quota(self, resource: str) -> ResourceQuota | None:
        return next((r for r in self.resources if r.name == resource), None)


@dataclass(frozen=True)
class ResourceGroup:
    covered_resources: tuple[str, ...]
    flavors: tuple[FlavorQuotas, ...]


@dataclass(frozen=True)
class PreemptionPolicy:
    within_cluster_queue: WithinClusterQueue = WithinClusterQueue.LOWER_PRIORITY
    reclaim_within_cohort: ReclaimWithinCohort = ReclaimWithinCohort.NEVER


@dataclass
class ResourceFlavor:
    cluster_id: ClusterId
    name: str
    node_labels: dict[str, str]
    created_at: datetime
    updated_at: datetime

    def matches(self, node: Node) -> bool:
        return all(node.labels.get(key) == value for key, value in self.node_labels.items())


@dataclass
class ClusterQueue:
    cluster_id: ClusterId
    name: str
    created_at: datetime
    updated_at: datetime
    cohort: str | None = None
    queueing_strategy: QueueingStrategy = QueueingStrategy.BEST_EFFORT_FIFO
    resource_groups: tuple[ResourceGroup, ...] = ()
    preemption: PreemptionPolicy = field(default_factory=PreemptionPolicy)

    def flavors_for(self, resource: str) -> tuple[FlavorQuotas, ...]:
        """The flavors, in order of preference, that hold quota for `resource`."""
        for group in self.resource_groups:
            if resource in group.covered_resources:
                return group.flavors
        return ()

    def quota(self, flavor: str, resource: str) -> ResourceQuota | None:
        for group in self.resource_groups:
            if resource in group.covered_resources:
                for fq in group.flavors:
                    if fq.flavor == flavor:
                        return fq.quota(resource)
        return None

    @property
    def flavor_names(self) -> frozenset[str]:
        return frozenset(f.flavor for g in self.resource_groups for f in g.flavors)


@dataclass
class LocalQueue:
    cluster_id: ClusterId
    name: str
    namespace: str
    tenant_id: TenantId
    cluster_queue: str
    created_at: datetime


@dataclass
class Cohort:
    cluster_id: ClusterId
    name: str
    created_at: datetime
    description: str | None = None


@dataclass
class WorkloadPriorityClass:
    priority: JobPriority
    value: int
    description: str
    updated_at: datetime

    @property
    def name(self) -> str:
        return self.priority.value.lower()


@dataclass(frozen=True)
class QuotaSet:
    """Everything the admission rules need to know about one cluster's quotas."""

    flavors: tuple[ResourceFlavor, ...] = ()
    cluster_queues: tuple[ClusterQueue, ...] = ()
    local_queues: tuple[LocalQueue, ...] = ()
    cohorts: tuple[Cohort, ...] = ()
    priority_values: Mapping[JobPriority, int] = field(
        default_factory=lambda: dict(DEFAULT_PRIORITY_VALUES)
    )

    def cluster_queue(self, name: str) -> ClusterQueue | None:
        return next((q for q in self.cluster_queues if q.name == name), None)

    def local_queue(self, namespace: str, name: str) -> LocalQueue | None:
        return next(
            (q for q in self.local_queues if q.namespace == namespace and q.name == name), None
        )

    def priority_value(self, priority: JobPriority) -> int:
        return self.priority_values.get(priority, DEFAULT_PRIORITY_VALUES[priority])

    def members(self, cohort: str) -> tuple[ClusterQueue, ...]:
        return tuple(q for q in self.cluster_queues if q.cohort == cohort)
