"""A Kubernetes API for tests: kmock's KubernetesEmulator served over real HTTP(S) on 127.0.0.1.

`running_emulator()` starts a `KubeEmulator` (a KubernetesEmulator) behind a `kmock.Server` on a
port the OS picks, and `kubeconfig_for()` writes kubeconfig text that points at it. Objects are
seeded in memory with `seed()` (no watch event) or changed over HTTP with `create()`, `patch()`
and `delete()` (a watch sees ADDED / MODIFIED / DELETED). `forbid()`, `expire_watch()` and
`expire_watch_in_stream()` make it answer 403, 410 Gone, or a 410 ERROR event, through kmock's
reactions (`emulator[criteria] << status << body`), which take priority over the emulator's own
behaviour. With `bearer_token` set, a request without that token is answered 401; with
`tls=TestPki`, it serves HTTPS with a throwaway CA and requires a client certificate.

Shims: what kubernetes-asyncio (36.x) and kmock (0.8) disagree on. Test code only, never in
adapters/.

1. Watch query. kubernetes-asyncio urlencodes the Python bool, so a watch is `?watch=True`;
   kmock recognises a watch only by `watch == "true"` (kmock/_internal/parsing.py, guess_k8s), so
   it served watches as plain LISTs. `__call__` rewrites `watch=True` (and `1`) to `watch=true`
   before kmock parses the request.
2. Create answers 201 Created, as an API server does; kmock answers 200. Built-in kinds do not
   mind (their response_types_map accepts 200, 201 and 202), but CustomObjectsApi's
   create_*_custom_object map only 201, so on a 200 they return None instead of the object.
3. `/version/`. kubernetes-asyncio's VersionApi.get_code asks for `/version/` (trailing slash,
   which API servers accept); kmock routes only `/version`. Both are served, with a configurable
   gitVersion (kmock's is a fixed v1.26.4+k3s1).

Fidelity beyond the shims, also here: the bundled built-in resources are declared (kmock answers
404 to a LIST of a resource it has never seen an object of; a real server answers an empty list);
a watch subscribes to the emulator's event bus before it sends its headers (kmock subscribes after
replaying the existing objects, so a change made right after the client connected could be
lost), and `wait_for_watch()` lets a test wait until it has; a watch given a resourceVersion does
not replay the existing objects as ADDED (the client has them from its list), one without does.
kmock ignores `timeoutSeconds`: its watches stay open until the client closes them. Lists and
watches apply an equality-based `labelSelector` (kmock ignores it), and lists an equality-based
`fieldSelector` ("spec.nodeName=n1"). Kueue's visibility API is served by
`serve_kueue_visibility`; pods' logs (`set_log`) by GET .../pods/<name>/log, as the kubelet
answers it (tailLines, sinceTime, timestamps, limitBytes; the container asked for, or why not),
each read recorded in `log_requests`; JobSet's resource by `serve_job_sets`. A pod's Eviction
(POST .../pods/<name>/eviction) is recorded in `evictions` and answered 201, 404 when the pod is
not there, or 429 (a PodDisruptionBudget forbids it, or another status) for a pod named in
`refuse_eviction`; nothing is evicted. The API server's proxy to a pod's or a Service's port
(GET .../pods|services/<name>[:<port>]/proxy/<path>) answers 404 when the object is not there,
503 when nothing listens (no answer set), else what `set_proxy` set
(or never, with `hang`, until the emulator stops), each read recorded in `proxy_requests`.
`sent(method, path)` gives the requests kmock recorded (query, body, headers): a DELETE's
gracePeriodSeconds, a node's PATCH.
"""

from __future__ import annotations

import asyncio
import base64
import datetime
import ipaddress
import json
import re
import ssl
import tempfile
import uuid
import warnings
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import aiohttp.test_utils
import aiohttp.web
import attrs
import kmock
import yaml
import yarl
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

DEFAULT_TOKEN = "kmock-token-4f9c2e7a1b"


def _fields_match(request: kmock.Request, obj: Json) -> bool:
    """An equality-based fieldSelector ("spec.nodeName=n1,metadata.namespace!=x"), as the API
    server applies it to lists (kmock 0.8 ignores it)."""
    selector = request.params.get("fieldSelector") or ""
    for term in filter(None, (t.strip() for t in selector.split(","))):
        negated = "!=" in term
        path, _, wanted = term.partition("!=" if negated else "=")
        value: Any = obj
        for part in path.strip().rstrip("=").split("."):
            value = value.get(part) if isinstance(value, dict) else None
        found = "" if value is None else str(value)
        if (found == wanted.strip().lstrip("=")) == negated:
            return False
    return True


def _labels_match(request: kmock.Request, obj: Json) -> bool:
    """An equality-based labelSelector ("a=b,c!=d,e"), as the API server applies it to lists
    and watches (kmock 0.8 ignores it)."""
    selector = request.params.get("labelSelector") or ""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    for term in filter(None, (t.strip() for t in selector.split(","))):
        if "!=" in term:
            key, _, value = term.partition("!=")
            if labels.get(key.strip()) == value.strip():
                return False
        elif "=" in term:
            key, _, value = term.partition("=")
            if labels.get(key.strip().rstrip("=")) != value.strip().lstrip("="):
                return False
        elif term not in labels:
            return False
    return True


