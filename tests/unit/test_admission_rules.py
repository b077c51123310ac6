"""The admission rules (tests/support/admission_tables.py) through the schedule estimator.

Each scenario's jobs are estimated at NOW: the admitted ones must be estimated to start now (on
the expected GPU flavor, where the scenario says), the preempted running ones to be evicted now,
the never-fitting ones flagged NEVER_FITS, and every other waiting job must not start now. Every
job is expected to outlast the estimator's horizon, so that the replay is that one admission pass
(a job admitted now and preempted later would be shown starting again later).
Kueue's cases that budcluster disagrees with are expected to fail (`Scenario.disagrees`).
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from domain.scheduling.durations import Durations
from domain.scheduling.estimator import (
    HORIZON,
    KUBERNETES_GRACE_SECONDS,
    NEVER_FITS,
    Snapshot,
    estimate,
    eviction_seconds,
)
from tests.support.admission_tables import KUEUE_CASES, NOW, Scenario, job_id, parametrized


@pytest.mark.parametrize("scenario", parametrized("estimator"))
def test_estimator_follows_the_rules(scenario: Scenario) -> None:
    jobs = scenario.jobs()
    for job in jobs:
        job.estimated_duration_seconds = int(2 * HORIZON.total_seconds())
    snapshot = Snapshot(NOW, scenario.node_objects(), scenario.quota_set(), jobs, Durations())
    schedule = estimate(snapshot)
    plans = {w.key: schedule.jobs[job_id(w.key)] for w in scenario.waiting}
    starting_now = {key for key, plan in plans.items() if plan.start == NOW}
    preempted_now = {
        w.key for w in scenario.running if schedule.jobs[job_id(w.key)].preempted_at == NOW
    }
    never = {key for key, plan in plans.items() if NEVER_FITS in plan.warnings}
    flavors = {
        key: plans[key].placements[0].flavor if plans[key].placements else None
        for key in scenario.flavors
    }
    assert (starting_now, preempted_now, flavors) == (
        scenario.admitted,
        scenario.preempted,
        scenario.flavors,
    )
    if scenario.never is not None:
        assert never == scenario.never


@pytest.mark.parametrize("seconds", [0.0, KUBERNETES_GRACE_SECONDS])
def test_a_preemptor_starts_once_its_victims_are_gone(seconds: float) -> None:
    """Kueue admits a preemptor in a cycle after the one that evicted its victims, once their
    pods have terminated: the estimate starts it `eviction_seconds` later (a real cluster's
    termination grace period; a simulated cluster's evictions are immediate), while the
    victims are evicted now and what did not preempt starts now."""
    scenario = next(s for s in KUEUE_CASES if s.name == "preempt lowest priority")
    jobs = scenario.jobs()
    for job in jobs:
        job.estimated_duration_seconds = int(2 * HORIZON.total_seconds())
    snapshot = Snapshot(
        NOW,
        scenario.node_objects(),
        scenario.quota_set(),
        jobs,
        Durations(),
        eviction_seconds=seconds,
    )
    schedule = estimate(snapshot)
    preemptor = schedule.jobs[job_id("in")]
    assert preemptor.start == NOW + timedelta(seconds=seconds)
    assert schedule.jobs[job_id("low")].preempted_at == NOW


def test_real_clusters_wait_for_the_grace_period() -> None:
    assert eviction_seconds(real=True) == KUBERNETES_GRACE_SECONDS == 30.0
    assert eviction_seconds(real=False) == 0.0
