"""Tenant A's cheap query while tenant B leans on the service: can one tenant stall the others?

One embedded API process (`python -m budcluster serve`, SQLite in a fresh temporary data dir,
pinned to CPU 0, its compute pool with it) runs a live cluster: 300 queued jobs of a seeding
tenant, and one more submitted every `--churn` seconds (each changes the timeline, so
subscribers get diffs). Tenant A sends a cheap query (`job(id) { id status name }`) every
`--interval` seconds and times each answer: first with nobody else (idle), then while a fresh
tenant B runs each pattern for `--seconds`, at the service's default limits, from a process of
its own on the other CPU:

  bomb           4 clients without a token, each posting an 11 KB document: `__typename`
                 900 times under aliases (before its bounds, validation spent 4-5 s on it)
  samples        4 of B's tokens asking 20 aliases of `samples(first: 10000)` of B's benchmark
  page           4 of B's tokens asking B's heaviest page: 100 jobs with their cluster's 24 h
                 schedule (B owns 150 of the queued jobs)
  preview        4 of B's tokens, each posting 20 aliased previewJob back to back
  subscriptions  B at its subscription cap (BUDCLUSTER_TENANT_SUBSCRIPTIONS, 1,000): that many
                 scheduleTimeline subscriptions over 10 sockets and 4 tokens, each stream read

Printed per pattern: A's p50 / p99 / max, what B's requests got (served, or the error codes and
HTTP statuses that refused them), and the server's CPU seconds. Aim: A's p99 <= 100 ms in every
pattern.

    .venv/bin/python -m benchmarks.contention [--patterns bomb,samples,page,preview,subscriptions]
        [--seconds 30] [--jobs 300] [--no-pin]
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
from websockets.typing import Subprotocol

from benchmarks.event_to_screen import (
    REPO,
    TOKEN,
    cpu_seconds,
    free_port,
    percentile,
    start_server,
)

A100 = "nvidia-a100-80gb"
T4 = "nvidia-tesla-t4"
NODES = "4x8xnvidia-a100-80gb,1x4xnvidia-tesla-t4"
PATTERNS = ("bomb", "samples", "page", "preview", "subscriptions")
CLIENTS = 4
SOCKETS = 10
AIM_P99 = 0.100
CLIENT_NICENESS = 10
"""B and the churn share the other CPU with A's client: they yield it to A, whose timing would
otherwise count its own wait for the CPU (B reading a thousand streams keeps a core busy)."""

SUBMIT = """mutation($input: SubmitJobInput!) { submitJob(input: $input) {
  __typename ... on Job { id } ... on UserError { code message } } }"""
CHEAP = "query($id: ID!) { job(id: $id) { id status name } }"
PAGE = """{ jobs(first: 100) { edges { node { id name status cluster { name schedule {
  segments { id rows start end kind name } rows { id segments { id } }
  queue { position name estimatedStart reason } } } } } } }"""
BOMB = "{ " + " ".join(f"a{i}: __typename" for i in range(900)) + " }"
"""11 KB, 2,700 tokens (under the token limit): what kept validation busy for seconds."""
PREVIEWS = (
    "query($input: SubmitJobInput!) { "
    + " ".join(
        f"p{i}: previewJob(input: $input) {{ __typename ... on JobPreview {{ estimatedStart }} }}"
        for i in range(20)
    )
    + " }"
)
SAMPLES = (
    "query($id: ID!) { "
    + " ".join(
        f"s{i}: benchmark(id: $id) {{ samples(first: 10000) {{ index ok ttftMs itlMs error }} }}"
        for i in range(20)
    )
    + " }"
)
TIMELINE = """subscription($c: ID!) { scheduleTimeline(clusterId: $c) {
  __typename ... on Schedule { sequence } ... on ScheduleDiff { sequence } } }"""
DEPLOY = """mutation($input: DeployModelInput!) { deployModel(input: $input) {
  __typename ... on Deployment { id } ... on UserError { code message } } }"""
DEPLOYMENT = "query($id: ID!) { deployment(id: $id) { status statusMessage } }"
RUN = """mutation($input: RunBenchmarkInput!) { runBenchmark(input: $input) {
  __typename ... on Benchmark { id } ... on UserError { code message } } }"""
BENCHMARK = "query($id: ID!) { benchmark(id: $id) { status statusMessage } }"

NODELAY = [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]
"""httpx writes a request's headers and body apart and does not set TCP_NODELAY: each request
would then wait out the server's delayed ACK (~40 ms). Browsers and curl set it; so do we."""


