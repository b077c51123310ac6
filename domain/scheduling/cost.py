"""What work costs: GPU-hours at the cluster's hourly price per GPU type.

Prices: the operator's price changes on the cluster (`GpuPrice`, a history: a change applies
from its moment on), over the cluster's settings at registration (`gpu_hourly_prices`), over
list prices of common cloud GPUs (on-demand rates of the large clouds in 2026, rounded: a
starting point for an operator who sets none). CPU-only work is priced per core-hour.

Estimates are duration times today's price, so a job with no expected end (a service) has no
estimated cost. What a run did cost (`PriceBook.charge`) is metered per second: the GPUs it
held times the price in force at each moment of the run.
"""

from __future__ import annotations

import bisect
import itertools
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal

from domain.model.cluster import GpuPrice
from domain.model.ids import ClusterId
from domain.model.job import (
    BUDGET_WARNING_SHARE,
    BudgetNotice,
    Job,
    Resources,
    Usage,
    usage_ended,
    usage_under_way,
)
from domain.model.timeline import Row, Segment

LIST_PRICES: Mapping[str, Decimal] = {
    "nvidia-h100-sxm": Decimal("4.00"),
    "nvidia-h100": Decimal("4.00"),
    "nvidia-a100-80gb": Decimal("2.50"),
    "nvidia-a100-40gb": Decimal("1.80"),
    "nvidia-l40s": Decimal("1.50"),
    "nvidia-a10g": Decimal("1.00"),
    "nvidia-tesla-t4": Decimal("0.35"),
    "amd-mi300x": Decimal("3.50"),
}
UNKNOWN_GPU_HOURLY = Decimal("2.00")
CPU_CORE_HOURLY = Decimal("0.04")
CENT = Decimal("0.01")
METERED = Decimal("0.0001")
"""A metered run's cost is kept to a hundredth of a cent (the job's `actual_cost` column has
4 decimals): a second of an H100 at list price is 0.0011."""
HOUR = Decimal(3600)
HOUR_SPAN = timedelta(hours=1)


def base_prices(settings_prices: object) -> dict[str, Decimal]:
    """List prices with a cluster's `gpu_hourly_prices` setting over them."""
    table = dict(LIST_PRICES)
    if isinstance(settings_prices, Mapping):
        for gpu_type, value in settings_prices.items():
            table[str(gpu_type)] = Decimal(str(value))
    return table


def hourly_price(resources: Resources, prices: Mapping[str, object] | None = None) -> Decimal:
    table = {**LIST_PRICES, **{k: Decimal(str(v)) for k, v in (prices or {}).items()}}
    if resources.total_gpus and resources.gpu_type:  # any pod set's GPUs (a job's are one type)
        per_gpu = table.get(resources.gpu_type, UNKNOWN_GPU_HOURLY)
        return per_gpu * resources.total_gpus
    return CPU_CORE_HOURLY * Decimal(str(resources.total_cpu_cores))


def estimate_cost(
    resources: Resources, seconds: float | None, prices: Mapping[str, object] | None = None
) -> Decimal | None:
    if seconds is None:
        return None
    hours = Decimal(str(seconds)) / HOUR
    return (hourly_price(resources, prices) * hours).quantize(CENT, rounding=ROUND_HALF_UP)


@dataclass(frozen=True)
class PriceNow:
    """A GPU type's price in force now, and when it was set (None: the base price)."""

    gpu_type: str
    hourly: Decimal
    since: datetime | None


PRICES_SETTING = "gpu_hourly_prices"
"""The cluster setting of its prices at registration, by GPU type (over the list prices)."""


