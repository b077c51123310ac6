"""What a job's further pod sets may be, checked with the rest of a submission.

A job's own pod set is named "main" (`MAIN_POD_SET`) and checked as its resources always were;
each further one is checked the same way, by its own path (`resources.pod_sets.2.gpu_count`):
a name that can name a JobSet's replicated job and a Kueue PodSet, pods that fit a node of the
job's GPU type, and no more of them than the cluster's nodes hold when empty.
"""

from __future__ import annotations

from domain.errors import FieldIssue
from domain.model.cluster import Cluster
from domain.model.job import MAIN_POD_SET, PodSet, Resources
from domain.names import MAX_OBJECT_NAME, name_problem, text_problem

MAX_POD_SETS = 8
"""Pod sets of one job, its own included: a Kueue Workload holds at most 8 (`spec.podSets`,
`+kubebuilder:validation:MaxItems=8` in apis/kueue/v1beta1/workload_types.go up to Kueue v0.17;
10 in v0.18, 18 from v0.19), and a JobSet's replicated job is one of them."""
MAX_FURTHER_POD_SETS = MAX_POD_SETS - 1


def pod_set_issues(res: Resources, cluster: Cluster | None, *, max_pods: int) -> list[FieldIssue]:
    """Every problem with `res.pod_sets`, by field; `max_pods`: the most pods of one pod set."""
    if len(res.pod_sets) > MAX_FURTHER_POD_SETS:
        return [
            FieldIssue(
                "resources.pod_sets",
                f"must hold at most {MAX_FURTHER_POD_SETS} pod sets (a Kueue Workload holds at "
                f"most {MAX_POD_SETS}, the job's own included)",
                "TOO_MANY",
            )
        ]
    issues: list[FieldIssue] = []
    seen: set[str] = set()
    for i, pod_set in enumerate(res.pod_sets):
        at = f"resources.pod_sets.{i}"
        if problem := text_problem(pod_set.name) or name_problem(
            pod_set.name, max_length=MAX_OBJECT_NAME
        ):
            issues.append(FieldIssue(f"{at}.name", problem, "INVALID_NAME"))
        elif pod_set.name == MAIN_POD_SET:
            issues.append(
                FieldIssue(
                    f"{at}.name", f'"{MAIN_POD_SET}" names the job\'s own pod set', "RESERVED"
                )
            )
        elif pod_set.name in seen:
            issues.append(
                FieldIssue(f"{at}.name", f"another pod set is named {pod_set.name}", "DUPLICATE")
            )
        seen.add(pod_set.name)
        issues.extend(_shape_issues(at, pod_set, res.gpu_type, cluster, max_pods))
    return issues


def _shape_issues(
    at: str, p: PodSet, gpu_type: str | None, cluster: Cluster | None, max_pods: int
) -> list[FieldIssue]:
    issues: list[FieldIssue] = []
    if not 1 <= p.pod_count <= max_pods:
        issues.append(FieldIssue(f"{at}.pod_count", f"must be between 1 and {max_pods}"))
    if p.gpu_count < 0:
        issues.append(FieldIssue(f"{at}.gpu_count", "must not be negative"))
    if not p.cpu_cores > 0:
        issues.append(FieldIssue(f"{at}.cpu_cores", "must be greater than 0"))
    if not p.memory_gb > 0:
        issues.append(FieldIssue(f"{at}.memory_gb", "must be greater than 0"))
    if issues or cluster is None or (p.gpu_count and not gpu_type):
        return issues  # the job's missing `gpu_type` is named by the job's own checks
    if p.gpu_count and gpu_type in cluster.gpu_types:
        if p.gpu_count > (most := cluster.largest_node_gpus(gpu_type)):
            issues.append(
                FieldIssue(
                    f"{at}.gpu_count",
                    f"asks for {p.gpu_count} x {gpu_type} but the largest node of cluster "
                    f"{cluster.name} has {most}",
                    "EXCEEDS_NODE",
                )
            )
    elif p.gpu_count:
        return issues  # an unknown GPU type is named by the job's own checks
    if cluster.nodes and p.cpu_cores > cluster.largest_node_cpu:
        issues.append(
            FieldIssue(
                f"{at}.cpu_cores",
                f"exceeds the largest node's {cluster.largest_node_cpu:g} cores",
                "EXCEEDS_NODE",
            )
        )
    if cluster.nodes and p.memory_gb > cluster.largest_node_memory:
        issues.append(
            FieldIssue(
                f"{at}.memory_gb",
                f"exceeds the largest node's {cluster.largest_node_memory:g} GB",
                "EXCEEDS_NODE",
            )
        )
    if not issues and cluster.nodes and p.pod_count > 1:
        kind = gpu_type if p.gpu_count else None
        room = cluster.pods_that_fit(kind, p.gpu_count, p.cpu_cores, p.memory_gb)
        if p.pod_count > room:
            issues.append(
                FieldIssue(
                    f"{at}.pod_count",
                    f"asks for {p.pod_count} pods but the nodes of cluster {cluster.name} hold "
                    f"at most {room} such pods",
                    "EXCEEDS_CLUSTER",
                )
            )
    return issues
