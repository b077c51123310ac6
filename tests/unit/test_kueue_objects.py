"""Rendering the quota model as Kueue's objects, and telling drift from noise.

Covers: the API version chosen from what a cluster serves; quantities per resource (cpu cores or
millicores, memory GiB or MiB, whole GPU counts) and fair-sharing weights (to 1n, rounded up);
full ClusterQueues in v1beta1 and v1beta2 (the cohort field's name, two resource groups, limits
only when set and only in a cohort, a covered resource without a quota, preemption with
borrowWithinCohort and its threshold, flavorFungibility in each version's names and its
preference only when set, the weight);
Cohorts in full (parent, own quotas with limits only under a parent, a lending limit above
nominal, weight; an implicit parent as an empty Cohort); ResourceFlavors, LocalQueues, tenant
Namespaces (tenant and Pod Security labels) and WorkloadPriorityClasses in full; creation order;
ownership labels and the spec hash (stable across key order, changed by a quota); object keys and
URL paths; drift: missing, changed, added, being deleted, wrong labels, stale hash, and no drift
for server noise (status, resourceVersion, managedFields, defaults, quantities and weights as
strings, v1beta1's old fungibility names read back as MayStopSearch, other labels); a flavor
fungibility preference changed, removed or added on the cluster is drift. A held cluster's
ClusterQueues (both versions) say stopPolicy Hold, others none, and a stopPolicy read back as
None is no drift while one set on the cluster (Hold, HoldAndDrain) or lifted is; each tenant
namespace's isolation NetworkPolicy in full (ingress from its tenant's namespaces and from
namespaces of no tenant), and drift of its selectors, peers, ports and policy types.
"""

from __future__ import annotations

import copy
import uuid
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest

from adapters.kubernetes.kueue.drift import drifted
from adapters.kubernetes.kueue.objects import (
    CLUSTER_QUEUE,
    COHORT,
    CREATION_ORDER,
    KUEUE_GROUP,
    LOCAL_QUEUE,
    NAMESPACE,
    NETWORK_POLICY,
    PLURALS,
    RESOURCE_FLAVOR,
    SPEC_HASH,
    TENANT_ISOLATION,
    WORKLOAD_PRIORITY_CLASS,
    KueueVersion,
    choose_version,
    collection_path,
    desired_objects,
    object_key,
    object_path,
    owned_part,
    priority_class_name,
    quantity,
    spec_hash,
    weight,
)
from domain.model.ids import ClusterId, TenantId
from domain.model.job import JobPriority
from domain.model.quota import (
    AMD_GPU,
    CPU,
    GAUDI,
    GPU_LABEL,
    MEMORY,
    NVIDIA_GPU,
    BorrowWithinCohort,
    BorrowWithinCohortPolicy,
    ClusterQueue,
    Cohort,
    FlavorFungibility,
    FlavorQuotas,
    FungibilityPolicy,
    FungibilityPreference,
    LocalQueue,
    PreemptionPolicy,
    QueueingStrategy,
    QuotaSet,
    ReclaimWithinCohort,
    ResourceFlavor,
    ResourceGroup,
    ResourceQuota,
    WithinClusterQueue,
    WorkloadPriorityClass,
    tenant_namespace,
)

NOW = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
CLUSTER = ClusterId(uuid.UUID("00000000-0000-0000-0000-000000000007"))
TENANT = TenantId(uuid.UUID("2a000000-0000-4000-8000-000000000001"))
OTHER_TENANT = TenantId(uuid.UUID("2b000000-0000-4000-8000-000000000002"))
NS = tenant_namespace(TENANT)
V1 = KueueVersion.V1BETA1
V2 = KueueVersion.V1BETA2
MANAGED = {"app.kubernetes.io/managed-by": "budcluster", "bud.ai/cluster-id": str(CLUSTER)}


def flavor(name: str, labels: dict[str, str] | None = None) -> ResourceFlavor:
    return ResourceFlavor(CLUSTER, name, labels or {}, NOW, NOW)


def gpu_and_cpu_groups() -> tuple[ResourceGroup, ...]:
    gpus = ResourceGroup(
        (NVIDIA_GPU,),
        (
            FlavorQuotas(
                "a100", (ResourceQuota(NVIDIA_GPU, 8, borrowing_limit=4, lending_limit=2),)
            ),
            FlavorQuotas("h100", (ResourceQuota(NVIDIA_GPU, 4),)),
        ),
    )
    cpu = ResourceGroup(
        (CPU, MEMORY),
        (
            FlavorQuotas(
                "default-cpu",
                (ResourceQuota(CPU, 7.5), ResourceQuota(MEMORY, 512, borrowing_limit=64)),
            ),
        ),
    )
    return gpus, cpu


def research(**changes: Any) -> ClusterQueue:
    queue = ClusterQueue(
        CLUSTER,
        "research",
        NOW,
        NOW,
        cohort="platform",
        queueing_strategy=QueueingStrategy.STRICT_FIFO,
        resource_groups=gpu_and_cpu_groups(),
        preemption=PreemptionPolicy(
            WithinClusterQueue.LOWER_OR_NEWER_EQUAL_PRIORITY,
            ReclaimWithinCohort.ANY,
            BorrowWithinCohort(BorrowWithinCohortPolicy.LOWER_PRIORITY, 100),
        ),
        flavor_fungibility=FlavorFungibility(
            FungibilityPolicy.TRY_NEXT_FLAVOR, FungibilityPolicy.MAY_STOP_SEARCH
        ),
        fair_sharing_weight=2.5,
    )
    return replace(queue, **changes)


def local_queue(name: str = "team", tenant: TenantId = TENANT, **changes: Any) -> LocalQueue:
    queue = LocalQueue(CLUSTER, name, tenant_namespace(tenant), tenant, "research", NOW)
    return replace(queue, **changes)


def quota_set(**changes: Any) -> QuotaSet:
    base = QuotaSet(
        flavors=(
            flavor("h100", {GPU_LABEL: "NVIDIA-H100-80GB-HBM3"}),
            flavor("a100", {GPU_LABEL: "NVIDIA-A100-SXM4-80GB"}),
            flavor("default-cpu"),
        ),
        cluster_queues=(research(),),
        local_queues=(local_queue(),),
        cohorts=(Cohort(CLUSTER, "platform", NOW, "shared GPUs"),),
    )
    return replace(base, **changes)


