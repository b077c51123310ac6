"""Turn what a cluster reports about a workload into job transitions.

An observation carries the workload's whole current state, so applying it is idempotent and
tolerant of missed or late reports: a job QUEUED in our records whose workload has already
finished is walked through ADMITTED and RUNNING to COMPLETED, each step stamped with the time
the cluster recorded for it; an observation older than what we know, or about another attempt,
changes nothing. Container restarts reported of a running attempt are recorded on its job
(`Job.report_restarts`) when they differ from what it knows. A FAILED or PREEMPTED attempt is
retried automatically (after backoff) while retries remain (Kueue would requeue an evicted
workload itself: it is taken back instead, and the retry is ours). What follows a change
(taking back, handing over, releasing dependents) is the reactions' business once it is
committed.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from domain.model.ids import ClusterId, JobId
from domain.model.job import ALLOWED_TRANSITIONS, Job, JobStatus, Placement
from domain.ports.clock import Clock
from domain.ports.gateways import ClusterGateway, WorkloadObservation, WorkloadPhase
from domain.ports.unit_of_work import TenantScope, UnitOfWork, UnitOfWorkFactory
from domain.services.jobs import JobService

log = logging.getLogger(__name__)

PHASE_STATUS = {
    WorkloadPhase.QUEUED: JobStatus.QUEUED,
    WorkloadPhase.ADMITTED: JobStatus.ADMITTED,
    WorkloadPhase.RUNNING: JobStatus.RUNNING,
    WorkloadPhase.SUCCEEDED: JobStatus.COMPLETED,
    WorkloadPhase.FAILED: JobStatus.FAILED,
    WorkloadPhase.PREEMPTED: JobStatus.PREEMPTED,
    WorkloadPhase.DELETED: JobStatus.CANCELLED,
}

_FORWARD = [JobStatus.PENDING, JobStatus.QUEUED, JobStatus.ADMITTED, JobStatus.RUNNING]


def transition_path(current: JobStatus, target: JobStatus) -> list[JobStatus]:
    """The statuses a job passes through to reach what the cluster reports; [] if stale."""
    if current not in _FORWARD:
        return []  # the attempt already ended here; late reports change nothing
    if current is JobStatus.ADMITTED and target is JobStatus.QUEUED:
        return [JobStatus.QUEUED]  # the reservation was released
    if target in _FORWARD:
        here, there = _FORWARD.index(current), _FORWARD.index(target)
        return _FORWARD[here + 1 : there + 1]
    path: list[JobStatus] = []
    status = current
    while target not in _allowed(status):
        status = _FORWARD[_FORWARD.index(status) + 1]
        path.append(status)
    path.append(target)
    return path


def _allowed(status: JobStatus) -> frozenset[JobStatus]:
    return ALLOWED_TRANSITIONS[status]


LOST_REASON = "lost: its objects are gone from the cluster"
_MUST_EXIST = (JobStatus.ADMITTED, JobStatus.RUNNING)


@dataclass
class Reconciliation:
    """What `reconcile_listing` found: jobs lost, orphans seen, orphans removed."""

    lost: list[JobId] = field(default_factory=list)
    orphans: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)


def _stamp(status: JobStatus, obs: WorkloadObservation) -> datetime:
    """When the job reached `status`, by the times the cluster reported: a status walked
    through without its own time takes the next one known, so the history stays in order."""
    if status is JobStatus.ADMITTED:
        return obs.admitted_at or obs.started_at or obs.finished_at or obs.observed_at
    if status is JobStatus.RUNNING:
        return obs.started_at or obs.finished_at or obs.observed_at
    if not status.is_active and obs.finished_at:
        return obs.finished_at
    return obs.observed_at


def observed_path(current: JobStatus, obs: WorkloadObservation) -> list[JobStatus]:
    """`transition_path` to what `obs` reports, through ADMITTED and RUNNING when its times say
    the attempt got that far (QUEUED -> FAILED is allowed, but a failure seen after it started
    ran: the report that it ran was missed, not the run)."""
    target = PHASE_STATUS[obs.phase]
    via = (
        JobStatus.RUNNING
        if obs.started_at is not None
        else JobStatus.ADMITTED
        if obs.admitted_at is not None
        else None
    )
    if (
        via is not None
        and not target.is_active
        and current in _FORWARD
        and _FORWARD.index(current) < _FORWARD.index(via)
        and target in _allowed(via)
    ):
        return [*transition_path(current, via), target]
    return transition_path(current, target)


class ObservationService:
    def __init__(
        self,
        *,
        uow: UnitOfWorkFactory,
        clock: Clock,
        jobs: JobService,
        orphan_grace: timedelta = timedelta(minutes=10),
    ) -> None:
        self._uow = uow
        self._clock = clock
        self._jobs = jobs
        self.orphan_grace = orphan_grace
        self._orphans_seen: dict[tuple[ClusterId, JobId, int], datetime] = {}

    async def reconcile_listing(
        self,
        cluster_id: ClusterId,
        listed: Sequence[WorkloadObservation],
        gateway: ClusterGateway,
    ) -> Reconciliation:
        """The cluster is the source of truth for what runs (a real cluster, after a full list):
        a job ADMITTED or RUNNING here whose objects are gone becomes FAILED ("lost"); objects
        of budcluster's with no job here are orphans, reported, and removed once they have been
        seen for `orphan_grace`."""
        now = self._clock.now()
        seen = {(o.job_id, o.attempt) for o in listed}
        result = Reconciliation()
        async with self._uow(TenantScope.system()) as uow:
            active = await uow.jobs.active_via(cluster_id)  # its objects are here
            for job in sorted(active, key=lambda j: str(j.id)):  # locked in id order, as all
                if job.status in _MUST_EXIST and (job.id, job.attempt) not in seen:
                    fresh = await uow.jobs.get(job.id, for_update=True)
                    if fresh is None or fresh.status not in _MUST_EXIST:
                        continue
                    fresh.transition(JobStatus.FAILED, LOST_REASON, now)
                    result.lost.append(fresh.id)
                    self._jobs.retry_automatically(fresh, LOST_REASON)
            known = await uow.jobs.get_many(list({o.job_id for o in listed}))
            await uow.commit()
        for obs in listed:
            key = (cluster_id, obs.job_id, obs.attempt)
            if obs.job_id in known:  # an old attempt's objects are the cancel task's business
                self._orphans_seen.pop(key, None)
                continue
            first = self._orphans_seen.setdefault(key, now)
            if now - first >= self.orphan_grace:
                await gateway.cancel(obs.job_id, obs.attempt)
                self._orphans_seen.pop(key, None)
                result.removed.append(obs.workload or str(obs.job_id))
                log.warning("removed orphaned workload %s", obs.workload)
            else:
                result.orphans.append(obs.workload or str(obs.job_id))
                log.warning("workload %s has no job: removed after %s", obs.workload, first)
        return result

    async def apply(self, obs: WorkloadObservation) -> Job | None:
        """Apply one observation; returns the job if it changed."""
        applied = await self.apply_batch([obs])
        return applied.changed[0] if applied.changed else None

    async def apply_batch(
        self, observations: Sequence[WorkloadObservation], *, cluster_id: ClusterId | None = None
    ) -> Applied:
        """Apply what the cluster reported together (an admission cycle, a listing) in one
        commit: no reader sees an admission without the release that made room for it (found
        under load: 8 GPUs admitted on a 4-GPU quota in 15 % of samples). A plain read first
        finds what would change (a listing on takeover is mostly known already: it costs one
        read, not a transaction per workload); only those jobs are locked and changed."""
        if not observations:
            return Applied()
        ids = list(dict.fromkeys(o.job_id for o in observations))
        async with self._uow(TenantScope.system()) as uow:
            known = await uow.jobs.get_many(ids)
            dispatched = sorted({j.cluster_id for j in known.values() if j.dispatched_via}, key=str)
            members = await uow.clusters.get_many(dispatched) if dispatched else {}
        names = {c.id: c.name for c in members.values()}

        def elsewhere(job: Job | None, obs: WorkloadObservation) -> bool:
            return _elsewhere_admitted(job, obs, names)

        if cluster_id is not None:  # a job that moved to another member: its copy here is stale
            known = {k: _as_seen_by(j, cluster_id) for k, j in known.items()}
        result = Applied(strays=[o for o in observations if _stray(known.get(o.job_id), o)])
        moving = [
            o
            for o in observations
            if _plan(known.get(o.job_id), o) != ([], None)
            or _restarted(known.get(o.job_id), o)
            or elsewhere(known.get(o.job_id), o)
        ]
        if not moving:
            return result
        async with self._uow(TenantScope.system()) as uow:
            locked = await uow.jobs.get_many(
                list(dict.fromkeys(o.job_id for o in moving)), for_update=True
            )
            changed: dict[JobId, Job] = {}
            for obs in sorted(moving, key=_releases_first):
                job = locked.get(obs.job_id)
                if job is None:
                    continue
                if elsewhere(job, obs) and await self._follow(uow, job, obs):
                    changed[job.id] = job
                if self._apply(job, obs):
                    changed[job.id] = job
            await uow.commit()  # taking back, retrying, releasing dependents follow (reactions)
        result.changed = list(changed.values())
        return result

    async def _follow(self, uow: UnitOfWork, job: Job, obs: WorkloadObservation) -> bool:
        """MultiKueue admitted the job on another member than its own (`admitted_on`): it
        becomes that member's job, if the member is of its fleet."""
        assert obs.admitted_on is not None and job.fleet_id is not None
        member = await uow.clusters.get_by_name(obs.admitted_on)
        fleet = await uow.fleets.get(job.fleet_id)
        if member is None or fleet is None or not fleet.has(member.id):
            log.warning(
                "job %s was admitted on %s, not a member of its fleet", job.id, obs.admitted_on
            )
            return False
        job.admitted_on(
            member.id, f"admitted on cluster {member.name} by MultiKueue", obs.observed_at
        )
        return True

    def _apply(self, job: Job, obs: WorkloadObservation) -> bool:
        path, place = _plan(job, obs)
        if place is not None:
            job.place(place, obs.observed_at)
        for status in path:
            reason = obs.reason if status is path[-1] else f"observed {status.value.lower()}"
            job.transition(status, reason, _stamp(status, obs), placements=obs.placements)
        if path:
            self._jobs.retry_automatically(job, obs.reason)
        restarted = _restarted(job, obs) and job.status in _HOLDING
        if restarted and obs.restarts is not None:
            job.report_restarts(obs.restarts, obs.last_restart_at, obs.observed_at)
        return place is not None or bool(path) or restarted

    async def strays(
        self, listed: Sequence[WorkloadObservation], *, cluster_id: ClusterId | None = None
    ) -> list[WorkloadObservation]:
        """The live workloads among `listed` whose job is final, moved to a later attempt, or
        (with `cluster_id`, where they were listed) moved to another member of its fleet: the
        cluster must let them go (cancelling is level-triggered: whatever missed a cancel, a
        failed task, a cancel written over, a member that did not answer when its job moved,
        is found here)."""
        live = [o for o in listed if o.phase in _LIVE_PHASES]
        if not live:
            return []
        async with self._uow(TenantScope.system()) as uow:
            known = await uow.jobs.get_many(list({o.job_id for o in live}))
        if cluster_id is not None:
            known = {k: _as_seen_by(j, cluster_id) for k, j in known.items()}
        return [o for o in live if _stray(known.get(o.job_id), o)]


