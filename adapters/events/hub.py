"""The per-process fan-out of cluster events to live subscriptions.

Each cluster with subscribers is a topic that remembers the last sequence it delivered. Events may
reach the hub late, twice or out of order (from this process's commits and from Redis); the topic
delivers each sequence once, in order, and when it sees a gap it reads the missing events from the
event log (the outbox), so a lost message costs a query, never an event. A periodic catch-up does
the same for a topic that hears nothing (a publish lost after its commit, a broker outage).

Each event is decoded once and the same object is handed to every subscriber. A subscriber's
buffer is bounded: when it overflows, its backlog is dropped and it is told so (`Overflowed`) and
resynchronises from a snapshot, so one slow client never holds unbounded memory. An event is
queued for every subscriber at once, but they are woken WAKE_BATCH at a time, the next batch
after what the loop already had to do: a thousand subscribers woken together (a tenant at its
subscription cap) held every other request behind their sends for a tenth of a second.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Iterable, Sequence

from domain.errors import Unavailable
from domain.model.ids import ClusterId
from domain.ports.events import EventLog, Overflowed, StoredEvent

log = logging.getLogger(__name__)
_OVERFLOWED = Overflowed()
WAKE_BATCH = 16
"""Subscribers woken together by one event (each then runs its send: 0.1 to 0.5 ms)."""


class HubSubscription:
    def __init__(self, topic: _Topic, buffer: int) -> None:
        self._topic = topic
        self._buffer = buffer
        self._queue: collections.deque[StoredEvent] = collections.deque()
        self._ready = asyncio.Event()
        self._overflowed = False
        self._closed = False

    def push(self, event: StoredEvent, *, wake: bool = True) -> None:
        if len(self._queue) >= self._buffer:
            if not self._overflowed:
                self._topic.hub.on_overflow()
            self._queue.clear()
            self._overflowed = True
        else:
            self._queue.append(event)
        if wake:
            self._ready.set()

    def wake(self) -> None:
        self._ready.set()

    def push_overflow(self) -> None:
        if not self._overflowed:
            self._topic.hub.on_overflow()
        self._queue.clear()
        self._overflowed = True
        self._ready.set()

    def __aiter__(self) -> AsyncIterator[StoredEvent | Overflowed]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[StoredEvent | Overflowed]:
        while not self._closed:
            if self._overflowed:
                self._overflowed = False
                yield _OVERFLOWED
            elif self._queue:
                yield self._queue.popleft()
            else:
                self._ready.clear()
                await self._ready.wait()

    async def close(self) -> None:
        self._closed = True
        self._ready.set()
        self._topic.remove(self)


class _Topic:
    def __init__(self, hub: EventHubImpl, cluster_id: ClusterId, last: int) -> None:
        self.hub = hub
        self.cluster_id = cluster_id
        self.last = last
        self.subscribers: set[HubSubscription] = set()
        self.lock = asyncio.Lock()

    def remove(self, sub: HubSubscription) -> None:
        self.subscribers.discard(sub)
        if not self.subscribers:
            self.hub.drop(self)

    def fan_out(self, event: StoredEvent) -> None:
        self.last = event.sequence
        if len(self.subscribers) <= WAKE_BATCH:
            for sub in self.subscribers:
                sub.push(event)
            return
        woken = list(self.subscribers)
        for sub in woken:
            sub.push(event, wake=False)
        _wake(woken, 0)

    async def accept(self, events: list[StoredEvent]) -> None:
        async with self.lock:
            for event in sorted(events, key=lambda e: e.sequence):
                if event.sequence <= self.last:
                    continue
                if event.sequence > self.last + 1:
                    await self._fill(event.sequence - 1)
                if event.sequence == self.last + 1:
                    self.fan_out(event)

    async def _fill(self, through: int | None) -> None:
        """Deliver what the log holds after `last` (up to `through`)."""
        while through is None or self.last < through:
            wanted = 500 if through is None else min(500, through - self.last)
            page = await self.hub.log.read_after(self.cluster_id, self.last, limit=wanted)
            if not page:
                return
            if page[0].sequence != self.last + 1:
                log.warning(
                    "cluster %s events %d..%d were pruned before delivery",
                    self.cluster_id,
                    self.last + 1,
                    page[0].sequence - 1,
                )
                self.last = page[0].sequence - 1
                for sub in self.subscribers:
                    sub.push_overflow()
            for event in page:
                self.fan_out(event)

    async def catch_up(self) -> None:
        async with self.lock:
            await self._fill(None)


def _wake(subscribers: list[HubSubscription], start: int) -> None:
    """Wake a batch, and the next one once the loop has run what is ready by then."""
    end = start + WAKE_BATCH
    for sub in subscribers[start:end]:
        sub.wake()
    if end < len(subscribers):
        asyncio.get_running_loop().call_soon(_wake, subscribers, end)


class EventHubImpl:
    def __init__(self, event_log: EventLog) -> None:
        self.log = event_log
        self.on_overflow: Callable[[], None] = lambda: None
        """Called when a subscriber falls behind its buffer (the wiring counts it)."""
        self._topics: dict[ClusterId, _Topic] = {}
        self._creating: dict[ClusterId, asyncio.Lock] = collections.defaultdict(asyncio.Lock)

    async def subscribe(self, cluster_id: ClusterId, *, buffer: int) -> HubSubscription:
        async with self._creating[cluster_id]:
            topic = self._topics.get(cluster_id)
            if topic is None:
                last = await self.log.current_sequence(cluster_id)
                topic = self._topics[cluster_id] = _Topic(self, cluster_id, last)
        sub = HubSubscription(topic, buffer)
        topic.subscribers.add(sub)
        return sub

    def drop(self, topic: _Topic) -> None:
        if self._topics.get(topic.cluster_id) is topic:
            del self._topics[topic.cluster_id]

    async def deliver(self, events: Iterable[StoredEvent]) -> None:
        by_cluster: dict[ClusterId, list[StoredEvent]] = collections.defaultdict(list)
        for event in events:
            by_cluster[event.cluster_id].append(event)
        for cluster_id, batch in by_cluster.items():
            topic = self._topics.get(cluster_id)
            if topic is not None:
                await topic.accept(batch)

    async def catch_up(self) -> None:
        for topic in list(self._topics.values()):
            try:
                await topic.catch_up()
            except (Unavailable, OSError) as exc:  # an outage: said once a round, no traceback
                log.warning(
                    "catching up on cluster %s: %s; next round tries again", topic.cluster_id, exc
                )
            except Exception:
                log.exception("catching up on cluster %s failed", topic.cluster_id)

    async def run_catch_up(self, every_seconds: float) -> None:
        """The safety net: poll the log for each watched cluster, until cancelled."""
        while True:
            await asyncio.sleep(every_seconds)
            with contextlib.suppress(Exception):
                await self.catch_up()

    @property
    def subscriber_count(self) -> int:
        return sum(len(t.subscribers) for t in self._topics.values())


class InProcessPublisher:
    """Publishing when every subscriber lives in this process: hand events to the hub."""

    def __init__(self, hub: EventHubImpl) -> None:
        self._hub = hub

    async def publish(self, events: Sequence[StoredEvent]) -> None:
        try:
            await self._hub.deliver(events)
        except Exception:
            log.exception("local event delivery failed; subscribers will catch up from the log")
