"""Token buckets, in this process and in Redis, by the same rules.

Covers: a bucket starts full, gives what it holds, then says how long until it could give more
(and takes nothing meanwhile); it refills at its rate on the clock, never beyond its capacity;
more than a bucket can ever hold is refused for good; keys are independent; two limiters on
one Redis (two API processes) draw from the same bucket, which expires once it would be full; and
without Redis, requests go through (a rate limit must not take the service down with it). An
operation pays its token's bucket and its tenant's together or neither (one that refuses leaves
the other untouched), each bucket by its own capacity and rate; by default one client meets its
token's limit before its tenant's, and settings that would reverse that are refused.
"""

from __future__ import annotations

import math
import socket

import pytest
from redis.asyncio import Redis

from adapters.clock import ManualClock
from adapters.limits.buckets import LocalRateLimiter, RedisRateLimiter
from budcluster.settings import Settings
from domain.ports.limits import Bucket, RateLimiter


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


async def test_an_operation_pays_its_token_and_its_tenant_or_neither(
    limiters: tuple[ManualClock, RateLimiter, RateLimiter],
) -> None:
    clock, first, second = limiters
    tenant = Bucket("tenant:t", capacity=150, per_second=10)
    a, b = Bucket("token:a", 100, 10), Bucket("token:b", 100, 10)
    assert await first.take_each([a, tenant], 80) == 0  # a: 20 left, the tenant 70
    assert await second.take_each([b, tenant], 90) == pytest.approx(2.0)  # the tenant: 20 short
    assert await first.take_each([b], 100) == 0  # refused above: b was not spent
    assert await second.take_each([a, tenant], 20) == 0  # nor was the tenant: 50 left
    assert await first.take_each([Bucket("token:c", 100, 10), tenant], 60) == pytest.approx(1.0)
    assert await second.take_each([a, tenant], 1) == pytest.approx(0.1)  # a is empty
    await clock.advance(2)  # a: 20, the tenant: 70
    assert await first.take_each([Bucket("token:d", 100, 10), tenant], 70) == 0
    assert math.isinf(await first.take_each([Bucket("token:e", 100, 10), tenant], 151))


def test_one_client_meets_its_tokens_limit_before_its_tenants(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings = Settings()
    assert settings.tenant_rate_burst >= settings.rate_burst
    assert settings.tenant_rate_points_per_minute >= settings.rate_points_per_minute
    monkeypatch.setenv("BUDCLUSTER_TENANT_RATE_BURST", "1000")
    with pytest.raises(ValueError, match="TENANT_RATE"):
        Settings.from_env()