_PENDING_PATH = re.compile(
    r"/apis/visibility\.kueue\.x-k8s\.io/(v\w+)/namespaces/([^/]+)/localqueues/([^/]+)"
    r"/pendingworkloads"
)
_NAMESPACE_PATH = re.compile(r"/api/v1/namespaces(?:/([^/]+))?")
_LOG_PATH = re.compile(r"/api/v1/namespaces/([^/]+)/pods/([^/]+)/log")
_EVICTION_PATH = re.compile(r"/api/v1/namespaces/([^/]+)/pods/([^/]+)/eviction")
_PROXY_PATH = re.compile(
    r"/api/v1/namespaces/([^/]+)/(pods|services)/([^/:]+)(?::([^/]+))?/proxy(?:/(.*))?"
)
_WORKLOAD_STATUS_PATH = re.compile(
    r"/apis/kueue\.x-k8s\.io/(v1beta[12])/namespaces/([^/]+)/workloads/([^/]+)/status"
)
APPLY_PATCH = "application/apply-patch+yaml"
GROUP_VERSIONS = {
    "Node": "v1/nodes",
    "Namespace": "v1/namespaces",
    "Deployment": "apps/v1/deployments",
    "DaemonSet": "apps/v1/daemonsets",
    "CustomResourceDefinition": "apiextensions.k8s.io/v1/customresourcedefinitions",
}
"""kind -> kmock resource key, for the kinds the tests seed."""

Json = dict[str, Any]


@dataclass(frozen=True)
class LogRead:
    """A GET of a pod's log, as the emulator was sent it."""

    path: str
    query: dict[str, str]


@dataclass(frozen=True, order=True)
class ProxyRead:
    """A GET through the API server's proxy, as the emulator was sent it."""

    path: str
    accept: str | None


@dataclass(frozen=True)
class ProxyAnswer:
    text: str
    status: int = 200
    hang: bool = False
    """Answer nothing until the emulator stops (a pod that accepted and never answers)."""


ProxyKey = tuple[str, str, str, str | None, str]
"""(pods | services, namespace, name, port or None, path)."""


def status_body(code: int, reason: str, message: str) -> Json:
    return {
        "apiVersion": "v1",
        "kind": "Status",
        "metadata": {},
        "status": "Failure",
        "code": code,
        "reason": reason,
        "message": message,
    }


def resource_key(obj: Json) -> tuple[str, str | None, str]:
    """(kmock resource, namespace, name) of a Kubernetes object."""
    meta = obj["metadata"]
    kind = obj["kind"]
    if kind in GROUP_VERSIONS:
        return GROUP_VERSIONS[kind], meta.get("namespace"), meta["name"]
    lower = kind.lower()  # ClusterQueue, Workload, NetworkPolicy...
    plural = (
        lower[:-1] + "ies"
        if lower.endswith("y")
        else lower + ("es" if lower.endswith("s") else "s")
    )
    return f"{obj['apiVersion']}/{plural}", meta.get("namespace"), meta["name"]


def collection_path(resource: str, namespace: str | None = None) -> str:
    group_version, _, plural = resource.rpartition("/")
    base = f"/api/{group_version}" if "/" not in group_version else f"/apis/{group_version}"
    return f"{base}/namespaces/{namespace}/{plural}" if namespace else f"{base}/{plural}"


