"""SERVICE jobs on a real cluster: Helm releases (through pyhelm3) whose pods Kueue admits,
against kmock's emulator, with the supervisor running.

No helm binary is installed here, so pyhelm3 runs tests/support/helm_standin.py as `helm`: it
loads, validates and renders charts with a real Helm engine (helm-python-sdk) and creates what
they render in the emulator. The test plays the controllers: the ReplicaSet's pods (from the
Deployment's template, with Kueue's admission scheduling gate), Kueue's pod Workloads and their
conditions, and the kubelet's Ready condition.
"""

from __future__ import annotations

import asyncio
import glob
import logging
import os
import tempfile
import uuid
from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from adapters.db.engine import Database
from budcluster.bootstrap import App
from domain.model.ids import ClusterId, JobId
from domain.model.job import DeploymentType, Job, JobPriority, JobStatus, JobType, Resources
from domain.ports.gateways import Workload
from tests.integration.test_kueue_jobs_flow import (
    ALICE,
    NOW,
    batch,
    condition,
    job_status,
    kueue_cluster,
    until,
)
from tests.support.helm_standin import write_helm
from tests.support.kube_emulator import (
    DEFAULT_TOKEN,
    KubeEmulator,
)

S = JobStatus
World = tuple[App, KubeEmulator, ClusterId]


@pytest.fixture
async def world(db: Database, tmp_path: Path) -> AsyncIterator[World]:
    helm = write_helm(tmp_path / "bin")
    async with kueue_cluster(db, tmp_path, helm_executable=str(helm)) as world:
        yield world


def service(cluster_id: ClusterId, **changes: Any) -> Any:
    fields: dict[str, Any] = {
        "name": "chat-api",
        "job_type": JobType.SERVICE,
        "deployment_type": DeploymentType.DOCKER,
        "resources": Resources("nvidia-a100-80gb", 2),
        "spec": {"image": "vllm/vllm-openai:v0.6", "args": ["--model", "m"], "port": 8000},
        "max_duration_seconds": None,
    }
    return batch(cluster_id, **{**fields, **changes})


def live(emulator: KubeEmulator, plural: str) -> dict[str, dict[str, Any]]:
    return {
        obj.raw["metadata"]["name"]: obj.raw
        for (resource, _, _), obj in emulator.objects.items()
        if resource.plural == plural and not obj.deleted
    }


async def installed(app: App, emulator: KubeEmulator, job: Job) -> dict[str, Any]:
    """The Deployment of the job's current attempt, once its release is installed."""
    await until(lambda: job_status(app, job), S.QUEUED)
    found = await app.jobs.get(ALICE, job.id)
    assert found is not None
    async with asyncio.timeout(15):
        while found.workload_name not in live(emulator, "deployments"):
            await asyncio.sleep(0.05)
    return live(emulator, "deployments")[found.workload_name]


async def start_pod(
    emulator: KubeEmulator, deployment: dict[str, Any], suffix: str
) -> dict[str, Any]:
    """The pod the Deployment's ReplicaSet makes, gated by Kueue until admitted."""
    template = deployment["spec"]["template"]
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{deployment['metadata']['name']}-7d9c8-{suffix}",
            "namespace": deployment["metadata"]["namespace"],
            "labels": dict(template["metadata"]["labels"]),
        },
        "spec": {**template["spec"], "schedulingGates": [{"name": "kueue.x-k8s.io/admission"}]},
        "status": {"phase": "Pending"},
    }
    return await emulator.create(pod)


def pod_workload(pod: dict[str, Any], *conditions: dict[str, str]) -> dict[str, Any]:
    """The Workload Kueue's pod integration makes for one pod."""
    name = pod["metadata"]["name"]
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {
            "name": f"pod-{name}-3f2a1",
            "namespace": pod["metadata"]["namespace"],
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Pod", "name": name, "uid": "u", "controller": True}
            ],
        },
        "spec": {"queueName": "default", "priorityClassName": "bud-normal", "priority": 100},
        "status": {"conditions": list(conditions)},
    }


async def job_of(app: App, job: Job) -> Job:
    found = await app.jobs.get(ALICE, job.id)
    assert found is not None
    return found


