"""The ASGI application: GraphQL over HTTP and graphql-transport-ws, the local GraphiQL, health.

Authentication: HTTP requests carry `Authorization: Bearer <token>`; WebSocket clients put the
same value in `connectionParams.Authorization` of `connection_init`, and a connection without a
valid token is closed with 4403 before any operation runs. Only graphql-transport-ws is spoken
(the legacy graphql-ws protocol is refused). Cross-origin browsers are limited to
`allowed_origins`, for HTTP by CORS and for WebSockets by checking Origin on the handshake.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections import OrderedDict
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Mount, Route, WebSocketRoute
from starlette.staticfiles import StaticFiles
from starlette.websockets import WebSocket
from strawberry.asgi import GraphQL
from strawberry.exceptions import ConnectionRejectionError
from strawberry.subscriptions import GRAPHQL_TRANSPORT_WS_PROTOCOL

from budcluster import graphiql
from budcluster.bootstrap import App
from domain.errors import Unauthenticated
from schema.context import ApiServices, Context
from schema.schema import schema

log = logging.getLogger(__name__)


def bearer(value: object) -> str | None:
    if not isinstance(value, str):
        return None
    scheme, _, token = value.strip().partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


class GraphQLView(GraphQL[Context, None]):
    def __init__(self, app: App) -> None:
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
        self._encoded = _Encoded(256)
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
        )

    def encode_json(self, data: object) -> str:
        """A subscription result shared by many watchers (see schema/execution.py) is serialised
        once: its `data` is encoded the first time and reused by identity after."""
        if isinstance(data, dict) and data.get("type") == "next":
            payload = data.get("payload")
            if isinstance(payload, dict) and payload.keys() == {"data"}:
                body = self._encoded.get(payload["data"])
                head = f'{{"id":{json.dumps(data["id"])},"type":"next"'
                return f'{head},"payload":{{"data":{body}}}}}'
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
        token = bearer(request.headers.get("authorization"))
        try:
            context.principal = await self.app.tokens.authenticate(token)
        except Unauthenticated as exc:
            context.auth_error = exc.message
        context.refresh_loaders()
        return context

    async def on_ws_connect(self, context: Context) -> dict[str, object] | None:
        params: Any = context.connection_params
        params = params if isinstance(params, dict) else {}
        raw = params.get("Authorization") or params.get("authorization")
        try:
            context.principal = await self.app.tokens.authenticate(bearer(raw))
        except Unauthenticated as exc:
            raise ConnectionRejectionError({"message": exc.message}) from None
        context.refresh_loaders()
        return None


class _Encoded:
    """JSON text of recent values by identity (holding the values keeps their ids unique)."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._texts: OrderedDict[int, tuple[object, str]] = OrderedDict()

    def get(self, value: object) -> str:
        found = self._texts.get(id(value))
        if found is not None and found[0] is value:
            return found[1]
        text = json.dumps(value, separators=(",", ":"))
        self._texts[id(value)] = (value, text)
        while len(self._texts) > self._size:
            self._texts.popitem(last=False)
        return text


async def health(_: Request) -> JSONResponse:
    return JSONResponse({"status": "ok"})


def create_app(app: App, *, manage_lifecycle: bool = True) -> Starlette:
    """The ASGI app. With `manage_lifecycle`, startup starts the App and shutdown closes it."""
    view = GraphQLView(app)

    async def ready(_: Request) -> JSONResponse:
        try:
            await app.clusters.all()
        except Exception:
            log.exception("readiness check failed")
            return JSONResponse({"status": "unavailable"}, status_code=503)
        return JSONResponse({"status": "ready"})

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        if manage_lifecycle:
            await app.start()
        try:
            yield
        finally:
            if manage_lifecycle:
                await app.close()

    middleware = []
    if app.settings.allowed_origins:
        middleware.append(
            Middleware(
                CORSMiddleware,
                allow_origins=list(app.settings.allowed_origins),
                allow_methods=["GET", "POST", "OPTIONS"],
                allow_headers=["Authorization", "Content-Type"],
                max_age=600,
            )
        )
    return Starlette(
        routes=[
            Route("/graphql", view, methods=["GET", "POST"]),
            WebSocketRoute("/graphql", view),
            Mount(
                "/graphiql/assets",
                StaticFiles(directory=graphiql.ASSETS_DIRECTORY),
                name="graphiql-assets",
            ),
            Route("/graphiql", _redirect_to_ide),
            Route("/healthz", health),
            Route("/readyz", ready),
        ],
        middleware=middleware,
        lifespan=lifespan,
    )


async def _redirect_to_ide(_: Request) -> HTMLResponse:
    return HTMLResponse(graphiql.page_html())
