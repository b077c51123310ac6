"""What a deployment asks of its cluster that the cluster can never give: said, not refused.

A deployment is refused when not even one replica fits a node (EXCEEDS_CLUSTER). More replicas
than the cluster can hold at once are accepted (nodes may be added, and every replica waits its
turn like any job), but the extra ones would wait for ever without a word: `warnings` names them.
Replicas are counted as the validation counts them (`Cluster.pods_that_fit`: whole replicas per
node, by GPUs, cores and memory, on the empty cluster), against the cluster as it is when read.
Quotas are not counted: a ClusterQueue may borrow from its cohort.
"""

from __future__ import annotations

from dataclasses import dataclass

from domain.model.cluster import Cluster
from domain.model.deployment import Deployment

REPLICAS_EXCEED_CLUSTER = "REPLICAS_EXCEED_CLUSTER"


@dataclass(frozen=True)
class DeploymentWarning:
    code: str
    message: str
    path: str
    """The input it is about, as a validation error's path names it."""


def warnings(deployment: Deployment, cluster: Cluster | None) -> tuple[DeploymentWarning, ...]:
    """What is wrong with `deployment` on `cluster` that does not stop it."""
    wanted, gpu_type = deployment.replicas, deployment.gpu_type
    if cluster is None or deployment.stopped or wanted == 0 or gpu_type is None:
        return ()
    gpus = deployment.gpus_per_replica
    fit = cluster.pods_that_fit(gpu_type, gpus, deployment.cpu_cores, deployment.memory_gb)
    if fit >= wanted:
        return ()
    total = cluster.gpu_capacity().get(gpu_type, 0)
    replica = f"{gpus} x {gpu_type}, {deployment.cpu_cores:g} cores, {deployment.memory_gb:g} GB"
    if fit == 0:
        why = f"no node of cluster {cluster.name} holds one ({replica})"
        message = f"none of the {wanted} replicas can run: {why}"
    elif fit == total // gpus:
        each = f", {gpus} a replica" if gpus > 1 else ""
        why = f"cluster {cluster.name} has {total} {gpu_type} GPUs{each}"
        message = f"only {fit} of {wanted} replicas can ever run: {why}"
    else:  # the nodes' cores or memory run out before their GPUs
        why = f"the nodes of cluster {cluster.name} hold {fit} replicas of {replica}"
        message = f"only {fit} of {wanted} replicas can ever run: {why}"
    return (DeploymentWarning(REPLICAS_EXCEED_CLUSTER, message, "replicas"),)
