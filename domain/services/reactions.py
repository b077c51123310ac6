"""What a commit sets off: one table from the events a unit of work committed to what follows.

Services change entities; entities record their events; the unit of work writes them to the
outbox in the same commit and, once its connection is given back, hands them here. So no service
publishes or queues follow-up work by hand (none can forget to), and no commit holds a second
connection while it notifies (found under load: 50 tasks on a pool of 20 timed out waiting).

  every event                         notify subscribers (the publisher: this process's hub,
                                      and other processes through the broker); then the
                                      metrics (`observe`: each event once, in the process
                                      that committed it)
  job SUBMITTED                       hand it over to its cluster (when due)
  job PENDING again after FAILED or   hand the next attempt over, after its backoff
  PREEMPTED (a retry)
  job CANCELLED or PREEMPTED          take that attempt back from its cluster (a requeued
                                      one: its next hand-over withdraws it, with its grace)
  job COMPLETED                       hand over the waiting jobs that depended on it
  job FAILED on its cluster           keep its pods' last log lines (they go soon after)
  job PRIORITY_CHANGED (on a cluster) set the priority there too
  job released by its budget (BUDGET) hand it over
  job MOVED to another fleet member    hand it over there (once its copy where it was is gone)
  cluster QUOTAS                      put the quotas onto a real cluster as Kueue objects
  a deployment's replica job changed  derive the deployment's workers and status again
  a benchmark's job RUNNING           start the benchmark's run (its load generator)
  a benchmark's job ended             end the benchmark with it, if its run did not

The timeline is recomputed by its refresher, which subscribes to every cluster event. Each
reaction is a task with a key of the event's own, so running one twice does nothing more; each
has a safety net for when it is lost (the supervisor's sweeps, the reconciler, the periodic sync).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence

from domain.model.deployment import DeploymentChanged
from domain.model.events import ClusterChanged, ClusterChangeKind
from domain.model.ids import ClusterId
from domain.model.job import ChangeKind, Job, JobChanged, JobStatus, SourceKind
from domain.ports.events import EventPublisher, StoredEvent
from domain.ports.tasks import TaskQueue
from domain.ports.unit_of_work import TenantScope, UnitOfWorkFactory
from domain.services import task_names

log = logging.getLogger(__name__)

ON_CLUSTER = frozenset({JobStatus.QUEUED, JobStatus.ADMITTED, JobStatus.RUNNING})
RETRIED_FROM = frozenset({JobStatus.FAILED, JobStatus.PREEMPTED})


async def hand_over(tasks: TaskQueue, job: Job, *, because: str | None = None) -> bool:
    """Queue the hand-over of the job's current attempt, when it is due (once per key;
    `because` makes a new key, for a hand-over that was held back and may go now)."""
    key = f"submit:{job.id}:{job.attempt}" + (f":{because}" if because else "")
    return await task_names.enqueue_after_commit(
        tasks,
        task_names.SUBMIT_WORKLOAD,
        key=key,
        defer_until=job.next_attempt_at,
        job_id=str(job.id),
        attempt=job.attempt,
    )


async def take_back(tasks: TaskQueue, job: Job, attempt: int) -> bool:
    """Queue removing an attempt's workload from its cluster (each hand-over of it: a budget
    may take one attempt back more than once)."""
    handed = f":g{job.generation}" if job.generation else ""
    return await task_names.enqueue_after_commit(
        tasks,
        task_names.CANCEL_WORKLOAD,
        key=f"cancel:{job.id}:{attempt}{handed}",
        job_id=str(job.id),
        attempt=attempt,
    )


class Reactions:
    def __init__(
        self,
        *,
        publisher: EventPublisher,
        tasks: TaskQueue,
        uow: UnitOfWorkFactory,
        quotas_changed: Callable[[ClusterId], Awaitable[None]] | None = None,
        observe: Callable[[Sequence[StoredEvent]], None] | None = None,
    ) -> None:
        self._publisher = publisher
        self._observe = observe
        self._tasks = tasks
        self._uow = uow
        self.quotas_changed = quotas_changed
        """Set by the wiring: queue putting a cluster's quotas onto it (the registry)."""
        self.deployment_changed: Callable[[str], None] | None = None
        """Set by the wiring: a deployment (by its id) changed here (the simulated endpoints
        look it up again, and wake the requests held for a replica)."""

    async def __call__(self, events: Sequence[StoredEvent]) -> None:
        if not events:
            return
        await self._publisher.publish(events)
        if self._observe is not None:
            try:
                self._observe(events)
            except Exception:
                log.exception("recording metrics of %d events failed", len(events))
        for event in events:
            change = event.change
            try:
                if isinstance(change, JobChanged):
                    await self._job(event, change)
                elif isinstance(change, ClusterChanged):
                    await self._cluster(change)
                elif isinstance(change, DeploymentChanged) and self.deployment_changed:
                    self.deployment_changed(str(change.deployment.id))
            except Exception:  # the commit stands; each reaction has its safety net
                log.exception(
                    "a reaction to event %d of %s failed", event.sequence, event.cluster_id
                )

    async def _job(self, event: StoredEvent, change: JobChanged) -> None:
        await self._serving(event, change)
        job, step = change.job, change.transition
        if change.kind is ChangeKind.SUBMITTED:
            await hand_over(self._tasks, job)
        elif change.kind is ChangeKind.PRIORITY_CHANGED:
            if job.status in ON_CLUSTER:
                await task_names.enqueue_after_commit(
                    self._tasks,
                    task_names.SET_WORKLOAD_PRIORITY,
                    key=f"priority:{job.id}:{job.attempt}:{event.sequence}",
                    job_id=str(job.id),
                    attempt=job.attempt,
                )
        elif change.kind is ChangeKind.BUDGET:
            if change.released and job.status is JobStatus.PENDING:
                await hand_over(self._tasks, job, because=f"released:{event.sequence}")
        elif change.kind is ChangeKind.MOVED:
            if change.move is not None and job.held_by is None:  # (said where it arrived)
                await hand_over(self._tasks, job, because=f"moved:{job.moves}")
        elif step is not None:
            if step.to_status is JobStatus.PENDING and step.from_status in RETRIED_FROM:
                if job.held_by is None:  # (a budget's hold: handed over when released)
                    again = f"g{job.generation}" if job.generation else None  # (a requeue)
                    await hand_over(self._tasks, job, because=again)
            elif step.to_status is JobStatus.PREEMPTED and job.withdraw_from is not None:
                pass  # requeued (`Job.requeue`): its next hand-over withdraws this copy first
            elif step.to_status in (JobStatus.CANCELLED, JobStatus.PREEMPTED):
                await take_back(self._tasks, job, step.attempt)
            elif step.to_status is JobStatus.COMPLETED:
                await self._release_dependents(job)
            if step.to_status is JobStatus.FAILED and step.from_status in ON_CLUSTER:
                await task_names.enqueue_after_commit(
                    self._tasks,
                    task_names.KEEP_LOGS,
                    key=f"logs:{job.id}:{step.attempt}",
                    job_id=str(job.id),
                    attempt=step.attempt,
                )

    async def _serving(self, event: StoredEvent, change: JobChanged) -> None:
        """A deployment's replica or a benchmark's job changed."""
        job, step = change.job, change.transition
        if job.source.kind is SourceKind.DEPLOYMENT and job.source.source_id:
            if change.kind in (ChangeKind.TRANSITION, ChangeKind.PLACED):
                await task_names.enqueue_after_commit(
                    self._tasks,
                    task_names.REFRESH_DEPLOYMENT,
                    key=f"deployment:{job.source.source_id}:{event.cluster_id}:{event.sequence}",
                    deployment_id=job.source.source_id,
                )
        elif job.source.kind is SourceKind.BENCHMARK and job.source.source_id and step:
            if step.to_status is JobStatus.RUNNING:
                task, key = task_names.START_BENCHMARK, "start"
            elif step.to_status.is_finished or step.to_status is JobStatus.PREEMPTED:
                task, key = task_names.SETTLE_BENCHMARK, "settle"
            else:
                return
            await task_names.enqueue_after_commit(
                self._tasks,
                task,
                key=f"benchmark:{key}:{job.source.source_id}:{job.attempt}",
                benchmark_id=job.source.source_id,
            )

    async def _release_dependents(self, done: Job) -> None:
        """Hand over the waiting jobs whose last dependency this was (the task checks)."""
        async with self._uow(TenantScope.system()) as uow:
            active = await uow.jobs.active_on_cluster(done.cluster_id)
        for job in active:
            if job.status is JobStatus.PENDING and done.id in job.depends_on:
                await hand_over(self._tasks, job, because=f"{done.id} completed")

    async def _cluster(self, change: ClusterChanged) -> None:
        if change.kind is ClusterChangeKind.QUOTAS and self.quotas_changed is not None:
            await self.quotas_changed(change.cluster_id)
