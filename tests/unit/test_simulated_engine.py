"""The simulated cluster's step function: admission, start-up delay, completion, limits, requests.

Times are those the step says things were due at, not when it ran; `time_scale` compresses run
time; the returned due time tells the loop when to wake next.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

from adapters.simulated.engine import Pace, SimWorkload, step
from domain.model.cluster import Node, NodeType
from domain.model.ids import ClusterId, NodeId
from domain.ports import WorkloadPhase as P
from tests.support.fakes import T0

A = "nvidia-a100-80gb"
NODES = [Node(NodeId(uuid.uuid4()), ClusterId(uuid.uuid4()), "n1", NodeType.GPU, A, 8, 64, 512)]


def workload(
    name: str,
    gpus: int,
    runtime: float | None,
    *,
    priority: int = 10,
    age: float = 0,
    max_duration: float | None = None,
    outcome: P = P.SUCCEEDED,
) -> SimWorkload:
    return SimWorkload(
        name,
        str(uuid.uuid4()),
        0,
        priority,
        A,
        gpus,
        1,
        4,
        runtime,
        max_duration,
        outcome,
        T0 + timedelta(seconds=age),
    )


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def test_admit_start_and_complete_at_their_due_times() -> None:
    w = workload("a", 8, 100)
    pace = Pace(time_scale=1, startup_seconds=5)
    assert step([w], NODES, at(0), pace) == at(5)
    assert (w.phase, w.admitted_at, w.placement.node) == (P.ADMITTED, at(0), "n1")  # type: ignore[union-attr]
    assert step([w], NODES, at(7), pace) == at(105)
    assert (w.phase, w.started_at) == (P.RUNNING, at(5))
    assert step([w], NODES, at(300), pace) is None
    assert (w.phase, w.finished_at, w.reason) == (P.SUCCEEDED, at(105), "completed")


def test_queue_waits_for_gpus_and_takes_them_when_freed() -> None:
    first, second = workload("a", 8, 60), workload("b", 8, 60, age=1)
    pace = Pace(startup_seconds=0)
    step([first, second], NODES, at(0), pace)
    assert (first.phase, second.phase) == (P.RUNNING, P.QUEUED)
    step([first, second], NODES, at(60), pace)
    assert (first.phase, second.phase) == (P.SUCCEEDED, P.RUNNING)
    assert second.started_at == at(60)


def test_higher_priority_goes_first() -> None:
    low, high = workload("low", 8, 60, priority=1), workload("high", 8, 60, priority=100, age=9)
    step([low, high], NODES, at(10), Pace(startup_seconds=0))
    assert (low.phase, high.phase) == (P.QUEUED, P.RUNNING)


def test_time_scale_compresses_run_time() -> None:
    w = workload("a", 1, 600)
    pace = Pace(time_scale=60, startup_seconds=0)
    assert step([w], NODES, at(0), pace) == at(10)


def test_max_duration_fails_with_timeout() -> None:
    w = workload("a", 1, 100, max_duration=30)
    pace = Pace(startup_seconds=0)
    step([w], NODES, at(0), pace)
    step([w], NODES, at(31), pace)
    assert (w.phase, w.finished_at) == (P.FAILED, at(30))
    assert w.reason.startswith("timeout")


def test_services_run_until_stopped() -> None:
    w = workload("svc", 1, None)
    assert step([w], NODES, at(0), Pace(startup_seconds=0)) is None
    step([w], NODES, at(10**6), Pace(startup_seconds=0))
    assert w.phase is P.RUNNING


def test_failing_outcome() -> None:
    w = workload("a", 1, 5, outcome=P.FAILED)
    step([w], NODES, at(0), Pace(startup_seconds=0))
    step([w], NODES, at(6), Pace(startup_seconds=0))
    assert w.phase is P.FAILED and w.reason.startswith("failed")


def test_requests_end_workloads_and_free_their_gpus() -> None:
    running, waiting = workload("a", 8, 1000), workload("b", 8, 10, age=1)
    pace = Pace(startup_seconds=0)
    step([running, waiting], NODES, at(0), pace)
    running.request, running.request_reason = "PREEMPT", "evicted"
    step([running, waiting], NODES, at(1), pace)
    assert (running.phase, running.reason, running.finished_at) == (P.PREEMPTED, "evicted", at(1))
    assert waiting.phase is P.RUNNING
    waiting.request = "DELETE"
    step([running, waiting], NODES, at(2), pace)
    assert waiting.phase is P.DELETED


def test_unchanged_workloads_are_not_marked() -> None:
    queued = workload("big", 16, 10)
    step([queued], NODES, at(0), Pace())
    assert (queued.phase, queued.changed) == (P.QUEUED, False)
