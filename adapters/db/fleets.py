"""Fleets (`domain.model.fleet.Fleet`), one row each, with the latest plan of their waiting jobs
as a JSON document beside them."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from adapters.db import mapping
from adapters.db.tables import fleets
from adapters.shapes.entities import SHAPES
from domain.model.fleet import Fleet, FleetPlan
from domain.model.ids import ClusterId, FleetId

_plan_to_document = SHAPES.encoder(FleetPlan)
_plan_from_document = SHAPES.decoder(FleetPlan)


class SqlFleetRepository:
    def __init__(self, conn: AsyncConnection) -> None:
        self._conn = conn

    async def get(self, fleet_id: FleetId, *, for_update: bool = False) -> Fleet | None:
        stmt = sa.select(fleets).where(fleets.c.id == fleet_id)
        if for_update:
            stmt = stmt.with_for_update()
        row = (await self._conn.execute(stmt)).mappings().first()
        return None if row is None else mapping.fleet_from_row(row)

    async def get_by_name(self, name: str) -> Fleet | None:
        stmt = sa.select(fleets).where(fleets.c.name == name)
        row = (await self._conn.execute(stmt)).mappings().first()
        return None if row is None else mapping.fleet_from_row(row)

    async def all(self) -> list[Fleet]:
        stmt = sa.select(fleets).order_by(fleets.c.name)
        return [mapping.fleet_from_row(r) for r in (await self._conn.execute(stmt)).mappings()]

    async def with_member(self, cluster_id: ClusterId) -> list[Fleet]:
        return [f for f in await self.all() if f.has(cluster_id)]  # a handful of fleets

    async def put(self, fleet: Fleet) -> None:
        row = mapping.fleet_to_row(fleet)
        done = await self._conn.execute(fleets.update().where(fleets.c.id == fleet.id).values(row))
        if not done.rowcount:
            await self._conn.execute(fleets.insert().values(row))

    async def remove(self, fleet_id: FleetId) -> bool:
        done = await self._conn.execute(fleets.delete().where(fleets.c.id == fleet_id))
        return bool(done.rowcount)

    async def plan(self, fleet_id: FleetId) -> FleetPlan | None:
        stmt = sa.select(fleets.c.plan).where(fleets.c.id == fleet_id)
        document = (await self._conn.execute(stmt)).scalar_one_or_none()
        return None if document is None else _plan_from_document(document)

    async def set_plan(self, fleet_id: FleetId, plan: FleetPlan) -> None:
        await self._conn.execute(
            fleets.update()
            .where(fleets.c.id == fleet_id)
            .values(plan=_plan_to_document(plan), planned_at=plan.computed_at)
        )
