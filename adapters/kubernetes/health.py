"""What a registered cluster offers budcluster: checks over what its API lets us read.

Six checks, in this order: `api` (reachable, and which Kubernetes), `nodes` (how many are Ready),
`nfd` (Node Feature Discovery: a node with feature.node.kubernetes.io/* labels, else an NFD
Deployment or DaemonSet), `kueue` (the ClusterQueue CRD, the API versions it serves and the
controller's version from its image tag) and `gpu_operator` (the NVIDIA ClusterPolicy CRD, else a
gpu-operator Deployment), then `versions` (a warning when Kubernetes or Kueue is outside the range
budcluster supports: domain.model.addons). A read the kubeconfig's user may not make (403) fails
its check with the detail "forbidden"; a cluster that cannot be reached or refuses the credentials
raises ClusterConnectionError instead, as there is nothing to check. Workloads are listed once, and
only when a check needs them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from domain.errors import ClusterConnectionError
from domain.model.addons import versions_check
from domain.model.cluster import HealthCheck

FEATURE_LABEL_PREFIX = "feature.node.kubernetes.io/"
KUEUE_CRD = "clusterqueues.kueue.x-k8s.io"
KUEUE_NAMESPACE = "kueue-system"
KUEUE_CONTROLLER = "kueue-controller-manager"
GPU_OPERATOR_CRD = "clusterpolicies.nvidia.com"
FORBIDDEN = "forbidden"

Json = dict[str, Any]
T = TypeVar("T")


class ClusterReads(Protocol):
    """The reads the checks make; each raises ClusterConnectionError like the cluster API."""

    async def server_version(self) -> str: ...

    async def list_nodes(self) -> tuple[list[Json], str]: ...

    async def read_crd(self, name: str) -> Json | None: ...

    async def read_deployment(self, *, namespace: str, name: str) -> Json | None: ...

    async def list_deployments(self) -> list[Json]: ...

    async def list_daemonsets(self) -> list[Json]: ...


@dataclass(frozen=True)
class KueueInstallation:
    api_versions: tuple[str, ...]
    """The kueue.x-k8s.io versions the ClusterQueue CRD serves, e.g. ("v1beta1", "v1beta2")."""
    version: str | None
    """The controller's image tag (e.g. "v0.9.1"), when its Deployment could be read."""


class _Forbidden(Exception):
    pass


async def _readable(read: Callable[[], Awaitable[T]]) -> T:
    """`read()`, with a 403 turned into _Forbidden (a failed check, not an outage)."""
    try:
        return await read()
    except ClusterConnectionError as exc:
        if exc.kind == "forbidden":
            raise _Forbidden from None
        raise


def image_tag(image: str) -> str | None:
    """`v0.9.1` of `registry.k8s.io/kueue/kueue:v0.9.1@sha256:...`; None without a tag."""
    last = image.split("@", 1)[0].rsplit("/", 1)[-1]
    _, colon, tag = last.rpartition(":")
    return tag if colon and tag else None


