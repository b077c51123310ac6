"""Keeping a fleet's waiting jobs where they start soonest: one pass weighs every waiting job
against every other member, and moves those that gain enough.

A pass reads the fleet's waiting jobs (PENDING or QUEUED: not yet admitted). Each has its own
member's estimate (the member's last recompute). For every other member that answers, one
estimate is made with all the fleet's movable jobs of the other members arriving at once
(`TimelineService.what_if`): each job's start there is no earlier than if it came alone, so a
move is never made on room that another arrival would take. `move_to` (the same rule the fleet
replay measures) decides, with the start window the job's own member gives its estimate (a move
must beat the earliest of it); the plan (each job's member and start, and the best other) is stored
for the fleet view, and the moves are made one job per transaction, each checked against the job
as it is then (same member, same hand-over, still waiting): a job admitted meanwhile stays.

A job leaves a member drained as a whole at once (`domain.services.drains`), and one that
stopped answering (NOT_AVAILABLE, ERROR) or left the fleet, whatever
the threshold and the most moves: a PENDING one at once, a QUEUED one once the member has not
answered for `lost_after` (Kueue's MultiKueue default workerLostTimeout, 15 minutes), since its
copy there cannot be withdrawn and a member that comes back within that time may still admit it.
Past that, the copy left behind is taken back when the member answers again (the watch's strays).

Not moved: jobs that depend on others or run in a reservation (both tie a job to its member),
jobs a budget holds, a deployment's replicas and a benchmark's runs (their deployment or
benchmark is of one cluster), and jobs not estimated since they arrived. Nor, for a gain, a
retry: a job that ran and was evicted or failed is retried where it ran, behind what queued
there meanwhile; moved to where it starts at once, it would take, ahead of its turn, the room
of jobs still waiting for their first start (on the fleet replay, moving retries too made the
mean first wait of the whole trace 20 to 40 % longer than with first attempts moved alone).

"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from domain.errors import Conflict
from domain.model.audit import AuditEvent
from domain.model.cluster import Cluster, ClusterStatus
from domain.model.fleet import Fleet, FleetPlan, JobMove, PlannedJob
from domain.model.ids import ClusterId, FleetId, JobId
from domain.model.job import MANAGED_SOURCES, Job, JobStatus
from domain.ports.clock import Clock
from domain.ports.unit_of_work import TenantScope, UnitOfWorkFactory
from domain.scheduling.dispatch import DISPATCH_CONFIDENCE, Offer, move_to, rank
from domain.services.fleets import members_of
from domain.services.timeline import Arrival, TimelineService

log = logging.getLogger(__name__)

SYSTEM_ACTOR = "system:fleets"
LOST_AFTER = timedelta(minutes=15)
"""Kueue's MultiKueue `workerLostTimeout` default: how long a worker may be unreachable before
the manager gives its workloads up and dispatches them again."""
UNANSWERING = frozenset({ClusterStatus.NOT_AVAILABLE, ClusterStatus.ERROR, ClusterStatus.DELETING})


@dataclass(frozen=True)
class Move:
    job_id: JobId
    origin: ClusterId
    generation: int
    target: Offer
    reason: str
    withdraw: bool
    forced: bool = False
    """Its member stopped answering or left the fleet: not counted against the threshold."""


def movable(job: Job, *, forced: bool = False) -> bool:
    """Whether a waiting job may move: never one tied to its member (module docstring); for a
    gain (not `forced` off a member that stopped answering), only its first attempt (a retry
    stays where it ran: module docstring)."""
    return (
        not job.depends_on
        and job.reservation_id is None
        and job.held_by is None
        and job.source.kind not in MANAGED_SOURCES
        and (forced or job.attempt == 0)
    )


def due(job: Job, now: datetime) -> bool:
    """A PENDING job that its member is being handed now (no backoff, its window open)."""
    waits = job.next_attempt_at is not None and job.next_attempt_at > now
    return not waits and (job.window is None or job.window.contains(now))


def arrival(job: Job, cluster: ClusterId, fleet: Fleet) -> Job:
    """The job as if it were submitted to `cluster`: waiting there, not yet handed over."""
    return replace(
        job,
        cluster_id=cluster,
        status=JobStatus.PENDING,
        queue_name=fleet.local_queue,
        placements=(),
        changes=[],
    )


class FleetBalancer:
    def __init__(
        self,
        *,
        uow: UnitOfWorkFactory,
        clock: Clock,
        timeline: TimelineService,
        lost_after: timedelta = LOST_AFTER,
    ) -> None:
        self._uow = uow
        self._clock = clock
        self._timeline = timeline
        self._lost_after = lost_after

    async def balance_all(self) -> list[JobMove]:
        async with self._uow(TenantScope.system()) as uow:
            fleets = await uow.fleets.all()
        moved: list[JobMove] = []
        for fleet in fleets:
            moved += await self.balance(fleet.id)
        return moved

    async def balance(self, fleet_id: FleetId) -> list[JobMove]:
        """One pass over the fleet (see the module's docstring); the moves it made."""
        async with self._uow(TenantScope.system()) as uow:
            fleet = await uow.fleets.get(fleet_id)
            if fleet is None:
                return []
            waiting = await uow.jobs.waiting_in_fleet(fleet_id)
            homes = {j.cluster_id for j in waiting} | {j.copy_cluster for j in waiting}
            clusters = await uow.clusters.get_many(sorted({*fleet.members, *homes}, key=str))
            drains = await uow.drains.on(sorted(clusters, key=str))
        drained = {d.cluster_id for d in drains if d.node is None}
        members = members_of(fleet, list(clusters.values()))
        answering = [
            c for c in members if c.status is ClusterStatus.AVAILABLE and c.id not in drained
        ]
        candidates = [
            j for j in waiting if movable(j, forced=True) and j.estimate_reason is not None
        ]
        considered = {j.id for j in candidates}
        plans: dict[ClusterId, dict[JobId, Arrival]] = {}
        for cluster in answering:
            arrivals = [
                arrival(j, cluster.id, fleet) for j in candidates if j.cluster_id != cluster.id
            ]
            plans[cluster.id] = await self._timeline.what_if(
                cluster.id, arrivals, fleet.cluster_queue
            )
        now = self._clock.now()
        planned: list[PlannedJob] = []
        moves: list[Move] = []
        for job in waiting:
            window = await self._timeline.start_window(
                job.cluster_id,
                job.estimated_start if job.id in considered else None,
                DISPATCH_CONFIDENCE,
                wide=job.resources.total_pods > 1,
            )
            current = Offer(
                job.cluster_id,
                clusters[job.cluster_id].name if job.cluster_id in clusters else "",
                start=job.estimated_start,
                end=job.estimated_end,
                window=None if window is None else (window.earliest, window.latest),
                warnings=job.estimate_warnings,
            )
            others = [
                Offer(
                    c.id,
                    c.name,
                    start=a.plan.start,
                    end=a.plan.end,
                    evicts=a.evicts,
                    warnings=a.plan.warnings,
                )
                for c in answering
                if c.id != job.cluster_id and (a := plans[c.id].get(job.id)) is not None
            ]
            ranked = rank(others, now, deadline=job.deadline)
            best = ranked[0] if ranked and ranked[0].start is not None else None
            planned.append(
                PlannedJob(
                    job.id,
                    job.cluster_id,
                    job.estimated_start,
                    best.cluster_id if best else None,
                    best.start if best else None,
                )
            )
            if best is not None and job.id in considered:
                move = self._decide(fleet, job, clusters, current, ranked, now, drained)
                if move is not None:
                    moves.append(move)
        made = []
        for move in moves:
            done = await self._move(fleet, move)
            if done is not None:
                made.append(done)
        moved = {m.job_id: m for m in moves if any(d.job_id == m.job_id for d in made)}
        planned = [_after(p, moved.get(p.job_id)) for p in planned]
        async with self._uow(TenantScope.system()) as uow:
            await uow.fleets.set_plan(fleet_id, FleetPlan(now, tuple(planned)))
            await uow.commit()
        return made

    def _decide(
        self,
        fleet: Fleet,
        job: Job,
        clusters: Mapping[ClusterId, Cluster],
        current: Offer,
        ranked: Sequence[Offer],
        now: datetime,
        drained: Collection[ClusterId] = (),
    ) -> Move | None:
        best = ranked[0]
        home = clusters.get(job.cluster_id)
        holder = clusters.get(job.copy_cluster)  # its member, or the manager it went through
        reachable = holder is not None and holder.status is ClusterStatus.AVAILABLE
        if job.cluster_id in drained and (reachable or job.status is JobStatus.PENDING):
            return Move(
                job.id,
                job.cluster_id,
                job.generation,
                best,
                f"moved to cluster {best.name}: its cluster is drained",
                withdraw=reachable,
                forced=True,
            )
        away = home is None or not fleet.has(home.id) or home.status is ClusterStatus.DELETING
        if away or (home is not None and home.status in UNANSWERING):
            since = home.not_available_since if home is not None else None
            lost = away or since is None or now - since >= self._lost_after
            if job.status is JobStatus.QUEUED and not lost:
                return None  # its copy there may still be admitted when it answers
            where = "left the fleet" if away else f"is {home.status.value}" if home else ""
            return Move(
                job.id,
                job.cluster_id,
                job.generation,
                best,
                f"moved to cluster {best.name}: its cluster {where}",
                withdraw=reachable,  # else its member's watch takes the copy back later
                forced=True,
            )
        if not reachable or not movable(job):
            return None  # a copy on a manager that does not answer cannot be withdrawn
        if job.status is JobStatus.PENDING and due(job, now):
            return None  # its hand-over is under way: moved, if at all, once it is queued
        if job.moves >= fleet.max_moves:
            return None
        target = move_to(
            current,
            ranked,
            now,
            threshold=timedelta(seconds=fleet.move_threshold_seconds),
            deadline=job.deadline,
        )
        if target is None:
            return None
        return Move(
            job.id,
            job.cluster_id,
            job.generation,
            target,
            _gain(current, target, job.deadline),
            withdraw=True,
        )

    async def _move(self, fleet: Fleet, move: Move) -> JobMove | None:
        """Move one job, if it still waits where the pass saw it (one transaction)."""
        now = self._clock.now()
        try:
            async with self._uow(TenantScope.system()) as uow:
                job = await uow.jobs.get(move.job_id, for_update=True)
                if (
                    job is None
                    or job.cluster_id != move.origin
                    or job.generation != move.generation
                    or job.status not in (JobStatus.PENDING, JobStatus.QUEUED)
                    or job.held_by is not None
                ):
                    return None
                job.move(move.target.cluster_id, move.reason, now, withdraw=move.withdraw)
                await uow.audit.add(_audited(job, fleet, move, now))
                await uow.commit()
        except Conflict:  # changed meanwhile (admitted, say): the next pass looks again
            return None
        log.info("moved job %s from %s to %s: %s", job.id, move.origin, job.cluster_id, move.reason)
        return JobMove(job.id, job.attempt, move.origin, job.cluster_id, now, move.reason)


def _after(planned: PlannedJob, move: Move | None) -> PlannedJob:
    """A job's place in the plan once the pass moved it: where it went, and where it was as
    the next best."""
    if move is None:
        return planned
    return PlannedJob(
        planned.job_id, move.target.cluster_id, move.target.start, move.origin, planned.start
    )


def _gain(current: Offer, target: Offer, deadline: datetime | None) -> str:
    if deadline is not None and target.ends_by(deadline) and not current.ends_by(deadline):
        return f"moved to cluster {target.name}: it meets the deadline there"
    if current.start is None or target.start is None:
        return f"moved to cluster {target.name}: nothing starts it where it was"
    gain = int((current.start - target.start).total_seconds())
    return f"moved to cluster {target.name}: starts {gain} s sooner"


def _audited(job: Job, fleet: Fleet, move: Move, at: datetime) -> AuditEvent:
    return AuditEvent(
        id=uuid.uuid4(),
        at=at,
        tenant_id=job.tenant_id,
        actor=SYSTEM_ACTOR,
        token_id=None,
        operation="moveJob",
        targets=(str(job.id), str(move.origin), str(job.cluster_id), str(fleet.id)),
        input={
            "fleet": fleet.name,
            "from": str(move.origin),
            "to": str(job.cluster_id),
            "reason": move.reason,
            "forced": move.forced,
        },
        outcome="OK",
        source="system",
        project_id=job.project_id,
    )
