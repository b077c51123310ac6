"""The admission rules (tests/support/admission_tables.py) through the simulated cluster's engine.

The same scenarios the estimator is held to: one engine step at NOW must admit exactly the
expected workloads (on the expected GPU flavor, where the scenario says), preempt exactly the
expected running ones, and leave the rest queued, the never-fitting ones with a reason that says
so. Kueue's cases that budcluster disagrees with are expected to fail (`Scenario.disagrees`).
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from adapters.simulated.engine import Pace, SimWorkload, step
from domain.model.job import JobPriority
from domain.model.quota import tenant_namespace
from domain.ports.gateways import WorkloadPhase
from tests.support.admission_tables import NOW, TENANT, Scenario, W, parametrized


def sim(w: W, scenario: Scenario, phase: WorkloadPhase) -> SimWorkload:
    quotas = scenario.quota_set()
    return SimWorkload(
        name=w.key,
        job_id=str(TENANT),
        attempt=0,
        priority=quotas.priority_value(w.priority),
        gpu_type=w.gpu_type,
        gpu_count=w.gpus,
        cpu_cores=w.cpu,
        memory_gb=w.memory,
        pod_count=w.pods,
        pod_sets=w.pod_sets,
        runtime_seconds=86_400,
        max_duration_seconds=None,
        outcome=WorkloadPhase.SUCCEEDED,
        created_at=NOW - timedelta(hours=1) + timedelta(seconds=w.age),
        namespace=tenant_namespace(TENANT),
        queue_name=w.queue,
        preemptible=w.preemptible,
        critical=w.priority is JobPriority.CRITICAL,
        phase=phase,
    )


@pytest.mark.parametrize("scenario", parametrized("simulated"))
def test_simulated_cluster_follows_the_rules(scenario: Scenario) -> None:
    running = [sim(w, scenario, WorkloadPhase.RUNNING) for w in scenario.running]
    for job, workload in zip(scenario.jobs(), running, strict=False):
        workload.place(list(job.placements))
        workload.admitted_at = workload.started_at = job.actual_start
    waiting = [sim(w, scenario, WorkloadPhase.QUEUED) for w in scenario.waiting]
    step(
        [*running, *waiting],
        scenario.node_objects(),
        scenario.quota_set(),
        NOW,
        Pace(startup_seconds=0),
    )
    admitted = {w.name for w in waiting if w.phase is WorkloadPhase.RUNNING}
    preempted = {w.name for w in running if w.phase is WorkloadPhase.PREEMPTED}
    never = {w.name for w in waiting if w.reason.startswith(w.queue_name) and "never" in w.reason}
    by_name = {w.name: w for w in waiting}
    flavors = {key: by_name[key].flavor for key in scenario.flavors}
    assert (admitted, preempted, flavors) == (
        scenario.admitted,
        scenario.preempted,
        scenario.flavors,
    )
    if scenario.never is not None:
        assert never == scenario.never
