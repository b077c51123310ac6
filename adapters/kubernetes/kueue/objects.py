"""The Kubernetes objects Kueue (kueue.x-k8s.io) needs for one cluster's quotas, as JSON dicts.

`desired_objects` renders a QuotaSet as tenant Namespaces (each with its isolation
NetworkPolicy), ResourceFlavors, Cohorts, ClusterQueues, LocalQueues and WorkloadPriorityClasses,
in an order in which they can be created (delete in reverse). Every object carries the labels
app.kubernetes.io/managed-by=budcluster and bud.ai/cluster-id, and the annotation
bud.ai/spec-hash: the SHA-256 of the canonical JSON of the part budcluster owns (`owned_part`:
the spec; a priority class's value and description; a namespace's labels); `drift` tells a live
object that differs from its rendering.

Checked against kubernetes-sigs/kueue, apis/kueue/v1beta1 and v1beta2, *_types.go:
- ClusterQueue: spec.resourceGroups (coveredResources; flavors, each listing every covered
  resource in the group's order, a missing quota as 0: a CEL rule), queueingStrategy,
  namespaceSelector (always {}: null selects no namespace), preemption (withinClusterQueue,
  reclaimWithinCohort, borrowWithinCohort.policy and .maxPriorityThreshold), flavorFungibility
  and fairSharing.weight, the last three rendered whole, defaults included. Borrowing and lending
  limits must be null outside a cohort, so they are left out then. The cohort is spec.cohort in
  v1beta1 and spec.cohortName in v1beta2. flavorFungibility's MayStopSearch is v1beta2's name: a
  Kueue serving only v1beta1 (before v0.15) knows Borrow and Preempt instead, so v1beta1 objects
  say those (v1beta1 still accepts them).
- Cohort: spec.parentName, resourceGroups and fairSharing.weight, alike in v1beta1 and v1beta2
  (v1alpha1, the only version before Kueue PR #5595, is not written: `with_cohorts=False` leaves
  Cohorts out, and queues share quota by cohort name alone). Its limits must be null without a
  parent (Kueue's cohort webhook); its lendingLimit may exceed its nominalQuota. A cohort only
  named (by a queue, or as a parent) is implicit: an empty Cohort.
- LocalQueue: namespaced, spec.clusterQueue, which is immutable ("field is immutable").
- ResourceFlavor: spec.nodeLabels (at most 8), nodeTaints, tolerations.
- WorkloadPriorityClass: top-level value (int32) and description (omitempty, at most 2048
  characters), no spec; a job names it in the label kueue.x-k8s.io/priority-class.
- ClusterQueue spec.stopPolicy (v1beta1 and v1beta2 alike): None (the API server's default),
  Hold (no new admission; admitted workloads run to completion) or HoldAndDrain (admitted ones
  are evicted too). A cluster drained whole (`hold`) gets Hold on every ClusterQueue: budcluster
  requeues what runs there itself; otherwise the field is left out (read back as None).
Tenant namespaces enforce Pod Security "baseline" and warn on "restricted", as the tenant
onboarding manifest of the product design says (seed 004, section 1.5). Each gets the
networking.k8s.io/v1 NetworkPolicy `bud-tenant-isolation`: every pod in it takes ingress only
from namespaces of the same tenant (by their bud.ai/tenant-id label) and from namespaces with no
tenant label (the platform's: kube-system, ingress controllers, monitoring), so another tenant's
namespaces are refused (NetworkPolicies add up: another policy selecting the same pods could let
more in; budcluster makes none that selects ingress).

Quantities: cpu in cores, or millicores when not whole; memory quotas are GiB (node memory_gb is
bytes / 2**30, see inventory/nodes.py), rendered "NGi", or whole "Mi" when not a whole GiB; GPUs
and other extended resources as whole counts (a fraction can never be requested, so it is
floored); a weight to Kubernetes' 1n precision.
"""

from __future__ import annotations

import base64
import enum
import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from decimal import ROUND_CEILING, ROUND_FLOOR, ROUND_HALF_UP, Decimal
from typing import Any

from domain.model.ids import ClusterId, TenantId
from domain.model.job import JobPriority
from domain.model.quota import (
    CPU,
    MEMORY,
    ClusterQueue,
    Cohort,
    FungibilityPolicy,
    LocalQueue,
    QuotaSet,
    ResourceFlavor,
    ResourceGroup,
    ResourceQuota,
    WorkloadPriorityClass,
)

JsonObject = dict[str, Any]

