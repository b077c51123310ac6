"""A tenant's secrets through the GraphQL API on a simulated cluster, on both databases: stored
sealed and never returned (nor in the audit trail, nor in the database in clear); replaced with a
new version; refused with typed errors naming the field; needing `secrets:write`; another
tenant neither reads nor uses them; a job naming one is refused at submission when it is not
there, gets it at its hand-over (its pods' logs say what they read, by name and length), and the
use is audited; removed after submission, the hand-over fails saying so; a deployment's
replicas get the secrets it names."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from adapters.db.tables import tenant_secrets
from adapters.secrets.keyring import write_new_key
from domain.model.ids import TenantId
from domain.model.job import JobStatus
from domain.model.principal import Scope
from tests.integration.test_cost_api import A100, api_at
from tests.integration.test_drains_api import hand_over, job, step
from tests.integration.test_fleets_api import simulated
from tests.integration.test_graphql_api import SUBMIT, Api
from tests.support.fakes import T0, FakeClock

SET = """
mutation($input: SetSecretInput!) {
  setSecret(input: $input) {
    __typename
    ... on Secret { id name keys version tenantId lastUsedAt }
    ... on ValidationError { fields { path code } }
    ... on UserError { code message }
  }
}
"""
REMOVE = """
mutation($name: String!, $force: Boolean) {
  removeSecret(name: $name, force: $force) {
    __typename ... on Secret { name } ... on UserError { code message }
  }
}
"""
LIST = "query { secrets { name keys version lastUsedAt } }"
LOGS = "query($id: ID!) { jobLogs(jobId: $id) { ... on JobLogs { lines { text } } } }"
AUDIT = """
query($filter: AuditFilter) {
  auditEvents(filter: $filter, first: 50) { edges { node { operation input targets } } }
}
"""
TOKEN = "hf_abcdefghijklmnopqrstuvwxyz0123456789"
SCOPES = (Scope.JOBS_READ, Scope.JOBS_WRITE, Scope.JOBS_LOGS, Scope.CLUSTERS_READ)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(T0)


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The keyring secrets are sealed with (on PostgreSQL none is made: the operator's)."""
    directory = tmp_path_factory.mktemp("keys")
    write_new_key(directory, bits=3072)
    return directory


@pytest.fixture
async def api(db_url: str, clock: FakeClock, keys: Path) -> AsyncIterator[Api]:
    async with api_at(db_url, clock, keys_dir=keys) as made:
        made.cluster_id = str((await simulated(made, "1x8xnvidia-a100-80gb")).id)
        yield made


async def set_secret(api: Api, token: str, name: str, **data: str) -> dict[str, Any]:
    given = {"name": name, "data": [{"key": k, "value": v} for k, v in data.items()]}
    answer: dict[str, Any] = (await api.ok(SET, {"input": given}, token=token))["setSecret"]
    return answer


async def submit(api: Api, token: str, secrets: list[dict[str, Any]]) -> dict[str, Any]:
    given = api.job_input(
        resources={"gpuType": A100, "gpuCount": 1},
        spec={"simulation": {"runtime_seconds": 600}},
        secrets=secrets,
    )
    answer: dict[str, Any] = (await api.ok(SUBMIT, {"input": given}, token=token))["submitJob"]
    return answer


async def test_a_secret_is_stored_sealed_and_never_returned(api: Api) -> None:
    tenant = TenantId(uuid.uuid4())
    token = await api.token(*SCOPES, Scope.SECRETS_WRITE, tenant=tenant)
    stored = await set_secret(api, token, "hf", HF_TOKEN=TOKEN)
    assert stored["__typename"] == "Secret" and stored["keys"] == ["HF_TOKEN"], stored
    assert stored["version"] == 1 and stored["tenantId"] == str(tenant)
    again = await set_secret(api, token, "hf", HF_TOKEN=TOKEN + "2", HF_USER="me")
    assert (again["id"], again["version"], again["keys"]) == (
        stored["id"],
        2,
        ["HF_TOKEN", "HF_USER"],
    )
    listed = (await api.ok(LIST, token=token))["secrets"]
    assert [(s["name"], s["keys"], s["version"]) for s in listed] == [
        ("hf", ["HF_TOKEN", "HF_USER"], 2)
    ]
    async with api.app.db.engine.connect() as conn:
        rows = (await conn.execute(sa.select(tenant_secrets))).mappings().all()
    assert len(rows) == 1 and TOKEN not in json.dumps(dict(rows[0]), default=str)
    trail = await api.ok(AUDIT, {"filter": {"operations": ["setSecret"]}}, token=token)
    events = [e["node"] for e in trail["auditEvents"]["edges"]]
    assert len(events) == 2 and all(TOKEN not in json.dumps(e) for e in events)
    assert events[0]["input"]["input"]["name"] == "hf"


