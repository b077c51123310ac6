"""One attempt of a job as a batch/v1 Job that Kueue admits, and the state read back from it.

`batch_job` renders a budcluster Workload (BATCH or TRAINING; a SERVICE never runs to completion,
so it is refused) as a Job created suspended: Kueue's job integration creates a Workload for it
and unsuspends it on admission. budcluster retries attempts itself, so the Job allows no
Kubernetes retry (backoffLimit 0, restartPolicy Never). The spec's container fields become one
container "main": `image` (required), `command` and `args` (lists; numbers and booleans are
written as JSON text, "8", "true"), `env` (a mapping, or a list of {name, value}); anything else
in them raises ValueError naming the field, so nothing is dropped silently. GPUs are requested
as their vendor's extended resource with requests equal to limits (extended resources cannot be
overcommitted); cpu and memory are requests, rendered as the quota objects render them. A job
of several pods (`resources.pod_count` = N) is an Indexed Job with parallelism = completions =
N: Kueue makes one pod set of count N and admits it all or nothing; each pod learns its rank
from JOB_COMPLETION_INDEX (set by Kubernetes) and the size from BUD_POD_COUNT. The grace period a
job declares (`Workload.termination_grace_seconds`) is its pods' terminationGracePeriodSeconds
(`grace_period`), left to the cluster's default (30 s) when it declares none.

`observe` reads the Job and its Kueue Workload together as one `WorkloadObservation`, by the
rules of `WORKLOAD_REASONS`, first match wins. Identity comes from the labels bud.ai/job-id and
bud.ai/attempt, which the Job and its pods carry. Kueue copies a Job's labels to its Workload
only for the keys in its configuration's `integrations.labelKeysToCopy`, so a Workload is tied
to its Job by its controller ownerReference (batch/v1 Job, by name; `owner_job_name`).

Checked against kubernetes-sigs/kueue (apis/kueue/v1beta2/workload_types.go, pkg/constants,
pkg/controller/jobs/job/job_controller.go, pkg/controller/jobframework, pkg/workload) and
kubernetes/api batch/v1/types.go:
- A Job names its LocalQueue in the label kueue.x-k8s.io/queue-name and its
  WorkloadPriorityClass in kueue.x-k8s.io/priority-class. Kueue names the Workload
  "job-<job name>-<5 hex of a SHA-1>" and labels it kueue.x-k8s.io/job-uid.
- Workload conditions: QuotaReserved, Admitted (quota reserved and every admission check
  ready), PodsReady, Evicted (reasons Preempted, PodsReadyTimeout, AdmissionCheck,
  ClusterQueueStopped, LocalQueueStopped, NodeFailures, Deactivated; InactiveWorkload before
  v1beta2), Preempted, Requeued, Finished. The job reconciler sets Finished=True with reason
  Succeeded or Failed and the message of the Job's Complete or Failed condition (older Kueue
  wrote reason JobFinished, so the Job's own condition decides then). Re-reserving quota sets
  Evicted back to False ("Previously: ..."), so Evicted=True means evicted and not re-admitted.
  status.admission.clusterQueue names the ClusterQueue.
- batch/v1 Job: conditions Complete, Failed (reasons BackoffLimitExceeded, DeadlineExceeded,
  PodFailurePolicy...), Suspended; status.startTime is set when the Job is resumed (not while
  suspended) and reset by a suspension, completionTime only on success. status.active counts
  pending pods too, so RUNNING needs a ready pod (status.ready, or the Workload's PodsReady);
  active alone counts only on clusters that do not report status.ready. A Job of N pods
  runs once N are ready (Kueue's PodsReady means all of them).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from adapters.kubernetes.kueue.multikueue import admitted_on
from adapters.kubernetes.kueue.objects import (
    CLUSTER_ID_LABEL,
    KUEUE_GROUP,
    MANAGED_BY,
    MANAGER,
    PRIORITY_CLASS_LABEL,
    JsonObject,
    priority_class_name,
    quantity,
)
from adapters.kubernetes.kueue.reading import (
    because,
    condition,
    metadata,
    rfc3339,
    status,
    true_condition,
)
from adapters.kubernetes.kueue.secrets import container_fields, pod_volumes
from domain.model.ids import ClusterId, JobId
from domain.model.job import JobType, Placement, PodSet
from domain.model.quota import CPU, MEMORY, gpu_resource
from domain.ports.gateways import Workload, WorkloadObservation, WorkloadPhase

JOB_ID_LABEL = "bud.ai/job-id"
ATTEMPT_LABEL = "bud.ai/attempt"
QUEUE_NAME_LABEL = f"{KUEUE_GROUP}/queue-name"
JOB_UID_LABEL = f"{KUEUE_GROUP}/job-uid"
"""Set by Kueue on a Workload: the UID of the Job it was made for."""
BATCH_API_VERSION = "batch/v1"
CONTAINER_NAME = "main"
POD_COUNT_ENV = "BUD_POD_COUNT"
POD_SET_ENV = "BUD_POD_SET"
"""A pod of a job of several pod sets learns which one it is from this variable."""
NON_GPU_RESOURCES = frozenset({CPU, MEMORY, "pods", "ephemeral-storage"})
RUNNABLE_TYPES = frozenset({JobType.BATCH, JobType.TRAINING})

QUEUED_REASON = "queued in Kueue"
DELETED_REASON = "deleted outside budcluster"
DEADLINE_REASON = "deadline exceeded"

WORKLOAD_REASONS: tuple[tuple[WorkloadPhase, str], ...] = (
    (
        WorkloadPhase.SUCCEEDED,
        "Workload Finished=True reason Succeeded, or Job Complete=True; reason: the message",
    ),
    (
        WorkloadPhase.FAILED,
        "Workload Finished=True otherwise, or Job Failed=True; reason 'deadline exceeded' for"
        " DeadlineExceeded, else '<Job reason>: <message>'",
    ),
    (
        WorkloadPhase.DELETED,
        "the Job is gone or has a deletionTimestamp; reason 'deleted outside budcluster'",
    ),
    (
        WorkloadPhase.PREEMPTED,
        "Workload Evicted=True; reason '<Evicted reason>: <message>' (Preempted,"
        " PodsReadyTimeout, Deactivated, InactiveWorkload, ClusterQueueStopped...)",
    ),
    (
        WorkloadPhase.RUNNING,
        "Job not suspended with a ready or succeeded pod, or Workload PodsReady=True",
    ),
    (
        WorkloadPhase.ADMITTED,
        "Workload Admitted=True, or QuotaReserved=True while admission checks are pending",
    ),
    (
        WorkloadPhase.QUEUED,
        "anything else; reason the QuotaReserved=False message, else 'queued in Kueue'",
    ),
)
"""How `observe` maps a Job and its Workload to a phase: the first matching row wins."""


# --- the Job ----------------------------------------------------------------------------------


def batch_job(
    workload: Workload, *, cluster_id: ClusterId, ttl_seconds_after_finished: int = 3600
) -> JsonObject:
    """The suspended batch/v1 Job that runs one attempt of a BATCH or TRAINING job."""
    if workload.job_type not in RUNNABLE_TYPES:
        raise ValueError(f"job_type: a {workload.job_type.value} job does not run as a batch Job")
    if workload.resources.pod_sets:
        raise ValueError("resources.pod_sets: a job of several pod sets runs as a JobSet")
    labels = identity_labels(workload, cluster_id)
    pods = workload.resources.pod_count
    spec: JsonObject = {
        "suspend": True,
        "parallelism": pods,
        "completions": pods,
        "backoffLimit": 0,
        "ttlSecondsAfterFinished": ttl_seconds_after_finished,
        "template": {
            "metadata": {"labels": dict(labels)},
            "spec": {
                "restartPolicy": "Never",
                "containers": [container(workload)],
                **grace_period(workload),
                **pod_volumes(workload),
            },
        },
    }
    if pods > 1:
        spec["completionMode"] = "Indexed"
    if workload.max_duration_seconds is not None:
        spec["activeDeadlineSeconds"] = workload.max_duration_seconds
    return {
        "apiVersion": BATCH_API_VERSION,
        "kind": "Job",
        "metadata": {
            "name": workload.name,
            "namespace": workload.namespace,
            "labels": job_labels(workload, cluster_id),
        },
        "spec": spec,
    }


def job_labels(workload: Workload, cluster_id: ClusterId) -> dict[str, str]:
    """The labels of the Job: its attempt's, and the LocalQueue and WorkloadPriorityClass
    Kueue admits it by (Kueue's stay off its pods)."""
    return {
        **identity_labels(workload, cluster_id),
        QUEUE_NAME_LABEL: workload.queue_name,
        PRIORITY_CLASS_LABEL: priority_class_name(workload.priority),
    }


def identity_labels(workload: Workload, cluster_id: ClusterId) -> dict[str, str]:
    """The labels the Job and its pods carry to name their attempt."""
    return {
        MANAGED_BY: MANAGER,
        CLUSTER_ID_LABEL: str(cluster_id),
        JOB_ID_LABEL: str(workload.job_id),
        ATTEMPT_LABEL: str(workload.attempt),
    }


def grace_period(workload: Workload) -> JsonObject:
    """The pod spec field that gives the workload's containers their grace period between
    SIGTERM and being killed; none (the cluster's default) when it declares none."""
    seconds = workload.termination_grace_seconds
    return {} if seconds is None else {"terminationGracePeriodSeconds": seconds}


def container(workload: Workload, pod_set: PodSet | None = None) -> JsonObject:
    """The container "main" of the workload's pods; of one of its pod sets, given `pod_set`
    (the job's own by default)."""
    pod_set = pod_set or workload.resources.all_pod_sets[0]
    spec = workload.spec
    image = spec.get("image")
    if not isinstance(image, str) or not image.strip() or len(image) > 1024:
        raise ValueError("spec.image: a container image is needed to run on a Kubernetes cluster")
    container: JsonObject = {"name": CONTAINER_NAME, "image": image}
    for key in ("command", "args"):
        if spec.get(key) is not None:
            container[key] = _words(spec[key], f"spec.{key}")
    env = _env(spec["env"]) if spec.get("env") is not None else []
    if pod_set.pod_count > 1:
        env = [e for e in env if e["name"] != POD_COUNT_ENV]
        env.append({"name": POD_COUNT_ENV, "value": str(pod_set.pod_count)})
    if workload.resources.pod_sets:
        env = [e for e in env if e["name"] != POD_SET_ENV]
        env.append({"name": POD_SET_ENV, "value": pod_set.name})
    if env:
        container["env"] = env
    container.update(container_fields(workload))
    container["resources"] = pod_resources(workload, pod_set)
    return container


def _text(value: object, field: str) -> str:
    """A scalar as a container string: text as it is, numbers and booleans as JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool | int | float):
        return json.dumps(value)
    raise ValueError(f"{field}: expected text or a number, got {type(value).__name__}")


def _words(value: object, field: str) -> list[str]:
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise ValueError(f"{field}: expected a list of words")
    return [_text(word, f"{field}[{i}]") for i, word in enumerate(value)]


def _env(value: object) -> list[JsonObject]:
    if isinstance(value, Mapping):
        return [_env_var(name, v, f"spec.env.{name}") for name, v in value.items()]
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise ValueError("spec.env: expected a mapping or a list of {name, value}")
    return [_env_entry(entry, f"spec.env[{i}]") for i, entry in enumerate(value)]


def _env_entry(entry: object, field: str) -> JsonObject:
    if not isinstance(entry, Mapping) or set(entry) - {"name", "value"}:
        raise ValueError(f"{field}: expected {{name, value}}")
    return _env_var(entry.get("name"), entry.get("value", ""), field)


def _env_var(name: object, value: object, field: str) -> JsonObject:
    if not isinstance(name, str) or not name:
        raise ValueError(f"{field}: the variable needs a name")
    return {"name": name, "value": _text(value, field)}


def pod_resources(workload: Workload, pod_set: PodSet | None = None) -> JsonObject:
    """A pod's requests (and GPU limits) for the workload's resources (of `pod_set`, one of its
    pod sets: the job's own by default), GPUs of the job's GPU type."""
    pod = pod_set or workload.resources.all_pod_sets[0]
    requests: JsonObject = {
        CPU: quantity(CPU, pod.cpu_cores),
        MEMORY: quantity(MEMORY, pod.memory_gb),
    }
    limits: JsonObject = {}
    if pod.gpu_count > 0:
        gpu = gpu_resource(workload.resources.gpu_type)
        requests[gpu] = limits[gpu] = pod.gpu_count
    return {"requests": requests, "limits": limits} if limits else {"requests": requests}


# --- identity ---------------------------------------------------------------------------------


def job_identity(obj: Mapping[str, Any] | None) -> tuple[JobId, int] | None:
    """(job id, attempt) from an object's bud.ai labels (a Job, a pod, or a Workload when
    Kueue copies them); None when they are missing or malformed."""
    labels = _labels(obj)
    try:
        job_id = JobId(uuid.UUID(labels[JOB_ID_LABEL]))
        attempt = int(labels[ATTEMPT_LABEL])
    except (KeyError, ValueError, TypeError, AttributeError):
        return None
    return (job_id, attempt) if attempt >= 0 else None


def owner_job_name(workload_obj: Mapping[str, Any] | None) -> str | None:
    """The name of the batch/v1 Job a Kueue Workload was made for (its ownerReference)."""
    refs = metadata(workload_obj).get("ownerReferences") or []
    jobs = [
        ref
        for ref in refs
        if ref.get("kind") == "Job" and ref.get("apiVersion") == BATCH_API_VERSION
    ]
    controller = [ref for ref in jobs if ref.get("controller")]
    chosen = (controller or jobs)[:1]
    return str(chosen[0]["name"]) if chosen and chosen[0].get("name") else None


def pod_job_name(pod: Mapping[str, Any] | None) -> str | None:
    """The batch/v1 Job a pod belongs to: the label the Job controller sets, else its owner."""
    labels = _labels(pod)
    name = labels.get("batch.kubernetes.io/job-name") or labels.get("job-name")
    if name:
        return str(name)
    refs = metadata(pod).get("ownerReferences") or []
    owner = next((r for r in refs if r.get("kind") == "Job" and r.get("name")), None)
    return str(owner["name"]) if owner else None


def _labels(obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return ((obj or {}).get("metadata") or {}).get("labels") or {}


# --- observation ------------------------------------------------------------------------------


def observe(
    job_obj: Mapping[str, Any] | None,
    kueue_workload: Mapping[str, Any] | None,
    *,
    observed_at: datetime,
    expected: Workload | None = None,
    pods: Sequence[Mapping[str, Any]] = (),
) -> WorkloadObservation | None:
    """The whole current state of one attempt, from its Job and its Kueue Workload (either may
    be None), and the Job's pods. `expected` is the attempt budcluster handed over: with it,
    nothing left on the cluster reads as DELETED. None when there is nothing to identify."""
    identity = job_identity(job_obj) or job_identity(kueue_workload)
    if identity is None and expected is not None:
        identity = (expected.job_id, expected.attempt)
    if identity is None or (job_obj is None and kueue_workload is None and expected is None):
        return None
    phase, reason, finished_at = _phase(job_obj, kueue_workload, pods)
    return WorkloadObservation(
        job_id=identity[0],
        attempt=identity[1],
        phase=phase,
        reason=reason,
        observed_at=observed_at,
        admitted_at=_admitted_at(kueue_workload),
        started_at=_started_at(job_obj, kueue_workload, phase),
        finished_at=finished_at,
        placements=_placements(kueue_workload, pods) if phase is WorkloadPhase.RUNNING else (),
        workload=_name(job_obj, kueue_workload, expected),
        admitted_on=admitted_on(kueue_workload),
    )


Phase = tuple[WorkloadPhase, str, datetime | None]
"""(phase, reason, finished_at)"""


def _phase(
    job: Mapping[str, Any] | None,
    wl: Mapping[str, Any] | None,
    pods: Sequence[Mapping[str, Any]] = (),
) -> Phase:
    """(phase, reason, finished_at) by the rows of WORKLOAD_REASONS, in order."""
    return workload_phase(
        job,
        wl,
        lambda: _finished(job, wl),
        lambda: (
            job is not None
            and (_running(job, wl) or sum(1 for p in pods if _ready_pod(p)) >= _parallelism(job))
        ),
    )


def workload_phase(
    owner: Mapping[str, Any] | None,
    wl: Mapping[str, Any] | None,
    finished: Callable[[], Phase | None],
    running: Callable[[], bool],
) -> Phase:
    """The phase of a Kueue Workload and the object that owns it (a batch Job, a JobSet) by
    the rows of WORKLOAD_REASONS, in order; `finished` and `running` read the owner's own
    status, each asked only when its row is reached."""
    if done := finished():
        return done
    if owner is None or metadata(owner).get("deletionTimestamp"):
        return (
            WorkloadPhase.DELETED,
            DELETED_REASON,
            rfc3339(metadata(owner).get("deletionTimestamp")),
        )
    if evicted := true_condition(wl, "Evicted"):
        return WorkloadPhase.PREEMPTED, because(evicted), rfc3339(evicted.get("lastTransitionTime"))
    if running():
        return WorkloadPhase.RUNNING, "running", None
    if admitted := _admission_reason(wl):
        return WorkloadPhase.ADMITTED, admitted, None
    pending = condition(wl, "QuotaReserved")
    message = pending.get("message") if pending and pending.get("status") == "False" else None
    return WorkloadPhase.QUEUED, message or QUEUED_REASON, None


def _finished(
    job: Mapping[str, Any] | None, wl: Mapping[str, Any] | None
) -> tuple[WorkloadPhase, str, datetime | None] | None:
    complete, failed = true_condition(job, "Complete"), true_condition(job, "Failed")
    finished = true_condition(wl, "Finished")
    if failed or (finished and finished.get("reason") != "Succeeded" and not complete):
        cause = failed or finished or {}
        at = rfc3339(cause.get("lastTransitionTime"))
        if cause.get("reason") == "DeadlineExceeded":
            return WorkloadPhase.FAILED, DEADLINE_REASON, at
        return WorkloadPhase.FAILED, because(cause), at
    if complete or finished:
        done = complete or finished or {}
        at = rfc3339(status(job).get("completionTime") or done.get("lastTransitionTime"))
        return WorkloadPhase.SUCCEEDED, done.get("message") or "succeeded", at
    return None


def _parallelism(job: Mapping[str, Any]) -> int:
    value = (job.get("spec") or {}).get("parallelism")
    return value if isinstance(value, int) and value > 0 else 1


def _running(job: Mapping[str, Any], wl: Mapping[str, Any] | None) -> bool:
    if true_condition(wl, "PodsReady"):
        return True
    if (job.get("spec") or {}).get("suspend"):
        return False
    state = status(job)
    pods = state.get("ready") if "ready" in state else state.get("active")
    return (pods or 0) >= _parallelism(job) or bool(state.get("succeeded"))


def _ready_pod(pod: Mapping[str, Any]) -> bool:
    return not metadata(pod).get("deletionTimestamp") and true_condition(pod, "Ready") is not None


def _placements(
    wl: Mapping[str, Any] | None, pods: Sequence[Mapping[str, Any]]
) -> tuple[Placement, ...]:
    """The nodes of the running pods (one placement per pod, in completion-index order), with
    the flavor Kueue admitted their GPUs to."""
    running = [p for p in pods if _ready_pod(p)] or [
        p for p in pods if status(p).get("phase") == "Running"
    ]
    placed = sorted(
        (_index(p), str(node)) for p in running if (node := (p.get("spec") or {}).get("nodeName"))
    )
    if not placed:
        return ()
    return tuple(Placement(node=node, flavor=_gpu_flavor(wl)) for _, node in placed)


def _gpu_flavor(wl: Mapping[str, Any] | None, pod_set: str | None = None) -> str | None:
    """The ResourceFlavor Kueue assigned the pods' GPUs (status.admission.podSetAssignments:
    the one named `pod_set`, else the first; its flavors, one per resource); without GPUs, the
    one flavor of all resources."""
    assignments = (status(wl).get("admission") or {}).get("podSetAssignments") or [{}]
    named = [a for a in assignments if a and pod_set is not None and a.get("name") == pod_set]
    by_resource = ((named or assignments)[0] or {}).get("flavors") or {}
    gpu = {str(f) for r, f in by_resource.items() if r not in NON_GPU_RESOURCES}
    flavors = gpu or {str(f) for f in by_resource.values()}
    return flavors.pop() if len(flavors) == 1 else None


def _index(pod: Mapping[str, Any]) -> tuple[int, str]:
    """A pod's completion index (Indexed Jobs annotate it), then its name."""
    meta = metadata(pod)
    raw = (meta.get("annotations") or {}).get("batch.kubernetes.io/job-completion-index")
    try:
        index = int(raw) if raw is not None else 0
    except (TypeError, ValueError):
        index = 0
    return index, str(meta.get("name") or "")


