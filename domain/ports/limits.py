"""Rate limits as token buckets, shared by every process that uses the same store."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class Bucket:
    """A token bucket: holds up to `capacity` points and gains `per_second` a second."""

    key: str
    capacity: float
    per_second: float


class RateLimiter(Protocol):
    """Token buckets by key, shared by every process that uses the same store."""

    async def take(self, key: str, amount: float) -> float:
        """Take `amount` from `key`'s bucket (of the limiter's own capacity and rate): 0.0 if
        taken, else the seconds until it could be (and nothing is taken)."""
        ...

    async def take_each(self, buckets: Sequence[Bucket], amount: float) -> float:
        """Take `amount` from every one of `buckets`, or from none: 0.0 if taken, else the
        seconds until all could give it (infinite when one never can)."""
        ...
