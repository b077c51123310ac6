"""Token buckets: each key holds up to `capacity` points and gains `per_second` points a second;
taking more than a bucket holds takes nothing and says how long until it could.

`LocalRateLimiter` keeps the buckets in this process (the embedded run has one). `RedisRateLimiter`
keeps each in a Redis hash and takes from it in one Lua script, atomic across every API process
sharing the Redis, so a client spreading its requests over processes gets no more. Time comes from
the Clock port (processes' clocks agree to well under a bucket's refill), and a bucket nobody has
touched for as long as it takes to fill again expires. Buckets are kept at most MAX_KEYS in this
process; the least recently used full ones go first.

When Redis does not answer, the Redis limiter lets requests through (and says so in the log, at
most once a minute): a rate limit protects the service, and must not take it down with Redis.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict

from redis.asyncio import Redis
from redis.exceptions import RedisError

from domain.ports import Clock

log = logging.getLogger(__name__)

MAX_KEYS = 100_000


class LocalRateLimiter:
    def __init__(self, clock: Clock, *, capacity: float, per_second: float) -> None:
        if capacity <= 0 or per_second <= 0:
            raise ValueError("a bucket needs a positive capacity and refill rate")
        self._clock = clock
        self.capacity = capacity
        self.per_second = per_second
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()

    async def take(self, key: str, amount: float) -> float:
        now = self._clock.now().timestamp()
        tokens, at = self._buckets.pop(key, (self.capacity, now))
        tokens = min(self.capacity, tokens + max(0.0, now - at) * self.per_second)
        wait = 0.0
        if amount > self.capacity:
            wait = float("inf")
        elif tokens >= amount:
            tokens -= amount
        else:
            wait = (amount - tokens) / self.per_second
        self._buckets[key] = (tokens, now)
        while len(self._buckets) > MAX_KEYS:
            self._buckets.popitem(last=False)
        return wait


_TAKE = """
local capacity = tonumber(ARGV[1])
local per_second = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
local amount = tonumber(ARGV[4])
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(state[1]) or capacity
local at = tonumber(state[2]) or now
tokens = math.min(capacity, tokens + math.max(0, now - at) * per_second)
local wait = 0
if amount > capacity then
  wait = -1
elseif tokens >= amount then
  tokens = tokens - amount
else
  wait = (amount - tokens) / per_second
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
redis.call('EXPIRE', KEYS[1], math.ceil(capacity / per_second) + 1)
return tostring(wait)
"""


class RedisRateLimiter:
    def __init__(
        self, redis: Redis, clock: Clock, *, prefix: str, capacity: float, per_second: float
    ) -> None:
        if capacity <= 0 or per_second <= 0:
            raise ValueError("a bucket needs a positive capacity and refill rate")
        self._redis = redis
        self._clock = clock
        self._prefix = prefix
        self.capacity = capacity
        self.per_second = per_second
        self._script = redis.register_script(_TAKE)
        self._warned_at = float("-inf")

    async def take(self, key: str, amount: float) -> float:
        try:
            answer = await self._script(
                keys=[f"{self._prefix}:rate:{key}"],
                args=[self.capacity, self.per_second, self._clock.now().timestamp(), amount],
            )
        except (RedisError, OSError) as exc:
            if time.monotonic() - self._warned_at > 60:
                self._warned_at = time.monotonic()
                log.warning("rate limits are not enforced: Redis does not answer (%s)", exc)
            return 0.0
        wait = float(answer.decode() if isinstance(answer, bytes) else answer)
        return float("inf") if wait < 0 else wait
