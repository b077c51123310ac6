"""Follow every cluster: list its workloads, then watch them, applying what it reports.

One process at a time watches a given cluster, holding a short lease (3 s) that it renews only
while the cluster's loop shows signs of life: a holder that stalls (out of database connections,
say) lets go within `stall_seconds`, and one that dies is replaced within the lease's time. Where
budcluster itself runs admission (a simulated cluster), the loop is also fenced: each watch claims
a generation, and a step under an older one writes nothing (`Superseded`), so two processes that
both believe they hold the lease (a Redis restart) never both admit.

Watching a cluster means: read its nodes, list every workload and apply the listing in one read and
one commit (catching up on whatever happened while no one watched), then apply what it reports
batch by batch, each batch (an admission cycle: releases with the admissions they made room for)
in one commit. Cancelling is level-triggered: whatever runs for a job that is final is taken back,
at the listing, and by a sweep every `sweep_seconds`. When the gateway fails, the watch is
restarted after a capped, jittered backoff. The supervisor also re-queues overdue submissions, the
safety net for a process that died between committing a job and queueing its task, or with the task.

No cluster's progress waits on Redis: the lease is the database's (in production), and while the
task queue does not answer, the supervisor hands the PENDING jobs of the clusters it watches over
itself, from the database, a moment (`OUTAGE_GRACE`) after they were committed (before, a 60 s
Redis outage left every submission PENDING until it ended; issue 27).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from datetime import datetime, timedelta
from typing import Any

from domain.aio import cancel_and_wait
from domain.backoff import backoff_seconds
from domain.errors import Unavailable
from domain.model.cluster import Cluster, ClusterStatus
from domain.model.ids import ClusterId
from domain.model.job import Job
from domain.ports.clock import Clock
from domain.ports.gateways import (
    ClusterGateway,
    GatewayFactory,
    GatewayUnavailable,
    Superseded,
    WorkloadObservation,
)
from domain.ports.leases import Lease
from domain.ports.tasks import RetryTask
from domain.services.clusters import ClusterService
from domain.services.jobs import JobService
from domain.services.observations import ObservationService
from domain.services.registry import ClusterRegistry
from domain.services.timeline import TimelineRefresher
from domain.services.workloads import WorkloadService

log = logging.getLogger(__name__)

# Retrying a watch that met our own database not answering (an outage, not the cluster): a short
# capped backoff, not the cluster's (5 s doubling to 5 min), which held admission up to 8 s after
# PostgreSQL was back in the fault suite. An outage after this long a run starts over.
OUTAGE_CAP_SECONDS = 2.0
OUTAGE_RESET_SECONDS = 10.0
# While the lease's store does not answer, "cannot claim" and "cannot renew" are logged once per
# cluster and then every QUIET_SECONDS: a Redis outage wrote one line a second per cluster and
# process (the fault suite).
QUIET_SECONDS = 30.0
# While the task queue does not answer, a submission is handed over by the supervisor once it
# has been PENDING this long: long enough for the submitting process's own hand-over to have
# failed (its enqueue fails at once), short beside the supervisor's tick.
OUTAGE_GRACE = timedelta(seconds=1)
# While the task queue does not answer, the supervisor ticks at least this often, and the first
# tick after it answers again still hands over from the database what was committed meanwhile
# (the fault suite: at a 5 s tick, jobs submitted in the outage's last seconds waited for the
# API's backlog and the worker's restart, up to 2.7 s after Redis answered; issue 27 asks 2 s).
OUTAGE_POLL_SECONDS = 1.0


class _Repeated:
    """A warning that would repeat every try while an outage lasts: due once, then once every
    QUIET_SECONDS, until `over()`."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._said: datetime | None = None

    def due(self) -> bool:
        now = self._clock.now()
        if self._said is not None and (now - self._said).total_seconds() < QUIET_SECONDS:
            return False
        self._said = now
        return True

    def over(self) -> None:
        self._said = None


