"""Quotas onto a real cluster: the quota model reconciled as Kueue objects.

One pass (`reconcile`): find the kueue.x-k8s.io versions the cluster serves and use the newest
supported one (v1beta2 names a ClusterQueue's cohort `cohortName`, v1beta1 `cohort`); render
every object the quota model asks for (`objects`: tenant Namespaces and their isolation
NetworkPolicies, flavors, cohorts, cluster queues, held when the cluster is drained whole, local
queues, priority classes); read each live object and create what is missing, replace what
drifted (a LocalQueue pointing at another ClusterQueue is deleted and created again: that field
is immutable), and delete the objects labelled as budcluster's for this cluster that the model
no longer has (Kueue's, and the isolation policies of namespaces it no longer has). Tenant
namespaces are never deleted: they may hold the tenant's other objects.

Drift is told apart from a first creation by what was applied before (`applied`, the keys of
the last pass, kept with the cluster): an object applied before and now missing or changed was
restored, and the pass says so. The result is the health check `kueue_quotas`: ok when
everything is in place, else why not (Kueue absent, no supported version, a refused write).
A cluster serving Cohort in no supported version (Kueue before v0.13 serves it as v1alpha1 only)
gets its ClusterQueues with their cohort names, which is all Kueue needs to share quota.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable, Sequence
from typing import Any

from adapters.kubernetes.api import KubeApi
from adapters.kubernetes.errors import ObjectConflict
from adapters.kubernetes.kueue.drift import drifted
from adapters.kubernetes.kueue.multikueue import (
    KUEUE_NAMESPACE,
    admission_checks,
    multikueue_objects,
)
from adapters.kubernetes.kueue.objects import (
    CLUSTER_ID_LABEL,
    KUEUE_GROUP,
    LOCAL_QUEUE,
    MANAGED_BY,
    MANAGER,
    MULTIKUEUE_CLUSTER,
    NAMESPACE,
    NETWORK_POLICY,
    NETWORKING_API,
    PLURALS,
    SECRET,
    SPEC_HASH,
    KueueVersion,
    choose_version,
    collection_path,
    desired_objects,
    is_tenant_isolation,
    object_key,
    object_path,
    spec_hash,
)
from domain.errors import ClusterConnectionError
from domain.model.cluster import HealthCheck
from domain.model.ids import ClusterId
from domain.model.quota import QuotaSet, WorkloadPriorityClass
from domain.ports.cluster_api import QUOTAS_CHECK, MultiKueueFleet, QuotasApplied

log = logging.getLogger(__name__)

CHECK = QUOTAS_CHECK
_KUEUE_KINDS = (
    "ClusterQueue",
    "LocalQueue",
    "ResourceFlavor",
    "Cohort",
    "WorkloadPriorityClass",
    "AdmissionCheck",
    "MultiKueueConfig",
    "MultiKueueCluster",
)
"""Deletion order for objects the model no longer has (queues before what they name)."""


def key_text(obj: dict[str, Any]) -> str:
    """An object's key in `QuotasApplied` ("Kind/namespace/name", or "Kind/name")."""
    _, kind, namespace, name = object_key(obj)
    return f"{kind}/{namespace}/{name}" if namespace else f"{kind}/{name}"


async def reconcile(
    api: KubeApi,
    quotas: QuotaSet,
    *,
    cluster_id: ClusterId,
    priority_classes: Iterable[WorkloadPriorityClass] = (),
    applied_before: Iterable[str] = (),
    multikueue: Sequence[MultiKueueFleet] = (),
    kueue_namespace: str = KUEUE_NAMESPACE,
    hold: bool = False,
) -> QuotasApplied:
    """One pass (module doc). Raises ClusterConnectionError when the cluster can't be reached;
    a write the cluster refuses (403, 422) fails the check instead. `multikueue`: the fleets
    this cluster is MultiKueue's manager of (kueue/multikueue.py); `hold`: every ClusterQueue
    with stopPolicy Hold (the cluster is drained whole)."""
    served = await api.served_versions(KUEUE_GROUP)
    version = choose_version(served)
    if version is None:
        detail = (
            "Kueue is not installed: the cluster serves no kueue.x-k8s.io API"
            if not served
            else f"Kueue serves {', '.join(sorted(served))}: none supported (v1beta1, v1beta2)"
        )
        return QuotasApplied(HealthCheck(CHECK, False, detail))
    resources = await api.served_resources(version.api_version)
    failures: list[str] = []
    managing = list(multikueue)
    if managing and PLURALS[MULTIKUEUE_CLUSTER] not in resources:
        failures.append(
            f"fleets {', '.join(sorted(f.name for f in managing))}: this cluster serves no "
            f"MultiKueue API (kueue.x-k8s.io/{version} multikueueclusters): it cannot be their "
            "manager"
        )
        managing = []
    desired = desired_objects(
        quotas,
        version,
        cluster_id=cluster_id,
        priority_classes=priority_classes,
        with_cohorts=PLURALS["Cohort"] in resources,
        admission_checks=admission_checks(managing),
        before_queues=multikueue_objects(
            managing, version, cluster_id=cluster_id, namespace=kueue_namespace
        ),
        hold=hold,
    )
    before = set(applied_before)
    result = QuotasApplied(HealthCheck(CHECK, True, ""))
    for obj in desired:
        try:
            await _apply(api, obj, before, result)
        except ClusterConnectionError as exc:
            if exc.kind in ("unreachable", "unauthorized"):
                raise
            failures.append(f"{key_text(obj)}: {exc.message}")
    wanted = {object_key(obj) for obj in desired}
    for kind in _KUEUE_KINDS:
        if PLURALS[kind] not in resources:
            continue
        listed, _ = await api.list_objects(collection_path(version.api_version, kind))
        for live in listed:
            if _ours(live, cluster_id) and object_key(live) not in wanted:
                live.setdefault("apiVersion", version.api_version)
                live.setdefault("kind", kind)
                await api.delete_object(object_path(live))
                result.removed.append(key_text(live))
    had_secrets = any(key.startswith(f"{SECRET}/") for key in before)
    secrets, _ = (
        await api.list_objects(collection_path("v1", SECRET, kueue_namespace))
        if managing or had_secrets
        else ([], "")
    )
    for live in secrets:  # the worker kubeconfigs of fleets it no longer manages
        live.setdefault("apiVersion", "v1")
        live.setdefault("kind", SECRET)
        if _ours(live, cluster_id) and object_key(live) not in wanted:
            await api.delete_object(object_path(live))
            result.removed.append(key_text(live))
    if any(obj["kind"] == NETWORK_POLICY for obj in desired) or any(
        key.startswith(f"{NETWORK_POLICY}/") for key in before
    ):
        await _remove_isolations(api, cluster_id, wanted, result, failures)
    result.check = _check(version, result, failures, len(desired))
    return result


