"""How good were the estimates? Compared per job with what then happened.

For each job that started, the estimate made at its submission is compared with its actual start
(the figure users care about: "when will my job run"); for each that finished, the estimate made
at its admission is compared with its actual end. Reported as the median and 95th percentile of
the absolute error, and the share of starts estimated within ten minutes; and, for the start
windows shown at submission, the share of starts that fell inside them (their coverage, to set
beside the confidence they stated) and their median width.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import timedelta

from domain.model.job import Job

WITHIN = timedelta(minutes=10)


def percentile(values: Sequence[float], q: float) -> float | None:
    """Nearest-rank percentile (q in 0..100) of `values`; None when there are none."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


@dataclass(frozen=True)
class Coverage:
    confidence: float
    jobs: int
    """Jobs that started and were shown a window at this confidence at submission."""
    inside: float
    """Share (0..1) of them whose start fell inside it: calibrated when close to `confidence`."""
    median_width_seconds: float | None
    """Median width of those windows (None when most had no later bound)."""


@dataclass(frozen=True)
class Accuracy:
    jobs: int
    """Jobs whose start could be compared with their submission estimate."""
    start_p50_seconds: float | None
    start_p95_seconds: float | None
    start_within_10_minutes: float | None
    """Share (0..1) of those whose start was estimated within ten minutes."""
    finished: int
    end_p50_seconds: float | None
    end_p95_seconds: float | None
    coverage: tuple[Coverage, ...] = ()
    """Per confidence shown, how often the start fell in the window shown at submission."""

    @classmethod
    def of_errors(cls, start_errors: Sequence[float], end_errors: Sequence[float]) -> Accuracy:
        within = WITHIN.total_seconds()
        return cls(
            jobs=len(start_errors),
            start_p50_seconds=percentile(start_errors, 50),
            start_p95_seconds=percentile(start_errors, 95),
            start_within_10_minutes=(
                sum(1 for e in start_errors if e <= within) / len(start_errors)
                if start_errors
                else None
            ),
            finished=len(end_errors),
            end_p50_seconds=percentile(end_errors, 50),
            end_p95_seconds=percentile(end_errors, 95),
        )


def measure(jobs: Iterable[Job]) -> Accuracy:
    starts: list[float] = []
    ends: list[float] = []
    shown: dict[float, list[tuple[bool, float]]] = {}
    for job in jobs:
        submitted = job.submission_estimate
        if submitted is not None and submitted.start is not None and job.actual_start:
            starts.append(abs((job.actual_start - submitted.start).total_seconds()))
        if submitted is not None and job.actual_start:
            for confidence, earliest, latest in submitted.windows:
                inside = earliest <= job.actual_start and (
                    latest is None or job.actual_start <= latest
                )
                width = math.inf if latest is None else (latest - earliest).total_seconds()
                shown.setdefault(confidence, []).append((inside, width))
        admitted = job.admission_estimate
        if admitted is not None and admitted.end is not None and job.actual_end:
            ends.append(abs((job.actual_end - admitted.end).total_seconds()))
    accuracy = Accuracy.of_errors(starts, ends)
    coverage = []
    for confidence in sorted(shown):
        seen = shown[confidence]
        widths = sorted(width for _, width in seen)
        median = widths[(len(widths) - 1) // 2]
        coverage.append(
            Coverage(
                confidence,
                len(seen),
                sum(1 for inside, _ in seen if inside) / len(seen),
                median if math.isfinite(median) else None,
            )
        )
    return replace(accuracy, coverage=tuple(coverage))
