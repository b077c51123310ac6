"""Where a fleet job goes (`domain.scheduling.dispatch`) and how a job moves (`Job.move`).

Covers: the soonest start wins; ties (to the second, and every start already past) go to the
lower cost, then the less loaded member, then the member named first; members that cannot take
the job are left out; with a deadline, the cheapest member that meets it at the window's latest
start wins, else the soonest; a move needs the threshold and a start before the earliest of the
window its own member gives the job (without one: a fifth of the wait), or no start where the
job is; a deadline job stays where it meets its deadline; a move of a QUEUED job is a new
hand-over of the same attempt that withdraws its copy first, said on both clusters' streams, and
a job that is not waiting or not a fleet's does not move.
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from decimal import Decimal

import pytest

from domain.errors import FieldIssue, InvalidTransition
from domain.model.ids import ClusterId, FleetId, JobId, ProjectId, TenantId
from domain.model.job import ChangeKind, DeploymentType, Job, JobStatus, JobType
from domain.scheduling.dispatch import Offer, move_to, rank
from tests.support.fakes import T0

A, B, C = (ClusterId(uuid.UUID(int=i)) for i in (1, 2, 3))
HOUR = timedelta(hours=1)


def offer(cluster: ClusterId, start_in: timedelta | None, **more: object) -> Offer:
    name = {A: "a", B: "b", C: "c"}[cluster]
    start = None if start_in is None else T0 + start_in
    end = None if start is None else start + HOUR
    return Offer(cluster, name, start=start, end=end, **more)  # type: ignore[arg-type]


def names(offers: list[Offer]) -> list[str]:
    return [o.name for o in offers]


def test_the_soonest_start_wins_and_no_start_comes_last() -> None:
    ranked = rank([offer(A, 2 * HOUR), offer(B, None), offer(C, HOUR)], T0)
    assert names(ranked) == ["c", "a", "b"]


def test_ties_go_to_cost_then_load_then_the_order_given() -> None:
    cheap, dear = Decimal("1.00"), Decimal("3.00")
    now_all = [
        offer(A, timedelta(0), cost=dear),
        offer(B, -HOUR, cost=cheap, load=0.9),  # a start already past is now
        offer(C, timedelta(milliseconds=300), cost=cheap, load=0.1),  # the same second
    ]
    assert names(rank(now_all, T0)) == ["c", "b", "a"]
    equal = [offer(A, HOUR, cost=cheap), offer(B, HOUR, cost=cheap)]
    assert names(rank(equal, T0)) == ["a", "b"]
    assert names(rank(list(reversed(equal)), T0)) == ["b", "a"]


def test_members_that_cannot_take_the_job_are_left_out() -> None:
    problem = FieldIssue("resources.gpu_type", "cluster b has no such GPUs", "UNKNOWN_GPU_TYPE")
    ranked = rank([offer(A, 3 * HOUR), offer(B, timedelta(0), refused=(problem,))], T0)
    assert names(ranked) == ["a"]
    assert rank([offer(B, None, refused=(problem,))], T0) == []


def test_with_a_deadline_the_cheapest_member_that_meets_it_wins() -> None:
    deadline = T0 + 4 * HOUR
    soon_dear = offer(A, timedelta(0), cost=Decimal(9), window=(T0, T0 + HOUR))
    late_cheap = offer(B, 2 * HOUR, cost=Decimal(2), window=(T0 + HOUR, T0 + 2 * HOUR))
    too_late = offer(C, 2 * HOUR, cost=Decimal(1), window=(T0 + HOUR, T0 + 3.5 * HOUR))
    ranked = rank([soon_dear, late_cheap, too_late], T0, deadline=deadline)
    assert names(ranked) == ["b", "a", "c"]  # c would end past it at its window's latest
    unbounded = offer(B, timedelta(0), cost=Decimal(1), window=(T0, None))
    assert names(rank([soon_dear, unbounded], T0, deadline=deadline)) == ["a", "b"]
    missing = offer(A, timedelta(0), cost=Decimal(1), warnings=("MISSES_DEADLINE",))
    assert not missing.ends_by(deadline)


def test_without_a_window_the_estimate_itself_must_meet_the_deadline() -> None:
    deadline = T0 + 2 * HOUR
    assert offer(A, HOUR).ends_by(deadline)
    assert not offer(A, HOUR + timedelta(seconds=1)).ends_by(deadline)
    assert not offer(A, None).ends_by(deadline)


@pytest.mark.parametrize(
    ("here", "there", "moves"),
    [
        (HOUR, timedelta(0), True),  # an hour sooner: more than 10 min and a fifth of an hour
        (HOUR, timedelta(minutes=55), False),  # 5 minutes: under the threshold
        (10 * HOUR, 9 * HOUR, False),  # an hour, but under a fifth of ten hours
        (10 * HOUR, 7 * HOUR, True),  # three hours of ten
        (None, 5 * HOUR, True),  # nothing starts it where it is
        (HOUR, None, False),  # nothing starts it there either
        (timedelta(0), timedelta(0), False),
    ],
)
def test_a_move_must_gain_the_threshold_and_a_fifth_of_the_wait(
    here: timedelta | None, there: timedelta | None, moves: bool
) -> None:
    current = offer(A, here)
    ranked = rank([offer(B, there), current], T0)
    target = move_to(current, ranked, T0, threshold=timedelta(minutes=10))
    assert (target is not None) is moves
    if target is not None:
        assert target.cluster_id == B


def test_with_a_window_a_move_must_beat_the_earliest_its_own_member_might_start_it() -> None:
    # its own member's record says its start may come 3 h before the estimate of 10 h
    current = offer(A, 10 * HOUR, window=(T0 + 7 * HOUR, T0 + 14 * HOUR))
    threshold = timedelta(minutes=10)
    inside = offer(B, 7.5 * HOUR)  # 2.5 h sooner, over a fifth of the wait: not enough
    assert move_to(current, [inside, current], T0, threshold=threshold) is None
    beyond = offer(B, 6 * HOUR)
    assert move_to(current, [beyond, current], T0, threshold=threshold) == beyond
    near = offer(A, HOUR, window=(T0 + timedelta(minutes=55), T0 + 2 * HOUR))
    barely = offer(B, timedelta(minutes=52))  # before the window, but under the threshold
    assert move_to(near, [barely, near], T0, threshold=threshold) is None


def test_a_deadline_job_stays_where_it_meets_its_deadline_and_moves_where_it_would() -> None:
    deadline = T0 + 3 * HOUR
    current = offer(A, HOUR)  # ends at 2 h: meets it
    sooner = offer(B, timedelta(0))
    assert (
        move_to(current, [sooner, current], T0, threshold=timedelta(0), deadline=deadline) is None
    )
    late = offer(A, 2.5 * HOUR)  # ends at 3.5 h
    meets = offer(B, 1.5 * HOUR)  # one hour sooner, under a fifth? no: it meets the deadline
    target = move_to(late, [meets, late], T0, threshold=timedelta(hours=5), deadline=deadline)
    assert target is not None and target.cluster_id == B


def fleet_job(status: JobStatus = JobStatus.QUEUED) -> Job:
    return Job(
        id=JobId(uuid.uuid4()),
        name="train",
        tenant_id=TenantId(uuid.uuid4()),
        project_id=ProjectId(uuid.uuid4()),
        cluster_id=A,
        job_type=JobType.TRAINING,
        deployment_type=DeploymentType.DOCKER,
        created_at=T0,
        updated_at=T0,
        status=status,
        fleet_id=FleetId(uuid.uuid4()),
        estimated_start=T0 + HOUR,
        estimate_reason="waits",
    )


def test_a_queued_job_moves_as_a_new_hand_over_that_withdraws_its_copy() -> None:
    job = fleet_job()
    workload = job.workload_name
    origin = job.move(B, "starts sooner on b", T0 + HOUR)
    assert origin == A
    assert (job.cluster_id, job.status, job.attempt, job.moves) == (B, JobStatus.PENDING, 0, 1)
    assert job.withdraw_from == A and job.workload_name != workload
    assert job.estimated_start is None and job.estimate_reason is None
    kinds = [(c.kind, c.cluster_id) for c in job.changes]
    assert kinds == [
        (ChangeKind.TRANSITION, A),  # QUEUED -> PENDING, on the cluster it leaves
        (ChangeKind.MOVED, A),
        (ChangeKind.MOVED, B),
    ]
    recorded = [c.move for c in job.changes if c.move is not None]
    assert [(m.from_cluster, m.to_cluster) for m in recorded] == [(A, B)]  # recorded once


def test_a_pending_job_has_no_copy_to_withdraw_and_one_left_unwithdrawn_stays_owed() -> None:
    job = fleet_job(JobStatus.PENDING)
    job.move(B, "its cluster is NOT_AVAILABLE", T0)
    assert job.withdraw_from is None
    queued = fleet_job()
    queued.move(B, "lost", T0, withdraw=False)  # its member does not answer
    assert queued.withdraw_from is None
    owed = fleet_job()
    owed.move(B, "sooner", T0)
    owed.move(C, "sooner still", T0)  # never handed to b: a's copy is still to withdraw
    assert (owed.cluster_id, owed.withdraw_from, owed.moves) == (C, A, 2)


@pytest.mark.parametrize("status", [JobStatus.ADMITTED, JobStatus.RUNNING, JobStatus.COMPLETED])
def test_only_a_waiting_fleet_job_moves(status: JobStatus) -> None:
    with pytest.raises(InvalidTransition):
        fleet_job(status).move(B, "no", T0)
    lone = fleet_job()
    lone.fleet_id = None
    with pytest.raises(InvalidTransition):
        lone.move(B, "no", T0)
