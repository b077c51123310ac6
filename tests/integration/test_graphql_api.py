"""The GraphQL API in-process over HTTP (ASGI), on the embedded wiring with a real database.

Covers: every bad submission answers a ValidationError naming its field and stores nothing;
missing, malformed and revoked tokens get an unauthenticated error, no data and HTTP 401, while
introspection needs no token; scopes are enforced; one tenant never reaches another's jobs;
malformed ids, cursors and page sizes are typed errors naming the argument; depth and alias
limits; internal errors are masked; idempotent submission; the DataLoaders keep a 100-job listing
with clusters and histories to a constant, small number of SQL statements.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from sqlalchemy import event

from budcluster.bootstrap import App
from budcluster.http import create_app
from domain.model.ids import TenantId
from domain.model.principal import OPERATOR_SCOPES, Scope
from tests.integration.test_app_flows import make_app, sim_cluster

SUBMIT = """
mutation Submit($input: SubmitJobInput!) {
  submitJob(input: $input) {
    __typename
    ... on Job { id name status resources { gpuType gpuCount } }
    ... on UserError { code message }
    ... on ValidationError { fields { path code message } }
  }
}
"""


class Api:
    def __init__(self, app: App, client: httpx.AsyncClient, cluster_id: str) -> None:
        self.app = app
        self.client = client
        self.cluster_id = cluster_id
        self.project = str(uuid.uuid4())

    async def token(self, *scopes: Scope, tenant: TenantId | None = None) -> str:
        held = frozenset(scopes or {Scope.ADMIN})
        issued = await self.app.tokens.issue(
            tenant_id=tenant or TenantId(uuid.uuid4()),
            name="test",
            scopes=held,
            operator=bool(held & OPERATOR_SCOPES),
        )
        return issued.secret

    async def call(
        self, query: str, variables: dict[str, Any] | None = None, *, token: str | None = None
    ) -> httpx.Response:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return await self.client.post(
            "/graphql", json={"query": query, "variables": variables}, headers=headers
        )

    async def ok(
        self, query: str, variables: dict[str, Any] | None = None, *, token: str
    ) -> dict[str, Any]:
        response = await self.call(query, variables, token=token)
        body: dict[str, Any] = response.json()
        assert response.status_code == 200 and "errors" not in body, body
        data: dict[str, Any] = body["data"]
        return data

    def job_input(self, **changes: Any) -> dict[str, Any]:
        base: dict[str, Any] = {
            "name": "train-1",
            "projectId": self.project,
            "clusterId": self.cluster_id,
            "jobType": "TRAINING",
            "deploymentType": "DOCKER",
            "resources": {"gpuType": "nvidia-a100-80gb", "gpuCount": 4},
            "estimatedDurationSeconds": 600,
        }
        base.update(changes)
        return base

    async def count_jobs(self) -> int:
        from domain.ports.repositories import JobFilter
        from domain.ports.unit_of_work import TenantScope

        async with self.app.db.unit_of_work(TenantScope.system()) as uow:
            return len((await uow.jobs.page(JobFilter(), first=100)).jobs)


@asynccontextmanager
async def api_on(url: str, **settings: Any) -> AsyncIterator[Api]:
    """The API in-process over ASGI, on a database, with a simulated cluster of 8 GPUs."""
    app = await make_app(url, **settings)
    cluster = await sim_cluster(app)
    transport = httpx.ASGITransport(app=create_app(app, manage_lifecycle=False))
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            yield Api(app, client, str(cluster.id))
    finally:
        await app.close()


@pytest.fixture
async def api(db_url: str) -> AsyncIterator[Api]:
    async with api_on(db_url) as made:
        yield made


def nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth - 1):
        value = {"a": value}
    return value


BAD_INPUTS = [
    ({"resources": {"gpuType": "nvidia-a100-80gb", "gpuCount": -1}}, "resources.gpuCount"),
    ({"resources": {"gpuType": "nvidia-a100-80gb", "gpuCount": 9}}, "resources.gpuCount"),
    ({"resources": {"gpuType": "nvidia-h100-sxm", "gpuCount": 1}}, "resources.gpuType"),
    ({"clusterId": str(uuid.uuid4())}, "clusterId"),
    ({"clusterId": "not-a-uuid"}, "clusterId"),
    ({"projectId": "nope"}, "projectId"),
    ({"name": ""}, "name"),
    ({"name": "x" * 54}, "name"),
    ({"name": "Has_Upper"}, "name"),
    ({"maxDurationSeconds": 60}, "maxDurationSeconds"),
    ({"deadline": "2001-01-01T00:00:00+00:00"}, "deadline"),
    ({"maxRetries": 50}, "maxRetries"),
    ({"budgetLimit": "-3"}, "budgetLimit"),
    ({"source": {"kind": "PIPELINE"}}, "source.sourceId"),
    ({"priority": "CRITICAL", "preemptible": True}, "preemptible"),
    ({"spec": {"blob": "x" * 70000}}, "spec"),
    # found from outside: accepted though wrong
    ({"resources": {"gpuType": "nvidia-a100-80gb", "gpuCount": 0}}, "resources.gpuCount"),
    ({"spec": {"simulation": {"runtime_seconds": "abc"}}}, "spec.simulation.runtime_seconds"),
    ({"spec": {"simulation": {"outcome": "MAYBE"}}}, "spec.simulation.outcome"),
    ({"spec": {"simulation": {"runtime": 5}}}, "spec.simulation.runtime"),
    ({"spec": {"simulation": 5}}, "spec.simulation"),
    ({"spec": nested(40)}, "spec"),
]


@pytest.mark.parametrize(("changes", "path"), BAD_INPUTS, ids=[p for _, p in BAD_INPUTS])
async def test_bad_input_is_a_validation_error_and_stores_nothing(
    api: Api, changes: dict[str, Any], path: str
) -> None:
    token = await api.token()
    data = await api.ok(SUBMIT, {"input": api.job_input(**changes)}, token=token)
    result = data["submitJob"]
    assert result["__typename"] == "ValidationError"
    assert [f["path"] for f in result["fields"]] == [path]
    assert await api.count_jobs() == 0


async def test_messages_name_fields_as_the_api_does(api: Api) -> None:
    """Found from outside: a message named `estimated_duration_seconds`."""
    token = await api.token()
    data = await api.ok(
        SUBMIT,
        {"input": api.job_input(estimatedDurationSeconds=600, maxDurationSeconds=300)},
        token=token,
    )
    [field] = data["submitJob"]["fields"]
    assert field["path"] == "maxDurationSeconds"
    assert "estimatedDurationSeconds" in field["message"] and "_" not in field["message"]
    data = await api.ok(
        SUBMIT,
        {"input": api.job_input(resources={"gpuCount": 2})},
        token=token,
    )
    [field] = data["submitJob"]["fields"]
    assert (field["path"], "gpuCount" in field["message"]) == ("resources.gpuType", True)


async def test_wrongly_typed_input_is_refused_before_anything_runs(api: Api) -> None:
    token = await api.token()
    response = await api.call(
        SUBMIT, {"input": api.job_input(resources={"gpuCount": "four"})}, token=token
    )
    body = response.json()
    assert body.get("data") is None
    assert (
        "resources" in body["errors"][0]["message"] and "gpuCount" in body["errors"][0]["message"]
    )
    assert await api.count_jobs() == 0


async def test_a_good_submission_and_idempotency(api: Api) -> None:
    token = await api.token()
    variables = {"input": api.job_input(idempotencyKey="once")}
    first = (await api.ok(SUBMIT, variables, token=token))["submitJob"]
    second = (await api.ok(SUBMIT, variables, token=token))["submitJob"]
    assert first["__typename"] == "Job" and first["status"] == "PENDING"
    assert second["id"] == first["id"]
    assert await api.count_jobs() == 1


@pytest.mark.parametrize(
    "header",
    [None, "Bearer", "Bearer nonsense", "Basic abc", f"Bearer bud_{uuid.uuid4().hex}_{'x' * 43}"],
)
async def test_without_a_valid_token_no_data(api: Api, header: str | None) -> None:
    headers = {"Authorization": header} if header else {}
    response = await api.client.post(
        "/graphql", json={"query": "{ clusters { id } }"}, headers=headers
    )
    assert response.status_code == 401
    body = response.json()
    assert body["data"] is None
    assert body["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"


async def test_revoked_token(api: Api) -> None:
    issued = await api.app.tokens.issue(
        tenant_id=TenantId(uuid.uuid4()), name="t", scopes=frozenset({Scope.ADMIN}), operator=True
    )
    await api.ok("{ clusters { id } }", token=issued.secret)
    await api.app.tokens.revoke(issued.token.id)
    response = await api.call("{ clusters { id } }", token=issued.secret)
    assert response.status_code == 401 and response.json()["data"] is None


async def test_introspection_needs_no_token(api: Api) -> None:
    """Embedded (SQLite); in production mode (PostgreSQL) only when the setting says so."""
    response = await api.call("{ __schema { queryType { name } } }")
    if not api.app.settings.is_embedded:
        assert response.status_code == 401
        assert response.json()["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"
        return
    assert response.status_code == 200
    assert response.json()["data"]["__schema"]["queryType"]["name"] == "Query"
    mixed = await api.call("{ __typename clusters { id } }")
    assert mixed.status_code == 401
    spread = await api.call("query { ...__x } fragment __x on Query { clusters { id } }")
    assert spread.status_code == 401 and spread.json()["data"] is None


async def test_scopes(api: Api) -> None:
    reader = await api.token(Scope.JOBS_READ)
    result = (await api.ok(SUBMIT, {"input": api.job_input()}, token=reader))["submitJob"]
    assert result["__typename"] == "ForbiddenError"
    response = await api.call("{ clusters { id } }", token=reader)
    assert response.json()["errors"][0]["extensions"]["code"] == "FORBIDDEN"
    assert await api.count_jobs() == 0


async def test_tenants_never_see_each_other(api: Api) -> None:
    tenant_scopes = (Scope.JOBS_READ, Scope.JOBS_WRITE)
    alice, bob = await api.token(*tenant_scopes), await api.token(*tenant_scopes)
    job = (await api.ok(SUBMIT, {"input": api.job_input()}, token=alice))["submitJob"]
    query = """query($id: ID!) { job(id: $id) { id } jobs { edges { node { id } } }
                                 jobEvents(jobId: $id) { toStatus } }"""
    seen_by_bob = await api.ok(query, {"id": job["id"]}, token=bob)
    assert seen_by_bob == {"job": None, "jobs": {"edges": []}, "jobEvents": []}
    cancel = """mutation($id: ID!) { cancelJob(id: $id) { __typename } }"""
    assert (await api.ok(cancel, {"id": job["id"]}, token=bob))["cancelJob"]["__typename"] == (
        "NotFoundError"
    )
    seen_by_alice = await api.ok(query, {"id": job["id"]}, token=alice)
    assert seen_by_alice["job"] == {"id": job["id"]}
    assert seen_by_alice["jobEvents"][0]["toStatus"] == "PENDING"


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ('{ job(id: "123") { id } }', "id"),
        ('{ jobs(after: "garbage") { edges { cursor } } }', "after"),
        ("{ jobs(first: 500) { edges { cursor } } }", "first"),
        ('{ jobs(filter: {clusterIds: ["x"]}) { edges { cursor } } }', "filter.clusterIds"),
        ('{ cluster(id: "nope") { id } }', "id"),
    ],
)
async def test_malformed_arguments_name_the_field(api: Api, query: str, field: str) -> None:
    body = (await api.call(query, token=await api.token())).json()
    assert body["errors"][0]["extensions"] == {"code": "BAD_USER_INPUT", "field": field}


async def test_command_errors(api: Api) -> None:
    token = await api.token()
    job = (await api.ok(SUBMIT, {"input": api.job_input()}, token=token))["submitJob"]
    cancel = """mutation($id: ID!, $r: String) { cancelJob(id: $id, reason: $r) {
                 __typename ... on Job { status statusMessage } ... on UserError { code } } }"""
    done = (await api.ok(cancel, {"id": job["id"], "r": "test over"}, token=token))["cancelJob"]
    assert done == {"__typename": "Job", "status": "CANCELLED", "statusMessage": "test over"}
    again = (await api.ok(cancel, {"id": job["id"]}, token=token))["cancelJob"]
    assert again == {"__typename": "ConflictError", "code": "ALREADY_FINISHED"}
    retry = """mutation($id: ID!) { retryJob(id: $id) { __typename ... on UserError { code } } }"""
    assert (await api.ok(retry, {"id": job["id"]}, token=token))["retryJob"] == {
        "__typename": "ConflictError",
        "code": "NOT_RETRYABLE",
    }
    missing = (await api.ok(cancel, {"id": str(uuid.uuid4())}, token=token))["cancelJob"]
    assert missing["__typename"] == "NotFoundError"
    malformed = (await api.ok(cancel, {"id": "zzz"}, token=token))["cancelJob"]
    assert malformed["__typename"] == "ValidationError"


async def test_priority_update(api: Api) -> None:
    token = await api.token()
    job = (await api.ok(SUBMIT, {"input": api.job_input()}, token=token))["submitJob"]
    update = """mutation($id: ID!) { updateJobPriority(id: $id, priority: HIGH) {
                  __typename ... on Job { priority } } }"""
    assert (await api.ok(update, {"id": job["id"]}, token=token))["updateJobPriority"] == {
        "__typename": "Job",
        "priority": "HIGH",
    }


async def test_depth_and_alias_limits(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    import schema.admission

    token = await api.token()
    deep = (
        "{ jobs { edges { node { cluster { nodes { hardwareInfo } capacity { total } } "
        "events { at } } } } }"
    )
    await api.ok(deep, token=token)
    monkeypatch.setattr(schema.admission, "MAX_DEPTH", 4)
    body = (await api.call(deep, token=token)).json()
    assert body["data"] is None
    assert "exceeds maximum operation depth of 4" in body["errors"][0]["message"]
    aliases = "{ " + " ".join(f"a{i}: clusters {{ id }}" for i in range(30)) + " }"
    body = (await api.call(aliases, token=token)).json()
    assert body["data"] is None and "aliases" in body["errors"][0]["message"].lower()


async def test_internal_errors_are_masked(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    async def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("password=hunter2 at db.internal:5432")

    monkeypatch.setattr(api.app.clusters, "all", broken)
    response = await api.call("{ clusters { id } }", token=await api.token())
    text = response.text
    assert "hunter2" not in text and "Traceback" not in text and "RuntimeError" not in text
    assert response.json()["errors"][0]["message"] == "Internal error."


LISTING = """
{ jobs(first: 100) { edges { node { id status cluster { name nodes { name } capacity { total } }
                                     events { toStatus at } } } } }
