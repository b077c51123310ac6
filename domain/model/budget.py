"""Budgets of a project or a whole tenant per period (a calendar month, UTC): the operator sets a
tenant's, a tenant sets its projects' within it. What a budget has spent in its period is what
the usage ledger metered in the period's days plus what the scope's running jobs have cost in it
so far (`domain.scheduling.cost.BudgetStanding`); its `action` says what follows when that
reaches the limit (WARN, PAUSE or CANCEL, as a job's own budget: `domain.model.job`).

A job's own budget (`Job.budget_limit`) has no period: it is the most the job may cost."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from decimal import Decimal

from domain.model.ids import ProjectId, TenantId
from domain.model.job import BudgetAction, BudgetScope


class BudgetPeriod(enum.StrEnum):
    MONTH = "MONTH"
    """A calendar month in UTC: what issue 32 and seed 004 §5 ask by default (billing cycles
    are monthly)."""


def period_of(moment: datetime, period: BudgetPeriod = BudgetPeriod.MONTH) -> tuple[date, date]:
    """The first day of the period `moment` falls in, and the first day of the next (UTC)."""
    day = moment.astimezone(UTC).date()
    first = day.replace(day=1)
    following = (
        first.replace(year=first.year + 1, month=1)
        if first.month == 12
        else first.replace(month=first.month + 1)
    )
    return first, following


def midnight(day: date) -> datetime:
    return datetime.combine(day, time(), UTC)


@dataclass
class Budget:
    tenant_id: TenantId
    project_id: ProjectId | None
    """None: the tenant's budget, over every project of it."""
    limit: Decimal
    action: BudgetAction
    created_at: datetime
    updated_at: datetime
    period: BudgetPeriod = BudgetPeriod.MONTH
    alerted: int = 0
    """The highest share (%) of the limit said in `alerted_period` (80, then 100: once each)."""
    alerted_period: date | None = None
    """The first day of the period `alerted` is about: a new period says its shares anew."""

    @property
    def key(self) -> str:
        return budget_key(self.tenant_id, self.project_id)

    @property
    def scope(self) -> BudgetScope:
        return BudgetScope.TENANT if self.project_id is None else BudgetScope.PROJECT

    def alerted_in(self, period_start: date) -> int:
        return self.alerted if self.alerted_period == period_start else 0

    def covers(self, tenant_id: TenantId, project_id: ProjectId) -> bool:
        """Whether a job of this tenant and project spends from this budget."""
        return tenant_id == self.tenant_id and self.project_id in (None, project_id)


def budget_key(tenant_id: TenantId, project_id: ProjectId | None) -> str:
    """A budget's identity: its tenant and project ('-': the whole tenant)."""
    return f"{tenant_id}/{project_id or '-'}"
