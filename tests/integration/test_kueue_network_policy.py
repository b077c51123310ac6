"""Tenant namespaces' isolation NetworkPolicies, put onto a cluster with the quota model, against
kmock's emulator over HTTP, for both kueue.x-k8s.io versions.

Covers: each tenant namespace gets the NetworkPolicy `bud-tenant-isolation` (POSTed to its
namespace after the namespace: ingress only from its tenant's namespaces and from namespaces of
no tenant), reported created, and a second pass sends nothing; one changed in the cluster is put
back whole (PUT) and one deleted there is made again, both reported as drift with the reason; a
tenant the model no longer has loses its policy (DELETE, reported removed), found by a list
narrowed to this cluster's label, while a benchmark's egress policy, another cluster's isolation
policy and the namespaces stay; a cluster with no tenant lists no policies.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import pytest

from adapters.kubernetes.cluster import KubeCluster
from adapters.kubernetes.connection import KubeClusterApi
from domain.model.ids import ClusterId, TenantId
from domain.model.quota import (
    NVIDIA_GPU,
    ClusterQueue,
    FlavorQuotas,
    LocalQueue,
    QuotaSet,
    ResourceFlavor,
    ResourceGroup,
    ResourceQuota,
    tenant_namespace,
)
from domain.ports.cluster_api import QuotasApplied
from tests.support.kube_emulator import KubeEmulator, kubeconfig_for, running_emulator

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
CLUSTER = ClusterId(uuid.UUID("00000000-0000-4000-8000-00000000c1a5"))
ALICE = TenantId(uuid.UUID("a11ce000-0000-4000-8000-000000000001"))
BOB = TenantId(uuid.UUID("b0b00000-0000-4000-8000-000000000002"))
POLICY = "bud-tenant-isolation"
TENANT_LABEL = "bud.ai/tenant-id"
POLICIES = "/apis/networking.k8s.io/v1/networkpolicies"
OURS = {"app.kubernetes.io/managed-by": "budcluster", "bud.ai/cluster-id": str(CLUSTER)}

World = tuple[KubeEmulator, KubeCluster]


@pytest.fixture(params=["v1beta1", "v1beta2"])
async def world(request: pytest.FixtureRequest) -> AsyncIterator[World]:
    async with running_emulator() as emulator:
        emulator.serve_kueue(request.param)
        api = await KubeClusterApi.from_kubeconfig(kubeconfig_for(emulator))
        cluster = KubeCluster(api, cluster_id=CLUSTER)
        try:
            yield emulator, cluster
        finally:
            await cluster.close()


def quotas(*tenants: TenantId) -> QuotaSet:
    gpus = ResourceGroup((NVIDIA_GPU,), (FlavorQuotas("a100", (ResourceQuota(NVIDIA_GPU, 8),)),))
    return QuotaSet(
        flavors=(ResourceFlavor(CLUSTER, "a100", {}, NOW, NOW),),
        cluster_queues=(ClusterQueue(CLUSTER, "default", NOW, NOW, resource_groups=(gpus,)),),
        local_queues=tuple(
            LocalQueue(CLUSTER, "default", tenant_namespace(t), t, "default", NOW) for t in tenants
        ),
    )


def path(tenant: TenantId, name: str = POLICY) -> str:
    return (
        f"/apis/networking.k8s.io/v1/namespaces/{tenant_namespace(tenant)}/networkpolicies/{name}"
    )


def key(tenant: TenantId) -> str:
    return f"NetworkPolicy/{tenant_namespace(tenant)}/{POLICY}"


def isolation_spec(tenant: TenantId) -> dict[str, Any]:
    return {
        "podSelector": {},
        "policyTypes": ["Ingress"],
        "ingress": [
            {
                "from": [
                    {"namespaceSelector": {"matchLabels": {TENANT_LABEL: str(tenant)}}},
                    {
                        "namespaceSelector": {
                            "matchExpressions": [{"key": TENANT_LABEL, "operator": "DoesNotExist"}]
                        }
                    },
                ]
            }
        ],
    }


def policies(emulator: KubeEmulator) -> dict[tuple[str, str], dict[str, Any]]:
    return {
        (obj.raw["metadata"]["namespace"], obj.raw["metadata"]["name"]): obj.raw
        for (resource, _, _), obj in emulator.objects.items()
        if resource.plural == "networkpolicies" and not obj.deleted
    }


def policy_writes(emulator: KubeEmulator) -> list[str]:
    return [
        f"{r.method} {r.url.path}"
        for r in emulator
        if r.method in ("POST", "PUT", "DELETE") and "/networkpolicies" in r.url.path
    ]


async def test_each_tenant_namespace_gets_its_isolation_policy(world: World) -> None:
    emulator, cluster = world
    done = await cluster.apply_quotas(quotas(ALICE, BOB))
    assert done.check.ok, done.check
    assert [k for k in done.created if k.startswith("NetworkPolicy/")] == [key(ALICE), key(BOB)]
    assert set(done.applied) >= {key(ALICE), key(BOB)}
    for tenant in (ALICE, BOB):
        namespace = tenant_namespace(tenant)
        collection = path(tenant).rpartition("/")[0]
        (posted,) = emulator.sent("POST", collection)
        assert posted.data["apiVersion"] == "networking.k8s.io/v1"
        assert posted.data["kind"] == "NetworkPolicy"
        assert posted.data["metadata"]["name"] == POLICY
        assert posted.data["metadata"]["namespace"] == namespace
        assert posted.data["metadata"]["labels"] == OURS | {TENANT_LABEL: str(tenant)}
        assert posted.data["spec"] == isolation_spec(tenant)
        assert namespace in emulator.namespaces  # made before its policy
        assert policies(emulator)[(namespace, POLICY)]["spec"] == isolation_spec(tenant)

    writes = len(policy_writes(emulator))
    again = await cluster.apply_quotas(quotas(ALICE, BOB), applied_before=done.applied)
    assert (again.created, again.updated, again.restored, again.removed) == ([], [], [], [])
    assert len(policy_writes(emulator)) == writes  # nothing sent the second time


async def test_a_policy_changed_or_deleted_in_the_cluster_is_restored(world: World) -> None:
    emulator, cluster = world
    done = await cluster.apply_quotas(quotas(ALICE, BOB))
    loosened: dict[str, Any] = {"spec": {"ingress": [{"from": [{"namespaceSelector": {}}]}]}}
    assert (await emulator.patch(path(ALICE), json=loosened)).status == 200
    assert (await emulator.delete(path(BOB))).status == 200

    again = await cluster.apply_quotas(quotas(ALICE, BOB), applied_before=done.applied)
    assert again.check.ok, again.check
    assert sorted(again.restored) == [
        f"{key(ALICE)} (spec.ingress[0].from changed)",
        f"{key(BOB)} (missing)",
    ]
    assert "restored after drift" in again.check.detail
    (put,) = emulator.sent("PUT", path(ALICE))
    assert put.data["spec"] == isolation_spec(ALICE)
    assert len(emulator.sent("POST", path(BOB).rpartition("/")[0])) == 2  # made again
    live = policies(emulator)
    assert live[(tenant_namespace(ALICE), POLICY)]["spec"] == isolation_spec(ALICE)
    assert live[(tenant_namespace(BOB), POLICY)]["spec"] == isolation_spec(BOB)


async def test_a_tenant_the_model_dropped_loses_its_policy_and_nothing_else(
    world: World,
) -> None:
    emulator, cluster = world
    done = await cluster.apply_quotas(quotas(ALICE, BOB))
    benchmark: dict[
        str, Any
    ] = {  # what the gateway makes for a benchmark's Job: not a quota object
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {
            "name": "bud-0123456789abcdef0123-a0",
            "namespace": tenant_namespace(BOB),
            "labels": OURS | {"bud.ai/job-id": str(uuid.uuid4()), "bud.ai/attempt": "0"},
        },
        "spec": {"podSelector": {}, "policyTypes": ["Egress"], "egress": []},
    }
    elsewhere: dict[str, Any] = {  # another cluster's (one kubeconfig may reach it twice)
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {
            "name": POLICY,
            "namespace": "shared",
            "labels": OURS | {"bud.ai/cluster-id": str(uuid.uuid4()), TENANT_LABEL: str(BOB)},
        },
        "spec": isolation_spec(BOB),
    }
    await emulator.create(benchmark)
    await emulator.create(elsewhere)

    after = await cluster.apply_quotas(quotas(ALICE), applied_before=done.applied)
    assert after.check.ok, after.check
    assert after.removed == [f"LocalQueue/{tenant_namespace(BOB)}/default", key(BOB)]
    assert emulator.sent("DELETE", path(BOB))
    listed = emulator.sent("GET", POLICIES)  # once a pass
    assert [r.params.get("labelSelector") for r in listed] == [f"bud.ai/cluster-id={CLUSTER}"] * 2
    assert set(policies(emulator)) == {
        (tenant_namespace(ALICE), POLICY),
        (tenant_namespace(BOB), benchmark["metadata"]["name"]),
        ("shared", POLICY),
    }
    assert tenant_namespace(BOB) in emulator.namespaces  # namespaces are never deleted

    gone = await cluster.apply_quotas(quotas(), applied_before=after.applied)
    assert gone.removed == [f"LocalQueue/{tenant_namespace(ALICE)}/default", key(ALICE)]
    listings = len(emulator.sent("GET", POLICIES))
    settled: QuotasApplied = await cluster.apply_quotas(quotas(), applied_before=gone.applied)
    assert settled.removed == []
    assert len(emulator.sent("GET", POLICIES)) == listings  # no tenant, none before: no list
