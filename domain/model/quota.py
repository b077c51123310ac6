"""Kueue's quota model, with Kueue's own names: what each queue may use of each GPU flavor.

A ResourceFlavor names a kind of node (by node labels, e.g. the GPU product). A ClusterQueue holds
quotas: for each flavor of its resource groups, a nominal quota per resource, optionally a
borrowing limit (how much more it may take from its cohort) and a lending limit (how much of its
unused quota the cohort may take). ClusterQueues in the same cohort share unused quota. A tenant
submits to a LocalQueue in its namespace, which points at a ClusterQueue. WorkloadPriorityClasses
give each priority its value. All of these belong to one cluster, as Kueue's objects do.

Cohorts form trees (Kueue's hierarchical cohorts): a cohort may name a parent and hold quotas of
its own, shared by everything below it. A name that no Cohort object holds is an implicit cohort,
as in Kueue: no quotas, no parent, weight 1. Fair sharing (the weights) applies only where Kueue's
configuration enables it, which `QuotaSet.fair_sharing` records per cluster. The defaults of every
field are Kueue's (apis/kueue/v1beta2: clusterqueue_types.go, cohort_types.go,
fairsharing_types.go).
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


def priority_value(values: Mapping[JobPriority, int], priority: JobPriority) -> int:
    """A priority's value: its WorkloadPriorityClass's (`values`), else the default."""
    return values.get(priority, DEFAULT_PRIORITY_VALUES[priority])


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


class BorrowWithinCohortPolicy(enum.StrEnum):
    NEVER = "Never"
    LOWER_PRIORITY = "LowerPriority"


@dataclass(frozen=True)
class BorrowWithinCohort:
    """Whether a workload that must borrow may preempt workloads of other queues in the cohort
    (Kueue: classical preemption only, not with fair sharing)."""

    policy: BorrowWithinCohortPolicy = BorrowWithinCohortPolicy.NEVER
    max_priority_threshold: int | None = None
    """Only workloads of priority <= this may be preempted by a borrowing workload (None: any the
    policy allows)."""


@dataclass(frozen=True)
class PreemptionPolicy:
    within_cluster_queue: WithinClusterQueue = WithinClusterQueue.LOWER_PRIORITY
    reclaim_within_cohort: ReclaimWithinCohort = ReclaimWithinCohort.NEVER
    borrow_within_cohort: BorrowWithinCohort = BorrowWithinCohort()


class FungibilityPolicy(enum.StrEnum):
    """Kueue v1beta2's names; v1beta1 spells MAY_STOP_SEARCH Borrow (whenCanBorrow) or Preempt
    (whenCanPreempt)."""

    MAY_STOP_SEARCH = "MayStopSearch"
    TRY_NEXT_FLAVOR = "TryNextFlavor"


class FungibilityPreference(enum.StrEnum):
    """Which a workload would rather do when every flavor it may take needs borrowing or
    preemption (Kueue's FlavorFungibility.preference, in v1beta1 and v1beta2 alike)."""

    BORROWING_OVER_PREEMPTION = "BorrowingOverPreemption"
    """Kueue's default: borrow where it fits rather than preempt."""
    PREEMPTION_OVER_BORROWING = "PreemptionOverBorrowing"
    """Preempt within its nominal quota rather than borrow from the cohort."""


@dataclass(frozen=True)
class FlavorFungibility:
    """Whether a workload tries the queue's next flavor before borrowing, or before preempting,
    in the flavor it is looking at; and, when it tries them all, which it prefers."""

    when_can_borrow: FungibilityPolicy = FungibilityPolicy.MAY_STOP_SEARCH
    when_can_preempt: FungibilityPolicy = FungibilityPolicy.TRY_NEXT_FLAVOR
    preference: FungibilityPreference | None = None
    """Only with both policies TryNextFlavor (Kueue refuses it otherwise); None: Kueue's
    default, BorrowingOverPreemption."""

    @property
    def problem(self) -> str | None:
        """Why Kueue would refuse these settings (None: it would not)."""
        if self.preference is not None and (
            self.when_can_borrow is not FungibilityPolicy.TRY_NEXT_FLAVOR
            or self.when_can_preempt is not FungibilityPolicy.TRY_NEXT_FLAVOR
        ):
            return (
                "preference can only be set when both whenCanBorrow and whenCanPreempt are "
                "TryNextFlavor"
            )
        return None

    @property
    def preemption_over_borrowing(self) -> bool:
        return self.preference is FungibilityPreference.PREEMPTION_OVER_BORROWING


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
    flavor_fungibility: FlavorFungibility = field(default_factory=FlavorFungibility)
    fair_sharing_weight: float = 1.0
    """Its advantage in fair sharing: its share is its usage above nominal quota divided by
    this; 0 makes it always last."""

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
    parent: str | None = None
    """Kueue's spec.parentName: the cohort this one borrows from and lends to. It may be
    implicit (no Cohort of that name)."""
    resource_groups: tuple[ResourceGroup, ...] = ()
    """The cohort's own quotas, shared by its subtree; borrowing and lending limits (with its
    parent) only when it has a parent."""
    fair_sharing_weight: float = 1.0


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
class QuotaSettings:
    """What one cluster's Kueue is configured with, as far as its quotas go. On a real cluster
    this is Kueue's controller configuration (a ConfigMap), which budcluster records but does not
    manage: the operator keeps the two the same."""

    cluster_id: ClusterId
    fair_sharing: bool = False
    """Kueue's fairSharing.enable: unused quota shared by weight, and preemption to even shares."""


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
    fair_sharing: bool = False
    """Kueue's configuration fairSharing.enable on this cluster (`QuotaSettings`)."""

    def cluster_queue(self, name: str) -> ClusterQueue | None:
        return next((q for q in self.cluster_queues if q.name == name), None)

    def local_queue(self, namespace: str, name: str) -> LocalQueue | None:
        return next(
            (q for q in self.local_queues if q.namespace == namespace and q.name == name), None
        )

    def priority_value(self, priority: JobPriority) -> int:
        return priority_value(self.priority_values, priority)

    def members(self, cohort: str) -> tuple[ClusterQueue, ...]:
        return tuple(q for q in self.cluster_queues if q.cohort == cohort)

    def cohort(self, name: str) -> Cohort | None:
        """The Cohort object of that name; None for an implicit cohort (a name only)."""
        return next((c for c in self.cohorts if c.name == name), None)
