"""Spend: GPU-hours and cost over a range of UTC days, grouped, from the usage ledger.

A tenant sees its own (a token limited to projects, those projects'); the operator (admin) sees
every tenant's. The range is at most `MAX_DAYS` long, so one query reads at most a year of
the ledger."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from datetime import date

from domain.errors import ValidationFailed
from domain.model.principal import Principal
from domain.model.spend import SpendGroup, SpendPage, SpendQuery, SpendRow
from domain.ports.unit_of_work import TenantScope, UnitOfWorkFactory
from domain.services.paging import check_first

MAX_DAYS = 366
MAX_PAGE = 1000
EXPORT_PAGE = 1000


class SpendService:
    def __init__(self, *, uow: UnitOfWorkFactory) -> None:
        self._uow = uow

    @staticmethod
    def query(
        principal: Principal, first_day: date, last_day: date, group_by: Sequence[SpendGroup]
    ) -> SpendQuery:
        """The query `principal` may ask: its own tenant's (and projects') spend."""
        if last_day < first_day:
            raise ValidationFailed.single("to", "must not be before `from`")
        if (last_day - first_day).days >= MAX_DAYS:
            raise ValidationFailed.single("to", f"is at most {MAX_DAYS} days after `from`")
        if len(set(group_by)) != len(group_by):
            raise ValidationFailed.single("group_by", "names a group more than once")
        if principal.sees_every_tenant:
            return SpendQuery(first_day, last_day, tuple(group_by))
        return SpendQuery(
            first_day,
            last_day,
            tuple(group_by),
            tenant_id=principal.tenant_id,
            project_ids=principal.project_ids,
        )

    async def page(self, query: SpendQuery, *, first: int, offset: int) -> SpendPage:
        check_first(first, MAX_PAGE)
        if offset < 0:
            raise ValidationFailed.single("after", "is not a cursor this API issued")
        async with self._uow(TenantScope.system()) as uow:
            rows, total = await uow.usage.spend_page(query, offset=offset, limit=first + 1)
        return SpendPage(rows[:first], total, offset, len(rows) > first)

    async def rows(self, query: SpendQuery) -> AsyncIterator[SpendRow]:
        """Every row of `query`, a page at a time (the CSV export)."""
        offset = 0
        while True:
            async with self._uow(TenantScope.system()) as uow:
                rows = await uow.usage.spend(query, offset=offset, limit=EXPORT_PAGE)
            for row in rows:
                yield row
            if len(rows) < EXPORT_PAGE:
                return
            offset += EXPORT_PAGE
