"""A cluster keeps running while Redis is down (production mode on real PostgreSQL and Redis,
Redis behind a proxy the test cuts): the jobs already handed to the cluster are admitted and
complete during the outage, jobs submitted during it are handed over from the database by the
cluster's own supervisor, and once Redis answers again the workers take tasks as before.

Before (issue 27): the watch lease lived in Redis, so the demo cluster admitted and completed
nothing during a 60 s outage and submissions sat PENDING until Redis came back."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from urllib.parse import urlsplit

import pytest

from budcluster import bootstrap
from budcluster.bootstrap import App
from budcluster.runtime import Runtime
from budcluster.settings import Settings
from domain.model.ids import JobId
from domain.model.job import JobStatus
from tests.integration.conftest import redis_url
from tests.integration.test_app_flows import ALICE, make_app, sim_cluster, submission
from tests.support.tcp_proxy import CuttableProxy
from workers.settings import run_worker, worker_for


@pytest.fixture
async def redis_proxy() -> AsyncIterator[CuttableProxy]:
    target = urlsplit(redis_url())
    proxy = CuttableProxy(target.hostname or "127.0.0.1", target.port or 6379)
    await proxy.start()
    yield proxy
    await proxy.close()


async def production_app(url: str, proxy: CuttableProxy, prefix: str) -> App:
    """A process of a production deployment (the test's database is migrated and emptied
    once, by the first)."""
    return await bootstrap.production_api(
        Settings(
            database_url=url,
            token_pepper=b"p" * 32,
            sim_poll_seconds=0.05,
            supervisor_poll_seconds=0.2,
            redis_url=proxy.url,
            tasks="arq",
            events="redis",
            redis_prefix=prefix,
        )
    )


@pytest.fixture
async def production(
    pg_url: str, prefix: str, redis_proxy: CuttableProxy
) -> AsyncIterator[tuple[Runtime, Runtime]]:
    """Two processes: the first watches the cluster (it starts first, so it holds the lease),
    the second runs an arq worker and supervises too (it takes over when the first goes)."""
    first = Runtime(
        await make_app(
            pg_url, redis_url=redis_proxy.url, tasks="arq", events="redis", redis_prefix=prefix
        )
    )
    await first.start()
    second = Runtime(await production_app(pg_url, redis_proxy, prefix))
    worker = asyncio.create_task(
        run_worker(lambda: worker_for(second.app, handle_signals=False), second.app.clock)
    )
    yield first, second
    worker.cancel()
    await asyncio.gather(worker, return_exceptions=True)
    for runtime in (first, second):
        await runtime.stop()
        await runtime.app.close()


async def statuses(app: App, ids: list[JobId]) -> set[JobStatus]:
    found = set()
    for job_id in ids:
        job = await app.jobs.get(ALICE, job_id)
        assert job is not None
        found.add(job.status)
    return found


async def until(condition: Callable[[], Awaitable[bool]], seconds: float = 60) -> None:
    async with asyncio.timeout(seconds):
        while not await condition():
            await asyncio.sleep(0.05)


async def test_the_cluster_admits_and_completes_while_redis_is_down(
    production: tuple[Runtime, Runtime], redis_proxy: CuttableProxy
) -> None:
    first, second = production
    app = second.app
    cluster = await sim_cluster(app)  # 8 GPUs: two 4-GPU jobs at a time
    quick = {"simulation": {"runtime_seconds": 0.4}}

    async def submit() -> JobId:
        return (await app.jobs.submit(ALICE, submission(cluster.id, spec=quick))).id

    def completed(ids: list[JobId]) -> Callable[[], Awaitable[bool]]:
        async def done() -> bool:
            return await statuses(app, ids) == {JobStatus.COMPLETED}

        return done

    async def handed_over(ids: list[JobId]) -> bool:
        return JobStatus.PENDING not in await statuses(app, ids)

    warm = [await submit()]
    await until(completed(warm))  # the first process watches the cluster
    await second.start()  # now the second supervises too
    before = [await submit() for _ in range(6)]
    await until(lambda: handed_over(before))

    await redis_proxy.cut()
    # queued on the cluster before the outage: admitted and run to the end during it, also
    # when the process running the cluster's loop goes and another takes its lease over
    await first.stop()
    await first.app.close()
    await until(completed(before))
    # submitted during the outage: the cluster's supervisor hands them over from the database
    during = [await submit() for _ in range(2)]
    await until(completed(during))

    await redis_proxy.restore()
    after = [await submit()]
    await until(completed(after))  # through the task queue again