async def test_bad_secrets_are_typed_errors_naming_the_field_and_store_nothing(api: Api) -> None:
    token = await api.token(*SCOPES, Scope.SECRETS_WRITE)
    cases: list[tuple[dict[str, Any], list[tuple[str, str]]]] = [
        ({"name": "Not_A_Label", "data": [{"key": "A", "value": "1"}]}, [("name", "INVALID_NAME")]),
        ({"name": "ok", "data": []}, [("data", "REQUIRED")]),
        ({"name": "ok", "data": [{"key": "a/b", "value": "1"}]}, [("data[0].key", "INVALID")]),
        (
            {"name": "ok", "data": [{"key": "A", "value": "1"}, {"key": "A", "value": "2"}]},
            [("data[1].key", "DUPLICATE")],
        ),
        (
            {"name": "ok", "data": [{"key": "A", "value": "x\u0000"}]},
            [("data[0].value", "INVALID")],
        ),
        ({"name": "ok", "data": [{"key": "A", "value": "x" * 600_000}]}, [("data", "TOO_LARGE")]),
    ]
    for given, fields in cases:
        answer = (await api.ok(SET, {"input": given}, token=token))["setSecret"]
        assert answer["__typename"] == "ValidationError", given["name"]
        assert [(f["path"], f["code"]) for f in answer["fields"]] == fields
    assert (await api.ok(LIST, token=token))["secrets"] == []


async def test_secrets_need_their_scope_and_stay_within_the_tenant(api: Api) -> None:
    alice = TenantId(uuid.uuid4())
    writer = await api.token(*SCOPES, Scope.SECRETS_WRITE, tenant=alice)
    await set_secret(api, writer, "hf", HF_TOKEN=TOKEN)
    reader = await api.token(*SCOPES, tenant=alice)
    refused = await set_secret(api, reader, "hf", HF_TOKEN="stolen")
    assert refused["__typename"] == "ForbiddenError"
    assert [s["name"] for s in (await api.ok(LIST, token=reader))["secrets"]] == ["hf"]
    bob = await api.token(*SCOPES, Scope.SECRETS_WRITE)
    assert (await api.ok(LIST, token=bob))["secrets"] == []
    assert (await api.ok(REMOVE, {"name": "hf"}, token=bob))["removeSecret"]["code"] == (
        "NOT_FOUND"
    )
    naming = {"input": {"tenantId": str(alice), "name": "hf", "data": [{"key": "A", "value": "1"}]}}
    assert (await api.ok(SET, naming, token=bob))["setSecret"]["code"] == "NOT_FOUND"
    used = await submit(api, bob, [{"name": "hf"}])
    assert [(f["path"], f["code"]) for f in used["fields"]] == [("secrets[0].name", "NOT_FOUND")]
    operator = await api.token()
    theirs = await api.ok(
        "query($t: ID) { secrets(tenantId: $t) { name } }", {"t": str(alice)}, token=operator
    )
    assert theirs["secrets"] == [{"name": "hf"}]


