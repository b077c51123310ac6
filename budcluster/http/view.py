"""The GraphQL endpoint: HTTP and graphql-transport-ws on Strawberry's ASGI view.

Authentication: HTTP requests carry `Authorization: Bearer <token>`; WebSocket clients put the
same value in `connectionParams.Authorization` of `connection_init`, and a connection without a
valid token is closed with 4403 before any operation runs. The token is checked again for every
operation sent on the socket, and the socket is closed with 4403 within seconds of its token being
revoked or expiring (sessions.py). Only graphql-transport-ws is spoken (the legacy graphql-ws
protocol is refused). Cross-origin browsers are limited to `allowed_origins`, for HTTP by CORS and
for WebSockets by checking Origin on the handshake. Bodies and WebSocket messages are decoded by
guards.decode_json; every refusal of the transport is a JSON error with a code.

A connection_init is paid for from the client address's rate bucket before its token is checked
(a caller out of points is closed with 1013 and when to come back), and a refused token leaves
an audit record (schema/admission.py). An answer longer than `max_response_bytes` (HTTP, or a
WebSocket `next`) is replaced by a RESPONSE_TOO_LARGE error: each answer is encoded once, and
its length checked before it is sent.
"""

from __future__ import annotations

import json
import logging
import math
from collections import OrderedDict
from collections.abc import AsyncGenerator
from datetime import timedelta
from typing import Any

from cross_web import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.types import Receive, Scope, Send
from starlette.websockets import WebSocket
from strawberry.asgi import ASGIWebSocketAdapter, GraphQL
from strawberry.exceptions import ConnectionRejectionError
from strawberry.http.exceptions import NonJsonMessageReceived
from strawberry.subscriptions import GRAPHQL_TRANSPORT_WS_PROTOCOL
from strawberry.subscriptions.protocols.graphql_transport_ws.handlers import (
    BaseGraphQLTransportWSHandler as GraphQLTransportWSHandler,
)
from strawberry.subscriptions.protocols.graphql_transport_ws.types import (
    ConnectionInitMessage,
    SubscribeMessage,
)

from budcluster import graphiql, logs
from budcluster.bootstrap import App
from budcluster.http.guards import (
    UnacceptableJson,
    check_ws_message,
    decode_json,
    error_body,
    json_error,
    unavailable,
)
from budcluster.http.persisted import PersistedDocuments, Refused
from budcluster.http.sessions import Sessions
from budcluster.runtime import Runtime
from domain.errors import Unauthenticated, Unavailable
from domain.services.refusals import Refusal, RefusalRecords
from schema.admission import pay_for_connection, record, seconds_to_wait
from schema.context import ApiServices, Context, Rate, RequestLimits, Waiting, presented_key
from schema.execution import is_shared_data
from schema.fairness import TenantShares
from schema.schema import schema

log = logging.getLogger(__name__)


def bearer(value: object) -> str | None:
    if not isinstance(value, str):
        return None
    scheme, _, token = value.strip().partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


class _Socket(ASGIWebSocketAdapter):
    """Closes with 4400 and the reason a message was refused (Strawberry's says only "must be
    valid JSON")."""

    async def iter_json(self, *, ignore_parsing_errors: bool = False) -> AsyncGenerator[object]:
        source = super().iter_json(ignore_parsing_errors=ignore_parsing_errors)
        try:
            async for message in source:
                yield message
        except NonJsonMessageReceived as exc:
            cause = exc.__cause__
            if isinstance(cause, UnacceptableJson):
                await self.close(4400, cause.message[:120])
                return
            raise
        finally:
            await source.aclose()


class _RateLimited(Exception):
    def __init__(self, seconds: int) -> None:
        super().__init__(f"rate limited: try again in {seconds} s")
        self.seconds = seconds


