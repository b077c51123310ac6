"""Fleets through the GraphQL API, on both databases: the operator makes a fleet of three
simulated clusters of unequal shape and price (bad input is a typed error naming the field, and
nothing is stored; a tenant may not); a preview on the fleet answers per member, and the job
submitted lands where the preview put it; a job waiting behind work moves when another member
frees, and its move is on the job, on both clusters' streams, in the fleet's view and in the
audit trail, while another tenant sees the fleet's queue without the job's name."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import pytest

from adapters.simulated.config import parse_node_groups, settings_for
from domain.model.cluster import Cluster
from domain.model.ids import ClusterId, FleetId, JobId, TenantId
from domain.model.job import JobStatus, Placement
from domain.model.principal import Scope
from domain.ports.unit_of_work import TenantScope
from tests.integration.test_cost_api import A100, api_at, move
from tests.integration.test_graphql_api import SUBMIT, Api
from tests.support.fakes import T0, FakeClock

CREATE = """
mutation($input: FleetInput!) {
  createFleet(input: $input) {
    __typename
    ... on Fleet { id name members { name } localQueue maxMoves moveThresholdSeconds }
    ... on ValidationError { fields { path code message } }
    ... on UserError { code message }
  }
}
"""
PREVIEW = """
query($input: SubmitJobInput!) {
  previewJob(input: $input) {
    __typename
    ... on JobPreview {
      clusterId estimatedStart estimatedCost
      members { clusterName rank estimatedStart estimatedCost load evicts problems { path code } }
    }
    ... on ValidationError { fields { path code message } }
  }
}
"""
SUBMITTED = """
mutation($input: SubmitJobInput!) {
  submitJob(input: $input) {
    __typename
    ... on Job { id clusterId fleetId statusMessage }
    ... on ValidationError { fields { path code message } }
  }
}
"""
VIEW = """
query($id: ID!) {
  fleet(id: $id) {
    plannedAt
    queue { jobId name mine clusterId estimatedStart nextBestClusterId moves }
  }
}
"""
MOVES = "query($id: ID!) { job(id: $id) { clusterId moves { fromClusterId toClusterId reason } } }"


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(T0)


@pytest.fixture
async def api(db_url: str, clock: FakeClock) -> AsyncIterator[Api]:
    async with api_at(db_url, clock) as made:
        yield made


async def simulated(api: Api, nodes: str, prices: dict[str, float] | None = None) -> Cluster:
    settings = settings_for(parse_node_groups(nodes), startup_seconds=0)
    if prices:
        settings["gpu_hourly_prices"] = prices
    return await api.app.clusters.create_simulated(f"sim-{uuid.uuid4().hex[:6]}", settings)


async def three(api: Api) -> tuple[list[str], str, str]:
    """The first cluster (1 x 8 A100, list price), a dearer one like it, and one of T4s; the
    fleet of all three, and the operator's token."""
    dear = await simulated(api, "1x8xnvidia-a100-80gb", {A100: 9.0})
    t4s = await simulated(api, "2x4xnvidia-tesla-t4")
    members = [api.cluster_id, str(dear.id), str(t4s.id)]
    operator = await api.token()
    made = await api.ok(CREATE, {"input": {"name": "gpus", "clusterIds": members}}, token=operator)
    return members, made["createFleet"]["id"], operator


@pytest.mark.parametrize(
    ("changes", "path", "code"),
    [
        ({"name": "Bad Name"}, "name", "INVALID_NAME"),
        ({"clusterIds": []}, "clusterIds", "TOO_MANY"),
        ({"clusterIds": ["not-an-id"]}, "clusterIds.0", "MALFORMED_ID"),
        ({"clusterIds": [str(uuid.uuid4())]}, "clusterIds.0", "NOT_FOUND"),
        ({"maxMoves": -1}, "maxMoves", "INVALID"),
        ({"moveThresholdSeconds": 10**9}, "moveThresholdSeconds", "INVALID"),
        ({"clusterQueue": "nope"}, "clusterQueue", "NOT_FOUND"),
    ],
)
async def test_bad_fleet_input_is_refused_naming_its_field_and_nothing_is_stored(
    api: Api, changes: dict[str, Any], path: str, code: str
) -> None:
    operator = await api.token()
    given = {"name": "gpus", "clusterIds": [api.cluster_id]} | changes
    answer = (await api.ok(CREATE, {"input": given}, token=operator))["createFleet"]
    assert answer["__typename"] == "ValidationError", answer
    assert [(f["path"], f["code"]) for f in answer["fields"]] == [(path, code)]
    assert (await api.ok("query { fleets { id } }", token=operator))["fleets"] == []


