"""The Kubernetes objects Kueue (kueue.x-k8s.io) needs for one cluster's quotas, as JSON dicts.

`desired_objects` renders a QuotaSet as tenant Namespaces, ResourceFlavors, Cohorts,
ClusterQueues, LocalQueues and WorkloadPriorityClasses, in an order in which they can be created
(delete in reverse). Every object carries the labels app.kubernetes.io/managed-by=budcluster and
bud.ai/cluster-id, and the annotation bud.ai/spec-hash: the SHA-256 of the canonical JSON of the
part budcluster owns (`owned_part`: the spec; a priority class's value and description; a
namespace's labels). `drifted` compares a live object with the desired one as a subset, field by
field: the API server adds defaults (preemption.borrowWithinCohort, flavorFungibility, stopPolicy)
and other labels, which are not drift, and returns quantities as strings ("8", "64Gi"), which are
compared as values. A namespaceSelector and a flavor's nodeLabels are compared whole, and
optional fields budcluster leaves out (cohort, limits, parent, node labels, taints) are drift
when someone adds them. Status and metadata noise is never compared.

Checked against kubernetes-sigs/kueue, apis/kueue/v1beta1 and v1beta2, *_types.go:
- ClusterQueue: spec.resourceGroups[].coveredResources and .flavors[].name / .resources[].name,
  nominalQuota, borrowingLimit, lendingLimit; spec.queueingStrategy (StrictFIFO, BestEffortFIFO);
  spec.preemption.withinClusterQueue / reclaimWithinCohort. The cohort is spec.cohort in v1beta1
  and spec.cohortName in v1beta2. namespaceSelector "defaults to null which is a nothing selector
  (no namespaces eligible). If set to an empty selector `{}`, then all namespaces are eligible",
  so it is always rendered as {}. CEL rules: each flavor lists every covered resource, in the
  group's order (a missing quota is rendered as 0); borrowingLimit (and, per its field doc,
  lendingLimit) must be null when the cohort is empty, so limits are left out then.
- Cohort: spec.parentName and spec.resourceGroups in v1beta1 and v1beta2 (v1alpha1 had
  spec.parent). Kueue PR #5595 (June 2025) promoted it to v1beta1 and dropped v1alpha1, so an
  older Kueue serves Cohort only as v1alpha1. A cohort is just a name to a ClusterQueue; the
  Cohort object is optional, and `with_cohorts=False` leaves it out.
- LocalQueue: namespaced, spec.clusterQueue, which is immutable ("field is immutable").
- ResourceFlavor: spec.nodeLabels (at most 8), nodeTaints, tolerations.
- WorkloadPriorityClass: top-level value (int32) and description (omitempty, at most 2048
  characters), no spec; a job names it in the label kueue.x-k8s.io/priority-class.
Tenant namespaces enforce Pod Security "baseline" and warn on "restricted", as the tenant
onboarding manifest of the product design says (seed 004, section 1.5). Quantities: cpu in cores,
or millicores when not whole; memory quotas are GiB (node memory_gb is bytes / 2**30, see
inventory/nodes.py), rendered "NGi", or whole "Mi" when not a whole GiB; GPUs and other
extended resources as whole counts (a fraction can never be requested, so it is floored).
"""

from __future__ import annotations

import enum
import hashlib
import json
from collections.abc import Iterable, Mapping
from decimal import ROUND_FLOOR, ROUND_HALF_UP, Decimal
from typing import Any

