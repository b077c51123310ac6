"""/metrics of the running embedded service, scraped as Prometheus would, after real flows.

Covers: the text parses; with a schedule subscription open the subscriber gauge counts it; a
job submitted over GraphQL that runs to completion moves the transitions (PENDING to QUEUED ...
RUNNING to COMPLETED), the queue wait and the duration, the timeline recomputes are timed and
the commit-to-publish lag observed; the GraphQL request histogram counts the operations by name
(free text is `other`) and the error counter counts a refused one by code; the cluster gauges
show local-sim's GPUs; no label carries a job id or a token. With PROMETHEUS_MULTIPROC_DIR set,
the same counters come through prometheus-client's multiprocess files.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import websockets
from gql import GraphQLRequest
from prometheus_client.parser import text_string_to_metric_families
from websockets.typing import Subprotocol

from tests.e2e.conftest import (
    A100,
    Service,
    ServiceFactory,
    batch_job,
    cluster_id_named,
    embedded_env,
    http_client,
    printed_tokens,
    submit_ok,
    wait_for_status,
)

pytestmark = pytest.mark.e2e

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


async def scrape(service: Service) -> tuple[Samples, str]:
    async with httpx.AsyncClient(timeout=10) as client:
        response = await client.get(f"{service.base}/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    samples: Samples = {}
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            samples[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return samples, response.text


def total(samples: Samples, name: str, **labels: str) -> float:
    wanted = set(labels.items())
    return sum(v for (n, found), v in samples.items() if n == name and wanted <= found)


@pytest.fixture(scope="module")
async def service(
    services: ServiceFactory, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Service]:
    started = await services.start("metrics", embedded_env(tmp_path_factory.mktemp("metrics")))
    [started.admin_token] = printed_tokens(started.stdout())
    started.cluster_id = await cluster_id_named(started, started.admin_token, "local-sim")
    try:
        yield started
    finally:
        await started.stop()


async def test_a_scrape_shows_the_job_and_schedule_metrics_moving(service: Service) -> None:
    before, _ = await scrape(service)
    async with websockets.connect(
        service.ws_url, subprotocols=[Subprotocol("graphql-transport-ws")]
    ) as ws:
        init = {"Authorization": f"Bearer {service.admin_token}"}
        await ws.send(json.dumps({"type": "connection_init", "payload": init}))
        assert json.loads(await ws.recv())["type"] == "connection_ack"
        query = "subscription($c: ID!) { scheduleTimeline(clusterId: $c) { __typename } }"
        payload = {"query": query, "variables": {"c": service.cluster_id}}
        await ws.send(json.dumps({"id": "1", "type": "subscribe", "payload": payload}))
        assert json.loads(await ws.recv())["type"] == "next"
        watching, _ = await scrape(service)
        assert total(watching, "schedule_subscribers") >= 1

    async with http_client(service, service.admin_token) as session:
        job = await submit_ok(session, batch_job(str(service.cluster_id), gpus=2, runtime=1))
        await wait_for_status(session, job["id"], "COMPLETED", timeout=60)
    async with httpx.AsyncClient(timeout=10) as client:
        refused = await client.post(
            service.url,
            json={"query": '{ job(id: "nope") { id } }'},
            headers={"Authorization": f"Bearer {service.admin_token}"},
        )
    assert refused.json()["errors"]

    after, text = await scrape(service)
    moved = {
        (a, b): total(after, "job_state_transitions_total", from_state=a, to_state=b)
        - total(before, "job_state_transitions_total", from_state=a, to_state=b)
        for a, b in (
            ("PENDING", "QUEUED"),
            ("QUEUED", "ADMITTED"),
            ("ADMITTED", "RUNNING"),
            ("RUNNING", "COMPLETED"),
        )
    }
    assert all(n >= 1 for n in moved.values()), moved
    for name in ("job_queue_wait_seconds_count", "job_duration_seconds_count"):
        assert total(after, name, job_type="BATCH") > total(before, name, job_type="BATCH"), name
    assert total(after, "schedule_reestimate_seconds_count") > total(
        before, "schedule_reestimate_seconds_count"
    )
    assert total(after, "event_publish_lag_seconds_count") > total(
        before, "event_publish_lag_seconds_count"
    )
    requests = "graphql_request_duration_seconds_count"
    assert total(after, requests, operation="other", type="mutation") >= 1
    assert total(after, "graphql_errors_total", code="BAD_USER_INPUT") >= 1
    assert total(after, "cluster_gpus", cluster="local-sim", gpu_type=A100, state="total") == 16
    assert total(after, "cluster_status", cluster="local-sim") == 1
    assert str(job["id"]) not in text and str(service.admin_token) not in text


async def test_multiprocess_files_carry_the_counters(
    services: ServiceFactory, tmp_path: Path
) -> None:
    shared = tmp_path / "prometheus"
    shared.mkdir()
    env = embedded_env(tmp_path / "data", PROMETHEUS_MULTIPROC_DIR=str(shared))
    started = await services.start("metrics-multiprocess", env)
    try:
        [token] = printed_tokens(started.stdout())
        cluster_id = await cluster_id_named(started, token, "local-sim")
        async with http_client(started, token) as session:
            job = await submit_ok(session, batch_job(cluster_id, gpus=1, runtime=1))
            await wait_for_status(session, job["id"], "COMPLETED", timeout=60)
            await session.execute(GraphQLRequest("{ clusters { id } }"))
        samples: Any = None
        for _ in range(20):
            samples, _ = await scrape(started)
            if total(samples, "job_state_transitions_total", to_state="COMPLETED") >= 1:
                break
            await asyncio.sleep(0.1)
        assert total(samples, "job_state_transitions_total", to_state="COMPLETED") >= 1
        assert total(samples, "graphql_request_duration_seconds_count") >= 1
        assert any(p.suffix == ".db" for p in shared.iterdir())  # the per-process files
    finally:
        await started.stop()
