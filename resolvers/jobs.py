"""Job queries and mutations."""

from __future__ import annotations

import re
from datetime import time
from decimal import Decimal
from typing import Annotated

import strawberry

from domain.errors import FieldIssue, ValidationFailed
from domain.model.ids import ClusterId, JobId, ProjectId
from domain.model.job import PodSet, Resources, TimeWindow
from domain.model.principal import Scope
from domain.ports.repositories import JobFilter as DomainJobFilter
from domain.services.submission import JobSubmission
from resolvers.common import connection, decode_cursor, parse_uuid, query_uuid, target
from schema.access import requires
from schema.context import Info
from schema.fairness import heavy_work
from schema.refusals import argument_error, typed_errors
from schema.types import errors
from schema.types.connection import JobConnection, JobEdge
from schema.types.enums import BudgetAction, JobPriority
from schema.types.inputs import JobFilter, SubmitJobInput, TimeWindowInput
from schema.types.job import Job, JobEvent

SubmitJobResult = Annotated[
    Job
    | errors.ValidationError
    | errors.NotFoundError
    | errors.ConflictError
    | errors.ForbiddenError,
    strawberry.union("SubmitJobResult"),
]
JobCommandResult = Annotated[
    Job
    | errors.ValidationError
    | errors.NotFoundError
    | errors.ConflictError
    | errors.ForbiddenError,
    strawberry.union("JobCommandResult"),
]

DEFAULT_PAGE = 50
_HH_MM = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)$")


def to_domain_filter(job_filter: JobFilter | None, field: str = "filter") -> DomainJobFilter:
    if job_filter is None:
        return DomainJobFilter()
    return DomainJobFilter(
        statuses=frozenset(job_filter.statuses or ()),
        priorities=frozenset(job_filter.priorities or ()),
        job_types=frozenset(job_filter.job_types or ()),
        cluster_ids=frozenset(
            ClusterId(query_uuid(c, f"{field}.clusterIds")) for c in job_filter.cluster_ids or ()
        ),
        project_ids=frozenset(
            ProjectId(query_uuid(p, f"{field}.projectIds")) for p in job_filter.project_ids or ()
        ),
    )


def to_window(window: TimeWindowInput | None) -> TimeWindow | None:
    """ "HH:MM" to times of day; every malformed one is a validation error naming its field."""
    if window is None:
        return None
    parsed: dict[str, time] = {}
    issues: list[FieldIssue] = []
    for part, text in (("start", window.start), ("end", window.end)):
        if match := _HH_MM.match(text):
            parsed[part] = time(int(match[1]), int(match[2]))
        else:
            issues.append(FieldIssue(f"window.{part}", "must be a UTC time of day, HH:MM"))
    if issues:
        raise ValidationFailed(issues)
    return TimeWindow(parsed["start"], parsed["end"])


def to_submission(data: SubmitJobInput) -> JobSubmission:
    r = data.resources
    cluster_id, fleet_id = target(data.cluster_id, data.fleet_id)
    return JobSubmission(
        name=data.name,
        project_id=ProjectId(parse_uuid(data.project_id, "project_id")),
        cluster_id=cluster_id,
        fleet_id=fleet_id,
        job_type=data.job_type,
        deployment_type=data.deployment_type,
        spec={} if data.spec is None else data.spec,  # type: ignore[arg-type]
        resources=Resources(
            gpu_type=r.gpu_type,
            gpu_count=r.gpu_count,
            cpu_cores=r.cpu_cores,
            memory_gb=r.memory_gb,
            storage_gb=r.storage_gb,
            pod_count=r.pod_count,
            pod_sets=tuple(
                PodSet(p.name, p.pod_count, p.gpu_count, p.cpu_cores, p.memory_gb)
                for p in r.pod_sets or ()
            ),
        ),
        source_kind=data.source.kind,
        source_id=data.source.source_id,
        estimated_duration_seconds=data.estimated_duration_seconds,
        max_duration_seconds=data.max_duration_seconds,
        termination_grace_seconds=data.termination_grace_period_seconds,
        secrets=tuple(r.to_domain() for r in data.secrets),
        deadline=data.deadline,
        priority=data.priority,
        preemptible=data.preemptible,
        max_retries=data.max_retries,
        budget_limit=data.budget_limit,
        budget_action=data.budget_action,
        idempotency_key=data.idempotency_key,
        queue_name=data.queue_name,
        window=to_window(data.window),
        depends_on=tuple(JobId(parse_uuid(d, "depends_on")) for d in data.depends_on),
        reservation_id=(
            parse_uuid(data.reservation_id, "reservation_id") if data.reservation_id else None
        ),
    )


