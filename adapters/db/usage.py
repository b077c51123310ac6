"""The usage ledger read back: spend over a range of UTC days, grouped (`domain.model.spend`).

One GROUP BY over `job_usage`, whose rows are each within one UTC day (`day`), filtered by the
(tenant, day) index; the tenant wall is the query's `tenant_id` and `project_ids`."""

from __future__ import annotations

import uuid
from datetime import date
from decimal import Decimal
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from adapters.db.tables import job_usage
from domain.model.ids import ClusterId, ProjectId, TenantId
from domain.model.job import JobType
from domain.model.spend import SpendGroup, SpendQuery, SpendRow

COST = Decimal("0.0001")

_COLUMNS: dict[SpendGroup, sa.ColumnElement[Any]] = {
    SpendGroup.TENANT: job_usage.c.tenant_id,
    SpendGroup.PROJECT: job_usage.c.project_id,
    SpendGroup.CLUSTER: job_usage.c.cluster_id,
    SpendGroup.GPU_TYPE: job_usage.c.gpu_type,
    SpendGroup.JOB_TYPE: job_usage.c.job_type,
    SpendGroup.DAY: job_usage.c.day,
}
_FIELDS = {
    SpendGroup.TENANT: "tenant_id",
    SpendGroup.PROJECT: "project_id",
    SpendGroup.CLUSTER: "cluster_id",
    SpendGroup.GPU_TYPE: "gpu_type",
    SpendGroup.JOB_TYPE: "job_type",
    SpendGroup.DAY: "day",
}


class SqlUsageRepository:
    def __init__(self, conn: AsyncConnection) -> None:
        self._conn = conn

    def _where(self, query: SpendQuery) -> list[sa.ColumnElement[bool]]:
        where = [job_usage.c.day >= query.first_day, job_usage.c.day <= query.last_day]
        if query.tenant_id is not None:
            where.append(job_usage.c.tenant_id == query.tenant_id)
        if query.project_ids is not None:
            where.append(job_usage.c.project_id.in_(sorted(query.project_ids, key=str)))
        return where

    @staticmethod
    def _sums() -> list[sa.ColumnElement[Any]]:
        return [
            sa.func.coalesce(sa.func.sum(job_usage.c.gpus * job_usage.c.seconds), 0.0).label(
                "gpu_seconds"
            ),
            sa.func.coalesce(sa.func.sum(job_usage.c.cost), 0).label("cost"),
        ]

    async def spend(self, query: SpendQuery, *, offset: int, limit: int) -> list[SpendRow]:
        stmt = self._grouped(query).offset(offset).limit(limit)
        return [_row(r, query.group_by) for r in (await self._conn.execute(stmt)).mappings()]

    async def spend_page(
        self, query: SpendQuery, *, offset: int, limit: int
    ) -> tuple[list[SpendRow], SpendRow]:
        """A page and the total of every group, in one scan: the total is a window over the
        groups, worked out before the page is cut (a page past the end reads the total alone)."""
        sums = self._sums()
        totals = [
            sa.func.sum(sums[0]).over().label("total_gpu_seconds"),
            sa.func.sum(sums[1]).over().label("total_cost"),
        ]
        stmt = self._grouped(query, *totals).offset(offset).limit(limit)
        found = (await self._conn.execute(stmt)).mappings().all()
        if not found:
            return [], await self.spend_total(query)
        total = SpendRow(
            gpu_hours=float(found[0]["total_gpu_seconds"] or 0.0) / 3600.0,
            cost=Decimal(str(found[0]["total_cost"] or 0)).quantize(COST),
        )
        return [_row(r, query.group_by) for r in found], total

    def _grouped(self, query: SpendQuery, *extra: sa.ColumnElement[Any]) -> sa.Select[Any]:
        keys = [_COLUMNS[g].label(_FIELDS[g]) for g in query.group_by]
        stmt = sa.select(*keys, *self._sums(), *extra).where(*self._where(query))
        if query.group_by:
            grouped = [_COLUMNS[g] for g in query.group_by]
            order = [  # nulls (GPU-less work) last, alike on both databases
                sa.func.coalesce(_COLUMNS[g], "\uffff") if g is SpendGroup.GPU_TYPE else _COLUMNS[g]
                for g in query.group_by
            ]
            stmt = stmt.group_by(*grouped).order_by(*order)
        return stmt

    async def spend_total(self, query: SpendQuery) -> SpendRow:
        row = (
            (await self._conn.execute(sa.select(*self._sums()).where(*self._where(query))))
            .mappings()
            .one()
        )
        return _row(row, ())


def _row(row: sa.RowMapping, groups: tuple[SpendGroup, ...]) -> SpendRow:
    keys: dict[str, Any] = {}
    for group in groups:
        value = row[_FIELDS[group]]
        if value is None:
            keys[_FIELDS[group]] = None
        elif group is SpendGroup.TENANT:
            keys["tenant_id"] = TenantId(_uuid(value))
        elif group is SpendGroup.PROJECT:
            keys["project_id"] = ProjectId(_uuid(value))
        elif group is SpendGroup.CLUSTER:
            keys["cluster_id"] = ClusterId(_uuid(value))
        elif group is SpendGroup.JOB_TYPE:
            keys["job_type"] = JobType(value)
        elif group is SpendGroup.DAY:
            keys["day"] = value if isinstance(value, date) else date.fromisoformat(str(value))
        else:
            keys["gpu_type"] = str(value)
    return SpendRow(
        gpu_hours=float(row["gpu_seconds"] or 0.0) / 3600.0,
        cost=Decimal(str(row["cost"] or 0)).quantize(COST),
        **keys,
    )


def _uuid(value: object) -> uuid.UUID:
    return value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))
