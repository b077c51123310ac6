"""A job of several pod sets as a JobSet, and its state read back (kueue/jobsets.py).

Covers: a CPU-only leader with GPU workers asks GPUs only in the workers' pods, their own cores
and memory, and BUD_POD_COUNT where a pod set has several pods; a batch Job refuses a job of
several pod sets, and the submission check renders a JobSet; a name that would make a Job name
longer than a label is refused by the field that makes it so; a Workload names its JobSet owner
(not a batch Job); the JobSet's terminal state and conditions end the attempt (Failed,
Completed), suspended it is not running, resumed with its Jobs ready it is, with its
pods placed pod set by pod set and index by index, each with its pod set's flavor.
"""

from __future__ import annotations

from typing import Any

import pytest

from adapters.kubernetes.kueue.check import check_workload
from adapters.kubernetes.kueue.jobs import batch_job, owner_job_name
from adapters.kubernetes.kueue.jobsets import job_set, observe_job_set, owner_job_set_name
from domain.model.ids import ClusterId
from domain.model.job import PodSet, Resources
from domain.ports.gateways import WorkloadPhase as P
from tests.unit.test_kueue_jobs import JOB_ID, NOW, workload

CLUSTER = ClusterId(JOB_ID)
WORKERS = PodSet("workers", pod_count=3, gpu_count=8, cpu_cores=12, memory_gb=96)
LAUNCHER = Resources(gpu_type="nvidia-h100-80gb", gpu_count=0, cpu_cores=2, pod_sets=(WORKERS,))


def rendered() -> dict[str, Any]:
    return job_set(workload(resources=LAUNCHER), cluster_id=CLUSTER)


def test_gpus_only_where_a_pod_set_asks_them() -> None:
    pods = {}
    for rj in rendered()["spec"]["replicatedJobs"]:
        (container,) = rj["template"]["spec"]["template"]["spec"]["containers"]
        env = {e["name"]: e["value"] for e in container["env"]}
        pods[rj["name"]] = (
            rj["template"]["spec"].get("completionMode"),
            container["resources"],
            env.get("BUD_POD_COUNT"),
            env["BUD_POD_SET"],
        )
    assert pods == {
        "main": (None, {"requests": {"cpu": 2, "memory": "4Gi"}}, None, "main"),
        "workers": (
            "Indexed",
            {
                "requests": {"cpu": 12, "memory": "96Gi", "nvidia.com/gpu": 8},
                "limits": {"nvidia.com/gpu": 8},
            },
            "3",
            "workers",
        ),
    }


def test_a_job_of_several_pod_sets_is_not_a_batch_job() -> None:
    with pytest.raises(ValueError, match=r"^resources\.pod_sets: "):
        batch_job(workload(resources=LAUNCHER), cluster_id=CLUSTER)
    check_workload(workload(resources=LAUNCHER), cluster_id=CLUSTER)  # renders as a JobSet


def test_a_name_too_long_for_its_jobs_is_refused_by_its_field() -> None:
    long = Resources(pod_sets=(PodSet("w" * 63),))
    with pytest.raises(ValueError, match=r"^resources\.pod_sets\.0\.name: "):
        check_workload(workload(resources=long), cluster_id=CLUSTER)


def test_a_workload_names_its_job_set() -> None:
    owned = {
        "metadata": {
            "ownerReferences": [
                {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "name": "js"}
            ]
        }
    }
    assert (owner_job_set_name(owned), owner_job_name(owned)) == ("js", None)


def cond(kind: str, reason: str = "", message: str = "") -> dict[str, str]:
    return {
        "type": kind,
        "status": "True",
        "reason": reason,
        "message": message,
        "lastTransitionTime": "2024-06-03T12:00:00Z",
    }


def state(suspend: bool, status: dict[str, Any]) -> dict[str, Any]:
    js = rendered()
    return {**js, "spec": {**js["spec"], "suspend": suspend}, "status": status}


def pod(pod_set: str, index: int, node: str) -> dict[str, Any]:
    return {
        "metadata": {
            "name": f"{pod_set}-{index}",
            "labels": {"jobset.sigs.k8s.io/replicatedjob-name": pod_set},
            "annotations": {"batch.kubernetes.io/job-completion-index": str(index)},
        },
        "spec": {"nodeName": node},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }


ADMITTED = {
    "status": {
        "conditions": [cond("QuotaReserved"), cond("Admitted")],
        "admission": {
            "clusterQueue": "cq",
            "podSetAssignments": [
                {"name": "main", "flavors": {"cpu": "cpu-pool", "memory": "cpu-pool"}},
                {"name": "workers", "flavors": {"nvidia.com/gpu": "h100", "cpu": "cpu-pool"}},
            ],
        },
    }
}
READY = {
    "replicatedJobsStatus": [
        {"name": "main", "ready": 1},
        {"name": "workers", "ready": 1},
    ]
}


@pytest.mark.parametrize(
    ("js", "phase", "reason"),
    [
        (state(True, {}), P.ADMITTED, "admitted by ClusterQueue cq"),
        (state(False, {}), P.ADMITTED, "admitted by ClusterQueue cq"),
        (state(False, READY), P.RUNNING, "running"),
        (
            state(False, {"terminalState": "Completed", "conditions": [cond("Completed", "AllJobsCompleted", "jobset completed")]}),
            P.SUCCEEDED,
            "jobset completed",
        ),
        (
            state(False, {"terminalState": "Failed", "conditions": [cond("Failed", "FailedJobs", "jobset failed due to one or more job failures")]}),
            P.FAILED,
            "FailedJobs: jobset failed due to one or more job failures",
        ),
        (state(False, {"terminalState": "Failed"}), P.FAILED, "Failed: the JobSet failed"),
    ],
)  # fmt: skip
def test_observe_reads_the_job_set(js: dict[str, Any], phase: P, reason: str) -> None:
    seen = observe_job_set(js, ADMITTED, observed_at=NOW)
    assert seen is not None
    assert (seen.phase, seen.reason) == (phase, reason)


def test_running_pods_are_placed_pod_set_by_pod_set() -> None:
    pods = [
        pod("workers", 2, "n3"),
        pod("workers", 0, "n1"),
        pod("main", 0, "c1"),
        pod("workers", 1, "n2"),
    ]
    seen = observe_job_set(state(False, READY), ADMITTED, observed_at=NOW, pods=pods)
    assert seen is not None
    assert [(p.node, p.flavor) for p in seen.placements] == [
        ("c1", "cpu-pool"),
        ("n1", "h100"),
        ("n2", "h100"),
        ("n3", "h100"),
    ]
