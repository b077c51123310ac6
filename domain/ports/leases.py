"""Time-limited claims: one process at a time runs a cluster's loop."""

from __future__ import annotations

from typing import Protocol


class Lease(Protocol):
    """A time-limited, renewable claim that only one process watches a given cluster."""

    async def acquire(self, name: str, *, ttl_seconds: float) -> bool: ...

    async def renew(self, name: str, *, ttl_seconds: float) -> bool: ...

    async def release(self, name: str) -> None: ...