def render(quotas: QuotaSet | None = None, version: KueueVersion = V2, **kw: Any) -> list[Any]:
    return desired_objects(quotas or quota_set(), version, cluster_id=CLUSTER, **kw)


def find(objects: list[Any], kind: str, name: str) -> dict[str, Any]:
    return next(o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name)


def without_hash(obj: dict[str, Any]) -> dict[str, Any]:
    """The object with its spec-hash annotation checked and removed, for whole-object asserts."""
    obj = copy.deepcopy(obj)
    assert obj["metadata"].pop("annotations") == {SPEC_HASH: spec_hash(obj)}
    return obj


def as_served(obj: dict[str, Any]) -> dict[str, Any]:
    """What the API server gives back: metadata noise, status, defaults, quantities as strings."""
    live = copy.deepcopy(obj)
    live["metadata"] |= {
        "uid": "5c1f",
        "resourceVersion": "4711",
        "generation": 3,
        "creationTimestamp": "2026-03-02T12:00:00Z",
        "managedFields": [{"manager": "budcluster", "operation": "Apply"}],
    }
    live["metadata"]["labels"] = {"kubernetes.io/metadata.name": "x", **live["metadata"]["labels"]}
    live["status"] = {"conditions": [{"type": "Active", "status": "True"}]}
    spec: dict[str, Any] = live.get("spec") or {}
    if live["kind"] == CLUSTER_QUEUE:
        spec["stopPolicy"] = "None"
        spec["admissionScope"] = {"admissionMode": "NoAdmissionFairSharing"}
    if live["kind"] in (CLUSTER_QUEUE, COHORT):
        if "fairSharing" in spec:
            spec["fairSharing"]["weight"] = str(spec["fairSharing"]["weight"])
        for group in spec.get("resourceGroups", []):
            for fq in group["flavors"]:
                for quota in fq["resources"]:
                    for field in ("nominalQuota", "borrowingLimit", "lendingLimit"):
                        if field in quota:
                            quota[field] = str(quota[field])
    if live["kind"] == LOCAL_QUEUE:
        spec["stopPolicy"] = "None"
    return live


# --- versions and quantities ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("served", "chosen"),
    [
        (["v1beta1", "v1beta2"], V2),
        (["v1beta2"], V2),
        (["v1beta1"], V1),
        (["v1alpha1", "v1beta1"], V1),
        (["kueue.x-k8s.io/v1beta1", "kueue.x-k8s.io/v1beta2"], V2),
        (["v1alpha1"], None),
        ([], None),
    ],
)
def test_choose_version_prefers_v1beta2(served: list[str], chosen: KueueVersion | None) -> None:
    assert choose_version(served) is chosen


@pytest.mark.parametrize(
    ("resource", "value", "rendered"),
    [
        (CPU, 8, 8),
        (CPU, 8.0, 8),
        (CPU, 1.5, "1500m"),
        (CPU, 0.25, "250m"),
        (CPU, 0.0005, "1m"),
        (CPU, 0, 0),
        (MEMORY, 64, "64Gi"),
        (MEMORY, 512.0, "512Gi"),
        (MEMORY, 1.5, "1536Mi"),
        (MEMORY, 62.78, "64287Mi"),
        (MEMORY, 0, "0Gi"),
        (NVIDIA_GPU, 8.0, 8),
        (AMD_GPU, 3, 3),
        (GAUDI, 2.9, 2),
        (NVIDIA_GPU, 0, 0),
    ],
)
def test_quantity(resource: str, value: float, rendered: str | int) -> None:
    assert quantity(resource, value) == rendered
    assert type(quantity(resource, value)) is type(rendered)


@pytest.mark.parametrize("value", [-1.0, float("nan"), float("inf")])
def test_quantity_refuses_impossible_quotas(value: float) -> None:
    with pytest.raises(ValueError, match="not a finite, non-negative quota"):
        quantity(CPU, value)


@pytest.mark.parametrize(
    ("value", "rendered"),
    [
        (1.0, 1),
        (0, 0),
        (3, 3),
        (0.5, "0.5"),
        (2.25, "2.25"),
        (1e-6, "0.000001"),
        (1.5e-9, "0.000000002"),  # Kubernetes keeps 1n: a finer weight is rounded up
        (1e9, 1000000000),
    ],
)
def test_weight(value: float, rendered: str | int) -> None:
    assert weight(value) == rendered
    assert type(weight(value)) is type(rendered)


@pytest.mark.parametrize("value", [-0.5, float("nan"), float("inf")])
def test_weight_refuses_impossible_weights(value: float) -> None:
    with pytest.raises(ValueError, match="not a finite, non-negative weight"):
        weight(value)


# --- ClusterQueues --------------------------------------------------------------------------


def test_cluster_queue_with_two_resource_groups_in_full() -> None:
    queue = find(render(), CLUSTER_QUEUE, "research")
    assert without_hash(queue) == {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": "research", "labels": MANAGED},
        "spec": {
            "namespaceSelector": {},
            "queueingStrategy": "StrictFIFO",
            "preemption": {
                "withinClusterQueue": "LowerOrNewerEqualPriority",
                "reclaimWithinCohort": "Any",
                "borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": 100},
            },
            "flavorFungibility": {
                "whenCanBorrow": "TryNextFlavor",
                "whenCanPreempt": "MayStopSearch",
            },
            "fairSharing": {"weight": "2.5"},
            "cohortName": "platform",
            "resourceGroups": [
                {
                    "coveredResources": ["nvidia.com/gpu"],
                    "flavors": [
                        {
                            "name": "a100",
                            "resources": [
                                {
                                    "name": "nvidia.com/gpu",
                                    "nominalQuota": 8,
                                    "borrowingLimit": 4,
                                    "lendingLimit": 2,
                                }
                            ],
                        },
                        {
                            "name": "h100",
                            "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 4}],
                        },
                    ],
                },
                {
                    "coveredResources": ["cpu", "memory"],
                    "flavors": [
                        {
                            "name": "default-cpu",
                            "resources": [
                                {"name": "cpu", "nominalQuota": "7500m"},
                                {
                                    "name": "memory",
                                    "nominalQuota": "512Gi",
                                    "borrowingLimit": "64Gi",
                                },
                            ],
                        }
                    ],
                },
            ],
        },
    }


