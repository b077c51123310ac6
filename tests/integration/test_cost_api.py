"""Prices and metered cost through the GraphQL API, on both databases: an operator sets a GPU
price from now on (bad input is a typed error naming the field, and nothing is stored; a tenant
may not set one); a cluster shows the prices in force; a running job's cost so far grows with
the clock at the price of each moment, and its actual cost is what its ended runs cost."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from decimal import Decimal
from typing import Any

import httpx
import pytest

from budcluster.http import create_app
from domain.model.ids import ClusterId, JobId
from domain.model.job import JobStatus
from domain.model.principal import Scope
from domain.ports.unit_of_work import TenantScope
from tests.integration.test_app_flows import make_app, sim_cluster
from tests.integration.test_graphql_api import SUBMIT, Api
from tests.support.fakes import T0, FakeClock

A100 = "nvidia-a100-80gb"
SET_PRICE = """
mutation($input: SetGpuPriceInput!) {
  setGpuPrice(input: $input) {
    __typename
    ... on GpuPrice { gpuType hourlyPrice since }
    ... on ValidationError { fields { path code message } }
    ... on UserError { code message }
  }
}
"""
PRICES = "query($id: ID!) { cluster(id: $id) { gpuPrices { gpuType hourlyPrice since } } }"
COST = "query($id: ID!) { job(id: $id) { status actualCost costSoFar estimatedCost } }"


@asynccontextmanager
async def api_at(url: str, clock: FakeClock, **settings: Any) -> AsyncIterator[Api]:
    app = await make_app(url, clock=clock, **settings)
    cluster = await sim_cluster(app)
    transport = httpx.ASGITransport(app=create_app(app, manage_lifecycle=False))
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            yield Api(app, client, str(cluster.id))
    finally:
        await app.close()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(T0)


@pytest.fixture
async def api(db_url: str, clock: FakeClock) -> AsyncIterator[Api]:
    async with api_at(db_url, clock) as made:
        yield made


def price_input(api: Api, **changes: Any) -> dict[str, Any]:
    return {"input": {"clusterId": api.cluster_id, "gpuType": A100, "hourlyPrice": "3.5"} | changes}


async def move(api: Api, job_id: str, *moves: tuple[JobStatus, timedelta]) -> None:
    async with api.app.db.unit_of_work(TenantScope.system()) as uow:
        job = await uow.jobs.get(JobId(uuid.UUID(job_id)))
        assert job is not None
        for status, after in moves:
            job.transition(status, status.value.lower(), T0 + after)
        await uow.commit()


async def start(api: Api, job_id: str) -> None:
    """The job runs from T0, as its cluster would report it."""
    await move(
        api,
        job_id,
        (JobStatus.QUEUED, timedelta()),
        (JobStatus.ADMITTED, timedelta()),
        (JobStatus.RUNNING, timedelta()),
    )


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"hourlyPrice": "-1"}, "hourlyPrice"),
        ({"hourlyPrice": "NaN"}, "hourlyPrice"),
        ({"hourlyPrice": "Infinity"}, "hourlyPrice"),
        ({"hourlyPrice": "100000.01"}, "hourlyPrice"),
        ({"hourlyPrice": "1.00001"}, "hourlyPrice"),
        ({"gpuType": ""}, "gpuType"),
        ({"gpuType": "a" * 101}, "gpuType"),
        ({"gpuType": "nvidia a100; drop"}, "gpuType"),
        ({"clusterId": "not-a-uuid"}, "clusterId"),
    ],
)
async def test_a_bad_price_is_refused_naming_its_field_and_nothing_is_stored(
    api: Api, changes: dict[str, Any], field: str
) -> None:
    token = await api.token()
    answer = (await api.ok(SET_PRICE, price_input(api, **changes), token=token))["setGpuPrice"]
    assert answer["__typename"] == "ValidationError", answer
    assert [f["path"] for f in answer["fields"]] == [field]
    async with api.app.db.unit_of_work(TenantScope.system()) as uow:
        cluster = ClusterId(uuid.UUID(api.cluster_id))
        assert (await uow.clusters.prices([cluster]))[cluster] == []


async def test_only_an_operator_sets_prices_and_an_unknown_cluster_is_not_found(api: Api) -> None:
    tenant = await api.token(Scope.CLUSTERS_READ, Scope.JOBS_WRITE)
    refused = await api.ok(SET_PRICE, price_input(api), token=tenant)
    assert refused["setGpuPrice"]["code"] == "FORBIDDEN"
    admin = await api.token()
    missing = await api.ok(SET_PRICE, price_input(api, clusterId=str(uuid.uuid4())), token=admin)
    assert missing["setGpuPrice"]["code"] == "NOT_FOUND"


async def test_a_running_jobs_cost_grows_at_the_price_of_each_moment(
    api: Api, clock: FakeClock
) -> None:
    admin = await api.token()
    shown = (await api.ok(PRICES, {"id": api.cluster_id}, token=admin))["cluster"]["gpuPrices"]
    assert shown == [{"gpuType": A100, "hourlyPrice": "2.50", "since": None}]  # the list price

    made = await api.ok(
        SUBMIT, {"input": api.job_input(resources={"gpuType": A100, "gpuCount": 2})}, token=admin
    )
    job_id = made["submitJob"]["id"]
    await start(api, job_id)
    clock.current = T0 + timedelta(minutes=30)
    set_at = await api.ok(SET_PRICE, price_input(api, hourlyPrice="4"), token=admin)
    assert set_at["setGpuPrice"] == {
        "__typename": "GpuPrice",
        "gpuType": A100,
        "hourlyPrice": "4",
        "since": (T0 + timedelta(minutes=30)).isoformat(),
    }
    clock.current = T0 + timedelta(minutes=45)
    now = (await api.ok(COST, {"id": job_id}, token=admin))["job"]
    # 2 GPUs: 30 min at 2.50, 15 at 4
    assert (now["actualCost"], Decimal(now["costSoFar"])) == (None, Decimal("4.5"))

    await move(api, job_id, (JobStatus.COMPLETED, timedelta(minutes=60)))
    clock.current = T0 + timedelta(days=2)
    done = (await api.ok(COST, {"id": job_id}, token=admin))["job"]
    assert Decimal(done["actualCost"]) == Decimal(done["costSoFar"]) == Decimal("6.5")
    shown = (await api.ok(PRICES, {"id": api.cluster_id}, token=admin))["cluster"]["gpuPrices"]
    assert shown == [
        {
            "gpuType": A100,
            "hourlyPrice": "4.0000",
            "since": (T0 + timedelta(minutes=30)).isoformat(),
        }
    ]


SPEND = """
query($from: Date!, $to: Date!, $groupBy: [SpendGroup!], $first: Int, $after: String) {
  spend(from: $from, to: $to, groupBy: $groupBy, first: $first, after: $after) {
    edges { cursor node { projectId day gpuType jobType gpuHours cost } }
    pageInfo { hasNextPage endCursor }
    total { gpuHours cost }
  }
}
"""
DAY = T0.date().isoformat()


async def a_run(api: Api, token: str, minutes: int, name: str) -> str:
    resources = {"gpuType": A100, "gpuCount": 2}
    made = await api.ok(
        SUBMIT, {"input": api.job_input(name=name, resources=resources)}, token=token
    )
    job_id: str = made["submitJob"]["id"]
    await start(api, job_id)
    await move(api, job_id, (JobStatus.COMPLETED, timedelta(minutes=minutes)))
    return job_id


async def test_spend_is_grouped_paged_and_walled_per_tenant(api: Api) -> None:
    alice, bob = (
        await api.token(Scope.JOBS_READ, Scope.JOBS_WRITE),
        await api.token(Scope.JOBS_READ, Scope.JOBS_WRITE),
    )
    for n in range(3):
        await a_run(api, alice, 60 * (n + 1), f"run-{n}")  # 2 A100s at 2.50: 5, 10, 15
    days = {"from": DAY, "to": DAY}
    grouped = (await api.ok(SPEND, days | {"groupBy": ["PROJECT", "DAY"]}, token=alice))["spend"]
    [row] = [e["node"] for e in grouped["edges"]]
    assert row["projectId"] == api.project and row["day"] == DAY and row["gpuType"] is None
    assert Decimal(row["cost"]) == Decimal(grouped["total"]["cost"]) == Decimal("30")
    assert row["gpuHours"] == grouped["total"]["gpuHours"] == 12.0

    nothing = (await api.ok(SPEND, days, token=bob))["spend"]
    assert nothing["edges"][0]["node"]["cost"] == "0.0000" and nothing["total"]["gpuHours"] == 0

    by_type: list[dict[str, Any]] = []
    after = None
    while True:
        page = (
            await api.ok(
                SPEND,
                days | {"groupBy": ["JOB_TYPE", "GPU_TYPE"], "first": 1, "after": after},
                token=alice,
            )
        )["spend"]
        by_type += [e["node"] for e in page["edges"]]
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = page["pageInfo"]["endCursor"]
    assert [(r["jobType"], r["gpuType"]) for r in by_type] == [("TRAINING", A100)]


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"from": "2026-01-02", "to": "2026-01-01"}, "to"),
        ({"from": "2025-01-01", "to": "2026-01-02"}, "to"),
        ({"groupBy": ["DAY", "DAY"]}, "groupBy"),
        ({"first": 0}, "first"),
        ({"first": 1001}, "first"),
        ({"after": "bm90LWEtY3Vyc29y"}, "after"),
    ],
)
async def test_a_bad_spend_argument_is_an_error_naming_it(
    api: Api, changes: dict[str, Any], field: str
) -> None:
    token = await api.token(Scope.JOBS_READ)
    body = (await api.call(SPEND, {"from": DAY, "to": DAY} | changes, token=token)).json()
    assert body["data"] is None, body
    assert [e["extensions"].get("field") for e in body["errors"]] == [field], body


async def test_spend_as_csv_holds_what_the_query_holds(api: Api) -> None:
    alice = await api.token(Scope.JOBS_READ, Scope.JOBS_WRITE)
    await a_run(api, alice, 90, "csv-run")
    url = f"/spend.csv?from={DAY}&to={DAY}&groupBy=PROJECT,GPU_TYPE"
    answer = await api.client.get(url, headers={"Authorization": f"Bearer {alice}"})
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/csv")
    assert answer.text.splitlines() == [
        "project_id,gpu_type,gpu_hours,cost",
        f"{api.project},{A100},3.000000,7.5000",
    ]
    assert (await api.client.get(url)).status_code == 401
    wrong = await api.client.get(
        f"/spend.csv?from=yesterday&to={DAY}", headers={"Authorization": f"Bearer {alice}"}
    )
    assert wrong.status_code == 400 and wrong.json()["errors"][0]["message"].startswith("from")
    other = await api.token(Scope.JOBS_READ)
    theirs = await api.client.get(url, headers={"Authorization": f"Bearer {other}"})
    assert theirs.text.splitlines() == ["project_id,gpu_type,gpu_hours,cost"]
    no_scope = await api.token(Scope.CLUSTERS_READ)
    refused = await api.client.get(url, headers={"Authorization": f"Bearer {no_scope}"})
    assert refused.status_code == 403


SUBMIT_BUDGETED = """
mutation($input: SubmitJobInput!) {
  submitJob(input: $input) {
    __typename
    ... on Job { id budgetLimit budgetAction budgetAlerted }
    ... on ValidationError { fields { path code message } }
  }
}
"""
AUDIT = "query { auditEvents(first: 20) { edges { node { operation actor targets outcome } } } }"


async def test_budgets_act_at_submission_and_while_a_job_runs(api: Api, clock: FakeClock) -> None:
    admin = await api.token()
    resources = {"gpuType": A100, "gpuCount": 2}  # 5 an hour at the list price
    over = api.job_input(  # expected 10 over two hours
        name="over", resources=resources, estimatedDurationSeconds=7200, budgetLimit="9.99"
    )
    refused = (
        await api.ok(SUBMIT_BUDGETED, {"input": over | {"budgetAction": "CANCEL"}}, token=admin)
    )["submitJob"]
    assert refused["__typename"] == "ValidationError", refused
    assert [(f["path"], f["code"]) for f in refused["fields"]] == [("budgetLimit", "OVER_BUDGET")]
    assert await api.count_jobs() == 0
    warned = (await api.ok(SUBMIT_BUDGETED, {"input": over}, token=admin))["submitJob"]
    assert (warned["budgetAction"], warned["budgetAlerted"]) == ("WARN", 0)

    runs = api.job_input(name="runs", resources=resources, budgetLimit="1")
    made = await api.ok(SUBMIT_BUDGETED, {"input": runs | {"budgetAction": "CANCEL"}}, token=admin)
    job_id = made["submitJob"]["id"]
    await start(api, job_id)
    clock.current = T0 + timedelta(minutes=10)  # 0.83 of 1: 80 %
    assert [n.share for _, n in await api.app.budgets.check()] == [80]
    clock.current = T0 + timedelta(minutes=12)  # 1.00: cancelled
    assert [n.share for _, n in await api.app.budgets.check()] == [100]
    now = (await api.ok(COST, {"id": job_id}, token=admin))["job"]
    assert now["status"] == "CANCELLED" and Decimal(now["actualCost"]) == Decimal("1")
    audited = (await api.ok(AUDIT, token=admin))["auditEvents"]["edges"]
    said = [e["node"] for e in audited if e["node"]["actor"] == "system:budgets"]
    assert [(n["operation"], n["targets"][0]) for n in said] == [
        ("budgetExceeded", job_id),
        ("budgetWarning", job_id),
    ]
    cluster = ClusterId(uuid.UUID(api.cluster_id))
    events = await api.app.event_log.read_after(cluster, 0, limit=1000)
    notices = [
        e.job_change.budget
        for e in events
        if e.job_change is not None and e.job_change.budget is not None
    ]
    assert [(n.share, n.expected) for n in notices] == [(100, True), (80, False), (100, False)]


UPDATE_BUDGET = """
mutation($id: ID!, $limit: Decimal, $action: BudgetAction!) {
  updateJobBudget(id: $id, budgetLimit: $limit, budgetAction: $action) {
    __typename
    ... on Job { budgetLimit budgetAction budgetAlerted }
    ... on ValidationError { fields { path code } }
    ... on UserError { code }
  }
}
"""


async def test_a_jobs_budget_is_changed_by_its_tenant_alone(api: Api) -> None:
    alice, bob = (
        await api.token(Scope.JOBS_READ, Scope.JOBS_WRITE),
        await api.token(Scope.JOBS_READ, Scope.JOBS_WRITE),
    )
    made = await api.ok(SUBMIT, {"input": api.job_input(name="budgeted")}, token=alice)
    job_id = made["submitJob"]["id"]
    change = {"id": job_id, "limit": "12.5", "action": "CANCEL"}
    done = (await api.ok(UPDATE_BUDGET, change, token=alice))["updateJobBudget"]
    assert done == {
        "__typename": "Job",
        "budgetLimit": "12.5",
        "budgetAction": "CANCEL",
        "budgetAlerted": 0,
    }
    theirs = (await api.ok(UPDATE_BUDGET, change, token=bob))["updateJobBudget"]
    assert theirs == {"__typename": "NotFoundError", "code": "NOT_FOUND"}
    for bad in ("-1", "NaN", "1e20"):
        refused = (await api.ok(UPDATE_BUDGET, change | {"limit": bad}, token=alice))[
            "updateJobBudget"
        ]
        assert refused["fields"][0]["path"] == "budgetLimit", refused
    cleared = await api.ok(UPDATE_BUDGET, change | {"limit": None}, token=alice)
    assert cleared["updateJobBudget"]["budgetLimit"] is None


FORECAST = """
query($id: ID!, $hours: Int!) {
  cluster(id: $id) {
    costForecast(hours: $hours) {
      start end hours { start cost low high } projects { projectId cost low high }
    }
  }
}
"""


async def test_a_cost_forecast_holds_the_work_the_caller_may_see(api: Api) -> None:
    alice, bob = (
        await api.token(Scope.JOBS_READ, Scope.JOBS_WRITE, Scope.CLUSTERS_READ),
        (await api.token(Scope.JOBS_READ, Scope.JOBS_WRITE, Scope.CLUSTERS_READ)),
    )
    resources = {"gpuType": A100, "gpuCount": 4}  # 10 an hour at the list price
    hers = api.job_input(name="hers", resources=resources, estimatedDurationSeconds=3600)
    await api.ok(SUBMIT, {"input": hers}, token=alice)
    his = hers | {"name": "his", "projectId": str(uuid.uuid4())}
    await api.ok(SUBMIT, {"input": his}, token=bob)
    await api.app.timeline.refresh(ClusterId(uuid.UUID(api.cluster_id)))
    variables = {"id": api.cluster_id, "hours": 3}
    mine = (await api.ok(FORECAST, variables, token=alice))["cluster"]["costForecast"]
    assert [p["projectId"] for p in mine["projects"]] == [api.project]
    [project] = mine["projects"]
    assert Decimal(project["cost"]) > 0
    assert sum(Decimal(h["cost"]) for h in mine["hours"]) == Decimal(project["cost"])
    everyone = (await api.ok(FORECAST, variables, token=await api.token()))["cluster"]
    assert len(everyone["costForecast"]["projects"]) == 2
    body = (await api.call(FORECAST, variables | {"hours": 0}, token=alice)).json()
    assert body["errors"][0]["extensions"]["field"] == "hours", body
