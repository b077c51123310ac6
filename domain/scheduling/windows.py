"""Start windows at a stated confidence, calibrated on the cluster's own record.

A single start time cannot be promised: durations are uncertain, and under BestEffortFIFO a job
submitted later that fits sooner starts first. What can be promised is an interval that holds
the start with a stated probability. This is split conformal prediction on the cluster's
recent jobs: for each job that has started, the wait estimated when it was submitted and the
wait it had give a score, log((actual + PAD) / (estimated + PAD)); a new estimate of wait w is
widened by the scores' quantiles, [(w + PAD) e^lo - PAD, (w + PAD) e^hi - PAD]. Whatever made
past estimates miss (durations, overtaking arrivals, start-up, failures) is in the scores, so
the coverage is the stated one as long as the cluster behaves as it did recently; the width is
what the estimates' errors really were, not a bound on every wait.

Jobs estimated to start at once and jobs estimated to wait miss differently, so they are
calibrated apart, and so are jobs wider than a node (a wide job waits for whole nodes, which
narrower jobs submitted later take first; among the rest, its misses are outliers): Mondrian
conformal prediction, each class with its own scores, a wide class with too few scores of its
own using all jobs'. (Classes by the estimated wait were tried too and left out: on the replay
of ../shared/data they lowered the coverage where the queue was building.) With fewer than
`MIN_SCORES` scores there is no window (None): not enough record to promise anything. A window
whose upper quantile the record cannot support (too few scores for that confidence) has no
latest start (None: "no later bound"). The window need not hold the point estimate: where past
estimates were early, it lies after it.

A record of started jobs lags a queue that is building: the jobs that wait longest have not
started yet. A job still waiting past the start estimated for it is in the record too
(`Outcome.censored`): it has missed by at least that much and, in a building queue, by more
than the jobs that started, so it ranks above them; once more of the record is late than a
window leaves out, the window has no later bound.

What this cannot do: follow an estimate whose bias turns faster than jobs start. On the replay
of ../shared/data (default mode) the ranks of real starts among the record's scores are far
from uniform by quarter: in the first half a third of the jobs start earlier than all but a
tenth of the record says, in the second half a quarter start later than all but a tenth. The
record learns of it one wait later, days. Two remedies were tried there and left out, at 80 %:
- adaptive conformal inference (Gibbs and Candès 2021, with their step of 0.005; each side's
  tail moved by the starts that fell before or after the window shown at submission, a job
  still waiting past its window's end counted as a late miss at once): 73.0 % of all jobs
  against 68.2 % here, but by quarter 69.6 / 63.5 / 60.4 / 98.4 % and a median width of
  206 h against the past waits' bound of 82 h; with one run per job 75.3 % against 85.6 %,
  its last quarter 38 %. The feedback comes a wait late, so the level overshoots.
- Kaplan-Meier over the latest 500 submissions, those still waiting censored at their wait so
  far (censoring by the clock, independent of the score if the cluster did not change): 60.5 %
  (default) and 79.9 % (one run per job), wide jobs 17 %.
- the waiting jobs' latest re-estimates taken as their starts (the recompute knows what
  happened since they were submitted): 59.1 % (default) and 79.0 %; a re-estimate has not yet
  met the error still ahead of it, so these scores are too narrow.
Sampling futures (durations, failures, arrivals) would need several replays per recompute;
the cost aim (a recompute within 1.5x) leaves room for none.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

PAD = timedelta(minutes=10)
"""Added to both waits: a start a minute late on an estimate of "now" is not an infinite miss."""
MIN_SCORES = 10
RECENT = 500
"""The latest scores kept per stratum: the record follows the cluster as it changes."""
DEFAULT_CONFIDENCE = 0.8


@dataclass(frozen=True)
class Window:
    earliest: datetime
    latest: datetime | None
    """None: the record cannot bound it at this confidence."""
    confidence: float


@dataclass(frozen=True)
class Outcome:
    """One job's record: when it was submitted, its start as estimated then, its real start."""

    submitted: datetime
    estimated: datetime
    actual: datetime
    wide: bool = False
    """It asked more than one node (a pod set over several nodes)."""
    censored: bool = False
    """It has not started: `actual` is now, a bound its start is after."""


Stratum = tuple[bool, bool | None]
"""(estimated to wait, wide or None: any width)"""


def _strata(waits: bool, wide: bool) -> tuple[Stratum, ...]:
    """The classes a job falls in, the narrowest first."""
    return ((waits, wide), (waits, None))


def _score(outcome: Outcome) -> float:
    pad = PAD.total_seconds()
    estimated = max(0.0, (outcome.estimated - outcome.submitted).total_seconds())
    actual = max(0.0, (outcome.actual - outcome.submitted).total_seconds())
    return math.log((actual + pad) / (estimated + pad))


def _waits(outcome: Outcome) -> bool:
    return outcome.estimated > outcome.submitted