def client(base: str, token: str | None) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        base_url=base,
        timeout=120,
        headers={"Authorization": f"Bearer {token}"} if token else {},
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
    return done.stdout + done.stderr


def new_tenant(data_dir: Path, name: str, tokens: int) -> list[str]:
    """`tokens` tokens of one new tenant (the first made it)."""
    made = cli(data_dir, "token", "create", "--name", f"{name}-0", "--new-tenant")
    first = TOKEN.findall(made)[0]
    tenant = next(
        word.strip(".,:()")
        for line in made.splitlines()
        if "tenant" in line
        for word in line.split()
        if _is_uuid(word.strip(".,:()"))
    )
    more = [
        TOKEN.findall(
            cli(data_dir, "token", "create", "--name", f"{name}-{i}", "--tenant", tenant)
        )[0]
        for i in range(1, tokens)
    ]
    return [first, *more]


def _is_uuid(text: str) -> bool:
    try:
        uuid.UUID(text)
    except ValueError:
        return False
    return True


def job_input(cluster_id: str, name: str, gpus: int, runtime: int = 36000) -> dict[str, Any]:
    return {
        "name": name,
        "projectId": str(uuid.uuid4()),
        "clusterId": cluster_id,
        "jobType": "BATCH",
        "deploymentType": "DOCKER",
        "resources": {"gpuType": A100, "gpuCount": gpus},
        "estimatedDurationSeconds": 3600,
        "spec": {"simulation": {"runtime_seconds": runtime}},
    }


async def post(http: httpx.AsyncClient, query: str, **variables: Any) -> dict[str, Any]:
    response = await http.post("/graphql", json={"query": query, "variables": variables})
    body: dict[str, Any] = response.json()
    if response.status_code != 200 or body.get("errors"):
        raise RuntimeError(f"{response.status_code} {body}")
    data: dict[str, Any] = body["data"]
    return data


async def seed(base: str, token: str, cluster_id: str, jobs: int) -> str:
    first = ""
    async with client(base, token) as http:
        for i in range(jobs):
            made = (await post(http, SUBMIT, input=job_input(cluster_id, f"seed-{i}", 1 + i % 8)))[
                "submitJob"
            ]
            if made["__typename"] != "Job":
                raise RuntimeError(f"seeding failed: {made}")
            first = first or made["id"]
    return first


async def measured_benchmark(base: str, token: str, cluster_id: str) -> str:
    """A deployment on the T4 node and a finished benchmark of 400 requests: its samples."""
    project = str(uuid.uuid4())
    async with client(base, token) as http:
        deployment = (
            await post(
                http,
                DEPLOY,
                input={
                    "name": "contended",
                    "projectId": project,
                    "clusterId": cluster_id,
                    "model": "Qwen/Qwen2.5-0.5B-Instruct",
                    "gpuType": T4,
                    "concurrency": 64,
                },
            )
        )["deployModel"]
        if deployment["__typename"] != "Deployment":
            raise RuntimeError(f"deployModel: {deployment}")
        await until(http, DEPLOYMENT, "deployment", deployment["id"], ("RUNNING",))
        run = (
            await post(
                http,
                RUN,
                input={
                    "name": "contended",
                    "projectId": project,
                    "deploymentId": deployment["id"],
                    "concurrency": 32,
                    "requestCount": 400,
                    "promptTokens": {"mean": 64},
                    "outputTokens": {"mean": 32},
                },
            )
        )["runBenchmark"]
        if run["__typename"] != "Benchmark":
            raise RuntimeError(f"runBenchmark: {run}")
        await until(http, BENCHMARK, "benchmark", run["id"], ("COMPLETED", "FAILED", "CANCELLED"))
        return str(run["id"])


async def until(
    http: httpx.AsyncClient, query: str, root: str, key: str, done: tuple[str, ...]
) -> None:
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        seen = (await post(http, query, id=key))[root]
        if seen["status"] in done:
            return
        await asyncio.sleep(0.5)
    raise TimeoutError(f"{root} {key} did not reach {done}")


# --- B, in a process of its own ---------------------------------------------------------------


def outcome(response: httpx.Response) -> str:
    if response.status_code != 200:
        return f"HTTP {response.status_code}"
    errors = response.json().get("errors") or []
    return str(errors[0].get("extensions", {}).get("code", "error")) if errors else "served"