@pytest.mark.parametrize(
    ("version", "api_version", "field", "absent"),
    [
        (V1, "kueue.x-k8s.io/v1beta1", "cohort", "cohortName"),
        (V2, "kueue.x-k8s.io/v1beta2", "cohortName", "cohort"),
    ],
)
def test_cohort_field_per_version(
    version: KueueVersion, api_version: str, field: str, absent: str
) -> None:
    objects = render(version=version)
    queue = find(objects, CLUSTER_QUEUE, "research")
    assert queue["apiVersion"] == api_version
    assert queue["spec"][field] == "platform"
    assert absent not in queue["spec"]
    kueue_objects = [o for o in objects if o["kind"] not in (NAMESPACE, NETWORK_POLICY)]
    assert {o["apiVersion"] for o in kueue_objects} == {api_version}


@pytest.mark.parametrize(
    ("version", "borrow", "preempt", "rendered"),
    [
        (V2, "MAY_STOP_SEARCH", "TRY_NEXT_FLAVOR", ("MayStopSearch", "TryNextFlavor")),
        (V1, "MAY_STOP_SEARCH", "TRY_NEXT_FLAVOR", ("Borrow", "TryNextFlavor")),
        (V2, "TRY_NEXT_FLAVOR", "MAY_STOP_SEARCH", ("TryNextFlavor", "MayStopSearch")),
        (V1, "TRY_NEXT_FLAVOR", "MAY_STOP_SEARCH", ("TryNextFlavor", "Preempt")),
    ],
)
def test_flavor_fungibility_in_each_versions_names(
    version: KueueVersion, borrow: str, preempt: str, rendered: tuple[str, str]
) -> None:
    """v1beta1 before Kueue v0.15 (no v1beta2 served) knows only Borrow / Preempt for
    MayStopSearch; v1beta2 knows only MayStopSearch."""
    fungibility = FlavorFungibility(FungibilityPolicy[borrow], FungibilityPolicy[preempt])
    quotas = quota_set(cluster_queues=(research(flavor_fungibility=fungibility),))
    spec = find(render(quotas, version), CLUSTER_QUEUE, "research")["spec"]
    assert spec["flavorFungibility"] == {
        "whenCanBorrow": rendered[0],
        "whenCanPreempt": rendered[1],
    }


TRY = FungibilityPolicy.TRY_NEXT_FLAVOR


@pytest.mark.parametrize("version", [V1, V2])
@pytest.mark.parametrize("preference", list(FungibilityPreference))
def test_a_fungibility_preference_is_rendered_when_set(
    version: KueueVersion, preference: FungibilityPreference
) -> None:
    """v1beta1 and v1beta2 both have flavorFungibility.preference, spelt alike."""
    fungibility = FlavorFungibility(TRY, TRY, preference)
    quotas = quota_set(cluster_queues=(research(flavor_fungibility=fungibility),))
    spec = find(render(quotas, version), CLUSTER_QUEUE, "research")["spec"]
    assert spec["flavorFungibility"] == {
        "whenCanBorrow": "TryNextFlavor",
        "whenCanPreempt": "TryNextFlavor",
        "preference": preference.value,
    }
    unset = quota_set(cluster_queues=(research(flavor_fungibility=FlavorFungibility(TRY, TRY)),))
    spec = find(render(unset, version), CLUSTER_QUEUE, "research")["spec"]
    assert "preference" not in spec["flavorFungibility"]  # Kueue's default, left to it


def test_a_default_queue_carries_kueues_defaults_whole() -> None:
    """Defaults are rendered too, so that a change made in the cluster is drift."""
    queue = ClusterQueue(CLUSTER, "plain", NOW, NOW)
    spec = find(render(quota_set(cluster_queues=(queue,))), CLUSTER_QUEUE, "plain")["spec"]
    assert spec == {
        "namespaceSelector": {},
        "queueingStrategy": "BestEffortFIFO",
        "preemption": {
            "withinClusterQueue": "LowerPriority",
            "reclaimWithinCohort": "Never",
            "borrowWithinCohort": {"policy": "Never"},
        },
        "flavorFungibility": {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor"},
        "fairSharing": {"weight": 1},
    }


def test_a_queue_without_a_cohort_has_no_cohort_field_and_no_limits() -> None:
    """Kueue refuses borrowing and lending limits on a ClusterQueue outside a cohort."""
    queue = find(
        render(quota_set(cluster_queues=(research(cohort=None),))), CLUSTER_QUEUE, "research"
    )
    spec = queue["spec"]
    assert "cohort" not in spec
    assert "cohortName" not in spec
    assert spec["resourceGroups"][0]["flavors"][0]["resources"] == [
        {"name": "nvidia.com/gpu", "nominalQuota": 8}
    ]
    assert spec["resourceGroups"][1]["flavors"][0]["resources"][1] == {
        "name": "memory",
        "nominalQuota": "512Gi",
    }


@pytest.mark.parametrize(
    ("quota", "rendered"),
    [
        (ResourceQuota(NVIDIA_GPU, 8), {"name": NVIDIA_GPU, "nominalQuota": 8}),
        (
            ResourceQuota(NVIDIA_GPU, 8, borrowing_limit=0),
            {"name": NVIDIA_GPU, "nominalQuota": 8, "borrowingLimit": 0},
        ),
        (
            ResourceQuota(NVIDIA_GPU, 8, lending_limit=3),
            {"name": NVIDIA_GPU, "nominalQuota": 8, "lendingLimit": 3},
        ),
        (
            ResourceQuota(NVIDIA_GPU, 8, borrowing_limit=2, lending_limit=0),
            {"name": NVIDIA_GPU, "nominalQuota": 8, "borrowingLimit": 2, "lendingLimit": 0},
        ),
    ],
)
def test_limits_are_rendered_only_when_set(quota: ResourceQuota, rendered: dict[str, Any]) -> None:
    groups = (ResourceGroup((NVIDIA_GPU,), (FlavorQuotas("a100", (quota,)),)),)
    queue = find(
        render(quota_set(cluster_queues=(research(resource_groups=groups),))),
        CLUSTER_QUEUE,
        "research",
    )
    assert queue["spec"]["resourceGroups"][0]["flavors"][0]["resources"] == [rendered]


def test_flavor_resources_follow_the_covered_order_and_missing_quotas_are_zero() -> None:
    """Kueue wants every flavor to list every covered resource, in the group's order."""
    group = ResourceGroup(
        (CPU, MEMORY),
        (FlavorQuotas("default-cpu", (ResourceQuota(MEMORY, 16), ResourceQuota("ephemeral", 9))),),
    )
    queue = find(
        render(quota_set(cluster_queues=(research(resource_groups=(group,)),))),
        CLUSTER_QUEUE,
        "research",
    )
    assert queue["spec"]["resourceGroups"] == [
        {
            "coveredResources": ["cpu", "memory"],
            "flavors": [
                {
                    "name": "default-cpu",
                    "resources": [
                        {"name": "cpu", "nominalQuota": 0},
                        {"name": "memory", "nominalQuota": "16Gi"},
                    ],
                }
            ],
        }
    ]


def test_a_queue_without_resource_groups_renders_none_and_selects_all_namespaces() -> None:
    queue = find(
        render(quota_set(cluster_queues=(research(resource_groups=(), cohort=None),))),
        CLUSTER_QUEUE,
        "research",
    )
    assert queue["spec"] == {
        "namespaceSelector": {},
        "queueingStrategy": "StrictFIFO",
        "preemption": {
            "withinClusterQueue": "LowerOrNewerEqualPriority",
            "reclaimWithinCohort": "Any",
            "borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": 100},
        },
        "flavorFungibility": {"whenCanBorrow": "TryNextFlavor", "whenCanPreempt": "MayStopSearch"},
        "fairSharing": {"weight": "2.5"},
    }


