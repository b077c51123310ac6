"""Cluster-level events, beside the job events (`JobChanged`): ordered in the same per-cluster
sequence and delivered through the same outbox, so one resumable stream carries both.

TIMELINE carries the change of the schedule timeline (and, for storage, the whole new timeline
the change leads to); QUOTAS, RESERVATIONS and NODES say that something the estimate depends on
changed, which makes the timeline be recomputed.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from domain.model.ids import ClusterId
from domain.model.timeline import Timeline, TimelineDiff


class ClusterChangeKind(enum.StrEnum):
    TIMELINE = "TIMELINE"
    QUOTAS = "QUOTAS"
    RESERVATIONS = "RESERVATIONS"
    NODES = "NODES"


@dataclass(frozen=True)
class ClusterChanged:
    kind: ClusterChangeKind
    cluster_id: ClusterId
    timeline: TimelineDiff | None = None
    state: Timeline | None = None
    """The timeline after `timeline` is applied; stored with the event, not sent."""
