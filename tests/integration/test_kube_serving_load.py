"""How busy a model deployment on a real cluster is (KubeEndpoints.load, what the autoscaler
reads): each running replica's vLLM /metrics through the API server's pod proxy, against kmock's
emulator over HTTP, with the cluster registered and connected through the service (its sealed
kubeconfig) as the other Kueue tests do.

Covers: both replicas' pods read at /api/v1/namespaces/<ns>/pods/<pod>:8000/proxy/metrics (as
text/plain), never through a Service (which fronts every replica's pods); requests in flight
per replica (running + waiting, over engines) in the order of `running`, none held and no last
request time; queue time None on the first read and the mean over the requests counted since on
the next, none when none was counted, afresh for a replica whose pod changed or whose process
restarted; a replica without a Ready pod (not Ready, gone, being deleted, or only another
cluster's or an unmanaged pod with its labels), one whose proxy answers 503 or 500, one serving
text that is not vLLM's metrics, more than the byte limit, or nothing in time gives None (no
error), and the next read works again on the same connection; an unreachable cluster or one
refusing the credentials gives None; no running replica, or no connection to clusters, gives
None; ServingRouter sends a Kubernetes cluster's read here; neither the token nor what a
replica served reaches the log. And the emulator's proxy as the API server answers it: a
Service's or a pod's 404 when it is not there, 503 when nothing listens, else its answer.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from adapters.clock import ManualClock
from adapters.db.engine import Database
from adapters.kubernetes.api import WorkloadApi
from adapters.kubernetes.connection import KubeClusterApi
from adapters.kubernetes.gateway import KueueGateways
from adapters.kubernetes.kueue.models import DEPLOYMENT_LABEL, replica_service
from adapters.kubernetes.serving import KubeEndpoints
from adapters.simulated.endpoints import SimulatedEndpoints
from budcluster.routers import ServingRouter
from domain.model.autoscaling import ServingLoad
from domain.model.cluster import Cluster
from domain.model.deployment import Deployment, DeploymentStatus, Engine, EngineArgs
from domain.model.ids import ClusterId, DeploymentId, JobId, ProjectId
from domain.model.quota import tenant_namespace
from tests.integration.test_kueue_jobs_flow import ALICE, kueue_cluster
from tests.integration.test_kueue_services import World
from tests.support.kube_emulator import (
    DEFAULT_TOKEN,
    KubeEmulator,
    ProxyRead,
    kubeconfig_for,
    running_emulator,
)

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
NS = tenant_namespace(ALICE.tenant_id)
FIRST, SECOND = (JobId(uuid.UUID(f"5e000000-0000-4000-8000-00000000000{i}")) for i in (1, 2))
Json = dict[str, Any]


@pytest.fixture
async def world(pg: Database, tmp_path: Path) -> AsyncIterator[World]:
    """On PostgreSQL alone: what is read here never touches the database."""
    async with kueue_cluster(pg, tmp_path) as world:
        yield world


async def cluster_of(world: World) -> Cluster:
    app, _, cluster_id = world
    found = await app.clusters.get(cluster_id)
    assert found is not None
    return found


def endpoints(world: World, **options: Any) -> KubeEndpoints:
    """KubeEndpoints on the service's own connections to its real clusters."""
    return KubeEndpoints(world[0].gateways.real, **options)


def deployment(cluster_id: ClusterId) -> Deployment:
    return Deployment(
        id=DeploymentId(uuid.UUID("de000000-0000-4000-8000-000000000001")),
        tenant_id=ALICE.tenant_id,
        project_id=ProjectId(uuid.uuid4()),
        cluster_id=cluster_id,
        name="llama",
        model="meta-llama/Meta-Llama-3-8B-Instruct",
        served_model_name="llama-3-8b",
        engine=Engine.VLLM,
        engine_args=EngineArgs(),
        gpu_type="nvidia-a100-80gb",
        cpu_cores=8.0,
        memory_gb=64.0,
        replicas=2,
        created_at=NOW,
        updated_at=NOW,
        status=DeploymentStatus.RUNNING,
        replica_jobs=(FIRST, SECOND),
    )


