"""The serving-benchmark figures, against values worked out by hand.

Covers: percentiles as numpy's default linear method computes them (the literals are numpy's
results); a run's figures with vLLM's definitions (only successful requests count toward tokens
and latencies, TPOT divides by output tokens - 1 and leaves out one-token outputs, ITL pools the
gaps of all successful streams); a zero-length or empty run (no division by zero, no summaries);
failures grouped by kind and reason, the most frequent first; progress while a run goes on.
"""

from __future__ import annotations

import pytest

from domain.model.load import FailureKind, LoadRun, RequestSample, Summary
from domain.serving.metrics import failure_reason, percentile, progress, summarize


def ok(
    index: int, prompt: int, output: int, ttft: float, e2el: float, itl: tuple[float, ...]
) -> RequestSample:
    return RequestSample(
        index=index,
        sent_at=0.1 * index,
        ok=True,
        prompt_tokens=prompt,
        output_tokens=output,
        ttft=ttft,
        e2el=e2el,
        itl=itl,
    )


def failed(
    index: int, kind: FailureKind, error: str, *, prompt: int = 40, output: int = 0
) -> RequestSample:
    return RequestSample(
        index=index,
        sent_at=0.1 * index,
        ok=False,
        prompt_tokens=prompt,
        output_tokens=output,
        ttft=0.01 if output else None,
        itl=(0.01,) * max(0, output - 1),
        failure=kind,
        error=error,
    )


SAMPLES = (
    ok(0, prompt=10, output=5, ttft=0.1, e2el=0.5, itl=(0.1, 0.1, 0.1, 0.1)),
    ok(1, prompt=20, output=1, ttft=0.2, e2el=0.2, itl=()),
    ok(2, prompt=30, output=3, ttft=0.3, e2el=0.9, itl=(0.2, 0.4)),
    failed(3, FailureKind.HTTP_STATUS, "HTTP 429: Too many requests"),
    failed(4, FailureKind.TIMEOUT, "stalled: no data for 0.5s after 7 tokens", output=7),
    failed(5, FailureKind.HTTP_STATUS, "HTTP 429: rate limited"),
)


def expect(summary: Summary | None, mean: float, p50: float, p90: float, p99: float) -> None:
    assert summary is not None
    assert (summary.mean, summary.p50, summary.p90, summary.p99) == pytest.approx(
        (mean, p50, p90, p99)
    )


@pytest.mark.parametrize(
    ("values", "p", "expected"),
    [
        ([1, 2, 3, 4, 10], 0, 1.0),
        ([1, 2, 3, 4, 10], 25, 2.0),
        ([1, 2, 3, 4, 10], 50, 3.0),
        ([1, 2, 3, 4, 10], 90, 7.6),
        ([1, 2, 3, 4, 10], 99, 9.76),
        ([1, 2, 3, 4, 10], 100, 10.0),
        ([0.5, 0.1, 0.3, 0.2], 50, 0.25),
        ([0.5, 0.1, 0.3, 0.2], 90, 0.44),
        ([0.5, 0.1, 0.3, 0.2], 99, 0.494),
        ([7.0], 99, 7.0),
    ],
)
def test_percentile_is_numpys_linear_method(values: list[float], p: float, expected: float) -> None:
    assert percentile(values, p) == pytest.approx(expected)


def test_percentile_of_nothing_is_an_error() -> None:
    with pytest.raises(ValueError, match="no values"):
        percentile([], 50)


def test_a_run_counts_only_successful_requests() -> None:
    result = summarize(LoadRun(SAMPLES, duration_seconds=2.0))

    assert (result.successful_requests, result.failed_requests) == (3, 3)
    assert (result.input_tokens, result.output_tokens) == (60, 9)
    assert result.request_throughput == pytest.approx(1.5)
    assert result.input_throughput == pytest.approx(30.0)
    assert result.output_throughput == pytest.approx(4.5)
    assert result.total_token_throughput == pytest.approx(34.5)
    assert result.duration_seconds == 2.0


def test_latencies_follow_vllms_definitions() -> None:
    result = summarize(LoadRun(SAMPLES, duration_seconds=2.0))

    expect(result.ttft, mean=0.2, p50=0.2, p90=0.28, p99=0.298)
    assert result.ttft is not None and (result.ttft.max, result.ttft.count) == (0.3, 3)
    # (E2EL - TTFT) / (output - 1): (0.5 - 0.1) / 4 and (0.9 - 0.3) / 2; the 1-token output
    # has no TPOT
    expect(result.tpot, mean=0.2, p50=0.2, p90=0.28, p99=0.298)
    assert result.tpot is not None and result.tpot.count == 2
    # every gap of every successful stream, pooled; the failed stream's gaps are left out
    expect(result.itl, mean=1.0 / 6, p50=0.1, p90=0.3, p99=0.39)
    assert result.itl is not None and (result.itl.max, result.itl.count) == (0.4, 6)
    expect(result.e2el, mean=1.6 / 3, p50=0.5, p90=0.82, p99=0.892)
    assert result.e2el is not None and result.e2el.max == 0.9


def test_failures_are_grouped_by_kind_and_reason_most_frequent_first() -> None:
    result = summarize(LoadRun(SAMPLES, duration_seconds=2.0))

    assert result.failures == (("HTTP_STATUS: HTTP 429", 2), ("TIMEOUT: stalled", 1))
    assert failure_reason(failed(9, FailureKind.EMPTY, "")) == "EMPTY"
    tie = summarize(
        LoadRun(
            (
                failed(0, FailureKind.MALFORMED, "not JSON: {oops"),
                failed(1, FailureKind.CONNECTION, "connection lost: after 3 tokens"),
            ),
            duration_seconds=1.0,
        )
    )
    assert tie.failures == (("CONNECTION: connection lost", 1), ("MALFORMED: not JSON", 1))


def test_a_zero_length_run_has_zero_throughput() -> None:
    result = summarize(LoadRun(SAMPLES, duration_seconds=0.0))

    assert result.request_throughput == 0.0
    assert result.input_throughput == 0.0
    assert result.output_throughput == 0.0
    assert result.total_token_throughput == 0.0
    assert result.output_tokens == 9


def test_a_run_without_values_has_no_summaries() -> None:
    empty = summarize(LoadRun((), duration_seconds=0.0))
    assert (empty.ttft, empty.tpot, empty.itl, empty.e2el) == (None, None, None, None)
    assert (empty.successful_requests, empty.failed_requests, empty.failures) == (0, 0, ())

    one_token = summarize(
        LoadRun((ok(0, prompt=5, output=1, ttft=0.1, e2el=0.1, itl=()),), duration_seconds=1.0)
    )
    assert one_token.tpot is None and one_token.itl is None
    expect(one_token.ttft, mean=0.1, p50=0.1, p90=0.1, p99=0.1)


def test_progress_counts_what_has_finished() -> None:
    now = progress(SAMPLES, elapsed_seconds=3.0)

    assert (now.requests_done, now.requests_failed, now.output_tokens) == (6, 3, 9)
    assert now.ttft_mean == pytest.approx(0.2)
    assert now.output_throughput == pytest.approx(3.0)
    assert now.elapsed_seconds == 3.0

    start = progress((), elapsed_seconds=0.0)
    assert (start.requests_done, start.ttft_mean, start.output_throughput) == (0, None, 0.0)
