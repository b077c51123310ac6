"""A unit of work whose caller is cancelled still gives its connection back, whole.

Covers: cancelled while it works, and cancelled again while it rolls back on the way out (what a
failed sibling GraphQL field does to a resolver, found by the fuzz test), the connection goes back
to the pool without the pool having to reset it in a garbage collection (logged as an error), and
the SQLite write lock is released only after.
"""

from __future__ import annotations

import asyncio
import gc
import logging
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncConnection

from adapters.db.engine import Database
from domain.ports.unit_of_work import TenantScope


async def test_a_caller_cancelled_on_its_way_out_still_returns_the_connection(
    db: Database, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    rolling_back = asyncio.Event()
    real_rollback = AsyncConnection.rollback

    async def slow_rollback(self: AsyncConnection) -> None:
        rolling_back.set()
        await asyncio.sleep(0.05)
        await real_rollback(self)

    monkeypatch.setattr(AsyncConnection, "rollback", slow_rollback)
    working = asyncio.Event()

    async def reader() -> None:
        async with db.unit_of_work(TenantScope.system()) as uow:
            await uow.clusters.all()
            working.set()
            await asyncio.Event().wait()  # cancelled here

    task = asyncio.create_task(reader())
    await working.wait()
    task.cancel()
    await rolling_back.wait()
    task.cancel()  # again, while it rolls back
    with pytest.raises(asyncio.CancelledError):
        await task
    pool: Any = db.engine.pool
    async with asyncio.timeout(5):
        while pool.checkedout():
            await asyncio.sleep(0.01)
    if db.write_lock is not None:
        assert not db.write_lock.locked()
    gc.collect()
    await asyncio.sleep(0)
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == [], [r.getMessage() for r in errors]
    async with db.unit_of_work(TenantScope.system()) as uow:  # the pool still serves
        await uow.clusters.all()