KUEUE_GROUP = "kueue.x-k8s.io"
MANAGED_BY = "app.kubernetes.io/managed-by"
MANAGER = "budcluster"
CLUSTER_ID_LABEL = "bud.ai/cluster-id"
TENANT_ID_LABEL = "bud.ai/tenant-id"
SPEC_HASH = "bud.ai/spec-hash"
PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class"
"""The label a job carries to name its WorkloadPriorityClass."""

POD_SECURITY: Mapping[str, str] = {
    "pod-security.kubernetes.io/enforce": "baseline",
    "pod-security.kubernetes.io/enforce-version": "latest",
    "pod-security.kubernetes.io/warn": "restricted",
    "pod-security.kubernetes.io/warn-version": "latest",
}

NAMESPACE = "Namespace"
NETWORK_POLICY = "NetworkPolicy"
NETWORKING_API = "networking.k8s.io/v1"
TENANT_ISOLATION = "bud-tenant-isolation"
"""The NetworkPolicy in each tenant namespace that refuses other tenants' traffic."""
STOP_POLICY_HOLD = "Hold"
"""Kueue's ClusterQueue stopPolicy that admits nothing new and lets admitted workloads run."""
RESOURCE_FLAVOR = "ResourceFlavor"
COHORT = "Cohort"
CLUSTER_QUEUE = "ClusterQueue"
LOCAL_QUEUE = "LocalQueue"
WORKLOAD_PRIORITY_CLASS = "WorkloadPriorityClass"
SECRET = "Secret"
MULTIKUEUE_CLUSTER = "MultiKueueCluster"
MULTIKUEUE_CONFIG = "MultiKueueConfig"
ADMISSION_CHECK = "AdmissionCheck"
"""MultiKueue's manager objects (kueue/multikueue.py), before the ClusterQueues that name them."""
CREATION_ORDER = (
    NAMESPACE,
    NETWORK_POLICY,
    RESOURCE_FLAVOR,
    COHORT,
    SECRET,
    MULTIKUEUE_CLUSTER,
    MULTIKUEUE_CONFIG,
    ADMISSION_CHECK,
    CLUSTER_QUEUE,
    LOCAL_QUEUE,
    WORKLOAD_PRIORITY_CLASS,
)
PLURALS: Mapping[str, str] = {
    NAMESPACE: "namespaces",
    NETWORK_POLICY: "networkpolicies",
    RESOURCE_FLAVOR: "resourceflavors",
    COHORT: "cohorts",
    SECRET: "secrets",
    MULTIKUEUE_CLUSTER: "multikueueclusters",
    MULTIKUEUE_CONFIG: "multikueueconfigs",
    ADMISSION_CHECK: "admissionchecks",
    CLUSTER_QUEUE: "clusterqueues",
    LOCAL_QUEUE: "localqueues",
    WORKLOAD_PRIORITY_CLASS: "workloadpriorityclasses",
}
NAMESPACED_KINDS = frozenset({LOCAL_QUEUE, SECRET, NETWORK_POLICY})


class KueueVersion(enum.StrEnum):
    V1BETA1 = "v1beta1"
    V1BETA2 = "v1beta2"

    @property
    def api_version(self) -> str:
        return f"{KUEUE_GROUP}/{self.value}"

    @property
    def cohort_field(self) -> str:
        """The ClusterQueue spec field naming its cohort."""
        return "cohort" if self is KueueVersion.V1BETA1 else "cohortName"

    def fungibility(self, policy: FungibilityPolicy, *, when: str) -> str:
        """A flavorFungibility value (`when`: "Borrow" or "Preempt") as this version spells it:
        v1beta1 says Borrow / Preempt for MayStopSearch, which Kueue before v0.15 (serving no
        v1beta2) needs."""
        if self is KueueVersion.V1BETA1 and policy is FungibilityPolicy.MAY_STOP_SEARCH:
            return when
        return policy.value


_PREFERENCE = (KueueVersion.V1BETA2, KueueVersion.V1BETA1)


def choose_version(served: Iterable[str]) -> KueueVersion | None:
    """The newest supported version among those the cluster serves ("v1beta2" or
    "kueue.x-k8s.io/v1beta2"); None when it serves none of them."""
    names = {version.rpartition("/")[2] for version in served}
    return next((v for v in _PREFERENCE if v.value in names), None)


# --- quantities ---------------------------------------------------------------------------


def quantity(resource: str, value: float) -> str | int:
    """A quota as a Kubernetes quantity: cpu cores (or "1500m"), memory GiB ("64Gi", or "1536Mi"),
    whole counts of anything else."""
    exact = Decimal(str(value))
    if not exact.is_finite() or exact < 0:
        raise ValueError(f"{resource}: {value!r} is not a finite, non-negative quota")
    if resource == CPU:
        return _cpu(exact)
    if resource == MEMORY:
        return _memory(exact)
    return int(exact.to_integral_value(rounding=ROUND_FLOOR))


