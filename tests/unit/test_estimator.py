"""The schedule estimator beyond one admission pass.

Covers: waiting jobs start when running ones end, on the GPUs those free; durations come from the
job's estimate, else history (median), else the job type's default, and services run on; a running
job past its estimate is extended, never shown ending in the past; time windows and dependencies
hold jobs back; a failed dependency and a missed deadline are flagged; reservations block GPUs
for their window; retried jobs wait out their backoff; why-it-waits reasons; the free-GPU
forecast; and, the contract itself, the estimate made at the start equals what the simulated
cluster then does, step by step, when durations are known.
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import time, timedelta
from typing import Any

import pytest

from adapters.simulated.engine import Pace, SimWorkload, step
from domain.model.ids import JobId, TenantId
from domain.model.job import Job, JobStatus, JobType, Placement, RunRecord, TimeWindow
from domain.model.quota import tenant_namespace
from domain.model.reservation import CapacityReservation, ReservationId
from domain.ports.gateways import WorkloadPhase
from domain.scheduling.durations import Durations, History
from domain.scheduling.estimator import (
    DEPENDENCY_FAILED,
    MISSES_DEADLINE,
    NEVER_FITS,
    Snapshot,
    estimate,
)
from tests.support.admission_tables import A100, NOW, TENANT, Scenario, W, job_id, q

TWO_NODES = Scenario("two nodes", [("n1", A100, 8), ("n2", A100, 8)], [q("cq", 16)])


def snapshot(jobs: list[Job], scenario: Scenario = TWO_NODES, **kw: Any) -> Snapshot:
    return Snapshot(
        NOW,
        scenario.node_objects(),
        scenario.quota_set(),
        jobs,
        kw.pop("durations", Durations()),
        **kw,
    )


def jobs_of(scenario: Scenario, **durations: int) -> dict[str, Job]:
    jobs = scenario.jobs()
    for job in jobs:
        if job.name in durations:
            job.estimated_duration_seconds = durations[job.name]
    return {job.name: job for job in jobs}


def test_waiting_jobs_start_when_running_ones_end() -> None:
    scenario = replace(
        TWO_NODES,
        running=[W("r1", "cq", 8, node="n1"), W("r2", "cq", 8, node="n2", age=1)],
        waiting=[W("w1", "cq", 8), W("w2", "cq", 4, age=1), W("w3", "cq", 4, age=2)],
    )
    jobs = jobs_of(scenario, r1=3600, r2=7200, w1=600, w2=1800, w3=600)
    started = NOW - timedelta(minutes=30)
    plan = estimate(snapshot(list(jobs.values()))).jobs
    assert plan[jobs["r1"].id].end == started + timedelta(hours=1)
    assert plan[jobs["w1"].id].start == started + timedelta(hours=1)
    assert plan[jobs["w1"].id].end == started + timedelta(hours=1, minutes=10)
    # w2 and w3 share n1 once w1 is done
    assert plan[jobs["w2"].id].start == plan[jobs["w3"].id].start == plan[jobs["w1"].id].end
    assert {p.node for j in ("w1", "w2", "w3") for p in plan[jobs[j].id].placements} == {"n1"}
    w2, w3 = plan[jobs["w2"].id].placements[0], plan[jobs["w3"].id].placements[0]
    assert set(w2.gpu_indices).isdisjoint(w3.gpu_indices)


def test_a_running_job_past_its_estimate_is_extended() -> None:
    scenario = replace(TWO_NODES, running=[W("late", "cq", 8, node="n1")])
    jobs = jobs_of(scenario, late=600)  # started 30 minutes ago, expected to take 10
    plan = estimate(snapshot(list(jobs.values()))).jobs[jobs["late"].id]
    assert plan.end is not None and plan.end > NOW


def test_durations_from_estimate_then_history_then_default() -> None:
    scenario = replace(
        TWO_NODES, waiting=[W("a", "cq", 8), W("b", "cq", 8, age=1), W("c", "cq", 8, age=2)]
    )
    jobs = jobs_of(scenario, a=100)
    jobs["b"].estimated_duration_seconds = jobs["c"].estimated_duration_seconds = None
    jobs["c"].job_type = JobType.BATCH  # no run of its type on the cluster
    b = jobs["b"]
    runs = [
        RunRecord(b.tenant_id, b.name, b.job_type, b.resources.gpu_type, 8, s)
        for s in (300.0, 500.0, 7000.0) * 20
    ]
    durations = Durations(History(runs))
    assert durations.source(jobs["a"]) == "estimate"
    assert durations.source(jobs["b"]) == "history"
    assert durations.source(jobs["c"]) == "default"
    plan = estimate(snapshot(list(jobs.values()), durations=durations)).jobs
    assert plan[jobs["a"].id].end == NOW + timedelta(seconds=100)
    b_plan = plan[b.id]
    assert b_plan.end is not None and b_plan.start is not None
    ran = (b_plan.end - b_plan.start).total_seconds()
    # the mean (2,600 s; the 1 h default barely weighs), not the median (500 s)
    assert 2500.0 < ran < 2700.0
    c = plan[jobs["c"].id]
    assert c.end is not None and c.start is not None
    assert c.end - c.start == timedelta(minutes=10)  # the BATCH default


def test_services_run_until_stopped() -> None:
    scenario = replace(TWO_NODES, waiting=[W("svc", "cq", 8)])
    jobs = jobs_of(scenario)
    jobs["svc"].job_type = JobType.SERVICE
    plan = estimate(snapshot(list(jobs.values()))).jobs[jobs["svc"].id]
    assert (plan.start, plan.end) == (NOW, None)


def test_time_windows() -> None:
    scenario = replace(TWO_NODES, waiting=[W("night", "cq", 8)])
    jobs = jobs_of(scenario, night=3600)
    jobs["night"].window = TimeWindow(time(22, 0), time(6, 0))  # NOW is 12:00 UTC
    plan = estimate(snapshot(list(jobs.values()))).jobs[jobs["night"].id]
    assert plan.start == NOW.replace(hour=22)
    assert "window 22:00-06:00" in plan.reason


def test_a_window_that_closes_before_capacity_frees_moves_to_the_next_night() -> None:
    scenario = replace(
        TWO_NODES,
        running=[W("hog", "cq", 16, node="n1")],
        nodes=[("n1", A100, 16)],
        queues=[q("cq", 16)],
        waiting=[W("night", "cq", 8)],
    )
    jobs = jobs_of(scenario, night=600)
    jobs["hog"].estimated_duration_seconds = int(timedelta(hours=19).total_seconds())
    jobs["night"].window = TimeWindow(time(22, 0), time(2, 0))
    plan = estimate(snapshot(list(jobs.values()), scenario)).jobs
    # the hog ends at 06:30 tomorrow, after the window closed at 02:00: the next night it is
    assert plan[jobs["night"].id].start == (NOW + timedelta(days=1)).replace(hour=22)


def test_dependencies_hold_jobs_back_and_failures_are_flagged() -> None:
    scenario = replace(
        TWO_NODES,
        waiting=[W("first", "cq", 8), W("then", "cq", 8, age=1), W("orphan", "cq", 8, age=2)],
    )
    jobs = jobs_of(scenario, first=600, then=600, orphan=600)
    jobs["then"].depends_on = (jobs["first"].id,)
    failed = JobId(uuid.uuid4())
    jobs["orphan"].depends_on = (failed,)
    plan = estimate(snapshot(list(jobs.values()), finished={failed: JobStatus.FAILED})).jobs
    assert plan[jobs["then"].id].start == plan[jobs["first"].id].end
    assert "waits for jobs" in plan[jobs["then"].id].reason
    assert DEPENDENCY_FAILED in plan[jobs["orphan"].id].warnings
    assert plan[jobs["orphan"].id].start is None


def test_a_completed_dependency_is_no_obstacle() -> None:
    scenario = replace(TWO_NODES, waiting=[W("then", "cq", 8)])
    jobs = jobs_of(scenario, then=600)
    done = JobId(uuid.uuid4())
    jobs["then"].depends_on = (done,)
    plan = estimate(snapshot(list(jobs.values()), finished={done: JobStatus.COMPLETED})).jobs
    assert plan[jobs["then"].id].start == NOW


def test_a_missed_deadline_is_flagged() -> None:
    scenario = replace(
        TWO_NODES,
        running=[W("r", "cq", 16, node="n1")],
        nodes=[("n1", A100, 16)],
        queues=[q("cq", 16)],
        waiting=[W("urgent", "cq", 8), W("relaxed", "cq", 8, age=1)],
    )
    jobs = jobs_of(scenario, r=7200, urgent=600, relaxed=600)
    jobs["urgent"].deadline = NOW + timedelta(minutes=45)
    jobs["relaxed"].deadline = NOW + timedelta(days=1)
    plan = estimate(snapshot(list(jobs.values()), scenario)).jobs
    assert MISSES_DEADLINE in plan[jobs["urgent"].id].warnings
    assert MISSES_DEADLINE not in plan[jobs["relaxed"].id].warnings


def test_reservations_block_their_gpus_for_their_window() -> None:
    scenario = replace(
        TWO_NODES,
        waiting=[
            W("long", "cq", 8),
            W("short", "cq", 8, age=1),
            W("later", "cq", 8, age=2),
            W("after", "cq", 8, age=3),
            W("blocked", "cq", 8, age=4),
        ],
    )
    jobs = jobs_of(scenario, long=3600, short=600, later=600, after=600, blocked=600)
    booked = CapacityReservation(
        ReservationId(uuid.uuid4()),
        scenario.node_objects()[0].cluster_id,
        TenantId(TENANT),
        "demo",
        "cq",
        A100,
        8,
        NOW + timedelta(minutes=30),
        NOW + timedelta(hours=3),
        NOW,
    )
    plan = estimate(snapshot(list(jobs.values()))).jobs
    assert plan[jobs["blocked"].id].start == NOW + timedelta(minutes=30)  # without it
    schedule = estimate(snapshot(list(jobs.values()), reservations=[booked]))
    plan = schedule.jobs
    assert [plan[jobs[k].id].start for k in ("long", "short", "later", "after")] == [
        NOW,
        NOW,
        NOW + timedelta(minutes=10),
        NOW + timedelta(minutes=20),
    ]
    # from 12:30 the reservation holds the GPUs `after` leaves; `blocked` waits for `long`
    assert plan[jobs["blocked"].id].start == NOW + timedelta(hours=1)
    [reserved] = schedule.reservations
    assert sum(len(p.gpu_indices) for p in reserved.placements) == 8
    assert reserved.start == NOW + timedelta(minutes=30)


def test_retry_backoff_is_waited_out() -> None:
    scenario = replace(TWO_NODES, waiting=[W("retry", "cq", 8)])
    jobs = jobs_of(scenario, retry=60)
    jobs["retry"].status = JobStatus.PENDING
    jobs["retry"].next_attempt_at = NOW + timedelta(seconds=40)
    plan = estimate(snapshot(list(jobs.values()))).jobs[jobs["retry"].id]
    assert plan.start == NOW + timedelta(seconds=40)


def test_reasons_say_what_is_needed_and_how_many_are_ahead() -> None:
    scenario = replace(
        TWO_NODES,
        running=[W("r", "cq", 16, node="n1")],
        nodes=[("n1", A100, 16)],
        queues=[q("cq", 16)],
        waiting=[W("a", "cq", 8), W("b", "cq", 4, age=1), W("c", "cq", 4, age=2)],
    )
    jobs = jobs_of(scenario, r=3600, a=60, b=60, c=60)
    schedule = estimate(snapshot(list(jobs.values()), scenario))
    assert schedule.jobs[jobs["c"].id].reason.startswith(
        "needs 4 x nvidia-a100-80gb in cq; 2 jobs ahead"
    )
    assert schedule.queue == [jobs["a"].id, jobs["b"].id, jobs["c"].id]
    steps = schedule.free_gpus[A100]
    assert steps[0] == (NOW, 0)
    assert (NOW + timedelta(minutes=30), 0) in steps or steps[1][1] >= 0


def test_time_scale_shrinks_durations_on_simulated_clusters() -> None:
    scenario = replace(TWO_NODES, waiting=[W("w", "cq", 8)])
    jobs = jobs_of(scenario, w=600)
    plan = estimate(snapshot(list(jobs.values()), time_scale=60)).jobs[jobs["w"].id]
    assert plan.end == NOW + timedelta(seconds=10)


@pytest.mark.parametrize(("seed", "count"), [(s, 25) for s in range(5)] + [(7, 160), (8, 160)])
def test_what_is_predicted_is_what_the_simulated_cluster_does(seed: int, count: int) -> None:
    """Random jobs with known run times: estimate once, then run the engine event by event; every
    job must start exactly when and where the estimate said."""
    import random

    rng = random.Random(seed)
    from domain.model.job import JobPriority

    scenario = Scenario(
        "mixed",
        [("n1", A100, 8), ("n2", A100, 8), ("n3", A100, 4)],
        [q("a", 10, cohort="co"), q("b", 10, cohort="co")],
    )
    waiting = [
        W(
            f"j{i}",
            rng.choice("ab"),
            rng.choice([1, 2, 4, 8]),
            rng.choice([JobPriority.LOW, JobPriority.NORMAL, JobPriority.HIGH]),
            age=i,
            pods=rng.choice([1, 1, 1, 2, 3]),
        )
        for i in range(count)
    ]
    scenario = replace(scenario, waiting=waiting)
    jobs = scenario.jobs()
    runtime = {job.name: rng.randrange(60, 3600) for job in jobs}
    for job in jobs:
        job.estimated_duration_seconds = runtime[job.name]
    schedule = estimate(snapshot(jobs, scenario))
    quotas = scenario.quota_set()
    workloads = [
        SimWorkload(
            job.name,
            str(job.id),
            0,
            quotas.priority_value(job.priority),
            A100,
            job.resources.gpu_count,
            1,
            4,
            runtime[job.name],
            None,
            WorkloadPhase.SUCCEEDED,
            job.created_at,
            namespace=tenant_namespace(TENANT),
            queue_name=job.queue_name,
            pod_count=job.resources.pod_count,
        )
        for job in jobs
    ]
    started: dict[str, tuple[object, tuple[Placement, ...]]] = {}
    now = NOW
    pace = Pace(startup_seconds=0)
    for _ in range(count * 10):
        due = step(workloads, scenario.node_objects(), quotas, now, pace)
        for w in workloads:
            if w.started_at is not None and w.name not in started:
                started[w.name] = (w.started_at, w.placements)
        if due is None:
            break
        now = due
    for job in jobs:
        plan = schedule.jobs[job.id]
        expected = (plan.start, plan.placements) if plan.start is not None else None
        assert started.get(job.name) == expected, job.name
        assert expected is not None or NEVER_FITS in plan.warnings, job.name
    assert job_id("j0") == jobs[0].id


def test_many_small_jobs_on_one_node_all_get_a_start() -> None:
    """Regression: lanes compacted in the middle of a cycle lost track of waiting jobs."""
    scenario = Scenario(
        "small",
        [("n1", A100, 8)],
        [q("cq", 8)],
        waiting=[W(f"w{i}", "cq", 1, age=i) for i in range(72)],
    )
    jobs = jobs_of(scenario, **{f"w{i}": 60 for i in range(72)})
    schedule = estimate(snapshot(list(jobs.values()), scenario))
    planned = [schedule.jobs[j.id].start for j in jobs.values()]
    starts = sorted(s for s in planned if s is not None)
    assert len(starts) == len(planned)
    assert starts[0] == NOW and starts[-1] == NOW + timedelta(minutes=8)


def test_a_real_clusters_node_only_placement_still_holds_its_gpus() -> None:
    """A real cluster tells the node a job runs on, not its devices: the estimator takes that
    many of the node's GPUs as busy (and the flavor the node belongs to), so what waits for
    them waits until the job ends, and the timeline shows it on that node's GPUs."""
    from domain.model.job import Placement

    scenario = replace(
        TWO_NODES,
        running=[W("r1", "cq", 8, node="n1"), W("r2", "cq", 8, node="n2", age=1)],
        waiting=[W("w1", "cq", 8)],
    )
    jobs = jobs_of(scenario, r1=3600, r2=7200, w1=600)
    for name in ("r1", "r2"):
        placement = jobs[name].placement
        assert placement is not None
        jobs[name].placements = (Placement(node=placement.node),)  # the node only
    started = NOW - timedelta(minutes=30)
    plan = estimate(snapshot(list(jobs.values()))).jobs
    assert plan[jobs["w1"].id].start == started + timedelta(hours=1)  # not now: n1 is busy
    r1 = plan[jobs["r1"].id].placements
    assert [(p.node, p.gpu_indices) for p in r1] == [("n1", tuple(range(8)))]
    assert r1[0].flavor is not None


