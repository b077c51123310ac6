"""The reported figures of a load run, with vLLM's serving-benchmark definitions.

They follow `calculate_metrics` in vLLM's benchmarks/benchmark_serving.py, so a figure here means
what the same name means in a vLLM benchmark report: only successful requests count toward tokens
and latencies, TPOT leaves out one-token outputs, ITL pools every gap of every successful stream,
and the throughputs divide by the run's duration. Percentiles use numpy's default ("linear")
method. The docstrings below are the definitions the API shows, so they are written for its
readers.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

from domain.model.load import LoadProgress, LoadResult, LoadRun, RequestSample, Summary

REASON_LENGTH = 60
"""A failure reason longer than this is cut when failures are grouped."""


def percentile(values: Sequence[float], p: float) -> float:
    """The `p`-th percentile (0 to 100) of `values`, interpolating linearly between the two
    nearest ranks (numpy's default method): with the values sorted, rank `p/100 * (n - 1)`."""
    if not values:
        raise ValueError("percentile of no values")
    if not 0 <= p <= 100:
        raise ValueError(f"percentile {p} is outside [0, 100]")
    ordered = sorted(values)
    rank = p / 100 * (len(ordered) - 1)
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def summary(values: Sequence[float]) -> Summary | None:
    """Mean, median (p50), p90, p99 and maximum of `values`; None when there are none."""
    if not values:
        return None
    return Summary(
        mean=math.fsum(values) / len(values),
        p50=percentile(values, 50),
        p90=percentile(values, 90),
        p99=percentile(values, 99),
        max=max(values),
        count=len(values),
    )


def ttfts(samples: Sequence[RequestSample]) -> list[float]:
    """Time to first token: seconds from sending a request to receiving the first streamed
    chunk with content, one value per successful request."""
    return [s.ttft for s in samples if s.ok and s.ttft is not None]


def tpots(samples: Sequence[RequestSample]) -> list[float]:
    """Time per output token after the first: (E2EL - TTFT) / (output tokens - 1), one value
    per successful request that produced more than one token."""
    return [
        (s.e2el - s.ttft) / (s.output_tokens - 1)
        for s in samples
        if s.ok and s.output_tokens > 1 and s.e2el is not None and s.ttft is not None
    ]


def itls(samples: Sequence[RequestSample]) -> list[float]:
    """Inter-token latency: every gap between consecutive streamed chunks with content, of all
    successful requests, pooled (a request with many tokens weighs more)."""
    return [gap for s in samples if s.ok for gap in s.itl]


def e2els(samples: Sequence[RequestSample]) -> list[float]:
    """End-to-end latency: seconds from sending a request to the end of its stream, one value
    per successful request."""
    return [s.e2el for s in samples if s.ok and s.e2el is not None]


def failure_reason(sample: RequestSample) -> str:
    """The group a failed request is counted in: its failure kind and the head of its error
    (the text before the first ": ", e.g. "HTTP_STATUS: HTTP 429" or "TIMEOUT: stalled")."""
    kind = sample.failure.value if sample.failure is not None else "FAILED"
    if not sample.error:
        return kind
    head = sample.error.split(": ", 1)[0].strip()[:REASON_LENGTH]
    return f"{kind}: {head}"


def _per_second(amount: float, seconds: float) -> float:
    return amount / seconds if seconds > 0 else 0.0


def summarize(run: LoadRun) -> LoadResult:
    """The figures of a finished run.

    - successful_requests / failed_requests: requests whose stream ended properly / did not.
    - input_tokens, output_tokens: prompt and output tokens of successful requests only.
    - request_throughput: successful requests per second of the run's duration.
    - input_throughput, output_throughput: input / output tokens per second of the duration.
    - total_token_throughput: (input + output tokens) per second of the duration.
    - ttft, tpot, itl, e2el: see `ttfts`, `tpots`, `itls`, `e2els`; None when no request gave
      a value.
    - failures: failed requests counted by `failure_reason`, the most frequent first.

    The duration runs from the first request sent to the last one ended; when it is zero the
    throughputs are zero.
    """
    succeeded = [s for s in run.samples if s.ok]
    failed = [s for s in run.samples if not s.ok]
    input_tokens = sum(s.prompt_tokens for s in succeeded)
    output_tokens = sum(s.output_tokens for s in succeeded)
    duration = run.duration_seconds
    reasons = Counter(failure_reason(s) for s in failed)
    return LoadResult(
        duration_seconds=duration,
        successful_requests=len(succeeded),
        failed_requests=len(failed),
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        request_throughput=_per_second(len(succeeded), duration),
        input_throughput=_per_second(input_tokens, duration),
        output_throughput=_per_second(output_tokens, duration),
        total_token_throughput=_per_second(input_tokens + output_tokens, duration),
        ttft=summary(ttfts(succeeded)),
        tpot=summary(tpots(succeeded)),
        itl=summary(itls(succeeded)),
        e2el=summary(e2els(succeeded)),
        failures=tuple(sorted(reasons.items(), key=lambda item: (-item[1], item[0]))),
    )


def progress(samples: Sequence[RequestSample], elapsed_seconds: float) -> LoadProgress:
    """A run in progress, from the requests finished so far: how many ended (successful or
    not) and failed, the output tokens of the successful ones, their mean TTFT (None before the
    first), and output tokens per second of the time elapsed since the run started."""
    first_tokens = ttfts(samples)
    output_tokens = sum(s.output_tokens for s in samples if s.ok)
    return LoadProgress(
        elapsed_seconds=elapsed_seconds,
        requests_done=len(samples),
        requests_failed=sum(1 for s in samples if not s.ok),
        output_tokens=output_tokens,
        ttft_mean=math.fsum(first_tokens) / len(first_tokens) if first_tokens else None,
        output_throughput=_per_second(output_tokens, elapsed_seconds),
    )