def _cpu(cores: Decimal) -> str | int:
    millicores = int((cores * 1000).to_integral_value(rounding=ROUND_HALF_UP))
    return millicores // 1000 if millicores % 1000 == 0 else f"{millicores}m"


def _memory(gib: Decimal) -> str:
    if gib == gib.to_integral_value():
        return f"{int(gib)}Gi"
    return f"{int((gib * 1024).to_integral_value(rounding=ROUND_HALF_UP))}Mi"


def weight(value: float) -> str | int:
    """A fair-sharing weight as a quantity: whole, or a decimal rounded up to Kubernetes' 1n
    precision (as the API server would round it)."""
    exact = Decimal(str(value))
    if not exact.is_finite() or exact < 0:
        raise ValueError(f"{value!r} is not a finite, non-negative weight")
    nano = exact.quantize(Decimal("1e-9"), rounding=ROUND_CEILING)
    if nano == nano.to_integral_value():
        return int(nano)
    return format(nano.normalize(), "f")


# --- rendering ----------------------------------------------------------------------------


def priority_class_name(priority: JobPriority) -> str:
    return f"bud-{priority.value.lower()}"


def desired_objects(
    quotas: QuotaSet,
    version: KueueVersion,
    *,
    cluster_id: ClusterId,
    priority_classes: Iterable[WorkloadPriorityClass] = (),
    with_cohorts: bool = True,
    admission_checks: Mapping[str, Sequence[str]] | None = None,
    before_queues: Sequence[JsonObject] = (),
    hold: bool = False,
) -> list[JsonObject]:
    """Every object budcluster keeps on the cluster for `quotas`, in creation order.

    Values of priority classes come from `quotas`; their descriptions from `priority_classes`
    when given. Cohort objects cover the model's cohorts and every cohort a queue or a cohort
    names (an implicit one has an empty spec). `admission_checks`: the AdmissionChecks each
    ClusterQueue lists, by its name; `before_queues`: objects created before the ClusterQueues
    (MultiKueue's, which the queues name); `hold`: every ClusterQueue with stopPolicy Hold.
    """
    checks = admission_checks or {}
    descriptions = {pc.priority: pc.description for pc in priority_classes}
    named = {q.cohort for q in quotas.cluster_queues if q.cohort}
    named |= {c.parent for c in quotas.cohorts if c.parent}
    cohorts: dict[str, Cohort | None] = {c.name: c for c in quotas.cohorts}
    cohorts |= {name: None for name in named if name not in cohorts}
    tenant_namespaces = _tenant_namespaces(quotas)
    objects = [
        *(_namespace(ns, tenant, cluster_id) for ns, tenant in tenant_namespaces),
        *(_isolation(ns, tenant, cluster_id) for ns, tenant in tenant_namespaces),
        *(_flavor(f, version, cluster_id) for f in sorted(quotas.flavors, key=lambda f: f.name)),
        *(
            _cohort(name, cohorts[name], version, cluster_id)
            for name in sorted(cohorts)
            if with_cohorts
        ),
        *before_queues,
        *(
            _cluster_queue(q, version, cluster_id, checks.get(q.name, ()), hold=hold)
            for q in sorted(quotas.cluster_queues, key=lambda q: q.name)
        ),
        *(
            _local_queue(q, version, cluster_id)
            for q in sorted(quotas.local_queues, key=lambda q: (q.namespace, q.name))
        ),
        *(
            _priority_class(p, quotas.priority_value(p), descriptions.get(p), version, cluster_id)
            for p in JobPriority
        ),
    ]
    return [_stamped(obj) for obj in objects]


def _tenant_namespaces(quotas: QuotaSet) -> list[tuple[str, TenantId]]:
    tenants: dict[str, TenantId] = {}
    for queue in quotas.local_queues:
        owner = tenants.setdefault(queue.namespace, queue.tenant_id)
        if owner != queue.tenant_id:
            raise ValueError(f"namespace {queue.namespace} holds LocalQueues of two tenants")
    return sorted(tenants.items(), key=lambda item: item[0])


def object_for(
    api_version: str,
    kind: str,
    name: str,
    cluster_id: ClusterId,
    *,
    namespace: str | None = None,
    labels: Mapping[str, str] | None = None,
) -> JsonObject:
    metadata: JsonObject = {"name": name}
    if namespace is not None:
        metadata["namespace"] = namespace
    metadata["labels"] = {MANAGED_BY: MANAGER, CLUSTER_ID_LABEL: str(cluster_id), **(labels or {})}
    return {"apiVersion": api_version, "kind": kind, "metadata": metadata}


