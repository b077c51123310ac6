"""Leases: which process watches which cluster, in memory for one process (the embedded default;
processes sharing a PostgreSQL hold theirs in it: `adapters.db.leases`)."""

from __future__ import annotations

import time


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
