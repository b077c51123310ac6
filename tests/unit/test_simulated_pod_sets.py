"""A simulated workload of several pod sets: one demand (`gang_of`), admitted all together.

Covers: the demand of a workload with further pod sets carries them (each its own shape, the
job's GPU type); a workload of a leader and two GPU workers is admitted whole, with a placement
for every pod of every pod set (in the demand's gang order), runs and completes; the model
rebuilt at the next step holds all its pods (nothing else fits beside it); it waits whole while
any of its pod sets does not fit.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

from adapters.simulated import engine
from adapters.simulated.engine import Pace, SimWorkload
from domain.model.cluster import Node
from domain.model.job import PodSet
from domain.model.quota import tenant_namespace
from domain.ports.gateways import WorkloadPhase as P
from tests.support.admission_tables import A100 as A
from tests.support.admission_tables import TENANT, Scenario, q
from tests.support.fakes import T0

SCENARIO = Scenario("pod-sets", [("n1", A, 8), ("n2", A, 8)], [q("default", 16)])
NODES: list[Node] = SCENARIO.node_objects()
QUOTAS = SCENARIO.quota_set()
WORKERS = PodSet("workers", pod_count=2, gpu_count=4, cpu_cores=1, memory_gb=4)


def workload(
    name: str, gpus: int, runtime: float, *pod_sets: PodSet, age: float = 0
) -> SimWorkload:
    return SimWorkload(
        name,
        str(uuid.uuid4()),
        0,
        10,
        A,
        gpus,
        1,
        4,
        runtime,
        None,
        P.SUCCEEDED,
        T0 + timedelta(seconds=age),
        namespace=tenant_namespace(TENANT),
        queue_name="default",
        pod_sets=pod_sets,
    )


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def test_the_demand_carries_the_further_pod_sets() -> None:
    demand = engine.demand_of(workload("mpi", 0, 60, WORKERS), QUOTAS)
    assert [(d.pod_set, d.gpu_count, d.pods, d.gpu_type) for d in demand.gang] == [
        ("workers", 4, 2, A),
        ("main", 0, 1, A),
    ]
    assert demand.key == "mpi" and demand.all_gpus == 8


def test_a_leader_and_workers_run_together_to_completion() -> None:
    w = workload("train", 4, 100, WORKERS)
    pace = Pace(time_scale=1, startup_seconds=5)
    assert engine.step([w], NODES, QUOTAS, at(0), pace) == at(5)
    assert w.phase is P.ADMITTED, w.reason
    assert len(w.placements) == 3  # the leader's pod and both workers'
    assert sorted(len(p.gpu_indices) for p in w.placements) == [4, 4, 4]
    used = [(p.node, i) for p in w.placements for i in p.gpu_indices]
    assert len(set(used)) == 12  # no GPU given twice

    other = workload("other", 8, 10, age=1)
    engine.step([w, other], NODES, QUOTAS, at(7), pace)  # rebuilt: it holds 12 of 16 GPUs
    assert (w.phase, other.phase) == (P.RUNNING, P.QUEUED)
    engine.step([w, other], NODES, QUOTAS, at(300), pace)
    assert (w.phase, w.finished_at, w.reason) == (P.SUCCEEDED, at(105), "completed")
    assert other.phase in (P.ADMITTED, P.RUNNING)


def test_it_waits_whole_while_a_pod_set_does_not_fit() -> None:
    w = workload("wide", 8, 60, PodSet("workers", pod_count=2, gpu_count=8))
    engine.step([w], NODES, QUOTAS, at(0), Pace(startup_seconds=0))
    assert (w.phase, w.placements) == (P.QUEUED, ())
