"""MultiKueue's manager objects for a fleet, and budcluster as its external dispatcher.

On the manager cluster, for each fleet it manages (`multikueue_objects`): a Secret per worker
in Kueue's namespace holding the worker's kubeconfig under the key `kubeconfig` (reduced to the
one context budcluster uses: self-contained, inline credentials only, as Kueue v0.15+ requires),
a MultiKueueCluster per worker naming it, one MultiKueueConfig listing them in the fleet's order,
and one AdmissionCheck of controller `kueue.x-k8s.io/multikueue` on that config, which the
fleet's ClusterQueue on the manager lists (`admission_checks`; objects.py renders the field).
Kueue's multiKueue dispatcherName must be one of the operator's choosing (any name but
AllAtOnce's and Incremental's); then Kueue copies a Workload to the workers named in its
`status.nominatedClusterNames`, and budcluster writes that field.

A job handed to the manager carries, in the annotation `bud.ai/run-on`, the member it is to run
on. Once its Workload has quota reserved on the manager, the fleet's check is Pending and no
`status.clusterName` is set (Kueue's `ShouldSkipClusterNomination`), `nomination` says which
MultiKueueCluster to nominate, and `nomination_patch` is the server-side apply of the Workload's
status that nominates it: as field manager `kueue-admission`, Kueue's own, with force. Kueue
clears the nomination when it admits the workload by leaving the field out of its own apply of
the status (`PatchAdmissionStatus`); a field another manager owned would survive that, and the
CEL rule that `clusterName` and `nominatedClusterNames` exclude each other would then refuse
Kueue's write (Kueue PR #5782's release note: external dispatchers must use `kueue-admission`;
the only way before v0.14's WorkloadRequestUseMergePatch gate, and the one that works on every
version since v0.13). Since an apply by a manager replaces that manager's whole set of fields,
the patch carries every status field `kueue-admission` owns now, as it is (read from the
Workload's managedFields), beside the nomination, and the resourceVersion it read (a concurrent
change is a conflict, retried on the next observation). `admitted_on` reads `status.clusterName`
back: the worker Kueue admitted it on.

Checked against kubernetes-sigs/kueue at ff69552 (v0.20.0-devel): apis/kueue/v1beta1 and v1beta2
multikueue_types.go, admissioncheck_types.go, clusterqueue_types.go, workload_types.go;
pkg/controller/admissionchecks/multikueue/workload.go (nominateAndSynchronizeWorkers);
pkg/workload/patching/patching.go; pkg/constants/constants.go.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from adapters.kubernetes.kubeconfig import parse_kubeconfig
from adapters.kubernetes.kueue.objects import (
    ADMISSION_CHECK,
    KUEUE_GROUP,
    MULTIKUEUE_CLUSTER,
    MULTIKUEUE_CONFIG,
    SECRET,
    JsonObject,
    KueueVersion,
    object_for,
)
from domain.model.ids import ClusterId
from domain.ports.cluster_api import MultiKueueFleet, MultiKueueWorker

CONTROLLER_NAME = "kueue.x-k8s.io/multikueue"
"""An AdmissionCheck's controllerName for MultiKueue (MultiKueueControllerName)."""
KUBECONFIG_KEY = "kubeconfig"
"""The key of a worker's kubeconfig in its Secret (MultiKueueConfigSecretKey)."""
FIELD_MANAGER = "kueue-admission"
"""The field manager of Kueue's own admission status patches (constants.AdmissionName)."""
KUEUE_NAMESPACE = "kueue-system"
"""Kueue's namespace by default (Configuration.namespace), where worker Secrets must be."""
RUN_ON = "bud.ai/run-on"
"""The annotation of a job handed to a manager: the member (budcluster's name) to run it on."""
PREFIX = "bud-"
FLEET_PREFIX = "bud-fleet-"
MAX_NOMINATED = 20
"""Kueue's bound on nominatedClusterNames (and MultiKueueConfig.spec.clusters)."""


def worker_name(cluster_name: str) -> str:
    """The MultiKueueCluster of a member, by the member's name in budcluster."""
    return f"{PREFIX}{cluster_name}"


def member_name(worker: str) -> str | None:
    """budcluster's name of the member a MultiKueueCluster of ours stands for."""
    return worker.removeprefix(PREFIX) if worker.startswith(PREFIX) else None


def secret_name(cluster_name: str) -> str:
    return f"{PREFIX}mk-{cluster_name}"


def check_name(fleet_name: str) -> str:
    """The fleet's AdmissionCheck and MultiKueueConfig (one of each per fleet)."""
    return f"{FLEET_PREFIX}{fleet_name}"


def multikueue_objects(
    fleets: Sequence[MultiKueueFleet],
    version: KueueVersion,
    *,
    cluster_id: ClusterId,
    namespace: str = KUEUE_NAMESPACE,
) -> list[JsonObject]:
    """Every object MultiKueue's manager needs for `fleets`, in creation order (Secrets, the
    MultiKueueClusters naming them, the configs naming those, the checks naming the configs)."""
    workers: dict[str, MultiKueueWorker] = {}
    for fleet in fleets:
        for worker in fleet.workers:
            workers.setdefault(worker.name, worker)
    objects = [_secret(w, cluster_id, namespace) for _, w in sorted(workers.items())]
    objects += [_worker(name, version, cluster_id) for name in sorted(workers)]
    for fleet in sorted(fleets, key=lambda f: f.name):
        config = object_for(
            version.api_version, MULTIKUEUE_CONFIG, check_name(fleet.name), cluster_id
        )
        config["spec"] = {"clusters": [worker_name(w.name) for w in fleet.workers][:MAX_NOMINATED]}
        check = object_for(version.api_version, ADMISSION_CHECK, check_name(fleet.name), cluster_id)
        check["spec"] = {
            "controllerName": CONTROLLER_NAME,
            "parameters": {
                "apiGroup": KUEUE_GROUP,
                "kind": MULTIKUEUE_CONFIG,
                "name": check_name(fleet.name),
            },
        }
        objects += [config, check]
    return objects