# --- the other kinds ------------------------------------------------------------------------


def test_resource_flavors_and_cohorts_in_full() -> None:
    objects = render(version=V1)
    assert without_hash(find(objects, RESOURCE_FLAVOR, "a100")) == {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "ResourceFlavor",
        "metadata": {"name": "a100", "labels": MANAGED},
        "spec": {"nodeLabels": {GPU_LABEL: "NVIDIA-A100-SXM4-80GB"}},
    }
    assert find(objects, RESOURCE_FLAVOR, "default-cpu")["spec"] == {}
    assert without_hash(find(objects, COHORT, "platform")) == {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "Cohort",
        "metadata": {"name": "platform", "labels": MANAGED},
        "spec": {"fairSharing": {"weight": 1}},
    }


def cohort_groups() -> tuple[ResourceGroup, ...]:
    quota = ResourceQuota(NVIDIA_GPU, 4, borrowing_limit=2, lending_limit=6)
    return (ResourceGroup((NVIDIA_GPU, CPU), (FlavorQuotas("a100", (quota,)),)),)


@pytest.mark.parametrize("version", [V1, V2])
def test_a_cohort_in_a_tree_in_full(version: KueueVersion) -> None:
    """Its own quotas (every covered resource, a missing one as 0), limits under a parent (a
    lending limit above nominal is Kueue's to accept for a cohort), its weight."""
    child = Cohort(
        CLUSTER,
        "platform",
        NOW,
        parent="org",
        resource_groups=cohort_groups(),
        fair_sharing_weight=0.5,
    )
    assert without_hash(find(render(quota_set(cohorts=(child,)), version), COHORT, "platform")) == {
        "apiVersion": f"kueue.x-k8s.io/{version}",
        "kind": "Cohort",
        "metadata": {"name": "platform", "labels": MANAGED},
        "spec": {
            "parentName": "org",
            "resourceGroups": [
                {
                    "coveredResources": ["nvidia.com/gpu", "cpu"],
                    "flavors": [
                        {
                            "name": "a100",
                            "resources": [
                                {
                                    "name": "nvidia.com/gpu",
                                    "nominalQuota": 4,
                                    "borrowingLimit": 2,
                                    "lendingLimit": 6,
                                },
                                {"name": "cpu", "nominalQuota": 0},
                            ],
                        }
                    ],
                }
            ],
            "fairSharing": {"weight": "0.5"},
        },
    }


def test_a_root_cohort_has_no_limits_and_its_implicit_parent_is_an_empty_cohort() -> None:
    root = Cohort(CLUSTER, "org", NOW, resource_groups=cohort_groups(), fair_sharing_weight=0)
    child = Cohort(CLUSTER, "platform", NOW, parent="everyone")
    objects = render(quota_set(cohorts=(root, child)))
    assert find(objects, COHORT, "org")["spec"] == {
        "resourceGroups": [
            {
                "coveredResources": ["nvidia.com/gpu", "cpu"],
                "flavors": [
                    {
                        "name": "a100",
                        "resources": [
                            {"name": "nvidia.com/gpu", "nominalQuota": 4},
                            {"name": "cpu", "nominalQuota": 0},
                        ],
                    }
                ],
            }
        ],
        "fairSharing": {"weight": 0},
    }
    assert find(objects, COHORT, "platform")["spec"] == {
        "parentName": "everyone",
        "fairSharing": {"weight": 1},
    }
    assert find(objects, COHORT, "everyone")["spec"] == {}


def test_cohorts_cover_the_model_and_every_name_a_queue_uses_unless_left_out() -> None:
    quotas = quota_set(
        cohorts=(Cohort(CLUSTER, "spare", NOW),),
        cluster_queues=(research(), research(name="batch", cohort="burst")),
    )
    names = [o["metadata"]["name"] for o in render(quotas) if o["kind"] == COHORT]
    assert names == ["burst", "platform", "spare"]
    assert [o for o in render(quotas, with_cohorts=False) if o["kind"] == COHORT] == []


def test_local_queue_in_its_namespace() -> None:
    queue = find(render(), LOCAL_QUEUE, "team")
    assert without_hash(queue) == {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "metadata": {
            "name": "team",
            "namespace": NS,
            "labels": MANAGED | {"bud.ai/tenant-id": str(TENANT)},
        },
        "spec": {"clusterQueue": "research"},
    }


