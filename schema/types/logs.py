"""A job's logs: what its attempt's pods wrote."""

from __future__ import annotations

from datetime import datetime

import strawberry

from domain.services.logs import JobLogs as DomainJobLogs


@strawberry.type(description="One line a job's container wrote.")
class LogLine:
    at: datetime
    pod: str
    text: str


@strawberry.type(
    description="Lines of one attempt of a job, oldest first (as its cluster keeps them, or as "
    "budcluster kept them when the attempt failed)."
)
class JobLogs:
    job_id: strawberry.ID
    attempt: int
    pods: list[str] = strawberry.field(description="The pods these lines are of.")
    lines: list[LogLine]
    kept: bool = strawberry.field(
        description="These are the last lines kept when the attempt failed: its pods are gone."
    )
    note: str | None = strawberry.field(
        description="Why there may be fewer lines than asked for (its cluster did not answer)."
    )

    @classmethod
    def from_domain(cls, logs: DomainJobLogs) -> JobLogs:
        return cls(
            job_id=strawberry.ID(str(logs.job_id)),
            attempt=logs.attempt,
            pods=logs.pods,
            lines=[LogLine(at=line.at, pod=line.pod, text=line.text) for line in logs.lines],
            kept=logs.kept,
            note=logs.note,
        )
