"""Job commands and queries: submit, cancel, retry, change priority, and reads for a principal.

Each command runs in one unit of work scoped to the caller's tenant; what it changes and the events
it raises commit together, are then announced to subscribers, and only then is cluster-side work
queued as a task (a task must find the committed job). A crash between commit and enqueue leaves
a PENDING job the submission sweeper picks up; tasks are idempotent, so running one twice is safe.

Reads and commands on existing jobs see what the principal may (`Principal.may_see`): its
tenant's jobs in its projects, or, for the operator, every tenant's; an operator's command keeps
the job its tenant's. An idempotency key is the submitter's in one project: a repeat in that
project answers with the first job, and a key used in another project is, here, unused (so a
token limited to projects cannot learn what the others submitted).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from decimal import Decimal

from domain.backoff import backoff_seconds
from domain.errors import (
    Conflict,
    DuplicateIdempotencyKey,
    FieldIssue,
    Forbidden,
    ValidationFailed,
)
from domain.model.audit import concerning
from domain.model.cluster import ClusterStatus
from domain.model.fleet import JobMove
from domain.model.ids import ClusterId, JobId, ProjectId, new_job_id
from domain.model.job import (
    BudgetAction,
    BudgetScope,
    Job,
    JobEvent,
    JobPriority,
    JobSource,
    JobStatus,
    JobType,
)
from domain.model.principal import Principal
from domain.model.quota import DEFAULT_QUEUE, LocalQueue, tenant_namespace
from domain.names import text_problem
from domain.ports.clock import Clock
from domain.ports.cluster_api import WorkloadCheck
from domain.ports.outbound import OutboundPolicy
from domain.ports.repositories import JobCursor, JobFilter, JobPage
from domain.ports.tasks import TaskQueue
from domain.ports.unit_of_work import TenantScope, UnitOfWork, UnitOfWorkFactory
from domain.scheduling.cost import budget_at_submission
from domain.services import budgets
from domain.services.destinations import Destinations, fetched
from domain.services.paging import check_first
from domain.services.prices import price_books
from domain.services.reactions import hand_over
from domain.services.submission import (
    MAX_BUDGET,
    JobSubmission,
    read_references,
    reference_issues,
    validate_submission,
)
from domain.services.visibility import seen

MAX_PAGE = 100
MAX_REASON = 500


def scoped_filter(principal: Principal, job_filter: JobFilter) -> JobFilter | None:
    """The filter narrowed to the principal's projects; None when nothing can match."""
    if principal.project_ids is None:
        return job_filter
    allowed = principal.project_ids
    wanted = job_filter.project_ids & allowed if job_filter.project_ids else allowed
    if not wanted:
        return None
    return JobFilter(
        statuses=job_filter.statuses,
        priorities=job_filter.priorities,
        job_types=job_filter.job_types,
        cluster_ids=job_filter.cluster_ids,
        project_ids=wanted,
    )


def retries_exhausted(job: Job) -> str:
    """Why a FAILED or PREEMPTED job may not be retried again, in words that fit its count."""
    status = job.status.value
    if job.max_retries == 0:
        return f"job {job.name} is {status} and has no retries (maxRetries is 0)"
    if job.max_retries == 1:
        return f"job {job.name} is {status} and has used its 1 retry"
    return f"job {job.name} is {status} and has used all {job.max_retries} retries"


