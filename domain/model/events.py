"""Cluster-level events, beside the job events (`JobChanged`): ordered in the same per-cluster
sequence and delivered through the same outbox, so one resumable stream carries both.

TIMELINE carries the change of the schedule timeline (and, for storage, the whole new timeline
the change leads to); QUOTAS, RESERVATIONS and NODES say that something the estimate depends on
changed, which makes the timeline be recomputed. STATUS and NODES carry the cluster's state
after the change (status, reason, nodes): what `clusterUpdates` subscribers receive.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import datetime

from domain.model.benchmark import BenchmarkChanged
from domain.model.cluster import Cluster, ClusterStatus, Node
from domain.model.deployment import DeploymentChanged
from domain.model.ids import ClusterId
from domain.model.job import JobChanged
from domain.model.timeline import Timeline, TimelineDiff


class ClusterChangeKind(enum.StrEnum):
    TIMELINE = "TIMELINE"
    QUOTAS = "QUOTAS"
    RESERVATIONS = "RESERVATIONS"
    NODES = "NODES"
    STATUS = "STATUS"


@dataclass(frozen=True)
class ClusterState:
    """A cluster as `clusterUpdates` shows it, after a change."""

    status: ClusterStatus
    reason: str | None
    not_available_since: datetime | None
    nodes: tuple[Node, ...]

    @classmethod
    def of(cls, cluster: Cluster) -> ClusterState:
        return cls(
            cluster.status, cluster.reason, cluster.not_available_since, tuple(cluster.nodes)
        )


@dataclass(frozen=True)
class ClusterChanged:
    kind: ClusterChangeKind
    cluster_id: ClusterId
    timeline: TimelineDiff | None = None
    state: Timeline | None = None
    """The timeline after `timeline` is applied; stored with the event, not sent."""
    cluster: ClusterState | None = None
    """For STATUS and NODES: the cluster after the change."""


ServingChange = DeploymentChanged | BenchmarkChanged
"""A tenant's deployment or benchmark changed: seen by that tenant only, never by the schedule."""

Change = JobChanged | ClusterChanged | DeploymentChanged | BenchmarkChanged
"""Every kind of event a cluster's sequence orders."""
