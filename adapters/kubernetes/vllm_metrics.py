"""What a vLLM server's /metrics (Prometheus text) says of its load, and the mean queue time of
the requests counted between two reads of it.

The names are vLLM's (vllm/v1/metrics/loggers.py, PrometheusStatLogger, as V0's
vllm/engine/metrics.py named them): the gauges `vllm:num_requests_running` (requests in the
model's batches) and `vllm:num_requests_waiting` (waiting to be scheduled), and the histogram
`vllm:request_queue_time_seconds` (time a request spent WAITING, observed as it finishes), each
labelled with model_name and engine, one label set per data-parallel engine: they are summed
over label sets. A histogram's _sum and _count only grow while its process lives, so the mean
wait of the requests counted between two reads is the growth of one over the growth of the other;
a count that fell is a restarted process, which has nothing to compare with.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families

RUNNING = "vllm:num_requests_running"
WAITING = "vllm:num_requests_waiting"
QUEUE_TIME = "vllm:request_queue_time_seconds"


@dataclass(frozen=True)
class QueueTotals:
    """A queue-time histogram's totals: seconds waited, and requests counted, so far."""

    seconds: float
    requests: float


@dataclass(frozen=True)
class ReplicaLoad:
    in_flight: int
    """Requests running or waiting."""
    queue: QueueTotals | None
    """None: the server reports no queue-time histogram."""


def parse(text: str) -> ReplicaLoad:
    """The load `text` reports. Raises ValueError for text that is not Prometheus text, has a
    value that is not a finite number at least 0 where one is read, or lacks vLLM's gauges."""
    wanted = {RUNNING, WAITING, f"{QUEUE_TIME}_sum", f"{QUEUE_TIME}_count"}
    try:
        samples = [
            (sample.name, float(sample.value))
            for family in text_string_to_metric_families(text)
            for sample in family.samples
            if sample.name in wanted
        ]
    except (ValueError, TypeError, IndexError, KeyError):
        raise ValueError("not Prometheus text") from None
    totals: dict[str, float] = {}
    for name, value in samples:
        if not (math.isfinite(value) and value >= 0):
            raise ValueError(f"{name}: not a count")
        totals[name] = totals.get(name, 0.0) + value
    if RUNNING not in totals or WAITING not in totals:
        raise ValueError(f"not vLLM's metrics: no {RUNNING} or {WAITING}")
    seconds, requests = totals.get(f"{QUEUE_TIME}_sum"), totals.get(f"{QUEUE_TIME}_count")
    queue = None if seconds is None or requests is None else QueueTotals(seconds, requests)
    return ReplicaLoad(round(totals[RUNNING] + totals[WAITING]), queue)


def mean_wait(readings: Iterable[tuple[QueueTotals | None, QueueTotals | None]]) -> float | None:
    """The mean queue time of the requests counted between (earlier, now) reads of replicas,
    over those with both and not restarted since; None when no request was counted there."""
    seconds = requests = 0.0
    for earlier, now in readings:
        if earlier is None or now is None:
            continue
        if now.requests < earlier.requests or now.seconds < earlier.seconds:
            continue  # restarted: its totals began again
        seconds += now.seconds - earlier.seconds
        requests += now.requests - earlier.requests
    return seconds / requests if requests > 0 else None
