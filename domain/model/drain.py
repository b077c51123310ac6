"""Drains: a node, or a whole cluster, taken out of service before maintenance or removal.

While a drain is on, nothing new is admitted where it covers (the node is cordoned; a cluster
drained as a whole admits nothing, as Kueue's ClusterQueue `stopPolicy: Hold`), and what ran there
leaves it (`domain.services.drains`): a batch or training job gets its checkpoint signal (SIGTERM,
then the grace period it declares) and is requeued in the same attempt, a deployment's replica is
started elsewhere before the old one stops. A drain is DRAINING until nothing of budcluster's runs
where it covers and the last grace period given is over, then DRAINED; undrained, it ENDED (kept
for the timeline's past).
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import NewType

from domain.model.cluster import Node
from domain.model.ids import ClusterId
from domain.model.job import Job

DrainId = NewType("DrainId", uuid.UUID)

DEFAULT_GRACE_SECONDS = 30
"""A job's grace period when it declares none: Kubernetes' default terminationGracePeriodSeconds
(the pod spec's), so a job behaves the same on both kinds of cluster."""
MAX_GRACE_SECONDS = 3600
"""The longest grace period a job may declare: an hour, time enough to write a large model's
checkpoint; a drain whose jobs asked for more would hold a node hostage."""


def new_drain_id() -> DrainId:
    return DrainId(uuid.uuid4())


class DrainState(enum.StrEnum):
    DRAINING = "DRAINING"
    DRAINED = "DRAINED"
    ENDED = "ENDED"


@dataclass(frozen=True)
class Drain:
    id: DrainId
    cluster_id: ClusterId
    node: str | None
    """The node drained; None: the whole cluster."""
    reason: str
    started_at: datetime
    started_by: str
    """The actor who asked (an operator's token)."""
    evictions_end: datetime
    """When the last grace period it gave a job ends (`started_at` if it gave none)."""
    replacing: int = 0
    """Deployment replicas on it being started elsewhere (each stops once its replacement
    runs)."""
    drained_at: datetime | None = None
    """When nothing of budcluster's ran where it covers any more."""
    ended_at: datetime | None = None
    """Undrained."""
    blocked: tuple[str, ...] = ()
    """Pods (`namespace/name`) a PodDisruptionBudget kept there at the last try (Kubernetes)."""

    @property
    def active(self) -> bool:
        return self.ended_at is None

    @property
    def state(self) -> DrainState:
        if self.ended_at is not None:
            return DrainState.ENDED
        return DrainState.DRAINED if self.drained_at is not None else DrainState.DRAINING

    def covers(self, node: str | None) -> bool:
        """Whether the drain holds `node` (None: a job that holds no node)."""
        return self.active and (self.node is None or self.node == node)

    def end(self, at: datetime) -> Drain:
        return replace(self, ended_at=at)

    def done(self, at: datetime) -> Drain:
        return replace(self, drained_at=at, blocked=())


def grace_of(job: Job) -> int:
    """The seconds a job's containers get between SIGTERM and being killed."""
    given = job.termination_grace_seconds
    return DEFAULT_GRACE_SECONDS if given is None else given


def cordoned(nodes: Iterable[Node], drains: Sequence[Drain]) -> list[Node]:
    """The nodes as admission sees them under `drains`: those a drain covers are cordoned
    (`schedulable` False), as their cluster reports them once the cordon is in place."""
    on = [d for d in drains if d.active]
    if not on:
        return list(nodes)
    return [
        replace(n, schedulable=False) if n.schedulable and any(d.covers(n.name) for d in on) else n
        for n in nodes
    ]


def holding_cluster(drains: Sequence[Drain]) -> Drain | None:
    """The drain of the whole cluster, if one is on."""
    return next((d for d in drains if d.active and d.node is None), None)
