"""The live progress of a benchmark: `benchmarkProgress`.

It sends a benchmark as it is, then each change of it (progress about every second while it runs,
its status when it ends), and ends after it ended.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from dataclasses import dataclass

from domain.errors import NotFound
from domain.model.benchmark import Benchmark
from domain.model.ids import BenchmarkId
from domain.model.principal import Principal
from domain.ports.events import Overflowed
from domain.ports.unit_of_work import UnitOfWorkFactory
from domain.services.benchmarks import visible_benchmark
from domain.services.replay import ClusterStreams


@dataclass(kw_only=True, eq=False)
class BenchmarkProgressService(ClusterStreams):
    uow: UnitOfWorkFactory

    async def benchmark_progress(
        self, principal: Principal, benchmark_id: BenchmarkId
    ) -> AsyncGenerator[Benchmark, None]:
        """Raises NotFound (before anything is sent) for a benchmark the caller may not see."""
        first = await self._benchmark(principal, benchmark_id)
        if first is None:
            raise NotFound("benchmark", benchmark_id)
        return self._progress(principal, first)

    async def _benchmark(self, principal: Principal, benchmark_id: BenchmarkId) -> Benchmark | None:
        return await visible_benchmark(self.uow, principal, benchmark_id)

    async def _progress(
        self, principal: Principal, first: Benchmark
    ) -> AsyncGenerator[Benchmark, None]:
        live = await self.hub.subscribe(first.cluster_id, buffer=self.buffer)
        try:
            # read again with the subscription open: nothing committed in between is lost
            current = await self._benchmark(principal, first.id) or first
            yield current
            if current.status.is_final:
                return
            version = current.version
            async for item in live:
                if isinstance(item, Overflowed):  # fell behind: the latest state will do
                    latest = await self._benchmark(principal, first.id)
                    changed = [latest] if latest is not None else []
                else:
                    change = item.benchmark_change
                    if change is None or change.benchmark.id != first.id:
                        continue
                    changed = [change.benchmark]
                for benchmark in changed:
                    if benchmark.version and benchmark.version < version:
                        continue
                    version = benchmark.version
                    yield benchmark
                    if benchmark.status.is_final:
                        return
        finally:
            await live.close()