@attrs.define(kw_only=True)
class KubeEmulator(kmock.KubernetesEmulator):
    """kmock's emulator with the shims and additions of the module doc."""

    bearer_token: str | None = None
    git_version: str = "v1.30.2"
    _watches: dict[kmock.resource, int] = attrs.field(factory=dict, init=False)
    _version_counter: int = attrs.field(default=1000, init=False)
    namespaces: dict[str, Json] = attrs.field(factory=dict, init=False)
    visibility: set[str] = attrs.field(factory=set, init=False)
    kueue_versions: tuple[str, ...] = attrs.field(default=(), init=False)
    """Versions of Kueue's API served (`serve_kueue`)."""
    """Versions of Kueue's visibility API served (`serve_kueue_visibility`)."""
    _list_marks: dict[str, tuple[kmock.resource, Any]] = attrs.field(factory=dict, init=False)
    """Namespace objects by name (served here, not by kmock: see `_serve_namespace`)."""
    _watches_changed: asyncio.Condition = attrs.field(factory=asyncio.Condition, init=False)
    logs: dict[tuple[str, str], str] = attrs.field(factory=dict, init=False)
    """What each pod's container printed, by (namespace, pod): `set_log`."""
    log_requests: list[LogRead] = attrs.field(factory=list, init=False)
    """Every log read (its path and query), in order."""
    status_applies: list[dict[str, Any]] = attrs.field(factory=list, init=False)
    """Every server-side apply of a Workload's status: path, query, content type, body."""
    evictions: list[dict[str, Any]] = attrs.field(factory=list, init=False)
    """Every Eviction posted: namespace, pod, content type, body."""
    eviction_refused: dict[tuple[str, str], int] = attrs.field(factory=dict, init=False)
    """Pods (namespace, name) whose Eviction is refused, with the status: `refuse_eviction`."""
    proxy_answers: dict[ProxyKey, ProxyAnswer] = attrs.field(factory=dict, init=False)
    """What answers behind the API server's proxy: `set_proxy`."""
    proxy_requests: list[ProxyRead] = attrs.field(factory=list, init=False)
    """Every GET through the proxy, in order."""
    _stopping: asyncio.Event = attrs.field(factory=asyncio.Event, init=False)

    def __attrs_post_init__(self) -> None:
        super().__attrs_post_init__()
        with warnings.catch_warnings():  # kmock 0.8 reads it with importlib.resources.read_binary
            warnings.simplefilter("ignore", DeprecationWarning)
            self.resources.load_bundled()
        self.fallback["get /version/"] << self._serve_server_version

    # --- shims ----------------------------------------------------------------------------

    async def __call__(self, raw_request: aiohttp.web.BaseRequest) -> aiohttp.web.StreamResponse:
        if _NAMESPACE_PATH.fullmatch(raw_request.path) and self._authorised(raw_request.headers):
            return await self._serve_namespace(raw_request)
        log_of = _LOG_PATH.fullmatch(raw_request.path)
        if log_of and raw_request.method == "GET" and self._authorised(raw_request.headers):
            return self._serve_log(log_of[1], log_of[2], dict(raw_request.query))
        proxied = _PROXY_PATH.fullmatch(raw_request.path)
        if proxied and raw_request.method == "GET" and self._authorised(raw_request.headers):
            return await self._serve_proxy(raw_request, proxied)
        evicted = _EVICTION_PATH.fullmatch(raw_request.path)
        if evicted and raw_request.method == "POST" and self._authorised(raw_request.headers):
            return await self._serve_eviction(raw_request, evicted[1], evicted[2])
        status_of = _WORKLOAD_STATUS_PATH.fullmatch(raw_request.path)
        if status_of and raw_request.method == "PATCH" and self._authorised(raw_request.headers):
            return await self._apply_status(raw_request, status_of[1], status_of[2], status_of[3])
        pending = _PENDING_PATH.fullmatch(raw_request.path)
        if pending and pending[1] in self.visibility and self._authorised(raw_request.headers):
            limit = int(raw_request.query.get("limit", "1000"))
            return aiohttp.web.json_response(self._pending(pending[2], pending[3], limit))
        if raw_request.query.get("watch") in ("True", "1"):
            rel_url = raw_request.rel_url.update_query(watch="true")
            raw_request = raw_request.clone(rel_url=rel_url)
        return await super().__call__(raw_request)

    async def _serve_create(self, request: kmock.Request) -> kmock.Payload:
        created = await super()._serve_create(request)
        if isinstance(created, dict):  # the API server gives every object a uid
            metadata = created.setdefault("metadata", {})
            metadata.setdefault("uid", str(uuid.uuid4()))
        # kmock exports Response at its top level but leaves it out of __all__
        return kmock.Response(status=201, payload=created)  # type: ignore[attr-defined]

    async def _serve_server_version(self, request: kmock.Request) -> kmock.Payload:
        major, minor = self.git_version.lstrip("v").split(".")[:2]
        return {"major": major, "minor": minor, "gitVersion": self.git_version}

    # --- fidelity -------------------------------------------------------------------------

    def _authorised(self, headers: Any) -> bool:
        expected = f"Bearer {self.bearer_token}"
        return self.bearer_token is None or headers.get("Authorization") == expected

    async def _serve_namespace(self, raw: aiohttp.web.BaseRequest) -> aiohttp.web.StreamResponse:
        """Namespaces (kmock 0.8 answers 500 to creating one: it reads the namespace of a
        namespace's own path as its scope): get, list, create, replace, delete."""
        match = _NAMESPACE_PATH.fullmatch(raw.path)
        name = match[1] if match else None
        found = self.namespaces.get(name) if name else None
        if raw.method == "GET" and not name:
            items = list(self.namespaces.values())
            return aiohttp.web.json_response({"kind": "NamespaceList", "items": items})
        if raw.method == "POST" and not name:
            body = await raw.json()
            new = body["metadata"]["name"]
            if new in self.namespaces:
                return aiohttp.web.json_response(status_body(409, "AlreadyExists", new), status=409)
            self.namespaces[new] = body
            return aiohttp.web.json_response(body, status=201)
        if found is None:
            return aiohttp.web.json_response(status_body(404, "NotFound", str(name)), status=404)
        if raw.method == "GET":
            return aiohttp.web.json_response(found)
        if raw.method == "PUT":
            self.namespaces[str(name)] = await raw.json()
            return aiohttp.web.json_response(self.namespaces[str(name)])
        if raw.method == "DELETE":
            del self.namespaces[str(name)]
            return aiohttp.web.json_response(found)
        return aiohttp.web.json_response(
            status_body(405, "MethodNotAllowed", raw.method), status=405
        )

    async def _handle(self, request: kmock.Request) -> aiohttp.web.StreamResponse:
        if self.bearer_token is not None:
            headers = {key.lower(): value for key, value in request.headers.items()}
            if headers.get("authorization") != f"Bearer {self.bearer_token}":
                body = status_body(401, "Unauthorized", "Unauthorized")
                return aiohttp.web.json_response(body, status=401)
        if (
            request.method == kmock.method.PUT
            and request.resource is not None
            and request.name is not None
        ):
            return await self._replace(request)
        return await super()._handle(request)

    async def _replace(self, request: kmock.Request) -> aiohttp.web.StreamResponse:
        """PUT: the whole object is replaced (kmock knows PATCH only, which merges), with
        optimistic concurrency on metadata.resourceVersion when the body states one."""
        assert request.resource is not None and request.name is not None
        key = (request.resource, request.namespace, request.name)
        async with self._lock:
            if key not in self._objects or self._objects[key].deleted:  # no .get() on kmock's view
                body = status_body(404, "NotFound", f"{request.name} not found")
                return aiohttp.web.json_response(body, status=404)
            current = self._objects[key]
            stated = (request.data.get("metadata") or {}).get("resourceVersion")
            held = (current.raw.get("metadata") or {}).get("resourceVersion")
            if stated and held and stated != held:
                body = status_body(409, "Conflict", "the object has been modified")
                return aiohttp.web.json_response(body, status=409)
            replacement = json.loads(json.dumps(request.data))
            replacement.setdefault("metadata", {})["resourceVersion"] = str(self._next_version())
            current.create(replacement)
            raw = current.raw
            await self._buses[request.resource].put({"type": "MODIFIED", "object": raw})
        return aiohttp.web.json_response(raw, status=200)

    async def _apply_status(
        self, raw: aiohttp.web.BaseRequest, version: str, namespace: str, name: str
    ) -> aiohttp.web.StreamResponse:
        """A server-side apply of a Workload's status (kmock knows no subresource): recorded,
        refused 409 on a stale resourceVersion, else the applied status fields replace the
        object's (one applier here: what it leaves out of its fields stays, as another
        manager's would), with a MODIFIED event."""
        body = json.loads(await raw.read())
        self.status_applies.append(
            {
                "path": raw.path,
                "query": dict(raw.query),
                "content_type": raw.headers.get("Content-Type"),
                "body": body,
            }
        )
        if raw.headers.get("Content-Type") != APPLY_PATCH or "fieldManager" not in raw.query:
            return aiohttp.web.json_response(
                status_body(415, "UnsupportedMediaType", "apply needs a field manager"), status=415
            )
        resource = kmock.resource(f"kueue.x-k8s.io/{version}/workloads")
        key = (resource, namespace, name)
        async with self._lock:
            if key not in self._objects or self._objects[key].deleted:
                return aiohttp.web.json_response(status_body(404, "NotFound", name), status=404)
            current = self._objects[key]
            stated = (body.get("metadata") or {}).get("resourceVersion")
            held = (current.raw.get("metadata") or {}).get("resourceVersion")
            if stated and held and stated != held:
                body = status_body(409, "Conflict", "the object has been modified")
                return aiohttp.web.json_response(body, status=409)
            updated = json.loads(json.dumps(current.raw))
            updated["status"] = {**(updated.get("status") or {}), **(body.get("status") or {})}
            updated.setdefault("metadata", {})["resourceVersion"] = str(self._next_version())
            current.create(updated)
            raw_object = current.raw
            await self._buses[resource].put({"type": "MODIFIED", "object": raw_object})
        return aiohttp.web.json_response(raw_object, status=200)

    async def _serve_eviction(
        self, raw: aiohttp.web.BaseRequest, namespace: str, name: str
    ) -> aiohttp.web.StreamResponse:
        """An Eviction, recorded and answered (module doc); the pod stays."""
        self.evictions.append(
            {
                "namespace": namespace,
                "pod": name,
                "content_type": raw.headers.get("Content-Type"),
                "body": json.loads(await raw.read()),
            }
        )
        if not self._live_pod(namespace, name):
            body = status_body(404, "NotFound", f'pods "{name}" not found')
            return aiohttp.web.json_response(body, status=404)
        code = self.eviction_refused.get((namespace, name))
        if code == 429:
            message = "Cannot evict pod as it would violate the pod's disruption budget."
            body = status_body(429, "TooManyRequests", message)
            return aiohttp.web.json_response(body, status=429)
        if code is not None:
            body = status_body(code, "Forbidden" if code == 403 else "InternalError", name)
            return aiohttp.web.json_response(body, status=code)
        success = {"apiVersion": "v1", "kind": "Status", "metadata": {}, "status": "Success"}
        return aiohttp.web.json_response(success, status=201)

    def set_proxy(
        self,
        kind: str,
        namespace: str,
        name: str,
        port: int | str | None,
        path: str,
        text: str,
        status: int = 200,
        *,
        hang: bool = False,
    ) -> None:
        """What the pod or Service (`kind`: "pods" or "services") answers at `path` on `port`
        through the API server's proxy."""
        key = (kind, namespace, name, None if port is None else str(port), path.lstrip("/"))
        self.proxy_answers[key] = ProxyAnswer(text, status, hang)

    def stop_hanging(self) -> None:
        """End every proxied answer held with `hang` (they end with nothing sent)."""
        self._stopping.set()

    async def _serve_proxy(
        self, raw: aiohttp.web.BaseRequest, match: re.Match[str]
    ) -> aiohttp.web.StreamResponse:
        """A GET through the API server's proxy (module doc)."""
        namespace, kind, name, port, path = match.groups()
        self.proxy_requests.append(ProxyRead(raw.path, raw.headers.get("Accept")))
        if self._live(kind, namespace, name) is None:
            body = status_body(404, "NotFound", f'{kind} "{name}" not found')
            return aiohttp.web.json_response(body, status=404)
        answer = self.proxy_answers.get((kind, namespace, name, port, path or ""))
        if answer is None:
            message = f"error trying to reach service: dial tcp {name}:{port}: connection refused"
            body = status_body(503, "ServiceUnavailable", message)
            return aiohttp.web.json_response(body, status=503)
        if answer.hang:
            await self._stopping.wait()
            return aiohttp.web.Response(status=504)
        return aiohttp.web.Response(
            body=answer.text.encode(),
            status=answer.status,
            headers={"Content-Type": "text/plain; version=0.0.4; charset=utf-8"},
        )

    def _live(self, plural: str, namespace: str, name: str) -> Json | None:
        """The live core (v1) object of this kind, if there is one."""
        found = (
            obj.raw
            for (resource, ns, each), obj in self.objects.items()
            if resource.group == ""
            and resource.plural == plural
            and (ns, each) == (namespace, name)
            if not obj.deleted
        )
        return next(found, None)

    def refuse_eviction(self, pod: Json, code: int = 429) -> None:
        """`pod`'s Eviction is answered `code`: 429, a PodDisruptionBudget forbids it now; 403,
        RBAC does; another, the server fails."""
        self.eviction_refused[(pod["metadata"]["namespace"], pod["metadata"]["name"])] = code

    def _live_pod(self, namespace: str, name: str) -> bool:
        return self._pod(namespace, name) is not None

    def _pod(self, namespace: str, name: str) -> Json | None:
        return self._live("pods", namespace, name)

    def sent(self, method: str, path: str) -> list[kmock.Request]:
        """The requests kmock recorded with this method to this path (no query), in order."""
        return [r for r in self if r.method == method.upper() and r.url.path == path]

    def _next_version(self) -> int:
        self._version_counter += 1
        return self._version_counter

    async def _serve_watch(self, request: kmock.Request) -> AsyncIterator[kmock.Payload]:
        resource = request.resource
        assert resource is not None
        bus = self._buses[resource]
        listed = self._list_marks.pop(request.params.get("resourceVersion", ""), None)
        mark = listed[1] if listed is not None and listed[0] == resource else await bus.mark()
        await self._count_watch(resource, +1)
        try:
            yield b""  # send the headers: the client is connected
            if not request.params.get("resourceVersion"):
                async with self._lock:
                    existing = [
                        obj.raw
                        for (res, namespace, name), obj in self.objects.items()
                        if not obj.deleted and self._selects(request, res, namespace, name)
                    ]
                for raw in existing:
                    if _labels_match(request, raw):
                        yield {"type": "ADDED", "object": raw}
            async for event in bus.stream(since=mark):
                meta = event.get("object", {}).get("metadata", {})
                if self._selects(
                    request, resource, meta.get("namespace"), meta.get("name")
                ) and _labels_match(request, event.get("object") or {}):
                    yield event
        finally:
            await bus.unmark(mark)
            await self._count_watch(resource, -1)

    async def _serve_list(self, request: kmock.Request) -> kmock.Payload:
        """A list's resourceVersion is a mark on the resource's event bus, taken before the
        objects are read: a watch from it gets every change after the list (kmock's list
        answers a fixed "..." and a watch could miss what happened in between)."""
        assert request.resource is not None
        mark = await self._buses[request.resource].mark()
        payload = await super()._serve_list(request)
        version = str(self._next_version())
        self._list_marks[version] = (request.resource, mark)
        assert isinstance(payload, dict)
        payload["metadata"] = {**payload.get("metadata", {}), "resourceVersion": version}
        payload["items"] = [
            i
            for i in payload.get("items") or []
            if _labels_match(request, i) and _fields_match(request, i)
        ]
        return payload

    @staticmethod
    def _selects(
        request: kmock.Request, resource: kmock.resource, namespace: str | None, name: str | None
    ) -> bool:
        return (
            resource == request.resource
            and (request.namespace is None or namespace == request.namespace)
            and (request.name is None or name == request.name)
        )

    async def _count_watch(self, resource: kmock.resource, change: int) -> None:
        async with self._watches_changed:
            self._watches[resource] = self._watches.get(resource, 0) + change
            self._watches_changed.notify_all()

    async def wait_for_watch(
        self, resource: str = "v1/nodes", *, count: int = 1, timeout: float = 5.0
    ) -> None:
        """Until `count` watches of `resource` are subscribed (then no change is missed); with
        count=0, until none is."""
        wanted = kmock.resource(resource)

        def reached() -> bool:
            watching = self._watches.get(wanted, 0)
            return watching == 0 if count == 0 else watching >= count

        async with asyncio.timeout(timeout), self._watches_changed:
            await self._watches_changed.wait_for(reached)

    # --- seeding and changing -------------------------------------------------------------

    def seed(self, *objects: Json) -> None:
        """Store objects as if they had always been there (no watch event)."""
        for obj in objects:
            self.objects[resource_key(obj)] = obj

    async def create(self, obj: Json) -> Json:
        resource, namespace, _ = resource_key(obj)
        response = await self.post(collection_path(resource, namespace), json=obj)
        assert response.status == 201, await response.text()
        created: Json = await response.json()
        return created

    async def patch_object(self, obj: Json, patch: Json) -> Json:
        resource, namespace, name = resource_key(obj)
        path = f"{collection_path(resource, namespace)}/{name}"
        response = await self.patch(path, json=patch)
        assert response.status == 200, await response.text()
        patched: Json = await response.json()
        return patched

    async def delete_object(self, obj: Json) -> None:
        resource, namespace, name = resource_key(obj)
        response = await self.delete(f"{collection_path(resource, namespace)}/{name}")
        assert response.status == 200, await response.text()

    def serve_kueue(self, *versions: str) -> None:
        """Declare Kueue's resources in these versions (discovery lists them; a LIST of one
        with no objects answers an empty list)."""
        kinds = {
            "resourceflavors": ("ResourceFlavor", False),
            "clusterqueues": ("ClusterQueue", False),
            "localqueues": ("LocalQueue", True),
            "cohorts": ("Cohort", False),
            "workloadpriorityclasses": ("WorkloadPriorityClass", False),
            "workloads": ("Workload", True),
        }
        self.kueue_versions = (*self.kueue_versions, *versions)
        for version in versions:
            for plural, (kind, namespaced) in kinds.items():
                self.resources[f"kueue.x-k8s.io/{version}/{plural}"] = kmock.ResourceInfo(
                    kind=kind, namespaced=namespaced, verbs={"get", "list", "create", "delete"}
                )

    def serve_multikueue(self, *versions: str) -> None:
        """Declare MultiKueue's resources in these versions, as a manager cluster's Kueue
        serves them (cluster-scoped)."""
        kinds = {
            "multikueueclusters": "MultiKueueCluster",
            "multikueueconfigs": "MultiKueueConfig",
            "admissionchecks": "AdmissionCheck",
        }
        for version in versions:
            for plural, kind in kinds.items():
                self.resources[f"kueue.x-k8s.io/{version}/{plural}"] = kmock.ResourceInfo(
                    kind=kind, namespaced=False, verbs={"get", "list", "create", "delete"}
                )

    def serve_job_sets(self, version: str = "v1alpha2") -> None:
        """Declare JobSet's resource (jobset.x-k8s.io), as a cluster with JobSet installed."""
        self.resources[f"jobset.x-k8s.io/{version}/jobsets"] = kmock.ResourceInfo(
            kind="JobSet", namespaced=True, verbs={"get", "list", "create", "delete", "patch"}
        )

    def serve_kueue_visibility(self, version: str = "v1beta2") -> None:
        """Kueue's visibility API (pending workloads of a LocalQueue, in Kueue's order), as its
        aggregated API server serves it: discovery lists the group, and GET
        .../namespaces/<ns>/localqueues/<q>/pendingworkloads answers a PendingWorkloadsSummary
        computed from the Workloads here (see `_pending`)."""
        self.visibility.add(version)
        self.resources[f"visibility.kueue.x-k8s.io/{version}/localqueues"] = kmock.ResourceInfo(
            kind="LocalQueue", namespaced=True, verbs={"get"}
        )

    def _pending(self, namespace: str, queue: str, limit: int) -> Json:
        """Workloads without reserved quota, ordered as Kueue's StrictFIFO orders them: higher
        spec.priority first, then older. One ClusterQueue here: every pending Workload counts
        for positionInClusterQueue."""
        waiting = [
            w
            for w in self.kueue_objects("workloads")
            if not any(
                c.get("type") == "QuotaReserved" and c.get("status") == "True"
                for c in (w.get("status") or {}).get("conditions") or []
            )
        ]
        waiting.sort(
            key=lambda w: (
                -int((w.get("spec") or {}).get("priority") or 0),
                w["metadata"].get("creationTimestamp") or "",
                w["metadata"]["name"],
            )
        )
        items = []
        in_queue = 0
        for position, w in enumerate(waiting):
            meta, spec = w["metadata"], w.get("spec") or {}
            if meta.get("namespace") != namespace or spec.get("queueName") != queue:
                continue
            items.append(
                {
                    "metadata": {
                        "name": meta["name"],
                        "namespace": namespace,
                        "ownerReferences": meta.get("ownerReferences") or [],
                    },
                    "priority": int(spec.get("priority") or 0),
                    "localQueueName": queue,
                    "positionInClusterQueue": position,
                    "positionInLocalQueue": in_queue,
                }
            )
            in_queue += 1
        return {"kind": "PendingWorkloadsSummary", "metadata": {}, "items": items[:limit]}

    def set_log(self, pod: Json, text: str) -> None:
        """What the pod's container printed, as the kubelet keeps it: lines that may start with
        the RFC 3339 time they were written ("2026-11-22T12:00:00.5Z text"), which
        GET .../pods/<name>/log leaves on with timestamps=true and takes off without."""
        self.logs[(pod["metadata"]["namespace"], pod["metadata"]["name"])] = text

    @property
    def log_reads(self) -> list[dict[str, str]]:
        """The query of every log read, in order."""
        return [read.query for read in self.log_requests]

    def _serve_log(
        self, namespace: str, name: str, query: dict[str, str]
    ) -> aiohttp.web.StreamResponse:
        """A pod's log as the API server and the kubelet serve it: 404 when the pod is not
        there; 400 for a container it has not (or, of several, none named); nothing for a pod
        not on a node yet; 400 for a container waiting to start (its containerStatuses say
        so); else text/plain: the last `tailLines` lines, of those the ones written at or after
        `sinceTime` (by their times: a line with none goes with the one before), their times
        left on with `timestamps=true`, cut at `limitBytes`."""
        self.log_requests.append(LogRead(f"/api/v1/namespaces/{namespace}/pods/{name}/log", query))
        pod = self._pod(namespace, name)
        if pod is None:
            body = status_body(404, "NotFound", f'pods "{name}" not found')
            return aiohttp.web.json_response(body, status=404)
        spec, statuses = pod.get("spec") or {}, (pod.get("status") or {}).get("containerStatuses")
        names = [c.get("name") for c in spec.get("containers") or []]
        container = query.get("container") or (names[0] if len(names) == 1 else None)
        if names and container not in names:  # the API server's checks
            refusal = (
                f"container {container} is not valid for pod {name}"
                if container
                else f"a container name must be specified for pod {name}, choose one of: {names}"
            )
            return aiohttp.web.json_response(status_body(400, "BadRequest", refusal), status=400)
        if not spec.get("nodeName"):
            return aiohttp.web.Response(body=b"", content_type="text/plain")
        state = next(
            (s.get("state") or {} for s in statuses or [] if s.get("name") == container), {}
        )
        if state.get("waiting") is not None:  # the kubelet's
            why = state["waiting"].get("reason") or "ContainerCreating"
            refusal = f'container "{container}" in pod "{name}" is waiting to start: {why}'
            return aiohttp.web.json_response(status_body(400, "BadRequest", refusal), status=400)
        text = _log_answer(self.logs.get((namespace, name), ""), query).encode()
        if "limitBytes" in query:
            text = text[: int(query["limitBytes"])]
        return aiohttp.web.Response(body=text, content_type="text/plain")

    def kueue_objects(self, plural: str) -> list[Json]:
        """The live Kueue objects of a kind (any version), as stored."""
        return [
            obj.raw
            for (resource, _, _), obj in self.objects.items()
            if resource.group == "kueue.x-k8s.io" and resource.plural == plural and not obj.deleted
        ]

    # --- failures -------------------------------------------------------------------------

    def forbid(self, resource: str) -> None:
        """Every request about `resource` (e.g. "apps/v1/deployments") answers 403."""
        body = status_body(403, "Forbidden", f"{resource} is forbidden")
        self[kmock.resource(resource)] << 403 << body

    def expire_watch(self, resource: str = "v1/nodes") -> None:
        """The next watch of `resource` answers HTTP 410 Gone."""
        body = status_body(410, "Expired", "too old resource version")
        self[kmock.action.WATCH, kmock.resource(resource)][:1] << 410 << body

    def expire_watch_in_stream(self, resource: str = "v1/nodes") -> None:
        """The next watch of `resource` answers 200 and streams one ERROR event with code 410."""
        event = {"type": "ERROR", "object": status_body(410, "Expired", "too old resource version")}
        self[kmock.action.WATCH, kmock.resource(resource)][:1] << (event,)


