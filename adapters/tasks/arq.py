"""Tasks on Redis with arq: JSON payloads (never pickle), the task key as arq's job id.

arq's own keys (`arq:job:<id>`, `arq:in-progress:<id>`, `arq:result:<id>`) have a fixed prefix;
only the queue is named. So the job id carries the queue's name (which carries the deployment's
Redis prefix): two deployments on one Redis never share a job, nor refuse each other's as a
duplicate.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from arq import Retry
from arq.connections import ArqRedis
from arq.worker import Function, func
from redis.exceptions import RedisError

from adapters.tasks import TaskSpec, processing, received, sending
from domain.errors import Unavailable
from domain.ports.tasks import RetryTask

ANSWER_SECONDS = 1.0
"""How long `answers` waits for a PING: a Redis that does not answer within a second (a
partition, not a refusal) is down for the supervisor's purposes."""


def serialize(data: dict[str, Any]) -> bytes:
    return json.dumps(data, separators=(",", ":"), default=str).encode()


def deserialize(data: bytes) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(data)
    return result


class ArqTaskQueue:
    def __init__(self, pool: ArqRedis, *, queue_name: str) -> None:
        self._pool = pool
        self._queue = queue_name

    async def enqueue(
        self, task: str, *, key: str, defer_until: datetime | None = None, **kwargs: Any
    ) -> bool:
        with sending("arq", self._queue, task, key, kwargs) as payload:
            try:
                job = await self._pool.enqueue_job(
                    task,
                    _job_id=job_id(self._queue, key),
                    _queue_name=self._queue,
                    _defer_until=defer_until,
                    **payload,
                )
            except (RedisError, OSError) as exc:
                raise Unavailable(f"the task queue ({type(exc).__name__})") from exc
            return job is not None

    async def answers(self) -> bool:
        try:
            async with asyncio.timeout(ANSWER_SECONDS):
                return bool(await self._pool.ping())
        except (RedisError, OSError, TimeoutError):
            return False


def job_id(queue_name: str, key: str) -> str:
    """arq's job id for a task key on a queue."""
    return f"{queue_name}:{key}"


def _queue_and_key(arq_job_id: str) -> tuple[str, str]:
    """The queue and task key of an arq job id (`job_id`'s inverse; queues end in ":queue")."""
    queue, found, key = arq_job_id.partition(":queue:")
    return (f"{queue}:queue", key) if found else ("", arq_job_id)


def _arq_function(spec: TaskSpec) -> Function:
    async def run(ctx: dict[str, Any], **kwargs: Any) -> Any:
        parent, arguments = received(kwargs)
        queue, key = _queue_and_key(str(ctx.get("job_id", "")))
        try:
            with processing("arq", queue, spec.name, key, parent, int(ctx.get("job_try", 1))):
                return await spec.function(ctx, **arguments)
        except RetryTask as retry:
            raise Retry(defer=retry.defer_seconds) from retry

    run.__qualname__ = run.__name__ = spec.name
    return func(run, name=spec.name, timeout=spec.timeout_seconds, max_tries=spec.max_tries)


def arq_functions(specs: Iterable[TaskSpec]) -> list[Function]:
    return [_arq_function(spec) for spec in specs]
