"""Each tenant's share of an API process, through GraphQL (schema/fairness.py), on SQLite.

Covers: a tenant's heavy operations (a preview costs 110 points) run at most
BUDCLUSTER_TENANT_HEAVY_CONCURRENCY at once, so its next one waits while another tenant's goes
in at once, and a cheap query of the same tenant never waits (the order is checked by holding
the previews inside the estimate, not by timing); a caller told to wait is refused by the
transport before its token is looked up.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from adapters.clock import ManualClock
from domain.model.ids import TenantId
from domain.model.principal import Scope
from domain.services.timeline import Preview
from tests.integration.test_graphql_api import Api, api_on
from tests.integration.test_request_limits import serving

PREVIEW = """query($input: SubmitJobInput!) { previewJob(input: $input) {
  __typename ... on JobPreview { estimatedStart } } }"""
CHEAP = "{ clusters { id } }"


@pytest.fixture
async def api(sqlite_url: str) -> AsyncIterator[Api]:
    async with api_on(sqlite_url, tenant_heavy_concurrency=1) as made:
        yield made


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


async def test_a_caller_told_to_wait_is_refused_before_its_token_is_looked_up(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by benchmarks.contention: a client ignoring Retry-After still cost a token lookup
    and Strawberry's whole pipeline per request; now the transport refuses it from the token it
    presented (hashed) or, without one, its address, until the wait is over."""
    clock = ManualClock()
    small = {"operation_budget": 100, "rate_burst": 100, "rate_points_per_minute": 60}
    async with serving(sqlite_url, clock=clock, **small) as api:
        token = await api.token(Scope.CLUSTERS_READ)
        headers = {"Authorization": f"Bearer {token}"}
        costly = "{ " + " ".join(f"c{i}: clusters {{ id }}" for i in range(9)) + " }"
        answers = [await api.client.post("/graphql", json={"query": costly}, headers=headers)]
        while answers[-1].status_code != 429:
            answers.append(
                await api.client.post("/graphql", json={"query": costly}, headers=headers)
            )
        looked_up: list[object] = []
        original = api.app.tokens.authenticate

        async def counted(bearer: str | None) -> Any:
            looked_up.append(bearer)
            return await original(bearer)

        monkeypatch.setattr(api.app.tokens, "authenticate", counted)
        again = await api.client.post("/graphql", json={"query": "{ __typename }"}, headers=headers)
        assert again.status_code == 429 and int(again.headers["Retry-After"]) > 0
        assert again.json()["errors"][0]["extensions"]["code"] == "RATE_LIMITED"
        assert looked_up == []  # refused from the header alone
        other = await api.token(Scope.CLUSTERS_READ)  # another caller is not held up
        fine = await api.client.post(
            "/graphql",
            json={"query": "{ __typename }"},
            headers={"Authorization": f"Bearer {other}"},
        )
        assert fine.status_code == 200 and looked_up == [other]
        await clock.advance(float(again.headers["Retry-After"]))
        after = await api.client.post("/graphql", json={"query": "{ __typename }"}, headers=headers)
        assert after.status_code == 200
