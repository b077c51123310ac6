"""Where a project's or tenant's budget stands in its period, and what it asks of a job.

Spent in a period = what the usage ledger metered on the period's days (a run is kept per UTC
day, so a run across the month's first midnight counts its part in each month) + what the scope's
running jobs have cost since the period began, worked out now (never stored: only a run's end
is metered). Pure: the service reads the ledger and the running jobs, this decides.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import date, datetime, timedelta
from decimal import Decimal

from domain.model.budget import Budget, midnight, period_of
from domain.model.ids import ClusterId
from domain.model.job import (
    BUDGET_WARNING_SHARE,
    BudgetAction,
    BudgetNotice,
    BudgetScope,
    Job,
    usage_under_way,
)
from domain.scheduling.cost import METERED, PriceBook, SpendHour, estimate_cost

SEVERITY = {BudgetAction.WARN: 0, BudgetAction.PAUSE: 1, BudgetAction.CANCEL: 2}
"""Of several budgets a job is over, the most severe action is taken."""


@dataclass(frozen=True)
class BudgetStanding:
    budget: Budget
    period_start: date
    period_end: date
    """The first day of the next period (when a new period's spend starts from 0)."""
    spent: Decimal

    @property
    def left(self) -> Decimal:
        return max(self.budget.limit - self.spent, Decimal(0))

    @property
    def exhausted(self) -> bool:
        return self.spent >= self.budget.limit

    @property
    def share(self) -> int:
        """Of the limit, in whole percent (a limit of 0 is spent at once)."""
        if self.budget.limit <= 0:
            return 100
        return int(self.spent * 100 / self.budget.limit)

    @property
    def next_period(self) -> datetime:
        return midnight(self.period_end)


def running_cost_since(job: Job, book: PriceBook, since: datetime, now: datetime) -> Decimal:
    """What a RUNNING job's run has cost from `since` (or its start, if later) to `now`."""
    run = usage_under_way(job, now)
    if run is None or run.ended_at <= since:
        return Decimal(0)
    return book.charge(replace(run, started_at=max(run.started_at, since)))


def stand(
    budget: Budget,
    metered: Decimal,
    running: Iterable[Job],
    books: Mapping[ClusterId, PriceBook],
    now: datetime,
) -> BudgetStanding:
    """`budget` in the period of `now`: `metered` (the ledger's, this period) plus the running
    jobs it covers, priced from the period's start."""
    first, following = period_of(now, budget.period)
    since = midnight(first)
    spent = metered
    for job in running:
        book = books.get(job.cluster_id)
        if book is not None and budget.covers(job.tenant_id, job.project_id):
            spent += running_cost_since(job, book, since, now)
    return BudgetStanding(budget, first, following, spent.quantize(METERED))


def crossed(standing: BudgetStanding) -> BudgetNotice | None:
    """The share of its limit a budget newly reached in its period (80, then 100), if any."""
    budget = standing.budget
    share = (
        100
        if standing.exhausted
        else BUDGET_WARNING_SHARE
        if standing.share >= BUDGET_WARNING_SHARE
        else 0
    )
    if share <= budget.alerted_in(standing.period_start):
        return None
    return BudgetNotice(
        share,
        standing.spent,
        budget.limit,
        budget.action,
        scope=budget.scope,
        spent=standing.spent,
    )


def expected_cost(job: Job, book: PriceBook) -> Decimal | None:
    """What `job` is expected to cost: the run time its user gave (`estimated_duration_seconds`,
    at most `max_duration_seconds`, or the maximum alone) at the cluster's prices when it was
    submitted; None with no run time given."""
    given = [s for s in (job.estimated_duration_seconds, job.max_duration_seconds) if s]
    if not given:
        return None
    return estimate_cost(job.resources, float(min(given)), book.table(job.created_at))


def over_budgets(
    expected: Decimal | None, standings: Sequence[BudgetStanding]
) -> list[tuple[BudgetStanding, BudgetNotice]]:
    """The budgets a job expected to cost `expected` (None: unknown) would overrun: those
    already spent, or with less left than it is expected to cost; most severe action first."""
    over = [
        (
            s,
            BudgetNotice(
                100,
                expected if expected is not None else Decimal(0),
                s.budget.limit,
                s.budget.action,
                expected=True,
                scope=s.budget.scope,
                spent=s.spent,
            ),
        )
        for s in standings
        if s.exhausted or (expected is not None and expected > s.left)
    ]
    over.sort(key=lambda pair: -SEVERITY[pair[1].action])
    return over


def hold_reason(standing: BudgetStanding) -> str:
    """Why a job waits when a budget holds it: whose budget, and when it may go."""
    budget = standing.budget
    whose = "its project's" if budget.scope is BudgetScope.PROJECT else "its tenant's"
    return (
        f"held by {whose} budget: {standing.spent:.2f} of {budget.limit:.2f} spent this "
        f"period; released when the limit is raised or the next period begins "
        f"({standing.period_end.isoformat()})"
    )


def job_hold_reason(notice: BudgetNotice) -> str:
    return f"held by its budget: {notice.message}; released when its budget is raised"


@dataclass(frozen=True)
class Exhaustion:
    """When a budget is expected to be spent in its period, from the schedule: as scheduled,
    and at the earliest and latest its waiting jobs' start windows allow (None: not in the
    period, or not at all)."""

    expected: datetime | None
    earliest: datetime | None
    latest: datetime | None


def exhaustion(standing: BudgetStanding, hours: Sequence[SpendHour], now: datetime) -> Exhaustion:
    """Walk the forecast's hours (summed over the clusters its work is on) from what the budget
    has spent: the moment the limit is reached, within the hour by its share of that hour's
    cost (spending is taken as even within an hour), and not after the period's end."""
    end = standing.next_period

    def reached(costs: Sequence[Decimal]) -> datetime | None:
        need = standing.budget.limit - standing.spent
        if need <= 0:
            return now
        for hour, cost in zip(hours, costs, strict=True):
            if cost <= 0:
                continue
            if cost >= need:
                begin = max(hour.start, now)
                span = (hour.start + timedelta(hours=1) - begin).total_seconds()
                moment = begin + timedelta(seconds=span * float(need / cost))
                return moment if moment < end else None
            need -= cost
        return None

    return Exhaustion(
        expected=reached([h.cost for h in hours]),
        earliest=reached([h.high for h in hours]),
        latest=reached([h.low for h in hours]),
    )
