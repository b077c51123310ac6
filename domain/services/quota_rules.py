"""What makes Kueue's objects acceptable, and who may change them.

Pure functions over the model, and the permission rules the quota and reservation services
share (see `QuotaService` for who may do what). Each check returns every problem at once as
`FieldIssue`s whose paths follow the input in snake_case
(`resource_groups.0.flavors.1.resources.0.lending_limit`); the GraphQL layer renders them
camelCased. Whether a referenced object exists is passed in by the caller, which read it in the
same unit of work that then writes. The quotas a new cluster starts with are `quota_defaults`,
what makes a reservation acceptable `reservation_rules`.

The rules follow Kueue's own (apis/kueue/v1beta2 CEL rules, pkg/webhooks), so that nothing
budcluster accepts is refused by a cluster: borrowing and lending limits only in a cohort (for a
cohort: only under a parent), a queue's lending limit within its nominal quota (a cohort's may
exceed it), a borrowWithinCohort policy other than Never only with a reclaimWithinCohort other
than Never, a flavorFungibility preference only with whenCanBorrow and whenCanPreempt both
TryNextFlavor, fair-sharing weights of 0 or above 1e-9. A cohort's parent may be implicit (a name no
Cohort holds), as in Kueue; a parent that would make a cohort its own ancestor is refused (Kueue
would accept it and stop admitting into the whole tree).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from domain.errors import Conflict, FieldIssue, Forbidden
from domain.model.ids import ClusterId, TenantId
from domain.model.job import JobPriority
from domain.model.principal import Principal, Scope
from domain.model.quota import (
    DEFAULT_PRIORITY_VALUES,
    BorrowWithinCohortPolicy,
    ClusterQueue,
    Cohort,
    FlavorFungibility,
    FlavorQuotas,
    PreemptionPolicy,
    QueueingStrategy,
    ReclaimWithinCohort,
    ResourceGroup,
    WorkloadPriorityClass,
)
from domain.names import MAX_OBJECT_NAME, label_problem, name_problem, text_problem

MIN_PRIORITY_VALUE = -1_000_000_000
MAX_PRIORITY_VALUE = 1_000_000_000
MAX_DESCRIPTION = 500
MAX_RESOURCE_NAME = 253
MAX_NODE_LABELS = 32
INT32 = (-(2**31), 2**31 - 1)
"""Kueue's maxPriorityThreshold is an int32, as priorities are."""
MIN_POSITIVE_WEIGHT = 1e-9
"""Kueue (validateFairSharing): a weight is 0 or more than 1n; a smaller one collapses to 0."""
MAX_WEIGHT = 1e9
"""A weight is rendered in Kueue's nano precision; Kubernetes keeps such a quantity exactly as an
int64 of nano-units up to about 9.2e9."""


@dataclass(frozen=True)
class ClusterQueueSpec:
    """A ClusterQueue as a caller writes it (create, or the whole new state on update)."""

    cluster_id: ClusterId
    name: str
    cohort: str | None = None
    queueing_strategy: QueueingStrategy = QueueingStrategy.BEST_EFFORT_FIFO
    resource_groups: tuple[ResourceGroup, ...] = ()
    preemption: PreemptionPolicy = field(default_factory=PreemptionPolicy)
    flavor_fungibility: FlavorFungibility = field(default_factory=FlavorFungibility)
    fair_sharing_weight: float = 1.0

    def build(self, *, created_at: datetime, updated_at: datetime) -> ClusterQueue:
        return ClusterQueue(
            cluster_id=self.cluster_id,
            name=self.name,
            created_at=created_at,
            updated_at=updated_at,
            cohort=self.cohort,
            queueing_strategy=self.queueing_strategy,
            resource_groups=self.resource_groups,
            preemption=self.preemption,
            flavor_fungibility=self.flavor_fungibility,
            fair_sharing_weight=self.fair_sharing_weight,
        )


@dataclass(frozen=True)
class CohortSpec:
    """A Cohort as a caller writes it (create, or the whole new state on update)."""

    cluster_id: ClusterId
    name: str
    description: str | None = None
    parent: str | None = None
    resource_groups: tuple[ResourceGroup, ...] = ()
    fair_sharing_weight: float = 1.0

    def build(self, *, created_at: datetime) -> Cohort:
        return Cohort(
            cluster_id=self.cluster_id,
            name=self.name,
            created_at=created_at,
            description=self.description,
            parent=self.parent,
            resource_groups=self.resource_groups,
            fair_sharing_weight=self.fair_sharing_weight,
        )


