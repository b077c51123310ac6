"""What makes a capacity reservation acceptable: a flavor's GPUs, booked from a ClusterQueue that
holds GPU quota in that flavor, over a window that ends in the future."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from domain.errors import FieldIssue
from domain.model.cluster import Cluster, Node
from domain.model.ids import ClusterId
from domain.model.quota import CPU, MEMORY, ClusterQueue, ResourceFlavor, ResourceQuota
from domain.services.quota_rules import name_issues


@dataclass(frozen=True)
class ReservationSpec:
    cluster_id: ClusterId
    name: str
    cluster_queue: str
    flavor: str
    gpu_count: int
    start: datetime
    end: datetime


def flavor_capacity(flavor: ResourceFlavor, nodes: Iterable[Node]) -> int:
    """GPUs on the nodes the flavor selects."""
    return sum(n.gpu_count for n in nodes if n.gpu_count and flavor.matches(n))


def gpu_quota(queue: ClusterQueue, flavor: str) -> ResourceQuota | None:
    """The queue's quota of GPUs (any resource but cpu and memory) in `flavor`, if above 0."""
    for group in queue.resource_groups:
        for fq in group.flavors:
            if fq.flavor == flavor:
                for quota in fq.resources:
                    if quota.name not in (CPU, MEMORY) and quota.nominal_quota > 0:
                        return quota
    return None


def reservation_issues(
    spec: ReservationSpec,
    *,
    cluster: Cluster,
    queue: ClusterQueue | None,
    flavor: ResourceFlavor | None,
    now: datetime,
) -> list[FieldIssue]:
    issues = name_issues(spec.name)
    if spec.gpu_count < 1:
        issues.append(FieldIssue("gpu_count", "must be at least 1"))
    if flavor is None:
        issues.append(FieldIssue("flavor", f"no flavor {spec.flavor} on this cluster", "NOT_FOUND"))
    elif spec.gpu_count > (capacity := flavor_capacity(flavor, cluster.nodes)):
        issues.append(
            FieldIssue(
                "gpu_count",
                f"cluster {cluster.name} has {capacity} GPUs of flavor {flavor.name}",
                "EXCEEDS_CAPACITY",
            )
        )
    if queue is None:
        issues.append(
            FieldIssue(
                "cluster_queue",
                f"no cluster queue {spec.cluster_queue} on this cluster",
                "NOT_FOUND",
            )
        )
    elif flavor is not None and gpu_quota(queue, flavor.name) is None:
        issues.append(
            FieldIssue(
                "cluster_queue",
                f"cluster queue {queue.name} has no GPU quota in flavor {flavor.name}",
                "NO_QUOTA",
            )
        )
    for path, moment in (("start", spec.start), ("end", spec.end)):
        if moment.tzinfo is None:
            issues.append(FieldIssue(path, "must carry a timezone"))
    if spec.start.tzinfo is not None and spec.end.tzinfo is not None:
        if spec.end <= spec.start:
            issues.append(FieldIssue("end", "must be after start", "BEFORE_START"))
        elif spec.end <= now:
            issues.append(FieldIssue("end", "is in the past", "IN_THE_PAST"))
    return issues
