"""A fleet: clusters grouped behind one queue name, so a job submitted to it goes where it is
estimated to start soonest (`domain.scheduling.dispatch`).

The operator makes a fleet of member clusters that share a ClusterQueue and a LocalQueue name
(each tenant's LocalQueue of that name, in its namespace, on every member). A job submitted to
the fleet is a job of one member at a time (`Job.cluster_id`, with `Job.fleet_id` set); before it
is admitted it may move to another member (`Job.move`) when that member would now start it much
sooner (`move_threshold_seconds`, at most `max_moves` times), or when its own member stops
answering. On Kubernetes a fleet may have a manager cluster: MultiKueue's, where the job's
Workload lives and budcluster, as its external dispatcher, nominates the member that runs it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from domain.model.ids import ClusterId, FleetId, JobId

MAX_MEMBERS = 16
"""Members of one fleet: each submission previews the job on every member (one estimate each),
so the cost of a submission grows with them; MultiKueue's own tests run a handful of workers."""
DEFAULT_MOVE_THRESHOLD_SECONDS = 600
"""A waiting job moves only to a member that would start it at least this much sooner: ten
minutes, the scale under which the estimator's own accuracy counts a start as on time
(`estimateAccuracy.startWithin10Minutes`), so a move is never made on a difference the estimate
cannot tell apart."""
DEFAULT_MAX_MOVES = 3
"""Moves of one job (Kueue's Incremental dispatcher widens its nomination three times before it
has named every cluster of a small fleet; more moves than that is churn, not placement)."""
MAX_MOVES_LIMIT = 20


@dataclass
class Fleet:
    id: FleetId
    name: str
    members: tuple[ClusterId, ...]
    """In the order the operator gave them (ties in dispatch are broken by cost and load, then
    by this order)."""
    created_at: datetime
    updated_at: datetime
    cluster_queue: str = "default"
    """The ClusterQueue every member has, whose quota fleet jobs are admitted against."""
    local_queue: str = "default"
    """The LocalQueue name fleet jobs are submitted to in their tenant's namespace."""
    move_threshold_seconds: int = DEFAULT_MOVE_THRESHOLD_SECONDS
    max_moves: int = DEFAULT_MAX_MOVES
    manager_cluster_id: ClusterId | None = None
    """MultiKueue's manager cluster (Kubernetes): None, budcluster dispatches to the chosen
    member directly."""

    def has(self, cluster_id: ClusterId) -> bool:
        return cluster_id in self.members


@dataclass(frozen=True)
class JobMove:
    """A job taken from one member of its fleet to another before it was admitted."""

    job_id: JobId
    attempt: int
    from_cluster: ClusterId
    to_cluster: ClusterId
    at: datetime
    reason: str


@dataclass(frozen=True)
class PlannedJob:
    """Where one waiting fleet job stands in the fleet's latest plan: its member and start
    there, and the best other member with its start (None: no other member would start it)."""

    job_id: JobId
    cluster_id: ClusterId
    start: datetime | None
    next_best: ClusterId | None = None
    next_best_start: datetime | None = None


@dataclass(frozen=True)
class FleetPlan:
    """What the fleet's last balancing pass found (`domain.services.fleets.FleetBalancer`)."""

    computed_at: datetime
    jobs: tuple[PlannedJob, ...] = ()
