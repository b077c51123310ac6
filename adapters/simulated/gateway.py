"""The simulated cluster behind the ClusterGateway port, as the Kubernetes adapter will be.

Submitting, cancelling and re-prioritising write to the simulated cluster's store from any process.
Watching runs the cluster's admission loop (`engine.step`) and yields what each step changed; the
caller (the cluster supervisor) holds a lease so that one process at a time runs it, and the
watch's fencing generation (store.claim) makes sure a process that lost the lease writes nothing.
The loop sleeps until the next thing is due, and wakes at once when this process submits or
cancels; submissions from other processes are noticed within `poll_seconds`.

Run time of a workload: `spec.simulation.runtime_seconds` if given (a demo or test script), else
the job's estimated duration, else a default per job type; SERVICE jobs run until stopped, and
a benchmark's job (`spec.benchmark`) until its load generator, which budcluster runs in a worker
task on a simulated cluster, ends (`workload_exited`). `spec.simulation.outcome: FAILED` makes
it fail at the end of its run.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from adapters.simulated.config import SimulationConfig
from adapters.simulated.engine import RESERVATION, Pace, SimWorkload, step
from adapters.simulated.logs import lines_of, mounts_of
from adapters.simulated.store import SimulatedStore
from domain.aio import wait_event
from domain.model.cluster import Cluster, Node
from domain.model.drain import Drain, cordoned
from domain.model.ids import ClusterId, JobId
from domain.model.job import JobPriority, JobType
from domain.model.load import LoadRun
from domain.model.quota import QuotaSet, priority_value
from domain.model.reservation import CapacityReservation
from domain.ports.clock import Clock
from domain.ports.gateways import (
    MAX_LOG_LINES,
    ClusterGateway,
    LogLine,
    Workload,
    WorkloadObservation,
    WorkloadPhase,
)
from domain.scheduling.durations import DEFAULT_SECONDS

LIST_FINISHED_WITHIN = timedelta(days=1)
MAX_PACING_SECONDS = 0.5
"""The longest a step woken by a change waits after a slow step (see `watch`)."""

Configuration = tuple[QuotaSet, list[CapacityReservation], list[Drain]]
"""A cluster's Kueue objects, its capacity reservations and its drains (what a real cluster
holds as cordoned nodes and held ClusterQueues), as the simulated cluster sees them."""

AdmissionCheck = Callable[
    [AsyncConnection, Sequence[tuple[uuid.UUID, int]]], Awaitable[set[tuple[uuid.UUID, int]]]
]
"""Of the (job, attempt) pairs a step would admit, those not to be admitted (their job is final,
or on a later attempt), asked in the step's own transaction: Kueue's admission checks, which
must all be Ready before a workload is admitted, as budcluster is to a simulated cluster."""


class _Refused(Exception):
    """A step would admit workloads the admission check refuses: it is run again without them."""

    def __init__(self, attempts: set[tuple[uuid.UUID, int]]) -> None:
        self.attempts = attempts


def runtime_of(workload: Workload) -> float | None:
    simulation = workload.spec.get("simulation")
    if isinstance(simulation, dict) and isinstance(simulation.get("runtime_seconds"), int | float):
        return float(simulation["runtime_seconds"])
    if workload.job_type is JobType.SERVICE or "benchmark" in workload.spec:
        return None
    if workload.estimated_duration_seconds is not None:
        return float(workload.estimated_duration_seconds)
    return DEFAULT_SECONDS[workload.job_type]


def outcome_of(workload: Workload) -> WorkloadPhase:
    simulation = workload.spec.get("simulation")
    if isinstance(simulation, dict) and simulation.get("outcome") == "FAILED":
        return WorkloadPhase.FAILED
    return WorkloadPhase.SUCCEEDED


def observation(w: SimWorkload, clock: Clock) -> WorkloadObservation:
    return WorkloadObservation(
        job_id=JobId(uuid.UUID(w.job_id)),
        attempt=w.attempt,
        phase=w.phase,
        reason=w.reason,
        observed_at=clock.now(),
        admitted_at=w.admitted_at,
        started_at=w.started_at,
        finished_at=w.finished_at,
        placements=w.placements,
        workload=w.name,
    )


class SimulatedClusters:
    """Gateway factory for simulated clusters; one per process.

    `configuration` reads a cluster's quotas, reservations and drains: what a real cluster
    would hold as reconciled Kueue objects and cordons, the simulated one reads from
    budcluster's own records.
    `priority_values` reads only the priority classes' values, all a hand-over needs (a
    submission's hand-over read the whole configuration, seven statements, for them)."""

    def __init__(
        self,
        engine: AsyncEngine,
        clock: Clock,
        configuration: Callable[[ClusterId], Awaitable[Configuration]],
        priority_values: Callable[[], Awaitable[Mapping[JobPriority, int]]],
        *,
        serialised: Callable[[], AbstractAsyncContextManager[None]] | None = None,
        poll_seconds: float = 0.5,
        admission_check: AdmissionCheck | None = None,
    ) -> None:
        self.configuration = configuration
        self.priority_values = priority_values
        self.admission_check = admission_check
        self.store = SimulatedStore(engine, serialised)
        self.clock = clock
        self.poll_seconds = poll_seconds
        self._wake: dict[uuid.UUID, asyncio.Event] = {}

    def wake_event(self, cluster_id: uuid.UUID) -> asyncio.Event:
        return self._wake.setdefault(cluster_id, asyncio.Event())

    def for_cluster(self, cluster: Cluster) -> SimulatedGateway:
        return SimulatedGateway(self, cluster)


