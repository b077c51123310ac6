"""How failures talking to a cluster become `ClusterConnectionError`s, and nothing more.

Every message names only what an operator can act on and may safely read: the server URL (without
any user-info or query), what was being done, an HTTP status and the Kubernetes Status `reason`.
No exception text from a library is ever copied in, and errors are raised `from None`: YAML
errors quote the offending line, aiohttp errors carry request headers (the bearer token), so the
original exception must not travel on as a cause either.
"""

from __future__ import annotations

import asyncio
import json
import ssl
from urllib.parse import urlsplit, urlunsplit

import aiohttp

from domain.errors import ClusterConnectionError
from domain.ports.cluster_api import WatchExpired

HTTP_BAD_REQUEST = 400
HTTP_UNAUTHORIZED = 401
HTTP_FORBIDDEN = 403
HTTP_NOT_FOUND = 404
HTTP_CONFLICT = 409
HTTP_GONE = 410
HTTP_TOO_MANY_REQUESTS = 429
"""To an Eviction: a PodDisruptionBudget forbids it now (try again later)."""

TRANSPORT_ERRORS: tuple[type[BaseException], ...] = (aiohttp.ClientError, asyncio.TimeoutError)
"""What aiohttp raises for a connection that fails, breaks or stalls (TimeoutError included)."""


class ResourceVersionGone(WatchExpired):
    """The watch's resourceVersion is older than the server keeps (410 Gone): list again."""


class ObjectConflict(Exception):
    """The API server answered 409: the object exists, or changed since it was read."""


def redacted_url(url: str) -> str:
    """`url` without user-info, query or fragment: what a message or a database may show."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    netloc = f"{host}:{port}" if port is not None else host
    return urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))


def status_reason(body: bytes) -> str | None:
    """The `reason` of a Kubernetes Status body (Forbidden, Expired, NotFound...), if any."""
    try:
        document = json.loads(body)
    except ValueError:
        return None
    reason = document.get("reason") if isinstance(document, dict) else None
    return reason if isinstance(reason, str) and reason.isidentifier() else None


def status_error(
    status: int, *, server: str, action: str, reason: str | None = None
) -> ClusterConnectionError:
    """The error for an HTTP answer other than success to `action` (e.g. "list nodes")."""
    answered = f"HTTP {status}" + (f" {reason}" if reason else "")
    if status == HTTP_UNAUTHORIZED:
        return ClusterConnectionError(
            "unauthorized",
            f"{server} did not accept the kubeconfig's credentials to {action} ({answered})",
        )
    if status == HTTP_FORBIDDEN:
        return ClusterConnectionError(
            "forbidden", f"the kubeconfig's user may not {action} on {server} ({answered})"
        )
    return ClusterConnectionError("error", f"{server} answered {answered} to {action}")


def transport_error(
    exc: BaseException, *, server: str, action: str, timeout: aiohttp.ClientTimeout
) -> ClusterConnectionError:
    """The error for a request to `action` that never got an answer (see TRANSPORT_ERRORS)."""
    if isinstance(exc, aiohttp.ClientConnectorCertificateError):
        verify = getattr(exc.certificate_error, "verify_message", None)
        detail = f": {verify}" if isinstance(verify, str) and verify else ""
        return ClusterConnectionError(
            "error", f"the TLS certificate of {server} is not trusted by the kubeconfig{detail}"
        )
    if isinstance(exc, aiohttp.ClientSSLError | ssl.SSLError):
        return ClusterConnectionError("error", f"the TLS handshake with {server} failed")
    if isinstance(exc, aiohttp.ClientConnectorDNSError):
        return ClusterConnectionError("unreachable", f"the host of {server} cannot be resolved")
    if isinstance(exc, aiohttp.ClientConnectorError):
        why = exc.strerror or "connection failed"
        return ClusterConnectionError("unreachable", f"cannot connect to {server} ({why})")
    if isinstance(exc, asyncio.TimeoutError):
        waited = timeout.connect if isinstance(exc, aiohttp.ConnectionTimeoutError) else None
        seconds = waited or timeout.sock_read or timeout.total
        within = f" within {seconds:g} s" if seconds else ""
        return ClusterConnectionError("unreachable", f"{server} did not answer to {action}{within}")
    if isinstance(
        exc, aiohttp.ServerDisconnectedError | aiohttp.ClientOSError | aiohttp.ClientPayloadError
    ):
        return ClusterConnectionError(
            "unreachable", f"the connection to {server} broke off during {action}"
        )
    return ClusterConnectionError(
        "error", f"talking to {server} to {action} failed ({type(exc).__name__})"
    )
