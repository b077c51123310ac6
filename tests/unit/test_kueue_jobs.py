"""One attempt as a batch/v1 Job for Kueue, and its state read back from the Job and Workload.

Covers: the whole Job manifest (suspended, Kueue's queue and priority labels, the bud.ai identity
labels on the Job and its pods, no Kubernetes retries, deadline and TTL, one container "main");
GPU requests and limits per vendor, none without GPUs, cpu in millicores; env as a mapping or a
list, numbers in args as text; SERVICE jobs, a missing image and malformed container fields
refused with the field named. Identity from labels (Job, pod, Workload with copied labels) and
the owner Job of a Workload. `observe` over realistic objects in every state: pending with
QuotaReserved=False and its message, quota reserved, admitted, running (ready pod, PodsReady),
succeeded, failed (backoff limit, deadline exceeded), evicted (Preempted, PodsReadyTimeout,
deactivated), re-admitted after an eviction, deleted (gone, being deleted, expected but absent),
finished after the Job was cleaned up; with phase, reason and every timestamp.
"""

from __future__ import annotations

import copy
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest

from adapters.kubernetes.kueue.check import check_workload
from adapters.kubernetes.kueue.jobs import (
    ATTEMPT_LABEL,
    DEADLINE_REASON,
    DELETED_REASON,
    JOB_ID_LABEL,
    POD_COUNT_ENV,
    QUEUED_REASON,
    WORKLOAD_REASONS,
    batch_job,
    job_identity,
    observe,
    owner_job_name,
)
from domain.model.ids import ClusterId, JobId, TenantId
from domain.model.job import JobPriority, JobType, Resources
from domain.model.quota import tenant_namespace
from domain.ports.gateways import Workload, WorkloadPhase

CLUSTER = ClusterId(uuid.UUID("7d0c63a4-52a4-4d8e-9d3f-0f4cf3e1a001"))
JOB_ID = JobId(uuid.UUID("3f2b8c1e-9a4d-4e6b-8f10-2c7d5e9a0b11"))
TENANT = TenantId(uuid.UUID("a1b2c3d4-e5f6-4711-8899-aabbccddeeff"))
NAMESPACE = tenant_namespace(TENANT)
NAME = f"bud-{JOB_ID.hex[:20]}-a1"
JOB_UID = "0b5f3c2e-6d1a-4c8e-9f2b-7a6e5d4c3b21"
NOW = datetime(2024, 6, 3, 12, 0, tzinfo=UTC)


def workload(**changes: Any) -> Workload:
    fields: dict[str, Any] = {
        "job_id": JOB_ID,
        "attempt": 1,
        "name": NAME,
        "tenant_id": TENANT,
        "job_type": JobType.TRAINING,
        "priority": JobPriority.HIGH,
        "preemptible": True,
        "resources": Resources(gpu_type="nvidia-a100-80gb", gpu_count=4, cpu_cores=1.5),
        "created_at": datetime(2024, 6, 3, 9, 12, 40, tzinfo=UTC),
        "max_duration_seconds": 7200,
        "spec": {
            "image": "ghcr.io/acme/train:1.4",
            "command": ["python", "-m", "train"],
            "args": ["--tp", 8, "--bf16", True],
            "env": {"EPOCHS": "3", "LR": 0.0003},
        },
        "namespace": NAMESPACE,
        "queue_name": "default",
    }
    return Workload(**{**fields, **changes})


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(UTC)


# --- batch_job ----------------------------------------------------------------------------------


def test_batch_job_renders_the_whole_manifest() -> None:
    labels = {
        "app.kubernetes.io/managed-by": "budcluster",
        "bud.ai/cluster-id": str(CLUSTER),
        "bud.ai/job-id": str(JOB_ID),
        "bud.ai/attempt": "1",
    }
    assert batch_job(workload(), cluster_id=CLUSTER) == {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": NAME,
            "namespace": NAMESPACE,
            "labels": {
                **labels,
                "kueue.x-k8s.io/queue-name": "default",
                "kueue.x-k8s.io/priority-class": "bud-high",
            },
        },
        "spec": {
            "suspend": True,
            "parallelism": 1,
            "completions": 1,
            "backoffLimit": 0,
            "activeDeadlineSeconds": 7200,
            "ttlSecondsAfterFinished": 3600,
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {
                            "name": "main",
                            "image": "ghcr.io/acme/train:1.4",
                            "command": ["python", "-m", "train"],
                            "args": ["--tp", "8", "--bf16", "true"],
                            "env": [
                                {"name": "EPOCHS", "value": "3"},
                                {"name": "LR", "value": "0.0003"},
                            ],
                            "resources": {
                                "requests": {"cpu": "1500m", "memory": "4Gi", "nvidia.com/gpu": 4},
                                "limits": {"nvidia.com/gpu": 4},
                            },
                        }
                    ],
                },
            },
        },
    }