async def test_a_tenant_may_not_make_a_fleet_but_reads_them(api: Api) -> None:
    tenant = await api.token(Scope.JOBS_READ, Scope.JOBS_WRITE, Scope.CLUSTERS_READ)
    given = {"name": "gpus", "clusterIds": [api.cluster_id]}
    refused = (await api.ok(CREATE, {"input": given}, token=tenant))["createFleet"]
    assert refused["code"] == "FORBIDDEN"
    await three(api)
    listed = await api.ok("query { fleets { name members { name } } }", token=tenant)
    assert [f["name"] for f in listed["fleets"]] == ["gpus"]
    assert len(listed["fleets"][0]["members"]) == 3


async def test_a_fleet_job_lands_where_the_preview_put_it(api: Api) -> None:
    members, fleet, _ = await three(api)
    token = await api.token(Scope.JOBS_READ, Scope.JOBS_WRITE)
    given = api.job_input(clusterId=None, fleetId=fleet, resources={"gpuType": A100, "gpuCount": 4})
    preview = (await api.ok(PREVIEW, {"input": given}, token=token))["previewJob"]
    ranked = [m for m in preview["members"] if m["rank"] is not None]
    assert [m["rank"] for m in ranked] == [1, 2]
    assert [m["evicts"] for m in ranked] == [0, 0]  # nothing runs there to evict
    assert ranked[0]["estimatedCost"] < ranked[1]["estimatedCost"]  # a tie on the start: cost
    assert preview["clusterId"] == members[0]
    [t4s] = [m for m in preview["members"] if m["rank"] is None]
    assert [p["code"] for p in t4s["problems"]] == ["UNKNOWN_GPU_TYPE"]
    job = (await api.ok(SUBMITTED, {"input": given}, token=token))["submitJob"]
    assert (job["clusterId"], job["fleetId"]) == (preview["clusterId"], fleet)
    assert "dispatched by fleet gpus" in job["statusMessage"]
    t4 = api.job_input(
        clusterId=None,
        fleetId=fleet,
        name="small",
        resources={"gpuType": "nvidia-tesla-t4", "gpuCount": 2},
    )
    assert (await api.ok(SUBMITTED, {"input": t4}, token=token))["submitJob"][
        "clusterId"
    ] == members[2]


async def test_a_submission_names_a_cluster_or_a_fleet(api: Api) -> None:
    _, fleet, _ = await three(api)
    token = await api.token(Scope.JOBS_READ, Scope.JOBS_WRITE)
    both = await api.ok(SUBMITTED, {"input": api.job_input(fleetId=fleet)}, token=token)
    assert both["submitJob"]["fields"][0]["code"] == "CONFLICTING"
    neither = await api.ok(SUBMITTED, {"input": api.job_input(clusterId=None)}, token=token)
    assert neither["submitJob"]["fields"][0]["path"] == "clusterId"
    unknown = api.job_input(clusterId=None, fleetId=str(uuid.uuid4()))
    answer = (await api.ok(SUBMITTED, {"input": unknown}, token=token))["submitJob"]
    assert [(f["path"], f["code"]) for f in answer["fields"]] == [("fleetId", "NOT_FOUND")]
    h100 = api.job_input(
        clusterId=None, fleetId=fleet, resources={"gpuType": "nvidia-h100-80gb", "gpuCount": 1}
    )
    answer = (await api.ok(SUBMITTED, {"input": h100}, token=token))["submitJob"]
    assert answer["__typename"] == "ValidationError" and len(answer["fields"]) == 3
    assert await api.count_jobs() == 0


