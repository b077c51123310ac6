"""Token buckets: each key holds up to its capacity in points and gains its rate a second; an
operation takes its points from one bucket or several at once (its token's and its tenant's),
from all of them or from none, and when one cannot give them the answer is how long until all
could.

`LocalRateLimiter` keeps the buckets in this process (the embedded run has one). `RedisRateLimiter`
keeps each in a Redis hash and takes from all of an operation's buckets in one Lua script, atomic
across every API process sharing the Redis: a client spreading its requests over processes gets
no more, and a bucket that refuses leaves the others untouched. Time comes from the Clock port
(processes' clocks agree to well under a bucket's refill), and a bucket nobody has touched for as
long as it takes to fill again expires. Buckets are kept at most MAX_KEYS in this process; the
least recently used go first.

When Redis does not answer, the Redis limiter lets requests through (and says so in the log, at
most once a minute): a rate limit protects the service, and must not take it down with Redis.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Sequence

from redis.asyncio import Redis
from redis.exceptions import RedisError

from domain.ports.clock import Clock
from domain.ports.limits import Bucket

log = logging.getLogger(__name__)

MAX_KEYS = 100_000


def _checked(capacity: float, per_second: float) -> None:
    if capacity <= 0 or per_second <= 0:
        raise ValueError("a bucket needs a positive capacity and refill rate")


class LocalRateLimiter:
    def __init__(self, clock: Clock, *, capacity: float, per_second: float) -> None:
        _checked(capacity, per_second)
        self._clock = clock
        self.capacity = capacity
        self.per_second = per_second
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()

    async def take(self, key: str, amount: float) -> float:
        return await self.take_each([Bucket(key, self.capacity, self.per_second)], amount)

    async def take_each(self, buckets: Sequence[Bucket], amount: float) -> float:
        now = self._clock.now().timestamp()
        held: list[float] = []
        wait = 0.0
        for bucket in buckets:
            _checked(bucket.capacity, bucket.per_second)
            tokens, at = self._buckets.get(bucket.key, (bucket.capacity, now))
            tokens = min(bucket.capacity, tokens + max(0.0, now - at) * bucket.per_second)
            held.append(tokens)
            if amount > bucket.capacity:
                wait = float("inf")
            elif tokens < amount:
                wait = max(wait, (amount - tokens) / bucket.per_second)
        if wait == 0:
            for bucket, tokens in zip(buckets, held, strict=True):
                self._buckets.pop(bucket.key, None)
                self._buckets[bucket.key] = (tokens - amount, now)
            while len(self._buckets) > MAX_KEYS:
                self._buckets.popitem(last=False)
        return wait


_TAKE = """
local now = tonumber(ARGV[1])
local amount = tonumber(ARGV[2])
local held = {}
local wait = 0
local never = false
for i = 1, #KEYS do
  local capacity = tonumber(ARGV[1 + 2 * i])
  local per_second = tonumber(ARGV[2 + 2 * i])
  local state = redis.call('HMGET', KEYS[i], 'tokens', 'at')
  local tokens = tonumber(state[1]) or capacity
  local at = tonumber(state[2]) or now
  tokens = math.min(capacity, tokens + math.max(0, now - at) * per_second)
  held[i] = tokens
  if amount > capacity then
    never = true
  elseif tokens < amount then
    wait = math.max(wait, (amount - tokens) / per_second)
  end
end
if never then
  return '-1'
end
if wait == 0 then
  for i = 1, #KEYS do
    local capacity = tonumber(ARGV[1 + 2 * i])
    local per_second = tonumber(ARGV[2 + 2 * i])
    redis.call('HSET', KEYS[i], 'tokens', tostring(held[i] - amount), 'at', tostring(now))
    redis.call('EXPIRE', KEYS[i], math.ceil(capacity / per_second) + 1)
  end
end
return tostring(wait)
"""


class RedisRateLimiter:
    def __init__(
        self, redis: Redis, clock: Clock, *, prefix: str, capacity: float, per_second: float
    ) -> None:
        _checked(capacity, per_second)
        self._redis = redis
        self._clock = clock
        self._prefix = prefix
        self.capacity = capacity
        self.per_second = per_second
        self._script = redis.register_script(_TAKE)
        self._warned_at = float("-inf")

    async def take(self, key: str, amount: float) -> float:
        return await self.take_each([Bucket(key, self.capacity, self.per_second)], amount)

    async def take_each(self, buckets: Sequence[Bucket], amount: float) -> float:
        rates: list[float] = []
        for bucket in buckets:
            _checked(bucket.capacity, bucket.per_second)
            rates += [bucket.capacity, bucket.per_second]
        try:
            answer = await self._script(
                keys=[f"{self._prefix}:rate:{bucket.key}" for bucket in buckets],
                args=[self._clock.now().timestamp(), amount, *rates],
            )
        except (RedisError, OSError) as exc:
            if time.monotonic() - self._warned_at > 60:
                self._warned_at = time.monotonic()
                log.warning("rate limits are not enforced: Redis does not answer (%s)", exc)
            return 0.0
        wait = float(answer.decode() if isinstance(answer, bytes) else answer)
        return float("inf") if wait < 0 else wait
