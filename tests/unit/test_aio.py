"""domain/aio.py: waiting and ending tasks never loses a cancellation (Python 3.11's
asyncio.wait_for does, when the awaited thing completes in the same step)."""

from __future__ import annotations

import asyncio

import pytest

from domain.aio import cancel_and_wait, wait_event


async def test_a_loop_around_wait_event_ends_when_cancelled_as_the_event_is_set() -> None:
    event = asyncio.Event()
    rounds = 0

    async def loop() -> None:
        nonlocal rounds
        while True:
            await wait_event(event, 10)
            rounds += 1
            event.clear()

    task = asyncio.create_task(loop())
    await asyncio.sleep(0.01)
    event.set()
    task.cancel()  # in the same step: the cancellation must win
    done, _ = await asyncio.wait([task], timeout=1)
    assert done == {task} and task.cancelled()
    assert rounds == 0


async def test_wait_event_says_whether_the_event_came() -> None:
    event = asyncio.Event()
    assert await wait_event(event, 0.01) is False
    event.set()
    assert await wait_event(event, 0.01) is True


async def test_cancel_and_wait_ends_tasks_and_keeps_the_callers_cancellation() -> None:
    async def stubborn() -> None:
        try:
            await asyncio.sleep(10)
        finally:
            await asyncio.sleep(0.05)  # takes a moment to clean up

    async def failing() -> None:
        raise ValueError("not re-raised by cancel_and_wait")

    tasks = [asyncio.create_task(stubborn()), asyncio.create_task(failing())]
    await asyncio.sleep(0)
    await cancel_and_wait(tasks)
    assert all(t.done() for t in tasks)

    inner = asyncio.create_task(stubborn())
    await asyncio.sleep(0)

    async def closer() -> None:
        await cancel_and_wait([inner])
        await asyncio.sleep(10)  # must not be reached once the closer itself is cancelled

    outer = asyncio.create_task(closer())
    await asyncio.sleep(0.01)  # the closer waits on the stubborn task's clean-up
    outer.cancel()
    with pytest.raises(asyncio.CancelledError):
        await outer
