"""Events across processes through Redis, on a real PostgreSQL outbox.

Two hubs stand for two API processes, each with its own Redis connection and relay. Covers: a
commit published by one reaches a subscriber of the other in order; a message lost on the way is
recovered from the outbox at the next event (gap fill) or by the periodic catch-up; a relay whose
Redis connection is killed reconnects, re-subscribes and catches up.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest
from redis.asyncio import Redis

from adapters.db.engine import Database
from adapters.db.eventlog import SqlEventLog
from adapters.events.hub import EventHubImpl
from adapters.events.redis import RedisPublisher, RedisRelay
from domain.model.ids import ClusterId
from domain.ports.events import LiveSubscription, Overflowed, StoredEvent
from tests.integration.conftest import redis_url
from tests.integration.test_repositories import add_cluster, job_on, save


class Process:
    def __init__(self, db: Database, channel: str) -> None:
        self.redis = Redis.from_url(redis_url())
        self.hub = EventHubImpl(SqlEventLog(db))
        self.publisher = RedisPublisher(self.redis, self.hub, channel=channel)
        self.relay = RedisRelay(self.redis, self.hub, channel=channel)
        self.task = asyncio.create_task(self.relay.run())

    async def close(self) -> None:
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.task
        await self.redis.aclose()


@pytest.fixture
async def processes(pg: Database, prefix: str) -> AsyncIterator[tuple[Process, Process]]:
    a, b = Process(pg, f"{prefix}:events"), Process(pg, f"{prefix}:events")
    await asyncio.wait_for(asyncio.gather(a.relay.connected.wait(), b.relay.connected.wait()), 5)
    yield a, b
    await a.close()
    await b.close()


async def commit(db: Database, cluster: ClusterId, n: int = 1) -> list[StoredEvent]:
    return await save(db, *(job_on(cluster) for _ in range(n)))


async def take(sub: LiveSubscription, n: int) -> list[int]:
    iterator = aiter(sub)
    return [sequence_of(await asyncio.wait_for(anext(iterator), 5)) for _ in range(n)]


def sequence_of(item: StoredEvent | Overflowed) -> int:
    assert isinstance(item, StoredEvent)
    return item.sequence


async def test_a_commit_in_one_process_reaches_the_other(
    pg: Database, processes: tuple[Process, Process]
) -> None:
    a, b = processes
    cluster = await add_cluster(pg)
    sub = await b.hub.subscribe(cluster, buffer=100)
    for _ in range(3):
        await a.publisher.publish(await commit(pg, cluster, 2))
    assert await take(sub, 6) == [1, 2, 3, 4, 5, 6]
    await sub.close()


async def test_a_lost_message_is_recovered_from_the_outbox(
    pg: Database, processes: tuple[Process, Process]
) -> None:
    a, b = processes
    cluster = await add_cluster(pg)
    sub = await b.hub.subscribe(cluster, buffer=100)
    await commit(pg, cluster, 2)  # committed, but the process died before publishing
    await a.publisher.publish(await commit(pg, cluster))
    assert await take(sub, 3) == [1, 2, 3]
    await sub.close()


async def test_catch_up_finds_events_no_one_announced(
    pg: Database, processes: tuple[Process, Process]
) -> None:
    _, b = processes
    cluster = await add_cluster(pg)
    sub = await b.hub.subscribe(cluster, buffer=100)
    await commit(pg, cluster, 2)
    await b.hub.catch_up()
    assert await take(sub, 2) == [1, 2]
    await sub.close()


async def test_relay_reconnects_after_losing_redis(
    pg: Database, processes: tuple[Process, Process], redis: Redis
) -> None:
    a, b = processes
    cluster = await add_cluster(pg)
    sub = await b.hub.subscribe(cluster, buffer=100)
    for client in await redis.client_list(_type="pubsub"):
        await redis.client_kill_filter(_id=client["id"])
    await asyncio.sleep(0.05)
    await commit(pg, cluster)  # published while b's relay was down: lost for b
    await asyncio.wait_for(b.relay.connected.wait(), 10)
    await asyncio.wait_for(a.relay.connected.wait(), 10)
    await a.publisher.publish(await commit(pg, cluster))
    assert await take(sub, 2) == [1, 2]
    await sub.close()


async def test_slow_subscriber_is_told_it_overflowed(
    pg: Database, processes: tuple[Process, Process]
) -> None:
    a, b = processes
    cluster = await add_cluster(pg)
    sub = await b.hub.subscribe(cluster, buffer=2)
    fast = await b.hub.subscribe(cluster, buffer=100)
    await a.publisher.publish(await commit(pg, cluster, 5))
    assert await take(fast, 5) == [1, 2, 3, 4, 5]
    first = await asyncio.wait_for(anext(aiter(sub)), 5)
    assert type(first).__name__ == "Overflowed"
    await sub.close()
    await fast.close()
