"""One attempt of a job of several pod sets as a JobSet that Kueue admits, and its state.

A batch/v1 Job is one pod set, so a job with further pod sets (`Resources.pod_sets`) runs as a
JobSet (jobset.x-k8s.io/v1alpha2) created suspended, with the Job's labels (LocalQueue,
WorkloadPriorityClass, the attempt's identity). Each pod set is one replicated job of one
replica, named after the pod set ("main" first), whose Job template is the batch Job's:
parallelism = completions = its pods (Indexed when more than one), no Kubernetes retry, the
same container with that pod set's requests (GPUs only where it asks them) and BUD_POD_SET
naming it, the same grace period. JobSet gives up at the first failed Job (failurePolicy.maxRestarts
0).

Checked against kubernetes-sigs/kueue pkg/controller/jobs/jobset/jobset_controller.go (v0.13):
Kueue makes one Workload per JobSet, owned by it (kind JobSet, jobset.x-k8s.io/v1alpha2), with
one PodSet per replicated job, named as it, of replicas x parallelism pods; it unsuspends the
JobSet on admission, and counts it finished by the JobSet's condition Completed or Failed. The
JobSet controller labels every pod with jobset.sigs.k8s.io/jobset-name and
replicatedjob-name, and counts per replicated job the Jobs whose pods are all ready
(status.replicatedJobsStatus[].ready); status.terminalState is Completed or Failed once done.
`observe_job_set` reads a JobSet and its Workload as `jobs.observe` reads a Job, by the same
table (`WORKLOAD_REASONS`, the JobSet's conditions in place of the Job's).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from adapters.kubernetes.kueue.jobs import (
    DEADLINE_REASON,
    RUNNABLE_TYPES,
    Phase,
    _admitted_at,
    _gpu_flavor,
    _index,
    _ready_pod,
    container,
    grace_period,
    identity_labels,
    job_identity,
    job_labels,
    workload_phase,
)
from adapters.kubernetes.kueue.multikueue import admitted_on
from adapters.kubernetes.kueue.objects import JsonObject
from adapters.kubernetes.kueue.reading import (
    because,
    metadata,
    rfc3339,
    status,
    true_condition,
)
from adapters.kubernetes.kueue.secrets import pod_volumes
from domain.model.ids import ClusterId
from domain.model.job import Placement
from domain.ports.gateways import Workload, WorkloadObservation, WorkloadPhase

JOBSET_GROUP = "jobset.x-k8s.io"
JOBSET_API_VERSION = f"{JOBSET_GROUP}/v1alpha2"
JOBSET_KIND = "JobSet"
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
REPLICATED_JOB_LABEL = "jobset.sigs.k8s.io/replicatedjob-name"
MAX_CHILD_JOB_NAME = 63
"""A replicated job's Jobs are named "<JobSet>-<replicated job>-<index>", a DNS-1123 label."""


