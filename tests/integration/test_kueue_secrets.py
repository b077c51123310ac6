"""A tenant's secrets on a real cluster: the Kubernetes gateway against kmock's emulator over HTTP
(requests asserted as sent), and both shipped charts rendered by a real Helm engine.

Covers: a batch Job's attempt gets one v1 Secret per secret it names, in the tenant's namespace,
created before its Job, with its values base64 in `data` and the attempt's identity labels, then
owned by the Job (ownerReferences with its uid); its pod template reads them as `envFrom` and as
read-only `secret` volumes (mode 0400) at their mount paths; a second hand-over replaces the
values, never a second Secret; a JobSet's every replicated job reads them and the JobSet owns
them; `cancel` deletes the attempt's Secrets and no other attempt's; a cluster where budcluster
may not list Secrets still cancels; a job through a MultiKueue manager is refused (MultiKueue
copies no Secret); the SERVICE chart and the vLLM chart render envFrom and the volumes from the
values `envFromSecrets` and `secretMounts`; a value is never in a log record.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import helm_python
import pytest
import yaml

from adapters.helm.releases import CHARTS
from adapters.kubernetes.kueue.services import service_release
from domain.model.deployment import EngineArgs, engine_args_document
from domain.model.job import DeploymentType, JobType, PodSet, Resources
from domain.model.tenant_secret import MountedSecret, SecretRef
from domain.ports.gateways import Workload
from domain.ports.helm import ReleaseRejected
from tests.integration.test_kueue_drain import (
    CLUSTER,
    JOB,
    JOBS,
    JOBSETS,
    NS,
    gateway_on,
    identity,
    workload,
)
from tests.support import k8s_nodes
from tests.support.kube_emulator import KubeEmulator, running_emulator

SECRETS = f"/api/v1/namespaces/{NS}/secrets"
TOKEN = "hf_abcdefghijklmnopqrstuvwxyz0123456789"
Json = dict[str, Any]


@pytest.fixture
async def emulator() -> AsyncIterator[KubeEmulator]:
    async with running_emulator() as made:
        made.seed(k8s_nodes.a100_gfd_node())
        yield made


def with_secrets(**changes: Any) -> Workload:
    return workload(
        secrets=(
            MountedSecret(SecretRef("hf"), {"HF_TOKEN": TOKEN}),
            MountedSecret(SecretRef("tls", "/etc/tls"), {"ca.crt": "PEM", "tls.key": "KEY"}),
        ),
        **changes,
    )


def request_order(emulator: KubeEmulator) -> list[tuple[str, str]]:
    return [
        (r.method, r.url.path)
        for r in emulator
        if r.method in ("POST", "PATCH", "DELETE") and "/nodes" not in r.url.path
    ]


async def test_a_jobs_secrets_are_made_before_it_and_owned_by_it(
    emulator: KubeEmulator, caplog: pytest.LogCaptureFixture
) -> None:
    name = "bud-10b000000000400080-a0"
    with caplog.at_level(logging.DEBUG):
        async with gateway_on(emulator) as gateway:
            await gateway.submit(with_secrets())
    hf, tls = (r.data for r in emulator.sent("POST", SECRETS))
    assert hf["metadata"]["name"] == f"{name}-hf" and hf["type"] == "Opaque"
    assert hf["metadata"]["labels"] == identity()
    assert base64.b64decode(hf["data"]["HF_TOKEN"]).decode() == TOKEN
    assert set(tls["data"]) == {"ca.crt", "tls.key"}
    order = request_order(emulator)
    assert order[:3] == [("POST", SECRETS), ("POST", SECRETS), ("POST", JOBS)]
    (job,) = (r.data for r in emulator.sent("POST", JOBS))
    pod = job["spec"]["template"]["spec"]
    (main,) = pod["containers"]
    assert main["envFrom"] == [{"secretRef": {"name": f"{name}-hf"}}]
    assert main["volumeMounts"] == [
        {"name": "bud-secret-1", "mountPath": "/etc/tls", "readOnly": True}
    ]
    assert pod["volumes"] == [
        {"name": "bud-secret-1", "secret": {"secretName": f"{name}-tls", "defaultMode": 0o400}}
    ]
    patches = [r for r in emulator if r.method == "PATCH" and "/secrets/" in r.url.path]
    assert [r.url.path for r in patches] == [f"{SECRETS}/{name}-hf", f"{SECRETS}/{name}-tls"]
    (owner,) = patches[0].data["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"]) == ("Job", name) and owner["uid"]
    assert TOKEN not in caplog.text and base64.b64encode(TOKEN.encode()).decode() not in caplog.text


async def test_a_second_hand_over_replaces_the_values(emulator: KubeEmulator) -> None:
    async with gateway_on(emulator) as gateway:
        await gateway.submit(with_secrets())
        changed = with_secrets()
        changed = replace(changed, secrets=(MountedSecret(SecretRef("hf"), {"HF_TOKEN": "new"}),))
        await gateway.submit(changed)
    assert len(emulator.sent("POST", SECRETS)) == 3  # the third was there: a conflict
    (replaced,) = [
        r.data
        for r in emulator
        if r.method == "PATCH" and r.url.path.endswith("-hf") and "data" in (r.data or {})
    ]
    assert base64.b64decode(replaced["data"]["HF_TOKEN"]) == b"new"


async def test_a_job_sets_pods_read_them_and_the_job_set_owns_them(
    emulator: KubeEmulator,
) -> None:
    emulator.serve_job_sets()
    workers = PodSet("workers", pod_count=2, gpu_count=2)
    async with gateway_on(emulator) as gateway:
        await gateway.submit(
            with_secrets(resources=Resources("nvidia-a100-80gb", 4, pod_sets=(workers,)))
        )
    (job_set,) = (r.data for r in emulator.sent("POST", JOBSETS))
    for each in job_set["spec"]["replicatedJobs"]:
        pod = each["template"]["spec"]["template"]["spec"]
        assert pod["containers"][0]["envFrom"][0]["secretRef"]["name"].endswith("-hf")
        assert pod["volumes"][0]["secret"]["secretName"].endswith("-tls")
    patches = [r.data for r in emulator if r.method == "PATCH" and "/secrets/" in r.url.path]
    assert [p["metadata"]["ownerReferences"][0]["kind"] for p in patches] == ["JobSet", "JobSet"]


async def test_cancel_deletes_the_attempts_secrets_and_no_others(emulator: KubeEmulator) -> None:
    async with gateway_on(emulator) as gateway:
        await gateway.submit(with_secrets())
        await gateway.submit(with_secrets(attempt=1, name="bud-10b000000000400080-a1"))
        await gateway.cancel(JOB, 0)
    deleted = [r.url.path for r in emulator if r.method == "DELETE" and "/secrets/" in r.url.path]
    assert sorted(deleted) == [
        f"{SECRETS}/bud-10b000000000400080-a0-hf",
        f"{SECRETS}/bud-10b000000000400080-a0-tls",
    ]


async def test_a_cluster_that_hides_secrets_still_cancels(emulator: KubeEmulator) -> None:
    async with gateway_on(emulator) as gateway:
        await gateway.submit(workload())
        emulator.forbid("v1/secrets")
        await gateway.cancel(JOB, 0)
    assert [r.url.path for r in emulator if r.method == "DELETE"] == [f"{JOBS}/{workload().name}"]


async def test_a_job_with_secrets_is_refused_through_a_multikueue_manager(
    emulator: KubeEmulator,
) -> None:
    async with gateway_on(emulator) as gateway:
        with pytest.raises(ReleaseRejected, match="MultiKueue"):
            await gateway.submit(with_secrets(run_on="worker-1"))
    assert emulator.sent("POST", SECRETS) == []


def render(chart: str, values: dict[str, Any]) -> list[Json]:
    loaded = helm_python.Chart.load(CHARTS / chart)
    out = loaded.render(values, name="bud-x-a0", namespace=NS, is_install=True)
    return [d for text in out.values() for d in yaml.safe_load_all(text) if d]


def pod_of(docs: list[Json]) -> Json:
    (deployment,) = [d for d in docs if d["kind"] == "Deployment"]
    pod: Json = deployment["spec"]["template"]["spec"]
    return pod


def test_the_service_chart_gives_its_pods_the_secrets() -> None:
    service = with_secrets(job_type=JobType.SERVICE, spec={"image": "nginx:1.27", "port": 80})
    release = service_release(service, cluster_id=CLUSTER)
    pod = pod_of(render("bud-service", dict(release.values)))
    (main,) = pod["containers"]
    assert main["envFrom"] == [{"secretRef": {"name": f"{service.name}-hf"}}]
    assert main["volumeMounts"] == [
        {"name": "bud-secret-0", "mountPath": "/etc/tls", "readOnly": True}
    ]
    assert pod["volumes"] == [
        {
            "name": "bud-secret-0",
            "secret": {"secretName": f"{service.name}-tls", "defaultMode": 256},
        }
    ]
    without = pod_of(
        render(
            "bud-service",
            dict(
                service_release(
                    workload(job_type=JobType.SERVICE, spec={"image": "nginx:1.27"}),
                    cluster_id=CLUSTER,
                ).values
            ),
        )
    )
    assert "envFrom" not in without["containers"][0] and "volumes" not in without


def test_the_vllm_chart_gives_a_replica_the_secrets() -> None:
    replica = with_secrets(
        job_type=JobType.SERVICE,
        deployment_type=DeploymentType.MODEL,
        spec={
            "deployment": {
                "id": "d1",
                "replica": 0,
                "model": "meta-llama/Llama-3.1-8B-Instruct",
                "engine_args": engine_args_document(EngineArgs()),
            }
        },
    )
    release = service_release(replica, cluster_id=CLUSTER)
    pod = pod_of(render("bud-vllm", dict(release.values)))
    (main,) = pod["containers"]
    assert main["envFrom"] == [{"secretRef": {"name": f"{replica.name}-hf"}}]
    assert {"name": "bud-secret-0", "mountPath": "/etc/tls", "readOnly": True} in main[
        "volumeMounts"
    ]
    assert [v["name"] for v in pod["volumes"]] == ["shm", "cache", "bud-secret-0"]
