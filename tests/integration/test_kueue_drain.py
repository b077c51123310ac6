"""Drains on a real cluster: the Kubernetes gateway and quota sync against kmock's emulator over
HTTP (requests asserted as sent: paths, query parameters, bodies).

Covers: the grace period a job declares is its pods' terminationGracePeriodSeconds in a batch
Job, a JobSet's every replicated job and a benchmark's Job, and a chart value of a service's
release (none declared: none); `evict` deletes the attempt's pods with gracePeriodSeconds, those
of a JobSet and a service too, before it deletes their Job (propagationPolicy Background, no
grace) or JobSet or uninstalls the release, leaves pods already terminating, other attempts' and
other clusters' alone, removes an attempt with no pod yet at once, sends a grace of 0 as 1 (as
kubectl does without --force), and a second call sends nothing; `drain_node` cordons the node (a merge patch of spec.unschedulable), lists its pods by
fieldSelector and posts a policy/v1 Eviction for each pod but DaemonSets', mirror pods,
terminating and finished ones and budcluster's own workload pods, returns the pods a
PodDisruptionBudget keeps (429), takes a pod gone (404) as evicted, raises GatewayUnavailable on
a refusal or an unreachable cluster, and does nothing for a node that is gone; `undrain_node`
uncordons; `apply_quotas(hold=True)` gives every ClusterQueue stopPolicy Hold in v1beta1 and
v1beta2 (a change of the model, not drift), and without it the field goes; Kueue's default read
back is no drift, a stop set by hand is restored.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest

from adapters.clock import ManualClock
from adapters.kubernetes.api import WorkloadApi
from adapters.kubernetes.cluster import KubeCluster
from adapters.kubernetes.connection import KubeClusterApi
from adapters.kubernetes.gateway import KueueGateway
from adapters.kubernetes.kueue.services import service_release
from domain.model.ids import ClusterId, JobId, TenantId
from domain.model.job import DeploymentType, JobPriority, JobType, PodSet, Resources
from domain.model.load import LoadPlan
from domain.model.quota import (
    NVIDIA_GPU,
    ClusterQueue,
    FlavorQuotas,
    QuotaSet,
    ResourceFlavor,
    ResourceGroup,
    ResourceQuota,
    tenant_namespace,
)
from domain.ports.gateways import GatewayUnavailable, Workload
from domain.ports.helm import ReleaseInfo, ReleaseSpec
from tests.support import k8s_nodes
from tests.support.kube_emulator import KubeEmulator, kubeconfig_for, running_emulator

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
CLUSTER = ClusterId(uuid.UUID("00000000-0000-4000-8000-0000000d2a10"))
TENANT = TenantId(uuid.UUID("7e000000-0000-4000-8000-000000000001"))
NS = tenant_namespace(TENANT)
JOB = JobId(uuid.UUID("10b00000-0000-4000-8000-000000000001"))
NODE = k8s_nodes.a100_gfd_node()["metadata"]["name"]
JOBS = f"/apis/batch/v1/namespaces/{NS}/jobs"
JOBSETS = f"/apis/jobset.x-k8s.io/v1alpha2/namespaces/{NS}/jobsets"
OURS = {"app.kubernetes.io/managed-by": "budcluster", "bud.ai/cluster-id": str(CLUSTER)}
Json = dict[str, Any]


def workload(**changes: Any) -> Workload:
    base = Workload(
        job_id=JOB,
        attempt=0,
        name="bud-10b000000000400080-a0",
        tenant_id=TENANT,
        job_type=JobType.BATCH,
        priority=JobPriority.NORMAL,
        preemptible=False,
        resources=Resources("nvidia-a100-80gb", 4),
        created_at=NOW,
        spec={"image": "ghcr.io/acme/train:1.4"},
        namespace=NS,
        termination_grace_seconds=120,
    )
    return replace(base, **changes)


def identity(attempt: int = 0, cluster: ClusterId = CLUSTER) -> dict[str, str]:
    return OURS | {
        "bud.ai/cluster-id": str(cluster),
        "bud.ai/job-id": str(JOB),
        "bud.ai/attempt": str(attempt),
    }


def pod(name: str, *, namespace: str = NS, node: str = NODE, **fields: Any) -> Json:
    """A pod on `node`, Running; `labels`, `owners`, `annotations`, `phase`, `deleting`."""
    metadata: Json = {"name": name, "namespace": namespace, "labels": fields.get("labels", {})}
    if "owners" in fields:
        metadata["ownerReferences"] = fields["owners"]
    if "annotations" in fields:
        metadata["annotations"] = fields["annotations"]
    if fields.get("finalizers"):  # the Job controller's: a deleted pod stays while it ends
        metadata["finalizers"] = ["batch.kubernetes.io/job-tracking"]
    if fields.get("deleting"):
        metadata["deletionTimestamp"] = "2026-11-22T11:59:00Z"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {"nodeName": node, "containers": [{"name": "main", "image": "x"}]},
        "status": {"phase": fields.get("phase", "Running")},
    }


def job(name: str, attempt: int = 0) -> Json:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": NS, "labels": identity(attempt)},
        "spec": {"suspend": False},
    }


def owner(kind: str, name: str) -> list[Json]:
    return [{"apiVersion": "apps/v1", "kind": kind, "name": name, "uid": "u1", "controller": True}]


class Releases:
    """Helm for the gateway: the releases it lists, what it installs and uninstalls, and how
    many pod DELETEs the cluster had been sent when each uninstall came."""

    def __init__(self, emulator: KubeEmulator) -> None:
        self.emulator = emulator
        self.installed: list[ReleaseSpec] = []
        self.uninstalled: list[tuple[str, str, int]] = []

    async def install(self, release: ReleaseSpec) -> None:
        self.installed.append(release)

    async def uninstall(self, name: str, namespace: str) -> None:
        deletes = [r for r in self.emulator if r.method == "DELETE" and "/pods/" in r.url.path]
        self.uninstalled.append((name, namespace, len(deletes)))

    async def releases(self) -> list[ReleaseInfo]:
        return []


@pytest.fixture
async def emulator() -> AsyncIterator[KubeEmulator]:
    async with running_emulator() as emulator:
        emulator.seed(k8s_nodes.a100_gfd_node())
        yield emulator


@contextlib.asynccontextmanager
async def gateway_on(
    emulator: KubeEmulator | str, releases: Releases | None = None
) -> AsyncIterator[KueueGateway]:
    api = await KubeClusterApi.from_kubeconfig(kubeconfig_for(emulator))

    async def connect(_: ClusterId) -> WorkloadApi:
        return api

    gateway = KueueGateway(CLUSTER, connect=connect, clock=ManualClock(NOW), releases=releases)
    try:
        yield gateway
    finally:
        await gateway.close()
        await api.close()


def deletes(emulator: KubeEmulator) -> list[tuple[str, dict[str, str]]]:
    return [(r.url.path, dict(r.params)) for r in emulator if r.method == "DELETE"]


def pod_path(name: str, namespace: str = NS) -> str:
    return f"/api/v1/namespaces/{namespace}/pods/{name}"


# --- the grace period in pod templates ------------------------------------------------------


async def test_a_jobs_pods_get_the_grace_period_it_declares(emulator: KubeEmulator) -> None:
    async with gateway_on(emulator) as gateway:
        await gateway.submit(workload())
        await gateway.submit(workload(attempt=1, name="bud-a1", termination_grace_seconds=None))
    declared, undeclared = (r.data for r in emulator.sent("POST", JOBS))
    assert declared["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] == 120
    assert declared["spec"]["template"]["spec"]["restartPolicy"] == "Never"
    assert "terminationGracePeriodSeconds" not in undeclared["spec"]["template"]["spec"]


async def test_a_job_sets_and_a_benchmarks_pods_get_it_too(emulator: KubeEmulator) -> None:
    emulator.serve_job_sets()
    workers = PodSet("workers", pod_count=2, gpu_count=2)
    plan = LoadPlan("http://chat.tenant.svc:8000/v1", "m", concurrency=4, request_count=8)
    async with gateway_on(emulator) as gateway:
        await gateway.submit(
            workload(resources=Resources("nvidia-a100-80gb", 4, pod_sets=(workers,)))
        )
        await gateway.submit(
            workload(
                attempt=1,
                name="bud-bench-a1",
                termination_grace_seconds=45,
                spec={"benchmark": {"id": str(uuid.uuid4()), "plan": plan.document()}},
            )
        )
    (job_set,) = (r.data for r in emulator.sent("POST", JOBSETS))
    replicated = job_set["spec"]["replicatedJobs"]
    assert [r["name"] for r in replicated] == ["main", "workers"]
    for each in replicated:
        assert each["template"]["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] == 120
    (bench,) = (r.data for r in emulator.sent("POST", JOBS))
    assert bench["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] == 45
    assert bench["spec"]["template"]["spec"]["containers"][0]["command"][0] == "python3"


async def test_a_services_release_gives_its_chart_the_grace_period(emulator: KubeEmulator) -> None:
    releases = Releases(emulator)
    service = workload(
        job_type=JobType.SERVICE,
        spec={"image": "vllm/vllm-openai:v0.6", "port": 8000},
        termination_grace_seconds=300,
    )
    async with gateway_on(emulator, releases) as gateway:
        await gateway.submit(service)
    (installed,) = releases.installed
    assert installed.values["terminationGracePeriodSeconds"] == 300
    helm = replace(
        service,
        deployment_type=DeploymentType.HELM,
        spec={"chart": "bitnami/nginx", "values": {"terminationGracePeriodSeconds": 5}},
    )
    assert service_release(helm, cluster_id=CLUSTER).values["terminationGracePeriodSeconds"] == 300
    for undeclared in (
        replace(service, termination_grace_seconds=None),
        replace(helm, termination_grace_seconds=None),
    ):
        values = service_release(undeclared, cluster_id=CLUSTER).values
        assert values.get("terminationGracePeriodSeconds") == (
            5 if undeclared.deployment_type is DeploymentType.HELM else None
        )


# --- evict ----------------------------------------------------------------------------------


async def test_evict_gives_the_pods_their_grace_before_the_job_goes(
    emulator: KubeEmulator,
) -> None:
    job_labels = {"batch.kubernetes.io/job-name": "bud-a0"}
    emulator.seed(
        job("bud-a0"),
        job("bud-a1", attempt=1),
        pod("bud-a0-0", labels=identity() | job_labels, finalizers=True),
        pod("bud-a0-1", labels=identity() | job_labels, finalizers=True),
        pod("bud-a0-old", labels=identity() | job_labels, deleting=True, finalizers=True),
        pod("bud-a1-0", labels=identity(attempt=1)),
        pod("theirs-0", labels=identity(cluster=ClusterId(uuid.uuid4()))),
    )
    async with gateway_on(emulator) as gateway:
        await gateway.evict(JOB, 0, grace_seconds=90)
        sent = deletes(emulator)
        await gateway.evict(JOB, 0, grace_seconds=90)  # a second call changes nothing
    grace = {"propagationPolicy": "Background", "gracePeriodSeconds": "90"}
    assert sent == [
        (pod_path("bud-a0-0"), grace),
        (pod_path("bud-a0-1"), grace),
        (f"{JOBS}/bud-a0", {"propagationPolicy": "Background"}),
    ]
    assert deletes(emulator) == sent
    left = {
        k[2] for k, obj in emulator.objects.items() if k[0].plural == "pods" and not obj.deleted
    }
    assert left == {"bud-a0-0", "bud-a0-1", "bud-a0-old", "bud-a1-0", "theirs-0"}  # ending


async def test_evict_of_a_job_set_and_of_an_attempt_with_no_pod_yet(
    emulator: KubeEmulator,
) -> None:
    emulator.serve_job_sets()
    job_set = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "bud-set-a0", "namespace": NS, "labels": identity()},
        "spec": {"suspend": False},
    }
    in_set = {"jobset.sigs.k8s.io/jobset-name": "bud-set-a0"}
    emulator.seed(
        job_set,
        pod("bud-set-a0-workers-0-0", labels=identity() | in_set),
        job("bud-a1", attempt=1),  # suspended: no pod yet
    )
    async with gateway_on(emulator) as gateway:
        await gateway.evict(JOB, 0, grace_seconds=600)
        await gateway.evict(JOB, 1, grace_seconds=600)
    assert deletes(emulator) == [
        (
            pod_path("bud-set-a0-workers-0-0"),
            {"propagationPolicy": "Background", "gracePeriodSeconds": "600"},
        ),
        (f"{JOBSETS}/bud-set-a0", {"propagationPolicy": "Background"}),
        (f"{JOBS}/bud-a1", {"propagationPolicy": "Background"}),
    ]


async def test_evict_of_a_service_gives_its_pods_the_grace_before_the_uninstall(
    emulator: KubeEmulator,
) -> None:
    release = {"bud.ai/release": "bud-svc-a0"}
    emulator.seed(
        pod("bud-svc-a0-7d9f-abcde", labels=identity() | release),
        pod("bud-svc-a0-7d9f-fghij", labels=identity() | release),
    )
    releases = Releases(emulator)
    async with gateway_on(emulator, releases) as gateway:
        await gateway.evict(JOB, 0, grace_seconds=0)
    grace = {"propagationPolicy": "Background", "gracePeriodSeconds": "1"}  # 0: as kubectl, 1
    assert deletes(emulator) == [
        (pod_path("bud-svc-a0-7d9f-abcde"), grace),
        (pod_path("bud-svc-a0-7d9f-fghij"), grace),
    ]
    assert releases.uninstalled == [("bud-svc-a0", NS, 2)]  # after both pods' DELETEs


# --- drain_node and undrain_node ------------------------------------------------------------


async def test_drain_cordons_and_evicts_what_budcluster_does_not_run(
    emulator: KubeEmulator,
) -> None:
    web = pod("web-5d8f7-x2x9z", namespace="shop", owners=owner("ReplicaSet", "web-5d8f7"))
    guarded = pod("db-0", namespace="shop", owners=owner("StatefulSet", "db"))
    other_budcluster = pod("bud-x-a0-0", labels=identity(cluster=ClusterId(uuid.uuid4())))
    emulator.seed(
        web,
        guarded,
        other_budcluster,
        pod("nvidia-dcgm-exporter-abcde", namespace="gpu-operator", owners=owner("DaemonSet", "d")),
        pod(
            f"kube-proxy-{NODE}",
            namespace="kube-system",
            annotations={"kubernetes.io/config.mirror": "1"},
        ),
        pod("web-5d8f7-old", namespace="shop", deleting=True),
        pod("report-28391", namespace="shop", phase="Succeeded"),
        pod("bud-a0-0", labels=identity()),  # budcluster's: requeued by budcluster itself
        pod("web-5d8f7-elsewhere", namespace="shop", node="ip-10-0-99-1.ec2.internal"),
    )
    emulator.refuse_eviction(guarded)
    async with gateway_on(emulator) as gateway:
        kept = await gateway.drain_node(NODE)
    assert kept == ["shop/db-0"]

    (cordon,) = emulator.sent("PATCH", f"/api/v1/nodes/{NODE}")
    assert cordon.data == {"spec": {"unschedulable": True}}
    assert cordon.headers["Content-Type"] == "application/merge-patch+json"
    node = next(o.raw for k, o in emulator.objects.items() if k[0].plural == "nodes")
    assert node["spec"]["unschedulable"] is True
    (listed,) = emulator.sent("GET", "/api/v1/pods")
    assert listed.params["fieldSelector"] == f"spec.nodeName={NODE}"
    assert [(e["namespace"], e["pod"]) for e in emulator.evictions] == [
        ("shop", "web-5d8f7-x2x9z"),
        ("shop", "db-0"),
        (NS, "bud-x-a0-0"),
    ]
    for eviction in emulator.evictions:
        assert eviction["content_type"] == "application/json"
        assert eviction["body"] == {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": eviction["pod"], "namespace": eviction["namespace"]},
        }

    async with gateway_on(emulator) as gateway:
        await gateway.undrain_node(NODE)
    uncordon = emulator.sent("PATCH", f"/api/v1/nodes/{NODE}")[-1]
    assert uncordon.data == {"spec": {"unschedulable": False}}
    node = next(o.raw for k, o in emulator.objects.items() if k[0].plural == "nodes")
    assert node["spec"]["unschedulable"] is False


async def test_a_pod_gone_is_evicted_and_other_refusals_raise(emulator: KubeEmulator) -> None:
    async with await KubeClusterApi.from_kubeconfig(kubeconfig_for(emulator)) as api:
        assert await api.evict_pod(namespace="shop", name="gone") is True
    assert emulator.evictions[-1]["pod"] == "gone"

    locked = pod("locked-0", namespace="shop")
    emulator.seed(locked)
    emulator.refuse_eviction(locked, 403)
    async with gateway_on(emulator) as gateway:
        with pytest.raises(GatewayUnavailable, match="may not"):
            await gateway.drain_node(NODE)
        assert await gateway.drain_node("ip-10-0-0-404.ec2.internal") == []  # gone: nothing
    assert not emulator.sent("GET", "/api/v1/pods")[1:]  # no listing for the node gone

    async with gateway_on("http://127.0.0.1:9") as unreachable:
        with pytest.raises(GatewayUnavailable):
            await unreachable.drain_node(NODE)


# --- a cluster held whole -------------------------------------------------------------------


def two_queues() -> QuotaSet:
    gpus = ResourceGroup((NVIDIA_GPU,), (FlavorQuotas("a100", (ResourceQuota(NVIDIA_GPU, 8),)),))
    return QuotaSet(
        flavors=(ResourceFlavor(CLUSTER, "a100", {}, NOW, NOW),),
        cluster_queues=tuple(
            ClusterQueue(CLUSTER, name, NOW, NOW, resource_groups=(gpus,))
            for name in ("default", "research")
        ),
    )


@pytest.mark.parametrize("version", ["v1beta1", "v1beta2"])
async def test_a_held_clusters_queues_admit_nothing_new(
    emulator: KubeEmulator, version: str
) -> None:
    emulator.serve_kueue(version)
    queues = f"/apis/kueue.x-k8s.io/{version}/clusterqueues"
    cluster = KubeCluster(
        await KubeClusterApi.from_kubeconfig(kubeconfig_for(emulator)), cluster_id=CLUSTER
    )

    def live() -> dict[str, Json]:
        return {o["metadata"]["name"]: o["spec"] for o in emulator.kueue_objects("clusterqueues")}

    def puts() -> list[Json]:
        return [r.data for r in emulator if r.method == "PUT" and r.url.path.startswith(queues)]

    try:
        first = await cluster.apply_quotas(two_queues())
        assert [q.data["spec"].get("stopPolicy") for q in emulator.sent("POST", queues)] == [
            None
        ] * 2

        held = await cluster.apply_quotas(two_queues(), applied_before=first.applied, hold=True)
        assert held.check.ok, held.check
        assert held.updated == ["ClusterQueue/default", "ClusterQueue/research"]
        assert held.restored == []  # the model changed: not drift
        assert [p["spec"]["stopPolicy"] for p in puts()] == ["Hold", "Hold"]
        assert {name: spec["stopPolicy"] for name, spec in live().items()} == {
            "default": "Hold",
            "research": "Hold",
        }
        again = await cluster.apply_quotas(two_queues(), applied_before=held.applied, hold=True)
        assert (again.updated, again.restored, len(puts())) == ([], [], 2)

        lifted = await cluster.apply_quotas(two_queues(), applied_before=again.applied)
        assert lifted.updated == ["ClusterQueue/default", "ClusterQueue/research"]
        assert ["stopPolicy" in p["spec"] for p in puts()[2:]] == [False, False]
        assert all("stopPolicy" not in spec for spec in live().values())

        for name in ("default", "research"):  # Kueue's default, as a real API server reads back
            await emulator.patch(f"{queues}/{name}", json={"spec": {"stopPolicy": "None"}})
        settled = await cluster.apply_quotas(two_queues(), applied_before=lifted.applied)
        assert (settled.updated, settled.restored, len(puts())) == ([], [], 4)  # no flapping

        await emulator.patch(f"{queues}/research", json={"spec": {"stopPolicy": "HoldAndDrain"}})
        restored = await cluster.apply_quotas(two_queues(), applied_before=settled.applied)
        assert restored.restored == ["ClusterQueue/research (spec.stopPolicy changed)"]
        assert "stopPolicy" not in puts()[-1]["spec"]
    finally:
        await cluster.close()
