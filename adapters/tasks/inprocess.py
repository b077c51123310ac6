"""Tasks run as asyncio tasks in this process, with arq's de-duplication, retry and timeout."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from adapters.tasks import TaskSpec, processing, received, sending
from domain.aio import cancel_and_wait
from domain.ports.clock import Clock
from domain.ports.tasks import RetryTask

log = logging.getLogger(__name__)
SYSTEM = "inprocess"


class InProcessTaskQueue:
    def __init__(
        self,
        specs: Mapping[str, TaskSpec],
        clock: Clock,
        *,
        keep_result_seconds: float = 60.0,
    ) -> None:
        self._specs = dict(specs)
        self._clock = clock
        self._keep = keep_result_seconds
        self._active: dict[str, asyncio.Task[None]] = {}
        self._finished: dict[str, float] = {}
        self.context: dict[str, Any] = {}
        self.failures: list[tuple[str, str]] = []
        """(key, error) of runs that ended in an error; for operators and tests."""

    async def answers(self) -> bool:
        return True  # this process runs its tasks

    async def enqueue(
        self, task: str, *, key: str, defer_until: datetime | None = None, **kwargs: Any
    ) -> bool:
        spec = self._specs.get(task)
        if spec is None:
            raise KeyError(f"unknown task {task}")
        self._forget_old()
        if key in self._active or key in self._finished:
            return False
        delay = 0.0 if defer_until is None else (defer_until - self._clock.now()).total_seconds()
        with sending(SYSTEM, SYSTEM, task, key, kwargs) as payload:
            self._active[key] = asyncio.create_task(self._run(spec, key, delay, payload), name=key)
        return True

    def _forget_old(self) -> None:
        horizon = time.monotonic() - self._keep
        for key in [k for k, at in self._finished.items() if at < horizon]:
            del self._finished[key]

    async def _run(self, spec: TaskSpec, key: str, delay: float, kwargs: dict[str, Any]) -> None:
        parent, arguments = received(kwargs)
        try:
            try_number = 1
            while True:
                if delay > 0:
                    await self._clock.sleep(delay)
                ctx = {**self.context, "job_try": try_number, "job_id": key}
                try:
                    with processing(SYSTEM, SYSTEM, spec.name, key, parent, try_number):
                        async with asyncio.timeout(spec.timeout_seconds):
                            await spec.function(ctx, **arguments)
                    return
                except RetryTask as retry:
                    if try_number >= spec.max_tries:
                        self._failed(key, f"gave up after {try_number} tries")
                        return
                    try_number += 1
                    delay = retry.defer_seconds
                except TimeoutError:
                    self._failed(key, f"timed out after {spec.timeout_seconds}s")
                    return
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    log.exception("task %s failed", key)
                    self._failed(key, repr(exc))
                    return
        finally:
            self._active.pop(key, None)
            self._finished[key] = time.monotonic()

    def _failed(self, key: str, error: str) -> None:
        log.warning("task %s: %s", key, error)
        self.failures.append((key, error))

    async def drain(self, within_seconds: float = 30.0) -> None:
        """Wait until nothing is queued or running (tests)."""
        deadline = time.monotonic() + within_seconds
        while self._active and time.monotonic() < deadline:
            await asyncio.wait(list(self._active.values()), timeout=deadline - time.monotonic())

    async def close(self) -> None:
        tasks = list(self._active.values())
        await cancel_and_wait(tasks)