async def requests_back_to_back(
    base: str, token: str | None, query: str, variables: dict[str, Any], until: float
) -> Counter[str]:
    seen: Counter[str] = Counter()
    async with client(base, token) as http:
        while time.monotonic() < until:
            try:
                response = await http.post(
                    "/graphql", json={"query": query, "variables": variables}
                )
            except httpx.HTTPError as exc:
                seen[type(exc).__name__] += 1
                continue
            seen[outcome(response)] += 1  # Retry-After is ignored: B is hostile
    return seen


async def subscriber_socket(
    base: str, token: str, cluster_id: str, count: int, until: float, seen: Counter[str]
) -> None:
    url = base.replace("http://", "ws://") + "/graphql"
    protocols = [Subprotocol("graphql-transport-ws")]
    async with websockets.connect(url, subprotocols=protocols, max_size=None) as ws:
        await ws.send(
            json.dumps({"type": "connection_init", "payload": {"Authorization": f"Bearer {token}"}})
        )
        await ws.recv()
        for n in range(count):
            await ws.send(
                json.dumps(
                    {"id": str(n), "type": "subscribe",
                     "payload": {"query": TIMELINE, "variables": {"c": cluster_id}}}
                )
            )  # fmt: skip
        while time.monotonic() < until:
            try:
                message = json.loads(await asyncio.wait_for(ws.recv(), until - time.monotonic()))
            except TimeoutError:
                break
            if message.get("type") == "next":
                payload = message["payload"]
                if payload.get("errors"):
                    seen[payload["errors"][0].get("extensions", {}).get("code", "error")] += 1
                else:
                    seen[payload["data"]["scheduleTimeline"]["__typename"]] += 1
            elif message.get("type") == "error":
                seen[message["payload"][0].get("extensions", {}).get("code", "error")] += 1


