"""Cluster-side work for jobs: hand an attempt to its cluster, cancel it, re-prioritise it.

These run as background tasks, possibly more than once and concurrently with user commands, so
each re-reads the job, acts only if the job is still in the state that asked for it, and relies on
the gateway's idempotency (workload names are derived from job id and attempt). A cluster that
cannot be reached raises `RetryTask` with a backoff delay.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

from domain.backoff import backoff_seconds
from domain.model.drain import grace_of
from domain.model.ids import JobId
from domain.model.job import Job, JobStatus
from domain.model.tenant_secret import MountedSecret
from domain.ports.clock import Clock
from domain.ports.gateways import ClusterGateway, GatewayFactory, GatewayUnavailable, Workload
from domain.ports.helm import ReleaseRejected
from domain.ports.tasks import RetryTask
from domain.ports.unit_of_work import TenantScope, UnitOfWork, UnitOfWorkFactory
from domain.services.tenant_secrets import SecretGone, SecretService


class WorkloadService:
    def __init__(
        self,
        *,
        uow: UnitOfWorkFactory,
        clock: Clock,
        gateways: GatewayFactory,
        backoff: Callable[[int], float] = backoff_seconds,
        secrets: SecretService | None = None,
    ) -> None:
        self._uow = uow
        self._clock = clock
        self._gateways = gateways
        self._backoff = backoff
        self._secrets = secrets

    async def submit(self, job_id: JobId, attempt: int, *, try_number: int = 1) -> bool:
        """Create the workload for this attempt on its cluster; True if it was handed over."""
        async with self._uow(TenantScope.system()) as uow:
            job = await uow.jobs.get(job_id)
            if job is None or job.attempt != attempt or job.status is not JobStatus.PENDING:
                return False
            if job.held_by is not None:
                return False  # handed over when its budget releases it
            now = self._clock.now()
            if job.next_attempt_at is not None and job.next_attempt_at > now:
                raise RetryTask((job.next_attempt_at - now).total_seconds())
            if job.window is not None and not job.window.contains(now):
                raise RetryTask((job.window.next_open(now) - now).total_seconds())
            if job.depends_on:
                found = await uow.jobs.get_many(list(job.depends_on))
                if any(
                    d not in found or found[d].status is not JobStatus.COMPLETED
                    for d in job.depends_on
                ):
                    return False  # handed over when the last of them completes
            cluster = await uow.clusters.get(job.copy_cluster)
            origin = await uow.clusters.get(job.withdraw_from) if job.withdraw_from else None
            member = await uow.clusters.get(job.cluster_id) if job.dispatched_via else None
            if cluster is None:
                return False
            try:
                mounted = await self._open_secrets(uow, job, cluster.name)
            except SecretGone as exc:
                gone: str | None = exc.reason
            else:
                gone = None
                if mounted:
                    await uow.commit()  # noted as used, audited: opened for this hand-over
        if gone is not None:
            return await self._refused(job_id, attempt, f"not handed over: {gone}")
        gateway = self._gateways.for_cluster(cluster)
        try:
            if origin is not None:  # moved or requeued: never two live copies
                await self._gateways.for_cluster(origin).evict(
                    job_id, attempt, grace_seconds=grace_of(job)
                )
            await gateway.submit(
                Workload.of(job, run_on=member.name if member else None, secrets=mounted)
            )
        except GatewayUnavailable as exc:
            raise RetryTask(self._backoff(try_number)) from exc
        except ReleaseRejected as exc:  # the same hand-over would fail the same way
            return await self._refused(job_id, attempt, f"the cluster refused it: {exc.message}")

        async with self._uow(TenantScope.system()) as uow:
            current = await uow.jobs.get(job_id, for_update=True)
            if current is None or current.attempt != attempt:
                return False
            moved = (current.copy_cluster, current.generation) != (cluster.id, job.generation)
            if current.status is JobStatus.PENDING and not moved:
                current.withdraw_from = None
                current.transition(
                    JobStatus.QUEUED, f"queued on cluster {cluster.name}", self._clock.now()
                )
                await uow.commit()
                return True
            cancelled_meanwhile = current.status is JobStatus.CANCELLED
        if moved and current.copy_cluster != cluster.id:  # moved on meanwhile: withdraw it
            return await self._withdrawn(gateway, job_id, attempt)
        if cancelled_meanwhile:
            await gateway.cancel(job_id, attempt)
        return True

    async def _open_secrets(
        self, uow: UnitOfWork, job: Job, cluster: str
    ) -> tuple[MountedSecret, ...]:
        if not job.secrets:
            return ()
        if self._secrets is None:
            raise SecretGone("this service was started without its secrets")
        return await self._secrets.open_for(uow, job, cluster)

    @staticmethod
    async def _withdrawn(gateway: ClusterGateway, job_id: JobId, attempt: int) -> bool:
        with contextlib.suppress(GatewayUnavailable):  # else the strays sweep, once it answers
            await gateway.cancel(job_id, attempt)
        return False

    async def _refused(self, job_id: JobId, attempt: int, reason: str) -> bool:
        async with self._uow(TenantScope.system()) as uow:
            current = await uow.jobs.get(job_id, for_update=True)
            if current is None or current.attempt != attempt:
                return False
            if current.status is JobStatus.PENDING:
                current.transition(JobStatus.FAILED, reason, self._clock.now())
                await uow.commit()
        return False

    async def hold_back_closed_windows(self) -> int:
        """Take back workloads still queued on their cluster when their time window closed:
        they wait (PENDING) for the window to open again, when the submission sweeper hands
        them over. Returns how many."""
        now = self._clock.now()
        async with self._uow(TenantScope.system()) as uow:
            clusters = await uow.clusters.all()
            windowed = await uow.jobs.queued_in_windows([c.id for c in clusters])
        closed = [j for j in windowed if j.window is not None and not j.window.contains(now)]
        by_id = {c.id: c for c in clusters}
        for job in closed:
            try:
                gateway = self._gateways.for_cluster(by_id[job.copy_cluster])
                await gateway.cancel(job.id, job.attempt)
            except GatewayUnavailable:
                continue
            async with self._uow(TenantScope.system()) as uow:
                current = await uow.jobs.get(job.id, for_update=True)
                if current is None or current.status is not JobStatus.QUEUED:
                    continue
                assert current.window is not None
                current.hold_back(
                    now,
                    current.window.next_open(now),
                    f"its window {current.window} closed before it was admitted",
                )
                await uow.commit()
        return len(closed)

    async def cancel(self, job_id: JobId, attempt: int, *, try_number: int = 1) -> None:
        job = await self._load(job_id)
        gateway = None if job is None else await self._gateway(job)
        if gateway is None:
            return
        try:
            await gateway.cancel(job_id, attempt)
        except GatewayUnavailable as exc:
            raise RetryTask(self._backoff(try_number)) from exc

    async def set_priority(self, job_id: JobId, attempt: int, *, try_number: int = 1) -> None:
        job = await self._load(job_id)
        if job is None or job.attempt != attempt or not job.status.is_active:
            return
        gateway = await self._gateway(job)
        if gateway is None:
            return
        try:
            await gateway.set_priority(job_id, attempt, job.priority)
        except GatewayUnavailable as exc:
            raise RetryTask(self._backoff(try_number)) from exc

    async def _load(self, job_id: JobId) -> Job | None:
        async with self._uow(TenantScope.system()) as uow:
            return await uow.jobs.get(job_id)

    async def _gateway(self, job: Job) -> ClusterGateway | None:
        """The gateway to the job's cluster; None when the cluster is gone."""
        async with self._uow(TenantScope.system()) as uow:
            cluster = await uow.clusters.get(job.copy_cluster)
        return None if cluster is None else self._gateways.for_cluster(cluster)
