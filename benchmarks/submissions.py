"""Submissions per second, and how soon the schedule shows the last of them.

One embedded API process (`python -m budcluster serve`, SQLite in a fresh temporary data dir,
pinned to CPU 0 with `--pin`, the default) and its simulated cluster (16 A100s). First
`--queued` jobs of one A100 each, running for an hour, are submitted (so that 16 run and the rest
queue); then `--burst` more are submitted as fast as `--clients` HTTP connections (threads of
this driver, on the other CPU) can send them, each waiting for its answer before the next. The
rate is the burst's jobs divided by the time from its first request to its last answer. Then
the driver polls the last job's `estimate` until it has a start: the time from the last answer
to that moment is how far the live schedule lagged the submissions.

    .venv/bin/python -m benchmarks.submissions [--queued 1000] [--burst 300] [--clients 4]
        [--no-pin]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from benchmarks.event_to_screen import (
    Http,
    cpu_seconds,
    embedded_cluster_id,
    free_port,
    job_input,
    revision,
    split_cpus,
    start_server,
)

SUBMIT = "mutation($input: SubmitJobInput!) { submitJob(input: $input) { ... on Job { id } } }"
ESTIMATE = "query($id: ID!) { job(id: $id) { estimate { start } } }"
HOUR = 3600


def submit_all(port: int, token: str, cluster_id: str, count: int, clients: int) -> list[float]:
    """Submit `count` jobs over `clients` connections; the latency of each answer (s)."""
    latencies: list[float] = []
    lock = threading.Lock()
    left = [count]

    def client() -> None:
        api = Http(port, token)
        api.fresh()
        try:
            while True:
                with lock:
                    if left[0] == 0:
                        return
                    left[0] -= 1
                began = time.perf_counter()
                answer = api.post(SUBMIT, {"input": job_input(cluster_id, 1, HOUR)})
                assert answer["data"]["submitJob"]["id"]
                with lock:
                    latencies.append(time.perf_counter() - began)
        finally:
            api.close()

    threads = [threading.Thread(target=client) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return latencies


def run(args: argparse.Namespace) -> int:
    server_cpus, driver_cpus, sharing = split_cpus(args.pin)
    if driver_cpus:
        os.sched_setaffinity(0, driver_cpus)
    data_dir = Path(tempfile.mkdtemp(prefix="budcluster-submissions-"))
    port = free_port()
    env = {"BUDCLUSTER_LOG_LEVEL": "WARNING"}
    server = start_server(data_dir, port, env, server_cpus)
    print(f"code: {revision()}; {sharing}", flush=True)
    try:
        server.wait_healthy()
        token = server.token()
        api = Http(port, token)
        api.fresh()
        cluster_id = embedded_cluster_id(api)
        began = time.perf_counter()
        submit_all(port, token, cluster_id, args.queued, args.clients)
        print(
            f"queued {args.queued} jobs in {time.perf_counter() - began:.1f} s "
            f"({args.queued / (time.perf_counter() - began):.1f}/s)",
            flush=True,
        )
        time.sleep(args.settle)
        cpu_before = cpu_seconds(server.process.pid)
        began = time.perf_counter()
        latencies = submit_all(port, token, cluster_id, args.burst, args.clients)
        answered = time.perf_counter()
        cpu = cpu_seconds(server.process.pid) - cpu_before
        rate = args.burst / (answered - began)
        latencies.sort()
        print(
            f"burst of {args.burst} on {args.queued} queued, {args.clients} clients: "
            f"{rate:.1f} submissions/s; answer p50 {statistics.median(latencies) * 1000:.0f} ms, "
            f"p99 {latencies[int(len(latencies) * 0.99) - 1] * 1000:.0f} ms; server CPU "
            f"{cpu / args.burst * 1000:.1f} ms per submission",
            flush=True,
        )
        # the last job submitted: the newest of the tenant's jobs
        api.fresh()
        newest = api.post(
            "{ jobs(first: 1) { edges { node { id } } } }",
        )["data"]["jobs"]["edges"][0]["node"]["id"]
        while True:
            estimate = api.post(ESTIMATE, {"id": newest})["data"]["job"]["estimate"]
            if estimate and estimate.get("start"):
                break
            if time.perf_counter() - answered > 120:
                raise SystemExit("the schedule never showed the last submission")
            time.sleep(0.02)
        lag = time.perf_counter() - answered
        print(f"the schedule showed the last submission {lag:.2f} s after its answer")
        return 0
    finally:
        server.stop()


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--queued", type=int, default=1000)
    p.add_argument("--burst", type=int, default=300)
    p.add_argument("--clients", type=int, default=4)
    p.add_argument("--settle", type=float, default=5.0)
    p.add_argument("--no-pin", dest="pin", action="store_false")
    return run(p.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