@pytest.mark.parametrize(
    ("gpu_type", "resource"),
    [
        ("nvidia-a100-80gb", "nvidia.com/gpu"),
        ("nvidia-h100", "nvidia.com/gpu"),
        ("amd-mi300x", "amd.com/gpu"),
        ("gaudi2", "habana.ai/gaudi"),
        ("habana-gaudi3", "habana.ai/gaudi"),
    ],
)
def test_gpus_are_requested_as_their_vendors_resource(gpu_type: str, resource: str) -> None:
    res = Resources(gpu_type=gpu_type, gpu_count=2, cpu_cores=8, memory_gb=64)
    job = batch_job(workload(resources=res), cluster_id=CLUSTER)
    resources = job["spec"]["template"]["spec"]["containers"][0]["resources"]
    assert resources == {
        "requests": {"cpu": 8, "memory": "64Gi", resource: 2},
        "limits": {resource: 2},
    }


def test_no_gpu_key_without_gpus_and_no_deadline_when_unset() -> None:
    res = Resources(gpu_type="nvidia-a100-80gb", gpu_count=0, cpu_cores=0.5, memory_gb=1.5)
    job = batch_job(
        workload(job_type=JobType.BATCH, resources=res, max_duration_seconds=None),
        cluster_id=CLUSTER,
        ttl_seconds_after_finished=600,
    )
    container = job["spec"]["template"]["spec"]["containers"][0]
    assert container["resources"] == {"requests": {"cpu": "500m", "memory": "1536Mi"}}
    assert "activeDeadlineSeconds" not in job["spec"]
    assert job["spec"]["ttlSecondsAfterFinished"] == 600


def test_only_the_image_is_required_and_env_may_be_a_list() -> None:
    bare = batch_job(workload(spec={"image": "busybox"}), cluster_id=CLUSTER)
    container = bare["spec"]["template"]["spec"]["containers"][0]
    assert set(container) == {"name", "image", "resources"}
    env = [{"name": "A", "value": "b"}, {"name": "N", "value": 2}, {"name": "EMPTY"}]
    listed = batch_job(workload(spec={"image": "busybox", "env": env}), cluster_id=CLUSTER)
    assert listed["spec"]["template"]["spec"]["containers"][0]["env"] == [
        {"name": "A", "value": "b"},
        {"name": "N", "value": "2"},
        {"name": "EMPTY", "value": ""},
    ]


def test_the_spec_is_not_changed() -> None:
    w = workload()
    before = copy.deepcopy(dict(w.spec))
    batch_job(w, cluster_id=CLUSTER)
    assert dict(w.spec) == before


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({}, "spec.image"),
        ({"image": ""}, "spec.image"),
        ({"image": 42}, "spec.image"),
        ({"image": "x", "command": "python train.py"}, "spec.command"),
        ({"image": "x", "args": ["--cfg", {"a": 1}]}, r"spec.args\[1\]"),
        ({"image": "x", "env": {"A": None}}, "spec.env.A"),
        ({"image": "x", "env": "A=b"}, "spec.env"),
        ({"image": "x", "env": [{"name": "S", "valueFrom": {}}]}, r"spec.env\[0\]"),
        ({"image": "x", "env": [{"value": "v"}]}, r"spec.env\[0\]"),
    ],
)
def test_malformed_container_fields_are_refused_by_name(spec: dict[str, Any], field: str) -> None:
    with pytest.raises(ValueError, match=field):
        batch_job(workload(spec=spec), cluster_id=CLUSTER)


def test_a_service_is_not_a_batch_job() -> None:
    with pytest.raises(ValueError, match="SERVICE"):
        batch_job(workload(job_type=JobType.SERVICE), cluster_id=CLUSTER)


