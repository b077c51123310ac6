"""The quotas a new cluster starts with.

They make a fresh cluster usable at once, as a Kueue install with one catch-all queue would: a
flavor per GPU product (selecting nodes by the GPU Feature Discovery label) plus a "default-cpu"
flavor, and a ClusterQueue "default" whose nominal quota is the whole cluster.
"""

from __future__ import annotations

import re
from datetime import datetime

from domain.inventory.flavor_labels import product_selector
from domain.model.cluster import Cluster
from domain.model.quota import (
    CPU,
    DEFAULT_QUEUE,
    GPU_LABEL,
    MEMORY,
    ClusterQueue,
    FlavorQuotas,
    PreemptionPolicy,
    QueueingStrategy,
    ReclaimWithinCohort,
    ResourceFlavor,
    ResourceGroup,
    ResourceQuota,
    WithinClusterQueue,
    gpu_resource,
)
from domain.names import MAX_OBJECT_NAME

DEFAULT_CPU_FLAVOR = "default-cpu"


def flavor_name_for(gpu_type: str) -> str:
    """A DNS-1123 name for the flavor of a GPU product (`nvidia-h100.sxm` -> `nvidia-h100-sxm`)."""
    name = re.sub(r"[^a-z0-9-]+", "-", gpu_type.lower()).strip("-")
    return name[:MAX_OBJECT_NAME].rstrip("-") or "gpu"


def _selector(cluster: Cluster, gpu_type: str) -> dict[str, str]:
    """The nodeLabels of a GPU type's flavor: the product label its nodes carry (e.g.
    nvidia.com/gpu.product=NVIDIA-A100-SXM4-80GB on a real cluster), so that Kueue places the
    flavor's workloads on them. A node with no such label gets an empty selector: its GPU
    resource (habana.ai/gaudi, amd.com/gpu) already confines the pods to nodes that have it."""
    for node in cluster.workers:
        if node.gpu_type == gpu_type:
            return product_selector(node.labels)
    return {GPU_LABEL: gpu_type}


def default_quotas(cluster: Cluster, now: datetime) -> tuple[list[ResourceFlavor], ClusterQueue]:
    """A flavor per GPU type plus "default-cpu", and the ClusterQueue "default" whose nominal
    quota is the cluster's whole capacity: GPUs per flavor in one resource group, cores and GB of
    memory in another. When GPU types map to different resources (NVIDIA, AMD), each GPU flavor
    lists every covered resource, as Kueue requires, with 0 for the ones it does not have."""
    capacity = cluster.gpu_capacity()
    resources = tuple(sorted({gpu_resource(t) for t in capacity}))
    flavors: list[ResourceFlavor] = []
    gpu_flavors: list[FlavorQuotas] = []
    for gpu_type in sorted(capacity):
        name = flavor_name_for(gpu_type)
        if name == DEFAULT_CPU_FLAVOR or any(f.name == name for f in flavors):
            continue
        flavors.append(ResourceFlavor(cluster.id, name, _selector(cluster, gpu_type), now, now))
        own = gpu_resource(gpu_type)
        quotas = tuple(
            ResourceQuota(r, float(capacity[gpu_type]) if r == own else 0.0) for r in resources
        )
        gpu_flavors.append(FlavorQuotas(name, quotas))
    flavors.append(ResourceFlavor(cluster.id, DEFAULT_CPU_FLAVOR, {}, now, now))
    groups: list[ResourceGroup] = []
    if gpu_flavors:
        groups.append(ResourceGroup(resources, tuple(gpu_flavors)))
    cpu_quotas = (
        ResourceQuota(CPU, float(sum(n.cpu_cores for n in cluster.workers))),
        ResourceQuota(MEMORY, float(sum(n.memory_gb for n in cluster.workers))),
    )
    groups.append(ResourceGroup((CPU, MEMORY), (FlavorQuotas(DEFAULT_CPU_FLAVOR, cpu_quotas),)))
    queue = ClusterQueue(
        cluster_id=cluster.id,
        name=DEFAULT_QUEUE,
        created_at=now,
        updated_at=now,
        cohort=None,
        queueing_strategy=QueueingStrategy.BEST_EFFORT_FIFO,
        resource_groups=tuple(groups),
        preemption=PreemptionPolicy(WithinClusterQueue.LOWER_PRIORITY, ReclaimWithinCohort.NEVER),
    )
    return flavors, queue