class JobService:
    def __init__(
        self,
        *,
        uow: UnitOfWorkFactory,
        clock: Clock,
        tasks: TaskQueue,
        backoff: Callable[[int], float] = backoff_seconds,
        check_workload: WorkloadCheck | None = None,
        outbound: OutboundPolicy | None = None,
    ) -> None:
        """`check_workload`: what a real cluster can be given (the Kubernetes adapter's
        rendering), checked at submission; see `validate_submission`. `outbound`: where the
        URLs a job makes budcluster fetch (a Helm chart, its repository) may lead."""
        self._destinations = (
            Destinations(uow=uow, outbound=outbound) if outbound is not None else None
        )
        self._uow = uow
        self._clock = clock
        self._tasks = tasks
        self._backoff = backoff
        self._check_workload = check_workload

    # --- commands ---------------------------------------------------------------------------

    async def prepare(
        self,
        uow: UnitOfWork,
        principal: Principal,
        sub: JobSubmission,
        now: datetime,
        *,
        managed: bool = False,
    ) -> tuple[Job, LocalQueue | None]:
        """Validate a submission and build its job (not stored). Also returns the tenant's
        default LocalQueue when it still has to be created. Raises ValidationFailed.
        `managed`: a job budcluster makes for a deployment or a benchmark."""
        if not principal.may_use_project(sub.project_id):
            raise Forbidden(f"this token may not submit jobs to project {sub.project_id}")
        cluster = await uow.clusters.get(sub.cluster_id)
        issues = validate_submission(
            sub, cluster, now, managed=managed, check_workload=self._check_workload
        )
        refs = None
        if cluster is not None:
            refs = await read_references(uow, principal.tenant_id, sub)
            seen = {
                k: j
                for k, j in refs.dependencies.items()
                if principal.may_see(j.tenant_id, j.project_id)
            }
            refs = replace(refs, dependencies=seen)  # another project's job is not found
            issues += reference_issues(sub, principal.tenant_id, refs, now)
        if issues:
            raise ValidationFailed(issues)
        assert refs is not None
        job = Job(
            id=new_job_id(),
            name=sub.name,
            tenant_id=principal.tenant_id,
            project_id=sub.project_id,
            cluster_id=sub.cluster_id,
            job_type=sub.job_type,
            deployment_type=sub.deployment_type,
            created_at=now,
            updated_at=now,
            source=JobSource(sub.source_kind, sub.source_id),
            spec=dict(sub.spec),
            resources=sub.resources,
            estimated_duration_seconds=sub.estimated_duration_seconds,
            max_duration_seconds=sub.max_duration_seconds,
            termination_grace_seconds=sub.termination_grace_seconds,
            secrets=sub.secrets,
            deadline=sub.deadline,
            priority=sub.priority,
            preemptible=sub.preemptible,
            max_retries=sub.max_retries,
            budget_limit=sub.budget_limit,
            budget_action=sub.budget_action,
            idempotency_key=sub.idempotency_key,
            status_message=sub.status_message,
            queue_name=sub.queue_name,
            window=sub.window,
            depends_on=sub.dependencies,
            reservation_id=sub.reservation_id,
            fleet_id=sub.fleet_id,
            dispatched_via=sub.dispatched_via,
        )
        default_queue = None
        if refs.local_queue is None:  # the tenant's first job in the default queue
            default_queue = LocalQueue(
                cluster_id=sub.cluster_id,
                name=sub.queue_name,
                namespace=tenant_namespace(principal.tenant_id),
                tenant_id=principal.tenant_id,
                cluster_queue=DEFAULT_QUEUE,
                created_at=now,
            )
        return job, default_queue

    async def submit(self, principal: Principal, sub: JobSubmission) -> Job:
        if not principal.may_use_project(sub.project_id):
            raise Forbidden(f"this token may not submit jobs to project {sub.project_id}")
        if sub.job_type is JobType.SERVICE and (issues := await self.url_issues(fetched(sub))):
            raise ValidationFailed(issues)
        concerning(principal.tenant_id, sub.project_id)
        scope = TenantScope(principal.tenant_id)
        now = self._clock.now()
        async with self._uow(scope) as uow:
            if sub.idempotency_key is not None:
                existing = await uow.jobs.get_by_idempotency_key(
                    principal.tenant_id, sub.project_id, sub.idempotency_key
                )
                if existing is not None:
                    return existing
            job, default_queue = await self.prepare(uow, principal, sub, now)
            notices = await budgets.at_submission(uow, job, now)  # may refuse, or hold it
            job.record_submission()
            for notice in notices:  # said with the submission
                job.notice_budget(notice, now)
            try:
                if default_queue is not None:
                    await uow.quotas.add_local_queue(default_queue, if_absent=True)
                await uow.jobs.add(job)
                await uow.commit()  # its hand-over follows (reactions)
            except DuplicateIdempotencyKey:
                await uow.rollback()
                return await self._existing(principal, sub)
        return job

    async def by_idempotency_key(
        self, principal: Principal, project_id: ProjectId, key: str
    ) -> Job | None:
        """The principal's job submitted with `key` in the project, if one was."""
        if not principal.may_use_project(project_id):
            raise Forbidden(f"this token may not submit jobs to project {project_id}")
        async with self._uow(TenantScope(principal.tenant_id)) as uow:
            return await uow.jobs.get_by_idempotency_key(principal.tenant_id, project_id, key)

    async def url_issues(self, urls: Mapping[str, str]) -> list[FieldIssue]:
        """What is wrong with URLs budcluster will fetch, by field (before any transaction:
        names are resolved)."""
        if self._destinations is None or not urls:
            return []
        return await self._destinations.issues(urls)

    async def _existing(self, principal: Principal, sub: JobSubmission) -> Job:
        """The job a concurrent submission with the same idempotency key stored first."""
        assert sub.idempotency_key is not None
        async with self._uow(TenantScope(principal.tenant_id)) as uow:
            job = await uow.jobs.get_by_idempotency_key(
                principal.tenant_id, sub.project_id, sub.idempotency_key
            )
        if job is None:  # pragma: no cover - the key was just seen taken
            raise Conflict("idempotency key in use; try again", code="IDEMPOTENCY_RACE")
        return job

    async def cancel(self, principal: Principal, job_id: JobId, reason: str | None) -> Job:
        if reason is not None and (len(reason) > MAX_REASON or text_problem(reason)):
            raise ValidationFailed.single(
                "reason", f"must be at most {MAX_REASON} characters of plain text"
            )
        async with self._uow(TenantScope.of(principal)) as uow:
            job = await self._get(uow, principal, job_id)
            if job.status.is_finished:
                raise Conflict(
                    f"job {job.name} is already {job.status.value}", code="ALREADY_FINISHED"
                )
            job.transition(JobStatus.CANCELLED, reason or "cancelled by user", self._clock.now())
            await uow.commit()  # taking it back from its cluster follows (reactions)
        return job

    async def retry(self, principal: Principal, job_id: JobId) -> Job:
        async with self._uow(TenantScope.of(principal)) as uow:
            job = await self._get(uow, principal, job_id)
            if job.status not in (JobStatus.FAILED, JobStatus.PREEMPTED):
                raise Conflict(
                    f"only FAILED or PREEMPTED jobs can be retried; {job.name} is "
                    f"{job.status.value}",
                    code="NOT_RETRYABLE",
                )
            if job.attempt >= job.max_retries:
                raise Conflict(retries_exhausted(job), code="RETRIES_EXHAUSTED")
            self.start_next_attempt(job, "retry requested")
            await uow.commit()  # its hand-over follows, after the backoff (reactions)
        return job

    def retry_automatically(self, job: Job, why: str) -> bool:
        """A job that FAILED on its cluster, or was PREEMPTED, starts its next attempt after the
        backoff while it has retries left; True if it did (queue its hand-over after the
        commit). A hand-over the cluster refused is not retried: it would fail the same way."""
        if job.status not in (JobStatus.FAILED, JobStatus.PREEMPTED):
            return False
        if job.attempt >= job.max_retries:
            return False
        self.start_next_attempt(job, f"{job.status.value.lower()} ({why})")
        return True

    def start_next_attempt(self, job: Job, why: str) -> None:
        """Move a FAILED or PREEMPTED job to its next attempt, due after a backoff delay."""
        now = self._clock.now()
        attempt = job.attempt + 1
        delay = timedelta(seconds=self._backoff(attempt))
        job.begin_retry(
            now,
            now + delay,
            f"{why}: attempt {attempt + 1} (retry {attempt} of {job.max_retries}) "
            f"starts in {delay.total_seconds():.0f}s",
        )

    async def change_budget(
        self, principal: Principal, job_id: JobId, limit: Decimal | None, action: BudgetAction
    ) -> Job:
        """A job's new budget and action, while it is not finished; the running check applies
        it from its next round (a job already past the new budget is said so, or cancelled)."""
        if limit is not None and (not limit.is_finite() or not 0 <= limit <= MAX_BUDGET):
            raise ValidationFailed.single(
                "budget_limit", f"must be an amount from 0 to {MAX_BUDGET}"
            )
        async with self._uow(TenantScope.of(principal)) as uow:
            job = await self._get(uow, principal, job_id)
            if job.status.is_finished:
                raise Conflict(
                    f"job {job.name} is already {job.status.value}", code="ALREADY_FINISHED"
                )
            if (limit, action) == (job.budget_limit, job.budget_action):
                return job
            now = self._clock.now()
            job.change_budget(limit, action, now)
            if job.held_by is BudgetScope.JOB and await self._own_budget_allows(uow, job):
                job.release(now)  # its hand-over follows (reactions)
            await uow.commit()
        return job

    @staticmethod
    async def _own_budget_allows(uow: UnitOfWork, job: Job) -> bool:
        """Whether a job its own budget holds may go with its budget as it is now: none, WARN,
        or room: for one paused after it ran, more than it has cost; for one held at
        submission, what it is expected to cost (the check at submission)."""
        limit = job.budget_limit
        if limit is None or job.budget_action is BudgetAction.WARN:
            return True
        if job.actual_cost is not None:
            return job.actual_cost < limit
        cluster = await uow.clusters.get(job.cluster_id)
        if cluster is None:
            return False
        return budget_at_submission(job, (await price_books(uow, [cluster]))[cluster.id]) is None

    async def change_priority(
        self, principal: Principal, job_id: JobId, priority: JobPriority
    ) -> Job:
        async with self._uow(TenantScope.of(principal)) as uow:
            job = await self._get(uow, principal, job_id)
            if job.status.is_finished:
                raise Conflict(
                    f"job {job.name} is already {job.status.value}", code="ALREADY_FINISHED"
                )
            if priority is JobPriority.CRITICAL and job.preemptible:
                raise ValidationFailed.single(
                    "priority", "a preemptible job cannot be CRITICAL (CRITICAL is never preempted)"
                )
            if priority is job.priority:
                return job
            job.change_priority(priority, self._clock.now())
            await uow.commit()  # the cluster's copy follows (reactions)
        return job

    async def enqueue_submission(self, job: Job, *, because: str | None = None) -> None:
        """Queue the hand-over of the job's current attempt (once per key)."""
        await hand_over(self._tasks, job, because=because)

    async def sweep_due_submissions(self, *, grace: timedelta, limit: int = 500) -> int:
        """Queue again the hand-over of PENDING jobs that are overdue by `grace` and could go
        now: lost between commit and enqueue, or taken by a worker that died with it (arq keeps
        a dead worker's task locked for its timeout). The key is fresh in each period of
        `grace`, so a task locked or kept by a dead worker never holds the job back; within one
        period, the key de-duplicates sweeps from several processes. Returns how many were
        queued."""
        now = self._clock.now()
        ready = await self.ready_submissions(grace=grace, limit=limit)
        period = int(now.timestamp() // max(grace.total_seconds(), 1.0))
        for job in ready:
            await self.enqueue_submission(job, because=f"sweep-{period}")
        return len(ready)

    async def ready_submissions(
        self,
        *,
        grace: timedelta,
        limit: int = 500,
        clusters: Collection[ClusterId] | None = None,
    ) -> list[Job]:
        """PENDING jobs overdue for their hand-over by `grace` that could go now (on `clusters`
        only, if given). Jobs that wait for something (their window, a dependency, a cluster
        that does not answer) are left to what they wait for."""
        now = self._clock.now()
        async with self._uow(TenantScope.system()) as uow:
            due = await uow.jobs.due_for_submission(now - grace, limit=limit)
            if clusters is not None:
                due = [job for job in due if job.copy_cluster in clusters]
            needed = list({d for job in due for d in job.depends_on})
            done = {
                d.id
                for d in (await uow.jobs.get_many(needed)).values()
                if d.status is JobStatus.COMPLETED
            }
            answering = {
                c.id for c in await uow.clusters.all() if c.status is ClusterStatus.AVAILABLE
            }
        return [
            job
            for job in due
            if job.copy_cluster in answering
            and (job.window is None or job.window.contains(now))
            and all(d in done for d in job.depends_on)
        ]

    # --- queries ----------------------------------------------------------------------------

    async def active_on(self, cluster_ids: Sequence[ClusterId]) -> list[Job]:
        """Every tenant's active jobs on these clusters (for the operators' gauges)."""
        if not cluster_ids:
            return []
        async with self._uow(TenantScope.system()) as uow:
            return await uow.jobs.active_on_clusters(cluster_ids)

    async def get(self, principal: Principal, job_id: JobId) -> Job | None:
        async with self._uow(TenantScope.of(principal)) as uow:
            job = await uow.jobs.get(job_id)
        return job if job is not None and principal.may_see(job.tenant_id, job.project_id) else None

    async def get_many(self, principal: Principal, job_ids: Sequence[JobId]) -> list[Job]:
        """Those of the jobs the principal may see, in the order asked."""
        async with self._uow(TenantScope.of(principal)) as uow:
            found = await uow.jobs.get_many(list(job_ids))
        return [
            job
            for i in job_ids
            if (job := found.get(i)) is not None
            and principal.may_see(job.tenant_id, job.project_id)
        ]

    async def page(
        self,
        principal: Principal,
        job_filter: JobFilter,
        *,
        first: int,
        after: JobCursor | None,
    ) -> JobPage:
        check_first(first, MAX_PAGE)
        narrowed = scoped_filter(principal, job_filter)
        if narrowed is None:
            return JobPage([], False)
        async with self._uow(TenantScope.of(principal)) as uow:
            return await uow.jobs.page(narrowed, first=first, after=after)

    async def events(
        self, principal: Principal, job_ids: Sequence[JobId]
    ) -> dict[JobId, list[JobEvent]]:
        async with self._uow(TenantScope.of(principal)) as uow:
            events = await uow.jobs.events(job_ids)
            if principal.project_ids is None or principal.sees_every_tenant:
                return events
            jobs = [await uow.jobs.get(job_id) for job_id in events]
        allowed = {j.id for j in jobs if j and principal.may_see(j.tenant_id, j.project_id)}
        return {job_id: evs for job_id, evs in events.items() if job_id in allowed}

    async def moves(
        self, principal: Principal, job_ids: Sequence[JobId]
    ) -> dict[JobId, list[JobMove]]:
        """The moves of the jobs among `job_ids` the principal may see."""
        async with self._uow(TenantScope.of(principal)) as uow:
            moves = await uow.jobs.moves(job_ids)
            if principal.project_ids is None or principal.sees_every_tenant:
                return moves
            jobs = await uow.jobs.get_many([j for j, m in moves.items() if m])
        allowed = {j.id for j in jobs.values() if principal.may_see(j.tenant_id, j.project_id)}
        return {job_id: m for job_id, m in moves.items() if job_id in allowed or not m}

    @staticmethod
    async def _get(uow: UnitOfWork, principal: Principal, job_id: JobId) -> Job:
        return seen(principal, await uow.jobs.get(job_id, for_update=True), "job", job_id)