_LIVE_PHASES = frozenset({WorkloadPhase.QUEUED, WorkloadPhase.ADMITTED, WorkloadPhase.RUNNING})


@dataclass
class Applied:
    """What `apply_batch` did: the jobs it changed, and the live workloads it found whose job
    no longer wants them (the caller takes them back from the cluster)."""

    changed: list[Job] = field(default_factory=list)
    strays: list[WorkloadObservation] = field(default_factory=list)


def _plan(
    job: Job | None, obs: WorkloadObservation
) -> tuple[list[JobStatus], tuple[Placement, ...] | None]:
    """What an observation does to a job: the statuses it passes through, or else new
    placements; ([], None) when it changes nothing (another attempt, a stale report)."""
    if job is None or job.attempt != obs.attempt:
        return [], None
    if obs.workload is not None and obs.workload != job.workload_name:
        return [], None  # about a hand-over this attempt took back
    path = observed_path(job.status, obs)
    if path:
        return path, None
    holds = obs.phase in (WorkloadPhase.ADMITTED, WorkloadPhase.RUNNING)
    if holds and obs.placements and obs.placements != job.placements:
        return [], obs.placements
    return [], None


_HOLDING = frozenset({JobStatus.ADMITTED, JobStatus.RUNNING})


def _restarted(job: Job | None, obs: WorkloadObservation) -> bool:
    """`obs` reports container restarts of the job's current hand-over other than it knows."""
    if job is None or obs.restarts is None or job.attempt != obs.attempt:
        return False
    if obs.workload is not None and obs.workload != job.workload_name:
        return False
    if obs.phase not in (WorkloadPhase.ADMITTED, WorkloadPhase.RUNNING):
        return False
    return (obs.restarts, obs.last_restart_at) != job.container_restarts


