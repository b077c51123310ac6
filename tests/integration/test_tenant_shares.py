"""Each tenant's share of an API process, through GraphQL (schema/fairness.py), on SQLite.

Covers: a tenant's heavy operations (a preview costs 110 points) run at most
BUDCLUSTER_TENANT_HEAVY_CONCURRENCY at once, so its next one waits while another tenant's goes
in at once, and a cheap query of the same tenant never waits; the order is checked by holding
the previews inside the estimate, not by timing.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from budcluster.http import create_app
from domain.model.ids import TenantId
from domain.model.principal import Scope
from domain.services.timeline import Preview
from tests.integration.test_app_flows import make_app, sim_cluster
from tests.integration.test_graphql_api import Api

PREVIEW = """query($input: SubmitJobInput!) { previewJob(input: $input) {
  __typename ... on JobPreview { estimatedStart } } }"""
CHEAP = "{ clusters { id } }"


@pytest.fixture
async def api(sqlite_url: str) -> AsyncIterator[Api]:
    app = await make_app(sqlite_url, tenant_heavy_concurrency=1)
    cluster = await sim_cluster(app)
    transport = httpx.ASGITransport(app=create_app(app, manage_lifecycle=False))
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        yield Api(app, client, str(cluster.id))
    await app.close()


async def test_a_tenants_heavy_operations_take_turns_and_others_go_in(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    b = TenantId(uuid.uuid4())
    b1, b2 = [await api.token(Scope.JOBS_READ, Scope.CLUSTERS_READ, tenant=b) for _ in range(2)]
    a = await api.token(Scope.JOBS_READ, Scope.CLUSTERS_READ)
    release = asyncio.Event()
    running: list[TenantId] = []
    arrived = asyncio.Condition()
    original = api.app.timeline.preview

    async def held(principal: Any, sub: Any) -> Preview:
        async with arrived:
            running.append(principal.tenant_id)
            arrived.notify_all()
        await release.wait()
        return await original(principal, sub)

    async def until_running(count: int) -> None:
        async with arrived:
            await arrived.wait_for(lambda: len(running) >= count)

    monkeypatch.setattr(api.app.timeline, "preview", held)
    variables = {"input": api.job_input(name="what-if")}
    first = asyncio.create_task(api.call(PREVIEW, variables, token=b1))
    second = asyncio.create_task(api.call(PREVIEW, variables, token=b2))  # another token of B
    await until_running(1)
    theirs = asyncio.create_task(api.call(PREVIEW, variables, token=a))
    await until_running(2)
    assert running == [b, running[1]] and running[1] != b  # A's went in; B's second waits
    cheap = await api.call(CHEAP, token=b2)  # cheap work never waits
    assert cheap.status_code == 200 and "errors" not in cheap.json()
    assert not second.done()
    release.set()
    answers = await asyncio.gather(first, second, theirs)
    assert running[2] == b
    for answer in answers:
        assert answer.json()["data"]["previewJob"]["__typename"] == "JobPreview", answer.text
