"""Where CPU-heavy work runs (the Compute port), so that it never holds up the event loop.

A thread is not enough: the estimator (a preview, a timeline recompute) and a kubeconfig's YAML
hold the GIL for as long as they run, and the event loop then gets it back only between their
switch intervals, so every other request waits behind them (measured: one client previewing in
a loop made a cheap query's p99 go from 26 to 190 ms). `ProcessCompute` runs them in worker
processes made by a fork server (clean processes: nothing of this one's threads, locks or open
connections), started on first use; arguments and results travel pickled. With
BUDCLUSTER_COMPUTE_WORKERS=0 they run in a thread instead (domain.aio.InThread).
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")

PRELOAD = ["domain.scheduling.estimator", "adapters.kubernetes.kubeconfig"]
NICENESS = 10
"""The workers yield the CPU to the process that serves requests when both want it: a recompute
or a preview waits a little, a cheap query does not wait for them (on one core, a recompute at
equal priority doubled every request's time while it ran). Idle cores they use in full."""
"""Imported once by the fork server, so each worker starts with them loaded."""


class ProcessCompute:
    def __init__(self, workers: int) -> None:
        if workers < 1:
            raise ValueError("a process pool needs at least one worker")
        self._workers = workers
        self._pool: ProcessPoolExecutor | None = None

    def _executor(self) -> ProcessPoolExecutor:
        if self._pool is None:
            context = multiprocessing.get_context("forkserver")
            context.set_forkserver_preload(PRELOAD)
            self._pool = ProcessPoolExecutor(
                max_workers=self._workers,
                mp_context=context,
                initializer=os.nice,
                initargs=(NICENESS,),
            )
        return self._pool

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor(), fn, *args)

    def close(self) -> None:
        """Waits for the workers to stop (what runs is at most one recompute): a pool left
        behind leaks its semaphores, which Python's resource tracker reports on stderr at
        exit, outside the service's logs."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
