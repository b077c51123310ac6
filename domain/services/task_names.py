"""Names of the background tasks the services queue (`workers.tasks` binds them to functions),
and how work for something already committed is queued.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from datetime import datetime
from typing import Any

from domain.backoff import backoff_seconds
from domain.errors import Unavailable
from domain.ports.clock import Clock
from domain.ports.tasks import TaskQueue

log = logging.getLogger(__name__)

SUBMIT_WORKLOAD = "submit_workload"
CANCEL_WORKLOAD = "cancel_workload"
SET_WORKLOAD_PRIORITY = "set_workload_priority"
CONNECT_CLUSTER = "connect_cluster"
SYNC_CLUSTERS = "sync_clusters"
RECONCILE_QUOTAS = "reconcile_quotas"
REFRESH_DEPLOYMENT = "refresh_deployment"
START_BENCHMARK = "start_benchmark"
SETTLE_BENCHMARK = "settle_benchmark"
KEEP_LOGS = "keep_logs"
INSTALL_ADDON = "install_addon"


async def enqueue_after_commit(tasks: TaskQueue, task: str, *, key: str, **kwargs: Any) -> bool:
    """Queue work that follows a committed change. If the queue does not answer, the commit
    stands and the caller is answered: the work is kept in this process and queued as soon as
    the queue answers again (when `tasks` is a `TaskBacklog`), and every such task also has a
    safety net for a process that dies meanwhile (the supervisor re-queues overdue submissions
    and registrations, the reconciler takes back what a final job left on its cluster, the
    periodic sync puts quotas back), so this logs and returns False."""
    try:
        return await tasks.enqueue(task, key=key, **kwargs)
    except Unavailable as exc:
        log.warning("not queued %s (%s): it will be queued again", key, exc)
        if isinstance(tasks, TaskBacklog):
            tasks.keep(task, key=key, **kwargs)
        return False


class TaskBacklog:
    """The task queue, with what it refused after a commit kept and queued again, in order, as
    soon as it answers (capped, jittered backoff between tries, from the clock port).

    Found by the fault suite: submissions committed during a 5 s Redis outage waited for the
    supervisor's 20 s sweep, while the GPUs they could have used stood idle. The backlog lives
    in the process's memory and is bounded (the oldest go first past `limit`): a process that
    dies loses it, and the safety nets named in `enqueue_after_commit` still hold."""

    def __init__(
        self, tasks: TaskQueue, clock: Clock, *, limit: int = 10_000, cap_seconds: float = 1.0
    ) -> None:
        self._tasks = tasks
        self._clock = clock
        self._limit = limit
        self._cap = cap_seconds
        self._kept: OrderedDict[str, tuple[str, dict[str, Any]]] = OrderedDict()
        self._wake = asyncio.Event()
        self.dropped = 0

    @property
    def kept(self) -> list[str]:
        """The keys waiting to be queued, oldest first."""
        return list(self._kept)

    async def enqueue(
        self, task: str, *, key: str, defer_until: datetime | None = None, **kwargs: Any
    ) -> bool:
        return await self._tasks.enqueue(task, key=key, defer_until=defer_until, **kwargs)

    async def answers(self) -> bool:
        return await self._tasks.answers()

    def keep(self, task: str, *, key: str, **kwargs: Any) -> None:
        self._kept[key] = (task, kwargs)
        self._kept.move_to_end(key)
        while len(self._kept) > self._limit:
            self._kept.popitem(last=False)
            self.dropped += 1
        self._wake.set()

    async def run(self) -> None:
        failures = 0
        while True:
            if not self._kept:
                self._wake.clear()
                await self._wake.wait()
                continue
            key, (task, kwargs) = next(iter(self._kept.items()))
            try:
                await self._tasks.enqueue(task, key=key, **kwargs)
            except Unavailable:
                failures += 1
                await self._clock.sleep(backoff_seconds(failures, base=0.25, cap=self._cap))
                continue
            except Exception:  # not an outage: a bug; the safety nets still have this work
                log.exception("queueing %s again failed; leaving it to the safety nets", key)
            if failures:
                log.info("the task queue answers again: queueing %d kept tasks", len(self._kept))
            failures = 0
            if self._kept.get(key) == (task, kwargs):
                del self._kept[key]
