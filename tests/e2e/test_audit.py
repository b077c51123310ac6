"""The audit trail of the running service, with the command line's token operations in it.

Covers: the admin token made at the first start, and `budcluster token create` and `token
revoke`, run beside the service, each leave an
event (source cli, the machine user as actor, the token's id as target, OK, the token's tenant)
that an administrator reads with `auditEvents`; the new token's mutation names that token; the
secret is in no event.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from tests.e2e.conftest import (
    Service,
    ServiceFactory,
    batch_job,
    cluster_id_named,
    embedded_env,
    printed_tokens,
    run_cli,
)

pytestmark = pytest.mark.e2e

AUDIT = """{ auditEvents(first: 20) { edges { node {
  actor tokenId tenantId operation targets input outcome source } } } }"""
SUBMIT = """mutation($input: SubmitJobInput!) { submitJob(input: $input) { __typename ... on Job { id } } }"""


@pytest.fixture(scope="module")
async def service(
    services: ServiceFactory, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Service]:
    started = await services.start("audit", embedded_env(tmp_path_factory.mktemp("audit")))
    [started.admin_token] = printed_tokens(started.stdout())
    started.cluster_id = await cluster_id_named(started, started.admin_token, "local-sim")
    try:
        yield started
    finally:
        await started.stop()


async def post(service: Service, token: str, query: str, **variables: Any) -> Any:
    async with httpx.AsyncClient(timeout=30) as client:
        response = await client.post(
            service.url,
            json={"query": query, "variables": variables},
            headers={"Authorization": f"Bearer {token}"},
        )
    body = response.json()
    assert "errors" not in body, body
    return body["data"]


async def test_command_line_token_operations_are_audited(service: Service) -> None:
    created = await run_cli(service.env, "token", "create", "--name", "ci", "--new-tenant")
    [secret] = printed_tokens(created.stdout)
    token_id = re.search(r"token id:\s*([0-9a-f-]{36})", created.stderr)
    assert token_id is not None
    job = (await post(service, secret, SUBMIT, input=batch_job(str(service.cluster_id), gpus=1)))[
        "submitJob"
    ]
    await run_cli(service.env, "token", "revoke", token_id.group(1))

    events = [
        e["node"]
        for e in (await post(service, str(service.admin_token), AUDIT))["auditEvents"]["edges"]
    ]
    by_operation = {e["operation"]: e for e in events}
    [first_start, create] = sorted(
        (e for e in events if e["operation"] == "token create"),
        key=lambda e: e["input"]["name"] == "ci",
    )
    revoke = by_operation["token revoke"]
    for event in (create, revoke):
        assert event["source"] == "cli" and event["actor"].startswith("cli:")
        assert event["outcome"] == "OK" and token_id.group(1) in event["targets"]
        assert event["tokenId"] is None
    assert create["input"]["name"] == "ci" and create["input"]["new_tenant"] is True
    assert revoke["tenantId"] == create["tenantId"] is not None  # the token's tenant reads both
    # the admin token the service made at its first start, by the user who started it
    assert first_start["input"]["first_start"] is True and first_start["outcome"] == "OK"
    assert first_start["actor"].startswith("cli:") and len(first_start["targets"]) == 1
    assert str(service.admin_token) not in str(events)
    submitted = by_operation["submitJob"]
    assert submitted["tokenId"] == token_id.group(1) and job["id"] in submitted["targets"]
    assert secret not in str(events)
