"""Walls inside a tenant and the operator's reach, over GraphQL, on SQLite and PostgreSQL.

Covers: a token limited to project P1 finds nothing of the tenant's P2 by id, in lists or
histories, cannot act on it, submits with a key P2 used as if it were unused, and reads in
`auditEvents` only P1's events and its own; the operator (`admin`, of another tenant) reads a
tenant's job by id, in `jobs` and `jobEvents`, re-prioritises and cancels it, the job staying the
tenant's, and the tenant reads those events in its trail (another tenant does not); on the
schedule the operator sees every tenant's work named and `mine`, the limited token P2's work as
another tenant's; `budcluster token revoke` is an event of the revoked token's tenant.
"""

from __future__ import annotations

import asyncio
import re
import uuid
from pathlib import Path
from typing import Any

import pytest

from adapters.db.engine import Database
from budcluster.cli import main
from budcluster.settings import Settings
from domain.model.audit import AuditFilter
from domain.model.ids import ProjectId, TenantId
from domain.model.principal import Scope
from domain.ports.unit_of_work import TenantScope
from tests.integration.test_audit import AUDIT, events
from tests.integration.test_graphql_api import SUBMIT, Api, api
from tests.integration.test_timeline_api import SCHEDULE, eventually, live, long_job

__all__ = ["api", "live"]  # the fixtures, shared
WRITER = (Scope.JOBS_READ, Scope.JOBS_WRITE, Scope.CLUSTERS_READ)
JOB = """query($id: ID!) { job(id: $id) { id status priority tenantId }
  jobs { edges { node { id } } } jobEvents(jobId: $id) { toStatus } }"""
CANCEL = """mutation($id: ID!) { cancelJob(id: $id) {
  __typename ... on Job { status } ... on UserError { code } } }"""
PRIORITY = """mutation($id: ID!) { updateJobPriority(id: $id, priority: HIGH) {
  __typename ... on Job { priority } ... on UserError { code } } }"""


async def limited_to(api: Api, tenant: TenantId, project: str) -> str:
    issued = await api.app.tokens.issue(
        tenant_id=tenant,
        name="p1 only",
        scopes=frozenset(WRITER),
        project_ids=frozenset({ProjectId(uuid.UUID(project))}),
    )
    return issued.secret


async def submitted(api: Api, token: str, **changes: Any) -> dict[str, Any]:
    made: dict[str, Any] = (await api.ok(SUBMIT, {"input": api.job_input(**changes)}, token=token))[
        "submitJob"
    ]
    assert made["__typename"] == "Job", made
    return made


async def test_a_limited_token_sees_its_tenants_other_projects_as_another_tenant(
    api: Api,
) -> None:
    tenant, p1, p2 = TenantId(uuid.uuid4()), str(uuid.uuid4()), str(uuid.uuid4())
    writer = await api.token(*WRITER, tenant=tenant)
    one = await limited_to(api, tenant, p1)
    theirs = await submitted(api, writer, name="secret-plan", projectId=p2, idempotencyKey="k")
    shared = await submitted(api, writer, name="shared", projectId=p1)
    ours = await submitted(api, one, name="ours", projectId=p1)

    seen = await api.ok(JOB, {"id": theirs["id"]}, token=one)
    assert seen["job"] is None and seen["jobEvents"] == []
    assert {e["node"]["id"] for e in seen["jobs"]["edges"]} == {shared["id"], ours["id"]}
    refused = (await api.ok(CANCEL, {"id": theirs["id"]}, token=one))["cancelJob"]
    assert refused == {"__typename": "NotFoundError", "code": "NOT_FOUND"}

    # the key P2 used is, in P1, unused: a job of its own, the same one when repeated
    again = await submitted(api, one, name="keyed", projectId=p1, idempotencyKey="k")
    assert again["id"] != theirs["id"] and again["name"] == "keyed"
    assert (await submitted(api, one, name="keyed", projectId=p1, idempotencyKey="k")) == again
    assert (await submitted(api, writer, name="x", projectId=p2, idempotencyKey="k"))["id"] == (
        theirs["id"]
    )

    trail = await events(api, one)
    answer = (await api.call(AUDIT, {}, token=one)).text
    assert "secret-plan" not in answer
    assert not [e for e in trail if theirs["id"] in e["targets"] and e["outcome"] == "OK"]
    assert {e["operation"] for e in trail} == {"submitJob", "cancelJob"}
    submits = [e for e in trail if e["operation"] == "submitJob"]
    named = {target for e in submits for target in e["targets"]}
    assert len(submits) == 4  # P1's (the writer's), and its own (twice the keyed one)
    assert {shared["id"], ours["id"], again["id"]} <= named and theirs["id"] not in named
    whole = await events(api, writer)
    assert any(theirs["id"] in e["targets"] for e in whole)


