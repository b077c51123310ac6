"""The simulated cluster's step function: admission, start-up delay, completion, limits, requests.

Times are those the step says things were due at, not when it ran; `time_scale` compresses run
time; the returned due time tells the loop when to wake next.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

from adapters.simulated import engine
from adapters.simulated.engine import Pace, SimWorkload
from domain.model.cluster import Node
from domain.model.quota import tenant_namespace
from domain.ports.gateways import WorkloadPhase as P
from tests.support.admission_tables import A100 as A
from tests.support.admission_tables import TENANT, Scenario, q
from tests.support.fakes import T0

SCENARIO = Scenario("engine", [("n1", A, 8)], [q("default", 8)])
NODES: list[Node] = SCENARIO.node_objects()
QUOTAS = SCENARIO.quota_set()


def step(
    workloads: list[SimWorkload], nodes: list[Node], now: datetime, pace: Pace
) -> datetime | None:
    return engine.step(workloads, nodes, QUOTAS, now, pace)


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
        namespace=tenant_namespace(TENANT),
        queue_name="default",
        preemptible=True,
    )


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def test_admit_start_and_complete_at_their_due_times() -> None:
    w = workload("a", 8, 100)
    pace = Pace(time_scale=1, startup_seconds=5)
    assert step([w], NODES, at(0), pace) == at(5)
    assert [p.node for p in w.placements] == ["n1"]
    assert (w.phase, w.admitted_at) == (P.ADMITTED, at(0))
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
    # one comparison: an `is` would narrow waiting.phase for mypy past the next step
    assert (running.phase, running.reason, running.finished_at, waiting.phase) == (
        P.PREEMPTED,
        "evicted",
        at(1),
        P.RUNNING,
    )
    waiting.request = "DELETE"
    step([running, waiting], NODES, at(2), pace)
    assert waiting.phase is P.DELETED


def test_unchanged_workloads_are_not_marked() -> None:
    queued = workload("big", 16, 10)
    step([queued], NODES, at(0), Pace())
    assert (queued.phase, queued.changed) == (P.QUEUED, False)


def test_a_reservation_takes_gpus_from_its_start_and_only_its_jobs_use_them() -> None:
    import uuid as _uuid

    from domain.model.ids import TenantId
    from domain.model.reservation import CapacityReservation, ReservationId

    booked = CapacityReservation(
        ReservationId(_uuid.uuid4()),
        NODES[0].cluster_id,
        TenantId(TENANT),
        "train-night",
        "default",
        A,
        6,
        at(10),
        at(100),
        T0,
    )
    running = workload("before", 4, 20)
    outsider = workload("outsider", 4, 10, age=1)
    insider = workload("insider", 4, 10, age=2)
    insider.reservation = str(booked.id)
    workloads = [running, outsider, insider]
    pace = Pace(startup_seconds=0)
    engine.step(workloads, NODES, QUOTAS, at(0), pace, [booked])
    assert (running.phase, outsider.phase, insider.phase) == (P.RUNNING, P.RUNNING, P.QUEUED)
    engine.step(workloads, NODES, QUOTAS, at(15), pace, [booked])  # outsider done: 4 GPUs free
    rows = [w for w in workloads if w.kind == "reservation"]
    assert sum(len(r.gpu_indices) for r in rows) == 4 and insider.phase is P.RUNNING
    newcomer = workload("newcomer", 2, 10, age=3)
    workloads.append(newcomer)
    engine.step(workloads, NODES, QUOTAS, at(21), pace, [booked])  # `before` ended: 4 more free
    rows = [w for w in workloads if w.kind == "reservation"]
    assert sum(len(r.gpu_indices) for r in rows) == 6  # topped up to 6 ahead of the newcomer
    assert newcomer.phase is P.RUNNING  # 2 GPUs were left over for it
    engine.step(workloads, NODES, QUOTAS, at(101), pace, [booked])
    assert all(r.phase is P.SUCCEEDED for r in workloads if r.kind == "reservation")
