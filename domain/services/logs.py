"""A job's logs: what its attempt's pods wrote, read from its cluster, and followed.

The cluster is asked each time (a simulated cluster makes its pods' lines from their records, a
real one's API server reads the kubelet's), behind the same walls as the job: a job another
tenant's caller may not see is not found, and the `jobs:logs` scope is asked for by the API. A
failed attempt's last lines (`KEPT_LINES` per pod) are kept with it when it fails (`keep`, set off
by the FAILED transition: its pods are gone a minute later on Kubernetes), and read when the
cluster has none left. `follow` reads again every `poll_seconds` from the last line's time on,
and ends once the attempt has ended and a read found nothing new.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from domain.backoff import backoff_seconds
from domain.errors import NotFound, ValidationFailed
from domain.model.ids import JobId
from domain.model.job import Job
from domain.model.logs import KEPT_LINES, MAX_LOG_LINES, LogLine
from domain.model.principal import Principal
from domain.names import text_problem
from domain.ports.clock import Clock
from domain.ports.gateways import GatewayFactory, GatewayUnavailable
from domain.ports.tasks import RetryTask
from domain.ports.unit_of_work import TenantScope, UnitOfWorkFactory

log = logging.getLogger(__name__)

OVERLAP = timedelta(seconds=1)
"""A follow reads again from a second before its last line: lines of the same moment written
after the read are not lost (those already sent are left out)."""


@dataclass(frozen=True)
class JobLogs:
    job_id: JobId
    attempt: int
    lines: tuple[LogLine, ...]
    kept: bool = False
    """The lines kept when the attempt failed: its pods are gone."""
    note: str | None = None
    """Why there are fewer lines than asked for (the cluster did not answer), if known."""

    @property
    def pods(self) -> list[str]:
        return sorted({line.pod for line in self.lines})


def _picked(
    lines: Sequence[LogLine], pod: str | None, since: datetime | None, tail: int
) -> tuple[LogLine, ...]:
    kept = [
        line
        for line in lines
        if (pod is None or line.pod == pod) and (since is None or line.at > since)
    ]
    return tuple(kept[-tail:])


class LogService:
    def __init__(
        self,
        *,
        uow: UnitOfWorkFactory,
        clock: Clock,
        gateways: GatewayFactory,
        poll_seconds: float = 2.0,
    ) -> None:
        self._uow = uow
        self._clock = clock
        self._gateways = gateways
        self._poll = poll_seconds

    async def read(
        self,
        principal: Principal,
        job_id: JobId,
        *,
        attempt: int | None = None,
        pod: str | None = None,
        since: datetime | None = None,
        tail: int | None = None,
    ) -> JobLogs:
        """The attempt's lines (its latest attempt by default), oldest first: of `pod`, after
        `since`, the last `tail` (MAX_LOG_LINES at most; all of them up to it by default)."""
        job = await self._job(principal, job_id)
        issues = []
        if attempt is not None and not 0 <= attempt <= job.attempt:
            issues.append(("attempt", f"must be between 0 and {job.attempt}"))
        if tail is not None and not 1 <= tail <= MAX_LOG_LINES:
            issues.append(("tail", f"must be between 1 and {MAX_LOG_LINES}"))
        if pod is not None and (problem := text_problem(pod) or ("" if pod else "is empty")):
            issues.append(("pod", problem))
        if issues:
            raise ValidationFailed.single(*issues[0])
        which = job.attempt if attempt is None else attempt
        most = tail or MAX_LOG_LINES
        async with self._uow(TenantScope.of(principal)) as uow:
            cluster = await uow.clusters.get(job.cluster_id)
            kept = await uow.jobs.log_tail(job.id, which)
        note = None
        lines: list[LogLine] = []
        if cluster is not None:
            try:
                lines = await self._gateways.for_cluster(cluster).logs(
                    job.id, which, pod=pod, since=since, tail=most
                )
            except GatewayUnavailable:
                note = f"cluster {cluster.name} did not answer"
        if not lines and kept:
            return JobLogs(job.id, which, _picked(kept, pod, since, most), kept=True, note=note)
        return JobLogs(job.id, which, tuple(lines[-most:]), note=note)

    async def follow(
        self,
        principal: Principal,
        job_id: JobId,
        *,
        attempt: int | None = None,
        pod: str | None = None,
        tail: int | None = None,
    ) -> AsyncGenerator[JobLogs, None]:
        """The last `tail` lines (200 by default), then the new ones as they are written; what
        is refused or not found is raised before the stream is returned."""
        first = await self.read(principal, job_id, attempt=attempt, pod=pod, tail=tail or 200)
        return self._following(principal, first, pod)

    async def _following(
        self, principal: Principal, first: JobLogs, pod: str | None
    ) -> AsyncGenerator[JobLogs, None]:
        yield first
        sent = set(first.lines)
        last = first.lines[-1].at if first.lines else None
        quiet = 0
        while True:
            await self._clock.sleep(self._poll)
            since = None if last is None else last - OVERLAP
            try:
                batch = await self.read(
                    principal, first.job_id, attempt=first.attempt, pod=pod, since=since
                )
            except NotFound:  # gone (the job, or the caller's sight of it)
                return
            new = tuple(line for line in batch.lines if line not in sent)
            if new:
                quiet = 0
                sent = {line for line in sent if last is None or line.at >= last - OVERLAP}
                sent.update(new)
                last = max(line.at for line in new)
                yield JobLogs(first.job_id, first.attempt, new, kept=batch.kept, note=batch.note)
                continue
            job = await self._job(principal, first.job_id)
            ended = job.attempt > first.attempt or not job.status.is_active
            quiet = quiet + 1 if ended else 0
            if quiet >= 2:  # ended, and two reads found nothing more
                return

    async def keep(self, job_id: JobId, attempt: int, *, try_number: int = 1) -> bool:
        """Keep the last lines of a failed attempt's pods with it; True if any were kept."""
        async with self._uow(TenantScope.system()) as uow:
            job = await uow.jobs.get(job_id)
            cluster = await uow.clusters.get(job.cluster_id) if job else None
        if job is None or cluster is None:
            return False
        try:
            lines = await self._gateways.for_cluster(cluster).logs(job_id, attempt, tail=KEPT_LINES)
        except GatewayUnavailable as exc:
            raise RetryTask(backoff_seconds(try_number)) from exc
        if not lines:
            return False
        async with self._uow(TenantScope.system()) as uow:
            await uow.jobs.keep_log_tail(job_id, attempt, lines, self._clock.now())
            await uow.commit()
        log.info("kept %d log lines of job %s attempt %d", len(lines), job_id, attempt)
        return True

    async def _job(self, principal: Principal, job_id: JobId) -> Job:
        async with self._uow(TenantScope.of(principal)) as uow:
            job = await uow.jobs.get(job_id)
        if job is None or not principal.may_see(job.tenant_id, job.project_id):
            raise NotFound("job", job_id)
        return job
