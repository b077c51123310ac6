"""What runs in a process beside its requests and tasks, started and stopped apart from the wiring.

`budcluster.bootstrap` builds an App and starts nothing; a Runtime starts the App's loops and
stops them. Every process that serves (the API, embedded or not, and the arq worker) runs the
model endpoints' server with its sweep of benchmark runs, the Redis relay when events cross
processes, the hub's catch-up from the event log and the backlog of hand-overs the task queue
refused; with the supervisor on, also the cluster supervisor, the pruning of old events and
audit records, the budget check of running jobs, the balancing of fleets, and, where no arq
worker runs it as a cron job, the full sync of real clusters.
The in-process task runner gets the services its tasks call when the runtime starts: until then
a task run in this process finds none. A one-off command (the CLI) starts no Runtime.
`stop` cancels what was started (and what the process adopted, such as the check of open
WebSockets' tokens); `App.close` then releases what was built.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from typing import TYPE_CHECKING, Any

from adapters.db.uow import unanswered
from adapters.tasks.arq import ArqTaskQueue
from adapters.tasks.inprocess import InProcessTaskQueue
from domain.aio import cancel_and_wait, wait_event
from domain.errors import Unavailable
from domain.model.cluster import Cluster, Platform
from domain.model.deployment import Deployment

if TYPE_CHECKING:
    from budcluster.container import App

log = logging.getLogger(__name__)


def log_failure(what: str, exc: Exception) -> None:
    """A periodic chore failed: an outage is a warning (the next round tries again), anything
    else a bug with its traceback. (Found by the fault suite: a PostgreSQL restart logged
    tracebacks from event pruning.)"""
    if isinstance(exc, Unavailable) or unanswered(exc):
        log.warning("%s: the database does not answer (%s); next round", what, exc)
    else:
        log.exception("%s failed", what)


class Runtime:
    def __init__(self, app: App) -> None:
        self.app = app
        self.background: list[asyncio.Task[Any]] = []
        self.supervising = False

    async def start(self, *, supervisor: bool | None = None) -> None:
        """Start the loops; `supervisor` overrides the settings' `run_supervisor`."""
        app = self.app
        if isinstance(app.tasks, InProcessTaskQueue):
            app.tasks.context.update(app.task_context)
        await app.serving.start(remembered=await self._endpoints_port())
        self._run(self._serve(), "model-serving")
        self._run(self._autoscale(), "autoscaling")
        if app.relay is not None:
            self._run(app.relay.run(), "event-relay")
            await wait_event(app.relay.connected, 5)
        self._run(app.hub.run_catch_up(app.settings.catch_up_seconds), "event-catch-up")
        self._run(app.backlog.run(), "task-backlog")
        self.supervising = app.settings.run_supervisor if supervisor is None else supervisor
        if self.supervising:
            self._run(app.supervisor.run(), "cluster-supervisor")
            self._run(self._prune(), "event-pruning")
            self._run(self._budgets(), "budget-check")
            self._run(self._fleets(), "fleet-balancing")
            self._run(self._drains(), "drains")
            if not isinstance(app.tasks, ArqTaskQueue):  # arq workers run it as a cron job
                self._run(self._sync_clusters(), "cluster-sync")

    def adopt(self, task: asyncio.Task[Any]) -> None:
        """A task started elsewhere in the process, to be stopped with the runtime's own."""
        self.background.append(task)

    async def stop(self) -> None:
        await cancel_and_wait(self.background)
        self.background.clear()

    def _run(self, loop: Any, name: str) -> None:
        self.background.append(asyncio.create_task(loop, name=name))

    async def _endpoints_port(self) -> int | None:
        """The port the simulated deployments' endpoint URLs name: where this service served
        them before it restarted (the most named, should processes have disagreed)."""
        try:
            found = await self.app.deployments.with_endpoints(Platform.SIMULATED)
        except Exception as exc:  # not migrated yet, or the database does not answer
            log.warning("model endpoints: where they were is unknown (%s)", type(exc).__name__)
            return None
        urls = [d.endpoint_url for d in found if d.endpoint_url]
        ports = Counter(p for p in map(self.app.serving.port_of, urls) if p)
        return ports.most_common(1)[0][0] if ports else None

    async def _serve(self) -> None:
        """Deployments learn where this process serves their endpoints (the port of before a
        restart, unless it was taken), then benchmark runs whose process stopped are failed,
        every 15 s."""
        try:
            await self.app.deployments.refresh_all()
        except Exception as exc:
            log_failure("refreshing deployments", exc)
        while True:
            await asyncio.sleep(15)
            try:
                await self.app.benchmark_runner.sweep()
            except Exception as exc:
                log_failure("sweeping benchmark runs", exc)

    async def _autoscale(self) -> None:
        """Every `autoscale_seconds`, the deployments that scale themselves and that this
        process looks after: on a simulated cluster, those it serves (their load is known only
        here); on Kubernetes, all of them where the supervisor runs."""
        app = self.app

        def here(deployment: Deployment, cluster: Cluster) -> bool:
            if cluster.platform is Platform.SIMULATED:
                url = deployment.endpoint_url
                return url is not None and url.startswith(app.serving.base_url + "/")
            return self.supervising

        while True:
            await asyncio.sleep(app.settings.autoscale_seconds)
            try:
                await app.autoscaler.autoscale_all(here)
            except Exception as exc:
                log_failure("autoscaling deployments", exc)

    async def _sync_clusters(self) -> None:
        while True:
            await asyncio.sleep(self.app.settings.cluster_sync_seconds)
            try:
                await self.app.registry.sync_all()
            except Exception as exc:
                log_failure("syncing clusters", exc)

    async def _budgets(self) -> None:
        """Running jobs' costs against their budgets, every `budget_check_seconds`."""
        app = self.app
        while True:
            await asyncio.sleep(app.settings.budget_check_seconds)
            try:
                await app.budgets.check()
            except Exception as exc:
                log_failure("checking budgets", exc)

    async def _fleets(self) -> None:
        """Every fleet's waiting jobs weighed against its other members, and moved where they
        gain enough (`FleetBalancer`), every `fleet_balance_seconds`, and never sooner after a
        pass than twice what it took: a pass runs an estimate per member, so at most a third of
        the process's time goes to it."""
        app = self.app
        took = 0.0
        while True:
            await asyncio.sleep(max(app.settings.fleet_balance_seconds, 2 * took))
            began = time.perf_counter()
            try:
                await app.balancer.balance_all()
            except Exception as exc:
                log_failure("balancing fleets", exc)
            took = time.perf_counter() - began

    async def _drains(self) -> None:
        """A round of every drain under way (`DrainService.advance_all`: what raced it is
        requeued or replaced, Kubernetes' evictions tried again, a drain that is done marked
        DRAINED), every `drain_seconds`."""
        app = self.app
        while True:
            await asyncio.sleep(app.settings.drain_seconds)
            try:
                await app.drains.advance_all()
            except Exception as exc:
                log_failure("advancing drains", exc)

    async def _prune(self) -> None:
        app = self.app
        while True:
            await asyncio.sleep(60)
            try:
                for cluster in await app.clusters.all():
                    await app.event_log.prune(cluster.id, keep=app.settings.event_retention)
                await app.audit.prune()
            except Exception as exc:
                log_failure("pruning events", exc)