class SimulatedGateway(ClusterGateway):
    def __init__(self, clusters: SimulatedClusters, cluster: Cluster) -> None:
        self._clusters = clusters
        self._store = clusters.store
        self._clock = clusters.clock
        self._cluster = cluster
        self._config = SimulationConfig.from_settings(cluster.settings)
        self._pace = Pace(self._config.time_scale, self._config.startup_seconds)

    @property
    def time_scale(self) -> float:
        return self._config.time_scale

    def _wake(self) -> None:
        self._clusters.wake_event(self._cluster.id).set()

    async def submit(self, workload: Workload) -> None:
        values = await self._clusters.priority_values()
        resources = workload.resources
        record = SimWorkload(
            name=workload.name,
            job_id=str(workload.job_id),
            attempt=workload.attempt,
            priority=priority_value(values, workload.priority),
            gpu_type=resources.gpu_type if resources.total_gpus else None,
            gpu_count=resources.gpu_count,
            cpu_cores=resources.cpu_cores,
            memory_gb=resources.memory_gb,
            pod_count=resources.pod_count,
            pod_sets=resources.pod_sets,
            runtime_seconds=runtime_of(workload),
            max_duration_seconds=(
                float(workload.max_duration_seconds) if workload.max_duration_seconds else None
            ),
            outcome=outcome_of(workload),
            created_at=workload.created_at,
            namespace=workload.namespace,
            queue_name=workload.queue_name,
            preemptible=workload.preemptible,
            critical=workload.priority is JobPriority.CRITICAL,
            reservation=str(workload.reservation_id) if workload.reservation_id else None,
            mounts=mounts_of(workload),
        )
        if await self._store.insert(self._cluster.id, record):
            self._wake()

    async def cancel(self, job_id: JobId, attempt: int) -> None:
        if await self._store.request(self._cluster.id, job_id, attempt, "DELETE", "deleted"):
            self._wake()

    async def evict(self, job_id: JobId, attempt: int, *, grace_seconds: int) -> None:
        """A running workload holds its GPUs for its grace period (in the cluster's simulated
        seconds), then ends; one not running yet goes at once."""
        due = self._clock.now() + self._pace.real(grace_seconds)
        reason = f"evicted: SIGTERM, then {grace_seconds} s to checkpoint"
        if await self._store.request(self._cluster.id, job_id, attempt, "DELETE", reason, due=due):
            self._wake()

    async def fail(self, job_id: JobId, attempt: int, reason: str = "failed on request") -> bool:
        """Make a live workload fail now (demos and tests)."""
        done = await self._store.request(self._cluster.id, job_id, attempt, "FAIL", reason)
        self._wake()
        return done

    async def preempt(
        self, job_id: JobId, attempt: int, reason: str = "preempted on request"
    ) -> bool:
        """Evict a live workload now, as Kueue does for a higher-priority one."""
        done = await self._store.request(self._cluster.id, job_id, attempt, "PREEMPT", reason)
        self._wake()
        return done

    async def workload_exited(
        self, job_id: JobId, attempt: int, *, succeeded: bool, reason: str
    ) -> bool:
        action = "SUCCEED" if succeeded else "FAIL"
        done = await self._store.request(self._cluster.id, job_id, attempt, action, reason)
        self._wake()
        return done

    async def benchmark_run(self, job_id: JobId, attempt: int) -> LoadRun | None:
        """Benchmarks' load runs in budcluster here (BenchmarkRunner), not in a pod."""
        return None

    async def set_priority(self, job_id: JobId, attempt: int, priority: JobPriority) -> None:
        values = await self._clusters.priority_values()
        await self._store.set_priority(
            self._cluster.id, job_id, attempt, priority_value(values, priority)
        )
        self._wake()

    async def logs(
        self,
        job_id: JobId,
        attempt: int,
        *,
        pod: str | None = None,
        since: datetime | None = None,
        tail: int | None = None,
    ) -> list[LogLine]:
        """What its pods wrote, made from their records (`adapters.simulated.logs`)."""
        now = self._clock.now()
        per_pod: dict[str, list[LogLine]] = {}
        for w in await self._store.of_attempt(self._cluster.id, job_id, attempt):
            for line in lines_of(w, self._pace, now):
                if (pod is None or line.pod == pod) and (since is None or line.at > since):
                    per_pod.setdefault(line.pod, []).append(line)
        keep = min(tail or MAX_LOG_LINES, MAX_LOG_LINES)
        merged = sorted(
            (line for lines in per_pod.values() for line in lines[-keep:]),
            key=lambda line: (line.at, line.pod),
        )
        return merged[-MAX_LOG_LINES:]

    async def nodes(self) -> list[Node]:
        """Its nodes, those a drain covers cordoned (as Kubernetes reports a cordoned node)."""
        _, _, drains = await self._clusters.configuration(self._cluster.id)
        return cordoned(self._config.nodes(self._cluster.id), drains)

    async def list_workloads(self) -> list[WorkloadObservation]:
        since = self._clock.now() - LIST_FINISHED_WITHIN
        return [
            observation(w, self._clock)
            for w in await self._store.all(self._cluster.id, finished_since=since)
        ]

    async def advance(
        self, *, generation: int | None = None
    ) -> tuple[list[WorkloadObservation], float | None]:
        """Run one step of the cluster now; returns what changed and seconds to the next due.
        With `generation` (the watch's claim), only while no later holder has claimed the loop:
        raises `Superseded` otherwise, having written nothing."""
        quotas, reservations, drains = await self._clusters.configuration(self._cluster.id)
        nodes = cordoned(self._config.nodes(self._cluster.id), drains)
        refused: set[tuple[uuid.UUID, int]] = set()
        while True:
            try:
                changed, due, now = await self._step(
                    nodes, quotas, reservations, generation, refused
                )
                break
            except _Refused as again:  # rolled back: run it again, those taken away first
                refused |= again.attempts
        wait = None if due is None else max(0.0, (due - now).total_seconds())
        reported = [w for w in changed if w.kind != RESERVATION]
        return [observation(w, self._clock) for w in reported], wait

    async def _step(
        self,
        nodes: list[Node],
        quotas: QuotaSet,
        reservations: list[CapacityReservation],
        generation: int | None,
        refused: set[tuple[uuid.UUID, int]],
    ) -> tuple[list[SimWorkload], datetime | None, datetime]:
        """One step in one transaction. The workloads it admits pass the admission check in
        that transaction; if any is refused, `_Refused` rolls the step back."""
        async with self._store.transaction() as conn:
            workloads = await self._store.live(conn, self._cluster.id, generation=generation)
            waiting = set()
            for w in workloads:
                if (uuid.UUID(w.job_id), w.attempt) in refused:
                    w.request, w.request_reason = "DELETE", "its job no longer wants it"
                elif w.phase is WorkloadPhase.QUEUED:
                    waiting.add(w.name)
            now = self._clock.now()
            due = step(workloads, nodes, quotas, now, self._pace, reservations)
            check = self._clusters.admission_check
            admitted = [
                (uuid.UUID(w.job_id), w.attempt)
                for w in workloads
                if w.name in waiting and w.admitted_at is not None and w.kind != RESERVATION
            ]
            if check is not None and admitted:
                unwanted = await check(conn, admitted)
                if unwanted:
                    raise _Refused(unwanted)
            changed = [w for w in workloads if w.changed or w.new]
            await self._store.save(conn, self._cluster.id, changed)
        return changed, due, now

    async def watch(self) -> AsyncIterator[list[WorkloadObservation]]:
        """Run the cluster's admission loop, one step after another, and yield each step's
        changes together (possibly none: a step is also a sign of life). Starting claims the
        loop (its fencing generation): a watch started elsewhere later makes this one end with
        `Superseded` at its next step.

        Woken by a change (a submission) sooner after a step than that step took, it waits out
        the rest of that time (at most MAX_PACING_SECONDS, never past the next due moment), so
        that under a stream of submissions the process serves them, and one step takes many."""
        wake = self._clusters.wake_event(self._cluster.id)
        generation = await self._store.claim(self._cluster.id)
        while True:
            wake.clear()
            began = self._clock.now()
            observations, wait = await self.advance(generation=generation)
            ended = self._clock.now()
            took = min(MAX_PACING_SECONDS, (ended - began).total_seconds())
            yield observations
            timeout = (
                self._clusters.poll_seconds
                if wait is None
                else min(wait, self._clusters.poll_seconds)
            )
            if timeout > 0:
                await wait_event(wake, timeout, sleep=self._clock.sleep)
                since = (self._clock.now() - ended).total_seconds()
                rest = min(took, timeout) - since
                if wake.is_set() and rest > 0:
                    await self._clock.sleep(rest)
