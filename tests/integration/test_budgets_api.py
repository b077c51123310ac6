"""Project and tenant budgets through the GraphQL API, on both databases: the operator sets a
tenant's budget and the tenant its project's within it (bad input is a typed error naming the
field, and nothing is stored; another tenant sees none of it); a PAUSE budget holds a job
expected over it, with its reason on the job and in its estimate, until the limit is raised; a
spent budget takes back a running job and says so (the job's stream, the audit trail, the
metric); a budget shows when the schedule is expected to spend it."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from domain.model.ids import ClusterId, JobId, TenantId
from domain.model.job import JobStatus
from domain.model.principal import Scope
from domain.ports.unit_of_work import TenantScope
from tests.integration.test_cost_api import A100, api_at, start
from tests.integration.test_graphql_api import SUBMIT, Api
from tests.support.fakes import T0, FakeClock

SET = """
mutation($input: SetBudgetInput!) {
  setBudget(input: $input) {
    __typename
    ... on Budget { scope limit action spent left share exhausted periodStart periodEnd }
    ... on ValidationError { fields { path code message } }
    ... on UserError { code message }
  }
}
"""
BUDGETS = """
query { budgets { tenantId projectId scope limit action spent left share exhausted alerted
  projectedExhaustion { expected earliest latest } } }
"""
HELD = "query($id: ID!) { job(id: $id) { status heldBy holdReason estimate { start reason } } }"
REMOVE = """
mutation($projectId: ID) { removeBudget(projectId: $projectId) {
  __typename ... on Budget { limit } ... on UserError { code } } }
