"""The trace replay benchmark (benchmarks/replay.py) on a small made-up trace: every job runs,
the simulated cluster agrees with the estimator when run times are exact and nothing is submitted
later, wide jobs run as pod sets over several nodes (or are capped or skipped), and the run is
deterministic."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

from benchmarks.replay import (
    COMMON_LIMIT_HOURS,
    HISTORY,
    LEADS,
    LIMITS,
    LOGNORMAL,
    ORACLE,
    QUEUE_RATE,
    Trace,
    actual_starts,
    as_given,
    corrected,
    load_trace,
    make_nodes,
    pod_shape,
    probes_for,
    replay,
    requested_limit,
)


def write_trace(tmp_path: Path) -> str:
    rows = [
        {"id": "a_1", "num_gpus": 8, "runtime": 60.0, "submitted_time": "2017-09-04 10:00:00"},
        {"id": "a_2", "num_gpus": 8, "runtime": 30.0, "submitted_time": "2017-09-04 10:00:00"},
        {"id": "a_3", "num_gpus": 4, "runtime": 10.0, "submitted_time": "2017-09-04 10:05:00"},
        {"id": "a_4", "num_gpus": 16, "runtime": 20.0, "submitted_time": "2017-09-04 10:06:00"},
        {"id": "a_5", "num_gpus": 4, "runtime": 15.0, "submitted_time": "2017-09-04 10:07:00"},
    ]
    path = tmp_path / "trace.json"
    path.write_text(json.dumps([{**r, "attempts": []} for r in rows]))
    return str(path)


def load(path: str, wide: str = "cap", seed: int = 3) -> Trace:
    """`cap` by default: these runs are on one node, which a pod set of two cannot use."""
    return load_trace(
        path,
        limit=None,
        gpus_per_node=8,
        wide=wide,
        sigma=0.5,
        seed=seed,
        names="size",
        tenants=1,
    )


def test_replay_on_one_node(tmp_path: Path) -> None:
    path = write_trace(tmp_path)
    trace = load(path)
    assert (trace.capped, trace.skipped, len(trace.jobs)) == (1, 0, 5)
    assert trace.jobs[3].gpus == 8
    assert load(path, wide="skip").skipped == 1
    outcome = replay(trace.jobs, make_nodes(1, 8), timedelta(hours=6))
    start = trace.jobs[0].submitted
    assert outcome.started[0] == start  # the node is free
    assert outcome.started[1] == start + timedelta(minutes=60)  # after a_1
    # nothing later passes the first two, so their oracle estimates are exact
    assert outcome.estimated[ORACLE][:2] == outcome.started[:2]
    assert outcome.estimated[QUEUE_RATE][0] == start
    again = replay(load(path).jobs, make_nodes(1, 8), timedelta(hours=6))
    assert again.estimated == outcome.estimated
    other = load(path, seed=4).jobs[0].estimates
    assert other[LOGNORMAL] != trace.jobs[0].estimates[LOGNORMAL]
    for name in (as_given(LOGNORMAL), corrected(LIMITS), HISTORY, QUEUE_RATE):
        assert len(outcome.estimated[name]) == 5
    # a requested limit is one of the common values, whatever the run time
    for tj in trace.jobs:
        assert tj.estimates[LIMITS] // 3600 in COMMON_LIMIT_HOURS


def test_requested_limits_round_up_to_common_values() -> None:
    assert requested_limit(1) == 3600
    assert requested_limit(3600) == 3600
    assert requested_limit(3601) == 2 * 3600
    assert requested_limit(30 * 3600) == 48 * 3600
    assert requested_limit(800 * 3600) == 1440 * 3600


def test_the_learned_ratio_corrects_over_stated_limits(tmp_path: Path) -> None:
    # ten 8-GPU jobs of one hour, submitted one after the other to one node: each waits for all
    # before it. Users ask for 4-hour limits (this trace's every limit is over-stated); as runs
    # finish the learned ratio takes the waits close to the truth, the limits as given do not.
    rows = [
        {"id": f"b_{i}", "num_gpus": 8, "runtime": 60.0, "submitted_time": "2017-09-04 10:00:00"}
        for i in range(10)
    ]
    path = tmp_path / "trace.json"
    path.write_text(json.dumps([{**r, "attempts": []} for r in rows]))
    jobs = [
        replace(
            tj,
            estimates={**tj.estimates, LIMITS: 4 * 3600},
            submitted=tj.submitted + timedelta(minutes=0 if i < 5 else 145 + i),
        )
        for i, tj in enumerate(load(str(path)).jobs)
    ]
    outcome = replay(jobs, make_nodes(1, 8), timedelta(hours=6), (LIMITS,))

    def error(name: str, i: int) -> float:
        est = outcome.estimated[name][i]
        assert est is not None
        return abs((outcome.started[i] - est).total_seconds())

    # the last job, submitted when two have finished: 4 waits ahead
    assert error(as_given(LIMITS), 9) > 4 * 3600
    assert error(corrected(LIMITS), 9) < error(as_given(LIMITS), 9) / 3


def test_failed_attempts_are_retried_after_the_backoff_and_start_up_is_paid(
    tmp_path: Path,
) -> None:
    """The actual side has what a real cluster has: the trace's failed attempts, each retried
    after the service's backoff (behind what queued meanwhile), and pod start-up."""
    rows = [
        {
            "id": "c_1",
            "num_gpus": 8,
            "runtime": 40.0,
            "submitted_time": "2017-09-04 10:00:00",
            "attempts": [
                {"start_time": "2017-09-04 10:00:00", "end_time": "2017-09-04 10:10:00"},
                {"start_time": "2017-09-04 10:10:10", "end_time": "2017-09-04 10:40:10"},
            ],
        },
        {
            "id": "c_2",
            "num_gpus": 8,
            "runtime": 20.0,
            "submitted_time": "2017-09-04 10:00:00",
            "attempts": [],
        },
    ]
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(rows))
    trace = load(str(path))
    assert trace.jobs[0].runs == (600, 1800) and trace.jobs[0].runtime == 2400
    assert trace.jobs[1].runs == (1200,)
    outcome = replay(trace.jobs, make_nodes(1, 8), timedelta(hours=6), (LIMITS,), 30.0)
    start = trace.jobs[0].submitted
    assert outcome.failures == 1
    assert outcome.started[0] == start + timedelta(seconds=30)  # its first attempt, started up
    # the first attempt failed at 10:10:30; the second job took the node meanwhile
    assert outcome.started[1] == start + timedelta(minutes=10, seconds=60)
    assert outcome.ended[1] == start + timedelta(minutes=30, seconds=60)
    assert outcome.ended[0] == start + timedelta(minutes=61, seconds=30)


