"""A job's logs through the GraphQL API on a simulated cluster, on both databases, time from the
clock port: a running job's pods write as time passes (where it was scheduled, its start, a
progress line every 30 s of run time); `tail`, `since` and `pod` pick lines; the `jobs:logs`
scope is needed and another tenant does not find the job; a failed attempt's last lines are
kept with it and read once its pods are gone; following the log yields the new lines as they
are written and ends after the attempt ended."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import pytest

from adapters.simulated.store import simulated_workloads
from domain.model.ids import JobId, TenantId
from domain.model.job import JobStatus
from domain.model.principal import Principal, Scope
from tests.integration.test_cost_api import A100, api_at
from tests.integration.test_drains_api import hand_over, job, step
from tests.integration.test_fleets_api import simulated
from tests.integration.test_graphql_api import SUBMIT, Api
from tests.support.fakes import T0, FakeClock

LOGS = """
query($id: ID!, $attempt: Int, $pod: String, $since: DateTime, $tail: Int) {
  jobLogs(jobId: $id, attempt: $attempt, pod: $pod, since: $since, tail: $tail) {
    __typename
    ... on JobLogs { attempt pods kept note lines { at pod text } }
    ... on ValidationError { fields { path code } }
    ... on UserError { code }
  }
}
"""
LOG_SCOPES = (Scope.JOBS_READ, Scope.JOBS_WRITE, Scope.JOBS_LOGS, Scope.CLUSTERS_READ)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(T0)


@pytest.fixture
async def api(db_url: str, clock: FakeClock) -> AsyncIterator[Api]:
    async with api_at(db_url, clock) as made:
        made.cluster_id = str((await simulated(made, "1x8xnvidia-a100-80gb")).id)
        yield made


async def running(api: Api, token: str, **spec: Any) -> str:
    given = api.job_input(
        resources={"gpuType": A100, "gpuCount": 8},
        spec={"simulation": {"runtime_seconds": 3600, **spec}},
    )
    job_id: str = (await api.ok(SUBMIT, {"input": given}, token=token))["submitJob"]["id"]
    await hand_over(api, job_id)
    await step(api)
    assert (await job(api, job_id)).status is JobStatus.RUNNING
    return job_id


async def logs(api: Api, token: str, job_id: str, **arguments: Any) -> dict[str, Any]:
    answer: dict[str, Any] = (await api.ok(LOGS, {"id": job_id, **arguments}, token=token))[
        "jobLogs"
    ]
    return answer


async def test_a_running_jobs_pods_write_as_time_passes_and_lines_are_picked(
    api: Api, clock: FakeClock
) -> None:
    token = await api.token(*LOG_SCOPES)
    job_id = await running(api, token)
    workload = (await job(api, job_id)).workload_name
    clock.current = T0 + timedelta(seconds=95)
    shown = await logs(api, token, job_id)
    assert shown["__typename"] == "JobLogs" and shown["pods"] == [f"{workload}-0"]
    assert [line["text"] for line in shown["lines"]] == [
        "scheduled on sim-a100-0",
        "started (8 x nvidia-a100-80gb)",
        "step 1: 30 s run (1 %)",
        "step 2: 60 s run (2 %)",
        "step 3: 90 s run (2 %)",
    ]
    last = await logs(api, token, job_id, tail=2)
    assert [line["text"] for line in last["lines"]] == [
        "step 2: 60 s run (2 %)",
        "step 3: 90 s run (2 %)",
    ]
    since = shown["lines"][3]["at"]
    after = await logs(api, token, job_id, since=since)
    assert [line["text"] for line in after["lines"]] == ["step 3: 90 s run (2 %)"]
    assert (await logs(api, token, job_id, pod="another-pod"))["lines"] == []
    bad = await logs(api, token, job_id, tail=0)
    assert [(f["path"], f["code"]) for f in bad["fields"]] == [("tail", "INVALID")]
    bad = await logs(api, token, job_id, attempt=3)
    assert [f["path"] for f in bad["fields"]] == ["attempt"]


async def test_logs_need_their_scope_and_stay_within_the_tenant(api: Api) -> None:
    alice = TenantId(uuid.uuid4())
    token = await api.token(*LOG_SCOPES, tenant=alice)
    job_id = await running(api, token)
    no_scope = await api.token(Scope.JOBS_READ, Scope.CLUSTERS_READ, tenant=alice)
    assert (await logs(api, no_scope, job_id))["__typename"] == "ForbiddenError"
    bob = await api.token(*LOG_SCOPES)
    assert (await logs(api, bob, job_id))["__typename"] == "NotFoundError"


async def test_a_failed_attempts_last_lines_are_kept_once_its_pods_are_gone(
    api: Api, clock: FakeClock
) -> None:
    token = await api.token(*LOG_SCOPES)
    job_id = await running(api, token, runtime_seconds=40, outcome="FAILED")
    clock.current = T0 + timedelta(seconds=41)
    await step(api)
    failed = await job(api, job_id)
    assert failed.status in (JobStatus.FAILED, JobStatus.PENDING)  # (PENDING: being retried)
    assert await api.app.logs.keep(JobId(uuid.UUID(job_id)), 0)  # what the FAILED reaction does
    async with api.app.db.engine.begin() as conn:  # the pods are gone
        await conn.execute(
            simulated_workloads.delete().where(simulated_workloads.c.job_id == uuid.UUID(job_id))
        )
    kept = await logs(api, token, job_id, attempt=0)
    assert kept["kept"] is True
    assert [line["text"] for line in kept["lines"]][-2:] == [
        "step 1: 30 s run (75 %)",
        "error: failed: exit code 1",
    ]
    bob = await api.token(*LOG_SCOPES)
    assert (await logs(api, bob, job_id, attempt=0))["__typename"] == "NotFoundError"


async def test_following_a_log_yields_new_lines_and_ends_after_the_attempt(
    api: Api, clock: FakeClock
) -> None:
    token = await api.token(*LOG_SCOPES)
    job_id = await running(api, token, runtime_seconds=70)
    tenant = (await job(api, job_id)).tenant_id
    principal = Principal(tenant, frozenset(LOG_SCOPES))
    stream = await api.app.logs.follow(principal, JobId(uuid.UUID(job_id)))

    async def the_cluster_ends_it() -> None:
        while clock.current < T0 + timedelta(seconds=71):
            await asyncio.sleep(0)
        await step(api)

    ending = asyncio.create_task(the_cluster_ends_it())
    seen: list[str] = []
    async with asyncio.timeout(60):  # the clock moves on with each poll (the clock port's sleep)
        async for batch in stream:
            seen += [line.text for line in batch.lines]
    await ending
    assert seen == [
        "scheduled on sim-a100-0",
        "started (8 x nvidia-a100-80gb)",
        "step 1: 30 s run (43 %)",
        "step 2: 60 s run (86 %)",
        "exiting: completed",
    ]
    assert (await job(api, job_id)).status is JobStatus.COMPLETED