def _admission_reason(wl: Mapping[str, Any] | None) -> str | None:
    queue = (status(wl).get("admission") or {}).get("clusterQueue")
    where = f" by ClusterQueue {queue}" if queue else ""
    if true_condition(wl, "Admitted"):
        return f"admitted{where}"
    if true_condition(wl, "QuotaReserved"):
        return f"quota reserved{where}, waiting for admission checks"
    return None


def _admitted_at(wl: Mapping[str, Any] | None) -> datetime | None:
    cond = true_condition(wl, "Admitted") or true_condition(wl, "QuotaReserved")
    return rfc3339(cond.get("lastTransitionTime")) if cond else None


def _started_at(
    job: Mapping[str, Any] | None, wl: Mapping[str, Any] | None, phase: WorkloadPhase
) -> datetime | None:
    if phase in (WorkloadPhase.QUEUED, WorkloadPhase.ADMITTED):
        return None
    ready = true_condition(wl, "PodsReady")
    return rfc3339(status(job).get("startTime") or (ready or {}).get("lastTransitionTime"))


def _name(
    job: Mapping[str, Any] | None, wl: Mapping[str, Any] | None, expected: Workload | None
) -> str | None:
    name = metadata(job).get("name") or owner_job_name(wl)
    return str(name) if name else (expected.name if expected else None)
