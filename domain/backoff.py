"""Exponential backoff with jitter, capped, for retrying jobs and reaching clusters.

Equal jitter: half of the exponential delay is fixed, half is random, so retries of many jobs that
failed together spread out while each still waits at least half its step.
"""

from __future__ import annotations

import random
from collections.abc import Callable

BASE_SECONDS = 5.0
CAP_SECONDS = 300.0


def backoff_seconds(
    attempt: int,
    *,
    base: float = BASE_SECONDS,
    cap: float = CAP_SECONDS,
    uniform: Callable[[float, float], float] = random.uniform,
) -> float:
    """Delay before retry number `attempt` (1 for the first retry)."""
    step = min(cap, base * 2.0 ** max(0, attempt - 1))
    return step / 2 + uniform(0.0, step / 2)