def job_set(
    workload: Workload, *, cluster_id: ClusterId, ttl_seconds_after_finished: int = 3600
) -> JsonObject:
    """The suspended JobSet that runs one attempt of a BATCH or TRAINING job of several pod
    sets. Raises ValueError("<field>: <problem>")."""
    if workload.job_type not in RUNNABLE_TYPES:
        raise ValueError(f"job_type: a {workload.job_type.value} job does not run as a JobSet")
    labels = identity_labels(workload, cluster_id)
    replicated: list[JsonObject] = []
    for i, pod_set in enumerate(workload.resources.all_pod_sets):
        if len(f"{workload.name}-{pod_set.name}-0") > MAX_CHILD_JOB_NAME:
            field = "name" if i == 0 else f"resources.pod_sets.{i - 1}.name"
            raise ValueError(
                f"{field}: the JobSet names its Jobs '<job>-<pod set>-0', at most "
                f"{MAX_CHILD_JOB_NAME} characters: shorten the job's name or the pod set's"
            )
        spec: JsonObject = {
            "parallelism": pod_set.pod_count,
            "completions": pod_set.pod_count,
            "backoffLimit": 0,
            "template": {
                "metadata": {"labels": dict(labels)},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [container(workload, pod_set)],
                    **grace_period(workload),
                    **pod_volumes(workload),
                },
            },
        }
        if pod_set.pod_count > 1:
            spec["completionMode"] = "Indexed"
        if workload.max_duration_seconds is not None:
            spec["activeDeadlineSeconds"] = workload.max_duration_seconds
        replicated.append(
            {
                "name": pod_set.name,
                "replicas": 1,
                "template": {"metadata": {"labels": dict(labels)}, "spec": spec},
            }
        )
    return {
        "apiVersion": JOBSET_API_VERSION,
        "kind": JOBSET_KIND,
        "metadata": {
            "name": workload.name,
            "namespace": workload.namespace,
            "labels": job_labels(workload, cluster_id),
        },
        "spec": {
            "suspend": True,
            "failurePolicy": {"maxRestarts": 0},
            "ttlSecondsAfterFinished": ttl_seconds_after_finished,
            "replicatedJobs": replicated,
        },
    }


def owner_job_set_name(workload_obj: Mapping[str, Any] | None) -> str | None:
    """The name of the JobSet a Kueue Workload was made for (its ownerReference)."""
    refs = metadata(workload_obj).get("ownerReferences") or []
    owners = [
        ref
        for ref in refs
        if ref.get("kind") == JOBSET_KIND
        and str(ref.get("apiVersion") or "").startswith(f"{JOBSET_GROUP}/")
    ]
    controller = [ref for ref in owners if ref.get("controller")]
    chosen = (controller or owners)[:1]
    return str(chosen[0]["name"]) if chosen and chosen[0].get("name") else None


def pod_job_set_name(obj: Mapping[str, Any] | None) -> str | None:
    """The JobSet a pod (or a child Job) belongs to, by the label the JobSet controller sets."""
    name = (metadata(obj).get("labels") or {}).get(JOBSET_NAME_LABEL)
    return str(name) if name else None


def observe_job_set(
    job_set_obj: Mapping[str, Any] | None,
    kueue_workload: Mapping[str, Any] | None,
    *,
    observed_at: datetime,
    expected: Workload | None = None,
    pods: Sequence[Mapping[str, Any]] = (),
) -> WorkloadObservation | None:
    """The whole current state of one attempt run as a JobSet (see `jobs.observe`)."""
    identity = job_identity(job_set_obj) or job_identity(kueue_workload)
    if identity is None and expected is not None:
        identity = (expected.job_id, expected.attempt)
    if identity is None or (job_set_obj is None and kueue_workload is None and expected is None):
        return None
    phase, reason, finished_at = _phase(job_set_obj, kueue_workload, pods)
    name = metadata(job_set_obj).get("name") or owner_job_set_name(kueue_workload)
    return WorkloadObservation(
        job_id=identity[0],
        attempt=identity[1],
        phase=phase,
        reason=reason,
        observed_at=observed_at,
        admitted_at=_admitted_at(kueue_workload),
        started_at=_started_at(kueue_workload, pods, phase),
        finished_at=finished_at,
        placements=(
            _placements(job_set_obj, kueue_workload, pods) if phase is WorkloadPhase.RUNNING else ()
        ),
        workload=str(name) if name else (expected.name if expected else None),
        admitted_on=admitted_on(kueue_workload),
    )


def _phase(
    js: Mapping[str, Any] | None, wl: Mapping[str, Any] | None, pods: Sequence[Mapping[str, Any]]
) -> Phase:
    return workload_phase(
        js, wl, lambda: _finished(js, wl), lambda: js is not None and _running(js, wl, pods)
    )