@dataclass(frozen=True)
class _Limits:
    """Where borrowing and lending limits may be set (Kueue's validationConfig)."""

    allowed: bool
    """A queue in a cohort; a cohort with a parent."""
    needs: str
    code: str
    within_nominal: bool
    """A queue lends at most its nominal quota; a cohort may lend more (its subtree's too)."""


def _queue_limits(cohort: str | None) -> _Limits:
    return _Limits(cohort is not None, "applies only to a queue in a cohort", "NEEDS_COHORT", True)


def _cohort_limits(parent: str | None) -> _Limits:
    return _Limits(
        parent is not None, "applies only to a cohort with a parent", "NEEDS_PARENT", False
    )


def name_issues(name: str, path: str = "name") -> list[FieldIssue]:
    problem = text_problem(name) or name_problem(name, max_length=MAX_OBJECT_NAME)
    return [FieldIssue(path, problem, "INVALID_NAME")] if problem else []


def node_label_issues(labels: Mapping[str, str]) -> list[FieldIssue]:
    if len(labels) > MAX_NODE_LABELS:
        return [FieldIssue("node_labels", f"must hold at most {MAX_NODE_LABELS} labels")]
    return [
        FieldIssue("node_labels", problem)
        for key, value in labels.items()
        if (problem := label_problem(key, value))
    ]


def description_issues(description: str | None) -> list[FieldIssue]:
    if description is not None and (
        len(description) > MAX_DESCRIPTION or text_problem(description)
    ):
        return [FieldIssue("description", f"must be at most {MAX_DESCRIPTION} characters of text")]
    return []


def _quantity_problem(value: float) -> str | None:
    if not math.isfinite(value) or value < 0:
        return "must be a finite number of 0 or more"
    return None


def cluster_queue_issues(
    spec: ClusterQueueSpec, *, flavors: Collection[str], cohort_exists: bool
) -> list[FieldIssue]:
    """`flavors`: the names of the cluster's ResourceFlavors."""
    issues = name_issues(spec.name)
    if spec.cohort is not None:
        issues += name_issues(spec.cohort, "cohort")
        if not issues and not cohort_exists:
            issues.append(
                FieldIssue("cohort", f"no cohort {spec.cohort} on this cluster", "NOT_FOUND")
            )
    issues += resource_group_issues(
        spec.resource_groups, flavors=flavors, limits=_queue_limits(spec.cohort)
    )
    issues += preemption_issues(spec.preemption)
    issues += fungibility_issues(spec.flavor_fungibility)
    issues += weight_issues(spec.fair_sharing_weight)
    return issues


def cohort_issues(
    spec: CohortSpec, *, flavors: Collection[str], parents: Mapping[str, str | None]
) -> list[FieldIssue]:
    """`flavors`: the names of the cluster's ResourceFlavors; `parents`: each Cohort of the
    cluster with its parent."""
    issues = name_issues(spec.name) + description_issues(spec.description)
    if spec.parent is not None:
        if problems := name_issues(spec.parent, "parent"):
            issues += problems
        elif cycle := _cycle(spec.name, spec.parent, parents):
            issues.append(
                FieldIssue(
                    "parent",
                    f"would make cohort {spec.name} its own ancestor: {' -> '.join(cycle)}",
                    "CYCLE",
                )
            )
    issues += resource_group_issues(
        spec.resource_groups, flavors=flavors, limits=_cohort_limits(spec.parent)
    )
    issues += weight_issues(spec.fair_sharing_weight)
    return issues


def _cycle(name: str, parent: str, parents: Mapping[str, str | None]) -> list[str] | None:
    """The path from `name` back to itself when `parent` becomes its parent, else None."""
    path = [name]
    at: str | None = parent
    while at is not None and at not in path:
        path.append(at)
        at = parents.get(at)
    return [*path, name] if at == name else None