async def pattern_b(
    pattern: str, base: str, tokens: list[str], target: dict[str, Any], until: float, cap: int
) -> Counter[str]:
    if pattern == "subscriptions":
        seen: Counter[str] = Counter()
        per_socket = [cap // SOCKETS + (1 if i < cap % SOCKETS else 0) for i in range(SOCKETS)]
        await asyncio.gather(
            *(
                subscriber_socket(base, tokens[i % len(tokens)], target["cluster"], n, until, seen)
                for i, n in enumerate(per_socket)
            )
        )
        return seen
    plans: dict[str, tuple[str, dict[str, Any], list[str | None]]] = {
        "bomb": (BOMB, {}, [None] * CLIENTS),
        "samples": (SAMPLES, {"id": target.get("benchmark")}, list(tokens)),
        "page": (PAGE, {}, list(tokens)),
        "preview": (
            PREVIEWS,
            {"input": job_input(target["cluster"], "what-if", 8)},
            list(tokens),
        ),
    }
    query, variables, who = plans[pattern]
    counts = await asyncio.gather(
        *(requests_back_to_back(base, t, query, variables, until) for t in who)
    )
    return sum(counts, Counter())


def b_process(
    pattern: str,
    base: str,
    tokens: list[str],
    target: dict[str, Any],
    seconds: float,
    cap: int,
    pipe: Any,
) -> None:
    os.nice(CLIENT_NICENESS)
    until = time.monotonic() + seconds
    pipe.send(dict(asyncio.run(pattern_b(pattern, base, tokens, target, until, cap))))


def churn_process(base: str, token: str, cluster_id: str, every: float, stop: Any) -> None:
    """The cluster lives: a job submitted every `every` seconds (the timeline changes)."""
    os.nice(CLIENT_NICENESS)

    async def run() -> None:
        async with client(base, token) as http:
            n = 0
            while not stop.is_set():
                n += 1
                await http.post(
                    "/graphql",
                    json={
                        "query": SUBMIT,
                        "variables": {"input": job_input(cluster_id, f"churn-{n}", 1, 30)},
                    },
                )
                await asyncio.sleep(every)

    asyncio.run(run())


# --- A ------------------------------------------------------------------------------------------


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


def line(label: str, times: list[float], cpu: float, seconds: float, b: str = "") -> str:
    return (
        f"{label:<14} p50 {statistics.median(times) * 1000:7.1f} ms  "
        f"p99 {percentile(times, 0.99) * 1000:7.1f} ms  max {max(times) * 1000:7.1f} ms  "
        f"n={len(times):4d}  server CPU {cpu / seconds:4.0%}  {b}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--patterns", default=",".join(PATTERNS))
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--baseline", type=float, default=10.0)
    parser.add_argument("--interval", type=float, default=0.05)
    parser.add_argument("--churn", type=float, default=1.0)
    parser.add_argument("--jobs", type=int, default=300)
    parser.add_argument("--subscriptions", type=int, default=1000)
    parser.add_argument("--no-pin", action="store_true")
    args = parser.parse_args(argv)
    patterns = [p.strip() for p in args.patterns.split(",") if p.strip()]
    if unknown := set(patterns) - set(PATTERNS):
        parser.error(f"unknown patterns: {', '.join(sorted(unknown))}")
    pin = not args.no_pin and (os.cpu_count() or 1) >= 2
    if pin:
        os.sched_setaffinity(0, set(range(1, os.cpu_count() or 2)))
    env = {"BUDCLUSTER_LOG_LEVEL": "WARNING", "BUDCLUSTER_SIM_NODES": NODES}
    results: list[str] = []
    with tempfile.TemporaryDirectory(prefix="budcluster-contention-") as tmp:
        data_dir = Path(tmp)
        server = start_server(data_dir, free_port(), env, {0} if pin else None)
        stop = multiprocessing.Event()
        churn: multiprocessing.Process | None = None
        try:
            server.wait_healthy()
            admin = server.token()
            base = server.base
            cluster_id = httpx.post(
                f"{base}/graphql",
                json={"query": "{ clusters { id } }"},
                headers={"Authorization": f"Bearer {admin}"},
            ).json()["data"]["clusters"][0]["id"]
            [tenant_a] = new_tenant(data_dir, "a", 1)
            job_id = asyncio.run(seed(base, tenant_a, cluster_id, 1))
            page_tokens = new_tenant(data_dir, "page", CLIENTS)
            asyncio.run(seed(base, page_tokens[0], cluster_id, args.jobs // 2))
            asyncio.run(seed(base, admin, cluster_id, args.jobs - args.jobs // 2))
            target: dict[str, Any] = {"cluster": cluster_id}
            samples_tokens: list[str] = []
            if "samples" in patterns:
                samples_tokens = new_tenant(data_dir, "samples", CLIENTS)
                target["benchmark"] = asyncio.run(
                    measured_benchmark(base, samples_tokens[0], cluster_id)
                )
            churn = multiprocessing.Process(
                target=churn_process, args=(base, admin, cluster_id, args.churn, stop)
            )
            churn.start()
            time.sleep(3)  # the timeline of the seeded jobs is computed
            before = cpu_seconds(server.process.pid)
            alone = asyncio.run(
                cheap_latencies(base, tenant_a, job_id, args.baseline, args.interval)
            )
            results.append(
                line("idle", alone, cpu_seconds(server.process.pid) - before, args.baseline)
            )
            for pattern in patterns:
                tokens = {
                    "page": page_tokens,
                    "samples": samples_tokens,
                }.get(pattern) or new_tenant(data_dir, pattern, CLIENTS)
                receiver, sender = multiprocessing.Pipe(duplex=False)
                b = multiprocessing.Process(
                    target=b_process,
                    args=(
                        pattern,
                        base,
                        tokens,
                        target,
                        args.seconds + 2,
                        args.subscriptions,
                        sender,
                    ),
                )
                b.start()
                time.sleep(1)  # B gets going
                before = cpu_seconds(server.process.pid)
                loaded = asyncio.run(
                    cheap_latencies(base, tenant_a, job_id, args.seconds, args.interval)
                )
                cpu = cpu_seconds(server.process.pid) - before
                counts = receiver.recv()
                b.join(60)
                seen = ", ".join(f"{k}: {v}" for k, v in sorted(counts.items()))
                results.append(line(pattern, loaded, cpu, args.seconds, f"B: {seen}"))
                time.sleep(2)  # B's sockets close, its work drains
        finally:
            stop.set()
            if churn is not None:
                churn.join(10)
            server.stop()
    where = "pinned to CPU 0 with its compute pool" if pin else "unpinned"
    print(
        f"budcluster contention: tenant A's cheap query every {args.interval * 1000:.0f} ms; "
        f"{args.jobs} queued jobs, a submission every {args.churn:g} s; server {where}; "
        f"default limits"
    )
    for text in results:
        print(text)
    worst = max(float(r.split("p99")[1].split("ms")[0]) for r in results[1:]) if results[1:] else 0
    verdict = "met" if worst <= AIM_P99 * 1000 else "NOT met"
    print(f"aim: A's p99 <= {AIM_P99 * 1000:.0f} ms in every pattern: {verdict} ({worst:.1f} ms)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