async def _remove_isolations(
    api: KubeApi,
    cluster_id: ClusterId,
    wanted: set[tuple[str, str, str | None, str]],
    result: QuotasApplied,
    failures: list[str],
) -> None:
    """Delete the isolation NetworkPolicies of namespaces the model no longer has (never a
    benchmark's egress policy, which goes with its Job)."""
    path = collection_path(NETWORKING_API, NETWORK_POLICY)
    try:
        listed, _ = await api.list_objects(path, label_selector=f"{CLUSTER_ID_LABEL}={cluster_id}")
    except ClusterConnectionError as exc:
        if exc.kind in ("unreachable", "unauthorized"):
            raise
        failures.append(f"{NETWORK_POLICY}: {exc.message}")
        return
    for live in listed:
        live.setdefault("apiVersion", NETWORKING_API)
        live.setdefault("kind", NETWORK_POLICY)
        if _ours(live, cluster_id) and is_tenant_isolation(live) and object_key(live) not in wanted:
            await api.delete_object(object_path(live))
            result.removed.append(key_text(live))


async def _apply(
    api: KubeApi, obj: dict[str, Any], before: set[str], result: QuotasApplied
) -> None:
    key = key_text(obj)
    path = object_path(obj)
    live = await api.get_object(path)
    reason = drifted(obj, live)
    if reason is None:
        result.applied.append(key)
        return
    if live is None:
        with contextlib.suppress(ObjectConflict):  # created meanwhile: the next pass compares
            await api.create_object(path.rpartition("/")[0], obj)
    elif obj["kind"] == LOCAL_QUEUE and "immutable" in reason:
        await api.delete_object(path)
        await api.create_object(path.rpartition("/")[0], obj)
    else:
        replacement = _merged(obj, live)
        try:
            await api.replace_object(path, replacement)
        except ObjectConflict:  # changed while we looked: the next pass sees the new state
            log.info("%s changed while being restored; the next pass retries", key)
    result.applied.append(key)
    if key in before and not _model_changed(live):
        result.restored.append(f"{key} ({reason})")
        log.warning("Kueue object %s had drifted (%s): restored", key, reason)
    elif live is None:
        result.created.append(key)
    else:
        result.updated.append(key)


def _merged(desired: dict[str, Any], live: dict[str, Any]) -> dict[str, Any]:
    """The object to PUT: ours, keeping what others own in the live one (status, other labels
    and annotations) and its resourceVersion, so a concurrent change is refused, not lost."""
    metadata = dict(live.get("metadata") or {})
    for owned in ("labels", "annotations"):
        merged = dict(metadata.get(owned) or {})
        if desired["kind"] == NAMESPACE and owned == "labels":
            merged.update(desired["metadata"]["labels"])
        else:
            merged.update(desired["metadata"].get(owned) or {})
        metadata[owned] = merged
    metadata.pop("managedFields", None)
    replacement = {key: value for key, value in desired.items() if key != "metadata"}
    replacement["metadata"] = metadata
    if "status" in live:
        replacement["status"] = live["status"]
    return replacement


def _model_changed(live: dict[str, Any] | None) -> bool:
    """The live object is as we last wrote it (its stamp matches its content), so the
    difference is a change of the model, not of the cluster."""
    if live is None:
        return False
    stamped = ((live.get("metadata") or {}).get("annotations") or {}).get(SPEC_HASH)
    return stamped is not None and stamped == spec_hash(live)


def _ours(live: dict[str, Any], cluster_id: ClusterId) -> bool:
    labels = (live.get("metadata") or {}).get("labels") or {}
    return labels.get(MANAGED_BY) == MANAGER and labels.get(CLUSTER_ID_LABEL) == str(cluster_id)


def _check(
    version: KueueVersion, result: QuotasApplied, failures: Sequence[str], total: int
) -> HealthCheck:
    parts = [f"{total - len(failures)} of {total} objects in place (kueue.x-k8s.io/{version})"]
    if result.restored:
        parts.append(f"restored after drift: {'; '.join(result.restored)}")
    if result.removed:
        parts.append(f"removed: {', '.join(result.removed)}")
    if failures:
        parts.append(f"refused: {'; '.join(failures[:5])}")
    return HealthCheck(CHECK, not failures, ". ".join(parts))
