"""The quota API over HTTP (ASGI): what each tenant sees, usage, and the statements it costs.

Covers: two tenants see only their own LocalQueues and reservations (an admin sees both), make
LocalQueues only with clusters:write, and cannot cancel each other's reservations; a LocalQueue
with active jobs is not removed; reservations
refused for capacity or time name their field; usage numbers after jobs are admitted through the
domain (used, borrowed, reserved, pending and admitted workloads, per ClusterQueue); a cluster
with its queues, their usage and its LocalQueues is a pinned number of SQL statements, whatever
the number of clusters, queues, reservations and jobs.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import event

from domain.model.ids import JobId, TenantId
from domain.model.job import Placement
from domain.ports.gateways import WorkloadObservation, WorkloadPhase
from tests.integration.test_app_flows import sim_cluster
from tests.integration.test_graphql_api import SUBMIT, Api
from tests.integration.test_quota_api import (
    A100,
    CANCEL,
    LOCAL,
    QUEUE,
    RESERVE,
    TENANT,
    gpu_queue,
    reservation,
    served,
)


@pytest.fixture
async def api(db_url: str) -> AsyncIterator[Api]:
    async with served(db_url) as running:
        yield running


async def test_two_tenants_see_only_their_own(api: Api) -> None:
    admin = await api.token()
    alice_id, bob_id = TenantId(uuid.uuid4()), TenantId(uuid.uuid4())
    alice, bob = await api.token(*TENANT, tenant=alice_id), await api.token(*TENANT, tenant=bob_id)
    for tenant in (alice_id, bob_id):
        made = await api.ok(
            LOCAL,
            {
                "input": {
                    "clusterId": api.cluster_id,
                    "name": "team",
                    "clusterQueue": "default",
                    "tenantId": str(tenant),
                }
            },
            token=admin,
        )
        assert made["createLocalQueue"]["tenantId"] == str(tenant)
    mine = {"clusterId": api.cluster_id, "name": "own", "clusterQueue": "default"}
    refused = await api.ok(LOCAL, {"input": mine}, token=alice)
    assert refused["createLocalQueue"]["__typename"] == "ForbiddenError"  # needs clusters:write
    booked = (await api.ok(RESERVE, {"input": reservation(api, "launch", 2)}, token=alice))[
        "createCapacityReservation"
    ]
    assert booked["tenantId"] == str(alice_id)
    too_many = await api.ok(RESERVE, {"input": reservation(api, "big", 9)}, token=bob)
    assert too_many["createCapacityReservation"]["fields"] == [
        {"path": "gpuCount", "code": "EXCEEDS_CAPACITY"}
    ]
    hour_ago, minute_ago = (datetime.now(UTC) - timedelta(minutes=m) for m in (60, 1))
    past = reservation(api, "old", 1, start=hour_ago.isoformat(), end=minute_ago.isoformat())
    assert (await api.ok(RESERVE, {"input": past}, token=bob))["createCapacityReservation"][
        "fields"
    ] == [{"path": "end", "code": "IN_THE_PAST"}]
    query = """query($id: ID!) { cluster(id: $id) { localQueues { namespace tenantId }
                                                   reservations { name tenantId } } }"""
    seen = {
        who: (await api.ok(query, {"id": api.cluster_id}, token=token))["cluster"]
        for who, token in (("alice", alice), ("bob", bob), ("admin", admin))
    }
    assert [q["tenantId"] for q in seen["alice"]["localQueues"]] == [str(alice_id)]
    assert [q["tenantId"] for q in seen["bob"]["localQueues"]] == [str(bob_id)]
    assert len(seen["admin"]["localQueues"]) == 2
    assert seen["alice"]["reservations"] == [{"name": "launch", "tenantId": str(alice_id)}]
    assert seen["bob"]["reservations"] == []
    assert seen["admin"]["reservations"] == seen["alice"]["reservations"]
    not_bobs = await api.ok(CANCEL, {"id": booked["id"]}, token=bob)
    assert not_bobs["cancelCapacityReservation"] == {
        "__typename": "NotFoundError",
        "code": "NOT_FOUND",
    }
    cancelled = await api.ok(CANCEL, {"id": booked["id"]}, token=alice)
    assert cancelled["cancelCapacityReservation"]["cancelledAt"] is not None
    again = await api.ok(CANCEL, {"id": booked["id"]}, token=alice)
    assert again["cancelCapacityReservation"] == {
        "__typename": "ConflictError",
        "code": "CANCELLED",
    }


USAGE = """query($id: ID!) { cluster(id: $id) {
  clusterQueues { name usage { flavor resource nominalQuota borrowingLimit lendingLimit used
                               borrowed reserved pendingWorkloads admittedWorkloads } }
  localQueues { name namespace clusterQueue } } }"""


async def admit(api: Api, job_id: str, phase: WorkloadPhase, gpus: int) -> None:
    await api.app.observations.apply(
        WorkloadObservation(
            job_id=JobId(uuid.UUID(job_id)),
            attempt=0,
            phase=phase,
            reason="admitted by the test",
            observed_at=datetime.now(UTC),
            placements=(Placement("sim-a100-0", tuple(range(gpus)), A100),),
        )
    )


async def test_usage_after_jobs_are_admitted(api: Api) -> None:
    admin, bob_id = await api.token(), TenantId(uuid.uuid4())
    alice, bob = await api.token(*TENANT), await api.token(*TENANT, tenant=bob_id)
    small = await api.ok(QUEUE, {"input": gpu_queue(api, "small", 1)}, token=admin)
    assert small["createClusterQueue"]["__typename"] == "ClusterQueue"
    team = {
        "clusterId": api.cluster_id,
        "name": "team",
        "clusterQueue": "small",
        "tenantId": str(bob_id),
    }
    await api.ok(LOCAL, {"input": team}, token=admin)

    async def submit(token: str, name: str, gpus: int, **extra: Any) -> str:
        value = api.job_input(name=name, resources={"gpuType": A100, "gpuCount": gpus}, **extra)
        job = (await api.ok(SUBMIT, {"input": value}, token=token))["submitJob"]
        assert job["__typename"] == "Job", job
        return str(job["id"])

    await admit(api, await submit(alice, "a", 4), WorkloadPhase.ADMITTED, 4)
    await admit(api, await submit(alice, "b", 2), WorkloadPhase.RUNNING, 2)
    await submit(alice, "waits", 8)
    await admit(api, await submit(bob, "c", 2, queueName="team"), WorkloadPhase.RUNNING, 2)
    await submit(bob, "d", 1, queueName="team")
    await api.ok(RESERVE, {"input": reservation(api, "launch", 1)}, token=alice)

    cluster = (await api.ok(USAGE, {"id": api.cluster_id}, token=admin))["cluster"]
    usage = {q["name"]: q["usage"] for q in cluster["clusterQueues"]}

    def row(flavor: str, resource: str, used: float, borrowed: float, reserved: int, pending: int, admitted: int, nominal: float) -> dict[str, Any]:  # fmt: skip
        return {
            "flavor": flavor, "resource": resource, "nominalQuota": nominal, "borrowingLimit": None,
            "lendingLimit": None, "used": used, "borrowed": borrowed, "reserved": reserved,
            "pendingWorkloads": pending, "admittedWorkloads": admitted,
        }  # fmt: skip

    assert usage["default"] == [
        row(A100, "nvidia.com/gpu", 6.0, 0.0, 1, 1, 2, 8.0),
        row("default-cpu", "cpu", 2.0, 0.0, 0, 1, 2, 96.0),
        row("default-cpu", "memory", 8.0, 0.0, 0, 1, 2, 1024.0),
    ]
    assert usage["small"] == [row(A100, "nvidia.com/gpu", 2.0, 1.0, 0, 1, 1, 1.0)]
    assert sorted((q["name"], q["clusterQueue"]) for q in cluster["localQueues"]) == [
        ("default", "default"), ("team", "small"),
    ]  # fmt: skip


async def _statements(api: Api, query: str, variables: dict[str, Any], token: str) -> int:
    statements: list[str] = []

    def count(conn: object, cursor: object, statement: str, *args: object) -> None:
        if not statement.lstrip().upper().startswith("PRAGMA"):
            statements.append(statement)

    event.listen(api.app.db.engine.sync_engine, "before_cursor_execute", count)
    try:
        await api.ok(query, variables, token=token)
    finally:
        event.remove(api.app.db.engine.sync_engine, "before_cursor_execute", count)
    return len(statements)


LISTING = """{ clusters { name clusterQueues { usage { used reserved } } localQueues { name }
                          reservations { name } resourceFlavors { name } cohorts { name } } }"""


async def test_queues_and_usage_take_a_constant_number_of_statements(api: Api) -> None:
    admin = await api.token()
    one = await _statements(api, USAGE, {"id": api.cluster_id}, admin)
    listing_one = await _statements(api, LISTING, {}, admin)
    for i in range(3):
        await sim_cluster(api.app)
        await api.ok(QUEUE, {"input": gpu_queue(api, f"q{i}", 1)}, token=admin)
        job = (await api.ok(SUBMIT, {"input": api.job_input(name=f"j{i}")}, token=admin))[
            "submitJob"
        ]
        await admit(api, job["id"], WorkloadPhase.RUNNING, 4)
        await api.ok(RESERVE, {"input": reservation(api, f"r{i}", 1)}, token=admin)
    many = await _statements(api, USAGE, {"id": api.cluster_id}, admin)
    listing_many = await _statements(api, LISTING, {}, admin)
    # token lookup; the cluster and its nodes; flavors, cluster queues, local queues, cohorts,
    # quota settings, priority classes; reservations; active jobs
    assert one == many == listing_one == listing_many == 11


async def test_a_local_queue_with_active_jobs_stays(api: Api) -> None:
    admin = await api.token()
    team = {"clusterId": api.cluster_id, "name": "team", "clusterQueue": "default"}
    assert (await api.ok(LOCAL, {"input": team}, token=admin))["createLocalQueue"]["name"] == "team"
    job = (await api.ok(SUBMIT, {"input": api.job_input(queueName="team")}, token=admin))[
        "submitJob"
    ]
    delete = """mutation($c: ID!, $n: String!) { deleteLocalQueue(clusterId: $c, name: $n) {
                  __typename ... on UserError { code } ... on LocalQueue { name } } }"""
    names = {"c": api.cluster_id, "n": "team"}
    refused = await api.ok(delete, names, token=admin)
    assert refused["deleteLocalQueue"] == {"__typename": "ConflictError", "code": "IN_USE"}
    tenant = await api.ok(delete, names, token=await api.token(*TENANT))
    assert tenant["deleteLocalQueue"] == {"__typename": "ForbiddenError", "code": "FORBIDDEN"}
    cancel = """mutation($id: ID!) { cancelJob(id: $id) { __typename } }"""
    await api.ok(cancel, {"id": job["id"]}, token=admin)
    deleted = await api.ok(delete, names, token=admin)
    assert deleted["deleteLocalQueue"] == {"__typename": "LocalQueue", "name": "team"}
    again = await api.ok(delete, names, token=admin)
    assert again["deleteLocalQueue"] == {"__typename": "NotFoundError", "code": "NOT_FOUND"}
