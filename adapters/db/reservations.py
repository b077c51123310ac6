"""Capacity reservations over the unit of work's connection.

A cancelled reservation stays, marked with its time: what holds capacity now (admission, the
estimator) leaves it out, a quota overview lists it until it ends. The listing takes many
clusters at once, one statement whatever their number.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from adapters.db import mapping
from adapters.db.tables import capacity_reservations
from domain.model.ids import ClusterId
from domain.model.reservation import CapacityReservation, ReservationId


class SqlReservationRepository:
    def __init__(self, conn: AsyncConnection) -> None:
        self._conn = conn

    async def _read(self, *where: sa.ColumnElement[bool]) -> list[CapacityReservation]:
        t = capacity_reservations
        rows = (
            (await self._conn.execute(sa.select(t).where(*where).order_by(t.c.start, t.c.id)))
            .mappings()
            .all()
        )
        return [mapping.reservation_from_row(row) for row in rows]

    async def active(
        self, cluster_id: ClusterId, *, active_after: datetime
    ) -> list[CapacityReservation]:
        t = capacity_reservations
        return await self._read(
            t.c.cluster_id == cluster_id, t.c.end > active_after, t.c.cancelled_at.is_(None)
        )

    async def of_clusters(
        self, cluster_ids: Sequence[ClusterId], *, ending_after: datetime
    ) -> list[CapacityReservation]:
        if not cluster_ids:
            return []
        t = capacity_reservations
        return await self._read(t.c.cluster_id.in_(list(cluster_ids)), t.c.end > ending_after)

    async def get(self, reservation_id: ReservationId) -> CapacityReservation | None:
        found = await self._read(capacity_reservations.c.id == reservation_id)
        return found[0] if found else None

    async def add(self, reservation: CapacityReservation) -> None:
        await self._conn.execute(
            capacity_reservations.insert().values(mapping.reservation_to_row(reservation))
        )

    async def cancel(self, *, reservation_id: ReservationId, at: datetime) -> None:
        t = capacity_reservations
        await self._conn.execute(
            t.update()
            .where(t.c.id == reservation_id, t.c.cancelled_at.is_(None))
            .values(cancelled_at=at)
        )
