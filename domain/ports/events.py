"""Committed events: the outbox's history, its announcement, its per-process fan-out."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from domain.model.benchmark import BenchmarkChanged
from domain.model.deployment import DeploymentChanged
from domain.model.events import Change, ClusterChanged
from domain.model.ids import ClusterId
from domain.model.job import ChangeKind, JobChanged


@dataclass(frozen=True)
class StoredEvent:
    """An outbox event as committed: ordered within its cluster by `sequence`."""

    cluster_id: ClusterId
    sequence: int
    change: Change
    occurred_at: datetime

    @property
    def job_change(self) -> JobChanged | None:
        return self.change if isinstance(self.change, JobChanged) else None

    @property
    def cluster_change(self) -> ClusterChanged | None:
        return self.change if isinstance(self.change, ClusterChanged) else None

    @property
    def deployment_change(self) -> DeploymentChanged | None:
        return self.change if isinstance(self.change, DeploymentChanged) else None

    @property
    def benchmark_change(self) -> BenchmarkChanged | None:
        return self.change if isinstance(self.change, BenchmarkChanged) else None

    @property
    def affects_schedule(self) -> bool:
        """Whether the schedule timeline may follow from it: a job's change, or a change of
        what admission depends on (not a timeline of its own, nor a deployment's or benchmark's
        view, whose jobs raise their own events)."""
        if isinstance(self.change, JobChanged):  # a budget notice changes no plan; a hold does
            change = self.change
            return (
                change.kind is not ChangeKind.BUDGET
                or change.released
                or change.job.held_by is not None
            )
        if isinstance(self.change, ClusterChanged):
            return self.change.kind.value != "TIMELINE"
        return False


class EventLog(Protocol):
    """The committed, retained event history of each cluster (the outbox, read side)."""

    async def current_sequence(self, cluster_id: ClusterId) -> int: ...

    async def retained_after(self, cluster_id: ClusterId) -> int:
        """Events with a sequence above this are still held: a `since` below it needs a snapshot."""

    async def read_after(
        self, cluster_id: ClusterId, after: int, *, limit: int
    ) -> list[StoredEvent]: ...


class EventPublisher(Protocol):
    async def publish(self, events: Sequence[StoredEvent]) -> None:
        """Announce committed events to every API process. Best effort: subscribers re-read gaps."""


class Overflowed:
    """Marker a live subscription yields when its bounded buffer overflowed and events were lost."""

    def __repr__(self) -> str:
        return "Overflowed()"


class LiveSubscription(Protocol):
    def __aiter__(self) -> AsyncIterator[StoredEvent | Overflowed]: ...

    async def close(self) -> None: ...


class EventHub(Protocol):
    """Per-process fan-out of a cluster's events, in sequence order without gaps."""

    async def subscribe(self, cluster_id: ClusterId, *, buffer: int) -> LiveSubscription: ...
