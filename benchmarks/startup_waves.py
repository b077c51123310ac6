"""Start estimates wave after wave on the embedded cluster: how early (or late) is the start
shown at submission, for the 1st, 2nd, ... wave of a queue of 8-GPU jobs?

One embedded API process (SQLite in a fresh data dir; its simulated cluster, `--nodes`, with its
pods' start-up of 2 s) first runs a warm-up wave (so there are start-ups to learn from), then
submits `--waves` waves at once, each as many 8-GPU jobs of `--runtime` seconds as the cluster
has 8-GPU nodes. When all have run, it prints per wave the mean of (actual start - the start
estimated at submission): positive is an estimate that was early.

    .venv/bin/python -m benchmarks.startup_waves [--waves 5] [--runtime 5]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from benchmarks.event_to_screen import (
    Http,
    embedded_cluster_id,
    free_port,
    job_input,
    revision,
    start_server,
)

NODES = "2x8xnvidia-a100-80gb"
SUBMIT = "mutation($input: SubmitJobInput!) { submitJob(input: $input) { ... on Job { id } } }"
READ = """query($id: ID!) { job(id: $id) { status actualStart submissionEstimate { start } } }"""


def parse_time(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def submit(api: Http, cluster_id: str, count: int, runtime: int) -> list[str]:
    ids = []
    for _ in range(count):
        answer = api.post(SUBMIT, {"input": job_input(cluster_id, 8, runtime)})
        ids.append(answer["data"]["submitJob"]["id"])
    return ids


def wait_done(api: Http, ids: list[str], timeout: float) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout
    while True:
        api.fresh()
        jobs = [api.post(READ, {"id": i})["data"]["job"] for i in ids]
        if all(j["status"] == "COMPLETED" for j in jobs):
            return jobs
        if time.monotonic() > deadline:
            raise SystemExit(f"not all completed: {[j['status'] for j in jobs]}")
        time.sleep(0.5)


def run(args: argparse.Namespace) -> int:
    data_dir = Path(tempfile.mkdtemp(prefix="budcluster-waves-"))
    port = free_port()
    env = {"BUDCLUSTER_LOG_LEVEL": "WARNING", "BUDCLUSTER_SIM_NODES": NODES}
    server = start_server(data_dir, port, env, None)
    print(f"code: {revision()}; cluster {NODES}, start-up 2 s", flush=True)
    try:
        server.wait_healthy()
        api = Http(port, server.token())
        api.fresh()
        cluster_id = embedded_cluster_id(api)
        per_wave = int(NODES.split("x")[0])
        wait_done(api, submit(api, cluster_id, per_wave, args.runtime), 120)  # warm-up
        time.sleep(1)  # the timeline learns from it
        api.fresh()
        ids = submit(api, cluster_id, per_wave * args.waves, args.runtime)
        jobs = wait_done(api, ids, 60 + args.waves * (args.runtime + 5) * 2)
        print("wave  early by (s, mean of its jobs)")
        for wave in range(args.waves):
            errors = [
                (
                    parse_time(j["actualStart"]) - parse_time(j["submissionEstimate"]["start"])
                ).total_seconds()
                for j in jobs[wave * per_wave : (wave + 1) * per_wave]
            ]
            print(f"{wave + 1:>4}  {statistics.mean(errors):+.1f}")
        return 0
    finally:
        server.stop()


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--waves", type=int, default=5)
    p.add_argument("--runtime", type=int, default=5)
    return run(p.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