class PriceBook:
    """One cluster's prices over time: its base prices, and the changes set since."""

    @classmethod
    def of(cls, settings: Mapping[str, object], changes: Sequence[GpuPrice]) -> PriceBook:
        """The book of a cluster with these settings and price changes."""
        return cls(settings.get(PRICES_SETTING), changes)

    def __init__(self, settings_prices: object = None, changes: Sequence[GpuPrice] = ()) -> None:
        self._base = base_prices(settings_prices)
        self._changes: dict[str, list[GpuPrice]] = defaultdict(list)
        for change in sorted(changes, key=lambda c: c.since):
            self._changes[change.gpu_type].append(change)
        self._times = {t: [c.since for c in cs] for t, cs in self._changes.items()}

    def hourly(self, gpu_type: str | None, at: datetime) -> Decimal:
        """The price of one GPU of `gpu_type` for an hour at `at`."""
        if gpu_type is None:
            return UNKNOWN_GPU_HOURLY
        times = self._times.get(gpu_type)
        if times:
            index = bisect.bisect_right(times, at) - 1
            if index >= 0:
                return self._changes[gpu_type][index].hourly
        return self._base.get(gpu_type, UNKNOWN_GPU_HOURLY)

    def table(self, at: datetime) -> dict[str, Decimal]:
        """Every known GPU type's price at `at` (what estimates use)."""
        return {gpu_type: self.hourly(gpu_type, at) for gpu_type in {*self._base, *self._changes}}

    def now(self, gpu_types: Iterable[str], at: datetime) -> list[PriceNow]:
        """The price of each of `gpu_types` and of every type a price was set for, at `at`."""
        listed = sorted({*gpu_types, *self._changes})
        return [PriceNow(t, self.hourly(t, at), self._since(t, at)) for t in listed]

    def _since(self, gpu_type: str, at: datetime) -> datetime | None:
        times = self._times.get(gpu_type) or []
        index = bisect.bisect_right(times, at) - 1
        return times[index] if index >= 0 else None

    def charge(self, usage: Usage, until: datetime | None = None) -> Decimal:
        """What `usage` cost (up to `until`, for a run still going): per second, at the price in
        force at each moment."""
        end = usage.ended_at if until is None else until
        start = usage.started_at
        if end <= start:
            return Decimal(0).quantize(METERED)
        if not usage.gpus:
            seconds = Decimal(str((end - start).total_seconds()))
            cost = CPU_CORE_HOURLY * Decimal(str(usage.cpu_cores)) * seconds / HOUR
            return cost.quantize(METERED, rounding=ROUND_HALF_UP)
        total = Decimal(0)
        changes = [
            c.since for c in self._changes.get(usage.gpu_type or "", ()) if start < c.since < end
        ]
        edges = [start, *changes, end]
        for left, right in itertools.pairwise(edges):
            seconds = Decimal(str((right - left).total_seconds()))
            total += self.hourly(usage.gpu_type, left) * seconds
        return (total * usage.gpus / HOUR).quantize(METERED, rounding=ROUND_HALF_UP)


def ended_runs(jobs: Iterable[Job]) -> list[Usage]:
    """The runs that the recorded changes of `jobs` end (`usage_ended`)."""
    return [u for job in jobs for c in job.changes if (u := usage_ended(c)) is not None]


def meter(job: Job, books: Mapping[ClusterId, PriceBook]) -> list[tuple[Usage, Decimal]]:
    """Price each run that `job`'s recorded changes end, a piece per UTC day it ran on (what the
    usage ledger keeps, so spend per day is exact), add it to the job's `actual_cost`, and
    say it on the change that ended it (`JobChanged.metered`), with the job's new total on that
    change's snapshot and on those after it: the event a commit writes carries what the row
    does. The unit of work calls this before it writes the job, in the same transaction."""
    metered: list[tuple[Usage, Decimal]] = []
    for index, change in enumerate(job.changes):
        usage = usage_ended(change)
        if usage is None or change.metered is not None:  # (metered by a commit that failed)
            continue
        book = books[usage.cluster_id]
        pieces = [(piece, book.charge(piece)) for piece in usage.by_day()]
        cost = sum((c for _, c in pieces), Decimal(0)).quantize(METERED)
        job.actual_cost = ((job.actual_cost or Decimal(0)) + cost).quantize(METERED)
        job.changes[index] = replace(change, metered=cost)
        for later in job.changes[index:]:
            later.job.actual_cost = job.actual_cost
        metered.extend(pieces)
    return metered


def cost_so_far(job: Job, book: PriceBook, now: datetime) -> Decimal | None:
    """What `job` has cost by `now`: its metered runs, and the run under way up to now (worked
    out when asked, never stored: only a run's end is metered and written)."""
    running = usage_under_way(job, now)
    if running is None:
        return job.actual_cost
    return (job.actual_cost or Decimal(0)) + book.charge(running)


def budget_at_submission(job: Job, book: PriceBook) -> BudgetNotice | None:
    """A notice when `job` is expected to cost more than its budget: the run time its user gave
    (`estimated_duration_seconds`, at most `max_duration_seconds`, or the maximum alone) at the
    cluster's prices when it is submitted. None within the budget, or with no run time given."""
    limit = job.budget_limit
    given = [s for s in (job.estimated_duration_seconds, job.max_duration_seconds) if s]
    if limit is None or not given:
        return None
    prices = book.table(job.created_at)
    expected = estimate_cost(job.resources, float(min(given)), prices)
    if expected is None or expected <= limit:
        return None
    return BudgetNotice(100, expected, limit, job.budget_action, expected=True)


def budget_reached(job: Job, cost: Decimal) -> BudgetNotice | None:
    """The share of its budget `job`'s cost `cost` has newly reached (80, then 100 %), if any."""
    limit = job.budget_limit
    if limit is None:
        return None
    share = 100 if cost >= limit else BUDGET_WARNING_SHARE if cost * 100 >= limit * 80 else 0
    if share <= job.budget_alerted:
        return None
    return BudgetNotice(share, cost, limit, job.budget_action)