def _log_answer(text: str, query: dict[str, str]) -> str:
    """A kept log (`set_log`) as a read with this query answers it (`_serve_log`)."""
    pieces = text.split("\n")
    lines = [f"{piece}\n" for piece in pieces[:-1]] + ([pieces[-1]] if pieces[-1] else [])
    if "tailLines" in query:
        lines = lines[len(lines) - min(int(query["tailLines"]), len(lines)) :]
    since = _log_time(query["sinceTime"]) if "sinceTime" in query else None
    answer = []
    keep = since is None
    for line in lines:
        word, _, rest = line.partition(" ")
        at = _log_time(word)
        if at is not None and since is not None:
            keep = at >= since
        if keep:
            answer.append(line if at is None or query.get("timestamps") == "true" else rest)
    return "".join(answer)


def _log_time(word: str) -> datetime.datetime | None:
    try:
        at = datetime.datetime.fromisoformat(word)
    except ValueError:
        return None
    return at if at.tzinfo is not None else None


# --- TLS ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class TestPki:
    """A throwaway CA with a server certificate for 127.0.0.1 and a client certificate."""

    __test__ = False
    ca_pem: bytes
    server_cert_pem: bytes
    server_key_pem: bytes
    client_cert_pem: bytes
    client_key_pem: bytes


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _certificate(
    subject: str,
    key: ec.EllipticCurvePrivateKey,
    *,
    issuer: tuple[x509.Certificate, ec.EllipticCurvePrivateKey] | None,
    extend: Callable[[x509.CertificateBuilder], x509.CertificateBuilder],
) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)])
    issuer_name, signing_key = (issuer[0].subject, issuer[1]) if issuer else (name, key)
    builder = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(issuer_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(signing_key.public_key()),
            critical=False,
        )
    )
    return extend(builder).sign(signing_key, hashes.SHA256())


