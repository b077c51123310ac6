"""Model deployments on a real cluster: each replica a release of budcluster's bud-vllm chart
(through pyhelm3 and the helm stand-in) whose pod Kueue admits, against kmock's emulator, with
the supervisor running. The test plays the ReplicaSet, Kueue and the kubelet, as
test_kueue_services.py does.

Covers: deployModel installs one release per replica with the deployment's values (model,
served name, tensor parallel size, cpu and memory, one replica), the Kueue labels and the
deployment's label on the pods, and a Service named after the replica's job that selects every
replica's pods; the replica's pod Ready -> the deployment RUNNING at its Service's in-cluster
URL, with a RUNNING worker on the pod's node; a container restart in the pod's status -> the
worker's restarts and last restart time; scaling to two installs a second release, back to one
and stopping uninstall them; a chart of the user's is installed with the same values; an
autoscaled deployment scales up on its replica's vLLM metrics read through the pod proxy, and
minReplicas 0 is refused there.
"""

from __future__ import annotations

import asyncio
import base64
import json
import uuid
from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from adapters.db.engine import Database
from adapters.helm.releases import CHARTS
from adapters.kubernetes.kueue.models import DEPLOYMENT_LABEL, replica_service
from budcluster.bootstrap import App
from domain.errors import ValidationFailed
from domain.model.autoscaling import Autoscaling, ScaleMetric
from domain.model.deployment import (
    Deployment,
    DeploymentStatus,
    Engine,
    EngineArgs,
    WorkerStatus,
)
from domain.model.ids import ClusterId, DeploymentId, ProjectId
from domain.model.job import Job, JobStatus
from domain.model.quota import tenant_namespace
from domain.services.deployments import DeploymentRequest
from tests.integration.test_kueue_jobs_flow import ALICE, NOW, condition, kueue_cluster, until
from tests.integration.test_kueue_services import World, live, pod_workload, start_pod
from tests.support.helm_standin import write_helm
from tests.support.kube_emulator import KubeEmulator

MODEL = "meta-llama/Meta-Llama-3-8B-Instruct"
GPU = "nvidia-a100-80gb"
CRASHED_AT = "2026-11-22T12:05:00Z"


@pytest.fixture
async def world(db: Database, tmp_path: Path) -> AsyncIterator[World]:
    helm = write_helm(tmp_path / "bin")
    async with kueue_cluster(db, tmp_path, helm_executable=str(helm)) as world:
        yield world


def request(cluster_id: ClusterId, **changes: Any) -> DeploymentRequest:
    fields: dict[str, Any] = {
        "name": "llama",
        "project_id": ProjectId(uuid.uuid4()),
        "cluster_id": cluster_id,
        "model": MODEL,
        "gpu_type": GPU,
        "engine_args": EngineArgs(tensor_parallel_size=2, max_model_len=8192),
        "served_model_name": "llama-3-8b",
        "cpu_cores": 8.0,
        "memory_gb": 64.0,
    }
    return DeploymentRequest(**{**fields, **changes})


async def deployment_of(app: App, deployment_id: DeploymentId) -> Deployment:
    found = await app.deployments.get(ALICE, deployment_id)
    assert found is not None
    return found


async def replica(app: App, deployment: Deployment, index: int) -> Job:
    current = await deployment_of(app, deployment.id)
    job = await app.jobs.get(ALICE, current.replica_jobs[index])
    assert job is not None
    return job


async def installed(
    app: App, emulator: KubeEmulator, deployment: Deployment, index: int
) -> dict[str, Any]:
    """The Deployment object of the replica's release, once it is installed."""
    async with asyncio.timeout(15):
        while True:
            job = await replica(app, deployment, index)
            if job.status is JobStatus.QUEUED and job.workload_name in live(
                emulator, "deployments"
            ):
                return live(emulator, "deployments")[job.workload_name]
            await asyncio.sleep(0.05)


def release_values(emulator: KubeEmulator, release: str) -> dict[str, Any]:
    """The values the release was installed with (helm's record of it)."""
    secret = live(emulator, "secrets")[f"sh.helm.release.v1.{release}.v1"]
    record = json.loads(base64.b64decode(secret["data"]["release"]))
    config: dict[str, Any] = record["config"]
    return config


