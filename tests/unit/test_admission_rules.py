"""The admission rules (tests/support/admission_tables.py) through the schedule estimator.

Each scenario's jobs are estimated at NOW: the admitted ones must be estimated to start now, the
preempted running ones to be evicted now, the never-fitting ones flagged NEVER_FITS, and every
other waiting job must not start now.
"""

from __future__ import annotations

import pytest

from domain.scheduling.durations import Durations
from domain.scheduling.estimator import NEVER_FITS, Snapshot, estimate
from tests.support.admission_tables import NOW, SCENARIOS, Scenario, job_id


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_estimator_follows_the_rules(scenario: Scenario) -> None:
    snapshot = Snapshot(
        NOW, scenario.node_objects(), scenario.quota_set(), scenario.jobs(), Durations()
    )
    schedule = estimate(snapshot)
    starting_now = {w.key for w in scenario.waiting if schedule.jobs[job_id(w.key)].start == NOW}
    preempted_now = {
        w.key for w in scenario.running if schedule.jobs[job_id(w.key)].preempted_at == NOW
    }
    never = {w.key for w in scenario.waiting if NEVER_FITS in schedule.jobs[job_id(w.key)].warnings}
    assert (starting_now, preempted_now, never) == (
        scenario.admitted,
        scenario.preempted,
        scenario.never,
    )
