"""Deployments that scale themselves, through the GraphQL API on a simulated cluster of two
8 x A100 nodes, on both databases, time from the clock port:

- a deployment with minReplicas 0 goes to zero after scaleToZeroAfterSeconds without a request
  (its replica cancelled, STOPPED "scaled to zero", its endpoint URL kept), and the first request
  to its endpoint starts a replica and is held until it serves, then answered with how long it
  waited and the replica's estimated start in its headers;
- requests in flight above the target scale it up at once, to ceil(in flight / target), and
  never past maxReplicas; fewer scale it down only after the scale-down delay;
- every step is a SCALED change on deploymentUpdates' log, on Deployment.scalingSteps and on the
  cluster's schedule (Query.scalingSteps), which another tenant does not see;
- scaleDeployment is refused while it scales itself; setAutoscaling brings replicas within new
  bounds (a step) and null turns it off;
- bad bounds and targets are typed errors naming the field, and nothing is stored; minReplicas
  0 is refused on a Kubernetes cluster, naming autoscaling.minReplicas.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx
import pytest

from adapters.simulated.serving import ESTIMATE_HEADER, HELD_HEADER
from domain.model.deployment import Deployment, DeploymentChanged, DeploymentChangeKind
from domain.model.ids import DeploymentId, JobId, TenantId
from domain.model.job import JobStatus
from domain.model.principal import Scope
from domain.ports.unit_of_work import TenantScope
from tests.integration.test_cost_api import A100, api_at
from tests.integration.test_drains_api import cluster_of, hand_over, job, step
from tests.integration.test_fleets_api import simulated
from tests.integration.test_graphql_api import Api
from tests.support.fakes import T0, FakeClock

DEPLOY = """
mutation($input: DeployModelInput!) {
  deployModel(input: $input) {
    __typename
    ... on Deployment {
      id replicas status
      autoscaling { minReplicas maxReplicas metric target scaleToZeroAfterSeconds }
    }
    ... on ValidationError { fields { path code message } }
    ... on UserError { code message }
  }
}
"""
DEPLOYMENT = """
query($id: ID!) {
  deployment(id: $id) {
    replicas status statusMessage endpointUrl
    scalingSteps { deploymentName fromReplicas toReplicas reason metricValue at }
  }
}
"""
SET = """
mutation($id: ID!, $a: AutoscalingInput) {
  setAutoscaling(id: $id, autoscaling: $a) {
    __typename
    ... on Deployment { replicas autoscaling { minReplicas maxReplicas } }
    ... on ValidationError { fields { path code } }
    ... on UserError { code message }
  }
}
"""
SCALE = """
mutation($id: ID!, $n: Int!) {
  scaleDeployment(id: $id, replicas: $n) {
    __typename ... on Deployment { replicas } ... on UserError { code message }
  }
}
"""
STEPS = """
query($c: ID!) { scalingSteps(clusterId: $c) { deploymentName fromReplicas toReplicas reason } }
"""
MODEL = "org/model-7b"


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(T0)


@pytest.fixture
async def api(db_url: str, clock: FakeClock) -> AsyncIterator[Api]:
    async with api_at(db_url, clock, serving_hold_seconds=30) as made:
        made.cluster_id = str((await simulated(made, "2x8xnvidia-a100-80gb")).id)
        yield made


def autoscaling(**changes: Any) -> dict[str, Any]:
    return {"minReplicas": 0, "maxReplicas": 3, "target": 2, "scaleToZeroAfterSeconds": 300} | (
        changes
    )


async def deploy(api: Api, token: str, **changes: Any) -> dict[str, Any]:
    given = {
        "name": "chat",
        "projectId": api.project,
        "clusterId": api.cluster_id,
        "model": MODEL,
        "gpuType": A100,
        "replicas": 1,
        "concurrency": 4,
        "autoscaling": autoscaling(),
    } | changes
    answer: dict[str, Any] = (await api.ok(DEPLOY, {"input": given}, token=token))["deployModel"]
    return answer


async def stored(api: Api, deployment_id: str) -> Deployment:
    async with api.app.db.unit_of_work(TenantScope.system()) as uow:
        found = await uow.deployments.get(DeploymentId(uuid.UUID(deployment_id)))
    assert found is not None
    return found


async def run_replicas(api: Api, deployment_id: str) -> list[JobId]:
    """Hand the replicas waiting to the simulated cluster, let it run them, and refresh the
    deployment as the reactions would: the replicas running."""
    d = await stored(api, deployment_id)
    for replica in d.replica_jobs:
        if (await job(api, str(replica))).status is JobStatus.PENDING:
            await hand_over(api, str(replica))
    await step(api)
    await api.app.deployments.refresh(d.id)
    d = await stored(api, deployment_id)
    jobs = [await job(api, str(j)) for j in d.replica_jobs]
    return [j.id for j in jobs if j.status is JobStatus.RUNNING]


async def scaled_changes(api: Api) -> list[DeploymentChanged]:
    events = await api.app.event_log.read_after(cluster_of(api), 0, limit=10_000)
    changes = [e.deployment_change for e in events]
    return [c for c in changes if c is not None and c.kind is DeploymentChangeKind.SCALED]


async def until(condition: Callable[[], Awaitable[bool]], what: str) -> None:
    """Wait (a bounded number of loop turns) for what a request over a socket does."""
    for _ in range(2000):
        if await condition():
            return
        await asyncio.sleep(0.005)
    raise AssertionError(f"never happened: {what}")


async def test_idle_goes_to_zero_and_the_first_request_starts_a_replica_and_waits_for_it(
    api: Api, clock: FakeClock
) -> None:
    await api.app.serving.start()
    operator = await api.token()
    made = await deploy(api, operator)
    assert made["__typename"] == "Deployment", made
    assert made["autoscaling"]["minReplicas"] == 0 and made["replicas"] == 1
    deployment_id = made["id"]
    (first,) = await run_replicas(api, deployment_id)
    shown = (await api.ok(DEPLOYMENT, {"id": deployment_id}, token=operator))["deployment"]
    assert shown["status"] == "RUNNING" and shown["endpointUrl"], shown
    url = shown["endpointUrl"]
    d = await stored(api, deployment_id)

    clock.advance(299)  # not idle long enough
    assert await api.app.autoscaler.autoscale(d.id) is None
    clock.advance(2)
    taken = await api.app.autoscaler.autoscale(d.id)
    assert taken is not None and (taken.from_replicas, taken.to_replicas) == (1, 0)
    assert taken.reason == "no request for 301 s"
    assert (await job(api, str(first))).status is JobStatus.CANCELLED
    shown = (await api.ok(DEPLOYMENT, {"id": deployment_id}, token=operator))["deployment"]
    assert (shown["replicas"], shown["status"], shown["endpointUrl"]) == (0, "STOPPED", url)
    assert shown["statusMessage"] == "scaled to zero: the first request starts a replica"
    assert [(s["fromReplicas"], s["toReplicas"]) for s in shown["scalingSteps"]] == [(1, 0)]
    await step(api)  # the cluster lets the cancelled replica go

    body = {"model": MODEL, "prompt": "hello there", "max_tokens": 2}
    async with httpx.AsyncClient(timeout=30) as client:
        request = asyncio.create_task(client.post(f"{url}/completions", json=body))

        async def woken() -> bool:
            return (await stored(api, deployment_id)).replicas == 1

        await until(woken, "the request started a replica")
        assert not request.done()  # held: no replica serves yet
        await api.app.timeline.refresh(cluster_of(api))  # the new replica's estimate
        api.app.serving.changed(deployment_id)  # (the reactions tell it of replica changes)

        async def estimated() -> bool:
            served = api.app.serving.served(deployment_id)
            return served is not None and served.starting is not None

        await until(estimated, "the held request saw the replica's estimate")
        clock.advance(5)
        (second,) = await run_replicas(api, deployment_id)
        assert second != first
        answer = await asyncio.wait_for(request, 30)
    assert answer.status_code == 200, answer.text
    assert answer.json()["usage"]["completion_tokens"] == 2
    assert float(answer.headers[HELD_HEADER]) > 0
    assert ESTIMATE_HEADER in answer.headers  # the replica's estimate while it waited

    steps = [
        (c.step.from_replicas, c.step.to_replicas) for c in await scaled_changes(api) if c.step
    ]
    assert steps == [(1, 0), (0, 1)]
    shown = (await api.ok(DEPLOYMENT, {"id": deployment_id}, token=operator))["deployment"]
    assert shown["status"] == "RUNNING"
    assert [s["reason"] for s in shown["scalingSteps"]] == [
        "a request came while no replica served",
        "no request for 301 s",
    ]
    on_schedule = (await api.ok(STEPS, {"c": api.cluster_id}, token=operator))["scalingSteps"]
    assert [(s["deploymentName"], s["toReplicas"]) for s in on_schedule] == [
        ("chat", 1),
        ("chat", 0),
    ]
    other = await api.token(Scope.JOBS_READ, tenant=TenantId(uuid.uuid4()))
    assert (await api.ok(STEPS, {"c": api.cluster_id}, token=other))["scalingSteps"] == []


async def test_requests_in_flight_scale_up_at_once_and_down_after_the_delay(
    api: Api, clock: FakeClock
) -> None:
    await api.app.serving.start()
    operator = await api.token()
    made = await deploy(
        api,
        operator,
        autoscaling=autoscaling(minReplicas=1, maxReplicas=3, scaleDownDelaySeconds=120),
    )
    deployment_id = made["id"]
    (first,) = await run_replicas(api, deployment_id)
    url = (await api.ok(DEPLOYMENT, {"id": deployment_id}, token=operator))["deployment"][
        "endpointUrl"
    ]
    d = await stored(api, deployment_id)
    body = {"model": MODEL, "prompt": "hello", "max_tokens": 4000 - 8}
    async with httpx.AsyncClient(timeout=60) as client:
        requests = [
            asyncio.create_task(client.post(f"{url}/completions", json=body)) for _ in range(9)
        ]

        async def in_flight() -> bool:
            return sum(api.app.serving.load(str(d.id))) == 9

        await until(in_flight, "nine requests in flight")
        up = await api.app.autoscaler.autoscale(d.id)
        assert up is not None and (up.from_replicas, up.to_replicas) == (1, 3)  # ceil(9/2)=5 > max
        assert up.metric_value == 9.0 and up.reason.startswith("9.0 requests in flight")
        for r in requests:
            r.cancel()
        await asyncio.gather(*requests, return_exceptions=True)

    async def quiet() -> bool:
        return sum(api.app.serving.load(str(d.id))) == 0

    await until(quiet, "the requests gone")
    assert len(await run_replicas(api, deployment_id)) == 3
    assert await api.app.autoscaler.autoscale(d.id) is None  # asks for 1: the delay starts
    clock.advance(119)
    assert await api.app.autoscaler.autoscale(d.id) is None
    clock.advance(1)
    down = await api.app.autoscaler.autoscale(d.id)
    assert down is not None and (down.from_replicas, down.to_replicas) == (3, 1)
    d = await stored(api, deployment_id)
    statuses = [(await job(api, str(j))).status for j in d.replica_jobs]
    assert statuses.count(JobStatus.RUNNING) == 1 and (await job(api, str(first))).status is (
        JobStatus.RUNNING
    )  # the newest went first
    assert [c.step.to_replicas for c in await scaled_changes(api) if c.step] == [3, 1]


async def test_scale_is_refused_while_it_scales_itself_and_new_bounds_take_at_once(
    api: Api,
) -> None:
    operator = await api.token()
    deployment_id = (await deploy(api, operator))["id"]
    refused = (await api.ok(SCALE, {"id": deployment_id, "n": 2}, token=operator))[
        "scaleDeployment"
    ]
    assert refused["code"] == "AUTOSCALED", refused
    raised = await api.ok(
        SET, {"id": deployment_id, "a": autoscaling(minReplicas=2, maxReplicas=4)}, token=operator
    )
    assert raised["setAutoscaling"] == {
        "__typename": "Deployment",
        "replicas": 2,
        "autoscaling": {"minReplicas": 2, "maxReplicas": 4},
    }
    shown = (await api.ok(DEPLOYMENT, {"id": deployment_id}, token=operator))["deployment"]
    assert [s["reason"] for s in shown["scalingSteps"]] == ["bounds set to 2 to 4"]
    off = await api.ok(SET, {"id": deployment_id, "a": None}, token=operator)
    assert off["setAutoscaling"]["autoscaling"] is None
    scaled = await api.ok(SCALE, {"id": deployment_id, "n": 1}, token=operator)
    assert scaled["scaleDeployment"] == {"__typename": "Deployment", "replicas": 1}
    other = await api.token(Scope.JOBS_WRITE, Scope.JOBS_READ, tenant=TenantId(uuid.uuid4()))
    hidden = await api.ok(SET, {"id": deployment_id, "a": autoscaling()}, token=other)
    assert hidden["setAutoscaling"]["code"] == "NOT_FOUND", hidden


@pytest.mark.parametrize(
    ("changes", "path"),
    [
        ({"maxReplicas": 0}, "autoscaling.maxReplicas"),
        ({"minReplicas": 4, "maxReplicas": 3}, "autoscaling.maxReplicas"),
        ({"minReplicas": -1}, "autoscaling.minReplicas"),
        ({"maxReplicas": 65}, "autoscaling.maxReplicas"),
        ({"target": 0}, "autoscaling.target"),
        ({"target": -2}, "autoscaling.target"),
        ({"metric": "QUEUE_TIME", "target": 7200}, "autoscaling.target"),
        ({"scaleToZeroAfterSeconds": -1}, "autoscaling.scaleToZeroAfterSeconds"),
        ({"scaleDownDelaySeconds": 86_401}, "autoscaling.scaleDownDelaySeconds"),
    ],
)
async def test_bad_autoscaling_names_its_field_and_stores_nothing(
    api: Api, changes: dict[str, Any], path: str
) -> None:
    operator = await api.token()
    answer = await deploy(api, operator, autoscaling=autoscaling(**changes))
    assert answer["__typename"] == "ValidationError", answer
    assert path in [f["path"] for f in answer["fields"]], answer
    async with api.app.db.unit_of_work(TenantScope.system()) as uow:
        assert await uow.deployments.on_cluster(cluster_of(api), limit=10) == []
    assert await api.count_jobs() == 0


async def test_replicas_outside_the_bounds_are_refused(api: Api) -> None:
    operator = await api.token()
    answer = await deploy(api, operator, replicas=5)
    assert answer["__typename"] == "ValidationError"
    assert [f["path"] for f in answer["fields"]] == ["replicas"]


async def test_a_request_to_a_deployment_at_zero_without_autoscaling_is_refused_at_once(
    api: Api,
) -> None:
    await api.app.serving.start()
    operator = await api.token()
    made = await deploy(api, operator, autoscaling=None, replicas=1)
    await run_replicas(api, made["id"])
    url = (await api.ok(DEPLOYMENT, {"id": made["id"]}, token=operator))["deployment"][
        "endpointUrl"
    ]
    await api.ok(SCALE, {"id": made["id"], "n": 0}, token=operator)
    api.app.serving.changed(made["id"])
    async with httpx.AsyncClient(timeout=10) as client:
        answer = await client.post(
            f"{url}/completions", json={"model": MODEL, "prompt": "hi", "max_tokens": 1}
        )
    assert answer.status_code == 503 and HELD_HEADER not in answer.headers
    assert (await stored(api, made["id"])).replicas == 0


async def test_the_hold_ends_in_a_503_with_the_estimate_when_no_replica_starts(
    api: Api, clock: FakeClock
) -> None:
    """The cluster is full: the woken replica waits, and the request is let go after the hold
    (30 s here) with the estimate and Retry-After."""
    del clock
    await api.app.serving.start()
    operator = await api.token()
    made = await deploy(api, operator, replicas=0)
    assert made["replicas"] == 0 and made["status"] == "STOPPED"
    url = (await api.ok(DEPLOYMENT, {"id": made["id"]}, token=operator))["deployment"][
        "endpointUrl"
    ]
    assert url, "a deployment that scales from zero has its URL before any replica ran"
    # no replica is handed over: none starts, and the hold's 30 s are the loop's
    api.app.serving.hold_seconds = 0.2  # a short hold (loop time)
    async with httpx.AsyncClient(timeout=10) as client:
        answer = await client.post(
            f"{url}/completions", json={"model": MODEL, "prompt": "hi", "max_tokens": 1}
        )
    assert answer.status_code == 503, answer.text
    assert "did not serve within" in answer.json()["error"]["message"]
    assert (await stored(api, made["id"])).replicas == 1  # the replica it started stays


async def test_the_round_reads_only_the_deployments_that_scale_themselves(api: Api) -> None:
    token = await api.token()
    scales = await deploy(api, token, name="scales")
    await deploy(api, token, name="fixed", autoscaling=None)
    stopped = await deploy(api, token, name="stopped")
    stop = "mutation($id: ID!) { stopDeployment(id: $id) { __typename } }"
    await api.ok(stop, {"id": stopped["id"]}, token=token)
    other = await deploy(api, await api.token(), name="bobs")  # another tenant: all are read

    async with api.app.db.unit_of_work(TenantScope.system()) as uow:
        found = await uow.deployments.autoscaled()
    assert {str(d.id) for d in found} == {scales["id"], other["id"]}
    assert all(d.autoscaling is not None for d in found)