# --- identity -----------------------------------------------------------------------------------


def test_identity_comes_from_the_job_and_its_pods() -> None:
    job = batch_job(workload(), cluster_id=CLUSTER)
    pod = {"metadata": job["spec"]["template"]["metadata"]}
    assert job_identity(job) == (JOB_ID, 1)
    assert job_identity(pod) == (JOB_ID, 1)


@pytest.mark.parametrize(
    "labels",
    [
        None,
        {},
        {JOB_ID_LABEL: str(JOB_ID)},
        {JOB_ID_LABEL: "not-a-uuid", ATTEMPT_LABEL: "1"},
        {JOB_ID_LABEL: str(JOB_ID), ATTEMPT_LABEL: "one"},
        {JOB_ID_LABEL: str(JOB_ID), ATTEMPT_LABEL: "-1"},
    ],
)
def test_objects_without_a_valid_identity_have_none(labels: dict[str, str] | None) -> None:
    assert job_identity({"metadata": {"labels": labels}}) is None
    assert job_identity(None) is None


def test_a_workload_names_its_owner_job() -> None:
    assert owner_job_name(kueue_workload()) == NAME
    assert job_identity(kueue_workload()) is None  # Kueue copies no labels by default
    not_a_job = {
        "metadata": {"ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "p"}]}
    }
    assert owner_job_name(not_a_job) is None
    assert owner_job_name(None) is None


# --- fixtures: a Job and its Kueue Workload as the API server returns them ---------------------


def cond(kind: str, status: str, reason: str, message: str, when: str) -> dict[str, Any]:
    return {
        "type": kind,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": when,
        "observedGeneration": 1,
    }


def job_object(*, suspend: bool, status: dict[str, Any], deleting: str | None = None) -> Any:
    job = batch_job(workload(), cluster_id=CLUSTER)
    job["metadata"].update(
        uid=JOB_UID,
        resourceVersion="48213",
        generation=2,
        creationTimestamp="2024-06-03T09:12:44Z",
    )
    if deleting:
        job["metadata"]["deletionTimestamp"] = deleting
    job["spec"]["suspend"] = suspend
    job["spec"]["completionMode"] = "NonIndexed"
    job["spec"]["podReplacementPolicy"] = "TerminatingOrFailed"
    job["status"] = status
    return job


def kueue_workload(*conditions: dict[str, Any], admitted: bool = False) -> dict[str, Any]:
    status: dict[str, Any] = {"conditions": list(conditions)}
    if admitted:
        status["admission"] = {
            "clusterQueue": "gpu-a100",
            "podSetAssignments": [
                {
                    "name": "main",
                    "flavors": {"cpu": "default", "memory": "default", "nvidia.com/gpu": "a100"},
                    "resourceUsage": {"cpu": "1500m", "memory": "4Gi", "nvidia.com/gpu": "4"},
                    "count": 1,
                }
            ],
        }
    else:
        status["resourceRequests"] = [
            {"name": "main", "resources": {"cpu": "1500m", "memory": "4Gi", "nvidia.com/gpu": "4"}}
        ]
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "Workload",
        "metadata": {
            "name": f"job-{NAME}-5f8e2",
            "namespace": NAMESPACE,
            "uid": "c4a1d7e0-2b3f-4e59-8a6c-1d2e3f4a5b6c",
            "labels": {"kueue.x-k8s.io/job-uid": JOB_UID},
            "ownerReferences": [
                {
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "name": NAME,
                    "uid": JOB_UID,
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
            "finalizers": ["kueue.x-k8s.io/resource-in-use"],
        },
        "spec": {
            "active": True,
            "queueName": "default",
            "priorityClassName": "bud-high",
            "priorityClassSource": "kueue.x-k8s.io/workloadpriorityclass",
            "priority": 100,
            "podSets": [{"name": "main", "count": 1, "template": {}}],
        },
        "status": status,
    }


PENDING_MESSAGE = (
    "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu"
    " in flavor a100, 4 more needed"
)
RESERVED = cond(
    "QuotaReserved", "True", "QuotaReserved", "Quota reserved in ClusterQueue gpu-a100",
    "2024-06-03T09:13:00Z",
)  # fmt: skip
ADMITTED = cond("Admitted", "True", "Admitted", "The workload is admitted", "2024-06-03T09:13:00Z")
PODS_READY = cond(
    "PodsReady", "True", "PodsReady", "All pods reached readiness", "2024-06-03T09:13:41Z"
)
STARTED = {"startTime": "2024-06-03T09:13:01Z", "active": 1, "ready": 1}
SUSPENDED = [cond("Suspended", "True", "JobSuspended", "Job suspended", "2024-06-03T09:12:44Z")]
COMPLETE = cond(
    "Complete", "True", "", "Reached expected number of succeeded pods", "2024-06-03T10:02:11Z"
)
BACKOFF = cond(
    "Failed", "True", "BackoffLimitExceeded", "Job has reached the specified backoff limit",
    "2024-06-03T09:40:05Z",
)  # fmt: skip
DEADLINE = cond(
    "Failed", "True", "DeadlineExceeded", "Job was active longer than specified deadline",
    "2024-06-03T11:13:01Z",
)  # fmt: skip
PREEMPTED_MESSAGE = (
    "Preempted to accommodate a workload (UID: 9d1c...) due to prioritization in the ClusterQueue"
)
EVICTED_PREEMPTED = cond("Evicted", "True", "Preempted", PREEMPTED_MESSAGE, "2024-06-03T09:30:00Z")
EVICTED_TIMEOUT = cond(
    "Evicted", "True", "PodsReadyTimeout", "Exceeded the PodsReady timeout ns/wl",
    "2024-06-03T09:18:00Z",
)  # fmt: skip
REQUEUED_BACKOFF = cond(
    "Requeued", "False", "PodsReadyTimeout", "Exceeded the PodsReady timeout ns/wl",
    "2024-06-03T09:18:00Z",
)  # fmt: skip


def finished(reason: str, message: str, when: str) -> dict[str, Any]:
    return cond("Finished", "True", reason, message, when)


CASES: dict[str, tuple[Any, Any, WorkloadPhase, str, dict[str, str | None]]] = {
    "pending, no quota": (
        job_object(suspend=True, status={"conditions": SUSPENDED}),
        kueue_workload(
            cond("QuotaReserved", "False", "Pending", PENDING_MESSAGE, "2024-06-03T09:12:45Z")
        ),
        WorkloadPhase.QUEUED,
        PENDING_MESSAGE,
        {},
    ),
    "just created, no workload yet": (
        job_object(suspend=True, status={}),
        None,
        WorkloadPhase.QUEUED,
        QUEUED_REASON,
        {},
    ),
    "quota reserved, checks pending": (
        job_object(suspend=True, status={"conditions": SUSPENDED}),
        kueue_workload(
            RESERVED,
            cond("Admitted", "False", "NoChecks", "The workload has no admission", "x"),
            admitted=True,
        ),
        WorkloadPhase.ADMITTED,
        "quota reserved by ClusterQueue gpu-a100, waiting for admission checks",
        {"admitted_at": "2024-06-03T09:13:00Z"},
    ),
    "admitted, job not yet resumed": (
        job_object(suspend=True, status={"conditions": SUSPENDED}),
        kueue_workload(RESERVED, ADMITTED, admitted=True),
        WorkloadPhase.ADMITTED,
        "admitted by ClusterQueue gpu-a100",
        {"admitted_at": "2024-06-03T09:13:00Z"},
    ),
    "admitted, pod pending": (
        job_object(
            suspend=False, status={"startTime": "2024-06-03T09:13:01Z", "active": 1, "ready": 0}
        ),
        kueue_workload(RESERVED, ADMITTED, admitted=True),
        WorkloadPhase.ADMITTED,
        "admitted by ClusterQueue gpu-a100",
        {"admitted_at": "2024-06-03T09:13:00Z"},
    ),
    "running": (
        job_object(suspend=False, status=STARTED),
        kueue_workload(RESERVED, ADMITTED, admitted=True),
        WorkloadPhase.RUNNING,
        "running",
        {"admitted_at": "2024-06-03T09:13:00Z", "started_at": "2024-06-03T09:13:01Z"},
    ),
    "running, pods ready per Kueue": (
        job_object(suspend=False, status={"startTime": "2024-06-03T09:13:01Z", "active": 1}),
        kueue_workload(RESERVED, ADMITTED, PODS_READY, admitted=True),
        WorkloadPhase.RUNNING,
        "running",
        {"admitted_at": "2024-06-03T09:13:00Z", "started_at": "2024-06-03T09:13:01Z"},
    ),
    "running on a cluster without status.ready": (
        job_object(suspend=False, status={"startTime": "2024-06-03T09:13:01Z", "active": 1}),
        kueue_workload(RESERVED, ADMITTED, admitted=True),
        WorkloadPhase.RUNNING,
        "running",
        {"admitted_at": "2024-06-03T09:13:00Z", "started_at": "2024-06-03T09:13:01Z"},
    ),
    "succeeded": (
        job_object(
            suspend=False,
            status={
                "conditions": [COMPLETE],
                "startTime": "2024-06-03T09:13:01Z",
                "completionTime": "2024-06-03T10:02:10Z",
                "succeeded": 1,
                "ready": 0,
            },
        ),
        kueue_workload(
            RESERVED,
            ADMITTED,
            PODS_READY,
            finished(
                "Succeeded", "Reached expected number of succeeded pods", "2024-06-03T10:02:12Z"
            ),
            admitted=True,
        ),
        WorkloadPhase.SUCCEEDED,
        "Reached expected number of succeeded pods",
        {
            "admitted_at": "2024-06-03T09:13:00Z",
            "started_at": "2024-06-03T09:13:01Z",
            "finished_at": "2024-06-03T10:02:10Z",
        },
    ),
    "failed, backoff limit": (
        job_object(
            suspend=False,
            status={
                "conditions": [BACKOFF],
                "startTime": "2024-06-03T09:13:01Z",
                "failed": 1,
                "ready": 0,
            },
        ),
        kueue_workload(
            RESERVED,
            ADMITTED,
            finished(
                "Failed", "Job has reached the specified backoff limit", "2024-06-03T09:40:06Z"
            ),
            admitted=True,
        ),
        WorkloadPhase.FAILED,
        "BackoffLimitExceeded: Job has reached the specified backoff limit",
        {
            "admitted_at": "2024-06-03T09:13:00Z",
            "started_at": "2024-06-03T09:13:01Z",
            "finished_at": "2024-06-03T09:40:05Z",
        },
    ),
    "failed, deadline exceeded": (
        job_object(
            suspend=False,
            status={"conditions": [DEADLINE], "startTime": "2024-06-03T09:13:01Z", "failed": 1},
        ),
        kueue_workload(RESERVED, ADMITTED, admitted=True),  # Kueue has not caught up yet
        WorkloadPhase.FAILED,
        DEADLINE_REASON,
        {
            "admitted_at": "2024-06-03T09:13:00Z",
            "started_at": "2024-06-03T09:13:01Z",
            "finished_at": "2024-06-03T11:13:01Z",
        },
    ),
    "finished per Kueue, Job cleaned up by its TTL": (
        None,
        kueue_workload(
            finished(
                "Failed", "Job has reached the specified backoff limit", "2024-06-03T09:40:06Z"
            )
        ),
        WorkloadPhase.FAILED,
        "Failed: Job has reached the specified backoff limit",
        {"finished_at": "2024-06-03T09:40:06Z"},
    ),
    "evicted, preempted": (
        job_object(suspend=True, status={"conditions": SUSPENDED, "failed": 0}),
        kueue_workload(
            cond("QuotaReserved", "False", "Preempted", PREEMPTED_MESSAGE, "2024-06-03T09:30:02Z"),
            cond("Admitted", "False", "NoReservation", "The workload has no reservation", "x"),
            EVICTED_PREEMPTED,
            cond("Preempted", "True", "InClusterQueue", PREEMPTED_MESSAGE, "2024-06-03T09:30:00Z"),
        ),
        WorkloadPhase.PREEMPTED,
        f"Preempted: {PREEMPTED_MESSAGE}",
        {"finished_at": "2024-06-03T09:30:00Z"},
    ),
    "evicted while still stopping the pods": (
        job_object(
            suspend=True, status={"startTime": "2024-06-03T09:13:01Z", "active": 1, "ready": 1}
        ),
        kueue_workload(RESERVED, ADMITTED, PODS_READY, EVICTED_PREEMPTED, admitted=True),
        WorkloadPhase.PREEMPTED,
        f"Preempted: {PREEMPTED_MESSAGE}",
        {
            "admitted_at": "2024-06-03T09:13:00Z",
            "started_at": "2024-06-03T09:13:01Z",
            "finished_at": "2024-06-03T09:30:00Z",
        },
    ),
    "evicted, pods ready timeout, waiting to requeue": (
        job_object(suspend=True, status={"conditions": SUSPENDED}),
        kueue_workload(EVICTED_TIMEOUT, REQUEUED_BACKOFF),
        WorkloadPhase.PREEMPTED,
        "PodsReadyTimeout: Exceeded the PodsReady timeout ns/wl",
        {"finished_at": "2024-06-03T09:18:00Z"},
    ),
    "evicted, deactivated (Kueue before v1beta2)": (
        job_object(suspend=True, status={"conditions": SUSPENDED}),
        kueue_workload(
            cond(
                "Evicted",
                "True",
                "InactiveWorkload",
                "The workload is deactivated",
                "2024-06-03T09:20:00Z",
            )
        ),
        WorkloadPhase.PREEMPTED,
        "InactiveWorkload: The workload is deactivated",
        {"finished_at": "2024-06-03T09:20:00Z"},
    ),
    "re-admitted after an eviction": (
        job_object(suspend=True, status={"conditions": SUSPENDED}),
        kueue_workload(
            RESERVED,
            ADMITTED,
            cond("Evicted", "False", "QuotaReserved", f"Previously: {PREEMPTED_MESSAGE}", "x"),
            admitted=True,
        ),
        WorkloadPhase.ADMITTED,
        "admitted by ClusterQueue gpu-a100",
        {"admitted_at": "2024-06-03T09:13:00Z"},
    ),
    "job deleted": (
        None,
        kueue_workload(RESERVED, ADMITTED, PODS_READY, admitted=True),
        WorkloadPhase.DELETED,
        DELETED_REASON,
        {"admitted_at": "2024-06-03T09:13:00Z", "started_at": "2024-06-03T09:13:41Z"},
    ),
    "job being deleted": (
        job_object(suspend=False, status=STARTED, deleting="2024-06-03T09:50:00Z"),
        kueue_workload(RESERVED, ADMITTED, PODS_READY, admitted=True),
        WorkloadPhase.DELETED,
        DELETED_REASON,
        {
            "admitted_at": "2024-06-03T09:13:00Z",
            "started_at": "2024-06-03T09:13:01Z",
            "finished_at": "2024-06-03T09:50:00Z",
        },
    ),
    "job and workload gone though expected": (
        None,
        None,
        WorkloadPhase.DELETED,
        DELETED_REASON,
        {},
    ),
}


@pytest.mark.parametrize(("job", "wl", "phase", "reason", "times"), CASES.values(), ids=list(CASES))
def test_observe_maps_every_state(
    job: Any, wl: Any, phase: WorkloadPhase, reason: str, times: dict[str, str | None]
) -> None:
    obs = observe(job, wl, observed_at=NOW, expected=workload())
    assert obs is not None
    assert (obs.job_id, obs.attempt, obs.phase, obs.reason) == (JOB_ID, 1, phase, reason)
    assert (obs.observed_at, obs.workload, obs.placements) == (NOW, NAME, ())
    expected_times = {key: at(value) if value else None for key, value in times.items()}
    assert {
        "admitted_at": obs.admitted_at,
        "started_at": obs.started_at,
        "finished_at": obs.finished_at,
    } == {"admitted_at": None, "started_at": None, "finished_at": None, **expected_times}


def test_times_are_aware_utc() -> None:
    obs = observe(job_object(suspend=False, status=STARTED), None, observed_at=NOW)
    assert obs is not None and obs.started_at is not None
    assert obs.started_at.tzinfo is UTC
    assert obs.started_at == datetime(2024, 6, 3, 9, 13, 1, tzinfo=UTC)


def test_identity_is_read_from_the_job_without_an_expected_workload() -> None:
    obs = observe(job_object(suspend=False, status=STARTED), None, observed_at=NOW)
    assert obs is not None
    assert (obs.job_id, obs.attempt, obs.phase, obs.workload) == (
        JOB_ID,
        1,
        WorkloadPhase.RUNNING,
        NAME,
    )


def test_workload_with_copied_labels_identifies_a_deleted_job() -> None:
    wl = kueue_workload(RESERVED, ADMITTED, admitted=True)
    wl["metadata"]["labels"].update({JOB_ID_LABEL: str(JOB_ID), ATTEMPT_LABEL: "1"})
    obs = observe(None, wl, observed_at=NOW)
    assert obs is not None
    assert (obs.job_id, obs.phase, obs.workload) == (JOB_ID, WorkloadPhase.DELETED, NAME)


def test_nothing_to_identify_is_no_observation() -> None:
    assert observe(None, None, observed_at=NOW) is None
    assert observe(None, kueue_workload(RESERVED), observed_at=NOW) is None
    foreign = {"metadata": {"name": "someone-elses", "labels": {}}, "spec": {}, "status": {}}
    assert observe(foreign, None, observed_at=NOW) is None


def test_a_time_without_offset_is_refused() -> None:
    job = job_object(suspend=False, status={**STARTED, "startTime": "2024-06-03T09:13:01"})
    with pytest.raises(ValueError, match="RFC 3339"):
        observe(job, None, observed_at=NOW)


def test_the_table_lists_every_phase_once() -> None:
    phases = [phase for phase, _ in WORKLOAD_REASONS]
    assert sorted(phases) == sorted(WorkloadPhase)


# --- pod sets: a job wider than one node -------------------------------------------------------


def wide_workload(pods: int = 3) -> Workload:
    return workload(
        resources=Resources(gpu_type="nvidia-a100-80gb", gpu_count=8, cpu_cores=4, pod_count=pods)
    )


def test_a_pod_set_is_an_indexed_job_of_that_many_pods() -> None:
    job = batch_job(wide_workload(3), cluster_id=CLUSTER)
    spec = job["spec"]
    assert (spec["parallelism"], spec["completions"], spec["completionMode"]) == (3, 3, "Indexed")
    [main] = spec["template"]["spec"]["containers"]
    assert main["resources"]["limits"] == {"nvidia.com/gpu": 8}  # per pod, not 24
    assert {"name": POD_COUNT_ENV, "value": "3"} in main["env"]
    single = batch_job(workload(), cluster_id=CLUSTER)["spec"]
    assert (single["parallelism"], single["completions"]) == (1, 1)
    assert "completionMode" not in single


def wide_pod(index: int, node: str, *, ready: bool = True) -> dict[str, Any]:
    return {
        "metadata": {
            "name": f"{NAME}-{index}-x{index}",
            "annotations": {"batch.kubernetes.io/job-completion-index": str(index)},
        },
        "spec": {"nodeName": node},
        "status": {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def test_a_pod_set_runs_once_every_pod_is_ready_and_reports_each_pods_node() -> None:
    job = batch_job(wide_workload(3), cluster_id=CLUSTER)
    job["status"] = {"startTime": "2024-06-03T09:13:01Z", "active": 3, "ready": 2}
    wl = kueue_workload(RESERVED, ADMITTED, admitted=True)
    pods = [wide_pod(2, "gpu-c"), wide_pod(0, "gpu-a"), wide_pod(1, "gpu-b", ready=False)]
    obs = observe(job, wl, observed_at=NOW, pods=pods)
    assert obs is not None and obs.phase is WorkloadPhase.ADMITTED  # 2 of 3 ready: not yet
    job["status"]["ready"] = 3
    pods[2] = wide_pod(1, "gpu-b")
    obs = observe(job, wl, observed_at=NOW, pods=pods)
    assert obs is not None and obs.phase is WorkloadPhase.RUNNING
    assert [(p.node, p.flavor) for p in obs.placements] == [
        ("gpu-a", "a100"),
        ("gpu-b", "a100"),
        ("gpu-c", "a100"),
    ]


def test_the_submission_check_renders_batch_jobs_and_services() -> None:
    """What the WorkloadCheck wired into submissions refuses: what batch_job or service_release
    can't render, with the field first."""
    cluster = ClusterId(uuid.uuid4())
    for job_type in (JobType.BATCH, JobType.SERVICE):
        check_workload(workload(job_type=job_type, spec={"image": "busybox"}), cluster_id=cluster)
        with pytest.raises(ValueError, match=r"^spec\.image: "):
            check_workload(workload(job_type=job_type, spec={}), cluster_id=cluster)