async def test_a_docker_service_is_a_release_whose_pods_kueue_admits(world: World) -> None:
    app, emulator, cluster_id = world
    job = await app.jobs.submit(ALICE, service(cluster_id))
    deployment = await installed(app, emulator, job)
    name = deployment["metadata"]["name"]

    # the shipped chart, rendered by Helm: the Kueue labels and the GPUs on the pods
    template = deployment["spec"]["template"]
    labels = template["metadata"]["labels"]
    assert labels["kueue.x-k8s.io/queue-name"] == "default"
    assert labels["kueue.x-k8s.io/priority-class"] == "bud-normal"
    assert labels["bud.ai/job-id"] == str(job.id) and labels["bud.ai/release"] == name
    assert deployment["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "default"
    main = template["spec"]["containers"][0]
    assert main["image"] == "vllm/vllm-openai:v0.6" and main["args"] == ["--model", "m"]
    assert main["resources"]["limits"] == {"nvidia.com/gpu": 2}
    assert live(emulator, "services")[name]["spec"]["ports"][0]["port"] == 8000
    secrets = live(emulator, "secrets")
    assert f"sh.helm.release.v1.{name}.v1" in secrets  # a release, as helm records one

    pod = await start_pod(emulator, deployment, "x1")
    await emulator.create(
        pod_workload(pod, condition("QuotaReserved", "Pending", "False", "insufficient quota"))
    )
    cluster = await app.clusters.get(cluster_id)
    assert cluster is not None
    listed = await app.gateways.for_cluster(cluster).list_workloads()
    assert [(o.job_id, o.phase.value, o.reason, o.workload) for o in listed] == [
        (job.id, "QUEUED", "insufficient quota", name)
    ]
    assert await job_status(app, job) is S.QUEUED

    workload = live(emulator, "workloads")[f"pod-{pod['metadata']['name']}-3f2a1"]
    await emulator.patch_object(
        workload, {"status": {"conditions": [condition("Admitted", "Admitted")]}}
    )
    await until(lambda: job_status(app, job), S.ADMITTED)

    await emulator.patch_object(
        pod,
        {
            "spec": {"schedulingGates": None, "nodeName": "gpu-a100-0"},
            "status": {
                "phase": "Running",
                "startTime": NOW,
                "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": NOW}],
            },
        },
    )
    await until(lambda: job_status(app, job), S.RUNNING)
    running = await job_of(app, job)
    assert running.placement is not None and running.placement.node == "gpu-a100-0"

    await app.jobs.cancel(ALICE, job.id, "done with it")
    async with asyncio.timeout(15):  # uninstalled: what the chart made and the record go
        while {name, f"sh.helm.release.v1.{name}.v1"} & {
            *live(emulator, "deployments"),
            *live(emulator, "services"),
            *live(emulator, "secrets"),
        }:
            await asyncio.sleep(0.05)
    assert await job_status(app, job) is S.CANCELLED


async def test_an_evicted_service_is_preempted_then_retried_as_a_new_release(
    world: World,
) -> None:
    app, emulator, cluster_id = world
    job = await app.jobs.submit(ALICE, service(cluster_id, max_retries=2))
    deployment = await installed(app, emulator, job)
    first = deployment["metadata"]["name"]
    pod = await start_pod(emulator, deployment, "e1")
    await emulator.create(
        pod_workload(
            pod,
            condition("QuotaReserved", "Pending", "False"),
            condition("Evicted", "Preempted", message="Preempted to accommodate a workload"),
        )
    )

    async def attempt() -> int:
        return (await job_of(app, job)).attempt

    await until(attempt, 1)
    retried = await job_of(app, job)
    async with asyncio.timeout(15):
        while retried.workload_name not in live(emulator, "deployments"):
            await asyncio.sleep(0.05)
    events = await app.jobs.events(ALICE, [job.id])
    assert any(e.to_status is S.PREEMPTED and "Preempted" in e.reason for e in events[job.id])
    async with asyncio.timeout(15):  # the evicted attempt's release is uninstalled
        while first in live(emulator, "deployments"):
            await asyncio.sleep(0.05)


async def test_a_release_removed_outside_budcluster_cancels_the_job(world: World) -> None:
    app, emulator, cluster_id = world
    job = await app.jobs.submit(ALICE, service(cluster_id))
    deployment = await installed(app, emulator, job)
    pod = await start_pod(emulator, deployment, "d1")
    await emulator.create(pod_workload(pod, condition("Admitted", "Admitted")))
    await until(lambda: job_status(app, job), S.ADMITTED)
    await emulator.delete_object(pod)  # helm uninstall by hand: its pods go
    await until(lambda: job_status(app, job), S.CANCELLED)


