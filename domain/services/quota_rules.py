"""What makes Kueue's objects acceptable, and who may change them.

Pure functions over the model, and the permission rules the quota and reservation services
share (see `QuotaService` for who may do what). Each check returns every problem at once as
`FieldIssue`s whose paths follow the input in snake_case
(`resource_groups.0.flavors.1.resources.0.lending_limit`); the GraphQL layer renders them
camelCased. Whether a referenced object exists is passed in by the caller, which read it in the
same unit of work that then writes. The quotas a new cluster starts with are `quota_defaults`,
what makes a reservation acceptable `reservation_rules`.
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
    ClusterQueue,
    FlavorQuotas,
    PreemptionPolicy,
    QueueingStrategy,
    ResourceGroup,
    WorkloadPriorityClass,
)
from domain.names import MAX_OBJECT_NAME, label_problem, name_problem, text_problem

MIN_PRIORITY_VALUE = -1_000_000_000
MAX_PRIORITY_VALUE = 1_000_000_000
MAX_DESCRIPTION = 500
MAX_RESOURCE_NAME = 253
MAX_NODE_LABELS = 32


@dataclass(frozen=True)
class ClusterQueueSpec:
    """A ClusterQueue as a caller writes it (create, or the whole new state on update)."""

    cluster_id: ClusterId
    name: str
    cohort: str | None = None
    queueing_strategy: QueueingStrategy = QueueingStrategy.BEST_EFFORT_FIFO
    resource_groups: tuple[ResourceGroup, ...] = ()
    preemption: PreemptionPolicy = field(default_factory=PreemptionPolicy)

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
    group_of_flavor: dict[str, int] = {}
    group_of_resource: dict[str, int] = {}
    for i, group in enumerate(spec.resource_groups):
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
                spec, fq, f"{at}.flavors.{j}", covered, flavors, group_of_flavor, i
            )
    return issues


def _flavor_quota_issues(
    spec: ClusterQueueSpec,
    fq: FlavorQuotas,
    at: str,
    covered: Sequence[str],
    flavors: Collection[str],
    group_of_flavor: dict[str, int],
    group: int,
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
            if spec.cohort is None:
                issues.append(
                    FieldIssue(
                        f"{qat}.{attribute}", "applies only to a queue in a cohort", "NEEDS_COHORT"
                    )
                )
            elif problem := _quantity_problem(limit):
                issues.append(FieldIssue(f"{qat}.{attribute}", problem))
            elif attribute == "lending_limit" and limit > quota.nominal_quota:
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
