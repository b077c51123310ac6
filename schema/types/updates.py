"""Messages of the `jobUpdates` subscription."""

from __future__ import annotations

from typing import Annotated

import strawberry

from schema.types.dispatch import JobMove
from schema.types.enums import ChangeKind
from schema.types.job import BudgetNotice, Job, JobEvent


@strawberry.type(description="The jobs you may see on the cluster, as of `sequence`.")
class JobSnapshot:
    sequence: int
    jobs: list[Job]
    truncated: bool = strawberry.field(description="More jobs matched than a snapshot holds.")
    reason: str = strawberry.field(
        description="subscribed; history-gone (since was older than the retained history); "
        "unknown-since (since was ahead of the cluster's history, e.g. after a restore); or "
        "resync (this subscriber fell behind and its backlog was dropped)."
    )
    shared: strawberry.Private[bool] = False
    """One object for every subscriber with the same view (schema/execution.py runs it once)."""
    large: strawberry.Private[bool] = True


@strawberry.type(description="One change to one job, in the cluster's event order.")
class JobChange:
    sequence: int
    kind: ChangeKind
    job: Job
    transition: JobEvent | None
    budget: BudgetNotice | None = strawberry.field(
        default=None, description="With BUDGET: the job's cost against its budget."
    )
    move: JobMove | None = strawberry.field(
        default=None,
        description="With MOVED: the move, said on the stream of the cluster it left (the job "
        "then no longer matches that stream: matchesFilter false) and of the one it joined.",
    )
    matches_filter: bool = strawberry.field(
        description="False when the change took the job out of the subscription's filter."
    )


JobUpdate = Annotated[JobSnapshot | JobChange, strawberry.union("JobUpdate")]
