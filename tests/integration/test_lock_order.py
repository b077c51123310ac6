"""Transactions that lock several jobs take them in one order (by id), on real PostgreSQL.

Covers: the timeline's estimate writes and the cluster loop's locked read of the jobs a batch
moves, stepped lock by lock into the interleaving that deadlocked in a 100-way submission burst
(issue 27: the estimates were written one row at a time in estimate order, the loop locked
`ORDER BY id`): both now finish, one after the other; a unit of work that changed several jobs
writes them in id order.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence

import pytest
import sqlalchemy as sa

from adapters.db.engine import Database
from adapters.db.tables import jobs
from budcluster.bootstrap import App
from domain.model.job import Job, JobPriority
from domain.ports.unit_of_work import TenantScope
from tests.integration.conftest import redis_url
from tests.integration.test_app_flows import ALICE, make_app, sim_cluster, submission

SYSTEM = TenantScope.system()


@pytest.fixture
async def app(pg_url: str, prefix: str) -> AsyncIterator[App]:
    # not started, tasks queued and never run: nothing but the test's own transactions locks
    made = await make_app(
        pg_url, redis_url=redis_url(), tasks="arq", events="redis", redis_prefix=prefix
    )
    yield made
    await made.close()


async def two_jobs(app: App) -> tuple[Job, Job]:
    cluster = await sim_cluster(app)
    made = [await app.jobs.submit(ALICE, submission(cluster.id)) for _ in range(2)]
    low, high = sorted(made, key=lambda j: str(j.id))
    return low, high


async def waiting_on_locks(db: Database) -> int:
    async with db.engine.connect() as conn:
        found = await conn.execute(
            sa.text(
                "select count(*) from pg_stat_activity "
                "where datname = current_database() and wait_event_type = 'Lock'"
            )
        )
        return int(found.scalar_one())


async def until_waiting(db: Database, count: int, *tasks: asyncio.Task[object]) -> None:
    """Until `count` transactions wait for a lock (a state of the server, not a time)."""
    async with asyncio.timeout(10):
        while await waiting_on_locks(db) < count:
            for task in tasks:
                assert not task.done(), task  # it was to wait, and ended (or failed)
            await asyncio.sleep(0.01)


async def test_estimates_and_the_loops_locked_read_do_not_deadlock(app: App) -> None:
    low, high = await two_jobs(app)
    db = app.db
    async with db.engine.connect() as holder:
        # A key-share lock on the later job (what a foreign key check takes): the loop's
        # FOR UPDATE waits for it, an estimate's update does not (it changes no key).
        await holder.execute(
            sa.select(jobs.c.id)
            .where(jobs.c.id == high.id)
            .with_for_update(read=True, key_share=True)
        )

        async def loop_reads_the_batch() -> None:
            async with db.unit_of_work(SYSTEM) as uow:
                await uow.connection.execute(sa.text("set local deadlock_timeout = '50ms'"))
                locked = await uow.jobs.get_many([low.id, high.id], for_update=True)
                assert set(locked) == {low.id, high.id}
                await uow.commit()

        async def timeline_writes_estimates() -> None:
            async with db.unit_of_work(SYSTEM) as uow:
                await uow.connection.execute(sa.text("set local deadlock_timeout = '50ms'"))
                await uow.jobs.store_estimates([(high, False), (low, False)])  # estimate order
                await uow.commit()

        loop = asyncio.create_task(loop_reads_the_batch())
        await until_waiting(db, 1, loop)  # it holds the earlier job, waits for the later
        timeline = asyncio.create_task(timeline_writes_estimates())
        # old order: it wrote the later job and waits for the earlier; in id order it waits
        # for the earlier having taken nothing
        await until_waiting(db, 2, loop, timeline)
        await holder.rollback()
        async with asyncio.timeout(10):
            read, written = await asyncio.gather(loop, timeline, return_exceptions=True)
    assert read is None  # not "deadlock detected"
    assert written is None


async def test_a_unit_of_work_writes_the_jobs_it_changed_in_id_order(app: App) -> None:
    low, high = await two_jobs(app)
    names = {str(low.id): "low", str(high.id): "high"}
    written: list[str] = []

    def seen(
        conn: object, cursor: object, statement: str, params: Sequence[object], *_: object
    ) -> None:
        if statement.lstrip().upper().startswith("UPDATE JOB "):
            written.extend(names[str(v)] for v in params if str(v) in names)

    sa.event.listen(app.db.engine.sync_engine, "before_cursor_execute", seen)
    try:
        async with app.db.unit_of_work(SYSTEM) as uow:
            for job_id in (high.id, low.id):  # the later job loaded (and changed) first
                job = await uow.jobs.get(job_id)
                assert job is not None
                job.change_priority(JobPriority.HIGH, app.clock.now())
            await uow.commit()
    finally:
        sa.event.remove(app.db.engine.sync_engine, "before_cursor_execute", seen)
    assert written == ["low", "high"]