class _TransportWS(GraphQLTransportWSHandler[Context, None]):
    async def handle_connection_init(self, message: ConnectionInitMessage) -> None:
        """A connection_init that cannot be checked now (the database does not answer, or the
        client's address is out of points) closes with 1013, "try again later", not 4403: the
        client's token may well be good."""
        try:
            await super().handle_connection_init(message)
        except Unavailable:
            await self.websocket.close(code=1013, reason="unavailable: try again later")
        except _RateLimited as limited:
            await self.websocket.close(code=1013, reason=str(limited))

    async def handle_subscribe(self, message: SubscribeMessage) -> None:
        """A persisted document named by hash replaces the payload's `query`; a refusal is an
        `error` message for that operation (the connection stays open)."""
        assert isinstance(self.view, GraphQLView)
        payload: dict[str, Any] = dict(message["payload"])
        _name_operation(payload.get("operationName"))  # the operation's task inherits it
        try:
            payload["query"] = self.view.persisted.resolve(
                payload.get("query"), payload.get("extensions"), payload.get("documentId")
            )
            if payload["query"] is None:
                raise Refused("BAD_REQUEST", "`payload` must have a `query` string")
        except Refused as refused:
            await self.send_message(
                {
                    "id": message["id"],
                    "type": "error",
                    "payload": [{"message": refused.message, "extensions": {"code": refused.code}}],
                }
            )
            return
        await super().handle_subscribe({**message, "payload": payload})  # type: ignore[typeddict-item]


