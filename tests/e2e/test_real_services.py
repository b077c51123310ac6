"""A SERVICE job on a real cluster through the running service: GraphQL in, a Helm release on the
cluster, Kueue's view of it back out, live over `jobUpdates`.

The service runs as a subprocess (embedded: SQLite, in-process tasks) with BUDCLUSTER_HELM naming
the helm stand-in (tests/support/helm_standin.py: pyhelm3 drives it as it drives helm; it renders
the shipped chart with helm-python-sdk's Helm engine and creates what it renders); the emulator
runs in this test's process over HTTPS with a client certificate and a bearer token, serving
Kueue v1beta2 and its visibility API. The test plays the ReplicaSet, Kueue and the kubelet.

Covers: submitJob of a DOCKER service with a bad spec is a ValidationError naming the field;
a good one is installed as a release (Deployment + Service, Kueue labels on the pods); its
pod's pending Kueue Workload gives `kueuePosition`; admitted -> ADMITTED, a Ready pod ->
RUNNING with the pod's node as placement, all pushed on `jobUpdates`; cancelJob uninstalls the
release; and no log line, response or subscription message carries the token or the key.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import (
    PROJECT_ID,
    RESPONSE_BODIES,
    ServiceFactory,
    Subscription,
    embedded_env,
    http_client,
    printed_tokens,
    submit,
    wait_for_status,
    ws_client,
)
from tests.e2e.test_real_clusters import call, register, secrets_of, until_status
from tests.support import k8s_nodes
from tests.support.helm_standin import write_helm
from tests.support.kube_emulator import (
    KubeEmulator,
    TestPki,
    kubeconfig_for,
    make_pki,
    running_emulator,
)

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("no_tracebacks")]

NOW = "2026-11-22T12:00:00Z"
JOB = """
query Job($id: ID!) {
  job(id: $id) {
    status statusMessage placement { node }
    kueuePosition { localQueue positionInLocalQueue positionInClusterQueue pendingInLocalQueue }
  }
}
"""
CANCEL = """
mutation Cancel($id: ID!) { cancelJob(id: $id) { __typename ... on Job { status } } }
"""


def live(emulator: KubeEmulator, plural: str) -> dict[str, dict[str, Any]]:
    return {
        obj.raw["metadata"]["name"]: obj.raw
        for (resource, _, _), obj in emulator.objects.items()
        if resource.plural == plural and not obj.deleted
    }


async def until(check: Any, timeout: float = 30.0) -> Any:
    async with asyncio.timeout(timeout):
        while not (found := check()):
            await asyncio.sleep(0.1)
    return found


def condition(kind: str, status: str = "True", message: str = "") -> dict[str, str]:
    return {
        "type": kind,
        "status": status,
        "reason": kind,
        "message": message or kind,
        "lastTransitionTime": NOW,
    }


async def test_a_service_from_submission_to_cancel(
    services: ServiceFactory, tmp_path: Path
) -> None:
    pki: TestPki = make_pki()
    env = embedded_env(
        tmp_path / "data",
        BUDCLUSTER_SUPERVISOR_POLL_SECONDS="0.2",
        BUDCLUSTER_LOG_LEVEL="DEBUG",
        BUDCLUSTER_HELM=str(write_helm(tmp_path / "bin")),
    )
    async with running_emulator(tls=pki) as emulator:
        emulator.serve_kueue("v1beta2")
        emulator.serve_kueue_visibility("v1beta2")
        emulator.seed(k8s_nodes.a100_gfd_node(), k8s_nodes.control_plane_node())
        kubeconfig = kubeconfig_for(emulator, pki=pki)
        service = await services.start("real-services", env)
        tokens = printed_tokens(service.stdout())
        assert len(tokens) == 1, service.output()
        service.admin_token = tokens[0]
        bodies_before = len(RESPONSE_BODIES)

        registered = await register(service, name="serving", kubeconfig=kubeconfig)
        assert registered["__typename"] == "Cluster", registered
        cluster_id = registered["id"]
        await until_status(service, cluster_id, "AVAILABLE")
        job_input = {
            "name": "chat-api",
            "projectId": PROJECT_ID,
            "clusterId": cluster_id,
            "jobType": "SERVICE",
            "deploymentType": "DOCKER",
            "spec": {"image": "vllm/vllm-openai:v0.6", "port": 8000, "replicas": 0},
            "resources": {"gpuType": "nvidia-a100-80gb", "gpuCount": 2},
        }
        updates = await Subscription(
            ws_client(service, service.admin_token), {"clusterId": cluster_id}
        ).open()
        try:
            await updates.wait_for(lambda got: bool(got))  # the snapshot: subscribed before
            async with http_client(service, service.admin_token) as session:
                refused = await submit(session, job_input)
                assert refused["__typename"] == "ValidationError", refused
                assert [f["path"] for f in refused["fields"]] == ["spec.replicas"]
                job_input["spec"] = {"image": "vllm/vllm-openai:v0.6", "port": 8000}
                job = await submit(session, job_input)
                assert job["__typename"] == "Job", job
                await wait_for_status(session, job["id"], "QUEUED")

            deployment = await until(
                lambda: next(iter(live(emulator, "deployments").values()), None)
            )
            name = deployment["metadata"]["name"]
            assert name in live(emulator, "services")
            template = deployment["spec"]["template"]
            labels = template["metadata"]["labels"]
            assert labels["kueue.x-k8s.io/queue-name"] == "default"
            assert labels["bud.ai/job-id"] == job["id"]
            assert template["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": 2}

            # the ReplicaSet's pod, gated; Kueue's Workload for it, pending
            pod = await emulator.create(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {
                        "name": f"{name}-5c7d9-q2x8r",
                        "namespace": deployment["metadata"]["namespace"],
                        "labels": dict(labels),
                    },
                    "spec": {
                        **template["spec"],
                        "schedulingGates": [{"name": "kueue.x-k8s.io/admission"}],
                    },
                    "status": {"phase": "Pending"},
                }
            )
            workload = await emulator.create(
                {
                    "apiVersion": "kueue.x-k8s.io/v1beta2",
                    "kind": "Workload",
                    "metadata": {
                        "name": f"pod-{pod['metadata']['name']}-1b2c3",
                        "namespace": pod["metadata"]["namespace"],
                        "ownerReferences": [
                            {"apiVersion": "v1", "kind": "Pod", "name": pod["metadata"]["name"]}
                        ],
                    },
                    "spec": {"queueName": "default", "priority": 100},
                    "status": {"conditions": [condition("QuotaReserved", "False")]},
                }
            )
            seen = (await call(service, JOB, id=job["id"]))["job"]
            assert seen["status"] == "QUEUED"
            assert seen["kueuePosition"] == {
                "localQueue": "default",
                "positionInLocalQueue": 0,
                "positionInClusterQueue": 0,
                "pendingInLocalQueue": 1,
            }

            await emulator.patch_object(
                workload, {"status": {"conditions": [condition("Admitted")]}}
            )
            await emulator.patch_object(
                pod,
                {
                    "spec": {"schedulingGates": None, "nodeName": "gpu-a100-0"},
                    "status": {"phase": "Running", "conditions": [condition("Ready")]},
                },
            )
            await updates.wait_for(
                lambda got: any(
                    u["__typename"] == "JobChange" and u["job"]["status"] == "RUNNING" for u in got
                )
            )
            running = (await call(service, JOB, id=job["id"]))["job"]
            assert running["placement"] == {"node": "gpu-a100-0"}
            assert running["kueuePosition"] is None  # not queued any more

            cancelled = (await call(service, CANCEL, id=job["id"]))["cancelJob"]
            assert cancelled == {"__typename": "Job", "status": "CANCELLED"}
            await until(lambda: name not in live(emulator, "deployments"))
            await until(lambda: name not in live(emulator, "services"))
            statuses = [
                u["job"]["status"] for u in updates.updates if u["__typename"] == "JobChange"
            ]
            assert statuses[0] == "PENDING" and statuses[-1] == "CANCELLED", statuses
            assert {"QUEUED", "ADMITTED", "RUNNING"} <= set(statuses), statuses
        finally:
            await updates.close()

        await service.stop()
        seen_text = "\n".join([service.output(tail=10_000_000), *RESPONSE_BODIES[bodies_before:]])
        seen_text += json.dumps(updates.updates)
        for secret in secrets_of(pki, kubeconfig):
            assert secret not in seen_text, f"{secret[:12]}... leaked"
        assert "helm" in seen_text  # the log was read: it names the helm commands