def make_pki() -> TestPki:
    ca_key, server_key, client_key = (ec.generate_private_key(ec.SECP256R1()) for _ in range(3))
    ca = _certificate(
        "kmock test CA",
        ca_key,
        issuer=None,
        extend=lambda b: b.add_extension(
            x509.BasicConstraints(ca=True, path_length=None), critical=True
        ).add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        ),
    )
    ip = x509.IPAddress(ipaddress.ip_address("127.0.0.1"))

    def leaf(usage: x509.ObjectIdentifier, san: bool) -> Callable[[Any], Any]:
        def extend(builder: x509.CertificateBuilder) -> x509.CertificateBuilder:
            builder = builder.add_extension(
                x509.BasicConstraints(ca=False, path_length=None), critical=True
            ).add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
            if san:
                builder = builder.add_extension(x509.SubjectAlternativeName([ip]), critical=False)
            return builder

        return extend

    server = _certificate(
        "127.0.0.1",
        server_key,
        issuer=(ca, ca_key),
        extend=leaf(ExtendedKeyUsageOID.SERVER_AUTH, True),
    )
    client = _certificate(
        "budcluster-test",
        client_key,
        issuer=(ca, ca_key),
        extend=leaf(ExtendedKeyUsageOID.CLIENT_AUTH, False),
    )
    pem = serialization.Encoding.PEM
    return TestPki(
        ca_pem=ca.public_bytes(pem),
        server_cert_pem=server.public_bytes(pem),
        server_key_pem=_key_pem(server_key),
        client_cert_pem=client.public_bytes(pem),
        client_key_pem=_key_pem(client_key),
    )


