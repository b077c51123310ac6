"""Running benchmarks: the load of each, in the process that took its start task.

On a simulated cluster (whose pods run nothing) a benchmark's load generator runs here while its
job runs: `start` claims the benchmark with its version (a start task that runs twice starts one
run), the run reports progress about every second, stores the samples and the summary, and then
ends the job as the benchmark pod would have (`ClusterGateway.workload_exited`). A run whose
process died stops reporting and `sweep` fails it; a benchmark whose job runs without a run (its
start task was lost) is started by `sweep` too.

A run's requests go only where the outbound rules allow (the load generator checks each
address it connects to), unless its endpoint is a deployment of the benchmark's tenant: one it
was given (`deployment_id`), or one whose own endpoint URL it names.

On a Kubernetes cluster the job's pod runs the load (vLLM's client): `start` only marks the
benchmark RUNNING, the job is the sign of life (no progress is reported, and the sweep does not
fail it for that), and `settle` reads what it measured back from the cluster
(`ClusterGateway.benchmark_run`) once the job completed; a settle that was lost is made good by
the sweep.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from domain.errors import Conflict
from domain.model.benchmark import Benchmark, BenchmarkStatus
from domain.model.cluster import Cluster
from domain.model.deployment import Deployment, DeploymentStatus
from domain.model.ids import BenchmarkId
from domain.model.job import Job, JobStatus
from domain.model.load import (
    EndpointUnreachable,
    LoadPlan,
    LoadProgress,
    LoadResult,
    RequestSample,
)
from domain.ports.clock import Clock
from domain.ports.gateways import GatewayFactory, GatewayUnavailable
from domain.ports.serving import LoadGenerator
from domain.ports.unit_of_work import TenantScope, UnitOfWorkFactory
from domain.services.destinations import own_deployment
from domain.serving.metrics import progress, summarize

log = logging.getLogger(__name__)

HEARTBEAT_SECONDS = 10.0
"""A running benchmark reports at least this often (the sweep fails one silent for 30 s)."""


class BenchmarkRunner:
    """Runs benchmarks' load in this process, while their jobs run (see the module docstring)."""

    def __init__(
        self,
        *,
        uow: UnitOfWorkFactory,
        clock: Clock,
        gateways: GatewayFactory,
        loadgen: LoadGenerator,
        progress_seconds: float = 1.0,
        stale_seconds: float = 30.0,
    ) -> None:
        self._uow = uow
        self._clock = clock
        self._gateways = gateways
        self._loadgen = loadgen
        self._progress_seconds = progress_seconds
        self._stale = timedelta(seconds=stale_seconds)
        self._runs: dict[BenchmarkId, asyncio.Task[None]] = {}
        self._stops: dict[BenchmarkId, asyncio.Event] = {}

    @property
    def running(self) -> frozenset[BenchmarkId]:
        return frozenset(self._runs)

    async def start(self, benchmark_id: BenchmarkId) -> bool:
        """Claim the benchmark and start its run here (where the cluster's Job runs the load,
        only claim it); False if it is not due (its job does not run) or another run has it."""
        if benchmark_id in self._runs:
            return False
        now = self._clock.now()
        failure: str | None = None
        async with self._uow(TenantScope.system()) as uow:
            b = await uow.benchmarks.get(benchmark_id, for_update=True)
            if b is None or b.status is not BenchmarkStatus.PENDING:
                return False
            job = await uow.jobs.get(b.job_id)
            if job is None or job.status is not JobStatus.RUNNING:
                return False
            plan, deployment = b.plan, None
            if b.deployment_id is not None:
                deployment = await uow.deployments.get(b.deployment_id)
            if _runs_itself(await uow.clusters.get(b.cluster_id)):
                # its pod sends the requests, to the endpoint it was given at submission
                configuration = {**b.configuration, **_deployment_now(deployment)}
                b.start(plan, configuration, now)
                try:
                    await uow.benchmarks.save(b)
                    await uow.commit()
                except Conflict:
                    return False
                return True
            if b.deployment_id is not None:
                if deployment is None:
                    failure = "its deployment is gone"
                elif deployment.status is not DeploymentStatus.RUNNING or not (
                    deployment.endpoint_url
                ):
                    failure = (
                        f"deployment {deployment.name} is not serving "
                        f"({deployment.status.value}: {deployment.status_message})"
                    )
                else:
                    plan = _with_endpoint(plan, deployment.endpoint_url)
            own_endpoint = b.deployment_id is not None or (
                own_deployment(plan.endpoint, await uow.deployments.with_endpoints(), b.tenant_id)
                is not None
            )
            configuration = {**b.configuration, **_deployment_now(deployment)}
            b.start(plan, configuration, now)
            if failure:
                b.finish(BenchmarkStatus.FAILED, failure, now)
            try:
                await uow.benchmarks.save(b)
                await uow.commit()
            except Conflict:
                return False  # another run claimed it first
        if failure:
            await self._exited(b, job, succeeded=False, reason=failure)
            return True
        stop = asyncio.Event()
        self._stops[b.id] = stop
        self._runs[b.id] = asyncio.create_task(
            self._run(b, job, stop, own_endpoint=own_endpoint), name=f"benchmark-{b.id}"
        )
        return True

    async def wait(self, benchmark_id: BenchmarkId) -> None:
        """Until this process's run of it ends (tests, shutdown)."""
        task = self._runs.get(benchmark_id)
        if task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(task)

    async def _run(
        self, b: Benchmark, job: Job, stop: asyncio.Event, *, own_endpoint: bool
    ) -> None:
        samples: list[RequestSample] = []
        began = self._clock.now()
        reporter = asyncio.create_task(self._report(b.id, samples, began, stop))
        status, reason, result = BenchmarkStatus.FAILED, "the run failed", None
        try:
            run = await self._loadgen.run(
                b.plan, on_sample=samples.append, stop=stop, own_endpoint=own_endpoint
            )
            result = summarize(run)
            status, reason = _outcome(result, cancelled=run.cancelled)
        except EndpointUnreachable as exc:
            reason = str(exc)
        except asyncio.CancelledError:
            reason = "the process running it stopped"
            raise
        except Exception as exc:  # a bug in the client: the benchmark fails with it, visibly
            log.exception("benchmark %s failed", b.id)
            reason = f"the load generator failed: {type(exc).__name__}"
        finally:
            reporter.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reporter
            self._runs.pop(b.id, None)
            self._stops.pop(b.id, None)
            await asyncio.shield(self._finish(b, job, status, reason, result, samples, began))

    async def _finish(
        self,
        b: Benchmark,
        job: Job,
        status: BenchmarkStatus,
        reason: str,
        result: LoadResult | None,
        samples: list[RequestSample],
        began: datetime,
    ) -> None:
        """Store how the run ended, with its final progress: the last report may be a second
        (or, with no request ending, up to HEARTBEAT_SECONDS) behind what was really done."""
        try:
            for _ in range(3):
                try:
                    async with self._uow(TenantScope.system()) as uow:
                        current = await uow.benchmarks.get(b.id, for_update=True)
                        if current is None:
                            return
                        now = self._clock.now()
                        final = progress(list(samples), (now - began).total_seconds())
                        if current.status.is_final:  # cancelled meanwhile: keep what it measured
                            current.attach(result, now, final)
                        else:
                            current.finish(status, reason, now, result, final)
                        await uow.benchmarks.save(current)
                        await uow.benchmarks.save_samples(b.id, samples)
                        await uow.commit()
                        status, reason = current.status, current.status_message or reason
                    break
                except Conflict:
                    continue  # a progress report or a cancel wrote first: read it again
            await self._exited(b, job, succeeded=status is BenchmarkStatus.COMPLETED, reason=reason)
        except Exception:
            log.exception("storing the results of benchmark %s failed", b.id)

    async def _exited(self, b: Benchmark, job: Job, *, succeeded: bool, reason: str) -> None:
        async with self._uow(TenantScope.system()) as uow:
            cluster = await uow.clusters.get(b.cluster_id)
        if cluster is None:
            return
        await self._gateways.for_cluster(cluster).workload_exited(
            job.id, job.attempt, succeeded=succeeded, reason=reason
        )

    async def _report(
        self,
        benchmark_id: BenchmarkId,
        samples: list[RequestSample],
        began: datetime,
        stop: asyncio.Event,
    ) -> None:
        """About every `progress_seconds`: store the progress (an event subscribers see), and
        notice a cancellation. A second in which no request ended is not reported, unless
        HEARTBEAT_SECONDS passed since the last report (it is also the sweep's sign of life)."""
        reported, last = -1, began
        while True:
            await self._clock.sleep(self._progress_seconds)
            now = self._clock.now()
            elapsed = (now - began).total_seconds()
            ended = len(samples)
            if ended == reported and (now - last).total_seconds() < HEARTBEAT_SECONDS:
                continue
            reported, last = ended, now
            try:
                async with self._uow(TenantScope.system()) as uow:
                    b = await uow.benchmarks.get(benchmark_id, for_update=True)
                    if b is None or b.status.is_final:
                        stop.set()
                        return
                    b.report(progress(list(samples), elapsed), self._clock.now())
                    await uow.benchmarks.save(b)
                    await uow.commit()
            except Conflict:
                continue
            except Exception as exc:  # an outage: the run goes on, the next report tries again
                log.warning("reporting the progress of benchmark %s failed: %s", benchmark_id, exc)

    async def settle(self, benchmark_id: BenchmarkId) -> bool:
        """Its job ended: a benchmark still waiting or running ends with it (a run here is
        stopped). True if the benchmark ended now."""
        stop = self._stops.get(benchmark_id)
        async with self._uow(TenantScope.system()) as uow:
            b = await uow.benchmarks.get(benchmark_id, for_update=True)
            if b is None or b.status.is_final:
                return False
            job = await uow.jobs.get(b.job_id)
            ended = job is not None and (
                job.status.is_finished or job.status is JobStatus.PREEMPTED
            )
            if job is None or not ended:
                return False
            if stop is not None:  # the run ends it, with what it measured
                stop.set()
                return False
            cluster = await uow.clusters.get(b.cluster_id)
            measured = job.status is JobStatus.COMPLETED and _runs_itself(cluster)
            if not measured:
                status = (
                    BenchmarkStatus.CANCELLED
                    if job.status is JobStatus.CANCELLED
                    else BenchmarkStatus.FAILED
                )
                reason = f"its job is {job.status.value}: {job.status_message}"
                b.finish(status, reason, self._clock.now())
                await uow.benchmarks.save(b)
                await uow.commit()
                return True
        assert cluster is not None
        return await self._read_back(benchmark_id, job, cluster)

    async def _read_back(self, benchmark_id: BenchmarkId, job: Job, cluster: Cluster) -> bool:
        """The job's pod ran the load and completed: end the benchmark with what it measured, as
        the cluster kept it (FAILED, saying why, when that can't be read). GatewayUnavailable
        propagates: the task, or the sweep, tries again."""
        samples: list[RequestSample] = []
        result: LoadResult | None = None
        final: LoadProgress | None = None
        try:
            run = await self._gateways.for_cluster(cluster).benchmark_run(job.id, job.attempt)
        except ValueError as exc:
            status, reason = BenchmarkStatus.FAILED, f"its result could not be read: {exc}"
        else:
            if run is None:
                status, reason = BenchmarkStatus.FAILED, "its job ended without a result"
            else:
                samples, result = list(run.samples), summarize(run)
                final = progress(samples, run.duration_seconds)
                status, reason = _outcome(result, cancelled=False)
        for _ in range(3):
            try:
                async with self._uow(TenantScope.system()) as uow:
                    b = await uow.benchmarks.get(benchmark_id, for_update=True)
                    if b is None or b.status.is_final:
                        return False
                    b.finish(status, reason, self._clock.now(), result, final)
                    await uow.benchmarks.save(b)
                    if samples:
                        await uow.benchmarks.save_samples(b.id, samples)
                    await uow.commit()
                return True
            except Conflict:
                continue  # a cancel wrote first: read it again
        return False

    async def sweep(self) -> int:
        """Fail the runs whose process stopped (no progress for `stale_seconds`), and start
        the benchmarks whose job has run that long without a run (its start task was lost:
        an in-process queue does not survive a restart). On a Kubernetes cluster the job is
        the run: one that ended that long ago settles the benchmark. Returns how many it
        ended."""
        now = self._clock.now()
        async with self._uow(TenantScope.system()) as uow:
            found = [b for b in await uow.benchmarks.unfinished() if b.id not in self._runs]
            jobs = await uow.jobs.get_many([b.job_id for b in found])
            clusters = await uow.clusters.get_many(list({b.cluster_id for b in found}))
        in_cluster = {b.id for b in found if _runs_itself(clusters.get(b.cluster_id))}
        stale = [
            b
            for b in found
            if b.status is BenchmarkStatus.RUNNING
            and now - b.updated_at > self._stale
            and b.id not in in_cluster
        ]
        ended = 0
        for settling in found:
            job = jobs.get(settling.job_id)
            if (
                settling.id in in_cluster
                and job is not None
                and (job.status.is_finished or job.status is JobStatus.PREEMPTED)
                and now - job.updated_at > self._stale
            ):
                try:
                    ended += await self.settle(settling.id)
                except GatewayUnavailable as exc:
                    log.warning("benchmark %s: its result can't be read yet: %s", settling.id, exc)
        for waiting in found:
            started = jobs.get(waiting.job_id)
            if (
                waiting.status is BenchmarkStatus.PENDING
                and started is not None
                and started.status is JobStatus.RUNNING
                and started.actual_start is not None
                and now - started.actual_start > self._stale
            ):
                await self.start(waiting.id)
        for candidate in stale:
            reason = "the process running it stopped (no progress reported)"
            try:
                async with self._uow(TenantScope.system()) as uow:
                    b = await uow.benchmarks.get(candidate.id, for_update=True)
                    if b is None or b.status is not BenchmarkStatus.RUNNING:
                        continue
                    if now - b.updated_at <= self._stale:
                        continue
                    job = await uow.jobs.get(b.job_id)
                    b.finish(BenchmarkStatus.FAILED, reason, now)
                    await uow.benchmarks.save(b)
                    await uow.commit()
            except Conflict:
                continue
            ended += 1
            if job is not None:
                await self._exited(b, job, succeeded=False, reason=reason)
        return ended

    async def close(self) -> None:
        """Stop the runs of this process (each ends FAILED: the process stopped)."""
        tasks = list(self._runs.values())
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task


def _runs_itself(cluster: Cluster | None) -> bool:
    """Whether the cluster's pods run a benchmark's load (a Kubernetes cluster's Job does;
    a simulated cluster's pods run nothing)."""
    return cluster is not None and cluster.is_real


def _with_endpoint(plan: LoadPlan, endpoint: str) -> LoadPlan:
    return replace(plan, endpoint=endpoint.rstrip("/"))


def _deployment_now(deployment: Deployment | None) -> dict[str, Any]:
    if deployment is None:
        return {}
    running = sum(1 for w in deployment.workers if w.status.value == "RUNNING")
    return {"replicas": running}


def _outcome(result: LoadResult, *, cancelled: bool) -> tuple[BenchmarkStatus, str]:
    if cancelled:
        return BenchmarkStatus.CANCELLED, "cancelled by user"
    if result.successful_requests == 0:
        top = result.failures[0][0] if result.failures else "no request was sent"
        return BenchmarkStatus.FAILED, f"every request failed ({top})"
    message = f"{result.successful_requests} requests in {result.duration_seconds:.1f} s" + (
        f", {result.failed_requests} failed" if result.failed_requests else ""
    )
    return BenchmarkStatus.COMPLETED, message