def test_a_job_wider_than_a_node_runs_as_a_pod_set(tmp_path: Path) -> None:
    assert [pod_shape(g, 8) for g in (4, 8, 12, 16, 24, 128, 11)] == [1, 1, 2, 2, 3, 16, 11]
    trace = load(write_trace(tmp_path), wide="pods")
    wide = trace.jobs[3]
    assert (trace.pod_sets, trace.capped, wide.pods, wide.gpus, wide.total_gpus) == (1, 0, 2, 8, 16)
    outcome = replay(trace.jobs, make_nodes(2, 8), timedelta(hours=6))
    start = trace.jobs[0].submitted
    # a_1 (60 min) and a_2 (30 min) hold both nodes; the 16-GPU job needs both at once: it
    # starts when a_1 ends, not when a_2 does, and a_3 (4 GPUs, earlier) runs on a_2's node
    assert outcome.started[2] == start + timedelta(minutes=30)
    assert outcome.started[3] == start + timedelta(minutes=60)
    assert outcome.estimated[ORACLE][3] == outcome.started[3]


def test_estimates_are_asked_again_before_each_actual_start(tmp_path: Path) -> None:
    """`--converge`: a pass of the cluster alone gives the actual starts; the replay asks each
    probed estimator again at 24 h, 6 h, 1 h and 10 min before each start while the job waits,
    and scores those estimates. With exact run times and nothing submitted later, the oracle
    is exact at every probe; a job that starts at its submission is never probed."""
    rows = [
        {"id": f"d_{i}", "num_gpus": 8, "runtime": 600.0, "submitted_time": "2017-09-04 10:00:00"}
        for i in range(4)
    ]
    path = tmp_path / "trace.json"
    path.write_text(json.dumps([{**r, "attempts": []} for r in rows]))
    jobs = load(str(path)).jobs
    nodes = make_nodes(1, 8)
    started = actual_starts(jobs, nodes)
    assert [(s - started[0]).total_seconds() / 3600 for s in started] == [0, 10, 20, 30]
    probes = probes_for(jobs, started)
    # the job starting 30 h after submission is probed at all four leads, those at 10 and 20 h
    # at three (24 h before, they were not yet submitted), the first never
    assert [(p.job, LEADS[p.lead]) for p in probes if p.job == 3] == [(3, lead) for lead in LEADS]
    assert sum(1 for p in probes if p.job == 2) == sum(1 for p in probes if p.job == 1) == 3
    assert all(p.job != 0 for p in probes)
    outcome = replay(
        jobs, nodes, timedelta(hours=6), (LOGNORMAL,), probes=probes,
        probing=(ORACLE, corrected(LOGNORMAL)),
    )  # fmt: skip
    assert outcome.started == started
    oracle = outcome.probed[ORACLE]
    assert [len(found) for found in oracle] == [1, 3, 3, 3]
    assert all(p.error == 0 for found in oracle for p in found)
    assert {p.job for p in oracle[LEADS.index(timedelta(hours=24))]} == {3}
    assert [len(found) for found in outcome.probed[corrected(LOGNORMAL)]] == [1, 3, 3, 3]