def preemption_issues(preemption: PreemptionPolicy) -> list[FieldIssue]:
    """Kueue's CEL rule on ClusterQueuePreemption (v1beta1 and v1beta2):
    `!(self.reclaimWithinCohort == 'Never' && has(self.borrowWithinCohort) &&
    self.borrowWithinCohort.policy != 'Never')`; maxPriorityThreshold is an int32."""
    issues: list[FieldIssue] = []
    borrow = preemption.borrow_within_cohort
    at = "preemption.borrow_within_cohort"
    if (
        preemption.reclaim_within_cohort is ReclaimWithinCohort.NEVER
        and borrow.policy is not BorrowWithinCohortPolicy.NEVER
    ):
        issues.append(
            FieldIssue(
                f"{at}.policy",
                "must be NEVER while `preemption.reclaim_within_cohort` is NEVER "
                "(Kueue: reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never)",
                "NEEDS_RECLAIM",
            )
        )
    threshold = borrow.max_priority_threshold
    if threshold is not None and not INT32[0] <= threshold <= INT32[1]:
        issues.append(
            FieldIssue(
                f"{at}.max_priority_threshold",
                f"must be between {INT32[0]} and {INT32[1]} (an int32)",
            )
        )
    return issues


def fungibility_issues(fungibility: FlavorFungibility) -> list[FieldIssue]:
    """Kueue's CEL rule on FlavorFungibility (v1beta1 and v1beta2): a preference only with
    whenCanBorrow and whenCanPreempt both TryNextFlavor (`FlavorFungibility.problem`)."""
    problem = fungibility.problem
    if problem is None:
        return []
    return [
        FieldIssue(
            "flavor_fungibility.preference",
            "must be unset unless `flavor_fungibility.when_can_borrow` and "
            f"`flavor_fungibility.when_can_preempt` are both TRY_NEXT_FLAVOR (Kueue: {problem})",
            "NEEDS_TRY_NEXT_FLAVOR",
        )
    ]


def weight_issues(weight: float, path: str = "fair_sharing_weight") -> list[FieldIssue]:
    if not math.isfinite(weight) or weight < 0:
        return [FieldIssue(path, "must be a finite number of 0 or more")]
    if 0 < weight <= MIN_POSITIVE_WEIGHT:
        return [FieldIssue(path, f"must be 0 or more than {MIN_POSITIVE_WEIGHT:g}", "TOO_SMALL")]
    if weight > MAX_WEIGHT:
        return [FieldIssue(path, f"must be at most {MAX_WEIGHT:g}", "TOO_LARGE")]
    return []


def resource_group_issues(
    groups: Sequence[ResourceGroup], *, flavors: Collection[str], limits: _Limits
) -> list[FieldIssue]:
    """A ClusterQueue's or a Cohort's resource groups (Kueue's validateResourceGroups)."""
    issues: list[FieldIssue] = []
    group_of_flavor: dict[str, int] = {}
    group_of_resource: dict[str, int] = {}
    for i, group in enumerate(groups):
        at = f"resource_groups.{i}"
        covered = group.covered_resources
        if not covered:
            issues.append(
                FieldIssue(f"{at}.covered_resources", "must name at least one", "REQUIRED")
            )
        for resource in covered:
            if not resource or len(resource) > MAX_RESOURCE_NAME or text_problem(resource):
                issues.append(FieldIssue(f"{at}.covered_resources", "holds a bad resource name"))
            elif resource in group_of_resource:
                where = group_of_resource[resource]
                issues.append(
                    FieldIssue(
                        f"{at}.covered_resources",
                        f"{resource} is already covered by resource group {where}",
                        "DUPLICATE",
                    )
                )
            else:
                group_of_resource[resource] = i
        if not group.flavors:
            issues.append(FieldIssue(f"{at}.flavors", "must name at least one", "REQUIRED"))
        for j, fq in enumerate(group.flavors):
            issues += _flavor_quota_issues(
                fq, f"{at}.flavors.{j}", covered, flavors, group_of_flavor, i, limits
            )
    return issues


