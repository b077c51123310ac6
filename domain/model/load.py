"""What a benchmark sends to a model endpoint, and what it measures of each request.

A `LoadPlan` says where to send requests (an OpenAI-compatible base URL ending in `/v1`), how
many users (closed loop: each sends its next request when the last one ended) or at what rate
(open loop: Poisson arrivals, optionally capped at `concurrency` in flight), for how many requests
or how long, and how long prompts and outputs are. A `RequestSample` is one request as the client
timed it; `domain.serving.metrics` turns samples into the reported figures. Both the embedded
load generator and the results read back from a real cluster's benchmark Job are samples, so the
metrics have one definition.

Times in samples are seconds (floats from a monotonic clock, relative to the run's start).
"""

from __future__ import annotations

import dataclasses
import enum
import math
import random
from dataclasses import dataclass
from typing import Any


class Api(enum.StrEnum):
    CHAT = "CHAT"
    """POST {endpoint}/chat/completions with `messages`."""
    COMPLETIONS = "COMPLETIONS"
    """POST {endpoint}/completions with `prompt`."""


class LengthKind(enum.StrEnum):
    FIXED = "FIXED"
    UNIFORM = "UNIFORM"
    NORMAL = "NORMAL"


@dataclass(frozen=True)
class Lengths:
    """A distribution of token counts: FIXED `mean`; UNIFORM over [`low`, `high`]; NORMAL with
    `mean` and `stddev`, clamped to [`low`, `high`] (`low` at least 1)."""

    kind: LengthKind = LengthKind.FIXED
    mean: int = 128
    low: int = 1
    high: int = 1
    stddev: float = 0.0

    @classmethod
    def fixed(cls, tokens: int) -> Lengths:
        return cls(LengthKind.FIXED, tokens, tokens, tokens)

    @classmethod
    def uniform(cls, low: int, high: int) -> Lengths:
        return cls(LengthKind.UNIFORM, (low + high) // 2, low, high)

    def sample(self, rng: random.Random) -> int:
        if self.kind is LengthKind.FIXED:
            return self.mean
        if self.kind is LengthKind.UNIFORM:
            return rng.randint(self.low, self.high)
        value = round(rng.gauss(self.mean, self.stddev))
        return max(max(1, self.low), min(self.high, value))

    @property
    def largest(self) -> int:
        return self.mean if self.kind is LengthKind.FIXED else self.high


@dataclass(frozen=True)
class LoadPlan:
    endpoint: str
    """Base URL of an OpenAI-compatible API, ending in /v1 (no trailing slash)."""
    model: str
    """The served model name sent in each request (`/v1/models` lists them)."""
    api: Api = Api.CHAT
    concurrency: int | None = None
    """Users: requests in flight at most (closed loop when `request_rate` is None)."""
    request_rate: float | None = None
    """Requests per second, Poisson arrivals (open loop); None: as fast as `concurrency` allows."""
    request_count: int | None = None
    duration_seconds: float | None = None
    """Stop sending after this long (requests in flight are awaited); with `request_count`,
    whichever comes first."""
    prompt_tokens: Lengths = Lengths(LengthKind.FIXED, 128, 128, 128)
    output_tokens: Lengths = Lengths(LengthKind.FIXED, 128, 128, 128)
    prompts: tuple[str, ...] = ()
    """A dataset: prompts used in turn (their own length) instead of generated ones."""
    seed: int = 0
    request_timeout_seconds: float = 120.0
    """A request with no byte for this long fails ("stalled")."""

    def document(self) -> dict[str, Any]:
        """The plan as plain JSON (enums by value, tuples as lists), as a benchmark's job carries
        it in its spec for the cluster to read back: the same document as the plan stored with
        its benchmark (tests/unit/test_shapes.py checks)."""
        return dataclasses.asdict(self, dict_factory=_json_fields)


def _json_fields(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    return {
        k: v.value if isinstance(v, enum.Enum) else list(v) if isinstance(v, tuple) else v
        for k, v in pairs
    }


class FailureKind(enum.StrEnum):
    HTTP_STATUS = "HTTP_STATUS"
    """The server answered with an error status (429, 500...)."""
    CONNECTION = "CONNECTION"
    """Could not connect, or the connection dropped before the stream ended."""
    TIMEOUT = "TIMEOUT"
    """No byte for `request_timeout_seconds`."""
    MALFORMED = "MALFORMED"
    """The stream broke the protocol (not SSE, not JSON, no [DONE], an error event)."""
    EMPTY = "EMPTY"
    """The stream ended without a token."""
    CANCELLED = "CANCELLED"
    """The run was cancelled while the request was in flight."""


@dataclass(frozen=True)
class RequestSample:
    index: int
    sent_at: float
    """Seconds from the run's start to when the request was sent."""
    ok: bool
    prompt_tokens: int
    """From the server's `usage` when it sent one, else the planned prompt length."""
    output_tokens: int
    """From the server's `usage` when it sent one, else the number of content chunks."""
    ttft: float | None = None
    """Seconds from sending the request to the first streamed token."""
    e2el: float | None = None
    """Seconds from sending the request to the end of the stream."""
    itl: tuple[float, ...] = ()
    """Seconds between consecutive streamed token chunks."""
    failure: FailureKind | None = None
    error: str | None = None
    """Why it failed, in a line (e.g. "HTTP 429: Too Many Requests")."""


@dataclass(frozen=True)
class LoadRun:
    samples: tuple[RequestSample, ...]
    duration_seconds: float
    """From the first request sent to the last one ended (the vLLM benchmark's duration)."""
    cancelled: bool = False


class EndpointUnreachable(Exception):
    """The endpoint did not answer at all before the run (refused, no such host, TLS...)."""

    def __init__(self, endpoint: str, reason: str) -> None:
        super().__init__(f"{endpoint} is unreachable: {reason}")
        self.endpoint = endpoint
        self.reason = reason


@dataclass(frozen=True)
class Summary:
    """One metric over a run, in seconds."""

    mean: float
    p50: float
    p90: float
    p99: float
    max: float
    count: int

    def __post_init__(self) -> None:
        assert all(math.isfinite(v) for v in (self.mean, self.p50, self.p90, self.p99, self.max))


@dataclass(frozen=True)
class LoadResult:
    """What a run measured (definitions in `domain.serving.metrics`)."""

    duration_seconds: float
    successful_requests: int
    failed_requests: int
    input_tokens: int
    output_tokens: int
    request_throughput: float
    input_throughput: float
    output_throughput: float
    total_token_throughput: float
    ttft: Summary | None
    tpot: Summary | None
    itl: Summary | None
    e2el: Summary | None
    failures: tuple[tuple[str, int], ...] = ()
    """Failed requests by reason (the most frequent first)."""


@dataclass(frozen=True)
class LoadProgress:
    """A running benchmark, as its progress subscription shows it."""

    elapsed_seconds: float
    requests_done: int
    requests_failed: int
    output_tokens: int
    ttft_mean: float | None
    output_throughput: float
