"""Fleets: clusters behind one queue name, and a fleet's queue across its members."""

from __future__ import annotations

from datetime import datetime

import strawberry

from domain.model import fleet as model
from domain.model.ids import ClusterId, FleetId
from domain.services.paging import check_first
from schema.context import Info
from schema.refusals import argument_error
from schema.types.cluster import Cluster
from schema.types.enums import JobStatus

QUEUE_PAGE = 100
MAX_QUEUE_PAGE = 1000


@strawberry.type(
    description="A waiting job of the fleet, where it is and where it would start next best."
)
class FleetQueueEntry:
    position: int
    job_id: strawberry.ID | None = strawberry.field(description="Null for other tenants' jobs.")
    name: str = strawberry.field(description='"another tenant" for other tenants\' jobs.')
    mine: bool = strawberry.field(description="Yours to see (as the schedule's QueueEntry).")
    status: JobStatus | None = strawberry.field(description="Null for other tenants' jobs.")
    cluster_id: strawberry.ID = strawberry.field(description="The member it waits on.")
    estimated_start: datetime | None = strawberry.field(description="Its start there.")
    next_best_cluster_id: strawberry.ID | None = strawberry.field(
        description="The member that would start it soonest after its own (null: none would)."
    )
    next_best_start: datetime | None
    moves: int = strawberry.field(description="Times it moved; 0 for other tenants' jobs.")


@strawberry.type(
    description="Clusters grouped behind one queue name: a job submitted to the fleet goes to "
    "the member where it is estimated to start soonest (with a deadline: the cheapest that "
    "meets it), and moves before admission when another member would start it much sooner."
)
class Fleet:
    id: strawberry.ID
    name: str
    cluster_queue: str = strawberry.field(description="The ClusterQueue every member has.")
    local_queue: str = strawberry.field(
        description="The LocalQueue (in each tenant's namespace) fleet jobs are submitted to."
    )
    move_threshold_seconds: int = strawberry.field(
        description="A waiting job moves only to a member that starts it at least this much "
        "sooner, and before the earliest of its start window where it is."
    )
    max_moves: int = strawberry.field(description="The most times one job moves.")
    created_at: datetime
    updated_at: datetime
    member_ids: strawberry.Private[tuple[ClusterId, ...]]
    manager_id: strawberry.Private[ClusterId | None]
    fleet_id: strawberry.Private[FleetId]

    @strawberry.field(description="The member clusters, in the order they were given.")  # type: ignore[untyped-decorator]
    async def members(self, info: Info) -> list[Cluster]:
        found = [await info.context.loaders.cluster.load(m) for m in self.member_ids]
        return [Cluster.from_domain(c) for c in found if c is not None]

    @strawberry.field(  # type: ignore[untyped-decorator]
        description="MultiKueue's manager cluster (Kubernetes), where the fleet's Workloads "
        "live; null: budcluster hands each job to its member itself."
    )
    async def manager_cluster(self, info: Info) -> Cluster | None:
        if self.manager_id is None:
            return None
        found = await info.context.loaders.cluster.load(self.manager_id)
        return Cluster.from_domain(found) if found else None

    @strawberry.field(  # type: ignore[untyped-decorator]
        description="When the fleet's waiting jobs were last weighed against every member."
    )
    async def planned_at(self, info: Info) -> datetime | None:
        plan = await info.context.services.fleets.plan(self.fleet_id)
        return plan.computed_at if plan else None

    @strawberry.field(  # type: ignore[untyped-decorator]
        description="The fleet's waiting jobs across its members, soonest first (the first "
        "`first`, at most 1000): each with its member and start there, and the next-best member "
        "and its start (as of plannedAt; others' jobs shown but not named)."
    )
    async def queue(self, info: Info, first: int = QUEUE_PAGE) -> list[FleetQueueEntry]:
        with argument_error("first"):
            check_first(first, MAX_QUEUE_PAGE)
        plan = await info.context.services.fleets.plan(self.fleet_id)
        if plan is None:
            return []
        soonest = sorted(
            plan.jobs, key=lambda p: (p.start is None, p.start.timestamp() if p.start else 0.0)
        )[:first]
        jobs = await info.context.loaders.job.load_many([p.job_id for p in soonest])
        entries: list[FleetQueueEntry] = []
        for planned, job in zip(soonest, jobs, strict=True):
            entries.append(
                FleetQueueEntry(
                    position=len(entries) + 1,
                    job_id=strawberry.ID(str(planned.job_id)) if job else None,
                    name=job.name if job else "another tenant",
                    mine=job is not None,
                    status=job.status if job else None,
                    cluster_id=strawberry.ID(str(planned.cluster_id)),
                    estimated_start=planned.start,
                    next_best_cluster_id=(
                        strawberry.ID(str(planned.next_best)) if planned.next_best else None
                    ),
                    next_best_start=planned.next_best_start,
                    moves=job.moves if job else 0,
                )
            )
        return entries

    @classmethod
    def from_domain(cls, fleet: model.Fleet) -> Fleet:
        return cls(
            id=strawberry.ID(str(fleet.id)),
            name=fleet.name,
            cluster_queue=fleet.cluster_queue,
            local_queue=fleet.local_queue,
            move_threshold_seconds=fleet.move_threshold_seconds,
            max_moves=fleet.max_moves,
            created_at=fleet.created_at,
            updated_at=fleet.updated_at,
            member_ids=fleet.members,
            manager_id=fleet.manager_cluster_id,
            fleet_id=fleet.id,
        )


@strawberry.input(description="A fleet: its name, members and shared queue names.")
class FleetInput:
    name: str = strawberry.field(description="A DNS-1123 label of at most 53 characters.")
    cluster_ids: list[strawberry.ID] = strawberry.field(
        description="1 to 16 clusters, each once, each holding clusterQueue."
    )
    cluster_queue: str = "default"
    local_queue: str = "default"
    move_threshold_seconds: int = strawberry.field(
        default=model.DEFAULT_MOVE_THRESHOLD_SECONDS,
        description="0 to 604800 (a week); 600 by default.",
    )
    max_moves: int = strawberry.field(
        default=model.DEFAULT_MAX_MOVES, description="0 to 20; 3 by default."
    )
    manager_cluster_id: strawberry.ID | None = strawberry.field(
        default=None,
        description="A Kubernetes cluster running MultiKueue's manager, outside the members "
        "(null: budcluster dispatches to the members itself).",
    )