class Calibration:
    """The cluster's recent record, ready to turn point estimates into windows."""

    def __init__(self, record: Iterable[Outcome], floor: timedelta = timedelta(0)) -> None:
        """`record` oldest first; only the latest `RECENT` of each stratum count. `floor`: no
        window is narrower (the spread of the cluster's start-up times, `startup_spread`: a
        start cannot be promised more closely than pods start)."""
        self.floor = floor
        scores: dict[Stratum, list[tuple[float, bool]]] = {}
        for outcome in record:
            score = (_score(outcome), outcome.censored)
            waits = _waits(outcome)
            for stratum in _strata(waits, outcome.wide):
                scores.setdefault(stratum, []).append(score)
        self._scores = {key: sorted(found[-RECENT:]) for key, found in scores.items()}

    def size(self, *, waits: bool) -> int:
        return len(self._scores.get((waits, None), ()))

    def window(
        self,
        now: datetime,
        start: datetime,
        confidence: float = DEFAULT_CONFIDENCE,
        *,
        wide: bool = False,
    ) -> Window | None:
        """The interval that holds a start estimated (at `now`) at `start` with probability
        `confidence` (0 < confidence < 1), or None without enough record: from the scores of
        the narrowest class of the estimate (`_strata`) with scores enough to bound it on both
        sides at that confidence (else the widest), never narrower than `floor`."""
        if not 0.0 < confidence < 1.0:
            raise ValueError("confidence must be between 0 and 1, exclusive")
        pad = PAD.total_seconds()
        wait = max(0.0, (start - now).total_seconds()) + pad
        ordered: list[tuple[float, bool]] = []
        for stratum in _strata(start > now, wide):
            ordered = self._scores.get(stratum, [])
            if _bounds_both(len(ordered), confidence):
                break
        bounds = _censored_quantiles(ordered, confidence)
        if bounds is None:
            return None
        low, high = bounds

        def at(score: float) -> datetime:
            return now + timedelta(seconds=max(0.0, wait * math.exp(score) - pad))

        earliest = now if low is None else at(low)
        latest = None if high is None else at(high)
        if latest is not None and latest - earliest < self.floor:
            short = self.floor - (latest - earliest)
            earliest = max(now, earliest - short / 2)
            latest = earliest + self.floor
        return Window(earliest, latest, confidence)


def late_grace(floor: timedelta = timedelta(0)) -> timedelta:
    """How far past the start estimated for it a job still waiting must be before it counts
    as late (`Outcome.censored`): `PAD`, the scale below which the scores take a miss as small
    (a start 10 minutes late on an estimate of "now" scores log 2), or the start-up spread
    (`floor`) if wider. A job a moment past its estimate is no evidence of a miss yet: counted
    at once, it ranked above every score (`_censored_quantiles`) and, on a short record, left
    the window shown at submission with no later bound (seen in the API tests: a job 5 ms past
    its estimate on a record of 12)."""
    return max(PAD, floor)


def startup_spread(seconds: Iterable[float]) -> timedelta:
    """How widely start-up times (admission to running) spread: their 10th to 90th
    percentile, the least a window can be wide (nothing known: 0)."""
    ordered = sorted(seconds)
    if len(ordered) < 2:
        return timedelta(0)
    low = ordered[math.floor(0.1 * (len(ordered) - 1))]
    high = ordered[math.ceil(0.9 * (len(ordered) - 1))]
    return timedelta(seconds=high - low)


def _bounds_both(n: int, confidence: float) -> bool:
    """Whether `n` scores give a window at `confidence` both its bounds (`_quantiles`)."""
    tail = (1.0 - confidence) / 2
    return n >= MIN_SCORES and math.ceil((n + 1) * (1.0 - tail)) <= n


def _censored_quantiles(
    ordered: list[tuple[float, bool]], confidence: float
) -> tuple[float | None, float | None] | None:
    """`_quantiles` of scores some of which are censored ((score, censored) pairs): a
    censored score is only known to be at least what it says, and a job still waiting past
    its estimate in a building queue may wait far longer, so it ranks above every observed
    score; where the upper rank falls among them there is no upper bound. (Kaplan-Meier,
    which takes censoring to be independent of the score, was tried: on the replay of
    ../shared/data it covered less, 60.9 % against 68.0 % at 80 %, for the jobs still waiting
    are the late ones.) None with fewer than `MIN_SCORES` scores."""
    ranked = sorted((math.inf if censored else score, score) for score, censored in ordered)
    bounds = _quantiles([rank for rank, _ in ranked], confidence)
    if bounds is None:
        return None
    low, high = bounds
    if low is not None and math.isinf(low):  # most are late: at least the least of them
        low = min(score for rank, score in ranked if math.isinf(rank))
    return low, None if high is None or math.isinf(high) else high


def _quantiles(ordered: list[float], confidence: float) -> tuple[float | None, float | None] | None:
    """The split-conformal bounds of sorted `ordered` at `confidence` (None: no bound on that
    side, too few values for it), or None with fewer than `MIN_SCORES` values."""
    n = len(ordered)
    if n < MIN_SCORES:
        return None
    tail = (1.0 - confidence) / 2
    low_rank = math.floor((n + 1) * tail)  # 1-based; 0: no lower bound
    high_rank = math.ceil((n + 1) * (1.0 - tail))  # n + 1: no upper bound
    return (
        ordered[low_rank - 1] if low_rank >= 1 else None,
        ordered[high_rank - 1] if high_rank <= n else None,
    )


def past_waits_window(
    now: datetime, record: Iterable[Outcome], confidence: float = DEFAULT_CONFIDENCE
) -> Window | None:
    """The baseline (QBETS-style): the quantiles of the cluster's recent waits, whatever the
    estimate says."""
    waits = sorted([(o.actual - o.submitted).total_seconds() for o in record][-RECENT:])
    bounds = _quantiles(waits, confidence)
    if bounds is None:
        return None
    low, high = bounds
    earliest = now if low is None else now + timedelta(seconds=max(0.0, low))
    latest = None if high is None else now + timedelta(seconds=max(0.0, high))
    return Window(earliest, latest, confidence)