def test_tenant_namespaces_carry_the_tenant_and_pod_security_baseline() -> None:
    quotas = quota_set(
        local_queues=(
            local_queue("team"),
            local_queue("batch"),
            local_queue("other", OTHER_TENANT),
        )
    )
    namespaces = [o for o in render(quotas) if o["kind"] == NAMESPACE]
    assert [without_hash(n) for n in namespaces] == [
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {
                "name": tenant_namespace(tenant),
                "labels": MANAGED
                | {
                    "bud.ai/tenant-id": str(tenant),
                    "pod-security.kubernetes.io/enforce": "baseline",
                    "pod-security.kubernetes.io/enforce-version": "latest",
                    "pod-security.kubernetes.io/warn": "restricted",
                    "pod-security.kubernetes.io/warn-version": "latest",
                },
            },
        }
        for tenant in (TENANT, OTHER_TENANT)
    ]


def test_each_tenant_namespace_refuses_other_tenants_traffic() -> None:
    quotas = quota_set(
        local_queues=(local_queue("team"), local_queue("batch"), local_queue("x", OTHER_TENANT))
    )
    policies = [o for o in render(quotas) if o["kind"] == NETWORK_POLICY]
    assert [without_hash(p) for p in policies] == [
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": {
                "name": "bud-tenant-isolation",
                "namespace": tenant_namespace(tenant),
                "labels": MANAGED | {"bud.ai/tenant-id": str(tenant)},
            },
            "spec": {
                "podSelector": {},
                "policyTypes": ["Ingress"],
                "ingress": [
                    {
                        "from": [
                            {
                                "namespaceSelector": {
                                    "matchLabels": {"bud.ai/tenant-id": str(tenant)}
                                }
                            },
                            {
                                "namespaceSelector": {
                                    "matchExpressions": [
                                        {"key": "bud.ai/tenant-id", "operator": "DoesNotExist"}
                                    ]
                                }
                            },
                        ]
                    }
                ],
            },
        }
        for tenant in (TENANT, OTHER_TENANT)
    ]
    assert not [o for o in render(quota_set(local_queues=())) if o["kind"] == NETWORK_POLICY]


@pytest.mark.parametrize("version", [V1, V2])
def test_a_held_clusters_queues_stop_admitting(version: KueueVersion) -> None:
    quotas = quota_set(cluster_queues=(research(), research(name="zeta")))
    held = [o for o in render(quotas, version, hold=True) if o["kind"] == CLUSTER_QUEUE]
    assert [q["spec"]["stopPolicy"] for q in held] == ["Hold", "Hold"]
    running = [o for o in render(quotas, version) if o["kind"] == CLUSTER_QUEUE]
    assert [q["spec"] for q in running] == [
        {k: v for k, v in q["spec"].items() if k != "stopPolicy"} for q in held
    ]
    assert all("stopPolicy" not in q["spec"] for q in running)
    for desired in held:  # read back as written: no drift; lifted or defaulted: drift
        live = as_served(desired)
        live["spec"]["stopPolicy"] = "Hold"
        assert drifted(desired, live) is None
        live["spec"]["stopPolicy"] = "None"
        assert drifted(desired, live) == "spec.stopPolicy changed"
        del live["spec"]["stopPolicy"]
        assert drifted(desired, live) == "spec.stopPolicy missing"
    for desired in running:  # Kueue's default read back, or left out: no drift
        live = as_served(desired)
        assert live["spec"]["stopPolicy"] == "None" and drifted(desired, live) is None
        del live["spec"]["stopPolicy"]
        assert drifted(desired, live) is None


def test_a_namespace_shared_by_two_tenants_is_a_bug() -> None:
    quotas = quota_set(local_queues=(local_queue(), local_queue("x", OTHER_TENANT, namespace=NS)))
    with pytest.raises(ValueError, match="two tenants"):
        render(quotas)


def test_priority_classes_one_per_priority_with_the_set_values() -> None:
    quotas = quota_set(priority_values={JobPriority.HIGH: 500, JobPriority.SPOT: -5})
    classes = [
        WorkloadPriorityClass(JobPriority.CRITICAL, 999, "Production serving", NOW),
        WorkloadPriorityClass(JobPriority.LOW, 1, "", NOW),
    ]
    rendered = [
        o for o in render(quotas, priority_classes=classes) if o["kind"] == WORKLOAD_PRIORITY_CLASS
    ]
    assert [without_hash(o) for o in rendered] == [
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "WorkloadPriorityClass",
            "metadata": {"name": name, "labels": MANAGED},
            "value": value,
            **({"description": text} if text else {}),
        }
        for name, value, text in [
            ("bud-critical", 1000, "Production serving"),
            ("bud-high", 500, "budcluster HIGH priority"),
            ("bud-normal", 10, "budcluster NORMAL priority"),
            ("bud-low", 1, ""),
            ("bud-spot", -5, "budcluster SPOT priority"),
        ]
    ]
    assert priority_class_name(JobPriority.NORMAL) == "bud-normal"


def test_objects_come_in_creation_order_each_kind_by_name() -> None:
    quotas = quota_set(
        cluster_queues=(research(name="zeta"), research()),
        local_queues=(local_queue("b"), local_queue("a")),
    )
    objects = render(quotas)
    kinds = [o["kind"] for o in objects]
    assert kinds == sorted(kinds, key=CREATION_ORDER.index)
    multikueue = {"Secret", "MultiKueueCluster", "MultiKueueConfig", "AdmissionCheck"}
    assert set(kinds) == set(CREATION_ORDER) - multikueue  # a manager's only (test_multikueue)
    assert [o["metadata"]["name"] for o in objects if o["kind"] == RESOURCE_FLAVOR] == [
        "a100",
        "default-cpu",
        "h100",
    ]
    assert [o["metadata"]["name"] for o in objects if o["kind"] == CLUSTER_QUEUE] == [
        "research",
        "zeta",
    ]
    assert [o["metadata"]["name"] for o in objects if o["kind"] == LOCAL_QUEUE] == ["a", "b"]


def test_every_object_is_labelled_and_carries_its_spec_hash() -> None:
    for obj in render():
        labels = obj["metadata"]["labels"]
        assert labels["app.kubernetes.io/managed-by"] == "budcluster"
        assert labels["bud.ai/cluster-id"] == str(CLUSTER)
        hash_ = obj["metadata"]["annotations"][SPEC_HASH]
        assert hash_ == spec_hash(obj)
        assert len(hash_) == 16
        assert int(hash_, 16) >= 0


