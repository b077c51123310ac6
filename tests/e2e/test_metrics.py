"""/metrics of the running embedded service, scraped as Prometheus would, after real flows.

Covers: the text parses; with a schedule subscription open the subscriber gauge counts it; a
job submitted over GraphQL that runs to completion moves the transitions (PENDING to QUEUED ...
RUNNING to COMPLETED), the queue wait and the duration, the timeline recomputes are timed and
the commit-to-publish lag observed; the GraphQL request histogram counts the operations by name
(free text is `other`) and the error counter counts a refused one by code; the cluster gauges
show local-sim's GPUs; no label carries a job id or a token. With PROMETHEUS_MULTIPROC_DIR set,
the same counters come through prometheus-client's multiprocess files. Counters are read until
they moved (a commit's metrics are recorded after it: see `scrape_until`), never once on a hunch.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
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


async def scrape_until(
    service: Service, moved: Callable[[Samples], dict[Any, bool]], timeout: float = 30.0
) -> tuple[Samples, str]:
    """Scrape until every check of `moved` holds (or the timeout: the caller asserts them).

    What a commit sets off is recorded after it: the process that committed gives its
    connection back, publishes the events (which may wait on its hub's topic lock, held while
    a catch-up or a gap fill reads the log) and then counts them. So a job read back COMPLETED
    over GraphQL can still be uncounted by a scrape sent just after, and the timeline's
    recompute runs on its own after the events that started it."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        samples, text = await scrape(service)
        if all(moved(samples).values()) or loop.time() > deadline:
            return samples, text
        await asyncio.sleep(0.1)


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

    def moved(after: Samples) -> dict[Any, bool]:
        transitions = "job_state_transitions_total"
        checks: dict[Any, bool] = {
            (a, b): total(after, transitions, from_state=a, to_state=b)
            > total(before, transitions, from_state=a, to_state=b)
            for a, b in (
                ("PENDING", "QUEUED"),
                ("QUEUED", "ADMITTED"),
                ("ADMITTED", "RUNNING"),
                ("RUNNING", "COMPLETED"),
            )
        }
        for name in ("job_queue_wait_seconds_count", "job_duration_seconds_count"):
            checks[name] = total(after, name, job_type="BATCH") > total(
                before, name, job_type="BATCH"
            )
        for name in ("schedule_reestimate_seconds_count", "event_publish_lag_seconds_count"):
            checks[name] = total(after, name) > total(before, name)
        requests = "graphql_request_duration_seconds_count"
        checks[requests] = total(after, requests, operation="other", type="mutation") >= 1
        checks["BAD_USER_INPUT"] = total(after, "graphql_errors_total", code="BAD_USER_INPUT") >= 1
        return checks

    after, text = await scrape_until(service, moved)
    assert all(moved(after).values()), moved(after)
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

        def counted(samples: Samples) -> dict[Any, bool]:
            return {
                "COMPLETED": total(samples, "job_state_transitions_total", to_state="COMPLETED")
                >= 1,
                "requests": total(samples, "graphql_request_duration_seconds_count") >= 1,
            }

        samples, _ = await scrape_until(started, counted)
        assert all(counted(samples).values()), counted(samples)
        assert any(p.suffix == ".db" for p in shared.iterdir())  # the per-process files
    finally:
        await started.stop()
