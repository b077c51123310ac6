"""The simulated cluster's physics: one step of admission, start-up, completion and requests.

`step` is a pure function of the workloads' records, the nodes and the time. Requests (cancel,
fail, preempt) are honoured first and free their resources; admitted workloads start after the
configured start-up delay; running ones end when their run time (scaled by `time_scale`, the
simulated seconds per real second) is up, or fail at `max_duration`; then the queue is admitted
with the domain's admission rules (`domain.scheduling.placement`), the same rules the schedule
estimator replays. Each transition is stamped with the moment it was due, not when the step ran,
so a late step does not distort recorded times.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from domain.model.cluster import Node
from domain.model.job import Placement
from domain.ports import WorkloadPhase
from domain.scheduling.placement import ClusterState, Request, admit

FINISHED = frozenset(
    {WorkloadPhase.SUCCEEDED, WorkloadPhase.FAILED, WorkloadPhase.PREEMPTED, WorkloadPhase.DELETED}
)


@dataclass
class SimWorkload:
    name: str
    job_id: str
    attempt: int
    priority: int
    gpu_type: str | None
    gpu_count: int
    cpu_cores: float
    memory_gb: float
    runtime_seconds: float | None
    """Simulated seconds it runs; None runs until stopped (a service)."""
    max_duration_seconds: float | None
    outcome: WorkloadPhase
    created_at: datetime
    phase: WorkloadPhase = WorkloadPhase.QUEUED
    reason: str = "queued"
    node: str | None = None
    gpu_indices: tuple[int, ...] = ()
    admitted_at: datetime | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    request: str | None = None
    request_reason: str | None = None
    changed: bool = field(default=False, compare=False)

    @property
    def placement(self) -> Placement | None:
        return Placement(self.node, self.gpu_indices) if self.node else None

    def move(self, phase: WorkloadPhase, reason: str) -> None:
        self.phase = phase
        self.reason = reason
        self.changed = True


@dataclass(frozen=True)
class Pace:
    time_scale: float = 1.0
    startup_seconds: float = 2.0

    def real(self, simulated_seconds: float) -> timedelta:
        return timedelta(seconds=simulated_seconds / self.time_scale)


def _end_of_run(w: SimWorkload, pace: Pace) -> tuple[datetime, WorkloadPhase, str] | None:
    assert w.started_at is not None
    limit = w.max_duration_seconds
    if limit is not None and (w.runtime_seconds is None or w.runtime_seconds > limit):
        return (
            w.started_at + pace.real(limit),
            WorkloadPhase.FAILED,
            "timeout: exceeded max_duration",
        )
    if w.runtime_seconds is None:
        return None
    reason = "completed" if w.outcome is WorkloadPhase.SUCCEEDED else "failed: exit code 1"
    return w.started_at + pace.real(w.runtime_seconds), w.outcome, reason


def step(
    workloads: list[SimWorkload], nodes: list[Node], now: datetime, pace: Pace
) -> datetime | None:
    """Advance every workload to `now`; returns when the next thing is due (None: nothing)."""
    live = [w for w in workloads if w.phase not in FINISHED]
    for w in live:
        if w.request is None:
            continue
        phase = {
            "DELETE": WorkloadPhase.DELETED,
            "FAIL": WorkloadPhase.FAILED,
            "PREEMPT": WorkloadPhase.PREEMPTED,
        }[w.request]
        w.finished_at = now
        w.move(phase, w.request_reason or phase.value.lower())
        w.request = None

    for w in live:
        if w.phase is WorkloadPhase.ADMITTED:
            assert w.admitted_at is not None
            start = w.admitted_at + pace.real(pace.startup_seconds)
            if start <= now:
                w.started_at = start
                w.move(WorkloadPhase.RUNNING, "pods running")
        if w.phase is WorkloadPhase.RUNNING:
            end = _end_of_run(w, pace)
            if end is not None and end[0] <= now:
                w.finished_at = end[0]
                w.move(end[1], end[2])

    holding = [w for w in live if w.phase in (WorkloadPhase.ADMITTED, WorkloadPhase.RUNNING)]
    state = ClusterState.empty(nodes)
    for w in holding:
        if w.placement is not None:
            state.occupy(w.placement, w.cpu_cores, w.memory_gb)
    queued = {w.name: w for w in live if w.phase is WorkloadPhase.QUEUED}
    requests = [
        Request(w.name, w.priority, w.created_at, w.gpu_type, w.gpu_count, w.cpu_cores, w.memory_gb)
        for w in queued.values()
    ]
    for request, placement in admit(state, requests):
        w = queued[request.key]
        w.node, w.gpu_indices = placement.node, placement.gpu_indices
        w.admitted_at = now
        w.move(WorkloadPhase.ADMITTED, f"admitted on {placement.node}")
        if pace.startup_seconds <= 0:
            w.started_at = now
            w.move(WorkloadPhase.RUNNING, "pods running")
        holding.append(w)

    due: list[datetime] = []
    for w in holding:
        if w.phase is WorkloadPhase.ADMITTED and w.admitted_at is not None:
            due.append(w.admitted_at + pace.real(pace.startup_seconds))
        elif w.phase is WorkloadPhase.RUNNING:
            end = _end_of_run(w, pace)
            if end is not None:
                due.append(end[0])
    return min(due) if due else None
