"""Project and tenant budgets per period, where each stands now (`Query.budgets`)."""

from __future__ import annotations

from datetime import date, datetime, timedelta
from decimal import Decimal

import strawberry

from domain.scheduling import budgets as model
from schema.context import Info
from schema.types.enums import BudgetAction, BudgetPeriod, BudgetScope


@strawberry.type(
    description="When a budget is expected to be spent in its period, from the schedule: its "
    "scope's running and waiting work on every cluster, by hour, after what it has spent; at "
    "the earliest and latest its waiting jobs' start windows allow. Null: not in this period "
    "(held jobs do not spend); a budget already spent: now."
)
class BudgetExhaustion:
    expected: datetime | None
    earliest: datetime | None
    latest: datetime | None


@strawberry.input(
    description="A budget per period: a tenant's (projectId null; the operator sets it) or a "
    "project's (its tenant sets it, within the tenant's). Replaces the one it has."
)
class SetBudgetInput:
    tenant_id: strawberry.ID | None = strawberry.field(
        default=None, description="The tenant (the operator); null: your own."
    )
    project_id: strawberry.ID | None = strawberry.field(
        default=None, description="The project; null: the whole tenant."
    )
    limit: Decimal = strawberry.field(
        description="The most it may spend in a period (0 to 9999999999.9999), in the unit of "
        "Job.estimatedCost."
    )
    action: BudgetAction = strawberry.field(
        default=BudgetAction.WARN, description="What happens when it is spent."
    )


@strawberry.type(
    description="A project's or tenant's budget in its current period: what it has spent "
    "(metered runs on the period's UTC days, and its running jobs so far), what is left, and "
    "when it is expected to run out. 80 % and 100 % are said once a period (the audit trail, "
    "BUDGET events on its running jobs)."
)
class Budget:
    tenant_id: strawberry.ID
    project_id: strawberry.ID | None
    scope: BudgetScope
    limit: Decimal
    action: BudgetAction
    period: BudgetPeriod
    period_start: date = strawberry.field(description="The period's first UTC day.")
    period_end: date = strawberry.field(description="The period's last UTC day.")
    spent: Decimal
    left: Decimal
    share: int = strawberry.field(description="Of the limit spent, in whole percent.")
    exhausted: bool
    alerted: int = strawberry.field(description="The highest share said this period: 0, 80 or 100.")
    updated_at: datetime
    standing: strawberry.Private[model.BudgetStanding]

    @strawberry.field(description="When it is expected to be spent (see BudgetExhaustion).")  # type: ignore[untyped-decorator]
    async def projected_exhaustion(self, info: Info) -> BudgetExhaustion:
        found = await info.context.services.timeline.budget_exhaustion(self.standing)
        return BudgetExhaustion(
            expected=found.expected, earliest=found.earliest, latest=found.latest
        )

    @classmethod
    def from_domain(cls, standing: model.BudgetStanding) -> Budget:
        budget = standing.budget
        return cls(
            tenant_id=strawberry.ID(str(budget.tenant_id)),
            project_id=None if budget.project_id is None else strawberry.ID(str(budget.project_id)),
            scope=budget.scope,
            limit=budget.limit,
            action=budget.action,
            period=budget.period,
            period_start=standing.period_start,
            period_end=standing.period_end - timedelta(days=1),
            spent=standing.spent,
            left=standing.left,
            share=standing.share,
            exhausted=standing.exhausted,
            alerted=budget.alerted_in(standing.period_start),
            updated_at=budget.updated_at,
            standing=standing,
        )


__all__ = ["Budget", "BudgetExhaustion", "SetBudgetInput"]