def _as_seen_by(job: Job, cluster_id: ClusterId) -> Job:
    """A job as `cluster_id` sees it: itself, or, when it moved to another member of its
    fleet, a job none of whose attempts wants a copy here (an attempt beyond every one it has,
    so whatever is listed here is stray)."""
    if job.copy_cluster == cluster_id:
        return job
    return replace(job, attempt=job.attempt + 1, changes=[])


def _elsewhere_admitted(
    job: Job | None, obs: WorkloadObservation, names: dict[ClusterId, str]
) -> bool:
    """`obs` says MultiKueue admitted the job's current hand-over on a cluster other than its
    own member (by name, `names` of the members: the manager knows its workers so)."""
    return (
        job is not None
        and job.dispatched_via is not None
        and job.fleet_id is not None
        and obs.admitted_on is not None
        and obs.attempt == job.attempt
        and (obs.workload is None or obs.workload == job.workload_name)
        and job.status.is_active
        and names.get(job.cluster_id) != obs.admitted_on
    )


def _stray(job: Job | None, obs: WorkloadObservation) -> bool:
    if obs.phase not in _LIVE_PHASES or job is None:
        return False  # ended already, or an orphan (reconcile_listing's business)
    return obs.attempt < job.attempt or not job.status.is_active


def _releases_first(obs: WorkloadObservation) -> int:
    return 1 if obs.phase in _LIVE_PHASES else 0
