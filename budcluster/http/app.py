"""The ASGI application: GraphQL over HTTP and graphql-transport-ws, the local GraphiQL, health.

Every response is JSON or the IDE's page: unknown paths, wrong methods, bodies over the limit and
unexpected failures answer `{"errors": [{"message", "extensions": {"code"}}]}` with their status.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator

from opentelemetry.instrumentation.asgi import OpenTelemetryMiddleware
from opentelemetry.trace import Span, TracerProvider
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Mount, Route, WebSocketRoute
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send

from budcluster import graphiql, schedule_page
from budcluster.bootstrap import App
from budcluster.http.guards import BodyLimit, RequestIds, json_error
from budcluster.http.spend_csv import spend_csv
from budcluster.http.view import GraphQLView
from budcluster.runtime import Runtime
from schema.extensions import tracing as traced_operations

log = logging.getLogger(__name__)


async def health(_: Request) -> JSONResponse:
    return JSONResponse({"status": "ok"})


async def _http_error(_: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    return json_error(exc.status_code, str(exc.detail), headers=exc.headers)


async def _internal_error(_: Request, exc: Exception) -> Response:
    log.error("unhandled error (%s)", type(exc).__name__, exc_info=exc)
    return json_error(500, "Internal error.")


def create_app(
    app: App, *, manage_lifecycle: bool = True, runtime: Runtime | None = None
) -> Starlette:
    """The ASGI app. With `manage_lifecycle`, startup starts the process's Runtime (`runtime`,
    or one of its own), and shutdown stops it and closes the App."""
    runtime = runtime or Runtime(app)
    view = GraphQLView(app, runtime)

    async def ready(_: Request) -> JSONResponse:
        """Ready when every store this process needs answers: the database, and Redis when
        it is configured (tasks, events and rate limits go through it)."""
        checks = await app.readiness()
        ready = all(checks.values())
        return JSONResponse(
            {
                "status": "ready" if ready else "unavailable",
                "checks": {name: "ok" if ok else "unavailable" for name, ok in checks.items()},
            },
            status_code=200 if ready else 503,
            headers=None if ready else {"Retry-After": "5"},
        )

    async def metrics(_: Request) -> Response:
        """Prometheus' text format (see adapters/metrics); no token: scrape it from inside the
        cluster network (the Helm chart's ServiceMonitor), never expose it publicly."""
        body, content_type = await app.metrics_text()
        return Response(body, media_type=content_type)

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        if manage_lifecycle:
            await runtime.start()
        try:
            yield
        finally:
            if manage_lifecycle:
                await runtime.stop()
                await app.close()

    middleware = [
        Middleware(RequestIds),
        Middleware(BodyLimit, max_bytes=app.settings.max_body_bytes),
    ]
    if app.tracing is not None:
        middleware.insert(0, Middleware(TracedRequests, provider=app.tracing.provider))
        traced_operations.hold()
        app.tracing.on_close.append(traced_operations.release)
    if app.settings.allowed_origins:
        middleware.insert(
            0,
            Middleware(
                CORSMiddleware,
                allow_origins=list(app.settings.allowed_origins),
                allow_methods=["GET", "POST", "OPTIONS"],
                allow_headers=["Authorization", "Content-Type"],
                max_age=600,
            ),
        )
    starlette = Starlette(
        routes=[
            Route("/graphql", view, methods=["GET", "POST"]),
            WebSocketRoute("/graphql", view),
            Mount(
                "/graphiql/assets",
                StaticFiles(directory=graphiql.ASSETS_DIRECTORY),
                name="graphiql-assets",
            ),
            Route("/graphiql", _ide),
            Mount(
                "/schedule/assets",
                StaticFiles(directory=schedule_page.ASSETS_DIRECTORY),
                name="schedule-assets",
            ),
            Route("/schedule", _schedule),
            Route("/metrics", metrics),
            Route("/spend.csv", spend_csv(view.services)),
            Route("/health", health),
            Route("/ready", ready),
            Route("/healthz", health),
            Route("/readyz", ready),
        ],
        middleware=middleware,
        exception_handlers={HTTPException: _http_error, Exception: _internal_error},
        lifespan=lifespan,
    )
    starlette.state.view = view
    return starlette


class TracedRequests:
    """ASGI middleware: each HTTP request is a server span (continuing the caller's trace when
    it sends `traceparent`), the parent of its GraphQL operation's span. WebSocket connections
    get none (a connection lives for hours: each operation on it has its own span), nor probes,
    scrapes and static assets."""

    def __init__(self, app: ASGIApp, provider: TracerProvider) -> None:
        self._app = app
        self._traced = OpenTelemetryMiddleware(
            app,
            excluded_urls=",".join(UNTRACED_PATHS),
            exclude_spans=["receive", "send"],
            tracer_provider=provider,
            server_request_hook=_without_query,
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            await self._traced(scope, receive, send)
        else:
            await self._app(scope, receive, send)


def _without_query(span: Span, scope: Scope) -> None:
    """A GET request's query string is a GraphQL document and its variables: its span keeps
    the path alone."""
    if not scope.get("query_string") or not span.is_recording():
        return
    path = scope.get("path", "")
    host, port = (scope.get("server") or ("", None))[:2]
    where = f"{host}:{port}" if port else str(host)
    span.set_attribute("http.target", path)
    span.set_attribute("url.query", "")
    span.set_attribute("http.url", f"{scope.get('scheme', 'http')}://{where}{path}")


UNTRACED_PATHS = ("/health", "/ready", "/metrics", "/graphiql/assets/", "/schedule/assets/")


async def _ide(_: Request) -> HTMLResponse:
    return HTMLResponse(graphiql.page_html())


async def _schedule(_: Request) -> HTMLResponse:
    """The live schedule page; it asks for a token itself and keeps it in the tab's session
    storage, so the page and its assets are public."""
    return HTMLResponse(schedule_page.page_html(), headers=_PAGE_HEADERS)


_PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; connect-src 'self' ws: wss:; "
    "img-src 'self' data:; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
