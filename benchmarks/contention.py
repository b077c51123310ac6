"""A cheap query's latency while heavy clients run: does one client stall the others?

One embedded API process (`python -m budcluster serve`, SQLite in a fresh temporary data dir,
pinned to CPU 0 with `--pin`) is seeded with `--jobs` queued jobs of several tenants, so that
schedules and previews have work to do. Then a tenant's client sends a cheap query
(`job(id) { id status name }`) every `--interval` seconds and times each answer, first alone
(`--baseline` seconds), then while `--heavy` clients (a separate process, each with a token of
its own) send their heavy request back to back for `--seconds`:

  page        the heaviest read the budget allows: 100 jobs, each with its cluster's 24 h
              schedule (segments, rows and queue)
  preview     previewJob, which runs the estimator over the cluster
  kubeconfig  registerCluster with a 250 KiB kubeconfig (parsed, then refused: no context)
  aliases     the probe's 20 aliases of jobs(first: 100) { cluster { schedule(31 days) } }
  body        a 50 MB body
  ws-flood    a WebSocket that subscribes to the schedule and sends messages as fast as it can

Printed: p50 / p99 / max of the cheap query alone and under load, how many heavy requests were
served, refused for cost (COST_LIMIT_EXCEEDED), rate (429) or size (413), and the server's CPU.
`--rate unlimited` lifts the per-token rate limit on the server, to see what the cost budget and
the off-loop work do on their own. Aim: p50 under load <= 100 ms.

    .venv/bin/python -m benchmarks.contention [--heavy page,preview,kubeconfig,aliases]
        [--seconds 30] [--jobs 300] [--rate default|unlimited] [--no-pin]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import websockets

from benchmarks.event_to_screen import (
    REPO,
    TOKEN,
    cpu_seconds,
    free_port,
    percentile,
    start_server,
)

A100 = "nvidia-a100-80gb"
SUBMIT = """mutation($input: SubmitJobInput!) { submitJob(input: $input) {
  __typename ... on Job { id } ... on UserError { code message } } }"""
CHEAP = "query($id: ID!) { job(id: $id) { id status name } }"
PAGE = """{ jobs(first: 100) { edges { node { id name status cluster { name schedule {
  segments { id rows start end kind name } rows { id segments { id } }
  queue { position name estimatedStart reason } } } } } } }"""
ALIASES = (
    "{ "
    + " ".join(
        f"a{i}: jobs(first: 100) {{ edges {{ node {{ id cluster {{ "
        'schedule(from: "2026-01-01T00:00:00Z", to: "2026-01-31T00:00:00Z") { sequence } } } } }'
        for i in range(20)
    )
    + " }"
)
PREVIEW = """query($input: SubmitJobInput!) { previewJob(input: $input) {
  __typename ... on JobPreview { estimatedStart reason } } }"""
REGISTER = """mutation($input: RegisterClusterInput!) { registerCluster(input: $input) {
  __typename ... on ValidationError { fields { path } } } }"""
TIMELINE = """subscription($c: ID!) { scheduleTimeline(clusterId: $c) {
  __typename ... on Schedule { sequence } ... on ScheduleDiff { sequence } } }"""


NODELAY = [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]
"""httpx writes a request's headers and body apart and does not set TCP_NODELAY: each request
would then wait out the server's delayed ACK (~40 ms). Browsers and curl set it; so do we."""


def client(base: str, token: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        base_url=base,
        timeout=120,
        headers={"Authorization": f"Bearer {token}"},
        transport=httpx.AsyncHTTPTransport(socket_options=NODELAY),
    )


