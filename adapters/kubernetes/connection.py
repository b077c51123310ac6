"""One live connection to a registered cluster's API server: nodes and health.

A KubeClusterApi owns one kubernetes-asyncio ApiClient (one aiohttp session) and the private
directory (mode 0700) its inline certificates were decoded into; `close()` closes the session and
wipes the directory (a finalizer wipes it too if a connection is dropped unclosed). Every request
asks for the raw response (`_preload_content=False`) and decodes the JSON itself: the caller gets
objects exactly as the API sent them (camelCase keys, fields the client's models do not know), and
a non-2xx answer is ours to map, since kubernetes-asyncio does not check the status of raw
responses. Every request has connect and read timeouts; a watch asks the server to end it after
`watch_seconds` and gives up reading a little after that. Watching nodes follows list-then-watch:
an expired resourceVersion, as an HTTP 410 or as an ERROR event with code 410, raises
ResourceVersionGone and the caller lists again. A read through the API server's proxy (what a pod
serves) is bounded in time and size, and what answers behind the proxy, or fails to, is never
taken for the server's own failure.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import tempfile
import weakref
from collections.abc import AsyncIterator, Awaitable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, cast

import aiohttp
from kubernetes_asyncio.client import (
    ApiClient,
    ApiextensionsV1Api,
    AppsV1Api,
    CoreV1Api,
    VersionApi,
)

from adapters.kubernetes.cluster import KubeCluster
from adapters.kubernetes.errors import (
    HTTP_BAD_REQUEST,
    HTTP_CONFLICT,
    HTTP_FORBIDDEN,
    HTTP_GONE,
    HTTP_NOT_FOUND,
    HTTP_TOO_MANY_REQUESTS,
    HTTP_UNAUTHORIZED,
    TRANSPORT_ERRORS,
    ObjectConflict,
    ResourceVersionGone,
    status_error,
    status_reason,
    transport_error,
)
from adapters.kubernetes.health import KueueInstallation, check_health, find_kueue
from adapters.kubernetes.kubeconfig import Kubeconfig, build_api_client, parse_kubeconfig
from domain.errors import ClusterConnectionError
from domain.model.cluster import HealthCheck
from domain.model.ids import ClusterId
from domain.ports.cluster_api import KubeconfigSummary

Json = dict[str, Any]
WATCHED_EVENTS = frozenset({"ADDED", "MODIFIED", "DELETED"})


@dataclass(frozen=True)
class KubeTimeouts:
    connect: float = 10.0
    """Seconds to open a connection (DNS, TCP and TLS)."""
    read: float = 10.0
    """Seconds to wait for the next bytes of an answer."""
    watch_seconds: int = 300
    """A watch's server-side `timeoutSeconds`: the server ends the stream after that long."""
    watch_grace: float = 15.0
    """How much longer than `watch_seconds` a quiet watch is read before it counts as stalled."""

    @property
    def request(self) -> aiohttp.ClientTimeout:
        return aiohttp.ClientTimeout(
            total=None, connect=self.connect, sock_connect=self.connect, sock_read=self.read
        )

    def watching(self, seconds: int) -> aiohttp.ClientTimeout:
        return aiohttp.ClientTimeout(
            total=None,
            connect=self.connect,
            sock_connect=self.connect,
            sock_read=seconds + self.watch_grace,
        )


def _waiting_to_start(body: bytes) -> bool:
    """The kubelet's 400 to a log read of a container not started yet ('container "main" in pod
    "p" is waiting to start: ContainerCreating'): it has written nothing."""
    try:
        document = json.loads(body)
    except ValueError:
        return False
    message = document.get("message") if isinstance(document, dict) else None
    return isinstance(message, str) and "is waiting to start" in message


def _not_json(server: str, action: str) -> ClusterConnectionError:
    return ClusterConnectionError("error", f"{server} answered {action} with something not JSON")


