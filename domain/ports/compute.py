"""CPU-heavy pure functions run off the event loop (worker processes, or a thread)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar

T = TypeVar("T")


class Compute(Protocol):
    """Runs CPU-heavy pure functions (the estimator, parsing a kubeconfig) off the event loop.
    Arguments and results may be copied to another process: plain data only."""

    async def run(self, fn: Callable[..., T], *args: Any) -> T: ...
