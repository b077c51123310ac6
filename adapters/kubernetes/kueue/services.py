"""One attempt of a SERVICE job as a Helm release whose pods Kueue admits, and its state read
back from those pods.

`service_release` says what to install: a DOCKER service runs the chart budcluster ships
(adapters/helm/charts/bud-service: one Deployment, and a Service when `spec.port` is set) with
the container fields a batch Job takes (`image`, `command`, `args`, `env`; kueue/jobs.py
checks them) plus `replicas` and `port`; a HELM or MODEL service installs `spec.chart` (a chart
reference Helm understands: "repo/name", an OCI URL, or a name with `spec.repo`), at
`spec.chart_version` when given, with `spec.values`. The release is named after the attempt
(`Workload.name`), in the tenant's namespace, so a repeated hand-over finds it there.

Kueue admits pods through its pod integration (Deployments are managed pod by pod): a pod
labelled kueue.x-k8s.io/queue-name is created with the scheduling gate
kueue.x-k8s.io/admission, gets a Workload of its own (owned by the pod), and is ungated on
admission. So the queue and priority-class labels, and budcluster's identity labels
(bud.ai/job-id, bud.ai/attempt, bud.ai/release), go on the pods: the shipped chart puts
`podLabels` on the Deployment and its pod template; a HELM or MODEL chart is given the same
labels as `podLabels`, the value name of `helm create`'s scaffold and of Bitnami's charts,
merged over the user's. A chart that does not put `podLabels` on its pods runs outside Kueue,
and budcluster can't see its pods. The grace period the job declares goes to every chart as the
value `terminationGracePeriodSeconds` (Bitnami's name for it), for the chart to put on its pod
template, merged over the user's; none when it declares none.

`observe_service` reads the attempt's pods and their Kueue Workloads as one
`WorkloadObservation`, by the rows of `SERVICE_REASONS`, with its live pods' container restarts
(restartCount, and the last lastState.terminated.finishedAt). A service never finishes: it runs
until cancelled; its pods all gone means the release was removed outside budcluster.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from adapters.kubernetes.kueue.jobs import QUEUED_REASON, container, identity_labels, job_identity
from adapters.kubernetes.kueue.models import GRACE_VALUE, is_model_replica, model_release
from adapters.kubernetes.kueue.objects import PRIORITY_CLASS_LABEL, JsonObject, priority_class_name
from adapters.kubernetes.kueue.reading import (
    because,
    condition,
    metadata,
    rfc3339,
    status,
    true_condition,
)
from adapters.kubernetes.kueue.secrets import chart_values
from domain.model.ids import ClusterId, JobId
from domain.model.job import DeploymentType, JobType, Placement
from domain.ports.gateways import Workload, WorkloadObservation, WorkloadPhase
from domain.ports.helm import SHIPPED_CHART, ReleaseSpec

RELEASE_LABEL = "bud.ai/release"
ADMISSION_GATE = "kueue.x-k8s.io/admission"
"""The scheduling gate Kueue puts on a pod it manages until the pod's Workload is admitted."""
MAX_REPLICAS = 100
STUCK_REASONS = frozenset(
    {
        "CrashLoopBackOff",
        "ImagePullBackOff",
        "ErrImagePull",
        "InvalidImageName",
        "CreateContainerConfigError",
        "CreateContainerError",
        "RunContainerError",
    }
)

SERVICE_REASONS: tuple[tuple[WorkloadPhase, str], ...] = (
    (
        WorkloadPhase.PREEMPTED,
        "a pod's Workload Evicted=True and no pod is ready; reason '<reason>: <message>'",
    ),
    (
        WorkloadPhase.DELETED,
        "every pod of the attempt was deleted after one was seen; 'deleted outside budcluster'",
    ),
    (WorkloadPhase.RUNNING, "a pod is Ready (its node is the placement)"),
    (
        WorkloadPhase.ADMITTED,
        "a pod's Workload Admitted=True, or a pod without Kueue's admission gate; reason"
        " 'admitted, not ready: <container waiting reason>: <message>' when a container is"
        " stuck (CrashLoopBackOff, ImagePullBackOff...)",
    ),
    (
        WorkloadPhase.QUEUED,
        "anything else; reason the QuotaReserved=False message, else 'queued in Kueue'",
    ),
)
"""How `observe_service` maps an attempt's pods to a phase: the first matching row wins."""