def test_start_up_is_in_every_estimate_and_adds_up_wave_after_wave() -> None:
    """Issue 11: on the embedded cluster every estimate was early by the start-up time, and by
    one start-up more for each wave of the queue (2.1, 3.7, 5.3 ... s measured). A job admitted
    at t runs from t + start-up (learned per job type) and holds its GPUs from t."""
    one_node = Scenario("one node", [("n1", A100, 8)], [q("cq", 8)])
    scenario = replace(
        one_node, waiting=[W("w1", "cq", 8), W("w2", "cq", 8, age=1), W("w3", "cq", 8, age=2)]
    )
    jobs = jobs_of(scenario, w1=600, w2=600, w3=600)
    for job in jobs.values():
        job.job_type = JobType.BATCH
    learned = Durations(startup={JobType.BATCH: 30.0, JobType.TRAINING: 300.0})
    schedule = estimate(snapshot(list(jobs.values()), one_node, durations=learned))
    plan = {name: schedule.jobs[job.id] for name, job in jobs.items()}
    wave = timedelta(seconds=30 + 600)
    for n, name in enumerate(("w1", "w2", "w3")):
        assert plan[name].start == NOW + n * wave + timedelta(seconds=30)
        assert plan[name].end == NOW + (n + 1) * wave
    assert plan["w1"].reason == "admitted now"
    # its GPUs were held from its admission: nothing else fitted during w1's start-up
    assert schedule.free_gpus[A100][0] == (NOW, 0)

    unlearned = estimate(snapshot(list(jobs.values()), one_node)).jobs
    assert unlearned[jobs["w2"].id].start == NOW + timedelta(seconds=600)