# --- hashing and ownership ------------------------------------------------------------------


def test_spec_hash_ignores_key_order_and_metadata_noise() -> None:
    queue = find(render(), CLUSTER_QUEUE, "research")
    reordered = copy.deepcopy(queue)
    reordered["spec"] = dict(reversed(list(reordered["spec"].items())))
    reordered["spec"]["preemption"] = dict(reversed(list(queue["spec"]["preemption"].items())))
    reordered["metadata"]["resourceVersion"] = "99"
    reordered["status"] = {"pendingWorkloads": 3}
    assert list(reordered["spec"]) != list(queue["spec"])
    assert spec_hash(reordered) == spec_hash(queue)


def test_spec_hash_changes_when_a_quota_changes() -> None:
    before = find(render(), CLUSTER_QUEUE, "research")
    groups = gpu_and_cpu_groups()
    more = replace(
        groups[0],
        flavors=(FlavorQuotas("a100", (ResourceQuota(NVIDIA_GPU, 9, 4, 2),)), groups[0].flavors[1]),
    )
    after = find(
        render(quota_set(cluster_queues=(research(resource_groups=(more, groups[1])),))),
        CLUSTER_QUEUE,
        "research",
    )
    assert after["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] == 9
    assert spec_hash(after) != spec_hash(before)


def test_spec_hash_is_the_same_for_both_versions_except_the_cohort_field() -> None:
    """(and MayStopSearch's name: research says TryNextFlavor and MayStopSearch)"""
    either = FlavorFungibility(FungibilityPolicy.TRY_NEXT_FLAVOR, FungibilityPolicy.TRY_NEXT_FLAVOR)
    lone = quota_set(cluster_queues=(research(cohort=None, flavor_fungibility=either),))
    v1 = find(render(lone, V1), CLUSTER_QUEUE, "research")
    v2 = find(render(lone, V2), CLUSTER_QUEUE, "research")
    assert spec_hash(v1) == spec_hash(v2)
    assert spec_hash(find(render(version=V1), CLUSTER_QUEUE, "research")) != spec_hash(
        find(render(version=V2), CLUSTER_QUEUE, "research")
    )
    lone = quota_set(cluster_queues=(research(cohort=None),))
    v1 = find(render(lone, V1), CLUSTER_QUEUE, "research")
    v2 = find(render(lone, V2), CLUSTER_QUEUE, "research")
    assert spec_hash(v1) != spec_hash(v2)


def test_owned_part_per_kind() -> None:
    objects = render()
    priority = find(objects, WORKLOAD_PRIORITY_CLASS, "bud-high")
    assert owned_part(priority) == {"value": 100, "description": "budcluster HIGH priority"}
    namespace = find(objects, NAMESPACE, NS)
    assert owned_part(namespace) == {"labels": namespace["metadata"]["labels"]}
    queue = find(objects, LOCAL_QUEUE, "team")
    assert owned_part(queue) == {"spec": {"clusterQueue": "research"}}
    assert owned_part({"kind": COHORT, "metadata": {"name": "x"}}) == {"spec": {}}


# --- keys and paths -------------------------------------------------------------------------


def test_object_keys_ignore_the_version() -> None:
    v1 = {o["kind"]: object_key(o) for o in render(version=V1)}
    v2 = {o["kind"]: object_key(o) for o in render(version=V2)}
    assert v1 == v2
    assert v2[LOCAL_QUEUE] == (KUEUE_GROUP, "LocalQueue", NS, "team")
    assert v2[CLUSTER_QUEUE] == (KUEUE_GROUP, "ClusterQueue", None, "research")
    assert v2[NAMESPACE] == ("", "Namespace", None, NS)


def test_url_paths() -> None:
    objects = render()
    assert object_path(find(objects, CLUSTER_QUEUE, "research")) == (
        "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/research"
    )
    assert object_path(find(objects, LOCAL_QUEUE, "team")) == (
        f"/apis/kueue.x-k8s.io/v1beta2/namespaces/{NS}/localqueues/team"
    )
    assert object_path(find(objects, NAMESPACE, NS)) == f"/api/v1/namespaces/{NS}"
    assert object_path(find(objects, NETWORK_POLICY, TENANT_ISOLATION)) == (
        f"/apis/networking.k8s.io/v1/namespaces/{NS}/networkpolicies/bud-tenant-isolation"
    )
    assert collection_path("kueue.x-k8s.io/v1beta1", WORKLOAD_PRIORITY_CLASS) == (
        "/apis/kueue.x-k8s.io/v1beta1/workloadpriorityclasses"
    )
    assert PLURALS == {
        "Namespace": "namespaces",
        "NetworkPolicy": "networkpolicies",
        "ResourceFlavor": "resourceflavors",
        "Cohort": "cohorts",
        "ClusterQueue": "clusterqueues",
        "LocalQueue": "localqueues",
        "WorkloadPriorityClass": "workloadpriorityclasses",
        "Secret": "secrets",
        "MultiKueueCluster": "multikueueclusters",
        "MultiKueueConfig": "multikueueconfigs",
        "AdmissionCheck": "admissionchecks",
    }


# --- drift ----------------------------------------------------------------------------------


def test_a_missing_object_has_drifted() -> None:
    assert drifted(find(render(), CLUSTER_QUEUE, "research"), None) == "missing"


@pytest.mark.parametrize("version", [V1, V2])
def test_server_noise_is_not_drift(version: KueueVersion) -> None:
    for obj in render(version=version):
        assert drifted(obj, as_served(obj)) is None, obj["kind"]


def test_quantities_are_compared_as_values() -> None:
    desired = find(render(), CLUSTER_QUEUE, "research")
    live = as_served(desired)
    cpu = live["spec"]["resourceGroups"][1]["flavors"][0]["resources"]
    cpu[0]["nominalQuota"] = "7.5"
    cpu[1]["nominalQuota"] = "524288Mi"
    live["spec"]["fairSharing"]["weight"] = "2500m"
    assert drifted(desired, live) is None


def test_v1beta1s_old_fungibility_names_read_back_as_may_stop_search_are_no_drift() -> None:
    """A Kueue that serves v1beta2 too stores v1beta2 and converts Borrow / Preempt."""
    fungibility = FlavorFungibility(
        FungibilityPolicy.MAY_STOP_SEARCH, FungibilityPolicy.MAY_STOP_SEARCH
    )
    quotas = quota_set(cluster_queues=(research(flavor_fungibility=fungibility),))
    desired = find(render(quotas, V1), CLUSTER_QUEUE, "research")
    live = as_served(desired)
    live["spec"]["flavorFungibility"] = {
        "whenCanBorrow": "MayStopSearch",
        "whenCanPreempt": "MayStopSearch",
    }
    assert drifted(desired, live) is None
    live["spec"]["flavorFungibility"]["whenCanPreempt"] = "TryNextFlavor"
    assert drifted(desired, live) == "spec.flavorFungibility.whenCanPreempt changed"


@pytest.mark.parametrize("version", [V1, V2])
def test_a_changed_fungibility_preference_is_drift(version: KueueVersion) -> None:
    preempt_first = FlavorFungibility(TRY, TRY, FungibilityPreference.PREEMPTION_OVER_BORROWING)
    quotas = quota_set(cluster_queues=(research(flavor_fungibility=preempt_first),))
    desired = find(render(quotas, version), CLUSTER_QUEUE, "research")
    live = as_served(desired)
    assert drifted(desired, live) is None
    live["spec"]["flavorFungibility"]["preference"] = "BorrowingOverPreemption"
    assert drifted(desired, live) == "spec.flavorFungibility.preference changed"
    del live["spec"]["flavorFungibility"]["preference"]
    assert drifted(desired, live) == "spec.flavorFungibility.preference missing"

    unset = quota_set(cluster_queues=(research(flavor_fungibility=FlavorFungibility(TRY, TRY)),))
    desired = find(render(unset, version), CLUSTER_QUEUE, "research")
    live = as_served(desired)
    assert drifted(desired, live) is None
    live["spec"]["flavorFungibility"]["preference"] = "PreemptionOverBorrowing"
    assert drifted(desired, live) == "spec.flavorFungibility.preference added"


def test_a_changed_fungibility_preference_changes_the_spec_hash() -> None:
    def hashed(fungibility: FlavorFungibility) -> str:
        quotas = quota_set(cluster_queues=(research(flavor_fungibility=fungibility),))
        return spec_hash(find(render(quotas), CLUSTER_QUEUE, "research"))

    hashes = {
        hashed(FlavorFungibility(TRY, TRY, preference))
        for preference in (None, *FungibilityPreference)
    }
    assert len(hashes) == 3


def spec_edit(path: list[Any], value: Any) -> Any:
    def edit(live: dict[str, Any]) -> None:
        target = live
        for step in path[:-1]:
            target = target[step]
        if value is DELETE:
            del target[path[-1]]
        else:
            target[path[-1]] = value

    return edit


DELETE = object()
GPU_QUOTA = ["spec", "resourceGroups", 0, "flavors", 0, "resources", 0]
ISOLATION_PEERS = ["spec", "ingress", 0, "from"]


@pytest.mark.parametrize(
    ("kind", "name", "edit", "reason"),
    [
        (
            CLUSTER_QUEUE,
            "research",
            spec_edit([*GPU_QUOTA, "nominalQuota"], "6"),
            "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota changed",
        ),
        (
            CLUSTER_QUEUE,
            "research",
            spec_edit([*GPU_QUOTA, "lendingLimit"], DELETE),
            "spec.resourceGroups[0].flavors[0].resources[0].lendingLimit missing",
        ),
        (
            CLUSTER_QUEUE,
            "research",
            spec_edit(
                ["spec", "resourceGroups", 0, "flavors", 1, "resources", 0, "borrowingLimit"], "2"
            ),
            "spec.resourceGroups[0].flavors[1].resources[0].borrowingLimit added",
        ),
        (
            CLUSTER_QUEUE,
            "research",
            spec_edit(["spec", "cohortName"], "elsewhere"),
            "spec.cohortName changed",
        ),
        (
            CLUSTER_QUEUE,
            "research",
            spec_edit(["spec", "namespaceSelector"], DELETE),
            "spec.namespaceSelector missing",
        ),
        (
            CLUSTER_QUEUE,
            "research",
            spec_edit(["spec", "namespaceSelector"], {"matchLabels": {"a": "b"}}),
            "spec.namespaceSelector changed",
        ),
        (
            CLUSTER_QUEUE,
            "research",
            spec_edit(["spec", "resourceGroups", 0, "flavors"], []),
            "spec.resourceGroups[0].flavors changed",
        ),
        (
            CLUSTER_QUEUE,
            "research",
            spec_edit(["spec", "queueingStrategy"], "BestEffortFIFO"),
            "spec.queueingStrategy changed",
        ),
        (
            CLUSTER_QUEUE,
            "research",
            spec_edit(["spec", "preemption", "reclaimWithinCohort"], "Never"),
            "spec.preemption.reclaimWithinCohort changed",
        ),
        (
            CLUSTER_QUEUE,
            "research",
            spec_edit(["spec", "preemption", "borrowWithinCohort", "policy"], "Never"),
            "spec.preemption.borrowWithinCohort.policy changed",
        ),
        (
            CLUSTER_QUEUE,
            "research",
            spec_edit(["spec", "preemption", "borrowWithinCohort", "maxPriorityThreshold"], 5),
            "spec.preemption.borrowWithinCohort.maxPriorityThreshold changed",
        ),
        (
            CLUSTER_QUEUE,
            "research",
            spec_edit(["spec", "flavorFungibility", "whenCanBorrow"], "MayStopSearch"),
            "spec.flavorFungibility.whenCanBorrow changed",
        ),
        (
            CLUSTER_QUEUE,
            "research",
            spec_edit(["spec", "fairSharing", "weight"], "1"),
            "spec.fairSharing.weight changed",
        ),
        (
            CLUSTER_QUEUE,
            "research",
            spec_edit(["spec", "fairSharing"], DELETE),
            "spec.fairSharing missing",
        ),
        (
            RESOURCE_FLAVOR,
            "a100",
            spec_edit(["spec", "nodeLabels", GPU_LABEL], "NVIDIA-A100-PCIE-40GB"),
            "spec.nodeLabels changed",
        ),
        (
            RESOURCE_FLAVOR,
            "a100",
            spec_edit(["spec", "nodeLabels", "zone"], "eu-1"),
            "spec.nodeLabels changed",
        ),
        (
            RESOURCE_FLAVOR,
            "default-cpu",
            spec_edit(["spec", "nodeLabels"], {"zone": "eu-1"}),
            "spec.nodeLabels added",
        ),
        (
            RESOURCE_FLAVOR,
            "default-cpu",
            spec_edit(["spec", "nodeTaints"], [{"key": "k", "effect": "NoSchedule"}]),
            "spec.nodeTaints added",
        ),
        (
            COHORT,
            "platform",
            spec_edit(["spec", "parentName"], "root"),
            "spec.parentName added",
        ),
        (
            COHORT,
            "platform",
            spec_edit(["spec", "fairSharing", "weight"], "3"),
            "spec.fairSharing.weight changed",
        ),
        (
            LOCAL_QUEUE,
            "team",
            spec_edit(["spec", "clusterQueue"], "other"),
            "spec.clusterQueue changed (immutable: delete and recreate)",
        ),
        (
            WORKLOAD_PRIORITY_CLASS,
            "bud-high",
            spec_edit(["value"], 101),
            "value changed",
        ),
        (
            WORKLOAD_PRIORITY_CLASS,
            "bud-high",
            spec_edit(["description"], DELETE),
            "description missing",
        ),
        (
            NAMESPACE,
            NS,
            spec_edit(["metadata", "labels", "pod-security.kubernetes.io/enforce"], "privileged"),
            "labels[pod-security.kubernetes.io/enforce] changed",
        ),
        (
            NAMESPACE,
            NS,
            spec_edit(["metadata", "labels", "bud.ai/tenant-id"], DELETE),
            "labels[bud.ai/tenant-id] missing",
        ),
        (
            CLUSTER_QUEUE,
            "research",
            spec_edit(["metadata", "labels", "bud.ai/cluster-id"], "another"),
            "label bud.ai/cluster-id changed",
        ),
        (
            LOCAL_QUEUE,
            "team",
            spec_edit(["metadata", "labels", "app.kubernetes.io/managed-by"], DELETE),
            "label app.kubernetes.io/managed-by changed",
        ),
        (
            CLUSTER_QUEUE,
            "research",
            spec_edit(["metadata", "annotations", SPEC_HASH], "0123456789abcdef"),
            "annotation bud.ai/spec-hash out of date",
        ),
        (
            CLUSTER_QUEUE,
            "research",
            spec_edit(["metadata", "annotations"], DELETE),
            "annotation bud.ai/spec-hash out of date",
        ),
        (
            CLUSTER_QUEUE,
            "research",
            spec_edit(["spec", "stopPolicy"], "Hold"),
            "spec.stopPolicy changed",
        ),
        (
            CLUSTER_QUEUE,
            "research",
            spec_edit(["spec", "stopPolicy"], "HoldAndDrain"),
            "spec.stopPolicy changed",
        ),
        (
            NETWORK_POLICY,
            TENANT_ISOLATION,
            spec_edit(["spec", "podSelector"], {"matchLabels": {"app": "web"}}),
            "spec.podSelector changed",
        ),
        (
            NETWORK_POLICY,
            TENANT_ISOLATION,
            spec_edit(["spec", "policyTypes"], ["Ingress", "Egress"]),
            "spec.policyTypes changed",
        ),
        (
            NETWORK_POLICY,
            TENANT_ISOLATION,
            spec_edit(["spec", "ingress"], [{}]),
            "spec.ingress[0].from missing",
        ),
        (
            NETWORK_POLICY,
            TENANT_ISOLATION,
            spec_edit(
                [*ISOLATION_PEERS, 0, "namespaceSelector"],
                {"matchLabels": {"bud.ai/tenant-id": str(OTHER_TENANT)}},
            ),
            "spec.ingress[0].from[0].namespaceSelector changed",
        ),
        (
            NETWORK_POLICY,
            TENANT_ISOLATION,
            spec_edit([*ISOLATION_PEERS, 1, "namespaceSelector"], {}),
            "spec.ingress[0].from[1].namespaceSelector changed",
        ),
        (
            NETWORK_POLICY,
            TENANT_ISOLATION,
            spec_edit([*ISOLATION_PEERS, 1, "ipBlock"], {"cidr": "0.0.0.0/0"}),
            "spec.ingress[0].from[1].ipBlock added",
        ),
        (
            NETWORK_POLICY,
            TENANT_ISOLATION,
            spec_edit(["spec", "ingress", 0, "ports"], [{"port": 8000}]),
            "spec.ingress[0].ports added",
        ),
        (
            CLUSTER_QUEUE,
            "research",
            spec_edit(["metadata", "deletionTimestamp"], "2026-03-02T12:01:00Z"),
            "being deleted",
        ),
    ],
)
def test_drift_names_what_changed(kind: str, name: str, edit: Any, reason: str) -> None:
    desired = find(render(), kind, name)
    live = as_served(desired)
    edit(live)
    assert drifted(desired, live) == reason


def test_a_priority_class_whose_description_was_cleared_drifts_when_someone_adds_one() -> None:
    classes = [WorkloadPriorityClass(JobPriority.LOW, 1, "", NOW)]
    desired = find(render(priority_classes=classes), WORKLOAD_PRIORITY_CLASS, "bud-low")
    live = as_served(desired)
    assert drifted(desired, live) is None
    live["description"] = "hand-written"
    assert drifted(desired, live) == "description added"


def test_a_changed_quota_is_drift_against_the_object_rendered_before() -> None:
    before = find(render(), CLUSTER_QUEUE, "research")
    lone = find(
        render(quota_set(cluster_queues=(research(cohort=None),))), CLUSTER_QUEUE, "research"
    )
    assert drifted(lone, as_served(before)) == (
        "spec.resourceGroups[0].flavors[0].resources[0].borrowingLimit added"
    )
    live = as_served(lone)
    live["spec"]["cohortName"] = "platform"
    assert drifted(lone, live) == "spec.cohortName added"
