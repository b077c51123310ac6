"""The sampler a process exporting traces runs with: the configured one, minus client calls
made outside any trace (background loops' SQL, Redis and Kubernetes calls); and the exporter's
complaints about a collector that is down, at most one line a minute."""

from __future__ import annotations

import logging

import pytest
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF, ALWAYS_ON, Decision, ParentBased
from opentelemetry.trace import NonRecordingSpan, SpanContext, SpanKind, TraceFlags

from adapters.tracing.otel import Throttled, WithinOperations

TRACE_ID = 0x4BF92F3577B34DA6A3CE929D0E0E4736


def _under_a_sampled_span() -> Context:
    parent = SpanContext(TRACE_ID, 0x00F067AA0BA902B7, is_remote=True, trace_flags=TraceFlags(1))
    return trace.set_span_in_context(NonRecordingSpan(parent))


def test_a_client_call_outside_any_trace_is_dropped() -> None:
    sampler = WithinOperations(ParentBased(ALWAYS_ON))
    assert sampler.should_sample(None, TRACE_ID, "SELECT db", SpanKind.CLIENT).decision is (
        Decision.DROP
    )
    inside = sampler.should_sample(_under_a_sampled_span(), TRACE_ID, "SELECT db", SpanKind.CLIENT)
    assert inside.decision is Decision.RECORD_AND_SAMPLE


def test_other_roots_follow_the_configured_sampler() -> None:
    for kind in (SpanKind.SERVER, SpanKind.CONSUMER, SpanKind.INTERNAL):
        kept = WithinOperations(ParentBased(ALWAYS_ON)).should_sample(None, TRACE_ID, "x", kind)
        assert kept.decision is Decision.RECORD_AND_SAMPLE
        dropped = WithinOperations(ParentBased(ALWAYS_OFF)).should_sample(None, TRACE_ID, "x", kind)
        assert dropped.decision is Decision.DROP
    assert "ParentBased" in WithinOperations(ParentBased(ALWAYS_ON)).get_description()


def test_an_exporters_complaints_are_one_line_a_minute(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [1000.0]
    monkeypatch.setattr("adapters.tracing.otel.time.monotonic", lambda: now[0])
    throttled = Throttled(60.0)

    def record(text: str) -> logging.LogRecord:
        return logging.LogRecord("otlp", logging.ERROR, __file__, 1, text, None, None)

    assert throttled.filter(record("Failed to export spans batch"))
    for seconds in (1, 20, 59):
        now[0] = 1000.0 + seconds
        assert not throttled.filter(record("Failed to export spans batch"))
    now[0] = 1061.0
    shown = record("Failed to export spans batch")
    assert throttled.filter(shown)
    assert shown.getMessage().endswith("(3 more such since the last line)")