def _stamped(obj: JsonObject) -> JsonObject:
    obj["metadata"]["annotations"] = {SPEC_HASH: spec_hash(obj)}
    return obj


def _namespace(name: str, tenant: TenantId, cluster_id: ClusterId) -> JsonObject:
    labels = {TENANT_ID_LABEL: str(tenant), **POD_SECURITY}
    return object_for("v1", NAMESPACE, name, cluster_id, labels=labels)


def _isolation(namespace: str, tenant: TenantId, cluster_id: ClusterId) -> JsonObject:
    """The NetworkPolicy that lets into `namespace` only its tenant's and the platform's traffic
    (the module doc)."""
    obj = object_for(
        NETWORKING_API,
        NETWORK_POLICY,
        TENANT_ISOLATION,
        cluster_id,
        namespace=namespace,
        labels={TENANT_ID_LABEL: str(tenant)},
    )
    same_tenant = {"namespaceSelector": {"matchLabels": {TENANT_ID_LABEL: str(tenant)}}}
    platform = {
        "namespaceSelector": {
            "matchExpressions": [{"key": TENANT_ID_LABEL, "operator": "DoesNotExist"}]
        }
    }
    obj["spec"] = {
        "podSelector": {},
        "policyTypes": ["Ingress"],
        "ingress": [{"from": [same_tenant, platform]}],
    }
    return obj


def is_tenant_isolation(obj: Mapping[str, Any]) -> bool:
    """A tenant namespace's isolation NetworkPolicy (a benchmark's egress policy is not one)."""
    meta = obj.get("metadata") or {}
    return meta.get("name") == TENANT_ISOLATION and TENANT_ID_LABEL in (meta.get("labels") or {})


def _flavor(flavor: ResourceFlavor, version: KueueVersion, cluster_id: ClusterId) -> JsonObject:
    obj = object_for(version.api_version, RESOURCE_FLAVOR, flavor.name, cluster_id)
    obj["spec"] = {"nodeLabels": dict(flavor.node_labels)} if flavor.node_labels else {}
    return obj


def _cohort(
    name: str, cohort: Cohort | None, version: KueueVersion, cluster_id: ClusterId
) -> JsonObject:
    obj = object_for(version.api_version, COHORT, name, cluster_id)
    spec: JsonObject = {}
    if cohort is not None:
        if cohort.parent:
            spec["parentName"] = cohort.parent
        if cohort.resource_groups:
            under = bool(cohort.parent)
            spec["resourceGroups"] = [_group(g, in_cohort=under) for g in cohort.resource_groups]
        spec["fairSharing"] = {"weight": weight(cohort.fair_sharing_weight)}
    obj["spec"] = spec
    return obj


def _cluster_queue(
    queue: ClusterQueue,
    version: KueueVersion,
    cluster_id: ClusterId,
    checks: Sequence[str] = (),
    *,
    hold: bool = False,
) -> JsonObject:
    preemption = queue.preemption
    borrow: JsonObject = {"policy": preemption.borrow_within_cohort.policy.value}
    if preemption.borrow_within_cohort.max_priority_threshold is not None:
        borrow["maxPriorityThreshold"] = preemption.borrow_within_cohort.max_priority_threshold
    fungibility = queue.flavor_fungibility
    flavor_fungibility: JsonObject = {
        "whenCanBorrow": version.fungibility(fungibility.when_can_borrow, when="Borrow"),
        "whenCanPreempt": version.fungibility(fungibility.when_can_preempt, when="Preempt"),
    }
    if fungibility.preference is not None:  # v1beta1 and v1beta2 alike; none: Kueue's default
        flavor_fungibility["preference"] = fungibility.preference.value
    spec: JsonObject = {
        "namespaceSelector": {},
        "queueingStrategy": queue.queueing_strategy.value,
        "preemption": {
            "withinClusterQueue": preemption.within_cluster_queue.value,
            "reclaimWithinCohort": preemption.reclaim_within_cohort.value,
            "borrowWithinCohort": borrow,
        },
        "flavorFungibility": flavor_fungibility,
        "fairSharing": {"weight": weight(queue.fair_sharing_weight)},
    }
    if queue.cohort:
        spec[version.cohort_field] = queue.cohort
    if queue.resource_groups:
        in_cohort = bool(queue.cohort)
        spec["resourceGroups"] = [_group(g, in_cohort=in_cohort) for g in queue.resource_groups]
    if checks:  # a fleet's MultiKueue check on its manager (kueue/multikueue.py)
        if version is KueueVersion.V1BETA1:
            spec["admissionChecks"] = list(checks)
        else:
            spec["admissionChecksStrategy"] = {"admissionChecks": [{"name": n} for n in checks]}
    if hold:  # else left out: Kueue's default, None (drift.py reads the two alike)
        spec["stopPolicy"] = STOP_POLICY_HOLD
    obj = object_for(version.api_version, CLUSTER_QUEUE, queue.name, cluster_id)
    obj["spec"] = spec
    return obj


