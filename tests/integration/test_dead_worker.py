"""A worker that died with a task: how long its work is held from the others (arq on Redis).

Covers: no task kind runs longer than LONGEST_TASK_SECONDS, so arq's lock on a dead worker's task
(the longest timeout + 10 s) lasts at most 40 s (it was 610 s); and a hand-over whose task a dead
worker still holds locked is queued again by the submission sweeper under a fresh key once it is
overdue, and another worker hands the job over while the old task is still locked.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta

from adapters.clock import ManualClock
from adapters.tasks.arq import job_id
from domain.model.job import JobStatus
from tests.integration.conftest import redis_url
from tests.integration.test_app_flows import ALICE, make_app, sim_cluster, status_of, submission
from workers.settings import worker_for
from workers.tasks import LONGEST_TASK_SECONDS, TASKS


async def test_a_dead_workers_tasks_are_locked_briefly(pg_url: str, prefix: str) -> None:
    app = await make_app(
        pg_url, redis_url=redis_url(), tasks="arq", events="redis", redis_prefix=prefix
    )
    try:
        worker = worker_for(app, burst=True, handle_signals=False)
        assert worker.in_progress_timeout_s <= LONGEST_TASK_SECONDS + 10 <= 40
        assert all(f.timeout_s is not None for f in worker.functions.values())
        assert set(TASKS) <= set(worker.functions)
    finally:
        await app.close()


async def until(check: Callable[[], Awaitable[bool]], within: float = 20.0) -> None:
    async with asyncio.timeout(within):
        while not await check():
            await asyncio.sleep(0.05)


async def test_a_hand_over_held_by_a_dead_worker_is_queued_again(pg_url: str, prefix: str) -> None:
    clock = ManualClock(datetime.now(UTC))  # not started: the test sweeps by hand
    app = await make_app(
        pg_url,
        clock=clock,
        redis_url=redis_url(),
        tasks="arq",
        events="redis",
        redis_prefix=prefix,
    )
    assert app.arq is not None
    worker = worker_for(app, handle_signals=False)
    running = None
    try:
        cluster = await sim_cluster(app)
        job = await app.jobs.submit(ALICE, submission(cluster.id))
        # a worker took the task and died: arq's lock on it stays until it expires
        dead = job_id(app.settings.queue_name, f"submit:{job.id}:0")
        assert await app.arq.exists(f"arq:job:{dead}")
        await app.arq.psetex(f"arq:in-progress:{dead}", 600_000, b"1")

        running = asyncio.create_task(worker.main())
        assert await app.jobs.sweep_due_submissions(grace=timedelta(seconds=20)) == 0  # not due
        await clock.advance(21)
        assert await app.jobs.sweep_due_submissions(grace=timedelta(seconds=20)) == 1

        async def handed_over() -> bool:
            return await status_of(app, job.id) is JobStatus.QUEUED

        await until(handed_over)
        assert await app.arq.exists(f"arq:in-progress:{dead}")  # still locked meanwhile
    finally:
        if running is not None:
            running.cancel()
            await asyncio.gather(running, return_exceptions=True)
        await app.close()
