"""The `scheduleTimeline` stream: a stamped snapshot of a cluster's timeline, then ordered diffs.

Same contract as job updates: the live subscription is opened before the snapshot is read, the
snapshot is stamped with the cluster event sequence it reflects, diffs follow in sequence order
(job events in between are skipped), and `since: N` replays exactly the timeline changes after N,
or sends a fresh snapshot when that history is gone. A subscriber that fell behind is
resynchronised with a snapshot.

Diffs are cut to the subscriber's window and visibility without keeping per-subscriber state, so
a resumed stream is cut exactly like the original: `added` and `moved` segments are those that
overlap the window after the change (upsert them by id); `removed` lists ids that left the
timeline or the window (ids you do not hold can be ignored). The cut of one change is computed
once per (view, window) and shared by every subscriber with the same view: the operator's, or a
tenant's through one set of projects (`viewer_key`).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from datetime import datetime

from domain.model.events import ClusterChangeKind
from domain.model.ids import ClusterId
from domain.model.principal import Principal
from domain.model.timeline import QueueEntry, Row, Segment, Timeline, TimelineDiff
from domain.ports.events import StoredEvent
from domain.services.replay import ClusterStreams
from domain.services.timeline import (
    TimelineService,
    anonymous,
    anonymous_entry,
    viewer_key,
    visible_to,
)


@dataclass(frozen=True)
class ScheduleSnapshot:
    sequence: int
    timeline: Timeline
    reason: str


@dataclass(frozen=True)
class ScheduleChange:
    sequence: int
    computed_at: datetime
    added: tuple[Segment, ...]
    moved: tuple[Segment, ...]
    removed: tuple[str, ...]
    queue: tuple[QueueEntry, ...] | None
    forecast: dict[str, tuple[tuple[datetime, int], ...]] | None
    rows: tuple[Row, ...] | None = None
    """The whole new list of rows when a node joined, left or changed its GPUs."""


ScheduleUpdate = ScheduleSnapshot | ScheduleChange


def cut_change(
    sequence: int, change: TimelineDiff, principal: Principal, start: datetime, end: datetime
) -> ScheduleChange:
    mine = visible_to(principal)

    def shown(seg: Segment) -> Segment:
        return seg if mine(seg) else anonymous(seg)

    added = tuple(shown(s) for s in change.added if s.overlaps(start, end))
    moved = tuple(shown(s) for s in change.moved if s.overlaps(start, end))
    left = tuple(s.id for s in change.moved if not s.overlaps(start, end))
    queue = (
        None
        if change.queue is None
        else tuple(e if mine(e) else anonymous_entry(e) for e in change.queue)
    )
    forecast = None if change.forecast is None else dict(change.forecast)
    return ScheduleChange(
        sequence,
        change.computed_at,
        added,
        moved,
        (*change.removed, *left),
        queue,
        forecast,
        change.rows,
    )


@dataclass(kw_only=True, eq=False)
class ScheduleUpdatesService(ClusterStreams):
    timeline: TimelineService
    buffer: int = 256
    _cuts: dict[tuple[int, ClusterId, str, datetime, datetime], ScheduleChange] = field(
        default_factory=dict, init=False, repr=False
    )

    async def updates(
        self,
        principal: Principal,
        cluster_id: ClusterId,
        start: datetime,
        end: datetime,
        since: int | None = None,
    ) -> AsyncGenerator[ScheduleUpdate, None]:
        """Raises NotFound (before anything is sent) for an unknown cluster.

        The live subscription is open, and the snapshot or the missed changes are read, before
        this returns."""
        return await self._snapshot_then_changes(
            cluster_id,
            since,
            snapshot=lambda reason: self._snapshot(principal, cluster_id, start, end, reason),
            change=lambda event: self._cut(event, principal, start, end),
            check=lambda: self.timeline.view(principal, cluster_id, start, end),  # NotFound
            resumed="resync",
        )

    def _cut(
        self, event: StoredEvent, principal: Principal, start: datetime, end: datetime
    ) -> ScheduleChange | None:
        change = event.cluster_change
        if change is None or change.kind is not ClusterChangeKind.TIMELINE or not change.timeline:
            return None
        key = (event.sequence, event.cluster_id, viewer_key(principal), start, end)
        found = self._cuts.get(key)
        if found is None:
            if len(self._cuts) > 4096:
                self._cuts.clear()
            found = self._cuts[key] = cut_change(
                event.sequence, change.timeline, principal, start, end
            )
        return found

    async def _snapshot(
        self,
        principal: Principal,
        cluster_id: ClusterId,
        start: datetime,
        end: datetime,
        reason: str,
    ) -> ScheduleSnapshot:
        view = await self.timeline.view(principal, cluster_id, start, end)
        return ScheduleSnapshot(view.sequence, view.timeline, reason)