def _group(group: ResourceGroup, *, in_cohort: bool) -> JsonObject:
    return {
        "coveredResources": list(group.covered_resources),
        "flavors": [
            {
                "name": fq.flavor,
                "resources": [
                    _quota(fq.quota(r) or ResourceQuota(r, 0), in_cohort=in_cohort)
                    for r in group.covered_resources
                ],
            }
            for fq in group.flavors
        ],
    }


def _quota(quota: ResourceQuota, *, in_cohort: bool) -> JsonObject:
    rendered: JsonObject = {
        "name": quota.name,
        "nominalQuota": quantity(quota.name, quota.nominal_quota),
    }
    if in_cohort and quota.borrowing_limit is not None:
        rendered["borrowingLimit"] = quantity(quota.name, quota.borrowing_limit)
    if in_cohort and quota.lending_limit is not None:
        rendered["lendingLimit"] = quantity(quota.name, quota.lending_limit)
    return rendered


def _local_queue(queue: LocalQueue, version: KueueVersion, cluster_id: ClusterId) -> JsonObject:
    labels = {TENANT_ID_LABEL: str(queue.tenant_id)}
    obj = object_for(
        version.api_version,
        LOCAL_QUEUE,
        queue.name,
        cluster_id,
        namespace=queue.namespace,
        labels=labels,
    )
    obj["spec"] = {"clusterQueue": queue.cluster_queue}
    return obj


def _priority_class(
    priority: JobPriority,
    value: int,
    description: str | None,
    version: KueueVersion,
    cluster_id: ClusterId,
) -> JsonObject:
    name = priority_class_name(priority)
    obj = object_for(version.api_version, WORKLOAD_PRIORITY_CLASS, name, cluster_id)
    obj["value"] = value
    text = f"budcluster {priority.value} priority" if description is None else description
    if text:
        obj["description"] = text
    return obj


# --- identity and ownership ------------------------------------------------------------


def object_key(obj: Mapping[str, Any]) -> tuple[str, str, str | None, str]:
    """(API group, kind, namespace, name): the same for every version of an object."""
    metadata = obj.get("metadata") or {}
    group = str(obj["apiVersion"]).rpartition("/")[0]
    return group, str(obj["kind"]), metadata.get("namespace") or None, str(metadata["name"])


def collection_path(api_version: str, kind: str, namespace: str | None = None) -> str:
    """The URL path of a kind's objects ("/apis/kueue.x-k8s.io/v1beta2/clusterqueues")."""
    root = f"/apis/{api_version}" if "/" in api_version else f"/api/{api_version}"
    scope = f"/namespaces/{namespace}" if namespace and kind in NAMESPACED_KINDS else ""
    return f"{root}{scope}/{PLURALS[kind]}"


def object_path(obj: Mapping[str, Any]) -> str:
    _, kind, namespace, name = object_key(obj)
    return f"{collection_path(str(obj['apiVersion']), kind, namespace)}/{name}"


def owned_part(obj: Mapping[str, Any]) -> JsonObject:
    """What budcluster sets and drift compares: a namespace's labels, a priority class's value
    and description, any other object's spec."""
    kind = obj.get("kind")
    if kind == NAMESPACE:
        return {"labels": dict((obj.get("metadata") or {}).get("labels") or {})}
    if kind == SECRET:  # its data as the API returns it (base64), whichever way it was given
        return {"type": obj.get("type"), "data": secret_data(obj)}
    if kind == WORKLOAD_PRIORITY_CLASS:
        return {key: obj[key] for key in ("value", "description") if key in obj}
    return {"spec": obj.get("spec") or {}}


def secret_data(obj: Mapping[str, Any]) -> JsonObject:
    """A Secret's data, base64 as the API server keeps it (stringData folded in)."""
    data = dict(obj.get("data") or {})
    for key, text in (obj.get("stringData") or {}).items():
        data[key] = base64.b64encode(str(text).encode()).decode()
    return data


def spec_hash(obj: Mapping[str, Any]) -> str:
    """The first 16 hex digits of the SHA-256 of the owned part's canonical JSON."""
    canonical = json.dumps(owned_part(obj), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]
