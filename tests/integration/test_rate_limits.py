"""Token buckets, in this process and in Redis, by the same rules.

Covers: a bucket starts full, gives what it holds, then says how long until it could give more
(and takes nothing meanwhile); it refills at its rate on the clock, never beyond its capacity;
more than a bucket can ever hold is refused for good; keys are independent; two limiters on
one Redis (two API processes) draw from the same bucket, which expires once it would be full; and
without Redis, requests go through (a rate limit must not take the service down with it).
"""

from __future__ import annotations

import math
import socket

import pytest
from redis.asyncio import Redis

from adapters.clock import ManualClock
from adapters.limits.buckets import LocalRateLimiter, RedisRateLimiter
from domain.ports import RateLimiter


@pytest.fixture(params=["local", "redis"])
def limiters(
    request: pytest.FixtureRequest, redis: Redis, prefix: str
) -> tuple[ManualClock, RateLimiter, RateLimiter]:
    clock = ManualClock()
    if request.param == "local":
        one = LocalRateLimiter(clock, capacity=100, per_second=10)
        return clock, one, one
    return (
        clock,
        RedisRateLimiter(redis, clock, prefix=prefix, capacity=100, per_second=10),
        RedisRateLimiter(redis, clock, prefix=prefix, capacity=100, per_second=10),
    )


async def test_a_bucket_gives_what_it_holds_then_waits_for_its_rate(
    limiters: tuple[ManualClock, RateLimiter, RateLimiter],
) -> None:
    clock, first, second = limiters
    assert await first.take("token:a", 60) == 0
    assert await second.take("token:a", 40) == 0  # the same bucket, from another process
    assert await first.take("token:a", 25) == pytest.approx(2.5)
    assert await second.take("token:a", 25) == pytest.approx(2.5)  # nothing was taken
    assert await first.take("token:b", 100) == 0  # another key, another bucket
    await clock.advance(2.5)
    assert await second.take("token:a", 25) == 0
    await clock.advance(3600)
    assert await first.take("token:a", 100) == 0  # refilled, but never beyond its capacity
    assert await first.take("token:a", 1) == pytest.approx(0.1)
    assert math.isinf(await first.take("token:c", 101))


async def test_redis_buckets_expire_once_they_would_be_full(redis: Redis, prefix: str) -> None:
    limiter = RedisRateLimiter(redis, ManualClock(), prefix=prefix, capacity=100, per_second=10)
    await limiter.take("token:x", 5)
    ttl = await redis.ttl(f"{prefix}:rate:token:x")
    assert 0 < ttl <= 11
    await redis.delete(f"{prefix}:rate:token:x")


async def test_without_redis_requests_go_through(caplog: pytest.LogCaptureFixture) -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
        gone = Redis.from_url(f"redis://127.0.0.1:{port}/0", socket_connect_timeout=1)
        limiter = RedisRateLimiter(gone, ManualClock(), prefix="x", capacity=1, per_second=1)
        try:
            assert [await limiter.take("token:a", 1) for _ in range(3)] == [0.0, 0.0, 0.0]
        finally:
            await gone.aclose()
    warnings = [r for r in caplog.records if "not enforced" in r.getMessage()]
    assert len(warnings) == 1
