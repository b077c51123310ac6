"""Drains (`domain.model.drain.Drain`), one row each, kept after they end (the timeline's past)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from adapters.db.tables import drains
from adapters.shapes.entities import SHAPES
from domain.model.drain import Drain, DrainId
from domain.model.ids import ClusterId

_from_row = SHAPES.row_decoder(Drain)
_to_row = SHAPES.to_row


class SqlDrainRepository:
    def __init__(self, conn: AsyncConnection) -> None:
        self._conn = conn

    async def get(self, drain_id: DrainId, *, for_update: bool = False) -> Drain | None:
        stmt = sa.select(drains).where(drains.c.id == drain_id)
        if for_update:
            stmt = stmt.with_for_update()
        row = (await self._conn.execute(stmt)).mappings().first()
        return None if row is None else _from_row(row)

    async def on(
        self, cluster_ids: Sequence[ClusterId], *, ended_after: datetime | None = None
    ) -> list[Drain]:
        """The clusters' drains that are on, and with `ended_after` those that ended since,
        oldest first."""
        if not cluster_ids:
            return []
        kept: sa.ColumnElement[bool] = drains.c.ended_at.is_(None)
        if ended_after is not None:
            kept = sa.or_(kept, drains.c.ended_at > ended_after)
        stmt = (
            sa.select(drains)
            .where(drains.c.cluster_id.in_(list(cluster_ids)), kept)
            .order_by(drains.c.started_at, drains.c.id)
        )
        return [_from_row(r) for r in (await self._conn.execute(stmt)).mappings()]

    async def put(self, drain: Drain) -> None:
        row: dict[str, Any] = _to_row(drain)
        done = await self._conn.execute(drains.update().where(drains.c.id == drain.id).values(row))
        if not done.rowcount:
            await self._conn.execute(drains.insert().values(row))
