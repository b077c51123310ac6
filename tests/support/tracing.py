"""Spans captured in memory, for the tracing tests.

OpenTelemetry lets a process set its global tracer provider once, so the test process gets one
SDK provider, made the first time a test asks, with an in-memory exporter. It records only while
a test captures: at other times its sampler drops every span, so the rest of the suite runs as a
process without traces would (no span recorded, no trace context put into task payloads).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import Decision, Sampler, SamplingResult
from opentelemetry.trace import Link, SpanKind
from opentelemetry.util.types import Attributes


class _WhileCapturing(Sampler):
    def __init__(self, capture: Capture) -> None:
        self._capture = capture

    def should_sample(
        self,
        parent_context: Context | None,
        trace_id: int,
        name: str,
        kind: SpanKind | None = None,
        attributes: Attributes = None,
        links: Sequence[Link] | None = None,
        trace_state: Any = None,
    ) -> SamplingResult:
        decision = Decision.RECORD_AND_SAMPLE if self._capture.active else Decision.DROP
        return SamplingResult(decision, attributes)

    def get_description(self) -> str:
        return "while a test captures"


class Capture:
    def __init__(self) -> None:
        self.active = False
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider(sampler=_WhileCapturing(self))
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))

    def start(self) -> None:
        self.exporter.clear()
        self.active = True

    def stop(self) -> list[ReadableSpan]:
        self.active = False
        spans = list(self.exporter.get_finished_spans())
        self.exporter.clear()
        return spans


_capture: Capture | None = None


def capture() -> Capture:
    """The process's capturing provider, installed as the global one the first time."""
    global _capture
    if _capture is None:
        _capture = Capture()
        trace.set_tracer_provider(_capture.provider)
        assert trace.get_tracer_provider() is _capture.provider, "another provider was set"
    return _capture


class Trace:
    """Finished spans, and how they hang together."""

    def __init__(self, spans: Sequence[ReadableSpan]) -> None:
        self.spans = list(spans)
        self._by_id = {s.context.span_id: s for s in self.spans if s.context is not None}

    def named(self, name: str) -> list[ReadableSpan]:
        return [s for s in self.spans if s.name == name]

    def one(self, name: str) -> ReadableSpan:
        found = self.named(name)
        assert len(found) == 1, (name, sorted(s.name for s in self.spans))
        return found[0]

    def parent(self, span: ReadableSpan) -> ReadableSpan | None:
        return self._by_id.get(span.parent.span_id) if span.parent is not None else None

    def ancestors(self, span: ReadableSpan) -> list[ReadableSpan]:
        found: list[ReadableSpan] = []
        current = self.parent(span)
        while current is not None:
            found.append(current)
            current = self.parent(current)
        return found

    def under(self, ancestor: ReadableSpan, span: ReadableSpan) -> bool:
        return any(a is ancestor for a in self.ancestors(span))

    def text(self) -> str:
        """Every name, attribute and event of every span, for looking for what must not be
        there."""
        parts: list[str] = []
        for span in self.spans:
            parts.append(span.name)
            parts.append(repr(dict(span.attributes or {})))
            parts.extend(f"{e.name} {dict(e.attributes or {})!r}" for e in span.events)
            parts.append(repr(span.status.description))
            parts.append(repr(dict(span.resource.attributes)))
        return "\n".join(parts)