@dataclass(frozen=True)
class SpendHour:
    """What running and waiting work is expected to cost in one hour from `start`: as
    scheduled, and the least and most it may, were each waiting job to start anywhere in its
    start window (at the window's ends or as estimated)."""

    start: datetime
    cost: Decimal
    low: Decimal
    high: Decimal


@dataclass(frozen=True)
class ProjectSpend:
    project_id: str
    cost: Decimal
    low: Decimal
    high: Decimal


@dataclass(frozen=True)
class CostForecast:
    start: datetime
    end: datetime
    hours: tuple[SpendHour, ...]
    projects: tuple[ProjectSpend, ...]


FORECAST_KINDS = frozenset({"RUNNING", "ESTIMATED"})


def forecast_spend(
    rows: Sequence[Row],
    segments: Iterable[Segment],
    prices: Mapping[str, Decimal],
    now: datetime,
    hours: int,
) -> CostForecast:
    """What the work on a schedule is expected to cost, by hour from the hour of `now`, for
    `hours` hours, and by project over them: each running or estimated segment of `segments`
    (those of a schedule the caller may see) holds its GPUs (its rows) from its start (from
    now, for what runs) to its end (to the forecast's end, for what runs until stopped), at
    today's prices. A waiting job's start window shifts it whole: the low and high are the
    least and most of its placements at the window's ends and as estimated. GPU-less work is
    not on the schedule and not forecast. Summed in floats (a forecast, not a bill: rounded to
    the cent once, at the end), over the hours each segment touches only: 11,000 segments of a
    day on average took 0.1 s for 24 hours and 1.0 s for two weeks on this machine, run off the
    event loop (`Compute`)."""
    first = now.replace(minute=0, second=0, microsecond=0)
    end = first + hours * HOUR_SPAN
    origin, now_at, end_at = first.timestamp(), now.timestamp(), end.timestamp()
    unknown = float(UNKNOWN_GPU_HOURLY)
    rate = {row.id: float(prices.get(row.gpu_type or "", unknown)) for row in rows}
    scheduled, low, high = [0.0] * hours, [0.0] * hours, [0.0] * hours
    projects: dict[str, list[float]] = {}
    for segment in segments:
        if segment.kind.value not in FORECAST_KINDS or segment.start is None:
            continue
        if segment.job_id is None:
            continue
        per_second = sum(rate.get(r, unknown) for r in segment.rows) / 3600.0
        if not per_second:
            continue
        begin = segment.start.timestamp()
        stop = end_at if segment.end is None else segment.end.timestamp()
        shifts = {begin}
        if segment.kind.value == "ESTIMATED":
            shifts |= {t.timestamp() for t in (segment.earliest_start, segment.latest_start) if t}
        length = None if segment.end is None else stop - begin

        window = (now_at, end_at, origin, hours)
        as_planned = _by_hour(per_second, begin, stop, window)
        placed = [
            _by_hour(per_second, t, end_at if length is None else t + length, window)
            for t in shifts
        ]
        for h in {h for p in placed for h in p} | set(as_planned):
            scheduled[h] += as_planned.get(h, 0.0)
            low[h] += min(p.get(h, 0.0) for p in placed)
            high[h] += max(p.get(h, 0.0) for p in placed)
        totals = [sum(p.values()) for p in placed]
        found = projects.setdefault(segment.project_id or "", [0.0, 0.0, 0.0])
        found[0] += sum(as_planned.values())
        found[1] += min(totals)
        found[2] += max(totals)
    return CostForecast(
        start=first,
        end=end,
        hours=tuple(
            SpendHour(first + h * HOUR_SPAN, _cents(scheduled[h]), _cents(low[h]), _cents(high[h]))
            for h in range(hours)
        ),
        projects=tuple(
            ProjectSpend(p, _cents(c), _cents(lo), _cents(hi))
            for p, (c, lo, hi) in sorted(projects.items())
        ),
    )


def _by_hour(
    per_second: float, start: float, stop: float, window: tuple[float, float, float, int]
) -> dict[int, float]:
    """`per_second` times the part of [start, stop) in each hour of the forecast's `window`
    (now, end, the first hour's start, in epoch seconds, and its hours) it touches, by the
    hour's index."""
    now_at, end_at, origin, hours = window
    start, stop = max(start, now_at), min(stop, end_at)
    if stop <= start:
        return {}
    out = {}
    first, last = int((start - origin) // 3600), int((stop - origin) // 3600)
    for h in range(max(0, first), min(hours, last + 1)):
        left = origin + h * 3600.0
        held = min(stop, left + 3600.0) - max(start, left)
        if held > 0:
            out[h] = per_second * held
    return out


def _cents(amount: float) -> Decimal:
    return Decimal(repr(amount)).quantize(CENT, rounding=ROUND_HALF_UP)