"""


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(T0)


@pytest.fixture
async def api(db_url: str, clock: FakeClock) -> AsyncIterator[Api]:
    async with api_at(db_url, clock) as made:
        yield made


class Tenant:
    def __init__(self, api: Api) -> None:
        self.id = TenantId(uuid.uuid4())
        self.api = api

    async def token(self) -> str:
        return await self.api.token(Scope.JOBS_READ, Scope.JOBS_WRITE, tenant=self.id)


def budget_input(api: Api, limit: str, action: str = "PAUSE", **more: Any) -> dict[str, Any]:
    return {"input": {"projectId": api.project, "limit": limit, "action": action} | more}


async def test_who_sets_what_and_bad_input_stores_nothing(api: Api) -> None:
    alice = Tenant(api)
    token, operator = await alice.token(), await api.token()
    refused = await api.ok(SET, {"input": {"limit": "100"}}, token=token)
    assert refused["setBudget"]["code"] == "FORBIDDEN"  # a tenant's is the operator's
    whole = await api.ok(
        SET,
        {"input": {"tenantId": str(alice.id), "limit": "100", "action": "WARN"}},
        token=operator,
    )
    assert whole["setBudget"]["scope"] == "TENANT"
    for limit, code in (
        ("100.01", "limit"),
        ("-1", "limit"),
        ("NaN", "limit"),
        ("1.00001", "limit"),
    ):
        bad = (await api.ok(SET, budget_input(api, limit), token=token))["setBudget"]
        assert bad["__typename"] == "ValidationError" and bad["fields"][0]["path"] == code
    wrong_id = budget_input(api, "5")
    wrong_id["input"]["projectId"] = "not-an-id"
    bad = (await api.ok(SET, wrong_id, token=token))["setBudget"]
    assert bad["fields"][0]["path"] == "projectId"
    shown = (await api.ok(BUDGETS, token=token))["budgets"]
    assert [b["scope"] for b in shown] == ["TENANT"]  # nothing half-stored

    made = (await api.ok(SET, budget_input(api, "50"), token=token))["setBudget"]
    assert made == {
        "__typename": "Budget",
        "scope": "PROJECT",
        "limit": "50.0000",
        "action": "PAUSE",
        "spent": "0.0000",
        "left": "50.0000",
        "share": 0,
        "exhausted": False,
        "periodStart": "2026-01-01",
        "periodEnd": "2026-01-31",
    }
    bob = await Tenant(api).token()
    assert (await api.ok(BUDGETS, token=bob))["budgets"] == []
    theirs = await api.ok(REMOVE, {"projectId": api.project}, token=bob)
    assert theirs["removeBudget"]["code"] == "NOT_FOUND"
    gone = await api.ok(REMOVE, {"projectId": api.project}, token=token)
    assert gone["removeBudget"] == {"__typename": "Budget", "limit": "50.0000"}


async def test_a_pause_budget_holds_a_job_until_raised(api: Api) -> None:
    alice = Tenant(api)
    token = await alice.token()
    await api.ok(SET, budget_input(api, "4"), token=token)
    job_input = api.job_input(
        resources={"gpuType": A100, "gpuCount": 2}, estimatedDurationSeconds=3600
    )  # 2 A100s at 2.50 for an hour: 5.00
    made = (await api.ok(SUBMIT, {"input": job_input}, token=token))["submitJob"]
    await api.app.timeline.refresh(ClusterId(uuid.UUID(api.cluster_id)))
    held = (await api.ok(HELD, {"id": made["id"]}, token=token))["job"]
    assert held["status"] == "PENDING" and held["heldBy"] == "PROJECT"
    assert "held by its project's budget" in held["holdReason"]
    assert (
        held["estimate"]["start"] == "2026-02-01T00:00:00+00:00"
        and held["estimate"]["reason"] == held["holdReason"]
    )
    raised = (await api.ok(SET, budget_input(api, "10"), token=token))["setBudget"]
    assert raised["left"] == "10.0000"
    released = (await api.ok(HELD, {"id": made["id"]}, token=token))["job"]
    assert released["heldBy"] is None and released["holdReason"] is None


async def test_a_spent_budget_takes_back_a_running_job_and_says_so(
    api: Api, clock: FakeClock
) -> None:
    alice = Tenant(api)
    token = await alice.token()
    await api.ok(SET, budget_input(api, "5"), token=token)
    job_input = api.job_input(
        resources={"gpuType": A100, "gpuCount": 2}, estimatedDurationSeconds=None
    )
    job_id = (await api.ok(SUBMIT, {"input": job_input}, token=token))["submitJob"]["id"]
    await start(api, job_id)
    clock.current = T0 + timedelta(minutes=50)  # 4.17 of 5
    await api.app.budgets.check()
    [shown] = (await api.ok(BUDGETS, token=token))["budgets"]
    assert (shown["share"], shown["alerted"], shown["exhausted"]) == (83, 80, False)
    clock.current = T0 + timedelta(minutes=61)  # 5.08 of 5
    await api.app.budgets.check()
    async with api.app.db.unit_of_work(TenantScope.system()) as uow:
        job = await uow.jobs.get(JobId(uuid.UUID(job_id)))
        events = await uow.jobs.events([JobId(uuid.UUID(job_id))])
    assert job is not None and job.status is JobStatus.PENDING and job.attempt == 0
    assert job.actual_cost == Decimal("5.0833")
    assert [e.to_status for e in events[job.id]][-2:] == [JobStatus.PREEMPTED, JobStatus.PENDING]
    [shown] = (await api.ok(BUDGETS, token=token))["budgets"]
    assert (shown["spent"], shown["exhausted"], shown["alerted"]) == ("5.0833", True, 100)
    audit = await api.ok(
        "query { auditEvents(first: 20) { edges { node { operation actor } } } }", token=token
    )
    system = [
        e["node"]["operation"]
        for e in audit["auditEvents"]["edges"]
        if e["node"]["actor"] == "system:budgets"
    ]
    assert sorted(system) == ["budgetExceeded", "budgetWarning"]
    text, _ = await api.app.metrics_text()
    assert b'job_budget_notices_total{budget_action="PAUSE",scope="PROJECT",share="100"}' in text


async def test_a_budget_shows_when_the_schedule_spends_it(api: Api) -> None:
    alice = Tenant(api)
    token = await alice.token()
    await api.ok(SET, budget_input(api, "10", "WARN"), token=token)
    job_input = api.job_input(
        resources={"gpuType": A100, "gpuCount": 2}, estimatedDurationSeconds=4 * 3600
    )  # 5.00 an hour for 4 hours: 10.00 is spent 2 hours after it starts
    await api.ok(SUBMIT, {"input": job_input}, token=token)
    await api.app.timeline.refresh(ClusterId(uuid.UUID(api.cluster_id)))
    [shown] = (await api.ok(BUDGETS, token=token))["budgets"]
    when = shown["projectedExhaustion"]
    expected = datetime.fromisoformat(when["expected"])
    assert T0 + timedelta(hours=2) <= expected <= T0 + timedelta(hours=2, minutes=15), when
    assert when["earliest"] is not None and datetime.fromisoformat(when["earliest"]) <= expected
