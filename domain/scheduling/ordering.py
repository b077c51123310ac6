"""The orders admission and preemption go by, named (Kueue's queue ordering and its preemption
candidates' ordering).

Both are NamedTuples: they compare field by field as plain tuples do, at the same cost, so a heap
or a sort over them behaves as over the tuples they replace.
"""

from __future__ import annotations

from datetime import datetime
from typing import NamedTuple


class AdmissionOrder(NamedTuple):
    """Who is admitted first: the higher priority, then the older, then by key."""

    minus_priority: int
    """Minus the priority, so that a higher priority sorts first."""
    created_at: datetime
    key: str


class VictimOrder(NamedTuple):
    """Who is evicted first: workloads of other queues (borrowers) before the preemptor's own
    queue's, then the lowest priority, then the most recently started, then by key."""

    own_queue: bool
    priority: int
    minus_since: float
    """Minus the start's timestamp, so that the most recent sorts first."""
    key: str
