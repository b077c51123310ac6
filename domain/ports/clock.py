"""Time, injected: tests and the simulated cluster move it."""

from __future__ import annotations

from datetime import datetime
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, timezone-aware UTC."""

    async def sleep(self, seconds: float) -> None: ...
