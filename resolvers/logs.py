"""A job's logs (`jobs:logs`): `Query.jobLogs` and the `jobLogs` subscription that follows them."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from datetime import datetime
from typing import Annotated

import strawberry

from domain.model.ids import JobId
from domain.model.principal import Scope
from resolvers.common import parse_uuid, query_uuid
from resolvers.streams import relay
from schema.access import requires
from schema.context import Info
from schema.refusals import typed_errors
from schema.types import errors
from schema.types.logs import JobLogs

JobLogsResult = Annotated[
    JobLogs | errors.ValidationError | errors.NotFoundError | errors.ForbiddenError,
    strawberry.union("JobLogsResult"),
]


@requires(Scope.JOBS_LOGS)
@typed_errors
async def job_logs(
    info: Info,
    job_id: strawberry.ID,
    attempt: int | None = None,
    pod: str | None = None,
    since: datetime | None = None,
    tail: int | None = 200,
) -> JobLogsResult:
    principal = info.context.authenticated()
    found = await info.context.services.logs.read(
        principal,
        JobId(parse_uuid(job_id, "job_id")),
        attempt=attempt,
        pod=pod,
        since=since,
        tail=tail,
    )
    return JobLogs.from_domain(found)


@requires(Scope.JOBS_LOGS)
def follow_job_logs(
    info: Info,
    job_id: strawberry.ID,
    attempt: int | None = None,
    pod: str | None = None,
    tail: int | None = 200,
) -> AsyncGenerator[JobLogs, None]:
    principal = info.context.authenticated()
    key = JobId(query_uuid(job_id, "jobId"))
    return relay(
        info,
        lambda: info.context.services.logs.follow(
            principal, key, attempt=attempt, pod=pod, tail=tail
        ),
        JobLogs.from_domain,
        missing="no such job",
        field="jobId",
    )