from adapters.kubernetes.quantity import parse_quantity
from domain.model.ids import ClusterId, TenantId
from domain.model.job import JobPriority
from domain.model.quota import (
    CPU,
    MEMORY,
    ClusterQueue,
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
RESOURCE_FLAVOR = "ResourceFlavor"
COHORT = "Cohort"
CLUSTER_QUEUE = "ClusterQueue"
LOCAL_QUEUE = "LocalQueue"
WORKLOAD_PRIORITY_CLASS = "WorkloadPriorityClass"
CREATION_ORDER = (
    NAMESPACE,
    RESOURCE_FLAVOR,
    COHORT,
    CLUSTER_QUEUE,
    LOCAL_QUEUE,
    WORKLOAD_PRIORITY_CLASS,
)
PLURALS: Mapping[str, str] = {
    NAMESPACE: "namespaces",
    RESOURCE_FLAVOR: "resourceflavors",
    COHORT: "cohorts",
    CLUSTER_QUEUE: "clusterqueues",
    LOCAL_QUEUE: "localqueues",
    WORKLOAD_PRIORITY_CLASS: "workloadpriorityclasses",
}
NAMESPACED_KINDS = frozenset({LOCAL_QUEUE})

_QUANTITY_FIELDS = frozenset({"nominalQuota", "borrowingLimit", "lendingLimit"})
_ATOMIC_FIELDS = frozenset({"namespaceSelector", "nodeLabels"})
"""Compared whole: a label added to a selector or to a flavor's node labels narrows it."""
_OWNED_WHEN_ABSENT = frozenset(
    {
        "cohort",
        "cohortName",
        "parent",
        "parentName",
        "resourceGroups",
        "borrowingLimit",
        "lendingLimit",
        "nodeLabels",
        "nodeTaints",
        "tolerations",
        "description",
    }
)
"""Fields budcluster owns even when it leaves them out: someone adding one is drift."""


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
) -> list[JsonObject]:
    """Every object budcluster keeps on the cluster for `quotas`, in creation order.

    Values of priority classes come from `quotas`; their descriptions from `priority_classes`
    when given. Cohort objects cover the model's cohorts and every cohort a queue names.
    """
    descriptions = {pc.priority: pc.description for pc in priority_classes}
    cohorts = {c.name for c in quotas.cohorts} | {
        q.cohort for q in quotas.cluster_queues if q.cohort
    }
    objects = [
        *(_namespace(ns, tenant, cluster_id) for ns, tenant in _tenant_namespaces(quotas)),
        *(_flavor(f, version, cluster_id) for f in sorted(quotas.flavors, key=lambda f: f.name)),
        *(_cohort(name, version, cluster_id) for name in sorted(cohorts) if with_cohorts),
        *(
            _cluster_queue(q, version, cluster_id)
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


def _object(
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
    return _object("v1", NAMESPACE, name, cluster_id, labels=labels)


def _flavor(flavor: ResourceFlavor, version: KueueVersion, cluster_id: ClusterId) -> JsonObject:
    obj = _object(version.api_version, RESOURCE_FLAVOR, flavor.name, cluster_id)
    obj["spec"] = {"nodeLabels": dict(flavor.node_labels)} if flavor.node_labels else {}
    return obj


def _cohort(name: str, version: KueueVersion, cluster_id: ClusterId) -> JsonObject:
    obj = _object(version.api_version, COHORT, name, cluster_id)
    obj["spec"] = {}
    return obj


def _cluster_queue(queue: ClusterQueue, version: KueueVersion, cluster_id: ClusterId) -> JsonObject:
    spec: JsonObject = {
        "namespaceSelector": {},
        "queueingStrategy": queue.queueing_strategy.value,
        "preemption": {
            "withinClusterQueue": queue.preemption.within_cluster_queue.value,
            "reclaimWithinCohort": queue.preemption.reclaim_within_cohort.value,
        },
    }
    if queue.cohort:
        spec[version.cohort_field] = queue.cohort
    if queue.resource_groups:
        in_cohort = bool(queue.cohort)
        spec["resourceGroups"] = [_group(g, in_cohort=in_cohort) for g in queue.resource_groups]
    obj = _object(version.api_version, CLUSTER_QUEUE, queue.name, cluster_id)
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
    obj = _object(
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
    obj = _object(version.api_version, WORKLOAD_PRIORITY_CLASS, name, cluster_id)
    obj["value"] = value
    text = f"budcluster {priority.value} priority" if description is None else description
    if text:
        obj["description"] = text
    return obj


# --- identity, ownership and drift --------------------------------------------------------


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
    if kind == WORKLOAD_PRIORITY_CLASS:
        return {key: obj[key] for key in ("value", "description") if key in obj}
    return {"spec": obj.get("spec") or {}}


def spec_hash(obj: Mapping[str, Any]) -> str:
    """The first 16 hex digits of the SHA-256 of the owned part's canonical JSON."""
    canonical = json.dumps(owned_part(obj), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def drifted(desired: Mapping[str, Any], live: Mapping[str, Any] | None) -> str | None:
    """Why `live` no longer matches `desired` ("missing", "spec.cohortName changed", ...), or
    None when it does."""
    if live is None:
        return "missing"
    metadata = live.get("metadata") or {}
    if metadata.get("deletionTimestamp"):
        return "being deleted"
    reason = _difference(owned_part(desired), owned_part(live), "")
    if reason is not None:
        if desired.get("kind") == LOCAL_QUEUE and reason.startswith("spec.clusterQueue"):
            return f"{reason} (immutable: delete and recreate)"
        return reason
    live_labels = metadata.get("labels") or {}
    for key, value in desired["metadata"]["labels"].items():
        if live_labels.get(key) != value:
            return f"label {key} changed"
    if (metadata.get("annotations") or {}).get(SPEC_HASH) != spec_hash(desired):
        return f"annotation {SPEC_HASH} out of date"
    return None


def _difference(want: Any, have: Any, path: str, key: str | None = None) -> str | None:
    if key in _ATOMIC_FIELDS:
        return None if want == have else f"{path} changed"
    if isinstance(want, dict):
        return _dict_difference(want, have, path)
    if isinstance(want, list):
        if not isinstance(have, list) or len(have) != len(want):
            return f"{path} changed"
        for index, (w, h) in enumerate(zip(want, have, strict=True)):
            if (reason := _difference(w, h, f"{path}[{index}]")) is not None:
                return reason
        return None
    return None if _same_value(want, have, key) else f"{path} changed"


def _dict_difference(want: Mapping[str, Any], have: Any, path: str) -> str | None:
    if not isinstance(have, dict):
        return f"{path} changed"
    for key, value in want.items():
        where = _child(path, key)
        if key not in have:
            return f"{where} missing"
        if (reason := _difference(value, have[key], where, key)) is not None:
            return reason
    added = sorted((have.keys() - want.keys()) & _OWNED_WHEN_ABSENT)
    return f"{_child(path, added[0])} added" if added else None


def _child(path: str, key: str) -> str:
    if "/" in key or "." in key:
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def _same_value(want: Any, have: Any, key: str | None) -> bool:
    if key in _QUANTITY_FIELDS:
        try:
            return parse_quantity(str(want)) == parse_quantity(str(have))
        except ValueError:
            return False
    return bool(want == have)
