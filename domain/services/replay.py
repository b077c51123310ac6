"""Reading a cluster's retained events after a sequence: how every stream resumes `since`."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

from domain.model.ids import ClusterId
from domain.ports.events import EventHub, EventLog, LiveSubscription, Overflowed, StoredEvent


class Sequenced(Protocol):
    @property
    def sequence(self) -> int: ...


U = TypeVar("U")
S = TypeVar("S", bound=Sequenced)


async def events_after(
    log: EventLog, cluster_id: ClusterId, since: int, *, limit: int
) -> list[StoredEvent] | None:
    """Exactly the events after `since`, or None when a snapshot must be sent instead: `since`
    is older than the retained history, ahead of it, or more than `limit` events behind."""
    if since < await log.retained_after(cluster_id):
        return None
    current = await log.current_sequence(cluster_id)
    if since > current or current - since > limit:
        return None
    events: list[StoredEvent] = []
    after = since
    while after < current:
        page = await log.read_after(cluster_id, after, limit=1000)
        if not page:
            break
        events.extend(page)
        after = page[-1].sequence
    if events and events[0].sequence != since + 1:
        return None  # pruned while we read
    return events


CATCH_UP_LIMIT = 2_000
"""A subscriber that fell behind by at most this many events is sent the events it missed, read
from the retained history; further behind, a fresh snapshot is cheaper."""


async def live_updates(
    live: LiveSubscription,
    first: Sequence[U],
    last: int,
    *,
    change: Callable[[StoredEvent], U | None],
    resync: Callable[[], Awaitable[S]],
    missed: Callable[[int], Awaitable[list[StoredEvent] | None]] | None = None,
) -> AsyncGenerator[U | S, None]:
    """The rest of a snapshot-then-changes stream: `first` (the snapshot or the replayed
    changes, up to sequence `last`), then each live event after `last` as `change` makes it
    (None: not this stream's). A subscriber that fell behind (its bounded buffer overflowed)
    gets what it missed: the events after `last` from the retained history (`missed(last)`,
    usually `events_after` with CATCH_UP_LIMIT), or, when they are gone or too many, `resync()`
    (a fresh snapshot), and continues from there. Closes `live` when it ends."""
    try:
        for earlier in first:
            yield earlier
        async for item in live:
            events: Sequence[StoredEvent] = [] if isinstance(item, Overflowed) else [item]
            if isinstance(item, Overflowed):
                gap = None if missed is None else await missed(last)
                if gap is None:
                    snapshot = await resync()
                    last = snapshot.sequence
                    yield snapshot
                    continue
                events = gap  # exactly what was dropped, and what came since
            for event in events:
                if event.sequence <= last:
                    continue
                last = event.sequence
                update = change(event)
                if update is not None:
                    yield update
    finally:
        await live.close()


async def _why_no_replay(log: EventLog, cluster_id: ClusterId, since: int) -> str:
    return "unknown-since" if since > await log.current_sequence(cluster_id) else "history-gone"


@dataclass(kw_only=True, eq=False)
class ClusterStreams:
    """What a service of cluster streams opens them from: the live `hub` and the retained `log`,
    how many live events a subscriber may hold (`buffer`) before it is caught up or resynchronised,
    and how many missed events are replayed (`replay_limit`) before a fresh snapshot is sent
    instead. The services extend it with what their snapshots read."""

    hub: EventHub
    log: EventLog
    buffer: int = 64
    replay_limit: int = 10_000

    async def _snapshot_then_changes(
        self,
        cluster_id: ClusterId,
        since: int | None,
        *,
        snapshot: Callable[[str], Awaitable[S]],
        change: Callable[[StoredEvent], U | None],
        check: Callable[[], Awaitable[object]] | None = None,
        opening: Callable[[str], Awaitable[tuple[S, Sequence[StoredEvent]]]] | None = None,
        resumed: str | None = None,
    ) -> AsyncGenerator[U | S, None]:
        """A stream of the cluster's events as the contract has it: the live subscription opened
        first; then the changes after `since` from the retained history, or else a snapshot
        (`snapshot(reason)`: subscribed, or for a `since` that cannot be replayed `resumed`, by
        default unknown-since or history-gone); then `live_updates`, resynchronised with
        `snapshot("resync")`. `opening(reason)`, where given, takes the first snapshot instead,
        with the events that followed it (one shared with other subscribers). `check` runs before
        a replay (a snapshot checks by itself), e.g. raising NotFound. Whatever is raised here is
        raised before anything is sent."""
        live = await self.hub.subscribe(cluster_id, buffer=self.buffer)
        try:
            first: list[U | S] = []
            replay = (
                None
                if since is None
                else await events_after(self.log, cluster_id, since, limit=self.replay_limit)
            )
            following: Sequence[StoredEvent]
            if replay is None:
                reason = "subscribed"
                if since is not None:
                    reason = resumed or await _why_no_replay(self.log, cluster_id, since)
                taken, following = (
                    await opening(reason) if opening else (await snapshot(reason), [])
                )
                last = taken.sequence
                first.append(taken)
            else:
                assert since is not None
                if check is not None:
                    await check()
                last, following = since, replay
            for event in following:
                last = event.sequence
                update = change(event)
                if update is not None:
                    first.append(update)
        except BaseException:
            await live.close()
            raise
        return live_updates(
            live,
            first,
            last,
            change=change,
            resync=lambda: snapshot("resync"),
            missed=lambda after: events_after(
                self.log, cluster_id, after, limit=min(self.replay_limit, CATCH_UP_LIMIT)
            ),
        )