def test_an_admitted_job_still_starting_up_ends_after_its_start_up() -> None:
    one_node = Scenario("one node", [("n1", A100, 8)], [q("cq", 8)])
    scenario = replace(one_node, running=[W("s", "cq", 8, node="n1")])
    jobs = jobs_of(scenario, s=600)
    starting = jobs["s"]
    starting.status, starting.actual_start = JobStatus.ADMITTED, None
    starting.updated_at = NOW - timedelta(seconds=10)  # admitted 10 s ago, start-up 30 s
    learned = Durations(startup={starting.job_type: 30.0})
    plan = estimate(snapshot([starting], one_node, durations=learned)).jobs[starting.id]
    assert plan.end == NOW + timedelta(seconds=20 + 600)


def test_a_job_with_no_start_says_what_holds_its_gpus_with_no_end() -> None:
    """Issue 30: a wide job read "unknown" while a replica that never ends held a GPU it
    needed, and no reason named the replica. Its reason names what holds GPUs of its type
    with no end: the job's own tenant's by name, another tenant's only counted."""
    scenario = replace(
        TWO_NODES,
        nodes=[("n1", A100, 8)],
        queues=[q("cq", 8)],
        running=[W("replica-0", "cq", 1, node="n1")],
        waiting=[W("wide", "cq", 8)],
    )
    jobs = jobs_of(scenario, wide=600)
    jobs["replica-0"].job_type = JobType.SERVICE
    plan = estimate(snapshot(list(jobs.values()), scenario)).jobs[jobs["wide"].id]
    assert plan.start is None and NEVER_FITS not in plan.warnings
    assert plan.reason.endswith(
        "no start within 60 days: 1 GPUs of nvidia-a100-80gb are held with no end by "
        "replica-0 (service)"
    )
    jobs["replica-0"].tenant_id = TenantId(uuid.uuid4())
    plan = estimate(snapshot(list(jobs.values()), scenario)).jobs[jobs["wide"].id]
    assert "replica-0" not in plan.reason
    assert plan.reason.endswith("held with no end by 1 of other tenants")


