"""Kueue's objects and the priority classes: the query and the mutations.

Each mutation states who may call it, converts its input and calls the quota service, which
checks the scope and everything else; what the caller can act on comes back as a typed error in
the result union. Reading a cluster's quota objects goes through the Cluster type's fields.
"""

from __future__ import annotations

from typing import Annotated

import strawberry

from domain.errors import ValidationFailed
from domain.model.ids import ClusterId, TenantId
from domain.model.principal import Scope
from domain.model.quota import (
    BorrowWithinCohort,
    FlavorFungibility,
    FlavorQuotas,
    PreemptionPolicy,
    ResourceGroup,
)
from domain.model.quota import (
    QuotaSettings as DomainQuotaSettings,
)
from domain.model.quota import (
    ResourceQuota as DomainResourceQuota,
)
from domain.services.quota_rules import ClusterQueueSpec, CohortSpec
from resolvers.common import parse_uuid
from schema.access import requires
from schema.context import Info
from schema.refusals import typed_errors
from schema.types import errors
from schema.types.enums import JobPriority
from schema.types.quota import (
    ClusterQueue,
    Cohort,
    LocalQueue,
    QuotaSettings,
    ResourceFlavor,
    WorkloadPriorityClass,
)
from schema.types.quota_inputs import (
    ClusterQueueInput,
    CohortInput,
    LocalQueueInput,
    NodeLabelInput,
    QuotaSettingsInput,
    ResourceFlavorInput,
    ResourceGroupInput,
)

Errors = (
    errors.ValidationError | errors.NotFoundError | errors.ConflictError | errors.ForbiddenError
)
ResourceFlavorResult = Annotated[ResourceFlavor | Errors, strawberry.union("ResourceFlavorResult")]
ClusterQueueResult = Annotated[ClusterQueue | Errors, strawberry.union("ClusterQueueResult")]
LocalQueueResult = Annotated[LocalQueue | Errors, strawberry.union("LocalQueueResult")]
CohortResult = Annotated[Cohort | Errors, strawberry.union("CohortResult")]
QuotaSettingsResult = Annotated[QuotaSettings | Errors, strawberry.union("QuotaSettingsResult")]
WorkloadPriorityClassResult = Annotated[
    WorkloadPriorityClass | Errors, strawberry.union("WorkloadPriorityClassResult")
]


def to_cluster_id(value: strawberry.ID) -> ClusterId:
    return ClusterId(parse_uuid(value, "cluster_id"))


def to_tenant_id(value: strawberry.ID | None) -> TenantId | None:
    """Another tenant's id, for an admin; None: the caller's own tenant."""
    return TenantId(parse_uuid(value, "tenant_id")) if value else None


def labels(given: list[NodeLabelInput]) -> dict[str, str]:
    found: dict[str, str] = {}
    for label in given:
        if label.key in found:
            raise ValidationFailed.single("node_labels", f"label {label.key!r} is given twice")
        found[label.key] = label.value
    return found


def groups(given: list[ResourceGroupInput]) -> tuple[ResourceGroup, ...]:
    return tuple(
        ResourceGroup(
            covered_resources=tuple(group.covered_resources),
            flavors=tuple(
                FlavorQuotas(
                    flavor=fq.flavor,
                    resources=tuple(
                        DomainResourceQuota(
                            q.name, q.nominal_quota, q.borrowing_limit, q.lending_limit
                        )
                        for q in fq.resources
                    ),
                )
                for fq in group.flavors
            ),
        )
        for group in given
    )


def queue_spec(data: ClusterQueueInput) -> ClusterQueueSpec:
    preemption, borrow = data.preemption, data.preemption.borrow_within_cohort
    return ClusterQueueSpec(
        cluster_id=to_cluster_id(data.cluster_id),
        name=data.name,
        cohort=data.cohort,
        queueing_strategy=data.queueing_strategy,
        resource_groups=groups(data.resource_groups),
        preemption=PreemptionPolicy(
            preemption.within_cluster_queue,
            preemption.reclaim_within_cohort,
            BorrowWithinCohort(borrow.policy, borrow.max_priority_threshold),
        ),
        flavor_fungibility=FlavorFungibility(
            data.flavor_fungibility.when_can_borrow,
            data.flavor_fungibility.when_can_preempt,
            data.flavor_fungibility.preference,
        ),
        fair_sharing_weight=data.fair_sharing_weight,
    )


def cohort_spec(data: CohortInput) -> CohortSpec:
    return CohortSpec(
        cluster_id=to_cluster_id(data.cluster_id),
        name=data.name,
        description=data.description,
        parent=data.parent,
        resource_groups=groups(data.resource_groups),
        fair_sharing_weight=data.fair_sharing_weight,
    )


# --- query ------------------------------------------------------------------------------------


@requires(Scope.CLUSTERS_READ)
async def workload_priority_classes(info: Info) -> list[WorkloadPriorityClass]:
    found = await info.context.services.quotas.priority_classes(info.context.authenticated())
    return [WorkloadPriorityClass.from_domain(pc) for pc in found]


# --- resource flavors (clusters:write) --------------------------------------------------------