def replica_pod(
    world: World,
    job_id: JobId,
    name: str,
    *,
    attempt: int = 0,
    ready: bool = True,
    cluster: str | None = None,
    managed: bool = True,
    deleting: bool = False,
) -> Json:
    """A replica's pod as the bud-vllm chart makes it (its labels), Ready on a node, seeded."""
    _, emulator, cluster_id = world
    labels = {
        "app.kubernetes.io/managed-by": "budcluster" if managed else "Helm",
        "bud.ai/cluster-id": cluster or str(cluster_id),
        "bud.ai/job-id": str(job_id),
        "bud.ai/attempt": str(attempt),
        "bud.ai/release": f"bud-{job_id.hex[:20]}-a{attempt}",
        DEPLOYMENT_LABEL: "de000000-0000-4000-8000-000000000001",
    }
    metadata: Json = {
        "name": name,
        "namespace": NS,
        "uid": str(uuid.uuid4()),
        "labels": labels,
        "creationTimestamp": "2026-11-22T11:00:00Z",
    }
    if deleting:
        metadata["deletionTimestamp"] = "2026-11-22T12:00:00Z"
    pod: Json = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {"nodeName": "gpu-a100-0", "containers": [{"name": "main", "image": "vllm"}]},
        "status": {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }
    emulator.seed(pod)
    return pod


def replica_service_object(job_id: JobId) -> Json:
    """The replica's Service: it selects every replica's pods, by the deployment's id."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": replica_service(job_id), "namespace": NS},
        "spec": {
            "selector": {DEPLOYMENT_LABEL: "de000000-0000-4000-8000-000000000001"},
            "ports": [{"name": "http", "port": 8000}],
        },
    }


def two_replicas(world: World) -> None:
    """Both replicas' pods, r0 of FIRST and r1 of SECOND, and their Services."""
    replica_pod(world, FIRST, "llama-r0")
    replica_pod(world, SECOND, "llama-r1")
    world[1].seed(replica_service_object(FIRST), replica_service_object(SECOND))


def metrics(running: int, waiting: int, queue: tuple[float, int] | None = None) -> str:
    """vLLM's /metrics with these gauges (split over two engines) and queue-time totals."""
    lines = [
        "# HELP vllm:num_requests_running Number of requests in model execution batches.",
        "# TYPE vllm:num_requests_running gauge",
        f'vllm:num_requests_running{{engine="0",model_name="llama-3-8b"}} {running}.0',
        'vllm:num_requests_running{engine="1",model_name="llama-3-8b"} 0.0',
        "# TYPE vllm:num_requests_waiting gauge",
        f'vllm:num_requests_waiting{{engine="0",model_name="llama-3-8b"}} {waiting}.0',
    ]
    if queue is not None:
        seconds, count = queue
        lines += [
            "# TYPE vllm:request_queue_time_seconds histogram",
            f'vllm:request_queue_time_seconds_bucket{{le="+Inf",model_name="m"}} {count}.0',
            f'vllm:request_queue_time_seconds_count{{model_name="m"}} {count}.0',
            f'vllm:request_queue_time_seconds_sum{{model_name="m"}} {seconds}',
        ]
    return "\n".join(lines) + "\n"


def serve(emulator: KubeEmulator, pod: str, text: str, status: int = 200, **options: Any) -> None:
    emulator.set_proxy("pods", NS, pod, 8000, "metrics", text, status, **options)


def read_of(pod: str) -> ProxyRead:
    return ProxyRead(f"/api/v1/namespaces/{NS}/pods/{pod}:8000/proxy/metrics", "text/plain")


async def load(
    world: World, reader: KubeEndpoints, running: Sequence[JobId] = (FIRST, SECOND)
) -> ServingLoad | None:
    cluster = await cluster_of(world)
    return await reader.load(cluster, deployment(cluster.id), running)


# --- reading ------------------------------------------------------------------------------------


