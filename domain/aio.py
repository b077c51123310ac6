"""Ending background tasks without swallowing the caller's own cancellation."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any


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