def _ssl_context(purpose: ssl.Purpose, pki: TestPki, cert: bytes, key: bytes) -> ssl.SSLContext:
    context = ssl.create_default_context(purpose, cadata=pki.ca_pem.decode())
    with tempfile.TemporaryDirectory() as directory:  # ssl loads a chain from files only
        cert_file, key_file = Path(directory, "cert.pem"), Path(directory, "key.pem")
        cert_file.write_bytes(cert)
        key_file.write_bytes(key)
        context.load_cert_chain(cert_file, key_file)
    return context


def _tls_server_class(context: ssl.SSLContext) -> type[aiohttp.test_utils.RawTestServer]:
    class TlsRawTestServer(aiohttp.test_utils.RawTestServer):
        async def start_server(self, loop: Any = None, **kwargs: Any) -> None:
            await super().start_server(loop=loop, ssl=context, **kwargs)

    return TlsRawTestServer


# --- running it ---------------------------------------------------------------------------


@asynccontextmanager
async def running_emulator(
    *,
    bearer_token: str | None = DEFAULT_TOKEN,
    tls: TestPki | None = None,
    git_version: str = "v1.30.2",
) -> AsyncIterator[KubeEmulator]:
    """A KubeEmulator listening on 127.0.0.1 (a free port) until the block ends."""
    emulator = KubeEmulator(bearer_token=bearer_token, git_version=git_version)
    options: dict[str, Any] = {"host": "127.0.0.1"}
    if tls is not None:
        server_context = _ssl_context(
            ssl.Purpose.CLIENT_AUTH, tls, tls.server_cert_pem, tls.server_key_pem
        )
        server_context.verify_mode = ssl.CERT_REQUIRED
        client_context = _ssl_context(
            ssl.Purpose.SERVER_AUTH, tls, tls.client_cert_pem, tls.client_key_pem
        )
        options["server_cls"] = _tls_server_class(server_context)
        options["client_fct"] = lambda url: aiohttp.ClientSession(
            url, connector=aiohttp.TCPConnector(ssl=client_context)
        )
    async with emulator, kmock.Server(emulator, **options) as server:
        if bearer_token is not None:
            server.client.headers["Authorization"] = f"Bearer {bearer_token}"
        try:
            yield emulator
        finally:
            emulator.stop_hanging()


