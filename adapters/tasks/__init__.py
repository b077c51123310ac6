"""Background tasks: arq on Redis in production, an in-process runner for the embedded default.

Both run the same task functions (`workers.tasks`) with the same contract: one run per key at a
time (a second enqueue of a queued or running key is refused), a per-task timeout, and retries only
when the function asks with `RetryTask`, up to `max_tries`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

TaskFunction = Callable[..., Awaitable[Any]]


@dataclass(frozen=True)
class TaskSpec:
    name: str
    function: TaskFunction
    timeout_seconds: float = 300.0
    max_tries: int = 8