@requires(Scope.CLUSTERS_WRITE)
@typed_errors
async def create_resource_flavor(info: Info, input: ResourceFlavorInput) -> ResourceFlavorResult:
    made = await info.context.services.quotas.create_flavor(
        info.context.authenticated(),
        cluster_id=to_cluster_id(input.cluster_id),
        name=input.name,
        node_labels=labels(input.node_labels),
    )
    return ResourceFlavor.from_domain(made)


@requires(Scope.CLUSTERS_WRITE)
@typed_errors
async def update_resource_flavor(info: Info, input: ResourceFlavorInput) -> ResourceFlavorResult:
    changed = await info.context.services.quotas.update_flavor(
        info.context.authenticated(),
        cluster_id=to_cluster_id(input.cluster_id),
        name=input.name,
        node_labels=labels(input.node_labels),
    )
    return ResourceFlavor.from_domain(changed)


@requires(Scope.CLUSTERS_WRITE)
@typed_errors
async def delete_resource_flavor(
    info: Info, cluster_id: strawberry.ID, name: str
) -> ResourceFlavorResult:
    deleted = await info.context.services.quotas.delete_flavor(
        info.context.authenticated(), cluster_id=to_cluster_id(cluster_id), name=name
    )
    return ResourceFlavor.from_domain(deleted)


# --- cluster queues (clusters:write) ----------------------------------------------------------


@requires(Scope.CLUSTERS_WRITE)
@typed_errors
async def create_cluster_queue(info: Info, input: ClusterQueueInput) -> ClusterQueueResult:
    made = await info.context.services.quotas.create_cluster_queue(
        info.context.authenticated(), queue_spec(input)
    )
    return ClusterQueue.from_domain(made)


@requires(Scope.CLUSTERS_WRITE)
@typed_errors
async def update_cluster_queue(info: Info, input: ClusterQueueInput) -> ClusterQueueResult:
    changed = await info.context.services.quotas.update_cluster_queue(
        info.context.authenticated(), queue_spec(input)
    )
    return ClusterQueue.from_domain(changed)


@requires(Scope.CLUSTERS_WRITE)
@typed_errors
async def delete_cluster_queue(
    info: Info, cluster_id: strawberry.ID, name: str
) -> ClusterQueueResult:
    deleted = await info.context.services.quotas.delete_cluster_queue(
        info.context.authenticated(), cluster_id=to_cluster_id(cluster_id), name=name
    )
    return ClusterQueue.from_domain(deleted)


# --- local queues (queues:write; another tenant's: admin) -------------------------------------


@requires(Scope.QUEUES_WRITE)
@typed_errors
async def create_local_queue(info: Info, input: LocalQueueInput) -> LocalQueueResult:
    made = await info.context.services.quotas.create_local_queue(
        info.context.authenticated(),
        cluster_id=to_cluster_id(input.cluster_id),
        name=input.name,
        cluster_queue=input.cluster_queue,
        tenant_id=to_tenant_id(input.tenant_id),
    )
    return LocalQueue.from_domain(made)


@requires(Scope.QUEUES_WRITE)
@typed_errors
async def delete_local_queue(
    info: Info, cluster_id: strawberry.ID, name: str, tenant_id: strawberry.ID | None = None
) -> LocalQueueResult:
    deleted = await info.context.services.quotas.delete_local_queue(
        info.context.authenticated(),
        cluster_id=to_cluster_id(cluster_id),
        name=name,
        tenant_id=to_tenant_id(tenant_id),
    )
    return LocalQueue.from_domain(deleted)


# --- cohorts (clusters:write) -----------------------------------------------------------------


@requires(Scope.CLUSTERS_WRITE)
@typed_errors
async def create_cohort(info: Info, input: CohortInput) -> CohortResult:
    made = await info.context.services.quotas.create_cohort(
        info.context.authenticated(), cohort_spec(input)
    )
    return Cohort.from_domain(made)


@requires(Scope.CLUSTERS_WRITE)
@typed_errors
async def update_cohort(info: Info, input: CohortInput) -> CohortResult:
    changed = await info.context.services.quotas.update_cohort(
        info.context.authenticated(), cohort_spec(input)
    )
    return Cohort.from_domain(changed)


@requires(Scope.CLUSTERS_WRITE)
@typed_errors
async def delete_cohort(info: Info, cluster_id: strawberry.ID, name: str) -> CohortResult:
    deleted = await info.context.services.quotas.delete_cohort(
        info.context.authenticated(), cluster_id=to_cluster_id(cluster_id), name=name
    )
    return Cohort.from_domain(deleted)


# --- a cluster's quota settings (clusters:write) ----------------------------------------------


@requires(Scope.CLUSTERS_WRITE)
@typed_errors
async def update_quota_settings(info: Info, input: QuotaSettingsInput) -> QuotaSettingsResult:
    settings = DomainQuotaSettings(to_cluster_id(input.cluster_id), input.fair_sharing)
    saved = await info.context.services.quotas.update_quota_settings(
        info.context.authenticated(), settings
    )
    return QuotaSettings.from_domain(saved)


# --- priority classes (clusters:write) --------------------------------------------------------


@requires(Scope.CLUSTERS_WRITE)
@typed_errors
async def update_workload_priority_class(
    info: Info, priority: JobPriority, value: int | None = None, description: str | None = None
) -> WorkloadPriorityClassResult:
    changed = await info.context.services.quotas.update_priority_class(
        info.context.authenticated(), priority, value=value, description=description
    )
    return WorkloadPriorityClass.from_domain(changed)
