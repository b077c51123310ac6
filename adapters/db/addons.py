"""Cluster add-on requests (`domain.model.addons.AddonInstall`): one row per cluster and add-on,
the latest request's, replaced by the next."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from adapters.db.tables import cluster_addons
from adapters.shapes.entities import SHAPES
from domain.model.addons import Addon, AddonInstall
from domain.model.ids import ClusterId

_from_row = SHAPES.row_decoder(AddonInstall)
_to_row = SHAPES.to_row


class SqlAddonRepository:
    def __init__(self, conn: AsyncConnection) -> None:
        self._conn = conn

    async def of(self, cluster_ids: Sequence[ClusterId]) -> dict[ClusterId, list[AddonInstall]]:
        if not cluster_ids:
            return {}
        stmt = (
            sa.select(cluster_addons)
            .where(cluster_addons.c.cluster_id.in_(list(cluster_ids)))
            .order_by(cluster_addons.c.cluster_id, cluster_addons.c.addon)
        )
        found: dict[ClusterId, list[AddonInstall]] = {}
        for row in (await self._conn.execute(stmt)).mappings():
            install = _from_row(row)
            found.setdefault(install.cluster_id, []).append(install)
        return found

    async def get(
        self, cluster_id: ClusterId, addon: Addon, *, for_update: bool = False
    ) -> AddonInstall | None:
        stmt = sa.select(cluster_addons).where(
            cluster_addons.c.cluster_id == cluster_id, cluster_addons.c.addon == addon.value
        )
        if for_update:
            stmt = stmt.with_for_update()
        row = (await self._conn.execute(stmt)).mappings().first()
        return None if row is None else _from_row(row)

    async def put(self, install: AddonInstall) -> None:
        row: dict[str, Any] = _to_row(install)
        key = (
            cluster_addons.c.cluster_id == install.cluster_id,
            cluster_addons.c.addon == install.addon.value,
        )
        done = await self._conn.execute(cluster_addons.update().where(*key).values(row))
        if not done.rowcount:
            await self._conn.execute(cluster_addons.insert().values(row))

    async def remove(self, cluster_id: ClusterId, addon: Addon, request_id: str) -> bool:
        done = await self._conn.execute(
            cluster_addons.delete().where(
                cluster_addons.c.cluster_id == cluster_id,
                cluster_addons.c.addon == addon.value,
                cluster_addons.c.request_id == request_id,
            )
        )
        return bool(done.rowcount)
