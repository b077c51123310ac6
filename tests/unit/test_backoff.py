"""Backoff: exponential, jittered, never above the cap (5 minutes)."""

from __future__ import annotations

import pytest

from domain.backoff import CAP_SECONDS, backoff_seconds


def test_grows_exponentially_with_half_fixed() -> None:
    lowest = [backoff_seconds(n, uniform=lambda a, b: a) for n in range(1, 5)]
    highest = [backoff_seconds(n, uniform=lambda a, b: b) for n in range(1, 5)]
    assert lowest == [2.5, 5.0, 10.0, 20.0]
    assert highest == [5.0, 10.0, 20.0, 40.0]


@pytest.mark.parametrize("attempt", [1, 2, 5, 10, 50, 1000])
def test_never_exceeds_the_cap(attempt: int) -> None:
    for _ in range(200):
        delay = backoff_seconds(attempt)
        assert 0 < delay <= CAP_SECONDS
    assert backoff_seconds(1000, uniform=lambda a, b: b) == CAP_SECONDS


def test_jitter_spreads_retries() -> None:
    delays = {round(backoff_seconds(6), 3) for _ in range(50)}
    assert len(delays) > 10
