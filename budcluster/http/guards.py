"""What a request passes before GraphQL sees it: a bounded body, and JSON that is well formed.

A body is refused with 413 as soon as it is known to be too large: from its Content-Length before
anything is read, else (chunked) the moment the bytes read pass the limit; what was read is
dropped. JSON is decoded strictly: UTF-8 only, nested at most MAX_JSON_DEPTH deep, and no lone
UTF-16 surrogate in any string (`"\\ud800"` is valid JSON, but no database or encoder can store
it, so it is refused here, naming where it is, instead of failing somewhere later). Every refusal
is JSON in the shape of a GraphQL response, `{"errors": [{"message", "extensions": {"code"}}]}`,
so a client has one format to read whatever went wrong.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Mapping
from typing import Any

from opentelemetry import trace
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from budcluster import logs
from budcluster.http.persisted import has_document_reference
from domain.documents import Flaw, document_problem
from domain.errors import Unavailable

MAX_JSON_DEPTH = 64

STATUS_CODES = {
    400: "BAD_REQUEST",
    401: "UNAUTHENTICATED",
    403: "FORBIDDEN",
    404: "NOT_FOUND",
    405: "METHOD_NOT_ALLOWED",
    408: "REQUEST_TIMEOUT",
    413: "PAYLOAD_TOO_LARGE",
    415: "UNSUPPORTED_MEDIA_TYPE",
    429: "RATE_LIMITED",
    500: "INTERNAL_SERVER_ERROR",
    503: "UNAVAILABLE",
}


def error_body(message: str, code: str, **extensions: object) -> dict[str, Any]:
    return {"errors": [{"message": message, "extensions": {"code": code, **extensions}}]}


def json_error(
    status: int,
    message: str,
    *,
    code: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> JSONResponse:
    """A transport-level refusal, as JSON with the same shape as a GraphQL error."""
    return JSONResponse(
        error_body(message, code or STATUS_CODES.get(status, "BAD_REQUEST")),
        status_code=status,
        headers=dict(headers or {}),
    )


def unavailable(exc: Unavailable) -> JSONResponse:
    """An outage before any GraphQL ran: 503, and when to try again."""
    seconds = exc.retry_after_seconds
    return json_error(
        503,
        f"the service is unavailable for now ({exc}): try again in {seconds} s",
        headers={"Retry-After": str(seconds)},
    )


class UnacceptableJson(json.JSONDecodeError):
    """JSON that parsed (or would) but is refused; a JSONDecodeError so that every caller that
    handles malformed JSON (Strawberry's WebSocket loop closes with 4400) handles it too."""

    def __init__(self, message: str) -> None:
        super().__init__(message, "", 0)
        self.message = message


def check_json(value: object, *, max_depth: int = MAX_JSON_DEPTH) -> None:
    """Raise UnacceptableJson if `value` nests deeper than `max_depth` or holds a string (or
    key) that is not valid Unicode."""
    problem = document_problem(value, max_depth=max_depth)
    if problem is None:
        return
    where = problem.path or "the body"
    if problem.flaw is Flaw.TOO_DEEP:
        raise UnacceptableJson(f"{where}: JSON nested deeper than {max_depth} levels")
    raise UnacceptableJson(f"{where}: a string {problem.flaw.value}")


def decode_json(data: str | bytes) -> object:
    """Strict JSON: raises json.JSONDecodeError (UnacceptableJson for what is refused)."""
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError:
            raise UnacceptableJson("the body is not valid UTF-8") from None
    try:
        value = json.loads(data)
    except RecursionError:
        raise UnacceptableJson(f"JSON nested deeper than {MAX_JSON_DEPTH} levels") from None
    check_json(value)
    return value


MAX_OPERATION_ID = 128


def check_ws_message(message: object) -> None:
    """A graphql-transport-ws message must have the protocol's shape (Strawberry's handler
    assumes it and fails on anything else); raises UnacceptableJson, which closes with 4400."""
    if not isinstance(message, dict) or not isinstance(message.get("type"), str):
        raise UnacceptableJson("a message must be an object with a `type`")
    payload = message.get("payload")
    if message["type"] == "subscribe":
        op = message.get("id")
        if not isinstance(op, str) or not 0 < len(op) <= MAX_OPERATION_ID:
            raise UnacceptableJson(f"`id` must be a string of 1 to {MAX_OPERATION_ID} characters")
        if not isinstance(payload, dict) or not (
            isinstance(payload.get("query"), str) or has_document_reference(payload)
        ):
            raise UnacceptableJson(
                "`payload` must be an object with a `query` string (or a persisted document's "
                "hash in `extensions.persistedQuery`)"
            )
        for key, kind in (("variables", dict), ("extensions", dict), ("operationName", str)):
            if payload.get(key) is not None and not isinstance(payload[key], kind):
                raise UnacceptableJson(f"`payload.{key}` has the wrong type")
    elif message["type"] == "complete":
        if not isinstance(message.get("id"), str):
            raise UnacceptableJson("`id` must be a string")
    elif payload is not None and not isinstance(payload, dict):
        raise UnacceptableJson("`payload` must be an object")


class BodyLimit:
    """ASGI middleware: HTTP request bodies larger than `max_bytes` get 413 and are not read
    further. The body is read here (it is small by then) and handed on whole."""

    def __init__(self, app: ASGIApp, *, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = self._declared_length(scope)
        if declared == -1:
            await json_error(400, "Content-Length is not a number")(scope, receive, send)
            return
        if declared is not None and declared > self.max_bytes:
            await self._too_large(scope, receive, send)
            return
        body = bytearray()
        more = True
        while more:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                return
            body += message.get("body", b"")
            more = message.get("more_body", False)
            if len(body) > self.max_bytes:
                await self._too_large(scope, receive, send)
                return
        await self.app(scope, _replay(bytes(body), receive), send)

    @staticmethod
    def _declared_length(scope: Scope) -> int | None:
        for name, value in scope.get("headers", ()):
            if name == b"content-length":
                try:
                    return int(value)
                except ValueError:
                    return -1
        return None

    async def _too_large(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = json_error(
            413,
            f"the request body is larger than {self.max_bytes} bytes",
            headers={"Connection": "close"},
        )
        await response(scope, receive, send)


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,64}")


class RequestIds:
    """ASGI middleware: each HTTP request and WebSocket connection gets an id, the caller's
    `X-Request-ID` when it is a plain token of at most 64 characters, else a new one; logs of
    its handling carry it (budcluster.logs), and HTTP responses send it back."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        given = dict(scope.get("headers", ())).get(b"x-request-id", b"").decode("latin-1")
        rid = given if _REQUEST_ID.fullmatch(given) else uuid.uuid4().hex
        token = logs.request_id.set(rid)
        trace.get_current_span().set_attribute("budcluster.request_id", rid)

        async def stamped(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [
                    (k, v) for k, v in message.get("headers", []) if k.lower() != b"x-request-id"
                ]
                message = {**message, "headers": [*headers, (b"x-request-id", rid.encode())]}
            await send(message)

        try:
            await self.app(scope, receive, stamped)
        finally:
            logs.request_id.reset(token)