def _secret(worker: MultiKueueWorker, cluster_id: ClusterId, namespace: str) -> JsonObject:
    reduced = parse_kubeconfig(worker.kubeconfig, worker.context).document
    secret = object_for("v1", SECRET, secret_name(worker.name), cluster_id, namespace=namespace)
    secret["type"] = "Opaque"
    secret["stringData"] = {KUBECONFIG_KEY: yaml.safe_dump(reduced, sort_keys=True)}
    return secret


def _worker(name: str, version: KueueVersion, cluster_id: ClusterId) -> JsonObject:
    obj = object_for(version.api_version, MULTIKUEUE_CLUSTER, worker_name(name), cluster_id)
    source = {"locationType": "Secret", "location": secret_name(name)}
    if version is KueueVersion.V1BETA1:
        obj["spec"] = {"kubeConfig": source}
    else:
        obj["spec"] = {"clusterSource": {"kubeConfig": source}}
    return obj


def admission_checks(fleets: Sequence[MultiKueueFleet]) -> dict[str, list[str]]:
    """The AdmissionChecks each ClusterQueue of the manager lists, by its name."""
    checks: dict[str, list[str]] = {}
    for fleet in sorted(fleets, key=lambda f: f.name):
        checks.setdefault(fleet.cluster_queue, []).append(check_name(fleet.name))
    return checks


# --- the external dispatcher --------------------------------------------------------------


def _status(workload: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return (workload or {}).get("status") or {}


def _condition_true(status: Mapping[str, Any], kind: str) -> bool:
    return any(
        c.get("type") == kind and c.get("status") == "True" for c in status.get("conditions") or []
    )


def nomination(job: Mapping[str, Any] | None, workload: Mapping[str, Any] | None) -> str | None:
    """The MultiKueueCluster to nominate for `job`'s Workload now, or None: nothing to do
    (not ours to dispatch, not waiting for a nomination, or nominated already)."""
    target = (((job or {}).get("metadata") or {}).get("annotations") or {}).get(RUN_ON)
    status = _status(workload)
    if not target or workload is None or status.get("clusterName"):
        return None
    if not _condition_true(status, "QuotaReserved") or _condition_true(status, "Finished"):
        return None
    pending = any(
        str(check.get("name", "")).startswith(FLEET_PREFIX) and check.get("state") == "Pending"
        for check in status.get("admissionChecks") or []
    )
    wanted = worker_name(str(target))
    if not pending or list(status.get("nominatedClusterNames") or []) == [wanted]:
        return None
    return wanted


def _owned_by_admission(workload: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The status fields `kueue-admission` owns (fieldsV1 under f:status), if it owns any."""
    for entry in (workload.get("metadata") or {}).get("managedFields") or []:
        if entry.get("manager") == FIELD_MANAGER and entry.get("subresource") == "status":
            fields = (entry.get("fieldsV1") or {}).get("f:status")
            return fields if isinstance(fields, Mapping) else {}
    return None


def _keyed(items: Sequence[Mapping[str, Any]], owned: Mapping[str, Any], key: str) -> list[Any]:
    """The items of a map-list (conditions by type, admissionChecks by name) that `owned` (its
    fieldsV1) names by `k:{"<key>": ...}`."""
    names = set()
    for entry in owned:
        if entry.startswith("k:"):
            try:
                names.add(json.loads(entry[2:]).get(key))
            except (ValueError, AttributeError):
                continue
    return [item for item in items if item.get(key) in names]


def nomination_patch(workload: Mapping[str, Any], target: str) -> JsonObject:
    """The server-side apply (as FIELD_MANAGER, with force) of the Workload's status that
    nominates `target`, carrying every field that manager owns as it is now (module doc); a
    Workload no manager's record says of (an API server without managedFields) gets its
    admission, conditions and admission checks carried, which Kueue's own patch always holds."""
    metadata = workload.get("metadata") or {}
    status = _status(workload)
    owned = _owned_by_admission(workload)
    carried: JsonObject = {}
    if owned is None:
        carried = {
            k: status[k] for k in ("admission", "conditions", "admissionChecks") if k in status
        }
    else:
        for entry, fields in owned.items():
            name = entry.removeprefix("f:")
            if not entry.startswith("f:") or name not in status or name == "nominatedClusterNames":
                continue
            value = status[name]
            if name in ("conditions", "admissionChecks") and isinstance(fields, Mapping):
                value = _keyed(value, fields, "type" if name == "conditions" else "name")
            carried[name] = value
    identity = {
        key: metadata[key] for key in ("name", "namespace", "resourceVersion") if metadata.get(key)
    }
    return {
        "apiVersion": workload.get("apiVersion"),
        "kind": "Workload",
        "metadata": identity,
        "status": {**carried, "nominatedClusterNames": [target]},
    }


def admitted_on(workload: Mapping[str, Any] | None) -> str | None:
    """The member (budcluster's name) Kueue admitted the Workload on, from status.clusterName."""
    name = _status(workload).get("clusterName")
    return member_name(str(name)) if name else None
