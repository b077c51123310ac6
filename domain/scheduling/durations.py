"""How long a job is expected to run: its own estimate, else what its past runs took, else a
default for its type. SERVICE jobs run until stopped (unless a max_duration ends them).

History is the median run time of COMPLETED jobs with the same name, tenant and GPU type: the
median, because one run killed early or stuck late should not drag every later estimate.

Start-up is the time from admission to running (a real cluster's image pulls and container
starts, a simulated cluster's configured start-up), the median per job type of the cluster's
latest attempts: a job admitted at t runs from t + start-up, and its GPUs are held meanwhile.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from domain.model.ids import TenantId
from domain.model.job import Job, JobType

DEFAULT_SECONDS: Mapping[JobType, float | None] = {
    JobType.BATCH: 600.0,
    JobType.TRAINING: 3600.0,
    JobType.SERVICE: None,
}

HistoryKey = tuple[str, TenantId, str | None]


def history_key(job: Job) -> HistoryKey:
    return (job.name, job.tenant_id, job.resources.gpu_type if job.resources.gpu_count else None)


def medians(samples: Iterable[tuple[HistoryKey, float]]) -> dict[HistoryKey, float]:
    grouped: dict[HistoryKey, list[float]] = {}
    for key, seconds in samples:
        grouped.setdefault(key, []).append(seconds)
    return {key: statistics.median(values) for key, values in grouped.items()}


def startup_medians(samples: Iterable[tuple[JobType, float]]) -> dict[JobType, float]:
    grouped: dict[JobType, list[float]] = {}
    for job_type, seconds in samples:
        grouped.setdefault(job_type, []).append(seconds)
    return {job_type: statistics.median(values) for job_type, values in grouped.items()}


@dataclass(frozen=True)
class Durations:
    history: Mapping[HistoryKey, float] = field(default_factory=dict)
    defaults: Mapping[JobType, float | None] = field(default_factory=lambda: dict(DEFAULT_SECONDS))
    startup: Mapping[JobType, float] = field(default_factory=dict)
    """Seconds from admission to running, learned per job type (none known: 0)."""

    def startup_seconds(self, job: Job) -> float:
        return self.startup.get(job.job_type, 0.0)

    def expected(self, job: Job) -> float | None:
        """Seconds the job is expected to run; None when it runs until stopped."""
        if job.job_type is JobType.SERVICE:
            return None if job.max_duration_seconds is None else float(job.max_duration_seconds)
        if job.estimated_duration_seconds is not None:
            return float(job.estimated_duration_seconds)
        learned = self.history.get(history_key(job))
        if learned is not None:
            return learned
        return self.defaults.get(job.job_type)

    def source(self, job: Job) -> str:
        """Where `expected` got its answer: estimate, history, default or service."""
        if job.job_type is JobType.SERVICE:
            return "service"
        if job.estimated_duration_seconds is not None:
            return "estimate"
        if history_key(job) in self.history:
            return "history"
        return "default"