async def test_the_operator_reads_and_acts_on_every_tenants_jobs(api: Api) -> None:
    alice_tenant = TenantId(uuid.uuid4())
    alice = await api.token(*WRITER, tenant=alice_tenant)
    bob = await api.token(*WRITER)
    operator = await api.token()  # admin, of a tenant of its own
    job = await submitted(api, alice, name="alices")
    other = await submitted(api, bob, name="bobs")

    seen = await api.ok(JOB, {"id": job["id"]}, token=operator)
    assert seen["job"] == {
        "id": job["id"],
        "status": "PENDING",
        "priority": "NORMAL",
        "tenantId": str(alice_tenant),
    }
    assert {e["node"]["id"] for e in seen["jobs"]["edges"]} >= {job["id"], other["id"]}
    assert seen["jobEvents"] == [{"toStatus": "PENDING"}]
    changed = (await api.ok(PRIORITY, {"id": job["id"]}, token=operator))["updateJobPriority"]
    assert changed == {"__typename": "Job", "priority": "HIGH"}
    cancelled = (await api.ok(CANCEL, {"id": job["id"]}, token=operator))["cancelJob"]
    assert cancelled == {"__typename": "Job", "status": "CANCELLED"}

    still = (await api.ok(JOB, {"id": job["id"]}, token=alice))["job"]
    assert still == {**seen["job"], "status": "CANCELLED", "priority": "HIGH"}
    trail = {e["operation"]: e for e in await events(api, alice)}
    for operation in ("cancelJob", "updateJobPriority"):
        done = trail[operation]
        assert done["tenantId"] == str(alice_tenant) and done["outcome"] == "OK"
        assert done["tokenId"] is not None and done["targets"][0] == job["id"]
    assert {e["operation"] for e in await events(api, bob)} == {"submitJob"}


async def test_the_schedule_names_every_tenants_work_for_the_operator_only(live: Api) -> None:
    tenant, p1, p2 = TenantId(uuid.uuid4()), str(uuid.uuid4()), str(uuid.uuid4())
    writer = await live.token(*WRITER, tenant=tenant)
    one = await limited_to(live, tenant, p1)
    stranger = await live.token(*WRITER)
    operator = await live.token()
    theirs = await submitted(live, writer, **{**long_job(live, "secret-plan"), "projectId": p2})
    ours = await submitted(live, one, **{**long_job(live, "ours"), "projectId": p1})

    async def both_running() -> dict[str, Any] | None:
        data = await live.ok(SCHEDULE, {"id": live.cluster_id}, token=operator)
        segments = data["cluster"]["schedule"]["segments"]
        return data if sorted(s["kind"] for s in segments) == ["RUNNING", "RUNNING"] else None

    as_operator = (await eventually(both_running))["cluster"]["schedule"]["segments"]
    assert sorted((s["name"], s["jobId"], s["mine"]) for s in as_operator) == sorted(
        [("secret-plan", theirs["id"], True), ("ours", ours["id"], True)]
    )
    as_one = (await live.ok(SCHEDULE, {"id": live.cluster_id}, token=one))["cluster"]["schedule"]
    assert sorted((s["name"], s["jobId"], s["mine"]) for s in as_one["segments"]) == [
        ("another tenant", None, False),
        ("ours", ours["id"], True),
    ]
    text = (await live.call(SCHEDULE, {"id": live.cluster_id}, token=one)).text
    assert theirs["id"] not in text and "secret-plan" not in text
    as_stranger = await live.ok(SCHEDULE, {"id": live.cluster_id}, token=stranger)
    assert {s["name"] for s in as_stranger["cluster"]["schedule"]["segments"]} == {"another tenant"}


def test_a_revoked_tokens_event_is_its_tenants(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    kept_logging: None,
) -> None:
    for name in ("DATABASE_URL", "REDIS_URL"):
        monkeypatch.delenv(f"BUDCLUSTER_{name}", raising=False)
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("BUDCLUSTER_DATA_DIR", str(tmp_path / "data"))
    assert main(["migrate"]) == 0
    assert main(["token", "create", "--name", "ci", "--new-tenant"]) == 0
    err = capsys.readouterr().err
    token_id = re.search(r"token id:\s*(\S+)", err)
    tenant = re.search(r"tenant:\s*(\S+)", err)
    assert token_id is not None and tenant is not None
    assert main(["token", "revoke", token_id.group(1)]) == 0

    async def trail() -> list[tuple[str, str]]:
        db = Database(Settings.from_env().database_url)
        try:
            async with db.unit_of_work(TenantScope.system()) as uow:
                page = await uow.audit.page(
                    AuditFilter(), tenant_id=TenantId(uuid.UUID(tenant.group(1))), first=10
                )
        finally:
            await db.dispose()
        return [(e.operation, e.outcome) for e in page.events]

    assert asyncio.run(trail()) == [("token revoke", "OK"), ("token create", "OK")]