async def test_a_job_reads_its_secrets_at_its_hand_over_and_the_use_is_audited(
    api: Api, clock: FakeClock
) -> None:
    token = await api.token(*SCOPES, Scope.SECRETS_WRITE)
    await set_secret(api, token, "hf", HF_TOKEN=TOKEN)
    await set_secret(api, token, "tls", **{"ca.crt": "-----BEGIN CERTIFICATE-----"})
    bad = await submit(api, token, [{"name": "hf"}, {"name": "hf", "mountPath": "relative"}])
    assert [(f["path"], f["code"]) for f in bad["fields"]] == [
        ("secrets[1].name", "DUPLICATE"),
        ("secrets[1].mountPath", "INVALID"),
    ]
    bad = await submit(api, token, [{"name": "tls"}])
    assert [(f["path"], f["code"]) for f in bad["fields"]] == [
        ("secrets[0].name", "NOT_AN_ENV_NAME")
    ]
    made = await submit(api, token, [{"name": "hf"}, {"name": "tls", "mountPath": "/etc/tls"}])
    assert made["__typename"] == "Job", made
    await hand_over(api, made["id"])
    await step(api)
    assert (await job(api, made["id"])).status is JobStatus.RUNNING
    clock.current = T0 + timedelta(seconds=5)
    lines = [
        line["text"]
        for line in (await api.ok(LOGS, {"id": made["id"]}, token=token))["jobLogs"]["lines"]
    ]
    assert f"read env HF_TOKEN from secret hf ({len(TOKEN)} bytes)" in lines
    assert "read file /etc/tls/ca.crt from secret tls (27 bytes)" in lines
    assert not any(TOKEN in line for line in lines)
    trail = await api.ok(AUDIT, {"filter": {"operations": ["secretUsed"]}}, token=token)
    [used] = [e["node"] for e in trail["auditEvents"]["edges"]]
    assert used["input"]["names"] == ["hf", "tls"] and made["id"] in used["targets"]
    listed = (await api.ok(LIST, token=token))["secrets"]
    assert all(s["lastUsedAt"] is not None for s in listed)
    shown = await api.ok(
        "query($id: ID!) { job(id: $id) { secrets { name mountPath } } }",
        {"id": made["id"]},
        token=token,
    )
    assert shown["job"]["secrets"] == [
        {"name": "hf", "mountPath": None},
        {"name": "tls", "mountPath": "/etc/tls"},
    ]


async def test_a_secret_removed_after_submission_fails_the_hand_over_saying_so(api: Api) -> None:
    token = await api.token(*SCOPES, Scope.SECRETS_WRITE)
    await set_secret(api, token, "hf", HF_TOKEN=TOKEN)
    made = await submit(api, token, [{"name": "hf"}])
    refused = (await api.ok(REMOVE, {"name": "hf"}, token=token))["removeSecret"]
    assert (refused["__typename"], refused["code"]) == ("ConflictError", "IN_USE")
    assert f"1 job ({made['id']})" in refused["message"] and "force: true" in refused["message"]
    assert [s["name"] for s in (await api.ok(LIST, token=token))["secrets"]] == ["hf"]
    forced = await api.ok(REMOVE, {"name": "hf", "force": True}, token=token)
    assert forced["removeSecret"]["name"] == "hf"
    found = await job(api, made["id"])
    assert not await api.app.workloads.submit(found.id, found.attempt)
    failed = await job(api, made["id"])
    assert failed.status is JobStatus.FAILED
    assert failed.status_message is not None and "secret hf was removed" in failed.status_message


async def test_a_deployments_replicas_get_its_secrets(api: Api) -> None:
    token = await api.token(*SCOPES, Scope.SECRETS_WRITE)
    deploy = """
    mutation($input: DeployModelInput!) {
      deployModel(input: $input) {
        __typename
        ... on Deployment { id secrets { name } replicaJobs { secrets { name } } }
        ... on ValidationError { fields { path code } }
      }
    }
    """
    given: dict[str, Any] = {
        "name": "gated",
        "projectId": api.project,
        "clusterId": api.cluster_id,
        "model": "meta-llama/Llama-3.1-8B-Instruct",
        "gpuType": A100,
        "secrets": [{"name": "hf"}],
    }
    missing = (await api.ok(deploy, {"input": given}, token=token))["deployModel"]
    assert [(f["path"], f["code"]) for f in missing["fields"]] == [("secrets[0].name", "NOT_FOUND")]
    await set_secret(api, token, "hf", HF_TOKEN=TOKEN)
    made = (await api.ok(deploy, {"input": given}, token=token))["deployModel"]
    assert made["secrets"] == [{"name": "hf"}]
    assert made["replicaJobs"] == [{"secrets": [{"name": "hf"}]}]

    # while the deployment runs (and may start replicas) its secret stays; stopped, it goes
    refused = (await api.ok(REMOVE, {"name": "hf"}, token=token))["removeSecret"]
    assert refused["code"] == "IN_USE" and "1 deployment (gated)" in refused["message"]
    stop = "mutation($id: ID!) { stopDeployment(id: $id) { __typename } }"
    assert (await api.ok(stop, {"id": made["id"]}, token=token))["stopDeployment"] == {
        "__typename": "Deployment"
    }
    removed = (await api.ok(REMOVE, {"name": "hf"}, token=token))["removeSecret"]
    assert removed == {"__typename": "Secret", "name": "hf"}
