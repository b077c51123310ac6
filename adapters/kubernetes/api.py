"""The Kubernetes API as the adapter uses it: objects by URL path, as JSON, with resourceVersions.

`KubeClusterApi` (connection.py) implements it over kubernetes-asyncio; the gateway, the Kueue
quota sync and `KubeCluster` (the domain's ClusterApi) are written against this Protocol, so
tests may stand an emulator or a fake behind it; the gateway's `WorkloadApi` adds pods' logs and
what a pod serves through the API server's proxy.
Methods raise ClusterConnectionError (unreachable, unauthorized, forbidden, error).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import datetime
from typing import Any, Literal, Protocol

from domain.model.cluster import HealthCheck

Json = dict[str, Any]


class KubeApi(Protocol):
    async def server_version(self) -> str: ...

    async def list_nodes(self) -> tuple[list[Json], str]:
        """The Node objects as the API returns them (JSON), and the list's resourceVersion."""

    def watch_nodes(self, resource_version: str) -> AsyncIterator[tuple[str, Json]]:
        """(ADDED | MODIFIED | DELETED, node) from `resource_version` on; raises WatchExpired."""

    async def health(self) -> list[HealthCheck]: ...

    async def served_versions(self, group: str) -> list[str]:
        """The versions of an API group the server serves (discovery); [] when none."""

    async def served_resources(self, group_version: str) -> set[str]:
        """The resources (plurals) a group version serves; empty when it is not served."""

    async def get_object(
        self, path: str, *, query: list[tuple[str, str]] | None = None
    ) -> Json | None:
        """The object at an API path (e.g. /apis/kueue.x-k8s.io/v1beta2/clusterqueues/a), or
        None when there is none (404); `query`: query parameters."""

    async def list_objects(
        self, path: str, *, label_selector: str | None = None
    ) -> tuple[list[Json], str]:
        """The items of a collection path and the list's resourceVersion; ([], "") when the
        resource is not served (404)."""

    def watch_objects(
        self, path: str, resource_version: str, *, label_selector: str | None = None
    ) -> AsyncIterator[tuple[str, Json]]:
        """(ADDED | MODIFIED | DELETED, object) of a collection after `resource_version`, until
        the server ends the watch; raises WatchExpired. `label_selector` narrows it as a list's
        does (the server filters)."""

    async def patch_object(self, path: str, patch: Json) -> Json | None:
        """A JSON merge patch; None when the object is gone."""

    async def apply_status(self, path: str, obj: Json, *, field_manager: str) -> Json | None:
        """A server-side apply of the status subresource of the object at `path`, as
        `field_manager`, taking ownership of its fields (force); None when the object is gone;
        ObjectConflict when `obj`'s metadata.resourceVersion is no longer the object's."""

    async def create_object(self, path: str, obj: Json) -> Json:
        """POST to a collection path; raises ObjectConflict when the name exists."""

    async def replace_object(self, path: str, obj: Json) -> Json:
        """PUT the whole object (its metadata.resourceVersion, when set, guards against a
        concurrent change: ObjectConflict)."""

    async def delete_object(self, path: str) -> None:
        """DELETE; an object already gone is not an error."""

    async def close(self) -> None: ...


class WorkloadApi(KubeApi, Protocol):
    """The API as the gateway uses it: objects, what pods print (a job's logs; a benchmark Job
    reports its result in its pod's log), what a drain does to pods (list them by node,
    evict them, delete them with a grace period), and what a pod serves (a model replica's
    metrics, through the API server's proxy)."""

    async def list_objects(
        self, path: str, *, label_selector: str | None = None, field_selector: str | None = None
    ) -> tuple[list[Json], str]:
        """As KubeApi's, and narrowed by an equality `field_selector` ("spec.nodeName=n1"),
        which the server applies."""

    async def delete_object(self, path: str, *, grace_seconds: int | None = None) -> None:
        """As KubeApi's; with `grace_seconds`, the DeleteOptions' gracePeriodSeconds (for a
        pod: the time its containers get between SIGTERM and being killed)."""

    async def evict_pod(self, *, namespace: str, name: str) -> bool:
        """POST the pod's policy/v1 Eviction: True when it is evicted or gone already (404),
        False when a PodDisruptionBudget forbids it now (429)."""

    async def pod_log(
        self,
        *,
        namespace: str,
        name: str,
        container: str | None,
        limit_bytes: int | None = None,
        since: datetime | None = None,
        tail_lines: int | None = None,
        timestamps: bool = False,
    ) -> str | None:
        """The container's log as text (the pod's only container when None): at most about
        `limit_bytes`, from its start; the lines written from `since` on (to the second), the
        last `tail_lines`, each after its RFC 3339 time with `timestamps`. None when the pod is
        gone (404); "" when the container is waiting to start (the kubelet's 400)."""

    async def proxy_get(
        self,
        *,
        namespace: str,
        kind: Literal["pods", "services"],
        name: str,
        port: int,
        path: str,
        limit_bytes: int,
        timeout_seconds: float,
    ) -> str | None:
        """GET `path` from a pod's (or a Service's) `port` through the API server's proxy
        (/api/v1/namespaces/<ns>/<kind>/<name>:<port>/proxy/<path>): the text it answered. None
        when it answered no 2xx (404: no such pod; 503: nothing listens there), sent more than
        `limit_bytes`, broke off, or did not answer within `timeout_seconds`: what is behind
        the proxy is not the API server's failure. ClusterConnectionError when the API server
        itself cannot be reached or refuses the credentials (401, 403 Status)."""
