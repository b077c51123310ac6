"""The sampler a process exporting traces runs with: the configured one, minus client calls
made outside any trace (background loops' SQL, Redis and Kubernetes calls)."""

from __future__ import annotations

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF, ALWAYS_ON, Decision, ParentBased
from opentelemetry.trace import NonRecordingSpan, SpanContext, SpanKind, TraceFlags

from adapters.tracing.otel import WithinOperations

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