def cli(data_dir: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BUDCLUSTER_")}
    env["BUDCLUSTER_DATA_DIR"] = str(data_dir)
    done = subprocess.run(
        [sys.executable, "-m", "budcluster", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def job_input(cluster_id: str, name: str, gpus: int) -> dict[str, Any]:
    return {
        "name": name,
        "projectId": str(uuid.uuid4()),
        "clusterId": cluster_id,
        "jobType": "BATCH",
        "deploymentType": "DOCKER",
        "resources": {"gpuType": A100, "gpuCount": gpus},
        "estimatedDurationSeconds": 3600,
        "spec": {"simulation": {"runtime_seconds": 36000}},
    }


def kubeconfig(size: int) -> str:
    lines = ["apiVersion: v1", "kind: Config", "clusters:"]
    i = 0
    while sum(len(line) + 1 for line in lines) < size:
        lines += [f"- name: c{i}", "  cluster:", f"    server: https://c{i}.example:6443"]
        lines.append("    certificate-authority-data: " + "QUJD" * 300)
        i += 1
    return "\n".join(lines) + "\ncontexts: []\n"


# --- heavy clients (a process of their own) -----------------------------------------------------


async def heavy_client(
    kind: str, base: str, token: str, cluster_id: str, until: float
) -> Counter[str]:
    seen: Counter[str] = Counter()
    big_config = kubeconfig(250 * 1024)
    async with client(base, token) as http:
        if kind == "ws-flood":
            return await ws_flood(base, token, cluster_id, until)
        while time.monotonic() < until:
            if kind == "body":
                response = await http.post(
                    "/graphql",
                    content=b" " * (50 << 20),
                    headers={"content-type": "application/json"},
                )
            else:
                query, variables = {
                    "page": (PAGE, {}),
                    "aliases": (ALIASES, {}),
                    "preview": (PREVIEW, {"input": job_input(cluster_id, "what-if", 8)}),
                    "kubeconfig": (
                        REGISTER,
                        {
                            "input": {
                                "name": "probe",
                                "platform": "ON_PREM",
                                "kubeconfig": big_config,
                            }
                        },
                    ),
                }[kind]
                response = await http.post(
                    "/graphql", json={"query": query, "variables": variables}
                )
            seen[outcome(response)] += 1  # Retry-After is ignored: these clients are hostile
    return seen


async def ws_flood(base: str, token: str, cluster_id: str, until: float) -> Counter[str]:
    seen: Counter[str] = Counter()
    url = base.replace("http://", "ws://") + "/graphql"
    async with websockets.connect(url, subprotocols=["graphql-transport-ws"]) as ws:  # type: ignore[list-item]
        await ws.send(
            json.dumps({"type": "connection_init", "payload": {"Authorization": f"Bearer {token}"}})
        )
        await ws.recv()
        n = 0
        while time.monotonic() < until:
            n += 1
            await ws.send(
                json.dumps(
                    {"id": str(n), "type": "subscribe",
                     "payload": {"query": TIMELINE, "variables": {"c": cluster_id}}}
                )
            )  # fmt: skip
            await ws.send(json.dumps({"id": str(n), "type": "complete"}))
            seen["sent"] += 1
            if n % 50 == 0:
                await asyncio.sleep(0)
    return seen


def outcome(response: httpx.Response) -> str:
    if response.status_code != 200:
        return f"HTTP {response.status_code}"
    errors = response.json().get("errors") or []
    return errors[0]["extensions"]["code"] if errors else "served"


def heavy_process(
    kinds: list[str], base: str, tokens: list[str], cluster_id: str, seconds: float, pipe: Any
) -> None:
    until = time.monotonic() + seconds

    async def run() -> list[Counter[str]]:
        return list(
            await asyncio.gather(
                *(
                    heavy_client(k, base, t, cluster_id, until)
                    for k, t in zip(kinds, tokens, strict=True)
                )
            )
        )

    pipe.send([dict(c) for c in asyncio.run(run())])


# --- the measured client --------------------------------------------------------------------------


async def cheap_latencies(
    base: str, token: str, job_id: str, seconds: float, interval: float
) -> list[float]:
    times: list[float] = []
    async with client(base, token) as http:
        until = time.monotonic() + seconds
        while time.monotonic() < until:
            started = time.monotonic()
            response = await http.post(
                "/graphql", json={"query": CHEAP, "variables": {"id": job_id}}
            )
            elapsed = time.monotonic() - started
            body = response.json()
            if response.status_code != 200 or body.get("errors"):
                raise RuntimeError(f"the cheap query failed: {response.status_code} {body}")
            times.append(elapsed)
            await asyncio.sleep(max(0.0, interval - elapsed))
    return times


def summary(label: str, times: list[float]) -> str:
    return (
        f"{label:<22} n={len(times):5d}  p50 {statistics.median(times) * 1000:8.1f} ms  "
        f"p99 {percentile(times, 0.99) * 1000:8.1f} ms  max {max(times) * 1000:8.1f} ms"
    )


async def seed(base: str, admin: str, cluster_id: str, jobs: int) -> str:
    first = ""
    async with client(base, admin) as http:
        for i in range(jobs):
            response = await http.post(
                "/graphql",
                json={
                    "query": SUBMIT,
                    "variables": {"input": job_input(cluster_id, f"seed-{i}", 1 + i % 8)},
                },
            )
            result = response.json()["data"]["submitJob"]
            if result["__typename"] != "Job":
                raise RuntimeError(f"seeding failed: {result}")
            first = first or result["id"]
    return first


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--heavy", default="page,preview,kubeconfig,aliases")
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--baseline", type=float, default=8.0)
    parser.add_argument("--interval", type=float, default=0.05)
    parser.add_argument("--jobs", type=int, default=300)
    parser.add_argument("--rate", choices=["default", "unlimited"], default="default")
    parser.add_argument("--no-pin", action="store_true")
    args = parser.parse_args(argv)
    kinds = [k.strip() for k in args.heavy.split(",") if k.strip()]
    pin = not args.no_pin and (os.cpu_count() or 1) >= 2
    server_cpus = {0} if pin else None
    if pin:
        os.sched_setaffinity(0, set(range(1, os.cpu_count() or 2)))
    env = {"BUDCLUSTER_LOG_LEVEL": "WARNING", "BUDCLUSTER_SIM_NODES": "4x8xnvidia-a100-80gb"}
    if args.rate == "unlimited":
        env.update(BUDCLUSTER_RATE_POINTS_PER_MINUTE=str(10**12), BUDCLUSTER_RATE_BURST=str(10**12))
    with tempfile.TemporaryDirectory(prefix="budcluster-contention-") as tmp:
        data_dir = Path(tmp)
        server = start_server(data_dir, free_port(), env, server_cpus)
        try:
            server.wait_healthy()
            admin = server.token()
            base = server.base
            clusters = httpx.post(
                f"{base}/graphql",
                json={"query": "{ clusters { id } }"},
                headers={"Authorization": f"Bearer {admin}"},
            ).json()
            cluster_id = clusters["data"]["clusters"][0]["id"]
            tenant = TOKEN.findall(
                cli(data_dir, "token", "create", "--name", "cheap", "--new-tenant")
            )[0]
            job_id = asyncio.run(seed(base, tenant, cluster_id, 1))
            asyncio.run(seed(base, admin, cluster_id, args.jobs))
            tokens = [
                TOKEN.findall(
                    cli(
                        data_dir,
                        "token",
                        "create",
                        "--name",
                        f"heavy-{i}",
                        "--new-tenant",
                        "--operator",
                    )
                )[0]
                for i in range(len(kinds))
            ]
            time.sleep(2)  # the timeline of the seeded jobs is computed
            alone = asyncio.run(cheap_latencies(base, tenant, job_id, args.baseline, args.interval))
            cpu_before = cpu_seconds(server.process.pid)
            receiver, sender = multiprocessing.Pipe(duplex=False)
            heavy = multiprocessing.Process(
                target=heavy_process,
                args=(kinds, base, tokens, cluster_id, args.seconds + 2, sender),
            )
            heavy.start()
            time.sleep(2)  # the heavy clients get going
            loaded = asyncio.run(cheap_latencies(base, tenant, job_id, args.seconds, args.interval))
            counts = receiver.recv()
            heavy.join(30)
            cpu = cpu_seconds(server.process.pid) - cpu_before
        finally:
            server.stop()
    where = "on CPU 0" if pin else "unpinned"
    print(
        f"budcluster contention: {len(kinds)} heavy clients ({', '.join(kinds)}), "
        f"{args.jobs} queued jobs, rate limit {args.rate}, server {where}"
    )
    print(summary("cheap query alone", alone))
    print(summary("cheap query, loaded", loaded))
    for kind, seen in zip(kinds, counts, strict=True):
        print(f"  heavy {kind:<11} " + ", ".join(f"{k}: {v}" for k, v in sorted(seen.items())))
    print(f"server CPU while loaded: {cpu:.1f} s in {args.seconds + 2:.0f} s")
    aim = statistics.median(loaded) <= 0.100
    print(f"aim p50 <= 100 ms under load: {'met' if aim else 'NOT met'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
