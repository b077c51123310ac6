"""Durations learned from what really happened: the ratio actual / estimated corrects users'
estimates (the median ratio), history without an estimate follows the mean, a fallback chain
with shrinkage, and a running job past its expectation runs on for a share of its age."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from domain.model.ids import ClusterId, JobId, ProjectId, TenantId
from domain.model.job import DeploymentType, Job, JobType, Resources, RunRecord
from domain.scheduling.durations import OUTLIVED, Durations, History

NOW = datetime(2026, 6, 1, 9, 0, tzinfo=UTC)
ALICE = TenantId(uuid.UUID(int=1))
BOB = TenantId(uuid.UUID(int=2))


def job(
    name: str = "train",
    tenant: TenantId = ALICE,
    estimate: int | None = None,
    gpus: int = 8,
    job_type: JobType = JobType.TRAINING,
) -> Job:
    return Job(
        id=JobId(uuid.uuid4()),
        name=name,
        tenant_id=tenant,
        project_id=ProjectId(uuid.UUID(int=9)),
        cluster_id=ClusterId(uuid.UUID(int=7)),
        job_type=job_type,
        deployment_type=DeploymentType.DOCKER,
        created_at=NOW,
        updated_at=NOW,
        resources=Resources("nvidia-h100", gpus, 4, 32),
        estimated_duration_seconds=estimate,
    )


def run(
    seconds: float,
    estimated: float | None = None,
    *,
    name: str = "train",
    tenant: TenantId = ALICE,
    gpus: int = 8,
    finished: bool = True,
) -> RunRecord:
    return RunRecord(
        tenant, name, JobType.TRAINING, "nvidia-h100", gpus, seconds, estimated, finished
    )


# --- the ratio: users' estimates corrected ------------------------------------------------------


def test_an_over_stated_estimate_is_scaled_by_what_past_runs_took() -> None:
    # this user asks for 4 hours and runs about one
    history = History([run(3600.0 * f, 4 * 3600.0) for f in (0.8, 0.9, 1.0, 1.1, 1.2) * 4])
    durations = Durations(history)
    new = job(estimate=4 * 3600)
    assert durations.expected(new) == pytest.approx(3600.0, rel=0.05)
    assert durations.source(new) == "corrected estimate"
    assert Durations().expected(new) == 4 * 3600
    assert Durations().source(new) == "estimate"


def test_one_run_moves_the_correction_part_of_the_way_many_runs_all_of_it() -> None:
    one = Durations(History([run(1000.0, 4000.0)])).expected(job(estimate=4000))
    many = Durations(History([run(1000.0, 4000.0)] * 40)).expected(job(estimate=4000))
    assert one is not None and many is not None
    assert 1000.0 < one < 4000.0
    assert many == pytest.approx(1000.0, rel=0.02)


def test_a_new_name_falls_back_on_its_tenants_then_the_clusters_runs() -> None:
    alice = [run(1000.0, 4000.0, name=f"sweep-{i}") for i in range(30)]
    bob = [run(8000.0, 4000.0, name=f"bob-{i}", tenant=BOB) for i in range(30)]
    durations = Durations(History([*alice, *bob]))
    mine = durations.expected(job("never-seen", estimate=4000))
    theirs = durations.expected(job("never-seen", BOB, estimate=4000))
    assert mine is not None and theirs is not None
    assert 1000.0 < mine < 1300.0  # alice's runs (the cluster's pull a little)
    assert 7000.0 < theirs < 8000.0


def test_the_key_separates_names_and_gpu_counts() -> None:
    history = History(
        [run(600.0, 1200.0, name="small", gpus=1)] * 20
        + [run(2400.0, 1200.0, name="small", gpus=8)] * 20
        + [run(1200.0, 1200.0, name="other", gpus=1)] * 20
    )
    durations = Durations(history)
    one = durations.expected(job("small", estimate=1200, gpus=1))
    eight = durations.expected(job("small", estimate=1200, gpus=8))
    assert one is not None and eight is not None
    assert one < 800.0 and eight > 2000.0


def test_the_ratio_is_the_median_a_runaway_run_does_not_rule_it() -> None:
    # nineteen runs took a quarter of their limit, one ran 50 times its estimate
    history = History([run(1000.0, 4000.0)] * 19 + [run(200_000.0, 4000.0)])
    expected = Durations(history).expected(job(estimate=4000))
    assert expected == pytest.approx(1000.0, rel=0.1)  # the mean ratio would say 13,000 s


def test_an_absurd_ratio_is_clipped() -> None:
    durations = Durations(History([run(10_000_000.0, 1.0)] * 20))
    assert (durations.expected(job(estimate=60)) or 0) <= 60 * 100


# --- no estimate: the mean of history -----------------------------------------------------------


def test_history_follows_the_mean_not_the_median() -> None:
    history = History([run(s) for s in (300.0, 500.0, 7000.0)] * 10)
    expected = Durations(history).expected(job())
    assert expected == pytest.approx((300.0 + 500.0 + 7000.0) / 3, rel=0.02)
    assert Durations(history).source(job()) == "history"
    assert Durations().source(job()) == "default"


def test_history_without_a_run_of_the_key_falls_back_on_the_default_by_degrees() -> None:
    durations = Durations(History([run(100.0, name="other")] * 30))
    # the tenant's and the cluster's runs say 100 s; a name never seen leans on them
    assert (durations.expected(job("new")) or 0) < 400.0
    assert Durations().expected(job("new")) == 3600.0


def test_runs_still_going_are_not_learned_from() -> None:
    finished = [run(s) for s in (60.0, 90.0, 120.0)]
    going = [run(20_000.0, finished=False), run(30_000.0, finished=False)]
    assert Durations(History(finished)).expected(job()) == Durations(
        History([*finished, *going])
    ).expected(job())


# --- a running job ------------------------------------------------------------------------------


def test_a_running_job_past_its_corrected_estimate_runs_on_for_a_share_of_its_age() -> None:
    durations = Durations(History([run(1000.0, 4000.0)] * 40))
    running = job(estimate=4000)
    expected = durations.expected(running)
    assert expected is not None
    assert durations.expected_total(running, 500.0) == expected
    assert durations.expected_total(running, 3000.0) == pytest.approx(3000.0 * (1 + OUTLIVED))


def test_a_job_past_its_estimate_with_nothing_learned_runs_on_for_a_share_of_its_age() -> None:
    total = Durations().expected_total(job(estimate=600), 1800.0)
    assert total == pytest.approx(1800.0 + OUTLIVED * 1800.0)
    assert Durations().expected_total(job(estimate=600), 100.0) == 600.0


def test_services_run_until_stopped() -> None:
    service = job(job_type=JobType.SERVICE)
    assert Durations().expected(service) is None
    assert Durations().expected_total(service, 100.0) is None
    assert Durations().source(service) == "service"


# --- failed attempts ------------------------------------------------------------------------


def failed(seconds: float, *, name: str = "train") -> RunRecord:
    return RunRecord(ALICE, name, JobType.TRAINING, "nvidia-h100", 8, seconds, failed=True)


def test_with_no_failure_on_record_an_attempt_holds_its_gpus_for_its_run() -> None:
    durations = Durations(History([run(3600.0)] * 10))
    new = job()
    assert durations.history.failure(new) is None
    assert durations.holding(new) == durations.expected(new) == pytest.approx(3600.0)


def test_attempts_that_often_fail_early_hold_their_gpus_for_less() -> None:
    """Issue 30: an attempt that fails gives its GPUs back then (its retry queues again): an
    attempt of a class that failed half the time, after 10 minutes, is expected to hold them
    for about half its run plus half of ten minutes. Failed runs do not shorten the run time
    a success takes, nor its corrected estimate."""
    records = [run(3600.0, 3600.0)] * 20 + [failed(600.0)] * 20
    durations = Durations(History(records))
    new = job(estimate=3600)
    chance, seconds = durations.history.failure(new) or (0.0, 0.0)
    assert chance == pytest.approx(0.5, abs=0.03)
    assert seconds == pytest.approx(600.0, rel=0.01)
    assert durations.expected(new) == pytest.approx(3600.0)
    assert durations.holding(new) == pytest.approx(0.5 * 3600 + 0.5 * 600, rel=0.03)
    # once an attempt has outlived how long failing ones run, it is expected to succeed
    assert durations.holding_total(new, 300.0) == durations.holding(new)
    assert durations.holding_total(new, 900.0) == pytest.approx(3600.0)
    # another name learns from the cluster's record, shrunk toward no failures
    other = durations.history.failure(job(name="other", estimate=3600))
    assert other is not None and 0.0 < other[0] < chance
    assert Durations(History(records)).holding(job(job_type=JobType.SERVICE)) is None
