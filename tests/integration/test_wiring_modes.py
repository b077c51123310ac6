"""The wiring's modes and the runtime that runs them (budcluster/bootstrap.py, runtime.py).

Covers: each mode's factory puts the adapters the settings name behind the ports (the embedded
process its own task queue, in-process events and buckets; the production API arq, Redis events
and Redis buckets; the worker and the CLI the queue the settings name), `api` picks the API's
factory by the settings and the two refuse the other's task queue; building starts nothing; a
Runtime starts each mode's loops (the relay with Redis events, the cluster sync only where no arq
worker runs it, none of the supervisor's with it off) and stopping it cancels them all.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from adapters.events.hub import InProcessPublisher
from adapters.events.redis import RedisPublisher
from adapters.limits.buckets import LocalRateLimiter, RedisRateLimiter
from adapters.tasks.arq import ArqTaskQueue
from adapters.tasks.inprocess import InProcessTaskQueue
from budcluster import bootstrap, migrate
from budcluster.bootstrap import App
from budcluster.runtime import Runtime
from budcluster.settings import Settings
from tests.integration.conftest import empty, redis_url

Factory = Callable[[Settings], Awaitable[App]]


def embedded_settings(url: str, tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path, database_url=url, token_pepper=b"p" * 32)


def production_settings(url: str, prefix: str) -> Settings:
    return Settings(
        database_url=url,
        token_pepper=b"p" * 32,
        redis_url=redis_url(),
        tasks="arq",
        events="redis",
        redis_prefix=prefix,
    )


async def test_the_embedded_process_runs_its_own_tasks_events_and_buckets(
    sqlite_url: str, tmp_path: Path
) -> None:
    before = asyncio.all_tasks()
    app = await bootstrap.embedded(embedded_settings(sqlite_url, tmp_path))
    try:
        assert asyncio.all_tasks() == before  # built, not started
        assert isinstance(app.tasks, InProcessTaskQueue) and app.arq is None
        assert isinstance(app.publisher, InProcessPublisher) and app.relay is None
        assert isinstance(app.limiter, LocalRateLimiter) and app.redis is None
    finally:
        await app.close()


async def test_the_production_api_hands_tasks_to_arq_and_events_to_redis(
    pg_url: str, prefix: str
) -> None:
    app = await bootstrap.production_api(production_settings(pg_url, prefix))
    try:
        assert isinstance(app.tasks, ArqTaskQueue) and app.arq is not None
        assert isinstance(app.publisher, RedisPublisher) and app.relay is not None
        assert isinstance(app.limiter, RedisRateLimiter) and app.redis is not None
    finally:
        await app.close()


@pytest.mark.parametrize("factory", [bootstrap.worker, bootstrap.cli, bootstrap.api])
async def test_the_worker_cli_and_api_take_the_queue_the_settings_name(
    factory: Factory, sqlite_url: str, pg_url: str, prefix: str, tmp_path: Path
) -> None:
    for settings, queue in [
        (embedded_settings(sqlite_url, tmp_path), InProcessTaskQueue),
        (production_settings(pg_url, prefix), ArqTaskQueue),
    ]:
        app = await factory(settings)
        try:
            assert isinstance(app.tasks, queue)
        finally:
            await app.close()


async def test_an_api_factory_refuses_the_other_modes_queue(
    sqlite_url: str, pg_url: str, prefix: str, tmp_path: Path
) -> None:
    with pytest.raises(ValueError, match="arq"):
        await bootstrap.embedded(production_settings(pg_url, prefix))
    with pytest.raises(ValueError, match="arq"):
        await bootstrap.production_api(embedded_settings(sqlite_url, tmp_path))


async def started(factory: Factory, settings: Settings, **start: bool) -> set[str]:
    """The names of the loops a Runtime of the App runs; it is stopped again."""
    app = await factory(settings)
    await migrate.upgrade(app.db.engine)
    await empty(app.db)
    runtime = Runtime(app)
    try:
        await runtime.start(**start)
        names = {task.get_name() for task in runtime.background}
        loops = list(runtime.background)
    finally:
        await runtime.stop()
        await app.close()
    assert runtime.background == [] and all(task.done() for task in loops)
    return names


SERVING = {"model-serving", "autoscaling", "event-catch-up", "task-backlog"}
SUPERVISING = {"cluster-supervisor", "event-pruning", "budget-check", "fleet-balancing", "drains"}


async def test_each_mode_runs_its_loops_and_stops_them(
    sqlite_url: str, pg_url: str, prefix: str, tmp_path: Path
) -> None:
    embedded = embedded_settings(sqlite_url, tmp_path)
    production = production_settings(pg_url, prefix)
    assert await started(bootstrap.embedded, embedded) == SERVING | SUPERVISING | {"cluster-sync"}
    assert await started(bootstrap.embedded, embedded, supervisor=False) == SERVING
    assert await started(bootstrap.production_api, production) == (
        SERVING | SUPERVISING | {"event-relay"}  # arq workers sync the clusters (a cron job)
    )
    assert await started(bootstrap.worker, production, supervisor=False) == SERVING | {
        "event-relay"
    }