def service_release(workload: Workload, *, cluster_id: ClusterId) -> ReleaseSpec:
    """The Helm release that runs one attempt of a SERVICE job. Raises ValueError naming the
    spec field that can't be used."""
    if workload.job_type is not JobType.SERVICE:
        raise ValueError(f"job_type: a {workload.job_type.value} job is not a Helm release")
    pod_labels = {
        **identity_labels(workload, cluster_id),
        RELEASE_LABEL: workload.name,
        "kueue.x-k8s.io/queue-name": workload.queue_name,
        PRIORITY_CLASS_LABEL: priority_class_name(workload.priority),
    }
    spec = workload.spec
    if workload.deployment_type is DeploymentType.MODEL and is_model_replica(workload):
        chart = spec.get("chart")
        return model_release(
            workload,
            labels=identity_labels(workload, cluster_id),
            pod_labels=pod_labels,
            chart=None if chart is None else _chart(chart, workload),
            repo=_optional_text(spec.get("repo"), "spec.repo"),
            version=_optional_text(spec.get("chart_version"), "spec.chart_version"),
        )
    if workload.deployment_type is DeploymentType.DOCKER:
        main = container(workload)
        values: JsonObject = {
            "image": main["image"],
            "command": main.get("command", []),
            "args": main.get("args", []),
            "env": main.get("env", []),
            "resources": main["resources"],
            "replicas": _replicas(spec.get("replicas", 1)),
            "port": _port(spec.get("port")),
            "labels": identity_labels(workload, cluster_id),
            "podLabels": pod_labels,
            **grace_value(workload),
            **chart_values(workload),
        }
        return ReleaseSpec(workload.name, workload.namespace, SHIPPED_CHART, values)
    chart = _chart(spec.get("chart"), workload)
    user_values = spec.get("values", {})
    if not isinstance(user_values, Mapping):
        raise ValueError("spec.values: expected a mapping of Helm values")
    own = user_values.get("podLabels", {})
    if not isinstance(own, Mapping):
        raise ValueError("spec.values.podLabels: expected a mapping of labels")
    merged = {
        **user_values,
        "podLabels": {**own, **pod_labels},
        **grace_value(workload),
        **chart_values(workload),
    }
    return ReleaseSpec(
        workload.name,
        workload.namespace,
        chart,
        merged,
        repo=_optional_text(spec.get("repo"), "spec.repo"),
        version=_optional_text(spec.get("chart_version"), "spec.chart_version"),
    )


def grace_value(workload: Workload) -> JsonObject:
    """The chart value that gives the workload's pods their grace period (none declared: none,
    and the chart's or the cluster's default holds)."""
    seconds = workload.termination_grace_seconds
    return {} if seconds is None else {GRACE_VALUE: seconds}


def _chart(value: object, workload: Workload) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > 1024:
        raise ValueError(
            f"spec.chart: a {workload.deployment_type.value} service needs a Helm chart reference"
        )
    return value.strip()


