"""The fleet replay benchmark (benchmarks/fleet_replay.py) on tiny made-up traces and fleets.

Covers: a member that can never hold a job's pods is skipped (its shape there is the fewest
equal pods of at most a node's GPUs); round-robin takes the members in turn, skipping one too
small; all-at-once queues a copy on every member, the first admitted wins and the others are
withdrawn at that very moment (never two copies admitted, each job started once), counted as
duplicates; the incremental dispatcher nominates in name order, one more batch a round while
no copy is admitted; the estimate dispatcher sends a job to an idle member rather than a full
one (and to the cheaper of two idle ones), records the start it promised, and makes no
duplicates; a balancing pass moves a waiting job once another member frees, never a job that
has used its moves, and no job more than the fleet's `max_moves` times; a higher priority
preempts (counted) and the evicted job runs again after its backoff; the run is deterministic.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from benchmarks.fleet_replay import (
    ALL_AT_ONCE,
    ESTIMATE,
    INCREMENTAL,
    INCREMENTAL_1,
    KUEUE_ROUND,
    ROUND_ROBIN,
    ByEstimate,
    FleetReplay,
    MemberSpec,
    evictions,
    replay_with,
)
from benchmarks.replay import LIMITS, LOGNORMAL, TraceJob, tenant_ids
from domain.model.job import JobPriority

T0 = datetime(2017, 9, 4, 10, 0, tzinfo=UTC)
MINUTE = timedelta(minutes=1)
HOUR = timedelta(hours=1)
TWO = (MemberSpec("a", 1, 8, Decimal("1.00")), MemberSpec("b", 1, 8, Decimal("3.00")))


def job(
    index: int, gpus: int, at: timedelta, runs: timedelta, told: timedelta | None = None
) -> TraceJob:
    """A trace job submitted `at` after T0, running `runs`; its user says `told` (default: the
    truth)."""
    seconds = int(runs.total_seconds())
    estimate = int((told or runs).total_seconds())
    return TraceJob(
        index=index,
        trace_id=f"j{index}",
        submitted=T0 + at,
        asked_gpus=gpus,
        gpus=gpus,
        runtime=seconds,
        estimates={LOGNORMAL: estimate, LIMITS: estimate},
        limit=estimate,
        name=f"philly-{gpus}gpu",
        tenant=tenant_ids(1)[0],
    )


def events(fleet: FleetReplay, what: str) -> list[tuple[datetime, int, str]]:
    return [(at, j, where) for at, kind, j, where in fleet.log if kind == what]


def normal(count: int) -> list[JobPriority]:
    return [JobPriority.NORMAL] * count


def where_admitted(fleet: FleetReplay) -> dict[int, list[str]]:
    found: dict[int, list[str]] = {}
    for _, j, member in events(fleet, "admitted"):
        found.setdefault(j, []).append(member)
    return found


def test_a_member_too_small_for_a_job_never_gets_it() -> None:
    small = MemberSpec("c", 2, 4, Decimal("1.00"))
    wide = job(0, 12, timedelta(0), HOUR)
    shaped = small.shape(wide)
    assert shaped is None  # 3 pods of 4 GPUs, on 2 nodes of 4
    fits = MemberSpec("d", 3, 4, Decimal("1.00")).shape(wide)
    assert fits is not None and (fits.pods, fits.gpus) == (3, 4)
    trace = [job(0, 4, timedelta(0), HOUR), job(1, 4, MINUTE, HOUR), job(2, 8, 2 * MINUTE, HOUR)]
    trace.append(job(3, 4, 3 * MINUTE, HOUR))
    specs = (*TWO, MemberSpec("c", 1, 4, Decimal("1.00")))
    result, fleet, _ = replay_with(ROUND_ROBIN, trace, normal(4), specs=specs)
    # in turn: a, b; c cannot hold 8 GPUs so job 2 goes round to a; then b again
    assert where_admitted(fleet) == {0: ["a"], 1: ["b"], 2: ["a"], 3: ["b"]}
    assert result.duplicates == 0 and result.started_on == {"a": 2, "b": 2, "c": 0}


def test_round_robin_alternates() -> None:
    trace = [job(i, 4, i * MINUTE, HOUR) for i in range(5)]
    _, fleet, _ = replay_with(ROUND_ROBIN, trace, normal(5), specs=TWO)
    assert where_admitted(fleet) == {0: ["a"], 1: ["b"], 2: ["a"], 3: ["b"], 4: ["a"]}


def test_all_at_once_first_admitted_wins_and_the_other_copies_go_at_that_moment() -> None:
    trace = [
        job(0, 8, timedelta(0), 2 * HOUR),
        job(1, 8, 10 * MINUTE, HOUR),
        job(2, 8, 20 * MINUTE, HOUR),  # both full: waits for job 1's end on b
    ]
    result, fleet, _ = replay_with(ALL_AT_ONCE, trace, normal(3), specs=TWO)
    admitted = where_admitted(fleet)
    assert admitted == {0: ["a"], 1: ["b"], 2: ["b"]}  # each once: never two copies admitted
    assert sorted(j for _, j, _ in events(fleet, "started")) == [0, 1, 2]
    when = {j: at for at, j, _ in events(fleet, "admitted")}
    withdrawn = {j: (at, member) for at, j, member in events(fleet, "withdrawn")}
    assert withdrawn == {0: (T0, "b"), 1: (T0 + 10 * MINUTE, "a"), 2: (when[2], "a")}
    assert when[2] == T0 + 70 * MINUTE  # job 1's end
    assert (result.duplicates, result.withdrawn, result.preemptions) == (3, 3, 0)
    assert result.errors is None


def test_incremental_nominates_in_name_order_a_batch_a_round() -> None:
    trace = [job(0, 8, timedelta(0), 3 * HOUR), job(1, 8, MINUTE, HOUR)]
    one, fleet, _ = replay_with(INCREMENTAL_1, trace, normal(2), specs=TWO)
    # job 1: a (first by name) is full; b is nominated a round later and admits it at once
    assert where_admitted(fleet)[1] == ["b"]
    assert fleet.started[1] == T0 + MINUTE + KUEUE_ROUND
    assert events(fleet, "withdrawn") == [(T0 + MINUTE + KUEUE_ROUND, 1, "a")]
    assert one.duplicates == 1  # job 0 was admitted on a before b was ever nominated
    three, fleet, _ = replay_with(INCREMENTAL, trace, normal(2), specs=TWO)
    assert fleet.started[1] == T0 + MINUTE  # batches of 3: every member at once
    assert three.duplicates == 2


def test_estimate_sends_a_job_to_an_idle_member_not_a_full_one() -> None:
    trace = [job(0, 8, timedelta(0), 5 * HOUR), job(1, 8, MINUTE, HOUR)]
    result, fleet, dispatcher = replay_with(ESTIMATE, trace, normal(2), specs=TWO)
    assert isinstance(dispatcher, ByEstimate)
    # job 0: both idle, a is cheaper; job 1: a is full, b (dearer) starts it now
    assert where_admitted(fleet) == {0: ["a"], 1: ["b"]}
    assert dispatcher.estimated == {0: T0, 1: T0 + MINUTE}
    assert fleet.started == dispatcher.estimated
    assert result.errors == [0.0, 0.0]
    assert (result.duplicates, result.moves, result.withdrawn) == (0, 0, 0)


def freeing_trace() -> list[TraceJob]:
    """Job 1 on b is said to take 20 h and takes 1; job 2 then waits on a (free in 10 h, not
    b in 20) until b frees."""
    return [
        job(0, 8, timedelta(0), 10 * HOUR),
        job(1, 8, MINUTE, HOUR, told=20 * HOUR),
        job(2, 8, 2 * MINUTE, HOUR),
    ]


def test_a_balancing_pass_moves_a_waiting_job_when_another_member_frees() -> None:
    result, fleet, dispatcher = replay_with(ESTIMATE, freeing_trace(), normal(3), specs=TWO)
    assert isinstance(dispatcher, ByEstimate)
    assert dispatcher.estimated[2] == T0 + 10 * HOUR  # promised on a, after job 0
    freed = T0 + MINUTE + HOUR
    next_pass = T0 + 65 * MINUTE  # passes every 5 minutes from the first submission
    assert events(fleet, "moved from") == [(next_pass, 2, "a")]
    assert events(fleet, "moved to") == [(next_pass, 2, "b")]
    assert fleet.started[2] == next_pass and next_pass - freed < timedelta(minutes=5)
    assert where_admitted(fleet)[2] == ["b"]
    assert (result.moves, result.duplicates) == (1, 0)
    assert result.errors is not None and result.errors[2] > 8 * 60  # the promise was a's


def test_a_job_that_used_its_moves_stays() -> None:
    trace = freeing_trace()
    fleet = FleetReplay(trace, normal(3), specs=TWO)
    fleet.moves[2] = fleet.fleet.max_moves
    fleet.run(ByEstimate(timedelta(minutes=5)))
    assert events(fleet, "moved to") == []
    assert fleet.started[2] == T0 + 10 * HOUR  # after job 0, on a


def test_no_job_moves_more_than_max_moves_under_churn() -> None:
    rng = random.Random(7)
    trace = [
        job(
            i,
            rng.choice((4, 8)),
            timedelta(minutes=rng.uniform(0, 240)),
            timedelta(minutes=rng.uniform(5, 300)),
            told=timedelta(minutes=rng.uniform(5, 600)),
        )
        for i in range(40)
    ]
    trace.sort(key=lambda tj: tj.submitted)
    trace = [replace(tj, index=i, trace_id=f"j{i}") for i, tj in enumerate(trace)]
    specs = (*TWO, MemberSpec("c", 1, 4, Decimal("2.00")))
    priorities: Sequence[JobPriority] = [
        rng.choice((JobPriority.HIGH, JobPriority.NORMAL, JobPriority.LOW)) for _ in trace
    ]
    result, fleet, _ = replay_with(ESTIMATE, trace, priorities, specs=specs)
    assert fleet.moves and max(fleet.moves.values()) <= fleet.fleet.max_moves  # never passed
    assert result.duplicates == 0 and result.withdrawn == 0
    again, _, _ = replay_with(ESTIMATE, trace, priorities, specs=specs)
    assert again.waits == result.waits and again.moves == result.moves


def test_a_higher_priority_preempts_and_the_evicted_job_runs_again() -> None:
    trace = [job(0, 8, timedelta(0), 5 * HOUR), job(1, 8, 10 * MINUTE, HOUR)]
    one = (MemberSpec("a", 1, 8, Decimal("1.00")),)
    result, fleet, _ = replay_with(
        ROUND_ROBIN, trace, [JobPriority.LOW, JobPriority.HIGH], specs=one
    )
    assert events(fleet, "preempted") == [(T0 + 10 * MINUTE, 0, "a")]
    assert result.preemptions == 1 and result.evicted_runs == [(0, 0)]  # job 0's first run
    assert evictions(result.evicted_runs, [JobPriority.LOW, JobPriority.HIGH]) == (
        "HIGH 0, NORMAL 0, LOW 1; attempt 1: 1, 2: 0, 3 or later: 0; 1 job evicted, one at most 1 times"
    )
    assert fleet.started == {0: T0, 1: T0 + 10 * MINUTE}  # the first start is the one scored
    assert fleet.ended[0] == T0 + 10 * MINUTE + HOUR + 5 * HOUR  # run again, whole, after job 1
    assert result.waits == [0.0, 0.0]
