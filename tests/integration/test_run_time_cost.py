"""What an operation costs once it runs, on SQLite: a schedule's size is known only when it is
read, so each `schedule` adds what it holds (segments once per row, queue, rows, forecast) to
the operation's cost; a document repeating it is refused field by field (COST_LIMIT_EXCEEDED,
path named) once past the budget, instead of building every copy (found from outside: 100 jobs,
each with its cluster's schedule, cost 6,311 points and took 6.5 s of the server's only core).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest

from domain.model.ids import ClusterId
from domain.model.principal import Scope
from schema.schedule import objects_in
from tests.integration.test_graphql_api import SUBMIT, Api, api_on

BUDGET = 2000
ONE = "query($id: ID!) { cluster(id: $id) { schedule { segments { id rows } queue { jobId } } } }"
TWENTY = (
    "query($id: ID!) { "
    + " ".join(
        f"s{i}: cluster(id: $id) {{ schedule {{ segments {{ id rows }} }} }}" for i in range(20)
    )
    + " }"
)


@pytest.fixture
async def api(sqlite_url: str) -> AsyncIterator[Api]:
    async with api_on(sqlite_url, operation_budget=BUDGET) as made:
        yield made


async def test_each_schedule_pays_for_what_it_holds_and_copies_past_the_budget_are_refused(
    api: Api,
) -> None:
    token = await api.token(Scope.JOBS_READ, Scope.JOBS_WRITE, Scope.CLUSTERS_READ)
    for n in range(30):
        resources = {"gpuType": "nvidia-a100-80gb", "gpuCount": 4}
        made = await api.ok(
            SUBMIT, {"input": api.job_input(name=f"j{n}", resources=resources)}, token=token
        )
        assert made["submitJob"]["__typename"] == "Job", made
    await api.app.timeline.refresh(ClusterId(uuid.UUID(api.cluster_id)))
    view = await api.app.timeline._stored(ClusterId(uuid.UUID(api.cluster_id)))
    size = objects_in(view.timeline)
    assert 150 < size < BUDGET // 4  # 30 jobs of 4 rows each, and the queue

    one = (await api.call(ONE, {"id": api.cluster_id}, token=token)).json()
    assert "errors" not in one and len(one["data"]["cluster"]["schedule"]["segments"]) == 30

    twenty = (await api.call(TWENTY, {"id": api.cluster_id}, token=token)).json()
    refused = [e for e in twenty["errors"] if e["extensions"]["code"] == "COST_LIMIT_EXCEEDED"]
    served = [k for k, v in twenty["data"].items() if v is not None]
    assert refused and served, twenty  # the first copies within the budget, the rest refused
    assert len(served) + len(refused) == 20
    assert len(served) * size <= BUDGET
    assert all(e["path"][-1] == "schedule" for e in refused)
    assert refused[0]["extensions"]["budget"] == BUDGET
