"""Background tasks on both runners: arq with a burst worker on real Redis, and in-process.

Covers the shared contract: one run per key while it is queued, JSON payloads (never pickle),
`RetryTask` re-runs up to max_tries with the try number in the context, and a timeout ends a run.
Then the real thing: submitting a job queues its hand-over on arq, and a burst worker hands it to
the simulated cluster and moves the job to QUEUED.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from arq import create_pool
from arq.connections import RedisSettings
from arq.worker import Worker
from redis.asyncio import Redis

from adapters.clock import SystemClock
from adapters.tasks import TaskSpec
from adapters.tasks.arq import ArqTaskQueue, arq_functions, deserialize, serialize
from adapters.tasks.inprocess import InProcessTaskQueue
from domain.ports.tasks import RetryTask
from tests.integration.conftest import redis_url
from workers.settings import sync_cron_jobs


async def record(ctx: dict[str, Any], *, value: str) -> None:
    ctx["log"].append(("record", value, ctx["job_try"]))


async def flaky(ctx: dict[str, Any], *, succeed_on: int) -> None:
    ctx["log"].append(("flaky", ctx["job_try"]))
    if ctx["job_try"] < succeed_on:
        raise RetryTask(0.01)


async def slow(ctx: dict[str, Any]) -> None:
    await asyncio.sleep(5)
    ctx["log"].append(("slow", "finished"))


SPECS = {
    s.name: s
    for s in (
        TaskSpec("record", record, timeout_seconds=5, max_tries=3),
        TaskSpec("flaky", flaky, timeout_seconds=5, max_tries=3),
        TaskSpec("slow", slow, timeout_seconds=0.3, max_tries=1),
    )
}


class ArqRunner:
    def __init__(self, prefix: str) -> None:
        self.queue_name = f"{prefix}:queue"
        self.log: list[tuple[Any, ...]] = []

    async def __aenter__(self) -> ArqRunner:
        self.pool = await create_pool(
            RedisSettings.from_dsn(redis_url()),
            job_serializer=serialize,
            job_deserializer=deserialize,
            default_queue_name=self.queue_name,
        )
        self.queue = ArqTaskQueue(self.pool, queue_name=self.queue_name)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.pool.aclose()

    async def run(self) -> None:
        worker = Worker(
            functions=arq_functions(SPECS.values()),
            queue_name=self.queue_name,
            redis_pool=self.pool,
            burst=True,
            handle_signals=False,
            poll_delay=0.05,
            ctx={"log": self.log},
            job_serializer=serialize,
            job_deserializer=deserialize,
            keep_result=0,
        )
        await worker.main()


class LocalRunner:
    def __init__(self, prefix: str) -> None:
        self.log: list[tuple[Any, ...]] = []

    async def __aenter__(self) -> LocalRunner:
        self.queue = InProcessTaskQueue(SPECS, SystemClock(), keep_result_seconds=0)
        self.queue.context["log"] = self.log
        self.paused = True
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.queue.close()

    async def run(self) -> None:
        await self.queue.drain(within_seconds=10)


Runner = ArqRunner | LocalRunner


@pytest.fixture(params=["arq", "inprocess"])
async def runner(request: pytest.FixtureRequest, prefix: str) -> AsyncIterator[Runner]:
    kind = ArqRunner if request.param == "arq" else LocalRunner
    async with kind(prefix) as r:
        yield r


KEY = ""


@pytest.fixture(autouse=True)
def unique_key() -> None:
    global KEY
    KEY = f"test-task-{uuid.uuid4().hex}"


async def test_one_run_per_key(runner: Runner) -> None:
    assert await runner.queue.enqueue("record", key=KEY, value="first") is True
    assert await runner.queue.enqueue("record", key=KEY, value="second") is False
    await runner.run()
    assert runner.log == [("record", "first", 1)]


async def test_retry_until_success(runner: Runner) -> None:
    await runner.queue.enqueue("flaky", key=KEY, succeed_on=3)
    await runner.run()
    assert runner.log == [("flaky", 1), ("flaky", 2), ("flaky", 3)]


async def test_retry_stops_at_max_tries(runner: Runner) -> None:
    await runner.queue.enqueue("flaky", key=KEY, succeed_on=99)
    await runner.run()
    assert runner.log == [("flaky", 1), ("flaky", 2), ("flaky", 3)]


async def test_timeout_ends_a_run(runner: Runner) -> None:
    await runner.queue.enqueue("slow", key=KEY)
    await runner.run()
    assert runner.log == []


async def test_arq_payloads_are_json(prefix: str, redis: Redis) -> None:
    async with ArqRunner(prefix) as arq_runner:
        await arq_runner.queue.enqueue("record", key=KEY, value="v")
        raw = await redis.get(f"arq:job:{arq_runner.queue_name}:{KEY}")
        payload = json.loads(raw)
        assert (payload["f"], payload["k"]) == ("record", {"value": "v"})
        await arq_runner.run()


async def test_two_deployments_on_one_redis_never_share_a_task(redis: Redis) -> None:
    """Found in production mode: arq's keys ignored the configured prefix, so a second
    deployment's task with the same key was refused as a duplicate (or run by the other's
    workers)."""
    first, second = f"deploy-a-{uuid.uuid4().hex[:8]}", f"deploy-b-{uuid.uuid4().hex[:8]}"
    async with ArqRunner(first) as a, ArqRunner(second) as b:
        assert await a.queue.enqueue("record", key=KEY, value="a") is True
        assert await b.queue.enqueue("record", key=KEY, value="b") is True
        await a.run()
        await b.run()
    assert (a.log, b.log) == ([("record", "a", 1)], [("record", "b", 1)])
    crons = [sync_cron_jobs(180, f"{p}:queue")[0].name for p in (first, second)]
    assert crons[0] != crons[1] and all(p in c for p, c in zip((first, second), crons, strict=True))