class ClusterSupervisor:
    def __init__(
        self,
        *,
        clusters: ClusterService,
        jobs: JobService,
        observations: ObservationService,
        gateways: GatewayFactory,
        lease: Lease,
        clock: Clock,
        poll_seconds: float = 5.0,
        lease_ttl_seconds: float = 3.0,
        stall_seconds: float = 10.0,
        sweep_seconds: float = 10.0,
        submission_grace: timedelta = timedelta(seconds=20),
        backoff: Callable[[int], float] = backoff_seconds,
        timeline: TimelineRefresher | None = None,
        workloads: WorkloadService | None = None,
        registry: ClusterRegistry | None = None,
        registering_grace: timedelta = timedelta(seconds=60),
        queue_answers: Callable[[], Awaitable[bool]] | None = None,
    ) -> None:
        self._queue_answers = queue_answers
        self._registry = registry
        self._registering_grace = registering_grace
        self._timeline = timeline
        self._workloads = workloads
        self._clusters = clusters
        self._jobs = jobs
        self._observations = observations
        self._gateways = gateways
        self._lease = lease
        self._clock = clock
        self._poll = poll_seconds
        self._ttl = lease_ttl_seconds
        self._stall = stall_seconds
        self._sweep_seconds = sweep_seconds
        self._progress: dict[ClusterId, datetime] = {}
        """When each followed cluster's loop last showed a sign of life (renewal depends on it)."""
        self._grace = submission_grace
        self._backoff = backoff
        self._watches: dict[ClusterId, asyncio.Task[None]] = {}
        self._holding: set[ClusterId] = set()
        """The clusters whose lease this process holds (whose loop it runs)."""
        self._queue_down = _Repeated(clock)
        self._queue_was_down = False

    async def run(self) -> None:
        """Run until cancelled."""
        try:
            while True:
                await self.tick()
                poll = self._poll
                if self._queue_was_down:
                    poll = min(poll, OUTAGE_POLL_SECONDS)
                await self._clock.sleep(poll)
        finally:
            await self.stop()

    async def tick(self) -> None:
        try:
            clusters = await self._clusters.all()
            present = {c.id for c in clusters}
            for gone in [k for k in self._watches if k not in present]:
                self._watches.pop(gone).cancel()
            now = self._clock.now()
            for cluster in clusters:
                task = self._watches.get(cluster.id)
                if not self._followed(cluster):
                    if task is not None:
                        task.cancel()
                        del self._watches[cluster.id]
                    if (
                        cluster.status is ClusterStatus.REGISTERING
                        and self._registry is not None
                        and now - cluster.updated_at > self._registering_grace
                    ):  # the safety net for a connect task that was never queued
                        await self._registry.queue_connect(cluster.id, retry=True)
                    continue
                if task is None or task.done():
                    self._watches[cluster.id] = asyncio.create_task(
                        self._watch(cluster), name=f"watch-{cluster.name}"
                    )
            await self._sweep_submissions()
            if self._workloads is not None:
                await self._workloads.hold_back_closed_windows()
        except Unavailable as exc:  # an outage: said once per tick, no traceback
            log.warning("cluster supervisor tick: %s; next tick tries again", exc)
        except Exception:
            log.exception("cluster supervisor tick failed")

    async def _sweep_submissions(self) -> None:
        """Queue again what is overdue; or, while the task queue does not answer, hand over
        the PENDING jobs of the clusters this process watches itself (an arq task may run the
        same hand-over later: hand-overs are idempotent)."""
        if self._workloads is None or self._queue_answers is None or await self._queue_answers():
            self._queue_down.over()
            if self._queue_was_down and self._workloads is not None:
                # the first tick after the outage: what was committed in its last moments is
                # handed over here too, not left to the API's backlog and the worker's restart
                self._queue_was_down = False
                await self._hand_over(
                    await self._jobs.ready_submissions(grace=timedelta(0), clusters=self._holding)
                )
            await self._jobs.sweep_due_submissions(grace=self._grace)
            return
        self._queue_was_down = True
        ready = await self._jobs.ready_submissions(grace=OUTAGE_GRACE, clusters=self._holding)
        if ready and self._queue_down.due():
            log.warning(
                "the task queue does not answer: handing %d submissions over from here", len(ready)
            )
        await self._hand_over(ready)

    async def _hand_over(self, ready: Sequence[Job]) -> None:
        assert self._workloads is not None
        for job in ready:
            try:
                await self._workloads.submit(job.id, job.attempt)
            except (RetryTask, GatewayUnavailable):
                continue  # not yet (a backoff, a window) or its cluster does not answer

    async def stop(self) -> None:
        tasks = list(self._watches.values())
        self._watches.clear()
        await cancel_and_wait(tasks)

    async def _watch(self, cluster: Cluster) -> None:
        lease = f"watch:{cluster.id}"
        failures = 0
        outages = 0  # our own store not answering: retried quickly, whatever the cluster's backoff
        cannot_claim = _Repeated(self._clock)
        while True:
            try:
                held = await self._lease.acquire(lease, ttl_seconds=self._ttl)
            except Exception as exc:  # the lease's store is down: no one else can take it either
                if cannot_claim.due():
                    log.warning(
                        "cannot claim %s (%s); trying again every %.0f s", lease, exc, self._ttl / 3
                    )
                held = False
            else:
                cannot_claim.over()
            if not held:
                await self._clock.sleep(self._ttl / 3)
                continue
            log.info("watching cluster %s (holding %s)", cluster.name, lease)
            self._holding.add(cluster.id)
            started = self._progress[cluster.id] = self._clock.now()
            delay: float | None = None
            renewer = asyncio.create_task(self._renew(lease, cluster))
            follower = asyncio.create_task(self._follow(cluster))
            tasks = {renewer, follower}
            if self._timeline is not None:  # the timeline is kept by whoever watches
                tasks.add(asyncio.create_task(self._timeline.run(cluster.id)))
            try:
                done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    task.result()
                failures = 0
            except GatewayUnavailable as exc:
                failures = exc.attempt or failures + 1
                log.warning("cluster %s unreachable (%s); retry %d", cluster.name, exc, failures)
            except OSError as exc:
                if cluster.is_real:
                    failures += 1
                    log.warning("cluster %s unreachable (%s); retrying", cluster.name, exc)
                else:  # a simulated cluster lives in our database: it is what does not answer
                    outages, delay = self._outage(cluster, exc, started, outages)
            except Superseded as exc:
                log.warning("%s", exc)  # another process took over: it holds the lease now
            except Unavailable as exc:  # our database does not answer: an outage, not a bug
                outages, delay = self._outage(cluster, exc, started, outages)
            except Exception:
                failures += 1
                log.exception("watching cluster %s failed", cluster.name)
            finally:
                self._holding.discard(cluster.id)
                try:
                    await cancel_and_wait(tasks)
                finally:
                    with contextlib.suppress(Exception):
                        await self._lease.release(lease)
            if delay is None:
                delay = self._backoff(max(failures, 1)) if failures else 0.5
            await self._clock.sleep(delay)

    def _outage(
        self, cluster: Cluster, exc: Exception, started: datetime, outages: int
    ) -> tuple[int, float]:
        """The count of outages in a row and how long to wait before watching again."""
        if (self._clock.now() - started).total_seconds() > OUTAGE_RESET_SECONDS:
            outages = 0  # it had been working: a new outage
        outages += 1
        delay = backoff_seconds(outages, base=0.25, cap=OUTAGE_CAP_SECONDS)
        log.warning("watching cluster %s: %s; again in %.1f s", cluster.name, exc, delay)
        return outages, delay

    def _followed(self, cluster: Cluster) -> bool:
        """Simulated clusters always; real ones once registered, until an error needs a person
        (ERROR) or they are being removed."""
        if not cluster.is_real:
            return cluster.status is not ClusterStatus.DELETING
        return self._registry is not None and cluster.status in (
            ClusterStatus.AVAILABLE,
            ClusterStatus.NOT_AVAILABLE,
        )

    async def _renew(self, lease: str, cluster: Cluster) -> None:
        """Renew while the cluster's loop shows signs of life; end (so the lease goes) when it
        has stalled for `stall_seconds` (found in production: a worker out of database
        connections kept its lease, and the cluster's admission, for a minute), or when the
        lease was lost. While the lease's store does not answer, keep on: no one else can take
        the lease, and the fencing generation keeps a successor's state safe if one does."""
        cannot_renew = _Repeated(self._clock)
        while True:
            await self._clock.sleep(self._ttl / 3)
            quiet = (self._clock.now() - self._progress[cluster.id]).total_seconds()
            if quiet > self._stall:
                log.warning(
                    "cluster %s's loop made no progress for %.0f s: giving up %s",
                    cluster.name,
                    quiet,
                    lease,
                )
                return
            try:
                renewed = await self._lease.renew(lease, ttl_seconds=self._ttl)
            except Exception as exc:
                if cannot_renew.due():
                    log.warning("cannot renew %s (%s); carrying on", lease, exc)
                continue
            cannot_renew.over()
            if not renewed:
                log.warning("lost lease %s", lease)
                return

    async def _follow(self, cluster: Cluster) -> None:
        if cluster.is_real:
            assert self._registry is not None
            await _first_to_end(  # nodes through the registry, jobs through the gateway
                self._registry.follow(cluster.id), self._follow_workloads(cluster)
            )
            return
        await self._clusters.refresh_nodes(cluster)
        await self._follow_workloads(cluster)

    async def _follow_workloads(self, cluster: Cluster) -> None:
        gateway = self._gateways.for_cluster(cluster)
        listed = await gateway.list_workloads()
        await self._take_in(cluster, gateway, listed)  # one read, one commit: a takeover is quick
        if cluster.is_real:  # the cluster is the truth of what runs: lost jobs, orphans
            await self._observations.reconcile_listing(cluster.id, listed, gateway)
        await _first_to_end(self._stream(cluster, gateway), self._sweep(cluster, gateway))

    async def _stream(self, cluster: Cluster, gateway: ClusterGateway) -> None:
        async for batch in gateway.watch():
            await self._take_in(cluster, gateway, batch)

    async def _take_in(
        self, cluster: Cluster, gateway: ClusterGateway, batch: list[WorkloadObservation]
    ) -> None:
        applied = await self._observations.apply_batch(batch, cluster_id=cluster.id)
        await self._take_back(gateway, applied.strays)
        self._progress[cluster.id] = self._clock.now()

    async def _sweep(self, cluster: Cluster, gateway: ClusterGateway) -> None:
        """Every `sweep_seconds`, take back what still runs for a job that is final: cancelling
        is level-triggered, whatever a lost or failed cancel task left behind."""
        while True:
            await self._clock.sleep(self._sweep_seconds)
            listed = await gateway.list_workloads()
            strays = await self._observations.strays(listed, cluster_id=cluster.id)
            await self._take_back(gateway, strays)

    async def _take_back(
        self, gateway: ClusterGateway, strays: Sequence[WorkloadObservation]
    ) -> None:
        for stray in strays:
            log.info("taking back %s: its job no longer wants it", stray.workload or stray.job_id)
            await gateway.cancel(stray.job_id, stray.attempt)


async def _first_to_end(*work: Coroutine[Any, Any, None]) -> None:
    """Run side by side until one ends; then stop the others and raise what that one raised."""
    tasks = [asyncio.create_task(w) for w in work]
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in done:
            task.result()
    finally:
        await cancel_and_wait(tasks)