async def test_each_replicas_own_pod_is_read_in_running_order(world: World) -> None:
    _, emulator, _ = world
    two_replicas(world)
    serve(emulator, "llama-r0", metrics(2, 1, (10.0, 5)))
    serve(emulator, "llama-r1", metrics(0, 0, (0.0, 0)))
    reader = endpoints(world)

    first = await load(world, reader)
    assert first == ServingLoad(in_flight=(3, 0), queue_seconds=None, held=0, last_request_at=None)
    assert sorted(emulator.proxy_requests) == [read_of("llama-r0"), read_of("llama-r1")]

    # 3 requests waited 6 s on r0, 1 waited 2 s on r1, since the first read
    serve(emulator, "llama-r0", metrics(4, 2, (16.0, 8)))
    serve(emulator, "llama-r1", metrics(1, 0, (2.0, 1)))
    second = await load(world, reader)
    assert second == ServingLoad(in_flight=(6, 1), queue_seconds=2.0)

    assert await load(world, reader, (SECOND, FIRST)) == ServingLoad((1, 6), None)  # none since
    assert all("/services/" not in read.path for read in emulator.proxy_requests)


async def test_serving_router_sends_a_kubernetes_clusters_read_here(world: World) -> None:
    app, emulator, _ = world
    two_replicas(world)
    serve(emulator, "llama-r0", metrics(1, 0))
    serve(emulator, "llama-r1", metrics(0, 2))
    router = ServingRouter(SimulatedEndpoints(app.serving), endpoints(world))
    cluster = await cluster_of(world)
    assert await router.load(cluster, deployment(cluster.id), [FIRST, SECOND]) == ServingLoad(
        (1, 2), None
    )


async def test_a_replica_whose_pod_changed_or_restarted_starts_afresh(world: World) -> None:
    _, emulator, _ = world
    two_replicas(world)
    serve(emulator, "llama-r0", metrics(0, 0, (10.0, 5)))
    serve(emulator, "llama-r1", metrics(0, 0, (10.0, 5)))
    reader = endpoints(world)
    assert (await load(world, reader) or ServingLoad((), 0.0)).queue_seconds is None

    # FIRST handed over again: a new pod (a new process) whose totals merely look larger
    replica_pod(world, FIRST, "llama-r0-b", attempt=1)
    serve(emulator, "llama-r0-b", metrics(0, 0, (40.0, 6)))
    serve(emulator, "llama-r1", metrics(0, 0, (10.0, 5)))  # nothing new on r1
    assert await load(world, reader) == ServingLoad((0, 0), None)
    assert sorted(emulator.proxy_requests[-2:]) == [read_of("llama-r0-b"), read_of("llama-r1")]

    serve(emulator, "llama-r0-b", metrics(0, 0, (43.0, 7)))
    serve(emulator, "llama-r1", metrics(0, 0, (1.0, 1)))  # restarted in place: totals fell
    assert await load(world, reader) == ServingLoad((0, 0), 3.0)


# --- what can't be read -------------------------------------------------------------------------


async def test_a_replica_that_does_not_answer_gives_no_load(world: World) -> None:
    _, emulator, _ = world
    two_replicas(world)
    serve(emulator, "llama-r0", metrics(2, 0, (1.0, 1)))
    reader = endpoints(world)
    assert await load(world, reader) is None  # r1: nothing listens (503)
    serve(emulator, "llama-r1", "Internal Server Error", 500)
    assert await load(world, reader) is None
    serve(emulator, "llama-r1", metrics(0, 0, (0.0, 0)))
    assert await load(world, reader) == ServingLoad((2, 0), None)  # first read of both
    serve(emulator, "llama-r0", metrics(2, 0, (3.0, 2)))
    assert await load(world, reader) == ServingLoad((2, 0), 2.0)


async def test_a_replica_without_a_serving_pod_gives_no_load(world: World) -> None:
    _, emulator, _ = world
    replica_pod(world, FIRST, "llama-r0")
    serve(emulator, "llama-r0", metrics(1, 0))
    serve(emulator, "llama-r1", metrics(1, 0))
    reader = endpoints(world)
    assert await load(world, reader) is None  # r1 has no pod
    for r1 in (
        {"ready": False},
        {"deleting": True},
        {"cluster": str(uuid.uuid4())},  # another cluster's
        {"managed": False},
    ):
        replica_pod(world, SECOND, "llama-r1", **r1)
        assert await load(world, reader) is None, r1
    assert set(emulator.proxy_requests) == {read_of("llama-r0")}  # r1's pod is never read
    replica_pod(world, SECOND, "llama-r1")
    assert await load(world, reader) == ServingLoad((1, 1), None)


