"""How long a job is expected to run, learned from what the cluster's jobs really did.

- A job with the user's estimate runs for that estimate times the median ratio actual /
  estimated of comparable finished runs: users' estimates are biased (mostly over-stated, like
  time limits) and rounded, and bias costs far more than noise.
- A job without one runs for the mean run time of comparable finished runs.
- Nothing comparable: the estimate as given, else a default for the job type. SERVICE jobs run
  until stopped (unless a max_duration ends them).

"Comparable" is a fallback chain, most specific first: the same tenant, job name, GPU type and
GPU count; the same tenant and job name; the tenant's jobs of that type; the cluster's jobs of
that type. Each level's figure is pulled toward the next one's by `PRIOR_RUNS` pseudo-runs
(shrinkage): two runs of a name move its estimate half way, twenty nearly all of it.

Why these statistics (measured by benchmarks/replay.py on the Philly trace; see the README):
- Run times without an estimate: the mean. A wait is a sum of run times, and a sum follows the
  mean; the median of finished runs is biased short (early on, only short jobs have finished)
  and estimated starts a day early at the median.
- Ratios: the median. A ratio's tail is the few estimates far below the run time (a limit
  mistyped, a job that ran away): a mean of ratios is ruled by them and estimated starts days
  late; the median is not.
- Runs still going are not counted (a Kaplan-Meier curve with them censored, tried, made every
  duration longer and every start later), and a running job's remaining time is not drawn
  from the runs that lasted as long: the replay gives each job one duration, and the first GPUs
  to come free are those of the earliest of many ends, not of each job's own expectation; both
  made the estimated starts later by days. A job past its expected duration runs on for
  `OUTLIVED` of its age (or of its expectation), so it is never shown ending "now".

Start-up is the time from admission to running (a real cluster's image pulls and container
starts, a simulated cluster's configured start-up), the median per job type of the cluster's
latest attempts: a job admitted at t runs from t + start-up, and its GPUs are held meanwhile.

Times here are job time: on a simulated cluster that runs `time_scale` simulated seconds per
real second, a run measured in real seconds counts `time_scale` times as long.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from domain.model.job import Job, JobType, RunRecord

DEFAULT_SECONDS: Mapping[JobType, float | None] = {
    JobType.BATCH: 600.0,
    JobType.TRAINING: 3600.0,
    JobType.SERVICE: None,
}
PRIOR_RUNS = 2.0
"""Pseudo-runs of the next level's figure added to a level's own (shrinkage)."""
OUTLIVED = 0.25
"""A job past its expected duration runs on for this share of its age or of its expectation,
whichever is longer (and at least `MIN_REMAINING`)."""
MIN_REMAINING = 60.0
RATIO_BOUNDS = (0.01, 100.0)
"""actual / estimated is clipped to this range: one typo of an estimate must not rule a key."""

Level = tuple[Hashable, ...]


def levels(job: Job) -> tuple[Level, ...]:
    """The fallback chain of `job`, most specific first."""
    gpu_type = job.resources.gpu_type if job.resources.gpu_count else None
    return _levels(job.tenant_id, job.name, job.job_type, gpu_type, job.resources.total_gpus)


def _levels(
    tenant: Hashable, name: str, job_type: JobType, gpu_type: str | None, gpus: int
) -> tuple[Level, ...]:
    return (
        ("name-shape", tenant, name, gpu_type, gpus),
        ("name", tenant, name),
        ("tenant", tenant, job_type),
        ("cluster", job_type),
    )


class History:
    """Finished runs of a cluster, grouped by every level they belong to: the ratio actual /
    estimated where the run had an estimate, its run time always. Attempts that failed are
    kept apart (`failure`): how often an attempt fails, and how long a failing one runs."""

    def __init__(self, runs: Iterable[RunRecord] = ()) -> None:
        self._seconds: dict[Level, list[float]] = {}
        self._ratios: dict[Level, list[float]] = {}
        self._failed: dict[Level, list[float]] = {}
        """Per level, the run time of each attempt that failed."""
        self._outcomes: dict[Level, list[float]] = {}
        """Per level, 1.0 for each attempt that failed, 0.0 for each that succeeded."""
        self._figures: dict[tuple[str, Level], tuple[int, float]] = {}
        low, high = RATIO_BOUNDS
        for run in runs:
            if not run.finished:
                continue
            chain = _levels(run.tenant_id, run.name, run.job_type, run.gpu_type, run.gpu_count)
            if run.failed:
                for level in chain:
                    self._failed.setdefault(level, []).append(run.seconds)
                    self._outcomes.setdefault(level, []).append(1.0)
                continue
            ratio = (
                min(high, max(low, run.seconds / run.estimated))
                if run.estimated is not None and run.estimated > 0
                else None
            )
            for level in chain:
                self._seconds.setdefault(level, []).append(run.seconds)
                self._outcomes.setdefault(level, []).append(0.0)
                if ratio is not None:
                    self._ratios.setdefault(level, []).append(ratio)

    def ratio(self, job: Job) -> float:
        """The learned actual / estimated of `job`; 1.0 knowing nothing."""
        return self._shrunk(RATIOS, levels(job), 1.0)

    def seconds(self, job: Job, default: float) -> float:
        """The learned run time of `job`; `default` knowing nothing."""
        return self._shrunk(SECONDS, levels(job), default)

    def failure(self, job: Job) -> tuple[float, float] | None:
        """How likely an attempt of `job` is to fail, and how long a failing one runs (the mean
        of comparable failed attempts, shrunk like run times); None if no comparable attempt
        ever failed. The chance is the share of comparable attempts that failed, each level
        shrunk toward the next and the cluster's toward none."""
        chain = levels(job)
        if not any(level in self._failed for level in chain):
            return None
        chance = self._shrunk(OUTCOMES, chain, 0.0)
        seconds = self._shrunk(FAILED, tuple(lv for lv in chain if lv in self._failed), 0.0)
        return chance, seconds

    def knows(self, job: Job, *, ratio: bool) -> bool:
        groups = self._ratios if ratio else self._seconds
        return any(level in groups for level in levels(job))

    def _shrunk(self, group: str, chain: tuple[Level, ...], prior: float) -> float:
        value = prior
        for level in reversed(chain):
            figure = self._figure(group, level)
            if figure is not None:
                n, stat = figure
                value = (n * stat + PRIOR_RUNS * value) / (n + PRIOR_RUNS)
        return value

    def _figure(self, group: str, level: Level) -> tuple[int, float] | None:
        """(runs, statistic) of one level of one group, computed once."""
        found = self._figures.get((group, level))
        if found is None:
            values = {
                RATIOS: self._ratios,
                SECONDS: self._seconds,
                FAILED: self._failed,
                OUTCOMES: self._outcomes,
            }[group].get(level)
            if not values:
                return None
            stat: Callable[[Sequence[float]], float] = (
                statistics.median if group == RATIOS else statistics.fmean
            )
            found = self._figures[(group, level)] = (len(values), stat(values))
        return found


