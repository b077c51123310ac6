"""Project and tenant budgets (`domain.model.budget.Budget`), one row per `Budget.key`."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from adapters.db.tables import budgets
from domain.model.budget import Budget, BudgetPeriod
from domain.model.ids import ProjectId, TenantId
from domain.model.job import BudgetAction


def _row(budget: Budget) -> dict[str, Any]:
    return {
        "key": budget.key,
        "tenant_id": budget.tenant_id,
        "project_id": budget.project_id,
        "limit": budget.limit,
        "action": budget.action.value,
        "period": budget.period.value,
        "alerted": budget.alerted,
        "alerted_period": budget.alerted_period,
        "created_at": budget.created_at,
        "updated_at": budget.updated_at,
    }


def _budget(row: sa.RowMapping) -> Budget:
    project = row["project_id"]
    return Budget(
        tenant_id=TenantId(row["tenant_id"]),
        project_id=None if project is None else ProjectId(project),
        limit=Decimal(str(row["limit"])),
        action=BudgetAction(row["action"]),
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        period=BudgetPeriod(row["period"]),
        alerted=row["alerted"],
        alerted_period=row["alerted_period"],
    )


class SqlBudgetRepository:
    def __init__(self, conn: AsyncConnection) -> None:
        self._conn = conn

    async def get(self, key: str, *, for_update: bool = False) -> Budget | None:
        stmt = sa.select(budgets).where(budgets.c.key == key)
        if for_update:
            stmt = stmt.with_for_update()
        row = (await self._conn.execute(stmt)).mappings().first()
        return None if row is None else _budget(row)

    async def of_tenant(self, tenant_id: TenantId) -> list[Budget]:
        stmt = (
            sa.select(budgets)
            .where(budgets.c.tenant_id == tenant_id)
            .order_by(budgets.c.project_id.is_not(None), budgets.c.key)
        )
        return [_budget(r) for r in (await self._conn.execute(stmt)).mappings()]

    async def all(self) -> list[Budget]:
        stmt = sa.select(budgets).order_by(budgets.c.key)
        return [_budget(r) for r in (await self._conn.execute(stmt)).mappings()]

    async def put(self, budget: Budget) -> None:
        row = _row(budget)
        done = await self._conn.execute(
            budgets.update().where(budgets.c.key == budget.key).values(row)
        )
        if not done.rowcount:
            await self._conn.execute(budgets.insert().values(row))

    async def remove(self, key: str) -> bool:
        done = await self._conn.execute(budgets.delete().where(budgets.c.key == key))
        return bool(done.rowcount)
