"""Reading a cluster's retained events after a sequence: how every stream resumes `since`."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from typing import Protocol, TypeVar

from domain.model.ids import ClusterId
from domain.ports import EventLog, LiveSubscription, Overflowed, StoredEvent


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


async def live_updates(
    live: LiveSubscription,
    first: Sequence[U],
    last: int,
    *,
    change: Callable[[StoredEvent], U | None],
    resync: Callable[[], Awaitable[S]],
) -> AsyncGenerator[U | S, None]:
    """The rest of a snapshot-then-changes stream: `first` (the snapshot or the replayed
    changes, up to sequence `last`), then each live event after `last` as `change` makes it
    (None: not this stream's); a subscriber that fell behind gets `resync()` (a fresh
    snapshot) and continues from its sequence. Closes `live` when it ends."""
    try:
        for earlier in first:
            yield earlier
        async for item in live:
            if isinstance(item, Overflowed):
                snapshot = await resync()
                last = snapshot.sequence
                yield snapshot
                continue
            if item.sequence <= last:
                continue
            last = item.sequence
            update = change(item)
            if update is not None:
                yield update
    finally:
        await live.close()
