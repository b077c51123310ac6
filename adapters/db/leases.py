"""Leases on PostgreSQL: which process watches which cluster, in the source of truth.

A lease is a row (name, holder, expiry) whose times are the database server's own clock, so
processes on hosts whose clocks disagree still agree on who holds what. Each call is one short
transaction of one statement. The holder's token names it (`<host>:<pid>:<random>`), so an
operator (or the fault suite) can tell from the `lease` table which process holds a cluster.
"""

from __future__ import annotations

import os
import socket
import uuid
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncEngine

from adapters.db.tables import leases

_NOW = sa.func.clock_timestamp()


def _until(ttl_seconds: float) -> Any:
    return _NOW + sa.func.make_interval(0, 0, 0, 0, 0, 0, ttl_seconds)


class PostgresLease:
    """The same claims as Redis' SET NX PX: taken when absent or expired, renewed and released
    only by the process holding them."""

    def __init__(self, engine: AsyncEngine) -> None:
        assert engine.dialect.name == "postgresql", "leases in the database need PostgreSQL"
        self._engine = engine
        self.token = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex}"

    async def acquire(self, name: str, *, ttl_seconds: float) -> bool:
        new = insert(leases).values(name=name, holder=self.token, expires_at=_until(ttl_seconds))
        claim = new.on_conflict_do_update(
            index_elements=[leases.c.name],
            set_={"holder": new.excluded.holder, "expires_at": new.excluded.expires_at},
            where=leases.c.expires_at <= _NOW,  # taken over only once it has expired
        ).returning(leases.c.holder)
        async with self._engine.begin() as conn:
            holder: str | None = (await conn.execute(claim)).scalar_one_or_none()
        return holder == self.token

    async def renew(self, name: str, *, ttl_seconds: float) -> bool:
        async with self._engine.begin() as conn:
            result = await conn.execute(
                leases.update()
                .where(
                    leases.c.name == name, leases.c.holder == self.token, leases.c.expires_at > _NOW
                )
                .values(expires_at=_until(ttl_seconds))
            )
        return bool(result.rowcount)

    async def release(self, name: str) -> None:
        async with self._engine.begin() as conn:
            await conn.execute(
                leases.delete().where(leases.c.name == name, leases.c.holder == self.token)
            )

    async def holder(self, name: str) -> str | None:
        """Who holds the lease now (None: no one)."""
        async with self._engine.connect() as conn:
            return (
                await conn.execute(
                    sa.select(leases.c.holder).where(
                        leases.c.name == name, leases.c.expires_at > _NOW
                    )
                )
            ).scalar_one_or_none()
