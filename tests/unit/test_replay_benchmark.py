"""The trace replay benchmark (benchmarks/replay.py) on a small made-up trace: every job runs,
the simulated cluster agrees with the estimator when run times are exact and nothing is submitted
later, wide jobs are capped or skipped, and the run is deterministic."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

from benchmarks.replay import ORACLE, QUEUE_RATE, USER, Trace, load_trace, make_nodes, replay


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
    assert load(path, seed=4).jobs[0].user_estimate != trace.jobs[0].user_estimate
    assert len(outcome.estimated[USER]) == 5
