"""The audit trail over GraphQL, in-process, on SQLite and PostgreSQL.

Covers: a mutation that changes something leaves one event, written in the transaction of its
change (a commit that fails leaves neither the change nor the event, and the refusal is then
recorded on its own), naming the token that did it, the operation, the objects (the job and its
cluster), the input and OK; a refused mutation (a ValidationError) leaves an event with its code
and changes nothing; a kubeconfig never reaches the trail; `auditEvents` shows an administrator
every tenant's events and a tenant only its own, newest first, with filters and Relay paging;
old events are pruned after the retention period. An operation refused before it ran (for its
cost, its size, an invalid document, a failed authentication) leaves an event with its code, the
operation's name and the client's address, never the document or the token: its tenant reads
it when a token of the tenant sent it, else only an administrator; a flood of refusals leaves a
few events a minute.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import sqlalchemy as sa

from adapters.db.tables import audit_events
from domain.model.ids import TenantId
from domain.model.principal import Scope
from tests.integration.test_graphql_api import SUBMIT, Api
from tests.integration.test_request_limits import HEAVY, serving

AUDIT = """
query($filter: AuditFilter, $first: Int! = 50, $after: String) {
  auditEvents(filter: $filter, first: $first, after: $after) {
    edges { cursor node { id at actor tokenId tenantId operation targets input outcome source } }
    pageInfo { hasNextPage endCursor }
  }
}
"""
CANCEL = 'mutation($id: ID!) { cancelJob(id: $id, reason: "no longer needed") { __typename } }'
REGISTER = """
mutation($input: RegisterClusterInput!) {
  registerCluster(input: $input) { __typename ... on UserError { code } }
}
"""
KUBECONFIG = (
    "apiVersion: v1\nkind: Config\nusers:\n- name: u\n  user:\n    token: s3cr3t-kube-token\n"
)


@pytest.fixture
async def api(db_url: str) -> AsyncIterator[Api]:
    async with serving(db_url) as made:
        yield made


async def events(api: Api, token: str, **filters: Any) -> list[dict[str, Any]]:
    data = await api.ok(AUDIT, {"filter": filters or None}, token=token)
    return [edge["node"] for edge in data["auditEvents"]["edges"]]


async def test_a_change_and_a_refusal_each_leave_one_event(api: Api) -> None:
    tenant = TenantId(uuid.uuid4())
    alice = await api.token(Scope.JOBS_READ, Scope.JOBS_WRITE, tenant=tenant)
    job = (await api.ok(SUBMIT, {"input": api.job_input(name="audited")}, token=alice))["submitJob"]
    assert job["__typename"] == "Job"
    refused = await api.ok(
        SUBMIT, {"input": api.job_input(name="BAD NAME!", resources={"gpuCount": -1})}, token=alice
    )
    assert refused["submitJob"]["__typename"] == "ValidationError"
    await api.ok(CANCEL, {"id": job["id"]}, token=alice)

    cancelled, failed, submitted = await events(api, alice)
    assert submitted["operation"] == "submitJob" and submitted["outcome"] == "OK"
    assert (
        submitted["actor"] == f"token:{submitted['tokenId']}" and submitted["source"] == "graphql"
    )
    assert submitted["tenantId"] == str(tenant)
    assert {job["id"], api.cluster_id} <= set(submitted["targets"])
    assert submitted["input"]["input"]["name"] == "audited"
    assert failed["operation"] == "submitJob" and failed["outcome"] == "VALIDATION_FAILED"
    assert cancelled["operation"] == "cancelJob" and cancelled["outcome"] == "OK"
    assert cancelled["targets"][0] == job["id"]
    assert cancelled["input"] == {"id": job["id"], "reason": "no longer needed"}
    assert await api.count_jobs() == 1  # the refusal stored nothing else


async def test_the_event_is_written_with_the_change_or_not_at_all(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    from adapters.db import uow as uow_module

    alice = await api.token(Scope.JOBS_READ, Scope.JOBS_WRITE)
    original = uow_module.SqlUnitOfWork._write_outbox

    async def broken(self: Any, conn: Any, changes: Any) -> Any:
        stored = await original(self, conn, changes)
        if changes:
            raise ConnectionResetError("the database went away mid-commit")
        return stored

    monkeypatch.setattr(uow_module.SqlUnitOfWork, "_write_outbox", broken)
    answer = await api.call(SUBMIT, {"input": api.job_input(name="lost")}, token=alice)
    assert answer.json().get("errors"), answer.text
    monkeypatch.undo()
    assert await api.count_jobs() == 0
    async with api.app.db.engine.connect() as conn:
        rows = (await conn.execute(sa.select(audit_events))).mappings().all()
    assert [(r["operation"], r["outcome"]) for r in rows] == [("submitJob", "ERROR")]


async def test_kubeconfigs_never_reach_the_trail(api: Api) -> None:
    admin = await api.token()
    await api.ok(
        REGISTER,
        {"input": {"name": "prod-1", "platform": "ON_PREM", "kubeconfig": KUBECONFIG}},
        token=admin,
    )
    [event] = await events(api, admin, operations=["registerCluster"])
    assert event["input"]["input"]["kubeconfig"] == "<removed>"
    async with api.app.db.engine.connect() as conn:
        text = str((await conn.execute(sa.select(audit_events))).mappings().all())
    assert "s3cr3t-kube-token" not in text


async def test_administrators_see_all_and_tenants_their_own(api: Api) -> None:
    admin = await api.token()
    tenants = [TenantId(uuid.uuid4()) for _ in range(2)]
    writers = [await api.token(Scope.JOBS_READ, Scope.JOBS_WRITE, tenant=t) for t in tenants]
    job_ids = []
    for i in range(3):
        for n, writer in enumerate(writers):
            made = await api.ok(SUBMIT, {"input": api.job_input(name=f"t{n}-{i}")}, token=writer)
            job_ids.append(made["submitJob"]["id"])
    mine = await events(api, writers[0])
    assert len(mine) == 3 and {e["tenantId"] for e in mine} == {str(tenants[0])}
    everything = await events(api, admin)
    assert len(everything) == 6
    assert [e["at"] for e in everything] == sorted((e["at"] for e in everything), reverse=True)
    page = (await api.ok(AUDIT, {"first": 4}, token=admin))["auditEvents"]
    assert len(page["edges"]) == 4 and page["pageInfo"]["hasNextPage"]
    rest = (await api.ok(AUDIT, {"first": 4, "after": page["pageInfo"]["endCursor"]}, token=admin))[
        "auditEvents"
    ]
    seen = [e["node"]["id"] for e in page["edges"] + rest["edges"]]
    assert len(seen) == len(set(seen)) == 6 and not rest["pageInfo"]["hasNextPage"]
    one_job = job_ids[-1]  # the newest event's
    assert one_job in everything[0]["targets"]
    assert [e["id"] for e in await events(api, admin, target=one_job)] == [everything[0]["id"]]
    stranger = writers[0] if everything[0]["tenantId"] == str(tenants[1]) else writers[1]
    assert await events(api, stranger, target=one_job) == []
    cluster = {"target": api.cluster_id}  # every event names it: pages of a target's events
    first = (await api.ok(AUDIT, {"filter": cluster, "first": 4}, token=admin))["auditEvents"]
    after = first["pageInfo"]["endCursor"]
    second = (await api.ok(AUDIT, {"filter": cluster, "first": 4, "after": after}, token=admin))[
        "auditEvents"
    ]
    assert first["pageInfo"]["hasNextPage"] and not second["pageInfo"]["hasNextPage"]
    assert [e["node"]["id"] for e in first["edges"] + second["edges"]] == [
        e["id"] for e in everything
    ]
    bad = (await api.call(AUDIT, {"first": 1000}, token=admin)).json()
    assert bad["errors"][0]["extensions"]["field"] == "first"


async def test_old_events_are_pruned(api: Api) -> None:
    admin = await api.token()
    await api.ok(SUBMIT, {"input": api.job_input()}, token=admin)
    audit = api.app.audit
    assert await audit.prune() == 0
    async with api.app.db.engine.begin() as conn:
        old = datetime.now(UTC) - audit.retention - timedelta(days=1)
        await conn.execute(audit_events.update().values(at=old))
    assert await audit.prune() == 1
    assert await events(api, admin) == []


async def test_refusals_before_an_operation_ran_are_recorded_for_whom_they_concern(
    api: Api,
) -> None:
    tenant = TenantId(uuid.uuid4())
    alice = await api.token(Scope.JOBS_READ, tenant=tenant)
    admin = await api.token()
    over_budget = "query Heavy " + HEAVY
    assert (await api.call(over_budget, token=alice)).json()["errors"][0]["extensions"][
        "code"
    ] == "COST_LIMIT_EXCEEDED"
    invalid = await api.call("query Wrong { clusters { nonexistent } }", token=alice)
    assert invalid.json()["errors"][0]["extensions"]["code"] == "GRAPHQL_VALIDATION_FAILED"
    repeated = "query Probe { " + "__typename " * 900 + "}"
    assert (await api.call(repeated)).status_code == 200  # refused with FIELD_LIMIT_EXCEEDED
    assert (await api.call("{ clusters { id } }", token="bud_not-a-token")).status_code == 401

    wrong, heavy = await events(api, alice)  # a tenant reads its own refusals, no one else's
    assert (heavy["operation"], heavy["outcome"]) == ("Heavy", "COST_LIMIT_EXCEEDED")
    assert (heavy["tenantId"], heavy["actor"]) == (str(tenant), f"token:{heavy['tokenId']}")
    assert heavy["input"] == {"address": "127.0.0.1", "transport": "http"}
    assert (wrong["operation"], wrong["outcome"]) == ("Wrong", "GRAPHQL_VALIDATION_FAILED")
    seen = await events(api, admin)
    unauthenticated, probe = seen[0], seen[1]  # the operator reads the anonymous ones too
    assert (probe["operation"], probe["outcome"], probe["tenantId"]) == (
        "Probe",
        "FIELD_LIMIT_EXCEEDED",
        None,
    )
    assert probe["actor"] == "address:127.0.0.1" and probe["tokenId"] is None
    assert unauthenticated["outcome"] == "UNAUTHENTICATED"
    assert unauthenticated["actor"] == "address:127.0.0.1"
    text = json.dumps(seen)
    assert "__typename" not in text and "not-a-token" not in text and "schedule" not in text


async def test_a_flood_of_refusals_is_recorded_a_few_times_a_minute(api: Api) -> None:
    admin = await api.token()
    for _ in range(25):
        await api.call("query Flood { " + "__typename " * 900 + "}")
    flood = await events(api, admin, actor="address:127.0.0.1")
    assert len(flood) == 10  # per key and minute; the rest are counted for the next record
    assert {e["outcome"] for e in flood} == {"FIELD_LIMIT_EXCEEDED", "RATE_LIMITED"}


async def test_settling_adds_the_targets_found_after_the_first_write(api: Api) -> None:
    """An event written with a mutation's first change is settled when it ends: the targets
    found since are added (the first ones are not written again), and each is found by the
    target filter once."""
    from adapters.db.audit import SqlAuditRepository
    from domain.model.audit import AuditEvent

    admin = await api.token(Scope.ADMIN)
    first = AuditEvent(
        id=uuid.uuid4(),
        at=datetime.now(UTC),
        tenant_id=None,
        actor="cli:test",
        token_id=None,
        operation="drainNode",
        targets=("node-a",),
        input={},
        outcome="OK",
        source="cli",
    )
    async with api.app.db.engine.begin() as conn:
        await SqlAuditRepository(conn).add(first)
    settled = replace(first, targets=("node-a", "job-1", "job-2"), outcome="PARTIAL")
    async with api.app.db.engine.begin() as conn:
        await SqlAuditRepository(conn).settle(settled, stored=first.targets)
    for target in settled.targets:
        found = await events(api, admin, target=target)
        assert [(e["targets"], e["outcome"]) for e in found] == [
            (["node-a", "job-1", "job-2"], "PARTIAL")
        ]
    rewritten = replace(settled, targets=("job-3",))  # (not expected: targets only grow)
    async with api.app.db.engine.begin() as conn:
        await SqlAuditRepository(conn).settle(rewritten, stored=settled.targets)
    assert await events(api, admin, target="node-a") == []
    assert [e["targets"] for e in await events(api, admin, target="job-3")] == [["job-3"]]