# --- queries --------------------------------------------------------------------------------


@requires(Scope.JOBS_READ)
async def job(info: Info, id: strawberry.ID) -> Job | None:
    principal = info.context.authenticated()
    found = await info.context.services.jobs.get(principal, JobId(query_uuid(id, "id")))
    return Job.from_domain(found) if found else None


@requires(Scope.JOBS_READ)
async def jobs(
    info: Info,
    filter: JobFilter | None = None,
    first: int = DEFAULT_PAGE,
    after: str | None = None,
) -> JobConnection:
    principal = info.context.authenticated()
    cursor = decode_cursor(after) if after else None
    with argument_error("first"):
        page = await info.context.services.jobs.page(
            principal, to_domain_filter(filter), first=first, after=cursor
        )
    return connection(JobConnection, JobEdge, page.jobs, Job.from_domain, page.has_next)


@requires(Scope.JOBS_READ)
async def job_events(info: Info, job_id: strawberry.ID) -> list[JobEvent]:
    principal = info.context.authenticated()
    key = JobId(query_uuid(job_id, "jobId"))
    found = await info.context.services.jobs.events(principal, [key])
    return [JobEvent.from_domain(e) for e in found.get(key, [])]


# --- mutations ------------------------------------------------------------------------------


@requires(Scope.JOBS_WRITE)
@typed_errors
async def submit_job(info: Info, input: SubmitJobInput) -> SubmitJobResult:
    principal = info.context.authenticated()
    submission = to_submission(input)
    if submission.fleet_id is not None:
        async with heavy_work(info.context):  # an estimate on each member
            submitted = await info.context.services.dispatcher.submit(principal, submission)
    else:
        submitted = await info.context.services.jobs.submit(principal, submission)
    return Job.from_domain(submitted)


@requires(Scope.JOBS_WRITE)
@typed_errors
async def cancel_job(info: Info, id: strawberry.ID, reason: str | None = None) -> JobCommandResult:
    cancelled = await info.context.services.jobs.cancel(
        info.context.authenticated(), JobId(parse_uuid(id, "id")), reason
    )
    return Job.from_domain(cancelled)


@requires(Scope.JOBS_WRITE)
@typed_errors
async def retry_job(info: Info, id: strawberry.ID) -> JobCommandResult:
    retried = await info.context.services.jobs.retry(
        info.context.authenticated(), JobId(parse_uuid(id, "id"))
    )
    return Job.from_domain(retried)


@requires(Scope.JOBS_WRITE)
@typed_errors
async def update_job_budget(
    info: Info,
    id: strawberry.ID,
    budget_limit: Annotated[
        Decimal | None,
        strawberry.argument(description="The most it may cost (0 to 9999999999.9999); null: none."),
    ],
    budget_action: BudgetAction = BudgetAction.WARN,
) -> JobCommandResult:
    changed = await info.context.services.jobs.change_budget(
        info.context.authenticated(), JobId(parse_uuid(id, "id")), budget_limit, budget_action
    )
    return Job.from_domain(changed)


@requires(Scope.JOBS_WRITE)
@typed_errors
async def update_job_priority(
    info: Info, id: strawberry.ID, priority: JobPriority
) -> JobCommandResult:
    changed = await info.context.services.jobs.change_priority(
        info.context.authenticated(), JobId(parse_uuid(id, "id")), priority
    )
    return Job.from_domain(changed)