async def test_a_chart_helm_cannot_find_fails_the_job_with_helms_reason(world: World) -> None:
    app, _, cluster_id = world
    job = await app.jobs.submit(
        ALICE,
        service(
            cluster_id,
            deployment_type=DeploymentType.HELM,
            spec={"chart": "nosuch/chart", "values": {"replicaCount": 1}},
        ),
    )
    await until(lambda: job_status(app, job), S.FAILED)
    failed = await job_of(app, job)
    assert failed.status_message is not None
    assert 'chart "nosuch/chart" not found' in failed.status_message


async def test_a_repeated_hand_over_installs_one_release(
    world: World, caplog: pytest.LogCaptureFixture, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """And helm's kubeconfig lives only while a command runs; no log line carries it."""
    caplog.set_level(logging.DEBUG)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # this test's own, not the machine's
    app, emulator, cluster_id = world
    job = await app.jobs.submit(ALICE, service(cluster_id))
    deployment = await installed(app, emulator, job)
    name = deployment["metadata"]["name"]
    cluster = await app.clusters.get(cluster_id)
    assert cluster is not None
    current = await job_of(app, job)
    await app.gateways.for_cluster(cluster).submit(Workload.of(current))  # a crashed worker's retry
    revisions = [
        s for s in live(emulator, "secrets") if s.startswith(f"sh.helm.release.v1.{name}.")
    ]
    assert revisions == [f"sh.helm.release.v1.{name}.v1"]
    assert glob.glob(os.path.join(tmp_path, "budcluster-helm-*")) == []
    assert "pyhelm3" in caplog.text  # helm ran, and said so
    assert DEFAULT_TOKEN not in caplog.text and "kind: Config" not in caplog.text


async def test_a_new_priority_reaches_the_pods_and_their_kueue_workloads(world: World) -> None:
    app, emulator, cluster_id = world
    job = await app.jobs.submit(ALICE, service(cluster_id))
    deployment = await installed(app, emulator, job)
    pod = await start_pod(emulator, deployment, "p1")
    await emulator.create(pod_workload(pod, condition("QuotaReserved", "Pending", "False")))
    high = next(
        o
        for o in emulator.kueue_objects("workloadpriorityclasses")
        if o["metadata"]["name"] == "bud-high"
    )
    await app.jobs.change_priority(ALICE, job.id, JobPriority.HIGH)

    async def workload_priority() -> Any:
        workload = live(emulator, "workloads")[f"pod-{pod['metadata']['name']}-3f2a1"]
        return workload["spec"].get("priority"), workload["spec"].get("priorityClassName")

    await until(workload_priority, (high["value"], "bud-high"))
    relabelled = live(emulator, "pods")[pod["metadata"]["name"]]
    assert relabelled["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] == "bud-high"


async def test_an_orphaned_release_is_uninstalled_after_the_grace(world: World) -> None:
    """A release of budcluster's whose job this database does not know (its pods say so):
    reported, then uninstalled once seen for the grace period."""
    app, emulator, cluster_id = world
    job = await app.jobs.submit(ALICE, service(cluster_id))
    known = await job_of(app, job)
    stray = replace(
        Workload.of(known), job_id=JobId(uuid.uuid4()), name="bud-0123456789abcdef0123-a0"
    )
    cluster = await app.clusters.get(cluster_id)
    assert cluster is not None
    gateway = app.gateways.for_cluster(cluster)
    await gateway.submit(stray)
    deployment = live(emulator, "deployments")["bud-0123456789abcdef0123-a0"]
    await start_pod(emulator, deployment, "o1")

    listed = await gateway.list_workloads()
    found = await app.observations.reconcile_listing(cluster_id, listed, gateway)
    assert found.orphans == ["bud-0123456789abcdef0123-a0"] and found.removed == []
    app.observations.orphan_grace = timedelta(0)
    found = await app.observations.reconcile_listing(cluster_id, listed, gateway)
    assert found.removed == ["bud-0123456789abcdef0123-a0"]
    assert "bud-0123456789abcdef0123-a0" not in live(emulator, "deployments")
    assert "bud-0123456789abcdef0123-a0" not in live(emulator, "services")