def _finished(
    js: Mapping[str, Any] | None, wl: Mapping[str, Any] | None
) -> tuple[WorkloadPhase, str, datetime | None] | None:
    terminal = status(js).get("terminalState")
    complete, failed = true_condition(js, "Completed"), true_condition(js, "Failed")
    finished = true_condition(wl, "Finished")
    if (
        failed
        or terminal == "Failed"
        or (finished and finished.get("reason") != "Succeeded" and not complete)
    ):
        cause = failed or finished or {"reason": "Failed", "message": "the JobSet failed"}
        at = rfc3339(cause.get("lastTransitionTime"))
        if cause.get("reason") == "DeadlineExceeded":
            return WorkloadPhase.FAILED, DEADLINE_REASON, at
        return WorkloadPhase.FAILED, because(cause), at
    if complete or finished or terminal == "Completed":
        done = complete or finished or {}
        return (
            WorkloadPhase.SUCCEEDED,
            done.get("message") or "succeeded",
            rfc3339(done.get("lastTransitionTime")),
        )
    return None


def _replicated_jobs(js: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    return list(((js or {}).get("spec") or {}).get("replicatedJobs") or [])


def _pods_wanted(js: Mapping[str, Any] | None) -> int:
    total = 0
    for rj in _replicated_jobs(js):
        spec = ((rj.get("template") or {}).get("spec")) or {}
        pods = spec.get("parallelism")
        total += int(rj.get("replicas") or 1) * (pods if isinstance(pods, int) and pods > 0 else 1)
    return max(total, 1)


def _running(
    js: Mapping[str, Any], wl: Mapping[str, Any] | None, pods: Sequence[Mapping[str, Any]]
) -> bool:
    """Kueue's PodsReady; else, once resumed, every replicated job's Jobs ready (the JobSet
    controller counts a Job ready when all its pods are ready or done), or all the pods ready."""
    if true_condition(wl, "PodsReady"):
        return True
    if ((js.get("spec") or {}).get("suspend")) is True:
        return False
    wanted = {str(rj.get("name")): int(rj.get("replicas") or 1) for rj in _replicated_jobs(js)}
    counted = {
        str(s.get("name")): int(s.get("ready") or 0) + int(s.get("succeeded") or 0)
        for s in status(js).get("replicatedJobsStatus") or []
    }
    if wanted and all(counted.get(name, 0) >= n for name, n in wanted.items()):
        return True
    return sum(1 for p in pods if _ready_pod(p)) >= _pods_wanted(js)


def _started_at(
    wl: Mapping[str, Any] | None, pods: Sequence[Mapping[str, Any]], phase: WorkloadPhase
) -> datetime | None:
    if phase in (WorkloadPhase.QUEUED, WorkloadPhase.ADMITTED):
        return None
    ready = true_condition(wl, "PodsReady")
    if ready is not None:
        return rfc3339(ready.get("lastTransitionTime"))
    starts = [t for p in pods if (t := rfc3339(status(p).get("startTime"))) is not None]
    return min(starts) if starts else None


def _placements(
    js: Mapping[str, Any] | None, wl: Mapping[str, Any] | None, pods: Sequence[Mapping[str, Any]]
) -> tuple[Placement, ...]:
    """One placement per running pod: pod set by pod set in the JobSet's order, each in
    completion-index order, with the flavor Kueue admitted that pod set's GPUs to."""
    order = {str(rj.get("name")): i for i, rj in enumerate(_replicated_jobs(js))}
    running = [p for p in pods if _ready_pod(p)] or [
        p for p in pods if status(p).get("phase") == "Running"
    ]
    placed = sorted(
        (order.get(pod_set, len(order)), _index(p), pod_set, str(node))
        for p in running
        if (node := (p.get("spec") or {}).get("nodeName"))
        for pod_set in [str((metadata(p).get("labels") or {}).get(REPLICATED_JOB_LABEL) or "")]
    )
    return tuple(
        Placement(node=node, flavor=_gpu_flavor(wl, pod_set)) for _, _, pod_set, node in placed
    )