async def run_pod(
    emulator: KubeEmulator, manifest: dict[str, Any], suffix: str, node: str
) -> dict[str, Any]:
    """The replica's pod, admitted by Kueue and Ready on `node`."""
    pod = await start_pod(emulator, manifest, suffix)
    await emulator.create(pod_workload(pod, condition("Admitted", "Admitted")))
    return await emulator.patch_object(
        pod,
        {
            "spec": {"schedulingGates": None, "nodeName": node},
            "status": {
                "phase": "Running",
                "startTime": NOW,
                "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": NOW}],
                "containerStatuses": [{"name": "main", "ready": True, "restartCount": 0}],
            },
        },
    )


async def gone(emulator: KubeEmulator, *names: str) -> None:
    async with asyncio.timeout(15):
        while set(names) & {*live(emulator, "deployments"), *live(emulator, "services")}:
            await asyncio.sleep(0.05)


async def test_a_deployment_serves_from_its_replicas_releases(world: World) -> None:
    app, emulator, cluster_id = world
    deployment = await app.deployments.deploy(ALICE, request(cluster_id))
    manifest = await installed(app, emulator, deployment, 0)
    first = await replica(app, deployment, 0)
    release = first.workload_name

    # the bud-vllm chart with the deployment's values, one pod per release
    values = release_values(emulator, release)
    assert {k: values[k] for k in ("model", "servedModelName", "tensorParallelSize")} == {
        "model": MODEL,
        "servedModelName": "llama-3-8b",
        "tensorParallelSize": 2,
    }
    assert (values["replicas"], values["cpu"], values["memory"]) == (1, 8, "64Gi")
    assert manifest["metadata"]["labels"]["helm.sh/chart"] == "bud-vllm-0.1.0"
    assert manifest["spec"]["replicas"] == 1
    main = manifest["spec"]["template"]["spec"]["containers"][0]
    assert main["args"][:4] == ["--model", MODEL, "--served-model-name", "llama-3-8b"]
    assert main["args"][4:6] == ["--tensor-parallel-size", "2"]
    assert main["resources"]["limits"] == {"nvidia.com/gpu": 2}
    pod_labels = manifest["spec"]["template"]["metadata"]["labels"]
    assert pod_labels["kueue.x-k8s.io/queue-name"] == "default"
    assert pod_labels["kueue.x-k8s.io/priority-class"] == "bud-normal"
    assert pod_labels["bud.ai/job-id"] == str(first.id)
    assert pod_labels["bud.ai/release"] == release
    assert pod_labels[DEPLOYMENT_LABEL] == str(deployment.id)
    # its Service: named after the replica's job, fronting every replica of the deployment
    service = live(emulator, "services")[replica_service(first.id)]
    assert service["spec"]["selector"] == {DEPLOYMENT_LABEL: str(deployment.id)}
    assert service["spec"]["ports"][0]["port"] == 8000

    # the pod passes its readiness probe: the deployment serves at the Service
    pod = await run_pod(emulator, manifest, "r0", "gpu-a100-0")

    async def status() -> DeploymentStatus:
        return (await deployment_of(app, deployment.id)).status

    await until(status, DeploymentStatus.RUNNING)
    serving = await deployment_of(app, deployment.id)
    namespace = tenant_namespace(ALICE.tenant_id)
    url = f"http://{replica_service(first.id)}.{namespace}.svc.cluster.local:8000/v1"
    assert serving.endpoint_url == url
    (worker,) = serving.workers
    assert (worker.status, worker.node, worker.restarts) == (
        WorkerStatus.RUNNING,
        "gpu-a100-0",
        0,
    )

    # vLLM crashed and the kubelet restarted its container in place
    await emulator.patch_object(
        pod,
        {
            "status": {
                "containerStatuses": [
                    {
                        "name": "main",
                        "ready": True,
                        "restartCount": 2,
                        "lastState": {
                            "terminated": {
                                "exitCode": 1,
                                "reason": "Error",
                                "finishedAt": CRASHED_AT,
                            }
                        },
                    }
                ]
            }
        },
    )

    async def restarts() -> tuple[int, datetime | None]:
        (w,) = (await deployment_of(app, deployment.id)).workers
        return w.restarts, w.last_restart_at

    await until(restarts, (2, datetime(2026, 11, 22, 12, 5, tzinfo=UTC)))
    assert (await replica(app, deployment, 0)).status is JobStatus.RUNNING

    # scaled to two: a second release, whose pods the first Service fronts too
    await app.deployments.scale(ALICE, deployment.id, 2)
    second_manifest = await installed(app, emulator, deployment, 1)
    second = await replica(app, deployment, 1)
    assert second_manifest["metadata"]["name"] == second.workload_name
    second_labels = second_manifest["spec"]["template"]["metadata"]["labels"]
    assert second_labels[DEPLOYMENT_LABEL] == str(deployment.id)
    second_service = live(emulator, "services")[replica_service(second.id)]
    assert second_service["spec"]["selector"] == service["spec"]["selector"]

    # back to one, then stopped: the releases are uninstalled
    await app.deployments.scale(ALICE, deployment.id, 1)
    await gone(emulator, second.workload_name, replica_service(second.id))
    assert release in live(emulator, "deployments")
    await app.deployments.stop(ALICE, deployment.id)
    await gone(emulator, release, replica_service(first.id))
    await until(status, DeploymentStatus.STOPPED)


