"""Events across API processes through Redis pub/sub.

Why Redis rather than PostgreSQL NOTIFY: production already runs Redis for arq, so this adds no
moving part; NOTIFY payloads are capped at 8000 bytes, so a job document would not always fit and
every notification would cost a database read in every process; NOTIFY needs a dedicated
connection outside SQLAlchemy's pool; and the embedded SQLite default has no NOTIFY at all.
Pub/sub is fire-and-forget, which is acceptable because it is not the source of truth: the outbox
is. A process that misses a message sees the gap at the next event and reads it from the outbox,
and the hub's periodic catch-up covers a quiet cluster. After a broker outage the relay
reconnects, re-subscribes and catches up from the last delivered sequence of every topic.

Each commit is published as one message holding its events; the publishing process also hands
them straight to its own hub, so its subscribers do not wait for the round trip.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from redis.asyncio import Redis
from redis.exceptions import RedisError

from adapters.events.hub import EventHubImpl
from adapters.shapes.documents import change_from_document, change_to_document
from domain.backoff import backoff_seconds
from domain.model.ids import ClusterId
from domain.ports.clock import Clock
from domain.ports.events import StoredEvent

log = logging.getLogger(__name__)


def encode(events: Sequence[StoredEvent]) -> str:
    return json.dumps(
        [
            {
                "cluster_id": str(e.cluster_id),
                "sequence": e.sequence,
                "occurred_at": e.occurred_at.isoformat(),
                "change": change_to_document(e.change),
            }
            for e in events
        ],
        separators=(",", ":"),
    )


def decode(message: str | bytes) -> list[StoredEvent]:
    items: list[dict[str, Any]] = json.loads(message)
    return [
        StoredEvent(
            ClusterId(uuid.UUID(item["cluster_id"])),
            int(item["sequence"]),
            change_from_document(item["change"]),
            datetime.fromisoformat(item["occurred_at"]),
        )
        for item in items
    ]


class RedisPublisher:
    def __init__(self, redis: Redis, hub: EventHubImpl, *, channel: str) -> None:
        self._redis = redis
        self._hub = hub
        self._channel = channel

    async def publish(self, events: Sequence[StoredEvent]) -> None:
        try:
            await self._hub.deliver(events)
        except Exception:
            log.exception("local event delivery failed; the hub will catch up from the log")
        try:
            await self._redis.publish(self._channel, encode(events))
        except (RedisError, OSError) as exc:
            log.warning(
                "publishing %d events to Redis failed (%s); other processes will "
                "catch up from the outbox",
                len(events),
                exc,
            )


class RedisRelay:
    """Feeds this process's hub from the Redis channel, reconnecting forever."""

    def __init__(
        self, redis: Redis, hub: EventHubImpl, *, channel: str, clock: Clock | None = None
    ) -> None:
        self._redis = redis
        self._hub = hub
        self._channel = channel
        self._sleep = clock.sleep if clock is not None else asyncio.sleep
        self.connected = asyncio.Event()

    async def run(self) -> None:
        failures = 0
        while True:
            try:
                async with self._redis.pubsub(ignore_subscribe_messages=True) as pubsub:
                    await pubsub.subscribe(self._channel)
                    self.connected.set()
                    failures = 0
                    await self._hub.catch_up()
                    while True:
                        message = await pubsub.get_message(timeout=5.0)
                        if message is None or message.get("type") != "message":
                            continue
                        try:
                            events = decode(message["data"])
                        except (ValueError, KeyError, TypeError):
                            log.warning("ignoring a malformed event message")
                            continue
                        await self._hub.deliver(events)
            except asyncio.CancelledError:
                raise
            except (RedisError, OSError) as exc:
                self.connected.clear()
                failures += 1
                delay = backoff_seconds(failures, base=0.5, cap=10.0)
                log.warning("event relay lost Redis (%s); reconnecting in %.1fs", exc, delay)
                await self._sleep(delay)
