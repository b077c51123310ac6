"""What tracing costs a mutation: `submitJob` through the ASGI app, with traces off and on.

An embedded App (SQLite, in-process tasks, a simulated cluster) serves `submitJob` over the ASGI
app (httpx's ASGI transport: no sockets); the same number of mutations runs with tracing off
(no provider: the API's no-op spans) and on (an SDK provider with a batch processor exporting
to memory: the spans are made, recorded and queued for export as with a collector, without the
network; sampled as `install_otlp` samples: background loops' client calls are no traces).
Printed per configuration: the median and p90 wall time of a mutation, and, traced, the spans
recorded per mutation (its own trace with its hand-over task, and the timeline refreshes it
sets off). Rounds alternate off/on so the machine's drift falls on both.

    .venv/bin/python -m benchmarks.tracing_overhead [--mutations 200] [--rounds 3]

Each round runs in a process of its own (OpenTelemetry's global provider is set once a process):
an untraced round has no provider at all, as a service without a collector.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_ON, ParentBased

from adapters.simulated.config import parse_node_groups, settings_for
from adapters.tracing.otel import WithinOperations
from budcluster import bootstrap, migrate
from budcluster.bootstrap import App
from budcluster.http import create_app
from budcluster.runtime import Runtime
from budcluster.settings import Settings
from domain.model.ids import TenantId
from domain.model.principal import Scope

SUBMIT = """
mutation Submit($input: SubmitJobInput!) {
  submitJob(input: $input) { __typename ... on Job { id } ... on UserError { code } }
}
"""


async def run(app: App, token: str, cluster_id: str, count: int) -> list[float]:
    transport = httpx.ASGITransport(app=create_app(app, manage_lifecycle=False))
    times: list[float] = []
    project = str(uuid.uuid4())
    async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:
        for n in range(count):
            job = {
                "name": f"bench-{uuid.uuid4().hex[:8]}",
                "projectId": project,
                "clusterId": cluster_id,
                "jobType": "BATCH",
                "deploymentType": "DOCKER",
                "resources": {"gpuType": "nvidia-a100-80gb", "gpuCount": 1},
                "spec": {"simulation": {"runtime_seconds": 3600}},
                "estimatedDurationSeconds": 3600,
            }
            started = time.perf_counter()
            answer = await client.post(
                "/graphql",
                json={"query": SUBMIT, "variables": {"input": job}},
                headers={"Authorization": f"Bearer {token}"},
            )
            times.append(time.perf_counter() - started)
            assert answer.json()["data"]["submitJob"]["__typename"] == "Job", (n, answer.text)
    return times


async def measure(traced: bool, mutations: int) -> dict[str, list[float] | float]:
    """One round in this process: `mutations` timed after a warm-up; traced or not."""
    exporter = InMemorySpanExporter()
    provider: TracerProvider | None = None
    if traced:  # as a process exporting traces samples (adapters.tracing.install_otlp)
        provider = TracerProvider(sampler=WithinOperations(ParentBased(ALWAYS_ON)))
        provider.add_span_processor(BatchSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
    with tempfile.TemporaryDirectory() as data:
        app = await bootstrap.embedded(
            Settings(
                database_url=f"sqlite:///{Path(data) / 'bench.db'}",
                token_pepper=b"p" * 32,
                tracing=traced,
                compute_workers=0,
            )
        )
        await migrate.upgrade(app.db.engine)
        runtime = Runtime(app)
        await runtime.start()
        try:
            cluster = await app.clusters.create_simulated(
                "bench", settings_for(parse_node_groups("64x8xnvidia-a100-80gb"))
            )
            issued = await app.tokens.issue(
                tenant_id=TenantId(uuid.uuid4()),
                name="bench",
                scopes=frozenset({Scope.ADMIN}),
                operator=True,
            )
            await run(app, issued.secret, str(cluster.id), 10)  # warm up
            if provider is not None:
                provider.force_flush()
                exporter.clear()
            times = await run(app, issued.secret, str(cluster.id), mutations)
            if provider is not None:
                provider.force_flush()
        finally:
            await runtime.stop()
            await app.close()
    return {"times": times, "spans": len(exporter.get_finished_spans()) / mutations}


def main(mutations: int, rounds: int) -> None:
    """Each round in a process of its own, untraced and traced alternately: an untraced one
    has no provider at all, as a service without a collector."""
    results: dict[str, list[float]] = {"off": [], "on": []}
    spans_per_mutation: list[float] = []
    for _ in range(rounds):
        for mode in ("off", "on"):
            child = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "benchmarks.tracing_overhead",
                    "--round",
                    mode,
                    "--mutations",
                    str(mutations),
                ],
                check=True,
                capture_output=True,
                text=True,
            )
            measured = json.loads(child.stdout.strip().splitlines()[-1])
            results[mode].extend(measured["times"])
            if mode == "on":
                spans_per_mutation.append(measured["spans"])
    print(f"submitJob over ASGI, embedded (SQLite), {mutations} mutations x {rounds} rounds")
    for mode, times in results.items():
        ordered = sorted(times)
        p90 = ordered[int(0.9 * (len(ordered) - 1))]
        print(
            f"  tracing {mode:3}: median {statistics.median(times) * 1000:6.2f} ms, "
            f"p90 {p90 * 1000:6.2f} ms"
        )
    off, on = statistics.median(results["off"]), statistics.median(results["on"])
    print(f"  traced: {statistics.mean(spans_per_mutation):.1f} spans recorded a mutation")
    print(f"  median cost of tracing: {(on - off) * 1000:+.2f} ms ({(on / off - 1):+.0%})")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mutations", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--round", choices=["off", "on"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.round:
        print(json.dumps(asyncio.run(measure(args.round == "on", args.mutations))))
    else:
        main(args.mutations, args.rounds)
