"""Kueue's visibility API: the pending workloads of a LocalQueue in Kueue's own order.

Kueue (0.6 and newer, feature VisibilityOnDemand) serves the group visibility.kueue.x-k8s.io
(v1alpha1, then v1beta1, v1beta2) through an aggregated API server:
GET /apis/visibility.kueue.x-k8s.io/<version>/namespaces/<ns>/localqueues/<queue>/pendingworkloads
answers a PendingWorkloadsSummary whose items are PendingWorkloads: metadata (the Workload's
name, namespace and ownerReferences, the owning Job or pod), priority, localQueueName,
positionInClusterQueue and positionInLocalQueue, both counted from 0. Query parameters offset
(default 0) and limit (default 1000). Checked against kubernetes-sigs/kueue
apis/visibility/v1beta2/types.go.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from adapters.kubernetes.kueue.reading import metadata
from domain.ports.gateways import PendingWorkload

VISIBILITY_GROUP = "visibility.kueue.x-k8s.io"
VISIBILITY_VERSIONS = ("v1beta2", "v1beta1", "v1alpha1")
"""Newest first."""
PAGE = 1000


def visibility_version(served: Iterable[str]) -> str | None:
    names = {version.rpartition("/")[2] for version in served}
    return next((v for v in VISIBILITY_VERSIONS if v in names), None)


def pending_path(version: str, namespace: str, queue: str) -> str:
    return (
        f"/apis/{VISIBILITY_GROUP}/{version}/namespaces/{namespace}"
        f"/localqueues/{queue}/pendingworkloads"
    )


def pending_workloads(summary: Mapping[str, Any]) -> list[PendingWorkload]:
    """The items of a PendingWorkloadsSummary; items without an owner or a position are
    skipped (nothing budcluster could tie to a job)."""
    found = []
    for item in summary.get("items") or []:
        refs = metadata(item).get("ownerReferences") or []
        owner = next((r for r in refs if r.get("kind") in ("Job", "Pod") and r.get("name")), None)
        try:
            local = int(item["positionInLocalQueue"])
            cluster = int(item.get("positionInClusterQueue", local))
            priority = int(item.get("priority") or 0)
        except (KeyError, TypeError, ValueError):
            continue
        if owner is None or local < 0:
            continue
        found.append(
            PendingWorkload(
                owner_kind=str(owner["kind"]),
                owner_name=str(owner["name"]),
                local_queue=str(item.get("localQueueName") or ""),
                position_in_local_queue=local,
                position_in_cluster_queue=cluster,
                priority=priority,
            )
        )
    return found