async def test_what_is_not_vllms_metrics_gives_no_load(world: World) -> None:
    _, emulator, _ = world
    two_replicas(world)
    serve(emulator, "llama-r0", metrics(1, 0))
    reader = endpoints(world, limit_bytes=64 << 10)
    for served in (
        "<html><body>502 Bad Gateway</body></html>",
        '{"status": "ok"}',
        "http_requests_total 4\n",  # Prometheus text, not vLLM's
        metrics(1, 0) * 200,  # 80 KiB, over the limit
    ):
        serve(emulator, "llama-r1", served)
        assert await load(world, reader) is None, served[:40]
    serve(emulator, "llama-r1", metrics(0, 1))
    assert await load(world, reader) == ServingLoad((1, 1), None)


async def test_a_replica_answering_nothing_in_time_gives_no_load(world: World) -> None:
    _, emulator, _ = world
    two_replicas(world)
    serve(emulator, "llama-r0", metrics(1, 0))
    serve(emulator, "llama-r1", "", hang=True)
    assert await load(world, endpoints(world, timeout_seconds=0.2)) is None
    serve(emulator, "llama-r1", metrics(0, 3))
    assert await load(world, endpoints(world)) == ServingLoad((1, 3), None)  # still connected


async def test_a_cluster_that_does_not_answer_gives_no_load(world: World) -> None:
    _, emulator, _ = world
    two_replicas(world)
    serve(emulator, "llama-r0", metrics(1, 0))
    serve(emulator, "llama-r1", metrics(1, 0))
    for kubeconfig in (
        kubeconfig_for("http://127.0.0.1:9"),
        kubeconfig_for(emulator, token="not-the-token"),
    ):

        async def connect(_: ClusterId, kubeconfig: str = kubeconfig) -> WorkloadApi:
            return await KubeClusterApi.from_kubeconfig(kubeconfig)

        gateways = KueueGateways(connect=connect, clock=ManualClock(NOW))
        try:
            assert await load(world, KubeEndpoints(gateways)) is None
        finally:
            await gateways.close()
    assert emulator.proxy_requests == []


async def test_no_running_replica_or_no_connection_gives_no_load(world: World) -> None:
    two_replicas(world)
    assert await load(world, endpoints(world), ()) is None
    assert await load(world, KubeEndpoints()) is None
    assert world[1].proxy_requests == []


async def test_neither_the_token_nor_what_a_replica_served_is_logged(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    _, emulator, _ = world
    two_replicas(world)
    caplog.set_level(logging.DEBUG)
    serve(emulator, "llama-r0", metrics(7, 0))
    serve(emulator, "llama-r1", "<html>secret-served-page</html>")
    reader = endpoints(world)
    assert await load(world, reader) is None
    serve(emulator, "llama-r1", "", 503)
    assert await load(world, reader) is None
    assert DEFAULT_TOKEN not in caplog.text
    assert "secret-served-page" not in caplog.text and "vllm:" not in caplog.text


# --- the emulator's proxy -----------------------------------------------------------------------


async def test_the_proxy_answers_as_the_api_server_does() -> None:
    async with running_emulator() as emulator:
        emulator.seed(replica_service_object(FIRST))
        service = replica_service(FIRST)
        async with await KubeClusterApi.from_kubeconfig(kubeconfig_for(emulator)) as api:

            async def read(kind: Any, name: str) -> str | None:
                return await api.proxy_get(
                    namespace=NS,
                    kind=kind,
                    name=name,
                    port=8000,
                    path="metrics",
                    limit_bytes=1 << 20,
                    timeout_seconds=5.0,
                )

            assert await read("services", service) is None  # 503: nothing listens
            emulator.set_proxy("services", NS, service, 8000, "metrics", "vllm:x 1\n")
            assert await read("services", service) == "vllm:x 1\n"
            assert await read("services", "bud-nowhere") is None  # 404
            assert await read("pods", "llama-r0") is None  # 404
        statuses = [r.path for r in emulator.proxy_requests]
        assert statuses[0] == f"/api/v1/namespaces/{NS}/services/{service}:8000/proxy/metrics"
        assert len(statuses) == 4