def test_a_retry_queues_behind_what_queued_before_it() -> None:
    """Issue 30: a failed attempt's retry is a new workload, handed over after its backoff:
    Kueue orders it by that, behind the jobs that queued meanwhile (the estimate kept its
    original place)."""
    scenario = replace(
        TWO_NODES,
        nodes=[("n1", A100, 8)],
        queues=[q("cq", 8)],
        running=[W("busy", "cq", 8, node="n1")],
        waiting=[W("retried", "cq", 8), W("later", "cq", 8, age=600)],
    )
    jobs = jobs_of(scenario, busy=3600, retried=3600, later=3600)
    retried = jobs["retried"]
    retried.attempt, retried.next_attempt_at = 1, jobs["later"].created_at + timedelta(minutes=5)
    schedule = estimate(snapshot(list(jobs.values()), scenario))
    starts = {name: schedule.jobs[jobs[name].id].start for name in ("retried", "later")}
    assert starts["later"] is not None and starts["retried"] is not None
    assert starts["later"] < starts["retried"]
    retried.attempt = 0  # a first attempt keeps its submission's place
    retried.next_attempt_at = None
    schedule = estimate(snapshot(list(jobs.values()), scenario))
    first, second = schedule.jobs[retried.id].start, schedule.jobs[jobs["later"].id].start
    assert first is not None and second is not None and first < second


