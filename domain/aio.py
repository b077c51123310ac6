"""Waiting and ending background tasks without swallowing the caller's own cancellation.

On Python 3.11, `asyncio.wait_for` returns the result when the awaited thing completes in the
same step as a cancellation of the caller, and the cancellation is lost (fixed in 3.12): a loop
around it then runs on after it was cancelled, and whoever waits for it to end waits for ever.
`asyncio.timeout` has no such race; the helpers here use it."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, TypeVar

T = TypeVar("T")


async def cancel_and_wait(tasks: Iterable[asyncio.Task[Any]]) -> None:
    """Cancel the tasks and wait until each has ended, whatever it ended with.

    `with suppress(CancelledError): await task` would also swallow a cancellation of the
    caller that arrives while it waits, and a loop around it would then go on for ever (a
    watch that never stops, a close that never returns). asyncio.wait never raises what the
    tasks raised, and raises CancelledError only when the caller itself is cancelled."""
    pending = list(tasks)
    for task in pending:
        task.cancel()
    if not pending:
        return
    await asyncio.wait(pending)
    for task in pending:  # retrieved, so asyncio does not log them as never retrieved
        if not task.cancelled():
            task.exception()


async def wait_event(
    event: asyncio.Event,
    seconds: float,
    *,
    sleep: Callable[[float], Awaitable[None]] | None = None,
) -> bool:
    """Wait until `event` is set, at most `seconds` (of `sleep`'s time: a clock's, where time
    is the clock port's; the event loop's without it); True if it was set."""
    if sleep is None:
        try:
            async with asyncio.timeout(seconds):
                await event.wait()
        except TimeoutError:
            return False
        return True
    if event.is_set():
        return True
    waiting = [asyncio.ensure_future(event.wait()), asyncio.ensure_future(sleep(seconds))]
    try:
        await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
    finally:
        await cancel_and_wait(waiting)
    return event.is_set()


class InThread:
    """The Compute port in a thread of this process: off the event loop, but sharing its GIL
    (the default for services built without a Compute; the service's is a process pool)."""

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.to_thread(fn, *args)