RATIOS, SECONDS, FAILED, OUTCOMES = "ratios", "seconds", "failed", "outcomes"
"""The groups `History` learns a figure of: the median ratio, the mean run time of succeeded
attempts, the mean run time of failed ones, the share of attempts that failed."""


def startup_medians(samples: Iterable[tuple[JobType, float]]) -> dict[JobType, float]:
    grouped: dict[JobType, list[float]] = {}
    for job_type, seconds in samples:
        grouped.setdefault(job_type, []).append(seconds)
    return {job_type: statistics.median(values) for job_type, values in grouped.items()}


@dataclass(frozen=True)
class Durations:
    history: History = field(default_factory=History)
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
            return float(job.estimated_duration_seconds) * self.history.ratio(job)
        default = self.defaults.get(job.job_type)
        if default is None:
            return None
        return self.history.seconds(job, default)

    def holding(self, job: Job) -> float | None:
        """Seconds an attempt of `job` is expected to hold its GPUs: its run time if it
        succeeds, weighed with how often comparable attempts failed and how long a failing one
        ran (`History.failure`); a failed attempt gives its GPUs back then, and its retry
        queues again behind what waits (the cluster's record, not a constant: with no failure
        on record it is the run time)."""
        seconds = self.expected(job)
        if seconds is None or job.job_type is JobType.SERVICE:
            return seconds
        failure = self.history.failure(job)
        if failure is None:
            return seconds
        chance, failing = failure
        return (1.0 - chance) * seconds + chance * min(failing, seconds)

    def holding_total(self, job: Job, elapsed: float) -> float | None:
        """`holding` given the attempt has run `elapsed` seconds: one that has outlived how long
        a failing attempt runs is expected to succeed (`expected_total`)."""
        held = self.holding(job)
        if held is None:
            return None
        failure = self.history.failure(job)
        if failure is not None and elapsed >= failure[1]:
            return self.expected_total(job, elapsed)
        if elapsed < held:
            return held
        return elapsed + max(MIN_REMAINING, OUTLIVED * held, OUTLIVED * elapsed)

    def expected_total(self, job: Job, elapsed: float) -> float | None:
        """Seconds the job is expected to run in all, given it has run `elapsed` seconds: its
        expectation, or, once past it, a share of its age more."""
        seconds = self.expected(job)
        if seconds is None or elapsed < seconds:
            return seconds
        return elapsed + max(MIN_REMAINING, OUTLIVED * seconds, OUTLIVED * elapsed)

    def source(self, job: Job) -> str:
        """Where `expected` got its answer: estimate, corrected estimate (by the ratio of past
        runs), history, default or service."""
        if job.job_type is JobType.SERVICE:
            return "service"
        if job.estimated_duration_seconds is not None:
            return "corrected estimate" if self.history.knows(job, ratio=True) else "estimate"
        if self.history.knows(job, ratio=False):
            return "history"
        return "default"