async def running(api: Api, cluster: str, hours: float, token: str) -> str:
    given = api.job_input(
        clusterId=cluster,
        name=f"busy-{uuid.uuid4().hex[:6]}",
        resources={"gpuType": A100, "gpuCount": 8},
        estimatedDurationSeconds=int(hours * 3600),
    )
    job_id: str = (await api.ok(SUBMIT, {"input": given}, token=token))["submitJob"]["id"]
    async with api.app.db.unit_of_work(TenantScope.system()) as uow:
        job = await uow.jobs.get(JobId(uuid.UUID(job_id)))
        where = await uow.clusters.get(ClusterId(uuid.UUID(cluster)))
        assert job is not None and where is not None
        placed = (Placement(where.nodes[0].name, tuple(range(8))),)
        job.transition(JobStatus.QUEUED, "queued", T0)
        job.transition(JobStatus.ADMITTED, "admitted", T0, placements=placed)
        job.transition(JobStatus.RUNNING, "running", T0, placements=placed)
        await uow.commit()
    return job_id


async def test_a_waiting_job_moves_when_another_member_frees(api: Api, clock: FakeClock) -> None:
    members, fleet, _ = await three(api)
    alice = TenantId(uuid.uuid4())
    token = await api.token(Scope.JOBS_READ, Scope.JOBS_WRITE, Scope.CLUSTERS_READ, tenant=alice)
    await running(api, members[0], 2, token)
    dear = await running(api, members[1], 3, token)
    given = api.job_input(clusterId=None, fleetId=fleet, resources={"gpuType": A100, "gpuCount": 8})
    job_id = (await api.ok(SUBMITTED, {"input": given}, token=token))["submitJob"]["id"]
    async with api.app.db.unit_of_work(TenantScope.system()) as uow:
        job = await uow.jobs.get(JobId(uuid.UUID(job_id)))
        assert job is not None and str(job.cluster_id) == members[0]
    await move(api, job_id, (JobStatus.QUEUED, timedelta()))
    clock.current = T0 + timedelta(minutes=30)
    await move(api, dear, (JobStatus.COMPLETED, timedelta(minutes=30)))  # the dear one frees
    for member in members:
        await api.app.timeline.refresh(ClusterId(uuid.UUID(member)))
    [moved] = await api.app.balancer.balance(FleetId(uuid.UUID(fleet)))
    assert (str(moved.from_cluster), str(moved.to_cluster)) == (members[0], members[1])

    shown = (await api.ok(MOVES, {"id": job_id}, token=token))["job"]
    assert shown["clusterId"] == members[1]
    assert [(m["fromClusterId"], m["toClusterId"]) for m in shown["moves"]] == [
        (members[0], members[1])
    ]
    for member in members[:2]:
        async with api.app.db.unit_of_work(TenantScope.system()) as uow:
            latest = await uow.events_after(ClusterId(uuid.UUID(member)), 0, limit=1000)
        kinds = [
            e.change.kind.value
            for e in latest
            if e.job_change and str(e.job_change.job.id) == job_id
        ]
        assert kinds[-1] == "MOVED", member  # on the stream of both clusters
    view = (await api.ok(VIEW, {"id": fleet}, token=token))["fleet"]
    assert view["plannedAt"] is not None
    [entry] = view["queue"]
    assert (entry["jobId"], entry["clusterId"], entry["nextBestClusterId"]) == (
        job_id,
        members[1],
        members[0],
    )  # where the pass moved it, and where it was
    audit = await api.ok(
        "query { auditEvents(first: 50) { edges { node { operation actor targets } } } }",
        token=token,
    )
    [record] = [
        e["node"] for e in audit["auditEvents"]["edges"] if e["node"]["operation"] == "moveJob"
    ]
    assert record["actor"] == "system:fleets" and job_id in record["targets"]

    bob = await api.token(Scope.JOBS_READ, Scope.CLUSTERS_READ)
    theirs = (await api.ok(VIEW, {"id": fleet}, token=bob))["fleet"]["queue"]
    assert [(e["jobId"], e["name"], e["mine"]) for e in theirs] == [(None, "another tenant", False)]
    assert (await api.ok(MOVES, {"id": job_id}, token=bob))["job"] is None

    await move(api, job_id, (JobStatus.QUEUED, timedelta(minutes=30)))
    await move(api, job_id, (JobStatus.ADMITTED, timedelta(minutes=30)))
    admitted = (await api.ok(VIEW, {"id": fleet}, token=token))["fleet"]["queue"]
    assert admitted == []  # no longer waiting: out of the fleet's queue before the next pass
    assert (await api.ok(VIEW, {"id": fleet}, token=bob))["fleet"]["queue"] == []  # for all
