"""OpenTelemetry traces for one process: the provider, its OTLP exporter, and the libraries'
instrumentation (SQLAlchemy statements, Redis commands, httpx and aiohttp requests, the latter
being the Kubernetes client's).

Tracing is off unless an OTLP endpoint is configured: nothing is installed and budcluster's own
spans (the GraphQL operation, the unit of work's commit, tasks queued and run, cluster calls) are
the API's no-op spans. When on, the process's global tracer provider is an SDK provider exporting
in batches over OTLP/HTTP (protobuf); the exporter reads the standard OTEL_EXPORTER_OTLP_* headers,
timeout and certificate settings, and the provider OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES and
OTEL_TRACES_SAMPLER (its default: the parent's decision, else always).

What a span may carry is bounded by what the instrumentations record: SQL text with its bind
parameters left out, Redis command names with their arguments as `?`, and URLs; never a
header (tokens travel in Authorization).
"""

from __future__ import annotations

import importlib.util
import logging
import os
import socket
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.instrumentation.aiohttp_client import AioHttpClientInstrumentor
from opentelemetry.instrumentation.httpx import HTTPXClientInstrumentor
from opentelemetry.instrumentation.instrumentor import BaseInstrumentor  # type: ignore[attr-defined]
from opentelemetry.instrumentation.redis import RedisInstrumentor
from opentelemetry.instrumentation.sqlalchemy import SQLAlchemyInstrumentor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.sampling import Decision, Sampler, SamplingResult
from opentelemetry.trace import Link, SpanKind, TraceState
from opentelemetry.util.types import Attributes
from sqlalchemy.ext.asyncio import AsyncEngine

log = logging.getLogger(__name__)


def install_otlp(traces_url: str, *, role: str) -> TracerProvider:
    """Make an SDK provider exporting to `traces_url` the process's global one (once: a
    process that has one keeps it, as the API allows, and it is returned)."""
    current = trace.get_tracer_provider()
    if isinstance(current, TracerProvider):
        return current
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    resource = Resource.create(
        {
            "service.name": os.environ.get("OTEL_SERVICE_NAME") or "budcluster",
            "service.instance.id": f"{socket.gethostname()}-{os.getpid()}",
            "budcluster.role": role,
        }
    )
    configured = TracerProvider(shutdown_on_exit=False).sampler  # OTEL_TRACES_SAMPLER's
    provider = TracerProvider(resource=resource, sampler=WithinOperations(configured))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=traces_url)))
    trace.set_tracer_provider(provider)
    exporter_log = logging.getLogger("opentelemetry.exporter.otlp.proto.http.trace_exporter")
    exporter_log.setLevel(logging.ERROR)  # not each retry: what was lost, once a minute
    exporter_log.addFilter(Throttled(60.0))
    log.info("tracing: spans are exported over OTLP to %s", _without_credentials(traces_url))
    return provider


class WithinOperations(Sampler):
    """The configured sampler, except that a client call outside any trace is not one of its
    own: the SQL, Redis and Kubernetes calls of the background loops (the simulated clusters'
    clock, the supervisor's sweeps and watches, the refresher's reads) would otherwise each be
    a trace of one span, several a second, burying the traces of what people and tasks did."""

    def __init__(self, inner: Sampler) -> None:
        self._inner = inner

    def should_sample(
        self,
        parent_context: Context | None,
        trace_id: int,
        name: str,
        kind: SpanKind | None = None,
        attributes: Attributes = None,
        links: Sequence[Link] | None = None,
        trace_state: TraceState | None = None,
    ) -> SamplingResult:
        parent = trace.get_current_span(parent_context).get_span_context()
        if kind is SpanKind.CLIENT and not parent.is_valid:
            return SamplingResult(Decision.DROP)
        return self._inner.should_sample(
            parent_context, trace_id, name, kind, attributes, links, trace_state
        )

    def get_description(self) -> str:
        return f"WithinOperations{{{self._inner.get_description()}}}"


class Throttled(logging.Filter):
    """At most one line every `seconds`, saying how many were held back since the last (a
    collector that is down must not fill the service's log: the exporter logs every batch)."""

    def __init__(self, seconds: float) -> None:
        super().__init__()
        self._seconds = seconds
        self._last: float | None = None
        self._held = 0

    def filter(self, record: logging.LogRecord) -> bool:
        now = time.monotonic()
        if self._last is not None and now - self._last < self._seconds:
            self._held += 1
            return False
        if self._held:
            record.msg = f"{record.getMessage()} ({self._held} more such since the last line)"
            record.args = None
        self._last, self._held = now, 0
        return True


def _without_credentials(url: str) -> str:
    scheme, sep, rest = url.partition("://")
    return f"{scheme}{sep}{rest.rpartition('@')[2]}" if sep else url


@dataclass
class Tracing:
    """The instrumentation this process installed, taken off again by `close` (the instrumented
    libraries are patched process-wide: one App per process instruments them)."""

    provider: trace.TracerProvider
    _instrumentors: list[BaseInstrumentor] = field(default_factory=list)
    on_close: list[Callable[[], None]] = field(default_factory=list)
    """What else stops with the instrumentation (the GraphQL operations' tracing)."""

    @classmethod
    def instrument(cls, engine: AsyncEngine) -> Tracing:
        """Instrument the libraries with the process's global provider (an SDK provider that
        `install_otlp` or a test installed)."""
        tracing = cls(trace.get_tracer_provider())
        instrumentors: list[tuple[BaseInstrumentor, dict[str, Any]]] = [
            # SQLAlchemy 2.1 is newer than the instrumentation declares; its engine events, all
            # it uses, are unchanged (the tests check its spans)
            (SQLAlchemyInstrumentor(), {"engine": engine.sync_engine, "skip_dep_check": True}),
            (RedisInstrumentor(), {}),
            (AioHttpClientInstrumentor(), {}),  # the Kubernetes client's, and the load generator's
        ]
        if importlib.util.find_spec("httpx") is not None:  # not a runtime dependency of ours
            instrumentors.append((HTTPXClientInstrumentor(), {}))
        for instrumentor, options in instrumentors:
            if not instrumentor.is_instrumented_by_opentelemetry:
                instrumentor.instrument(tracer_provider=tracing.provider, **options)
                tracing._instrumentors.append(instrumentor)
        return tracing

    def close(self) -> None:
        """Take the instrumentation off."""
        for callback in self.on_close:
            callback()
        self.on_close.clear()
        for instrumentor in reversed(self._instrumentors):
            instrumentor.uninstrument()
        self._instrumentors.clear()

    def flush(self) -> None:
        """Export what is buffered: blocking, up to 5 s when the collector does not answer
        (call it off the event loop)."""
        flush = getattr(self.provider, "force_flush", None)
        if flush is not None:
            flush(5_000)
