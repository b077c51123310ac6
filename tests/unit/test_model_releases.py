"""A model deployment's replicas as releases of the bud-vllm chart, and where they serve.

Covers: a replica job made by the deployment service renders as a release of the shipped
bud-vllm chart (one replica, the engine's arguments, cpu and memory, the image when given), its
pods labelled for Kueue and with the deployment's id, its Service named after the replica's job
and selecting every replica's pods (the Deployment still selects its own), rendered by a real
Helm engine; a chart the user names gets the same values; engine arguments that can't be read
are refused by field; a later hand-over supersedes the job's earlier releases only; the
endpoint is the Service of the lowest-numbered running replica; what validation allows on a
Kubernetes cluster.
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import Any

import helm_python
import pytest
import yaml

from adapters.helm.releases import CHARTS
from adapters.kubernetes.kueue.models import DEPLOYMENT_LABEL, replica_service
from adapters.kubernetes.kueue.services import service_release, superseded_by
from adapters.kubernetes.serving import KubeEndpoints
from domain.model.cluster import HealthCheck, Platform
from domain.model.deployment import EndpointState, Engine
from domain.model.ids import ClusterId
from domain.model.job import Job
from domain.model.quota import tenant_namespace
from domain.ports.gateways import Workload
from domain.ports.helm import SHIPPED_VLLM_CHART, ReleaseSpec
from domain.services.deployments import validate_deployment
from tests.unit.test_deployments import World

CLUSTER = ClusterId(uuid.uuid4())


async def replicas(world: World, **changes: Any) -> list[Job]:
    deployment = await world.service.deploy(world.alice, world.request(**changes))
    return world.replica_jobs(deployment)


def rendered(release: ReleaseSpec) -> dict[str, dict[str, Any]]:
    chart = helm_python.Chart.load(CHARTS / release.chart)
    out = chart.render(
        dict(release.values), name=release.name, namespace=release.namespace, is_install=True
    )
    docs = [d for text in out.values() for d in yaml.safe_load_all(text) if d]
    return {d["kind"]: d for d in docs}


async def test_a_replica_is_a_release_of_the_vllm_chart_with_the_deployments_values() -> None:
    world = World()
    first, _ = await replicas(world, served_model_name="llama", cpu_cores=8.0, memory_gb=64.0)
    release = service_release(Workload.of(first), cluster_id=CLUSTER)
    assert (release.name, release.chart, release.shipped) == (
        first.workload_name,
        SHIPPED_VLLM_CHART,
        True,
    )
    values = release.values
    assert values["model"] == "meta-llama/Llama-3.1-8B-Instruct"
    assert (values["servedModelName"], values["tensorParallelSize"]) == ("llama", 2)
    assert (values["replicas"], values["cpu"], values["memory"]) == (1, 8, "64Gi")
    assert "image" not in values

    objects = rendered(release)
    deployment_id = str(first.source.source_id)
    pods = objects["Deployment"]["spec"]["template"]["metadata"]["labels"]
    assert pods[DEPLOYMENT_LABEL] == deployment_id
    assert pods["kueue.x-k8s.io/queue-name"] == "default"
    assert pods["bud.ai/job-id"] == str(first.id)
    service = objects["Service"]
    assert service["metadata"]["name"] == replica_service(first.id)
    assert service["spec"]["selector"] == {DEPLOYMENT_LABEL: deployment_id}
    assert objects["Deployment"]["spec"]["selector"]["matchLabels"] == {
        "app.kubernetes.io/name": "bud-vllm",
        "app.kubernetes.io/instance": first.workload_name,
    }
    (main,) = objects["Deployment"]["spec"]["template"]["spec"]["containers"]
    assert main["resources"]["limits"] == {"nvidia.com/gpu": 2}


async def test_an_image_and_a_chart_of_the_users_are_used() -> None:
    world = World()
    world.cluster.platform = Platform.ON_PREM
    first, _ = await replicas(world, image="ghcr.io/acme/vllm:0.12", chart="acme/vllm")
    release = service_release(Workload.of(first), cluster_id=CLUSTER)
    assert (release.chart, release.shipped) == ("acme/vllm", False)
    assert release.values["image"] == "ghcr.io/acme/vllm:0.12"
    assert release.values["serviceName"] == replica_service(first.id)


async def test_engine_arguments_that_cannot_be_read_are_refused_by_field() -> None:
    world = World()
    first, _ = await replicas(world)
    spec = {**first.spec, "deployment": {**first.spec["deployment"], "engine_args": {}}}
    with pytest.raises(ValueError, match=r"^spec\.deployment\.engine_args:"):
        service_release(replace(Workload.of(first), spec=spec), cluster_id=CLUSTER)


async def test_a_later_hand_over_supersedes_only_earlier_releases_of_its_job() -> None:
    world = World()
    first, _ = await replicas(world)
    stem = f"bud-{first.id.hex[:20]}"
    workload = replace(Workload.of(first), attempt=2, name=f"{stem}-a2")
    assert superseded_by(f"{stem}-a0", workload) and superseded_by(f"{stem}-a1g1", workload)
    assert not superseded_by(f"{stem}-a2", workload)
    assert not superseded_by(f"{stem}-a3", workload)
    assert not superseded_by(f"bud-{uuid.uuid4().hex[:20]}-a0", workload)
    assert not superseded_by(f"{stem}-a1x", workload)


async def test_the_endpoint_is_the_service_of_the_lowest_running_replica() -> None:
    world = World()
    deployment = await world.service.deploy(world.alice, world.request())
    first, second = deployment.replica_jobs
    endpoints = KubeEndpoints()
    assert await endpoints.endpoint(world.cluster, deployment, []) == EndpointState(None, False)
    state = await endpoints.endpoint(world.cluster, deployment, [second])
    namespace = tenant_namespace(world.alice.tenant_id)
    assert (state.url, state.ready) == (
        f"http://{replica_service(second)}.{namespace}.svc.cluster.local:8000/v1",
        True,
    )
    both = await endpoints.endpoint(world.cluster, deployment, [first, second])
    assert both.url is not None and replica_service(first) in both.url


def test_a_kubernetes_cluster_takes_deployments_and_charts() -> None:
    world = World()
    real = replace(world.cluster, platform=Platform.ON_PREM)
    assert validate_deployment(world.request(), real) == []
    assert validate_deployment(world.request(chart="acme/vllm"), real) == []
    other = world.request(engine=Engine.OPENAI_COMPATIBLE, image="ghcr.io/acme/llm:1")
    assert [(i.field, i.code) for i in validate_deployment(other, real)] == [
        ("engine", "UNSUPPORTED")
    ]
    assert validate_deployment(replace(other, chart="acme/llm"), real) == []
    simulated = validate_deployment(world.request(chart="acme/vllm"), world.cluster)
    assert [(i.field, i.code) for i in simulated] == [("chart", "UNSUPPORTED")]


@pytest.mark.parametrize(
    ("kueue", "refused"), [("v0.12.4", True), ("v0.19.2", False), (None, False)]
)
def test_a_kubernetes_cluster_whose_kueue_is_unsupported_takes_no_deployment(
    kueue: str | None, refused: bool
) -> None:
    world = World()
    check = HealthCheck("kueue", kueue is not None, "installed", version=kueue)
    real = replace(world.cluster, platform=Platform.ON_PREM, health=(check,))
    found = [(i.field, i.code, i.message) for i in validate_deployment(world.request(), real)]
    assert found == (
        [
            (
                "cluster_id",
                "UNSUPPORTED_VERSION",
                "Kueue v0.12.4 is installed, outside the supported 0.13 to 0.20: budcluster "
                "hands no work to it; upgrade it first",
            )
        ]
        if refused
        else []
    )
