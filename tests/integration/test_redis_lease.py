"""The Redis lease on a real Redis: one holder at a time, renew and release only by the holder,
and the stored value names the holding process (host and pid), so an operator can see who holds
a cluster's watch."""

from __future__ import annotations

import os
import socket

from redis.asyncio import Redis

from adapters.leases import RedisLease


async def test_one_holder_named_by_host_and_pid(redis: Redis, prefix: str) -> None:
    first, second = RedisLease(redis, prefix=prefix), RedisLease(redis, prefix=prefix)
    assert await first.acquire("watch:c1", ttl_seconds=5)
    assert not await second.acquire("watch:c1", ttl_seconds=5)
    assert not await second.renew("watch:c1", ttl_seconds=5)
    await second.release("watch:c1")  # not the holder: nothing happens

    value = (await redis.get(f"{prefix}:lease:watch:c1")).decode()
    host, pid, _ = value.split(":")
    assert (host, int(pid)) == (socket.gethostname(), os.getpid())

    assert await first.renew("watch:c1", ttl_seconds=5)
    await first.release("watch:c1")
    assert await second.acquire("watch:c1", ttl_seconds=5)
    assert (await redis.get(f"{prefix}:lease:watch:c1")).decode() != value
    await second.release("watch:c1")
