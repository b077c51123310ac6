"""The simulated cluster's loop paces itself under a stream of changes, on the clock port.

A step that took T, woken by a submission sooner than T after it ended, waits out the rest of T
(at most MAX_PACING_SECONDS) so that one step takes what arrives meanwhile; it never waits past
the moment something is due (a start, an end), and a change after a quiet spell is served at
once.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest

from adapters.clock import ManualClock
from adapters.simulated.gateway import MAX_PACING_SECONDS, SimulatedGateway
from budcluster.bootstrap import App
from domain.ports.gateways import WorkloadObservation
from tests.integration.test_app_flows import make_app, sim_cluster

STEP_SECONDS = 0.3
"""How long each (stubbed) step takes, by the manual clock."""


class Harness:
    def __init__(
        self, app: App, clock: ManualClock, gateway: SimulatedGateway, cluster_id: uuid.UUID
    ) -> None:
        self.app, self.clock, self.gateway, self.cluster_id = app, clock, gateway, cluster_id
        self.steps: list[float] = []
        self.due: list[float | None] = []
        """What each step answers as the seconds to the next due moment."""
        self._start = clock.now()
        self._steps: asyncio.Future[None] | None = None

    def seconds(self) -> float:
        return (self.clock.now() - self._start).total_seconds()

    async def advance(
        self, *, generation: int | None = None
    ) -> tuple[list[WorkloadObservation], float | None]:
        self.steps.append(round(self.seconds(), 3))
        await self.clock.advance(STEP_SECONDS)  # the step's own time
        return [], self.due.pop(0) if self.due else None

    async def start(self, *due: float | None) -> None:
        """Start the loop, its steps answering `due` in turn; returns once the first ran."""
        self.due = list(due)
        self._steps = asyncio.ensure_future(_drain(self.gateway))
        async with asyncio.timeout(10):
            while not self.steps:  # claiming the loop is real I/O: real time
                await asyncio.sleep(0.01)
        for _ in range(20):
            await asyncio.sleep(0)

    async def stop(self) -> None:
        if self._steps is not None:
            self._steps.cancel()
            await asyncio.gather(self._steps, return_exceptions=True)

    def wake(self) -> None:
        self.app.gateways.simulated.wake_event(self.cluster_id).set()

    async def run_until(self, seconds: float) -> None:
        while self.seconds() < seconds - 1e-9:
            await self.clock.advance(0.01)
            for _ in range(5):
                await asyncio.sleep(0)


@pytest.fixture
async def harness(sqlite_url: str) -> AsyncIterator[Harness]:
    clock = ManualClock(datetime(2026, 3, 1, tzinfo=UTC))
    app = await make_app(sqlite_url, clock=clock)
    app.gateways.simulated.poll_seconds = 5.0  # no poll between the test's steps
    cluster = await sim_cluster(app)
    gateway = app.gateways.simulated.for_cluster(cluster)
    made = Harness(app, clock, gateway, cluster.id)
    gateway.advance = made.advance  # type: ignore[method-assign]
    try:
        yield made
    finally:
        await made.stop()
        await app.close()


async def _drain(gateway: SimulatedGateway) -> None:
    async for _ in gateway.watch():
        pass


async def test_a_change_soon_after_a_slow_step_waits_out_the_steps_time(
    harness: Harness,
) -> None:
    await harness.start()
    await harness.run_until(0.35)
    assert harness.steps == [0.0]  # the first step ran 0 -> 0.3, then idles (poll 5 s)
    harness.wake()  # a submission 0.05 s after the step ended: the next step waits till 0.6
    await harness.run_until(0.55)
    assert harness.steps == [0.0]
    harness.wake()  # another one meanwhile: taken by the same step
    await harness.run_until(0.7)
    assert len(harness.steps) == 2 and 0.6 <= harness.steps[1] <= 0.62
    assert STEP_SECONDS <= MAX_PACING_SECONDS


async def test_pacing_never_waits_past_what_is_due(harness: Harness) -> None:
    await harness.start(0.1)  # the first step says: something is due 0.1 s after it ended
    await harness.run_until(0.32)
    harness.wake()
    await harness.run_until(0.5)
    assert len(harness.steps) == 2 and 0.4 <= harness.steps[1] <= 0.42


async def test_a_change_after_a_quiet_spell_is_served_at_once(harness: Harness) -> None:
    await harness.start()
    await harness.run_until(1.0)
    harness.wake()
    await harness.run_until(1.05)
    assert len(harness.steps) == 2 and 1.0 <= harness.steps[1] <= 1.02