def _replicas(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_REPLICAS:
        raise ValueError(f"spec.replicas: expected a whole number from 1 to {MAX_REPLICAS}")
    return value


def _port(value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 65535:
        raise ValueError("spec.port: expected a port number from 1 to 65535")
    return value


def _optional_text(value: object, name: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip() or len(value) > 1024:
        raise ValueError(f"{name}: expected text")
    return value.strip()


def release_prefix(job_id: object, attempt: int) -> str:
    """Every release of one attempt (each hand-over of it) starts with this."""
    return f"bud-{str(job_id).replace('-', '')[:20]}-a{attempt}"


def is_release_of(name: str, job_id: object, attempt: int) -> bool:
    prefix = release_prefix(job_id, attempt)
    return name == prefix or (name.startswith(prefix + "g") and name[len(prefix) + 1 :].isdigit())


def hand_over_of(name: str, job_id: object) -> tuple[int, int] | None:
    """(attempt, generation) of a release of the job's, by its name; None if not the job's."""
    stem = release_prefix(job_id, 0)[:-1]  # "bud-<id>-a"
    if not name.startswith(stem):
        return None
    attempt, _, generation = name[len(stem) :].partition("g")
    if not attempt.isdigit() or not (generation.isdigit() or generation == ""):
        return None
    return int(attempt), int(generation or 0)


def superseded_by(name: str, workload: Workload) -> bool:
    """`name` is a release of an earlier hand-over of the workload's job (an attempt retried,
    or taken back, since)."""
    theirs, ours = hand_over_of(name, workload.job_id), hand_over_of(workload.name, workload.job_id)
    return theirs is not None and ours is not None and theirs < ours


# --- observation ------------------------------------------------------------------------------


def owner_pod(workload_obj: Mapping[str, Any] | None) -> str | None:
    """The pod a Kueue Workload was made for (its controller ownerReference, kind Pod)."""
    refs = metadata(workload_obj).get("ownerReferences") or []
    pods = [r for r in refs if r.get("kind") == "Pod" and r.get("apiVersion") == "v1"]
    return str(pods[0]["name"]) if pods and pods[0].get("name") else None


def is_service_pod(pod: Mapping[str, Any] | None) -> bool:
    return job_identity(pod) is not None and RELEASE_LABEL in (metadata(pod).get("labels") or {})


def observe_service(
    identity: tuple[JobId, int],
    pods: Sequence[Mapping[str, Any]],
    workloads: Mapping[str, Mapping[str, Any]],
    *,
    observed_at: datetime,
    seen_before: bool = False,
    evicted: Mapping[str, Any] | None = None,
    release: str | None = None,
) -> WorkloadObservation:
    """The whole current state of one service attempt (job id, attempt) from its pods (those
        still there) and their Kueue Workloads (by pod name). `seen_before`: pods of it were seen,
    so none left means deleted; `evicted`: the last Evicted condition seen on one of its
    Workloads; `release`: its release's name, when no pod is left to tell it."""
    live = [p for p in pods if not metadata(p).get("deletionTimestamp")]
    names = [(metadata(p).get("labels") or {}).get(RELEASE_LABEL) for p in pods]
    name = next((str(n) for n in names if n), release)
    reasons = [true_condition(workloads.get(str(metadata(p).get("name"))), "Evicted") for p in pods]
    evicted = next((r for r in reasons if r), None) or evicted
    ready = [p for p in live if true_condition(p, "Ready")]
    restarts, last_restart_at = container_restarts(live)

    def seen(phase: WorkloadPhase, reason: str, **times: Any) -> WorkloadObservation:
        return WorkloadObservation(
            job_id=identity[0],
            attempt=identity[1],
            phase=phase,
            reason=reason,
            observed_at=observed_at,
            workload=name,
            restarts=restarts,
            last_restart_at=last_restart_at,
            **times,
        )

    if evicted and not ready:
        at = rfc3339(evicted.get("lastTransitionTime"))
        return seen(WorkloadPhase.PREEMPTED, because(evicted), finished_at=at)
    if not live and seen_before:
        return seen(WorkloadPhase.DELETED, "deleted outside budcluster", finished_at=observed_at)
    admitted_at = min((t for p in live if (t := _admitted(p, workloads)) is not None), default=None)
    if ready:
        first = min(ready, key=lambda p: _ready_at(p) or observed_at)
        node = (first.get("spec") or {}).get("nodeName")
        return seen(
            WorkloadPhase.RUNNING,
            f"running ({len(ready)} of {len(live)} pods ready)",
            admitted_at=admitted_at,
            started_at=_ready_at(first),
            placements=(Placement(node=str(node)),) if node else (),
        )
    if any(_admitted_pod(p, workloads) for p in live):
        stuck = next((s for p in live if (s := _stuck(p))), None)
        return seen(
            WorkloadPhase.ADMITTED,
            f"admitted, not ready: {stuck}" if stuck else "admitted, starting",
            admitted_at=admitted_at,
        )
    pending = [
        c.get("message")
        for p in live
        if (c := condition(workloads.get(str(metadata(p).get("name"))), "QuotaReserved"))
        and c.get("status") == "False"
    ]
    return seen(WorkloadPhase.QUEUED, next((m for m in pending if m), None) or QUEUED_REASON)


def container_restarts(pods: Sequence[Mapping[str, Any]]) -> tuple[int | None, datetime | None]:
    """The pods' containers' restarts (restartCount, summed) and when one last ended before it
    was restarted (lastState.terminated.finishedAt); (None, None) without pods."""
    if not pods:
        return None, None
    states = [c for p in pods for c in status(p).get("containerStatuses") or []]
    count = sum(int(c.get("restartCount") or 0) for c in states)
    ended = [
        at
        for c in states
        if (at := rfc3339(((c.get("lastState") or {}).get("terminated") or {}).get("finishedAt")))
    ]
    return count, max(ended, default=None)


def _admitted_pod(pod: Mapping[str, Any], workloads: Mapping[str, Mapping[str, Any]]) -> bool:
    workload = workloads.get(str(metadata(pod).get("name")))
    if true_condition(workload, "Admitted"):
        return True
    gates = (pod.get("spec") or {}).get("schedulingGates") or []
    return workload is None and not any(g.get("name") == ADMISSION_GATE for g in gates)


def _admitted(
    pod: Mapping[str, Any], workloads: Mapping[str, Mapping[str, Any]]
) -> datetime | None:
    cond = true_condition(workloads.get(str(metadata(pod).get("name"))), "Admitted")
    return rfc3339(cond.get("lastTransitionTime")) if cond else None


def _ready_at(pod: Mapping[str, Any]) -> datetime | None:
    cond = true_condition(pod, "Ready")
    return rfc3339((cond or {}).get("lastTransitionTime") or status(pod).get("startTime"))


def _stuck(pod: Mapping[str, Any]) -> str | None:
    for state in status(pod).get("containerStatuses") or []:
        waiting = (state.get("state") or {}).get("waiting") or {}
        if waiting.get("reason") in STUCK_REASONS:
            return because(waiting)
    return None
