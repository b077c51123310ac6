"""Background tasks: run once per key, again only when a task asks (`RetryTask`)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol


class RetryTask(Exception):
    """Raised by a task function to be run again after `defer_seconds` (counts as a try)."""

    def __init__(self, defer_seconds: float) -> None:
        super().__init__(f"retry in {defer_seconds:.1f}s")
        self.defer_seconds = defer_seconds


class TaskQueue(Protocol):
    async def enqueue(
        self, task: str, *, key: str, defer_until: datetime | None = None, **kwargs: Any
    ) -> bool:
        """Run `task(**kwargs)` once per `key` (returns False if that key is already queued)."""

    async def answers(self) -> bool:
        """Whether the queue answers now (one cheap round trip, bounded in time)."""
