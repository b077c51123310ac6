"""arq workers through a Redis outage, against a Redis server of the test's own, stopped and
started again.

Covers: a worker that loses Redis is started again with backoff and runs what is queued once
Redis is back (found in production mode: a 5 s outage ended every worker for good); a worker
stopped by a signal returns quietly, and one whose caller cancels it is cancelled.
"""

from __future__ import annotations

import asyncio
import shutil
import signal
import socket
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from arq import create_pool
from arq.connections import ArqRedis, RedisSettings
from arq.worker import Worker

from adapters.clock import SystemClock
from adapters.tasks.arq import ArqTaskQueue, arq_functions, deserialize, serialize
from domain.errors import Unavailable
from tests.integration.test_tasks import SPECS
from workers.settings import run_worker


class RedisServer:
    def __init__(self, directory: Path) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            pytest.fail("redis-server is not installed (apt-get install redis-server)")
        self.binary = binary
        self.directory = directory
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = int(sock.getsockname()[1])
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", str(self.directory)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RedisServer]:
    redis = RedisServer(tmp_path)
    redis.start()
    try:
        yield redis
    finally:
        redis.stop()


async def answers(server: RedisServer) -> None:
    async with asyncio.timeout(20):
        while True:
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", server.port)
                writer.close()
                return
            except OSError:
                await asyncio.sleep(0.05)


@pytest.fixture
async def pool(server: RedisServer) -> AsyncIterator[ArqRedis]:
    await answers(server)
    made = await create_pool(
        RedisSettings(port=server.port, conn_timeout=1),
        job_serializer=serialize,
        job_deserializer=deserialize,
    )
    try:
        yield made
    finally:
        await made.aclose()


async def enqueue_when_it_answers(queue: ArqTaskQueue, **kwargs: Any) -> None:
    async with asyncio.timeout(20):
        while True:
            try:
                await queue.enqueue("record", **kwargs)
                return
            except Unavailable:
                await asyncio.sleep(0.1)


async def test_a_worker_comes_back_with_redis(server: RedisServer, pool: ArqRedis) -> None:
    log: list[tuple[Any, ...]] = []
    queue_name = "outage:queue"
    queue = ArqTaskQueue(pool, queue_name=queue_name)

    def make() -> Worker:
        return Worker(
            functions=arq_functions(SPECS.values()),
            queue_name=queue_name,
            redis_pool=pool,
            handle_signals=False,
            poll_delay=0.05,
            ctx={"log": log},
            job_serializer=serialize,
            job_deserializer=deserialize,
            keep_result=0,
        )

    running = asyncio.create_task(run_worker(make, SystemClock()))
    try:
        await queue.enqueue("record", key="before", value="before")
        async with asyncio.timeout(20):
            while ("record", "before", 1) not in log:
                await asyncio.sleep(0.05)
        server.stop()
        await asyncio.sleep(1)  # the worker meets the outage
        assert not running.done(), running
        server.start()
        await answers(server)
        await enqueue_when_it_answers(queue, key="after", value="after")
        async with asyncio.timeout(30):
            while ("record", "after", 1) not in log:
                assert not running.done(), running
                await asyncio.sleep(0.05)
    finally:
        running.cancel()
        await asyncio.wait([running])


async def test_a_signal_stops_the_worker_cleanly(server: RedisServer, pool: ArqRedis) -> None:
    """arq's SIGTERM handler cancels its own loop; `budcluster worker` printed a CancelledError
    traceback at every stop (found by the fault suite). The caller cancelling still cancels."""
    made: list[Worker] = []

    def make() -> Worker:
        made.append(
            Worker(
                functions=arq_functions(SPECS.values()),
                queue_name="signal:queue",
                redis_pool=pool,
                handle_signals=False,
                poll_delay=0.05,
                job_serializer=serialize,
                job_deserializer=deserialize,
            )
        )
        return made[-1]

    running = asyncio.create_task(run_worker(make, SystemClock()))
    async with asyncio.timeout(10):
        while not made or made[-1].main_task is None:
            await asyncio.sleep(0.01)
    made[-1].handle_sig(signal.SIGTERM)
    async with asyncio.timeout(10):
        await running  # returns: no CancelledError
    assert len(made) == 1

    running = asyncio.create_task(run_worker(make, SystemClock()))
    async with asyncio.timeout(10):
        while len(made) < 2 or made[-1].main_task is None:
            await asyncio.sleep(0.01)
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
