"""A tenant's sealed secrets (`domain.model.tenant_secret.TenantSecret`), one row each."""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from adapters.db.tables import tenant_secrets
from adapters.shapes.entities import SHAPES
from domain.model.ids import TenantId
from domain.model.tenant_secret import TenantSecret, TenantSecretId

_from_row = SHAPES.row_decoder(TenantSecret)
_to_row = SHAPES.to_row


class SqlTenantSecretRepository:
    def __init__(self, conn: AsyncConnection) -> None:
        self._conn = conn

    async def named(
        self, tenant_id: TenantId, names: Collection[str], *, for_update: bool = False
    ) -> dict[str, TenantSecret]:
        if not names:
            return {}
        stmt = (
            sa.select(tenant_secrets)
            .where(
                tenant_secrets.c.tenant_id == tenant_id, tenant_secrets.c.name.in_(sorted(names))
            )
            .order_by(tenant_secrets.c.id)  # one lock order
        )
        if for_update:
            stmt = stmt.with_for_update()
        rows = (await self._conn.execute(stmt)).mappings()
        return {s.name: s for s in map(_from_row, rows)}

    async def of_tenant(self, tenant_id: TenantId) -> list[TenantSecret]:
        stmt = (
            sa.select(tenant_secrets)
            .where(tenant_secrets.c.tenant_id == tenant_id)
            .order_by(tenant_secrets.c.name)
        )
        return [_from_row(r) for r in (await self._conn.execute(stmt)).mappings()]

    async def count(self, tenant_id: TenantId) -> int:
        stmt = (
            sa.select(sa.func.count())
            .select_from(tenant_secrets)
            .where(tenant_secrets.c.tenant_id == tenant_id)
        )
        return int((await self._conn.execute(stmt)).scalar_one())

    async def put(self, secret: TenantSecret) -> None:
        row: dict[str, Any] = _to_row(secret)
        done = await self._conn.execute(
            tenant_secrets.update().where(tenant_secrets.c.id == secret.id).values(row)
        )
        if not done.rowcount:
            await self._conn.execute(tenant_secrets.insert().values(row))

    async def remove(self, tenant_id: TenantId, name: str) -> bool:
        done = await self._conn.execute(
            tenant_secrets.delete().where(
                tenant_secrets.c.tenant_id == tenant_id, tenant_secrets.c.name == name
            )
        )
        return bool(done.rowcount)

    async def used(self, ids: Collection[TenantSecretId], at: datetime) -> None:
        if ids:
            await self._conn.execute(
                tenant_secrets.update()
                .where(tenant_secrets.c.id.in_(sorted(ids, key=str)))
                .values(last_used_at=at)
            )
