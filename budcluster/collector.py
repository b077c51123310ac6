"""How a long-running process's garbage collector keeps out of the way of the event loop.

CPython's full collection (generation 2) walks every object that can hold references, and it runs
on whichever thread allocates at the time: in an API process that is the event loop, holding
every request. An API process with a thousand subscriptions, timelines and caches holds about a
million such objects, and each full collection held the loop for 0.1 to 0.5 s (measured under
`benchmarks.contention`: 28 of up to 479 ms in 20 s), longer than any request waited for
anything else. So the survivors of each full collection are moved out of the collector's sight
(`gc.freeze`): the next full collection walks only what came since, and reference counting
still frees a frozen object the moment it is dropped; only reference cycles among frozen objects
wait. Every `thaw_seconds` the frozen objects are given back (`gc.unfreeze`) to one full
collection, which frees those cycles, and the survivors are frozen again after it: one long
pause in that period instead of one a second. The thaw also comes sooner, once the frozen objects
outnumber those frozen after the last thaw by THAW_GROWTH: cycles that libraries leave behind
(one per closed WebSocket, say) then cost a bounded share of memory, not ten minutes of them
(issue 27: five rounds of 100 subscribers grew the API by 6.8 % after the first without it).
"""

from __future__ import annotations

import gc
import logging
import time
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

THAW_SECONDS = 600.0
"""How often the frozen objects get a full collection (cycles among them are kept this long)."""
THAW_GROWTH = 0.05
"""The frozen objects' growth since the last thaw that brings the next one forward: the memory
aim of issue 27 (no growth beyond 5 % once a process has warmed up), so at most one full walk
per 5 % of new long-lived objects."""


class FrozenSurvivors:
    def __init__(
        self,
        *,
        thaw_seconds: float = THAW_SECONDS,
        thaw_growth: float = THAW_GROWTH,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._thaw_seconds = thaw_seconds
        self._thaw_growth = thaw_growth
        self._clock = clock
        self._thawed_at = clock()
        self._baseline: int | None = None
        """How many objects were frozen after the last thaw (None: not frozen since)."""
        self._installed = False

    def install(self) -> None:
        """Freeze what lives now, and what survives each full collection from now on."""
        if self._installed:
            return
        gc.collect()
        gc.freeze()
        self._baseline = gc.get_freeze_count()
        gc.callbacks.append(self._collected)
        self._installed = True
        log.debug("garbage collector: %d objects frozen", gc.get_freeze_count())

    def uninstall(self) -> None:
        if self._installed:
            gc.callbacks.remove(self._collected)
            gc.unfreeze()
            self._installed = False

    def _collected(self, phase: str, info: dict[str, Any]) -> None:
        if phase != "stop" or info.get("generation") != 2:
            return
        now = self._clock()
        if now - self._thawed_at >= self._thaw_seconds:
            self._thaw(now)
            return
        gc.freeze()
        frozen = gc.get_freeze_count()
        if self._baseline is None:
            self._baseline = frozen  # the survivors of the thaw's full collection
        elif frozen > self._baseline * (1 + self._thaw_growth):
            self._thaw(now)

    def _thaw(self, now: float) -> None:
        gc.unfreeze()  # the next full collection walks everything, and frees old cycles
        self._thawed_at = now
        self._baseline = None