class KubeClusterApi:
    """A live connection to one cluster (module doc). Use `from_kubeconfig`; close it."""

    def __init__(
        self,
        *,
        api_client: ApiClient,
        kubeconfig: Kubeconfig,
        temp_dir: Path,
        timeouts: KubeTimeouts,
    ) -> None:
        self._client = api_client
        self._kubeconfig = kubeconfig
        self._temp_dir = temp_dir
        self._timeouts = timeouts
        self._core = CoreV1Api(api_client)
        self._apps = AppsV1Api(api_client)
        self._crds = ApiextensionsV1Api(api_client)
        self._version = VersionApi(api_client)
        self._wipe = weakref.finalize(self, shutil.rmtree, temp_dir, ignore_errors=True)
        self._closed = False

    @classmethod
    async def from_kubeconfig(
        cls, kubeconfig: str, *, context: str | None = None, timeouts: KubeTimeouts | None = None
    ) -> KubeClusterApi:
        """Connect with kubeconfig text (no request is made yet). Raises
        ClusterConnectionError(invalid_kubeconfig)."""
        parsed = parse_kubeconfig(kubeconfig, context)
        temp_dir = Path(tempfile.mkdtemp(prefix="budcluster-kube-"))  # mode 0700
        try:
            api_client = await build_api_client(parsed, temp_dir=temp_dir)
        except BaseException:
            shutil.rmtree(temp_dir, ignore_errors=True)
            raise
        return cls(
            api_client=api_client,
            kubeconfig=parsed,
            temp_dir=temp_dir,
            timeouts=timeouts or KubeTimeouts(),
        )

    @property
    def summary(self) -> KubeconfigSummary:
        return self._kubeconfig.summary

    @property
    def server_url(self) -> str:
        return self._kubeconfig.server_url

    @property
    def temp_dir(self) -> Path:
        """Where kubernetes-asyncio decoded the inline certificates; gone once closed."""
        return self._temp_dir

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            await self._client.close()
        finally:
            self._wipe()

    async def __aenter__(self) -> KubeClusterApi:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.close()

    # --- requests -------------------------------------------------------------------------

    async def _fetch(self, action: str, pending: Awaitable[object]) -> tuple[int, bytes]:
        try:
            response = cast(aiohttp.ClientResponse, await pending)
            async with response:
                return response.status, await response.read()
        except TRANSPORT_ERRORS as exc:
            raise transport_error(
                exc, server=self.server_url, action=action, timeout=self._timeouts.request
            ) from None
        except ValueError as exc:  # aiohttp refused to make the request at all
            raise ClusterConnectionError(
                "error",
                f"a request to {self.server_url} to {action} cannot be made from this kubeconfig "
                f"({type(exc).__name__})",
            ) from None

    def _decode(self, action: str, status: int, body: bytes) -> Json:
        if not 200 <= status < 300:
            raise status_error(
                status, server=self.server_url, action=action, reason=status_reason(body)
            )
        try:
            document = json.loads(body)
        except ValueError:
            raise _not_json(self.server_url, action) from None
        if not isinstance(document, dict):
            raise _not_json(self.server_url, action)
        return document

    async def _get(self, action: str, pending: Awaitable[object]) -> Json:
        return self._decode(action, *await self._fetch(action, pending))

    async def _find(self, action: str, pending: Awaitable[object]) -> Json | None:
        """Like `_get`, but None when the object does not exist (404)."""
        status, body = await self._fetch(action, pending)
        return None if status == HTTP_NOT_FOUND else self._decode(action, status, body)

    @property
    def _raw(self) -> dict[str, Any]:
        return {"_preload_content": False, "_request_timeout": self._timeouts.request}

    async def _items(self, action: str, pending: Awaitable[object]) -> tuple[list[Json], str]:
        document = await self._get(action, pending)
        items = [item for item in document.get("items") or [] if isinstance(item, dict)]
        return items, str((document.get("metadata") or {}).get("resourceVersion") or "")

    # --- reads ----------------------------------------------------------------------------

    async def server_version(self) -> str:
        """The server's gitVersion, e.g. "v1.30.2"."""
        document = await self._get("read the server version", self._version.get_code(**self._raw))
        return str(document.get("gitVersion") or "unknown")

    async def list_nodes(self) -> tuple[list[Json], str]:
        """The Node objects as the API returns them, and the list's resourceVersion."""
        return await self._items("list nodes", self._core.list_node(**self._raw))

    async def read_crd(self, name: str) -> Json | None:
        return await self._find(
            f"read CRD {name}", self._crds.read_custom_resource_definition(name, **self._raw)
        )

    async def read_deployment(self, *, namespace: str, name: str) -> Json | None:
        return await self._find(
            f"read deployment {namespace}/{name}",
            self._apps.read_namespaced_deployment(name, namespace, **self._raw),
        )

    async def list_deployments(self) -> list[Json]:
        pending = self._apps.list_deployment_for_all_namespaces(**self._raw)
        return (await self._items("list deployments", pending))[0]

    async def list_daemonsets(self) -> list[Json]:
        pending = self._apps.list_daemon_set_for_all_namespaces(**self._raw)
        return (await self._items("list daemonsets", pending))[0]

    # --- any object, by API path (discovery, create, replace, delete) ----------------------

    async def _call(
        self,
        method: str,
        path: str,
        body: Json | None = None,
        *,
        query: list[tuple[str, str]] | None = None,
        content_type: str = "application/json",
        action: str | None = None,
    ) -> tuple[int, bytes]:
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = content_type
        pending = self._client.call_api(
            path,
            method,
            query_params=query or [],
            header_params=headers,
            body=body,
            auth_settings=["BearerToken"],
            _return_http_data_only=True,
            _preload_content=False,
            _request_timeout=self._timeouts.request,
        )
        return await self._fetch(action or f"{method} {path}", pending)

    async def served_versions(self, group: str) -> list[str]:
        status, body = await self._call("GET", f"/apis/{group}")
        if status == HTTP_NOT_FOUND:
            return []
        document = self._decode(f"discover {group}", status, body)
        return [str(v.get("version")) for v in document.get("versions") or [] if v.get("version")]

    async def served_resources(self, group_version: str) -> set[str]:
        status, body = await self._call("GET", f"/apis/{group_version}")
        if status == HTTP_NOT_FOUND:
            return set()
        document = self._decode(f"discover {group_version}", status, body)
        return {str(r.get("name")) for r in document.get("resources") or [] if r.get("name")}

    async def get_object(
        self, path: str, *, query: list[tuple[str, str]] | None = None
    ) -> Json | None:
        status, body = await self._call("GET", path, query=query)
        return None if status == HTTP_NOT_FOUND else self._decode(f"read {path}", status, body)

    async def list_objects(
        self, path: str, *, label_selector: str | None = None, field_selector: str | None = None
    ) -> tuple[list[Json], str]:
        query = [("labelSelector", label_selector)] if label_selector else []
        if field_selector:
            query.append(("fieldSelector", field_selector))
        status, body = await self._call("GET", path, query=query)
        if status == HTTP_NOT_FOUND:
            return [], ""
        document = self._decode(f"list {path}", status, body)
        items = [item for item in document.get("items") or [] if isinstance(item, dict)]
        return items, str((document.get("metadata") or {}).get("resourceVersion") or "")

    async def patch_object(self, path: str, patch: Json) -> Json | None:
        status, body = await self._call(
            "PATCH", path, patch, content_type="application/merge-patch+json"
        )
        return None if status == HTTP_NOT_FOUND else self._decode(f"patch {path}", status, body)

    def watch_objects(
        self, path: str, resource_version: str, *, label_selector: str | None = None
    ) -> AsyncIterator[tuple[str, Json]]:
        """Like `watch_nodes`, for any collection path."""
        seconds = self._timeouts.watch_seconds
        timeout = self._timeouts.watching(seconds)
        query = [("watch", "true"), ("timeoutSeconds", str(seconds))]
        if resource_version:
            query.append(("resourceVersion", resource_version))
        if label_selector:
            query.append(("labelSelector", label_selector))
        pending = self._client.call_api(
            path,
            "GET",
            query_params=query,
            header_params={"Accept": "application/json"},
            auth_settings=["BearerToken"],
            _return_http_data_only=True,
            _preload_content=False,
            _request_timeout=timeout,
        )
        return self._stream(f"watch {path}", pending, resource_version, timeout)

    async def create_object(self, path: str, obj: Json) -> Json:
        status, body = await self._call("POST", path, obj)
        if status == HTTP_CONFLICT:
            raise ObjectConflict(f"{path}: {(obj.get('metadata') or {}).get('name')} exists")
        return self._decode(f"create in {path}", status, body)

    async def apply_status(self, path: str, obj: Json, *, field_manager: str) -> Json | None:
        status, body = await self._call(
            "PATCH",
            f"{path}/status",
            obj,
            query=[("fieldManager", field_manager), ("force", "true")],
            content_type="application/apply-patch+yaml",
        )
        if status == HTTP_CONFLICT:
            raise ObjectConflict(f"{path} changed meanwhile")
        return None if status == HTTP_NOT_FOUND else self._decode(f"apply {path}", status, body)

    async def replace_object(self, path: str, obj: Json) -> Json:
        status, body = await self._call("PUT", path, obj)
        if status == HTTP_CONFLICT:
            raise ObjectConflict(f"{path} changed meanwhile")
        return self._decode(f"replace {path}", status, body)

    async def delete_object(self, path: str, *, grace_seconds: int | None = None) -> None:
        query = [("propagationPolicy", "Background")]
        if grace_seconds is not None:
            query.append(("gracePeriodSeconds", str(grace_seconds)))
        status, body = await self._call("DELETE", path, query=query)
        if status != HTTP_NOT_FOUND:
            self._decode(f"delete {path}", status, body)

    async def evict_pod(self, *, namespace: str, name: str) -> bool:
        eviction: Json = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": name, "namespace": namespace},
        }
        path = f"/api/v1/namespaces/{namespace}/pods/{name}/eviction"
        status, body = await self._call("POST", path, eviction)
        if status == HTTP_TOO_MANY_REQUESTS:
            return False
        if status != HTTP_NOT_FOUND:
            self._decode(f"evict pod {namespace}/{name}", status, body)
        return True

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
        action = f"read the log of pod {namespace}/{name}"
        query = [("container", container)] if container else []
        if timestamps:
            query.append(("timestamps", "true"))
        if since is not None:  # the API keeps whole seconds of it: floored, nothing is lost
            query.append(("sinceTime", since.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")))
        if tail_lines is not None:
            query.append(("tailLines", str(tail_lines)))
        if limit_bytes is not None:
            query.append(("limitBytes", str(limit_bytes)))
        status, body = await self._call(
            "GET",
            f"/api/v1/namespaces/{namespace}/pods/{name}/log",
            query=query,
            action=action,
        )
        if status == HTTP_NOT_FOUND:
            return None
        if status == HTTP_BAD_REQUEST and _waiting_to_start(body):
            return ""
        if not 200 <= status < 300:
            raise status_error(
                status, server=self.server_url, action=action, reason=status_reason(body)
            )
        return body.decode("utf-8", errors="replace")

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
        action = f"read {path} of {kind} {namespace}/{name} through its proxy"
        pending = self._client.call_api(
            f"/api/v1/namespaces/{namespace}/{kind}/{name}:{port}/proxy/{path.lstrip('/')}",
            "GET",
            query_params=[],
            header_params={"Accept": "text/plain"},
            auth_settings=["BearerToken"],
            _return_http_data_only=True,
            _preload_content=False,
            _request_timeout=self._timeouts.request,
        )
        try:
            async with asyncio.timeout(timeout_seconds):
                return await self._proxied(action, pending, limit_bytes)
        except TimeoutError:  # ours: the API server took the request, nothing answered in time
            return None

    async def _proxied(
        self, action: str, pending: Awaitable[object], limit_bytes: int
    ) -> str | None:
        try:
            response = cast(aiohttp.ClientResponse, await pending)
        except TRANSPORT_ERRORS as exc:  # the API server did not answer
            raise transport_error(
                exc, server=self.server_url, action=action, timeout=self._timeouts.request
            ) from None
        async with response:
            if not 200 <= response.status < 300:
                try:
                    reason = status_reason(await response.content.read(64 << 10))
                except TRANSPORT_ERRORS:
                    return None
                if response.status in (HTTP_UNAUTHORIZED, HTTP_FORBIDDEN) and reason:
                    raise status_error(
                        response.status, server=self.server_url, action=action, reason=reason
                    )
                return None
            text = bytearray()
            try:
                while len(text) <= limit_bytes:
                    chunk = await response.content.read(limit_bytes + 1 - len(text))
                    if not chunk:
                        break
                    text += chunk
            except TRANSPORT_ERRORS:  # it broke off behind the proxy
                return None
        return None if len(text) > limit_bytes else text.decode("utf-8", errors="replace")

    async def kueue(self) -> KueueInstallation | None:
        """Kueue's API versions and controller version, or None when it is not installed."""
        return await find_kueue(self)

    async def health(self) -> list[HealthCheck]:
        """api, nodes, nfd, kueue, gpu_operator (see adapters.kubernetes.health)."""
        return await check_health(self)

    # --- watch ----------------------------------------------------------------------------

    def watch_nodes(
        self, resource_version: str, *, timeout_seconds: int | None = None
    ) -> AsyncIterator[tuple[str, Json]]:
        """(ADDED | MODIFIED | DELETED, node) after `resource_version`, until the server ends the
        watch (after `timeout_seconds`, by default KubeTimeouts.watch_seconds). Raises
        ResourceVersionGone when the version has expired, else ClusterConnectionError. Close it
        (`contextlib.aclosing`) when leaving early."""
        seconds = timeout_seconds or self._timeouts.watch_seconds
        timeout = self._timeouts.watching(seconds)
        pending = self._core.list_node(
            watch=True,
            resource_version=resource_version,
            timeout_seconds=seconds,
            _preload_content=False,
            _request_timeout=timeout,
        )
        return self._stream("watch nodes", pending, resource_version, timeout)

    async def _stream(
        self,
        action: str,
        pending: Awaitable[object],
        resource_version: str,
        timeout: aiohttp.ClientTimeout,  # noqa: ASYNC109  (what the request was given)
    ) -> AsyncIterator[tuple[str, Json]]:
        try:
            response = cast(aiohttp.ClientResponse, await pending)
        except TRANSPORT_ERRORS as exc:
            raise transport_error(
                exc, server=self.server_url, action=action, timeout=timeout
            ) from None
        try:
            if response.status == HTTP_GONE:
                raise self._gone(resource_version)
            if response.status != 200:
                self._decode(action, response.status, await response.read())
            while line := await response.content.readline():
                event = self._event(action, line, resource_version)
                if event is not None:
                    yield event
        except TRANSPORT_ERRORS as exc:
            raise transport_error(
                exc, server=self.server_url, action=action, timeout=timeout
            ) from None
        finally:
            response.close()

    def _gone(self, resource_version: str) -> ResourceVersionGone:
        return ResourceVersionGone(
            f"resourceVersion {resource_version!r} on {self.server_url} has expired"
        )

    def _event(self, action: str, line: bytes, resource_version: str) -> tuple[str, Json] | None:
        if not line.strip():
            return None
        try:
            event = json.loads(line)
        except ValueError:
            raise _not_json(self.server_url, action) from None
        if not isinstance(event, dict):
            raise _not_json(self.server_url, action)
        kind, obj = event.get("type"), event.get("object")
        if kind is None and "code" in event:  # a bare Status instead of an event
            kind, obj = "ERROR", event
        if kind == "ERROR":
            status = obj if isinstance(obj, dict) else {}
            code = status.get("code")
            if code == HTTP_GONE:
                raise self._gone(resource_version)
            reason = status.get("reason")
            raise status_error(
                code if isinstance(code, int) else 500,
                server=self.server_url,
                action=action,
                reason=reason if isinstance(reason, str) and reason.isidentifier() else None,
            )
        if kind in WATCHED_EVENTS and isinstance(obj, dict):
            return str(kind), obj
        return None  # BOOKMARK, or something this client does not know


@dataclass(frozen=True)
class KubeConnector:
    """Opens connections: a KubeCluster for the registry (the ClusterConnector port), a bare
    KubeClusterApi for the gateway."""

    timeouts: KubeTimeouts = KubeTimeouts()
    allow_plain_http: bool = False
    """Whether a kubeconfig may send credentials to an http:// API server (the operator's
    BUDCLUSTER_KUBE_PLAIN_HTTP, for a test cluster on a trusted network)."""

    def inspect(self, kubeconfig: str, context: str | None) -> KubeconfigSummary:
        return self._checked(kubeconfig, context).summary

    async def connect(
        self, kubeconfig: str, context: str | None, *, cluster_id: ClusterId
    ) -> KubeCluster:
        return KubeCluster(await self.open(kubeconfig, context), cluster_id=cluster_id)

    async def open(self, kubeconfig: str, context: str | None) -> KubeClusterApi:
        self._checked(kubeconfig, context)  # a kubeconfig stored before the rule, too
        return await KubeClusterApi.from_kubeconfig(
            kubeconfig, context=context, timeouts=self.timeouts
        )

    def _checked(self, kubeconfig: str, context: str | None) -> Kubeconfig:
        parsed = parse_kubeconfig(kubeconfig, context)
        if not self.allow_plain_http and (problem := parsed.credentials_in_clear):
            raise ClusterConnectionError("invalid_kubeconfig", problem, field="kubeconfig")
        return parsed
