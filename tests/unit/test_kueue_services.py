"""SERVICE jobs as Helm releases: the values budcluster gives a chart, the shipped chart
rendered by a real Helm engine (helm-python-sdk), and the rows of SERVICE_REASONS."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import helm_python
import pytest
import yaml

from adapters.helm.releases import SHIPPED_CHART_PATH, PyHelmReleases
from adapters.kubernetes.kueue.services import (
    ADMISSION_GATE,
    RELEASE_LABEL,
    SERVICE_REASONS,
    is_release_of,
    observe_service,
    service_release,
)
from domain.model.job import DeploymentType, JobPriority, JobType, Placement, Resources
from domain.ports.gateways import GatewayUnavailable, WorkloadPhase
from domain.ports.helm import SHIPPED_CHART, ReleaseSpec
from tests.unit.test_kueue_jobs import CLUSTER, JOB_ID, NAME, NAMESPACE, NOW, at, workload


def service(**changes: Any) -> Any:
    base = workload(
        job_type=JobType.SERVICE,
        deployment_type=DeploymentType.DOCKER,
        priority=JobPriority.NORMAL,
        resources=Resources(gpu_type="nvidia-h100-80gb", gpu_count=2),
        max_duration_seconds=None,
        spec={
            "image": "vllm/vllm-openai:v0.6",
            "args": ["--model", "meta-llama/Llama-3-8B", "--tensor-parallel-size", 2],
            "env": {"HF_HOME": "/cache"},
            "port": 8000,
            "replicas": 2,
        },
    )
    return replace(base, **changes)


def rendered(values: dict[str, Any]) -> dict[str, dict[str, Any]]:
    chart = helm_python.Chart.load(SHIPPED_CHART_PATH)
    out = chart.render(values, name=NAME, namespace=NAMESPACE, is_install=True)
    docs = [d for text in out.values() for d in yaml.safe_load_all(text) if d]
    return {d["kind"]: d for d in docs}


# --- the release ---------------------------------------------------------------------------------


def test_a_docker_service_renders_the_shipped_chart_with_kueue_labels_on_its_pods() -> None:
    release = service_release(service(), cluster_id=CLUSTER)
    assert (release.name, release.namespace, release.chart) == (NAME, NAMESPACE, SHIPPED_CHART)
    assert release.shipped
    objects = rendered(dict(release.values))
    assert set(objects) == {"Deployment", "Service"}
    deployment = objects["Deployment"]
    assert deployment["metadata"]["name"] == NAME
    assert deployment["metadata"]["namespace"] == NAMESPACE
    assert deployment["spec"]["replicas"] == 2
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert pod_labels["kueue.x-k8s.io/queue-name"] == "default"
    assert pod_labels["kueue.x-k8s.io/priority-class"] == "bud-normal"
    assert pod_labels["bud.ai/job-id"] == str(JOB_ID) and pod_labels["bud.ai/attempt"] == "1"
    assert pod_labels[RELEASE_LABEL] == NAME
    assert pod_labels["bud.ai/cluster-id"] == str(CLUSTER)
    # Kueue's Deployment integration reads the queue from the Deployment itself
    assert deployment["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "default"
    # the selector must not carry what changes between revisions (priority)
    assert "kueue.x-k8s.io/priority-class" not in deployment["spec"]["selector"]["matchLabels"]
    (main,) = deployment["spec"]["template"]["spec"]["containers"]
    assert main["image"] == "vllm/vllm-openai:v0.6"
    assert main["args"] == ["--model", "meta-llama/Llama-3-8B", "--tensor-parallel-size", "2"]
    assert main["env"] == [{"name": "HF_HOME", "value": "/cache"}]
    assert main["resources"]["limits"] == {"nvidia.com/gpu": 2}
    assert main["resources"]["requests"]["nvidia.com/gpu"] == 2
    assert main["ports"] == [{"name": "http", "containerPort": 8000, "protocol": "TCP"}]
    assert objects["Service"]["spec"]["ports"][0]["port"] == 8000
    assert objects["Service"]["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]


def test_without_a_port_there_is_no_service_and_no_probe() -> None:
    spec = {"image": "busybox:1.36", "command": ["sleep", "infinity"]}
    objects = rendered(dict(service_release(service(spec=spec), cluster_id=CLUSTER).values))
    assert set(objects) == {"Deployment"}
    (main,) = objects["Deployment"]["spec"]["template"]["spec"]["containers"]
    assert "ports" not in main and "readinessProbe" not in main
    assert main["command"] == ["sleep", "infinity"]


def test_the_chart_schema_refuses_values_without_an_image() -> None:
    """What budcluster would never send, Helm still refuses (values.schema.json)."""
    values = dict(service_release(service(), cluster_id=CLUSTER).values)
    with pytest.raises(helm_python.HelmValuesError, match="image"):
        rendered({**values, "image": ""})
    with pytest.raises(helm_python.HelmValuesError, match="replicas"):
        rendered({**values, "replicas": -1})


def test_the_shipped_chart_lints_clean_with_the_values_budcluster_gives() -> None:
    values = dict(service_release(service(), cluster_id=CLUSTER).values)
    result = helm_python.lint(SHIPPED_CHART_PATH, values=values)
    assert result["errors"] == []


def test_a_helm_service_keeps_the_users_values_and_adds_the_pod_labels() -> None:
    spec = {
        "chart": "oci://ghcr.io/acme/charts/llm",
        "chart_version": "1.2.0",
        "values": {"replicaCount": 3, "podLabels": {"team": "search"}},
    }
    release = service_release(
        service(deployment_type=DeploymentType.HELM, spec=spec), cluster_id=CLUSTER
    )
    assert not release.shipped
    assert (release.chart, release.version, release.repo) == (spec["chart"], "1.2.0", None)
    assert release.values["replicaCount"] == 3
    labels = release.values["podLabels"]
    assert labels["team"] == "search" and labels["kueue.x-k8s.io/queue-name"] == "default"
    assert labels[RELEASE_LABEL] == NAME


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"spec": {"port": 80}}, "spec.image"),
        ({"spec": {"image": "x", "replicas": 0}}, "spec.replicas"),
        ({"spec": {"image": "x", "replicas": True}}, "spec.replicas"),
        ({"spec": {"image": "x", "port": 70000}}, "spec.port"),
        ({"deployment_type": DeploymentType.MODEL, "spec": {}}, "spec.chart"),
        (
            {"deployment_type": DeploymentType.HELM, "spec": {"chart": "a/b", "values": []}},
            "spec.values",
        ),
        (
            {
                "deployment_type": DeploymentType.HELM,
                "spec": {"chart": "a/b", "values": {"podLabels": "x"}},
            },
            "spec.values.podLabels",
        ),
        ({"deployment_type": DeploymentType.HELM, "spec": {"chart": "b", "repo": 3}}, "spec.repo"),
        ({"job_type": JobType.BATCH}, "job_type"),
    ],
)
def test_what_cant_be_a_release_is_named_by_its_field(changes: dict[str, Any], field: str) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(field)}: "):
        service_release(service(**changes), cluster_id=CLUSTER)


def test_release_names_of_an_attempt() -> None:
    assert is_release_of(NAME, JOB_ID, 1)
    assert is_release_of(f"{NAME}g2", JOB_ID, 1)
    assert not is_release_of(f"{NAME}0", JOB_ID, 1)  # attempt 10
    assert not is_release_of(NAME, JOB_ID, 2)


# --- observe_service -------------------------------------------------------------------------


def pod(name: str = "p1", **status: Any) -> dict[str, Any]:
    labels = {"bud.ai/job-id": str(JOB_ID), "bud.ai/attempt": "1", RELEASE_LABEL: NAME}
    spec: dict[str, Any] = {"schedulingGates": [{"name": ADMISSION_GATE}]}
    if status.pop("ungated", False):
        spec = {"nodeName": status.pop("node", None)}
    return {"metadata": {"name": name, "labels": labels}, "spec": spec, "status": status}


def ready(name: str = "p1", node: str = "gpu-1") -> dict[str, Any]:
    return pod(
        name,
        ungated=True,
        node=node,
        phase="Running",
        conditions=[
            {"type": "Ready", "status": "True", "lastTransitionTime": "2024-06-03T11:00:00Z"}
        ],
    )


def wl(*conditions: tuple[str, str, str]) -> dict[str, Any]:
    return {
        "status": {
            "conditions": [
                {
                    "type": t,
                    "status": s,
                    "reason": r,
                    "message": f"{r} message",
                    "lastTransitionTime": "2024-06-03T10:30:00Z",
                }
                for t, s, r in conditions
            ]
        }
    }


def seen(pods: list[dict[str, Any]], workloads: dict[str, Any] | None = None, **kw: Any) -> Any:
    return observe_service((JOB_ID, 1), pods, workloads or {}, observed_at=NOW, **kw)


def test_service_reasons_row_by_row() -> None:
    assert [row[0] for row in SERVICE_REASONS] == [
        WorkloadPhase.PREEMPTED,
        WorkloadPhase.DELETED,
        WorkloadPhase.RUNNING,
        WorkloadPhase.ADMITTED,
        WorkloadPhase.QUEUED,
    ]
    evicted = wl(("Evicted", "True", "Preempted"))
    assert (seen([pod()], {"p1": evicted}).phase, seen([pod()], {"p1": evicted}).reason) == (
        WorkloadPhase.PREEMPTED,
        "Preempted: Preempted message",
    )
    # evicted, but another pod serves: still running
    assert seen([pod(), ready("p2")], {"p1": evicted}).phase is WorkloadPhase.RUNNING
    # every pod gone after some were seen: deleted; an eviction seen before wins
    assert seen([], seen_before=True, release=NAME).phase is WorkloadPhase.DELETED
    assert seen([], seen_before=True, release=NAME).workload == NAME
    gone = seen([], seen_before=True, evicted=evicted["status"]["conditions"][0])
    assert gone.phase is WorkloadPhase.PREEMPTED
    running = seen([ready(), pod("p2")])
    assert (running.phase, running.reason) == (WorkloadPhase.RUNNING, "running (1 of 2 pods ready)")
    assert running.placements == (Placement(node="gpu-1"),)
    assert running.started_at == at("2024-06-03T11:00:00Z")
    admitted = seen([pod()], {"p1": wl(("Admitted", "True", "Admitted"))})
    assert (admitted.phase, admitted.reason) == (WorkloadPhase.ADMITTED, "admitted, starting")
    assert admitted.admitted_at == at("2024-06-03T10:30:00Z")
    # no Workload and no gate: a pod Kueue let through (or does not manage)
    assert seen([pod(ungated=True)]).phase is WorkloadPhase.ADMITTED
    stuck = pod(
        ungated=True,
        containerStatuses=[
            {"state": {"waiting": {"reason": "ImagePullBackOff", "message": "no such image"}}}
        ],
    )
    assert seen([stuck]).reason == "admitted, not ready: ImagePullBackOff: no such image"
    queued = seen([pod()], {"p1": wl(("QuotaReserved", "False", "Pending"))})
    assert (queued.phase, queued.reason) == (WorkloadPhase.QUEUED, "Pending message")
    assert seen([pod()]).reason == "queued in Kueue"
    assert seen([], seen_before=False).phase is WorkloadPhase.QUEUED  # installed, no pod yet


async def test_without_a_helm_executable_the_hand_over_waits_and_says_why() -> None:
    opened: list[str] = []

    async def kubeconfig(cluster_id: Any) -> tuple[str, str | None]:
        opened.append(str(cluster_id))
        return "apiVersion: v1", None

    releases = PyHelmReleases(
        CLUSTER, open_kubeconfig=kubeconfig, executable="/nonexistent/bin/helm"
    )
    with pytest.raises(GatewayUnavailable, match="helm executable"):
        await releases.install(ReleaseSpec(NAME, NAMESPACE, SHIPPED_CHART))
    assert opened == []  # the kubeconfig is not even opened


# --- Kueue's visibility API ------------------------------------------------------------------


def test_pending_workloads_are_read_from_a_summary_and_odd_items_skipped() -> None:
    from adapters.kubernetes.kueue.visibility import (
        pending_path,
        pending_workloads,
        visibility_version,
    )
    from domain.ports.gateways import PendingWorkload

    def item(owner: dict[str, Any] | None, **fields: Any) -> dict[str, Any]:
        refs = [owner] if owner else []
        return {"metadata": {"name": "w", "ownerReferences": refs}, **fields}

    job = {"apiVersion": "batch/v1", "kind": "Job", "name": NAME}
    pod = {"apiVersion": "v1", "kind": "Pod", "name": f"{NAME}-7d9c8-x1"}
    summary = {
        "items": [
            item(
                job,
                priority=100,
                localQueueName="default",
                positionInClusterQueue=4,
                positionInLocalQueue=1,
            ),
            item(
                pod,
                priority=5,
                localQueueName="default",
                positionInClusterQueue=7,
                positionInLocalQueue=2,
            ),
            item(None, priority=1, positionInClusterQueue=0, positionInLocalQueue=0),  # no owner
            item(job, priority=1, positionInClusterQueue=0),  # no position
            item(job, positionInLocalQueue="x"),
        ]
    }
    assert pending_workloads(summary) == [
        PendingWorkload("Job", NAME, "default", 1, 4, 100),
        PendingWorkload("Pod", f"{NAME}-7d9c8-x1", "default", 2, 7, 5),
    ]
    assert visibility_version(["visibility.kueue.x-k8s.io/v1beta1", "v1alpha1"]) == "v1beta1"
    assert visibility_version(["v1"]) is None
    assert pending_path("v1beta2", "tenant-a", "default") == (
        "/apis/visibility.kueue.x-k8s.io/v1beta2/namespaces/tenant-a/localqueues/default"
        "/pendingworkloads"
    )
