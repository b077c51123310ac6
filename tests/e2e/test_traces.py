"""The running service's traces as an OpenTelemetry collector receives them (OTLP over HTTP).

Covers: with OTEL_EXPORTER_OTLP_ENDPOINT set, `budcluster serve` sends its spans, in protobuf,
to `<endpoint>/v1/traces`, under service.name budcluster and role api; a request sent with a
`traceparent` is one trace from the HTTP request through the mutation, its commit, the task it
queued and that task's run against the simulated cluster; the JSON log lines written in the
request carry its trace id; the token is in no span; a subscription streams as usual and is one
span for its life; the background loops' SQL makes no traces. Without an endpoint nothing is sent (every
other end-to-end test runs so, with OTEL_* removed from the environment).
"""

from __future__ import annotations

import asyncio
import gzip
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from aiohttp import web
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from tests.e2e.conftest import (
    ServiceFactory,
    embedded_env,
    free_port,
    printed_tokens,
    subscribed,
)

pytestmark = pytest.mark.e2e

SQL = {"SELECT", "INSERT", "UPDATE", "DELETE", "connect"}
CALLER_TRACE = "0af7651916cd43dd8448eb211c80319c"
CALLER = f"00-{CALLER_TRACE}-b7ad6b7169203331-01"
SUBMIT = """
mutation Submit($input: SubmitJobInput!) {
  submitJob(input: $input) { __typename ... on Job { id } ... on UserError { code message } }
}
"""


class Collector:
    """An OTLP/HTTP trace receiver: what it was sent, decoded."""

    def __init__(self) -> None:
        self.spans: list[dict[str, Any]] = []
        self.raw = b""

    async def receive(self, request: web.Request) -> web.Response:
        body = await request.read()
        if request.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        self.raw += body
        export = ExportTraceServiceRequest()
        export.ParseFromString(body)
        for resource_spans in export.resource_spans:
            resource = {a.key: a.value.string_value for a in resource_spans.resource.attributes}
            for scope in resource_spans.scope_spans:
                for span in scope.spans:
                    self.spans.append(
                        {
                            "name": span.name,
                            "trace_id": span.trace_id.hex(),
                            "span_id": span.span_id.hex(),
                            "parent": span.parent_span_id.hex(),
                            "resource": resource,
                        }
                    )
        return web.Response(
            body=ExportTraceServiceResponse().SerializeToString(),
            content_type="application/x-protobuf",
        )


@pytest.fixture
async def collector() -> AsyncIterator[tuple[Collector, str]]:
    received = Collector()
    app = web.Application()
    app.router.add_post("/v1/traces", received.receive)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    site = web.TCPSite(runner, "127.0.0.1", port)
    await site.start()
    try:
        yield received, f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


async def test_spans_reach_a_collector_over_otlp(
    services: ServiceFactory, tmp_path: Path, collector: tuple[Collector, str]
) -> None:
    received, endpoint = collector
    env = embedded_env(
        tmp_path / "data",
        OTEL_EXPORTER_OTLP_ENDPOINT=endpoint,
        OTEL_BSP_SCHEDULE_DELAY="100",
        BUDCLUSTER_LOG_FORMAT="json",
        BUDCLUSTER_ACCESS_LOG="1",
    )
    service = await services.start("traces", env)
    try:
        [token] = printed_tokens(service.stdout())
        headers = {"Authorization": f"Bearer {token}", "traceparent": CALLER}
        async with httpx.AsyncClient(timeout=10) as client:
            listed = await client.post(
                service.url, json={"query": "{ clusters { id } }"}, headers=headers
            )
            cluster_id = listed.json()["data"]["clusters"][0]["id"]
            job = {
                "name": "traced",
                "projectId": "7b0c7c1e-8d3e-4a43-9a55-3f3f3b3f3b3f",
                "clusterId": cluster_id,
                "jobType": "BATCH",
                "deploymentType": "DOCKER",
                "resources": {"gpuType": "nvidia-a100-80gb", "gpuCount": 1},
                "spec": {"simulation": {"runtime_seconds": 1}},
            }
            async with subscribed(service, token, cluster_id) as updates:
                await updates.wait_for(lambda got: len(got) >= 1)  # its snapshot
                submitted = await client.post(
                    service.url,
                    json={"query": SUBMIT, "variables": {"input": job}},
                    headers=headers,
                )
                assert submitted.json()["data"]["submitJob"]["__typename"] == "Job", submitted.text
                job_id = submitted.json()["data"]["submitJob"]["id"]
                await updates.wait_for(  # a traced service streams as any other
                    lambda got: any(u.get("job", {}).get("id") == job_id for u in got)
                )

        wanted = {"mutation Submit", "commit", "send submit_workload", "process submit_workload"}
        async with asyncio.timeout(20):  # the subscription's span ends when it does
            while not any(s["name"] == "subscription Updates" for s in received.spans):
                await asyncio.sleep(0.1)
        async with asyncio.timeout(20):  # the batch processor sends every 100 ms
            while not wanted <= {
                s["name"] for s in received.spans if s["trace_id"] == CALLER_TRACE
            }:
                await asyncio.sleep(0.1)
    finally:
        await service.stop()

    caller = [s for s in received.spans if s["trace_id"] == CALLER_TRACE]
    by_id = {s["span_id"]: s for s in caller}
    [run] = [s for s in caller if s["name"] == "process submit_workload"]
    assert by_id[run["parent"]]["name"] == "send submit_workload"
    chain = [run]
    while chain[-1]["parent"] in by_id:
        chain.append(by_id[chain[-1]["parent"]])
    names = [s["name"] for s in chain]
    assert names[-2:] == ["mutation Submit", "POST /graphql"], names
    server = chain[-1]
    assert server["parent"] == CALLER.split("-")[2]  # the caller's span
    assert server["resource"]["service.name"] == "budcluster"
    assert server["resource"]["budcluster.role"] == "api"
    assert token.encode() not in received.raw
    every_name = {s["name"] for s in received.spans}
    assert "subscription Updates" in every_name
    assert "GraphQL Resolving: jobUpdates" not in every_name
    # the background loops' SQL (the simulated cluster's clock, the supervisor) is no trace
    orphans = [s for s in received.spans if not s["parent"] and s["name"].split()[0] in SQL]
    assert not orphans, orphans[:5]
    assert any(s["name"].startswith("SELECT") for s in caller)  # (the request's are there)

    _, stderr_path = service._paths()
    lines = [json.loads(line) for line in stderr_path.read_text().splitlines() if line.strip()]
    posts = [line for line in lines if "POST /graphql" in line["msg"]]  # the access log's
    assert len(posts) == 2 and all(line.get("trace_id") == CALLER_TRACE for line in posts), posts
