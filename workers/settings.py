"""arq worker settings, for `budcluster worker` and for `arq workers.settings.WorkerSettings`.

The worker builds the same App as the API (`budcluster.bootstrap.worker`, settings from the
environment), runs the task functions with the domain services in the task context, and starts
its Runtime, which, unless disabled, also runs the cluster supervisor: the watchers that follow
each cluster live with the workers.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable
from datetime import datetime
from typing import Any

from arq.connections import RedisSettings
from arq.cron import CronJob, cron
from arq.worker import Worker
from redis.exceptions import RedisError

from adapters.tasks.arq import arq_functions, deserialize, job_id, serialize
from budcluster import bootstrap
from budcluster.bootstrap import App
from budcluster.runtime import Runtime
from budcluster.settings import Settings
from domain.aio import cancel_and_wait
from domain.backoff import backoff_seconds
from domain.ports.clock import Clock
from domain.services import task_names
from workers.tasks import TASKS, sync_clusters

log = logging.getLogger(__name__)


RESTART_CAP_SECONDS = 1.0
QUIET_SECONDS = 30.0


async def run_worker(make: Callable[[], Worker], clock: Clock) -> None:
    """Run arq workers until cancelled, through Redis outages: arq's own loop ends at the
    first Redis error (found in production: a 5 s outage ended every worker, and jobs waited
    for a person). A worker that lost Redis has its running tasks cancelled (their keys stay
    in progress and run again once they expire: tasks are idempotent), and a new one starts
    after a capped, jittered backoff, until Redis answers again: at most RESTART_CAP_SECONDS
    (the tasks queued once Redis is back wait for no longer than that; with 10 s, hand-overs
    queued after a 60 s outage waited up to 10 s). Said once, then every QUIET_SECONDS."""
    failures = 0
    said: datetime | None = None
    while True:
        worker = make()
        started = clock.now()
        try:
            await worker.async_run()
            return
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise  # our caller stops us
            # arq's own SIGTERM/SIGINT handler cancelled its loop: a clean stop, no traceback
            log.info("the worker stopped on a signal")
            return
        except (RedisError, OSError) as exc:
            if (clock.now() - started).total_seconds() > 60:
                failures = 0  # it had been working: start the backoff over
            failures += 1
            delay = backoff_seconds(failures, base=0.5, cap=RESTART_CAP_SECONDS)
            now = clock.now()
            if said is None or (now - said).total_seconds() >= QUIET_SECONDS:
                said = now
                log.warning("the worker lost Redis (%s); starting again in %.1f s", exc, delay)
        finally:
            await cancel_and_wait(list(worker.tasks.values()))
        await clock.sleep(delay)


async def startup(ctx: dict[str, Any]) -> None:
    settings = Settings.from_env()
    app = await bootstrap.worker(settings)
    runtime = Runtime(app)
    await runtime.start()
    ctx.update(app.task_context)
    ctx["runtime"] = runtime


async def shutdown(ctx: dict[str, Any]) -> None:
    runtime: Runtime | None = ctx.get("runtime")
    if runtime is not None:
        await runtime.stop()
    app: App | None = ctx.get("app")
    if app is not None:
        await app.close()


def _env(name: str, default: str) -> str:
    return os.environ.get(f"BUDCLUSTER_{name}") or os.environ.get(name) or default


def sync_cron_jobs(sync_seconds: float, queue_name: str) -> list[CronJob]:
    """The full sync of every real cluster, every `sync_seconds` rounded to whole minutes
    (one worker runs each: arq's cron jobs are unique, by a job id made of their name, which
    carries the queue's so that deployments sharing a Redis each run theirs)."""
    every = max(1, min(60, round(sync_seconds / 60)))
    return [
        cron(
            sync_clusters,
            name=job_id(queue_name, task_names.SYNC_CLUSTERS),
            minute=set(range(0, 60, every)),
            timeout=TASKS[task_names.SYNC_CLUSTERS].timeout_seconds,
            unique=True,
        )
    ]


class WorkerSettings:
    functions = arq_functions(TASKS.values())
    queue_name = f"{_env('REDIS_PREFIX', 'budcluster')}:queue"
    cron_jobs = sync_cron_jobs(float(_env("CLUSTER_SYNC_SECONDS", "180")), queue_name)
    on_startup = startup
    on_shutdown = shutdown
    job_serializer = serialize
    job_deserializer = deserialize
    keep_result = 60
    max_jobs = 50
    redis_settings = RedisSettings.from_dsn(_env("REDIS_URL", "redis://127.0.0.1:6379"))


def worker_for(app: App, *, burst: bool = False, handle_signals: bool = True) -> Worker:
    """A worker bound to an already built App (the CLI and the tests use this)."""
    assert app.settings.redis_url is not None, "arq needs REDIS_URL"
    return Worker(
        functions=arq_functions(TASKS.values()),
        cron_jobs=sync_cron_jobs(app.settings.cluster_sync_seconds, app.settings.queue_name),
        queue_name=app.settings.queue_name,
        redis_pool=app.arq,
        redis_settings=RedisSettings.from_dsn(app.settings.redis_url),
        burst=burst,
        handle_signals=handle_signals,
        keep_result=60,
        max_jobs=50,
        poll_delay=0.2,
        ctx=dict(app.task_context),
        job_serializer=serialize,
        job_deserializer=deserialize,
    )