async def test_a_chart_of_the_users_is_installed_with_the_same_values(world: World) -> None:
    """The user names a chart (here budcluster's own, from its directory, as Helm finds one):
    the release installs it, with the deployment's values."""
    app, emulator, cluster_id = world
    chart = str(CHARTS / "bud-vllm")
    deployment = await app.deployments.deploy(ALICE, request(cluster_id, chart=chart))
    manifest = await installed(app, emulator, deployment, 0)
    values = release_values(emulator, manifest["metadata"]["name"])
    assert values["model"] == MODEL and values["tensorParallelSize"] == 2
    assert values["podLabels"][DEPLOYMENT_LABEL] == str(deployment.id)


async def test_another_engine_needs_a_chart_on_a_kubernetes_cluster(world: World) -> None:
    app, _, cluster_id = world
    with pytest.raises(ValidationFailed) as caught:
        await app.deployments.deploy(
            ALICE,
            request(cluster_id, engine=Engine.OPENAI_COMPATIBLE, image="ghcr.io/acme/llm:1"),
        )
    assert [(i.field, i.code) for i in caught.value.issues] == [("engine", "UNSUPPORTED")]


async def test_an_autoscaled_deployment_scales_on_its_replicas_vllm_metrics(world: World) -> None:
    """Requests in flight read from the replica's vLLM through the pod proxy (12 against a
    target of 4) make two more replicas, each a release of its own; minReplicas 0 is refused
    on a Kubernetes cluster."""
    app, emulator, cluster_id = world
    scaling = Autoscaling(1, 3, ScaleMetric.IN_FLIGHT, 4.0)
    deployment = await app.deployments.deploy(
        ALICE, request(cluster_id, replicas=1, autoscaling=scaling)
    )
    manifest = await installed(app, emulator, deployment, 0)
    pod = await run_pod(emulator, manifest, "r0", "gpu-a100-0")

    async def status() -> DeploymentStatus:
        return (await deployment_of(app, deployment.id)).status

    await until(status, DeploymentStatus.RUNNING)
    assert await app.autoscaler.autoscale(deployment.id) is None  # its metrics not served yet
    busy = "\n".join(
        [
            "# TYPE vllm:num_requests_running gauge",
            'vllm:num_requests_running{engine="0",model_name="llama-3-8b"} 8.0',
            "# TYPE vllm:num_requests_waiting gauge",
            'vllm:num_requests_waiting{engine="0",model_name="llama-3-8b"} 4.0',
            "",
        ]
    )
    namespace = tenant_namespace(ALICE.tenant_id)
    emulator.set_proxy("pods", namespace, pod["metadata"]["name"], 8000, "metrics", busy)
    step = await app.autoscaler.autoscale(deployment.id)
    assert step is not None and (step.from_replicas, step.to_replicas) == (1, 3), step
    assert step.metric_value == 12.0
    for index in (1, 2):  # each new replica a release of its own
        added = await installed(app, emulator, deployment, index)
        labels = added["spec"]["template"]["metadata"]["labels"]
        assert labels[DEPLOYMENT_LABEL] == str(deployment.id)
    assert (await deployment_of(app, deployment.id)).scaling_steps == (step,)

    with pytest.raises(ValidationFailed) as refused:
        await app.deployments.deploy(
            ALICE, request(cluster_id, name="idle", autoscaling=replace(scaling, min_replicas=0))
        )
    assert [(i.field, i.code) for i in refused.value.issues] == [
        ("autoscaling.min_replicas", "UNSUPPORTED")
    ]
    await app.deployments.stop(ALICE, deployment.id)