def server_url(emulator: KubeEmulator) -> str:
    url: yarl.URL = emulator.url
    return str(url).rstrip("/")


def kubeconfig_for(
    emulator: KubeEmulator | str,
    *,
    token: str | None = DEFAULT_TOKEN,
    pki: TestPki | None = None,
    context: str = "kmock",
    current_context: bool = True,
) -> str:
    """Kubeconfig text for the emulator (or a server URL): a bearer token and, with `pki`,
    inline CA data and a client certificate and key."""

    def b64(data: bytes) -> str:
        return base64.b64encode(data).decode()

    server = emulator if isinstance(emulator, str) else server_url(emulator)
    cluster: Json = {"server": server}
    user: Json = {}
    if token is not None:
        user["token"] = token
    if pki is not None:
        cluster["certificate-authority-data"] = b64(pki.ca_pem)
        user["client-certificate-data"] = b64(pki.client_cert_pem)
        user["client-key-data"] = b64(pki.client_key_pem)
    document: Json = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "kmock-cluster", "cluster": cluster}],
        "users": [{"name": "kmock-user", "user": user}],
        "contexts": [
            {"name": context, "context": {"cluster": "kmock-cluster", "user": "kmock-user"}}
        ],
    }
    if current_context:
        document["current-context"] = context
    return yaml.safe_dump(document, sort_keys=False)
