"""A node drained as `kubectl drain` drains it, less what budcluster runs there itself.

`drain` cordons the node (a JSON merge patch of spec.unschedulable: what `kubectl cordon`'s
strategic merge patch amounts to for that field), lists the pods on it (fieldSelector
spec.nodeName) and posts a policy/v1 Eviction for each one it may move: the API server refuses
one that a PodDisruptionBudget forbids now with 429, and that pod is kept there, to be tried
again. A DaemonSet's pod would be made again on the node, a mirror pod can't be evicted (the
kubelet runs it from a file), a terminating one is going already and a finished one holds
nothing (evicting it would only lose its record): all are left, as kubectl leaves them.
budcluster's own workload pods are left too: their jobs are requeued or replaced by budcluster
(`ClusterGateway.evict`), with the grace period each declares.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from adapters.kubernetes.api import WorkloadApi

log = logging.getLogger(__name__)

Json = dict[str, Any]
NODES = "/api/v1/nodes"
PODS = "/api/v1/pods"
MIRROR_POD = "kubernetes.io/config.mirror"
"""The annotation of a static pod's mirror in the API."""
TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})


def cordon_patch(unschedulable: bool) -> Json:
    return {"spec": {"unschedulable": unschedulable}}


def evictable(pod: Json, *, runs_itself: Callable[[Json], bool]) -> bool:
    """Whether a drain evicts `pod` (module doc); `runs_itself`: one of budcluster's workloads."""
    metadata = pod.get("metadata") or {}
    if metadata.get("deletionTimestamp") or MIRROR_POD in (metadata.get("annotations") or {}):
        return False
    if (pod.get("status") or {}).get("phase") in TERMINAL_PHASES:
        return False
    if any(ref.get("kind") == "DaemonSet" for ref in metadata.get("ownerReferences") or []):
        return False
    return not runs_itself(pod)


async def drain(api: WorkloadApi, node: str, *, runs_itself: Callable[[Json], bool]) -> list[str]:
    """Cordon `node` and evict what may be moved from it (module doc); the pods
    ("namespace/name") a PodDisruptionBudget keeps there for now. A node gone holds nothing."""
    if await api.patch_object(f"{NODES}/{node}", cordon_patch(True)) is None:
        log.info("node %s is gone: nothing to drain", node)
        return []
    pods, _ = await api.list_objects(PODS, field_selector=f"spec.nodeName={node}")
    kept: list[str] = []
    for pod in pods:
        if evictable(pod, runs_itself=runs_itself):
            metadata = pod.get("metadata") or {}
            namespace, name = str(metadata.get("namespace") or ""), str(metadata.get("name"))
            if not await api.evict_pod(namespace=namespace, name=name):
                kept.append(f"{namespace}/{name}")
    return sorted(kept)


async def uncordon(api: WorkloadApi, node: str) -> None:
    """spec.unschedulable false, as `kubectl uncordon` leaves it; a node gone is not an error."""
    await api.patch_object(f"{NODES}/{node}", cordon_patch(False))
