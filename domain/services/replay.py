"""Reading a cluster's retained events after a sequence: how every stream resumes `since`."""

from __future__ import annotations

from domain.model.ids import ClusterId
from domain.ports import EventLog, StoredEvent


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
