"""A tenant's secrets on a real cluster: one v1 Secret per secret a job names, per attempt.

Each is made in the tenant's namespace before the attempt's Job (a pod never starts without
it), named `<workload>-<secret>`, labelled with the attempt's identity (removed with the attempt:
`cancel` deletes what carries its labels) and, once the Job exists, owned by it (Kubernetes'
garbage collector removes it with the Job, its TTL too). Values go as `data` (base64, what the
API server stores); they are never logged. A pod gets a secret as `envFrom: secretRef` (every
key an environment variable; the spec's own `env` wins, as Kubernetes has it) or as a read-only
`secret` volume at its mount path (a file per key, mode 0400). A chart gets the same as values:
`envFromSecrets` (names) and `secretMounts` ({secret, mountPath}).
"""

from __future__ import annotations

import base64
from typing import Any

from domain.model.tenant_secret import MountedSecret
from domain.ports.gateways import Workload

JsonObject = dict[str, Any]
FILE_MODE = 0o400
"""Files of a mounted secret: readable by the container's user only."""


def secret_object_name(workload: Workload, secret: MountedSecret) -> str:
    """A DNS-1123 subdomain: the workload's name (a label) and the secret's (a label)."""
    return f"{workload.name}-{secret.ref.name}"


def secrets_path(namespace: str) -> str:
    return f"/api/v1/namespaces/{namespace}/secrets"


def secret_objects(workload: Workload, labels: dict[str, str]) -> list[JsonObject]:
    """The Secrets of the attempt, to create before its Job."""
    return [
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {
                "name": secret_object_name(workload, s),
                "namespace": workload.namespace,
                "labels": dict(labels),
            },
            "type": "Opaque",
            "data": {k: base64.b64encode(v.encode()).decode() for k, v in sorted(s.data.items())},
        }
        for s in workload.secrets
    ]


def _volume(index: int) -> str:
    return f"bud-secret-{index}"


def container_fields(workload: Workload) -> JsonObject:
    """What the container "main" gets of the attempt's secrets: envFrom and volumeMounts."""
    fields: JsonObject = {}
    env = [
        {"secretRef": {"name": secret_object_name(workload, s)}}
        for s in workload.secrets
        if s.ref.mount_path is None
    ]
    mounts = [
        {"name": _volume(i), "mountPath": s.ref.mount_path, "readOnly": True}
        for i, s in enumerate(workload.secrets)
        if s.ref.mount_path is not None
    ]
    if env:
        fields["envFrom"] = env
    if mounts:
        fields["volumeMounts"] = mounts
    return fields


def pod_volumes(workload: Workload) -> JsonObject:
    """The pod spec's volumes for the secrets mounted as files (none: no field)."""
    volumes = [
        {
            "name": _volume(i),
            "secret": {
                "secretName": secret_object_name(workload, s),
                "defaultMode": FILE_MODE,
            },
        }
        for i, s in enumerate(workload.secrets)
        if s.ref.mount_path is not None
    ]
    return {"volumes": volumes} if volumes else {}


def chart_values(workload: Workload) -> JsonObject:
    """The values budcluster's charts read to give their pods the attempt's secrets (a chart
    of the user's gets them too, to use as it will)."""
    if not workload.secrets:
        return {}
    return {
        "envFromSecrets": [
            secret_object_name(workload, s) for s in workload.secrets if s.ref.mount_path is None
        ],
        "secretMounts": [
            {"secret": secret_object_name(workload, s), "mountPath": s.ref.mount_path}
            for s in workload.secrets
            if s.ref.mount_path is not None
        ],
    }


def owned_by(kind: str, api_version: str, name: str, uid: str) -> JsonObject:
    """The merge patch that makes a Secret the object's (removed with it)."""
    owner = {"apiVersion": api_version, "kind": kind, "name": name, "uid": uid}
    return {"metadata": {"ownerReferences": [owner]}}
