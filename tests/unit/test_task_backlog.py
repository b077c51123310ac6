"""Work queued after a commit while the task queue does not answer is kept and queued again, in
order, as soon as the queue answers (found by the fault suite: submissions committed during a
5 s Redis outage waited for the supervisor's 20 s sweep while GPUs stood idle).

Time comes from the manual fake clock: the backlog's backoff waits on it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import datetime
from typing import Any

import pytest

from domain.errors import Unavailable
from domain.services.task_names import SUBMIT_WORKLOAD, TaskBacklog, enqueue_after_commit
from tests.support.fakes import FakeClock, FakeTaskQueue


class Outage(FakeTaskQueue):
    """A task queue that refuses while `down`."""

    def __init__(self) -> None:
        super().__init__()
        self.down = True
        self.refused = 0

    async def enqueue(
        self, task: str, *, key: str, defer_until: datetime | None = None, **kwargs: Any
    ) -> bool:
        if self.down:
            self.refused += 1
            raise Unavailable("the task queue")
        return await super().enqueue(task, key=key, defer_until=defer_until, **kwargs)

    async def answers(self) -> bool:
        return not self.down


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(manual=True)


@pytest.fixture
async def running(clock: FakeClock) -> AsyncIterator[tuple[Outage, TaskBacklog]]:
    queue = Outage()
    backlog = TaskBacklog(queue, clock, limit=3)
    task = asyncio.create_task(backlog.run())
    yield queue, backlog
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_refused_work_is_queued_in_order_once_the_queue_answers(
    clock: FakeClock, running: tuple[Outage, TaskBacklog]
) -> None:
    queue, backlog = running
    for n in range(3):
        assert not await enqueue_after_commit(
            backlog, SUBMIT_WORKLOAD, key=f"submit:{n}", job_id=str(n), attempt=0
        )
    assert backlog.kept == ["submit:0", "submit:1", "submit:2"]
    await clock.run_for(5.0)  # the outage goes on: tried again with backoff, nothing lost
    assert queue.enqueued == [] and backlog.kept == ["submit:0", "submit:1", "submit:2"]
    tries = queue.refused
    assert 4 <= tries <= 25  # backed off (capped at 1 s), not spinning

    queue.down = False
    await clock.run_for(1.1)  # within one capped backoff step (1 s) of the queue answering
    assert [e.key for e in queue.enqueued] == ["submit:0", "submit:1", "submit:2"]
    assert queue.enqueued[1].kwargs == {"job_id": "1", "attempt": 0}
    assert backlog.kept == []


async def test_the_backlog_is_bounded_oldest_first(
    clock: FakeClock, running: tuple[Outage, TaskBacklog]
) -> None:
    _, backlog = running
    for n in range(5):
        await enqueue_after_commit(backlog, SUBMIT_WORKLOAD, key=f"k{n}", job_id=str(n))
    assert backlog.kept == ["k2", "k3", "k4"] and backlog.dropped == 2


async def test_work_the_queue_takes_is_not_kept(
    clock: FakeClock, running: tuple[Outage, TaskBacklog]
) -> None:
    queue, backlog = running
    queue.down = False
    assert await enqueue_after_commit(backlog, SUBMIT_WORKLOAD, key="k", job_id="1")
    assert backlog.kept == [] and [e.key for e in queue.enqueued] == ["k"]