"""


async def _statements_for(api: Api, token: str) -> int:
    statements: list[str] = []

    def count(conn: object, cursor: object, statement: str, *args: object) -> None:
        if not statement.lstrip().upper().startswith("PRAGMA"):
            statements.append(statement)

    event.listen(api.app.db.engine.sync_engine, "before_cursor_execute", count)
    try:
        await api.ok(LISTING, token=token)
    finally:
        event.remove(api.app.db.engine.sync_engine, "before_cursor_execute", count)
    return len(statements)


async def test_listing_runs_a_constant_number_of_statements(api: Api) -> None:
    tenant = TenantId(uuid.uuid4())
    token = await api.token(tenant=tenant)
    other_cluster = await sim_cluster(api.app)
    for i in range(10):
        await api.ok(SUBMIT, {"input": api.job_input(name=f"j{i}")}, token=token)
    ten = await _statements_for(api, token)
    for i in range(10, 100):
        cluster = other_cluster.id if i % 2 else api.cluster_id
        await api.ok(
            SUBMIT, {"input": api.job_input(name=f"j{i}", clusterId=str(cluster))}, token=token
        )
    hundred = await _statements_for(api, token)
    # token lookup, the page of jobs, clusters with their nodes, and the jobs' histories
    assert ten == hundred == 5


async def test_a_submission_runs_a_pinned_number_of_statements(api: Api) -> None:
    """Issue 31: submitJob's statements are counted, so one added per submission (a round trip
    at 100 submissions a second) is seen here. Its audit event, written with the job, is not
    written again when the mutation ends as it said (it was: an update, a delete and an insert
    of its targets, in a transaction of their own)."""
    token = await api.token()
    for i in range(3):
        await api.ok(SUBMIT, {"input": api.job_input(name=f"warm{i}")}, token=token)
    statements: list[str] = []

    def count(conn: object, cursor: object, statement: str, *args: object) -> None:
        if not statement.lstrip().upper().startswith(("PRAGMA", "SAVEPOINT", "RELEASE")):
            statements.append(" ".join(statement.split()[:3]))

    engine = api.app.db.engine.sync_engine
    event.listen(engine, "before_cursor_execute", count)
    try:
        body = await api.ok(SUBMIT, {"input": api.job_input(name="counted")}, token=token)
    finally:
        event.remove(engine, "before_cursor_execute", count)
    job_id = body["submitJob"]["id"]
    # the token; the cluster, its nodes and its local queues; the tenant's budgets (issue 32:
    # one read, the prices only when it has one); the job and its first event; the cluster's
    # event sequence and the outbox; the audit event and its target
    assert len(statements) == 11, statements
    assert not any(s.startswith(("UPDATE audit", "DELETE")) for s in statements), statements
    trail = await api.ok(
        "{ auditEvents(first: 5) { edges { node { operation outcome targets } } } }", token=token
    )
    newest = trail["auditEvents"]["edges"][0]["node"]
    assert newest["operation"] == "submitJob" and newest["outcome"] == "OK"
    assert job_id in newest["targets"]


async def test_graphiql_is_served_from_local_assets(api: Api) -> None:
    page = await api.client.get("/graphql", headers={"Accept": "text/html"})
    assert page.status_code == 200 and "graphiql" in page.text.lower()
    references = re.findall(r'(?:src|href)="([^"]+)"', page.text)
    assert references and all(r.startswith(("/graphiql/assets/", "data:")) for r in references)
    assert not re.search(r"https?://", page.text)
    assets = await api.client.get("/graphiql/assets/graphiql.min.js")
    assert assets.status_code == 200 and len(assets.content) > 100_000


async def test_subscriptions_over_http_are_refused(api: Api) -> None:
    query = f'subscription {{ jobUpdates(clusterId: "{api.cluster_id}") {{ __typename }} }}'
    body = (await api.call(query, token=await api.token())).json()
    assert body["data"] is None
    assert body["errors"][0]["extensions"]["code"] == "BAD_REQUEST"
    assert "graphql-transport-ws" in body["errors"][0]["message"]


async def test_allowed_origins_govern_browsers(sqlite_url: str) -> None:
    app = await make_app(sqlite_url, allowed_origins=("https://admin.bud.example",))
    transport = httpx.ASGITransport(app=create_app(app, manage_lifecycle=False))
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            headers = {
                "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "authorization,content-type",
            }
            allowed = await client.options(
                "/graphql", headers={**headers, "Origin": "https://admin.bud.example"}
            )
            refused = await client.options(
                "/graphql", headers={**headers, "Origin": "https://evil.example"}
            )
    finally:
        await app.close()
    assert allowed.headers["access-control-allow-origin"] == "https://admin.bud.example"
    assert "access-control-allow-origin" not in refused.headers
