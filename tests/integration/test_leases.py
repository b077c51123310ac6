"""The watch lease on real PostgreSQL: one holder at a time, renewed and released only by its
holder, taken over once it expires (by the database's clock), and the row names the holding
process (host and pid), so an operator can see who runs a cluster's loop."""

from __future__ import annotations

import os
import socket

import sqlalchemy as sa

from adapters.db.engine import Database
from adapters.db.leases import PostgresLease
from adapters.db.tables import leases


async def stored_holder(pg: Database, name: str) -> str | None:
    async with pg.engine.connect() as conn:
        found = await conn.execute(sa.select(leases.c.holder).where(leases.c.name == name))
        return found.scalar_one_or_none()


async def test_one_holder_named_by_host_and_pid(pg: Database) -> None:
    first, second = PostgresLease(pg.engine), PostgresLease(pg.engine)
    assert await first.acquire("watch:c1", ttl_seconds=5)
    assert not await second.acquire("watch:c1", ttl_seconds=5)
    assert not await first.acquire("watch:c1", ttl_seconds=5)  # held: as SET NX would say
    assert not await second.renew("watch:c1", ttl_seconds=5)
    await second.release("watch:c1")  # not the holder: nothing happens

    value = await stored_holder(pg, "watch:c1")
    assert value == first.token == await first.holder("watch:c1")
    host, pid, _ = value.split(":")
    assert (host, int(pid)) == (socket.gethostname(), os.getpid())

    assert await first.renew("watch:c1", ttl_seconds=5)
    await first.release("watch:c1")
    assert await first.holder("watch:c1") is None
    assert await second.acquire("watch:c1", ttl_seconds=5)
    assert await stored_holder(pg, "watch:c1") == second.token != value
    await second.release("watch:c1")


async def test_an_expired_lease_is_taken_over_and_its_old_holder_cannot_renew(
    pg: Database,
) -> None:
    first, second = PostgresLease(pg.engine), PostgresLease(pg.engine)
    assert await first.acquire("watch:c2", ttl_seconds=5)
    async with pg.engine.begin() as conn:  # its time runs out (the database's clock decides)
        await conn.execute(
            leases.update()
            .where(leases.c.name == "watch:c2")
            .values(expires_at=sa.func.clock_timestamp() - sa.text("interval '1 second'"))
        )
    assert await first.holder("watch:c2") is None
    assert not await first.renew("watch:c2", ttl_seconds=5)
    assert await second.acquire("watch:c2", ttl_seconds=5)
    assert not await first.renew("watch:c2", ttl_seconds=5)
    await first.release("watch:c2")  # no longer its own: the new holder keeps it
    assert await second.holder("watch:c2") == second.token


async def test_names_are_independent(pg: Database) -> None:
    first, second = PostgresLease(pg.engine), PostgresLease(pg.engine)
    assert await first.acquire("watch:a", ttl_seconds=5)
    assert await second.acquire("watch:b", ttl_seconds=5)