def test_a_job_whose_attempts_often_fail_is_expected_to_give_its_gpus_back_sooner() -> None:
    """Issue 30: the estimate held a running job's GPUs for its whole run even where its kind
    of attempt fails half the time, two hours in (then its GPUs come back and its retry
    queues behind what waits): what waits behind it was estimated too late."""
    scenario = replace(
        TWO_NODES,
        nodes=[("n1", A100, 8)],
        queues=[q("cq", 8)],
        running=[W("flaky", "cq", 8, node="n1")],
        waiting=[W("next", "cq", 8)],
    )
    jobs = jobs_of(scenario, flaky=4 * 3600, next=3600)

    def record(seconds: float, failed: bool) -> RunRecord:
        return RunRecord(TENANT, "flaky", JobType.TRAINING, A100, 8, seconds, failed=failed)

    past = [record(4 * 3600, False)] * 20 + [record(2 * 3600, True)] * 20
    plain = estimate(snapshot(list(jobs.values()), scenario)).jobs[jobs["next"].id].start
    learned = Durations(History(past))
    flaky = estimate(snapshot(list(jobs.values()), scenario, durations=learned))
    start = flaky.jobs[jobs["next"].id].start
    assert plain is not None and start is not None
    ran = NOW - (jobs["flaky"].actual_start or NOW)
    assert plain == NOW + timedelta(hours=4) - ran
    # half the time 4 h, half 2 h: 3 h in expectation
    assert abs((start - (NOW + timedelta(hours=3) - ran)).total_seconds()) < 5 * 60
