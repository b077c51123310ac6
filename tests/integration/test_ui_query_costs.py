"""The queries the BudAdmin UI runs most, as it sends them (the persisted documents generated
from frontend-contract/operations), cost a pinned number of SQL statements whatever the data.

Covers, on SQLite and PostgreSQL: the cluster list and detail, the job list page and a job's
detail (events, estimate and window, Kueue position), the schedule query and the quotas screen
each run the same number of statements with 4 jobs as with 40 (no N+1), and that number is
pinned, so a change that adds a query per row or per screen is seen here first. Each query is
counted warm (run once before): the first schedule read after a change computes the timeline.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from sqlalchemy import event

from budcluster.http import create_app
from budcluster.http.persisted import MANIFEST
from tests.integration.test_app_flows import make_app, sim_cluster
from tests.integration.test_graphql_api import SUBMIT, Api


@pytest.fixture
async def ui(db_url: str) -> AsyncIterator[Api]:
    app = await make_app(db_url)
    cluster = await sim_cluster(app)
    transport = httpx.ASGITransport(app=create_app(app, manage_lifecycle=False))
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        yield Api(app, client, str(cluster.id))
    await app.close()


def _operation(name: str) -> str:
    """The manifest's document whose operation is `name`."""
    for text in json.loads(MANIFEST.read_text()).values():
        if f"query {name}(" in text or f"query {name} " in text:
            return str(text)
    raise AssertionError(f"no query {name} in the persisted documents")


async def _statements(api: Api, name: str, variables: dict[str, Any], token: str) -> int:
    statements: list[str] = []

    def count(conn: object, cursor: object, statement: str, *args: object) -> None:
        if not statement.lstrip().upper().startswith(("PRAGMA", "SAVEPOINT", "RELEASE")):
            statements.append(statement)

    engine = api.app.db.engine.sync_engine
    event.listen(engine, "before_cursor_execute", count)
    try:
        await api.ok(_operation(name), variables, token=token)
    finally:
        event.remove(engine, "before_cursor_execute", count)
    return len(statements)


async def _costs(api: Api, token: str, job_id: str) -> dict[str, int]:
    """Each screen's statements once warm: the first schedule read after a change computes and
    stores the timeline (the re-estimate the outbox would otherwise trigger), so every query is
    run twice and the second counted."""
    await _measured(api, token, job_id)
    return await _measured(api, token, job_id)


async def _measured(api: Api, token: str, job_id: str) -> dict[str, int]:
    cluster = {"id": api.cluster_id}
    return {
        "ClusterList": await _statements(api, "ClusterList", {}, token),
        "ClusterDetail": await _statements(api, "ClusterDetail", cluster, token),
        "JobList": await _statements(
            api, "JobList", {"filter": {"clusterIds": [api.cluster_id]}, "first": 50}, token
        ),
        "JobDetail": await _statements(api, "JobDetail", {"id": job_id}, token),
        "ClusterSchedule": await _statements(api, "ClusterSchedule", cluster, token),
        "ClusterQuotas": await _statements(api, "ClusterQuotas", cluster, token),
    }


async def test_the_uis_main_queries_cost_a_pinned_number_of_statements(ui: Api) -> None:
    api = ui
    token = await api.token()
    jobs = []
    for i in range(4):
        made = await api.ok(SUBMIT, {"input": api.job_input(name=f"j{i}")}, token=token)
        jobs.append(made["submitJob"]["id"])
    few = await _costs(api, token, jobs[0])
    await sim_cluster(api.app)
    for i in range(4, 40):
        await api.ok(SUBMIT, {"input": api.job_input(name=f"j{i}")}, token=token)
    many = await _costs(api, token, jobs[0])
    assert few == many, (few, many)
    # Each count starts with the token lookup.
    assert many == {
        "ClusterList": 3,  # clusters, their nodes
        "ClusterDetail": 5,  # the cluster, nodes, the accuracy record, its add-on requests
        "JobList": 2,  # one page of jobs (resources are columns)
        "JobDetail": 4,  # the job, its events, the timeline's estimate
        "ClusterSchedule": 6,  # the stored timeline and what it is cut with
        "ClusterQuotas": 11,  # flavors, queues, usage, cohorts, settings, local queues
    }


async def test_the_uis_main_queries_cost_well_under_the_budget(ui: Api) -> None:
    """Each list item costs a point: the UI's screens still cost a small part of an
    operation's budget (10,000), and of a token's rate bucket."""
    api = ui
    token = await api.token()
    job = (await api.ok(SUBMIT, {"input": api.job_input(name="j")}, token=token))["submitJob"]
    cluster = {"id": api.cluster_id}
    screens: dict[str, dict[str, Any]] = {
        "ClusterList": {},
        "ClusterDetail": cluster,
        "JobList": {"filter": {"clusterIds": [api.cluster_id]}, "first": 50},
        "JobDetail": {"id": job["id"]},
        "ClusterSchedule": cluster,
        "ClusterQuotas": cluster,
    }
    costs = {}
    for name, variables in screens.items():
        response = await api.call(_operation(name), variables, token=token)
        costs[name] = response.json()["extensions"]["cost"]["requested"]
    assert max(costs.values()) <= 500, costs