def _is_ready(node: Json) -> bool:
    conditions = node.get("status", {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _name(obj: Json) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}".lstrip("/")


def _is_nfd(obj: Json) -> bool:
    name = str((obj.get("metadata") or {}).get("name", ""))
    return "node-feature-discovery" in name or name.startswith("nfd-")


def _is_gpu_operator(obj: Json) -> bool:
    return str((obj.get("metadata") or {}).get("name", "")).endswith("gpu-operator")


class _Workloads:
    """The cluster's Deployments and DaemonSets, listed on first use."""

    def __init__(self, cluster: ClusterReads) -> None:
        self._cluster = cluster
        self._listed: list[tuple[str, Json]] | None = None

    async def all(self) -> list[tuple[str, Json]]:
        if self._listed is None:
            deployments = await _readable(self._cluster.list_deployments)
            daemonsets = await _readable(self._cluster.list_daemonsets)
            self._listed = [("Deployment", d) for d in deployments] + [
                ("DaemonSet", d) for d in daemonsets
            ]
        return self._listed

    async def first(self, wanted: Callable[[Json], bool], *, kind: str | None = None) -> str | None:
        """The first workload `wanted` picks, as "Kind namespace/name"; None if none."""
        for found_kind, obj in await self.all():
            if (kind is None or found_kind == kind) and wanted(obj):
                return f"{found_kind} {_name(obj)}"
        return None


async def find_kueue(cluster: ClusterReads) -> KueueInstallation | None:
    """Kueue as installed, or None; raises ClusterConnectionError (forbidden included)."""
    crd = await cluster.read_crd(KUEUE_CRD)
    if crd is None:
        return None
    versions = tuple(
        str(v["name"])
        for v in crd.get("spec", {}).get("versions") or []
        if isinstance(v, dict) and v.get("served") and v.get("name")
    )
    try:
        controller = await cluster.read_deployment(namespace=KUEUE_NAMESPACE, name=KUEUE_CONTROLLER)
    except ClusterConnectionError as exc:
        if exc.kind != "forbidden":
            raise
        controller = None
    containers = (controller or {}).get("spec", {}).get("template", {}).get("spec", {})
    images = [str(c.get("image", "")) for c in containers.get("containers") or []]
    kueue_images = [i for i in images if "kueue" in i.rsplit("/", 1)[-1]] or images
    version = image_tag(kueue_images[0]) if kueue_images else None
    return KueueInstallation(api_versions=versions, version=version)


async def _api(cluster: ClusterReads) -> HealthCheck:
    try:
        version = await _readable(cluster.server_version)
    except _Forbidden:
        return HealthCheck("api", False, FORBIDDEN)
    return HealthCheck("api", True, f"reachable, Kubernetes {version}", version=version)


async def _nodes(cluster: ClusterReads) -> tuple[HealthCheck, list[Json] | None]:
    try:
        nodes, _ = await _readable(cluster.list_nodes)
    except _Forbidden:
        return HealthCheck("nodes", False, FORBIDDEN), None
    if not nodes:
        return HealthCheck("nodes", False, "the cluster has no nodes"), nodes
    ready = sum(_is_ready(n) for n in nodes)
    return HealthCheck("nodes", ready == len(nodes), f"{ready} of {len(nodes)} nodes ready"), nodes


async def _nfd(nodes: list[Json] | None, workloads: _Workloads) -> HealthCheck:
    labelled = [
        n
        for n in nodes or []
        if any(k.startswith(FEATURE_LABEL_PREFIX) for k in n.get("metadata", {}).get("labels", {}))
    ]
    if labelled:
        return HealthCheck(
            "nfd", True, f"feature labels on {len(labelled)} of {len(nodes or [])} nodes"
        )
    try:
        found = await workloads.first(_is_nfd)
    except _Forbidden:
        return HealthCheck("nfd", False, FORBIDDEN)
    if found:
        return HealthCheck("nfd", True, f"{found} found; no node has feature labels yet")
    return HealthCheck("nfd", False, "not installed: no node has feature.node.kubernetes.io labels")


async def _kueue(cluster: ClusterReads) -> HealthCheck:
    try:
        kueue = await _readable(lambda: find_kueue(cluster))
    except _Forbidden:
        return HealthCheck("kueue", False, FORBIDDEN)
    if kueue is None:
        return HealthCheck("kueue", False, f"not installed: no {KUEUE_CRD} CRD")
    served = ", ".join(kueue.api_versions) or "no version served"
    controller = kueue.version or "version unknown"
    return HealthCheck(
        "kueue", True, f"installed, API {served}, controller {controller}", version=kueue.version
    )


async def _gpu_operator(cluster: ClusterReads, workloads: _Workloads) -> HealthCheck:
    try:
        if await _readable(lambda: cluster.read_crd(GPU_OPERATOR_CRD)) is not None:
            return HealthCheck("gpu_operator", True, f"installed: {GPU_OPERATOR_CRD} CRD")
        crd_forbidden = False
    except _Forbidden:
        crd_forbidden = True
    try:
        found = await workloads.first(_is_gpu_operator, kind="Deployment")
    except _Forbidden:
        return HealthCheck("gpu_operator", False, FORBIDDEN)
    if found:
        return HealthCheck("gpu_operator", True, f"{found} found")
    if crd_forbidden:
        return HealthCheck("gpu_operator", False, FORBIDDEN)
    return HealthCheck("gpu_operator", False, f"not installed: no {GPU_OPERATOR_CRD} CRD")


async def check_health(cluster: ClusterReads) -> list[HealthCheck]:
    """The six checks (module doc); raises ClusterConnectionError unless it is a 403."""
    workloads = _Workloads(cluster)
    api = await _api(cluster)
    nodes_check, nodes = await _nodes(cluster)
    kueue = await _kueue(cluster)
    return [
        api,
        nodes_check,
        await _nfd(nodes, workloads),
        kueue,
        await _gpu_operator(cluster, workloads),
        versions_check(api.version, kueue.version),
    ]
