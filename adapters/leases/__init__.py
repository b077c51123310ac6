"""Leases: which process watches which cluster. In memory for one process, Redis for several."""

from __future__ import annotations

import os
import socket
import time
import uuid

from redis.asyncio import Redis


class LocalLease:
    """For one process (the embedded default): every claim succeeds for its single holder."""

    def __init__(self) -> None:
        self._held: dict[str, float] = {}

    async def acquire(self, name: str, *, ttl_seconds: float) -> bool:
        expiry = self._held.get(name)
        if expiry is not None and expiry > time.monotonic():
            return False
        self._held[name] = time.monotonic() + ttl_seconds
        return True

    async def renew(self, name: str, *, ttl_seconds: float) -> bool:
        self._held[name] = time.monotonic() + ttl_seconds
        return True

    async def release(self, name: str) -> None:
        self._held.pop(name, None)


_RENEW = """
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('pexpire', KEYS[1], ARGV[2])
end
return 0
"""
_RELEASE = """
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('del', KEYS[1])
end
return 0
"""


class RedisLease:
    """SET NX PX with a per-process token; renew and release only what this process holds.

    The token names its holder (`<host>:<pid>:<random>`), so an operator (or the fault suite)
    can tell from `GET <prefix>:lease:<name>` which process holds a lease."""

    def __init__(self, redis: Redis, *, prefix: str) -> None:
        self._redis = redis
        self._prefix = prefix
        self._token = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex}"

    def _key(self, name: str) -> str:
        return f"{self._prefix}:lease:{name}"

    async def acquire(self, name: str, *, ttl_seconds: float) -> bool:
        return bool(
            await self._redis.set(self._key(name), self._token, nx=True, px=int(ttl_seconds * 1000))
        )

    async def renew(self, name: str, *, ttl_seconds: float) -> bool:
        result = await self._redis.eval(  # type: ignore[misc]
            _RENEW, 1, self._key(name), self._token, str(int(ttl_seconds * 1000))
        )
        return bool(result)

    async def release(self, name: str) -> None:
        await self._redis.eval(_RELEASE, 1, self._key(name), self._token)  # type: ignore[misc]