def _flavor_quota_issues(
    fq: FlavorQuotas,
    at: str,
    covered: Sequence[str],
    flavors: Collection[str],
    group_of_flavor: dict[str, int],
    group: int,
    limits: _Limits,
) -> list[FieldIssue]:
    issues: list[FieldIssue] = []
    if fq.flavor in group_of_flavor:
        issues.append(
            FieldIssue(
                f"{at}.flavor",
                f"flavor {fq.flavor} is already in resource group {group_of_flavor[fq.flavor]}",
                "DUPLICATE",
            )
        )
    else:
        group_of_flavor[fq.flavor] = group
        if fq.flavor not in flavors:
            issues.append(
                FieldIssue(f"{at}.flavor", f"no flavor {fq.flavor} on this cluster", "NOT_FOUND")
            )
    seen: set[str] = set()
    for k, quota in enumerate(fq.resources):
        qat = f"{at}.resources.{k}"
        if quota.name not in covered:
            issues.append(
                FieldIssue(
                    f"{qat}.name", f"{quota.name} is not one of covered_resources", "NOT_COVERED"
                )
            )
        elif quota.name in seen:
            issues.append(FieldIssue(f"{qat}.name", f"{quota.name} is listed twice", "DUPLICATE"))
        seen.add(quota.name)
        if problem := _quantity_problem(quota.nominal_quota):
            issues.append(FieldIssue(f"{qat}.nominal_quota", problem))
        for attribute in ("borrowing_limit", "lending_limit"):
            limit: float | None = getattr(quota, attribute)
            if limit is None:
                continue
            if not limits.allowed:
                issues.append(FieldIssue(f"{qat}.{attribute}", limits.needs, limits.code))
            elif problem := _quantity_problem(limit):
                issues.append(FieldIssue(f"{qat}.{attribute}", problem))
            elif (
                attribute == "lending_limit"
                and limits.within_nominal
                and limit > quota.nominal_quota
            ):
                issues.append(
                    FieldIssue(
                        f"{qat}.lending_limit",
                        f"must not exceed `nominal_quota` ({quota.nominal_quota:g})",
                        "EXCEEDS_NOMINAL",
                    )
                )
    return issues


def priority_value_issues(
    classes: Iterable[WorkloadPriorityClass], priority: JobPriority, value: int
) -> list[FieldIssue]:
    """`value` for `priority` keeps CRITICAL > HIGH > NORMAL > LOW > SPOT."""
    if not MIN_PRIORITY_VALUE <= value <= MAX_PRIORITY_VALUE:
        return [
            FieldIssue("value", f"must be between {MIN_PRIORITY_VALUE} and {MAX_PRIORITY_VALUE}")
        ]
    values = dict(DEFAULT_PRIORITY_VALUES) | {pc.priority: pc.value for pc in classes}
    order = list(JobPriority)
    here = order.index(priority)
    problems = []
    if here > 0 and value >= values[higher := order[here - 1]]:
        problems.append(f"below {higher.value} ({values[higher]})")
    if here < len(order) - 1 and value <= values[lower := order[here + 1]]:
        problems.append(f"above {lower.value} ({values[lower]})")
    if problems:
        return [
            FieldIssue(
                "value",
                f"must stay {' and '.join(problems)}: CRITICAL > HIGH > NORMAL > LOW > SPOT",
                "BREAKS_ORDER",
            )
        ]
    return []


# --- who may do what -------------------------------------------------------------------------


def require(principal: Principal, scope: Scope) -> None:
    if not principal.has(scope):
        raise Forbidden(f"this token lacks the {scope.value} scope")


def sees_all(principal: Principal) -> bool:
    return Scope.ADMIN in principal.scopes


def sees(principal: Principal) -> Callable[[TenantId], bool]:
    """Whether `principal` may see (or be told of) an object of the given tenant."""
    return lambda tenant: sees_all(principal) or tenant == principal.tenant_id


def acting_for(principal: Principal, tenant_id: TenantId | None, what: str) -> TenantId:
    tenant = tenant_id or principal.tenant_id
    if tenant != principal.tenant_id and not sees_all(principal):
        raise Forbidden(f"only admins may manage {what} of another tenant")
    return tenant


def in_use(
    what: str, users: Sequence[str], *, hidden: int = 0, whose: str = "other tenants"
) -> Conflict:
    """`what` is still used by `users`, and by `hidden` objects the caller may not be told of
    (`whose`: other tenants', or its tenant's other projects'), counted, never named."""
    named = list(users)
    if hidden:
        named.append(f"{hidden} object{'s' if hidden > 1 else ''} of {whose}")
    return Conflict(f"{what} is in use by {', '.join(named)}", code="IN_USE")


def taken(what: str) -> Conflict:
    return Conflict(f"{what} already exists on this cluster", code="ALREADY_EXISTS")