class GraphQLView(GraphQL[Context, None]):
    websocket_adapter_class = _Socket
    graphql_transport_ws_handler_class = _TransportWS

    def __init__(self, app: App, runtime: Runtime) -> None:
        super().__init__(
            schema,
            graphql_ide="graphiql",
            subscription_protocols=(GRAPHQL_TRANSPORT_WS_PROTOCOL,),
            connection_init_wait_timeout=timedelta(seconds=10),
            allowed_origins=app.settings.allowed_origins,
            multipart_uploads_enabled=False,
            keep_alive=True,
            keep_alive_interval=15,
        )
        self.app = app
        self.runtime = runtime
        self.persisted = PersistedDocuments.load(
            app.settings.persisted_documents_file,
            only=app.settings.persisted_documents == "only",
        )
        self.sessions = Sessions(app.tokens, app.clock, interval=app.settings.token_check_seconds)
        self._encoded = _Encoded(256)
        self._sent = app.metrics
        self.max_response_bytes = app.settings.max_response_bytes
        self.services = ApiServices(
            jobs=app.jobs,
            clusters=app.clusters,
            quotas=app.quotas,
            reservations=app.reservations,
            tokens=app.tokens,
            timeline=app.timeline,
            schedule_updates=app.schedule_updates,
            updates=app.updates,
            registry=app.registry,
            cluster_updates=app.cluster_updates,
            queue_positions=app.queue_positions,
            deployments=app.deployments,
            autoscaler=app.autoscaler,
            benchmarks=app.benchmarks,
            deployment_updates=app.deployment_updates,
            benchmark_progress=app.benchmark_progress,
            spend=app.spend,
            budgets=app.budgets,
            fleets=app.fleets,
            dispatcher=app.dispatcher,
            drains=app.drains,
            logs=app.logs,
            addons=app.addons,
            secrets=app.secrets,
            limits=RequestLimits(
                app.limiter,
                app.settings.operation_budget,
                caller=Rate(app.settings.rate_burst, app.settings.rate_points_per_minute),
                tenant=Rate(  # never smaller than a token's (settings refuse that)
                    max(app.settings.tenant_rate_burst, app.settings.rate_burst),
                    max(
                        app.settings.tenant_rate_points_per_minute,
                        app.settings.rate_points_per_minute,
                    ),
                ),
                anonymous_introspection=app.settings.allows_anonymous_introspection,
                waiting=Waiting(app.clock),
                refusals=RefusalRecords(uow=app.db.unit_of_work, clock=app.clock),
            ),
            audit=app.audit,
            observe_operation=app.metrics.operation,
            shares=TenantShares(
                heavy_per_tenant=app.settings.tenant_heavy_concurrency,
                subscriptions_per_tenant=app.settings.tenant_subscriptions,
            ),
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            request = Request(scope=scope, receive=receive)
            if (wait := await self._told_to_wait(request)) > 0:
                await request.body()  # bounded by BodyLimit; the connection stays usable
                seconds = str(math.ceil(wait))
                refusal = json_error(
                    429,
                    f"rate limit reached: try again in {seconds} s",
                    headers={"Retry-After": seconds},
                )
                await refusal(scope, receive, send)
                return
            try:
                response = await self.run(request)
            except HTTPException as exc:
                response = json_error(exc.status_code, exc.reason)
            except Refused as refused:
                response = json_error(400, refused.message, code=refused.code)
            except Unavailable as exc:  # before GraphQL: authenticating the caller
                response = unavailable(exc)
            await response(scope, receive, send)
            return
        socket = WebSocket(scope, receive=receive, send=send)
        try:
            await self.run(socket)
        finally:
            self.sessions.discard(socket)

    async def _told_to_wait(self, request: Request) -> float:
        """Seconds a caller this process told to wait (RATE_LIMITED) still has to: refused here,
        before its body is parsed or its token looked up (a client that ignores Retry-After
        costs a header check a request), and recorded within the refusal records' limits as
        the principal it was told as."""
        limits = self.services.limits
        if limits.waiting is None:
            return 0.0
        presented = bearer(request.headers.get("authorization"))
        client = request.client
        address = client.host if client and client.host else "unknown"
        key = presented_key(presented) if presented is not None else f"address:{address}"
        wait = limits.waiting.remaining(key)
        if wait > 0 and limits.refusals is not None:
            principal = limits.waiting.who(key)
            refusal = Refusal(
                code="RATE_LIMITED",
                operation=None,
                address=address,
                transport="http",
                tenant_id=principal.tenant_id if principal is not None else None,
                token_id=principal.token_id if principal is not None else None,
            )
            try:
                await limits.refusals.record(refusal)
            except Exception as exc:  # the database is down: the refusal stands, unrecorded
                log.warning(
                    "a refusal (RATE_LIMITED) could not be recorded: %s", type(exc).__name__
                )
        return wait

    def decode_json(self, data: str | bytes) -> object:
        """A WebSocket message (HTTP bodies go through parse_json)."""
        message = decode_json(data)
        check_ws_message(message)
        return message

    def parse_json(self, data: str | bytes) -> Any:
        """A request body (or GET `variables`): a JSON object, or a refusal saying why not."""
        try:
            value = decode_json(data)
        except UnacceptableJson as exc:
            raise HTTPException(400, exc.message) from None
        except json.JSONDecodeError:
            raise HTTPException(400, "Unable to parse request body as JSON") from None
        if not isinstance(value, dict | list):
            raise HTTPException(400, "the request must be a JSON object with a `query`")
        for request in value if isinstance(value, list) else [value]:
            if isinstance(request, dict):
                self._persisted(request)
        return value

    def parse_query_params(self, params: Any) -> dict[str, Any]:
        """A GET request's parameters, with a persisted document looked up as for POST."""
        return self._persisted(super().parse_query_params(params))

    def _persisted(self, request: dict[str, Any]) -> dict[str, Any]:
        """Puts the document a request names (or may run) in its `query`; raises Refused."""
        _name_operation(request.get("operationName"))
        extensions = request.get("extensions")
        query = self.persisted.resolve(request.get("query"), extensions, request.get("documentId"))
        if query is not None:
            request["query"] = query
        return request

    def encode_json(self, data: object) -> str:
        """An answer, or a WebSocket message, as JSON, at most `max_response_bytes` long (a
        longer answer becomes RESPONSE_TOO_LARGE). A subscription result shared by many
        watchers (see schema/execution.py) is serialised once: its `data` is encoded the first
        time and reused by identity after (each subscriber's `extensions`, the operation's cost,
        are a few bytes encoded with it)."""
        text = self._encode(data)
        if len(text) <= self.max_response_bytes:  # ASCII (json.dumps escapes the rest)
            return text
        log.warning("an answer of %d bytes was refused (RESPONSE_TOO_LARGE)", len(text))
        error = error_body(
            f"the answer is {len(text)} bytes long; at most {self.max_response_bytes} are "
            "sent (ask for fewer items or fields)",
            "RESPONSE_TOO_LARGE",
            limit=self.max_response_bytes,
        )
        if isinstance(data, dict) and data.get("type") == "next":
            return json.dumps({"id": data.get("id"), "type": "next", "payload": error})
        return json.dumps(error)

    def _encode(self, data: object) -> str:
        if isinstance(data, dict) and data.get("type") == "next":
            payload = data.get("payload")
            if (
                isinstance(payload, dict)
                and payload.keys() <= {"data", "extensions"}
                and payload.get("data") is not None
                and is_shared_data(payload["data"])
            ):
                self._sent.shared_message.inc()
                body = self._encoded.get(payload["data"])
                head = f'{{"id":{json.dumps(data["id"])},"type":"next"'
                extensions = payload.get("extensions")
                if extensions is None:
                    return f'{head},"payload":{{"data":{body}}}}}'
                tail = json.dumps(extensions, separators=(",", ":"))
                return f'{head},"payload":{{"data":{body},"extensions":{tail}}}}}'
            self._sent.own_message.inc()
        return json.dumps(data, separators=(",", ":"))

    async def render_graphql_ide(self, request: Request) -> HTMLResponse:
        return HTMLResponse(graphiql.page_html())

    async def get_context(
        self, request: Request | WebSocket, response: Response | WebSocket
    ) -> Context:
        context = Context(self.services, request=request, response=response)
        if isinstance(request, WebSocket):
            context.transport = "websocket"
            return context  # authenticated in on_ws_connect
        context.bearer = bearer(request.headers.get("authorization"))
        try:
            context.principal = await self.app.tokens.authenticate(context.bearer)
        except Unauthenticated as exc:
            context.auth_error = exc.message
        else:
            logs.principal_id.set(_principal_label(context.principal))
        context.refresh_loaders()
        return context

    async def on_ws_connect(self, context: Context) -> dict[str, object] | None:
        params: Any = context.connection_params
        params = params if isinstance(params, dict) else {}
        context.bearer = bearer(params.get("Authorization") or params.get("authorization"))
        wait = await pay_for_connection(context)
        if wait > 0:
            await record(context, "RATE_LIMITED", "connection_init")
            raise _RateLimited(seconds_to_wait(wait))
        try:
            context.principal = await self.app.tokens.authenticate(context.bearer)
        except Unauthenticated as exc:
            await record(context, "UNAUTHENTICATED", "connection_init")
            raise ConnectionRejectionError({"message": exc.message}) from None
        logs.principal_id.set(_principal_label(context.principal))
        if context.principal.token_id is not None and isinstance(context.response, WebSocket):
            started = self.sessions.add(context.principal.token_id, context.response)
            if started is not None:
                self.runtime.adopt(started)
        context.refresh_loaders()
        return None


def _principal_label(principal: Any) -> str | None:
    """What logs say of the caller: the token's id (never the token), or the tenant's."""
    token_id = getattr(principal, "token_id", None)
    return f"token:{token_id}" if token_id else f"tenant:{principal.tenant_id}"


def _name_operation(name: object) -> None:
    logs.operation.set(name[:100] if isinstance(name, str) and name else None)


class _Encoded:
    """JSON text of recent shared values by identity (holding the values keeps their ids
    unique), at most `size` of them and about `budget` characters in all."""

    def __init__(self, size: int, budget: int = 32 * 1024 * 1024) -> None:
        self._size = size
        self._budget = budget
        self._held = 0
        self._texts: OrderedDict[int, tuple[object, str]] = OrderedDict()

    def get(self, value: object) -> str:
        found = self._texts.get(id(value))
        if found is not None and found[0] is value:
            return found[1]
        text = json.dumps(value, separators=(",", ":"))
        self._texts[id(value)] = (value, text)
        self._held += len(text)
        while len(self._texts) > 1 and (len(self._texts) > self._size or self._held > self._budget):
            self._held -= len(self._texts.popitem(last=False)[1][1])
        return text
