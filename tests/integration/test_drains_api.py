"""Drains through the GraphQL API on a simulated cluster of two 8 x A100 nodes, on both
databases, time from the clock port: a training job running on the drained node gets SIGTERM and
its grace period, is requeued (not failed, no retry used) and runs on the other node while its old
copy still checkpoints; the drain is DRAINED once that grace is over, and undrained the node takes
work again. A deployment's replicas on the drained node are started on the other one before the
old ones stop, so it never serves from none. Bad input is a typed error naming the field (nothing
stored), a tenant may not drain, and deleting a cluster drained whole needs no force."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import pytest

from adapters.simulated.gateway import SimulatedGateway
from domain.model.drain import DrainId
from domain.model.ids import ClusterId, JobId, TenantId
from domain.model.job import Job, JobStatus
from domain.model.principal import Scope
from domain.ports.gateways import WorkloadPhase
from domain.ports.unit_of_work import TenantScope
from tests.integration.test_cost_api import A100, api_at
from tests.integration.test_fleets_api import simulated
from tests.integration.test_graphql_api import SUBMIT, Api
from tests.support.fakes import T0, FakeClock

DRAIN_NODE = """
mutation($cluster: ID!, $node: String!, $reason: String) {
  drainNode(clusterId: $cluster, node: $node, reason: $reason) {
    __typename
    ... on Drain { id node state reason estimatedEnd remaining replacing }
    ... on ValidationError { fields { path code } }
    ... on UserError { code message }
  }
}
"""
DRAIN_CLUSTER = """
mutation($cluster: ID!) {
  drainCluster(clusterId: $cluster) {
    __typename
    ... on Drain { id node state }
    ... on UserError { code message }
  }
}
"""
UNDRAIN = "mutation($id: ID!) { undrain(id: $id) { __typename ... on Drain { state endedAt } } }"
DRAINS = "query($c: ID!) { drains(clusterId: $c) { id node state remaining blockedPods } }"
JOB = """
query($id: ID!) {
  job(id: $id) {
    status attempt statusMessage terminationGracePeriodSeconds
    events { fromStatus toStatus }
  }
}
"""


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(T0)


@pytest.fixture
async def api(db_url: str, clock: FakeClock) -> AsyncIterator[Api]:
    async with api_at(db_url, clock) as made:
        made.cluster_id = str((await simulated(made, "2x8xnvidia-a100-80gb")).id)
        yield made


def cluster_of(api: Api) -> ClusterId:
    return ClusterId(uuid.UUID(api.cluster_id))


async def gateway(api: Api) -> SimulatedGateway:
    cluster = await api.app.clusters.get(cluster_of(api))
    assert cluster is not None
    found = api.app.gateways.for_cluster(cluster)
    assert isinstance(found, SimulatedGateway)
    return found


async def step(api: Api) -> None:
    """One step of the simulated cluster, its report applied as the supervisor would."""
    observations, _ = await (await gateway(api)).advance()
    await api.app.observations.apply_batch(observations, cluster_id=cluster_of(api))


async def job(api: Api, job_id: str) -> Job:
    async with api.app.db.unit_of_work(TenantScope.system()) as uow:
        found = await uow.jobs.get(JobId(uuid.UUID(job_id)))
    assert found is not None
    return found


async def hand_over(api: Api, job_id: str) -> None:
    found = await job(api, job_id)
    assert await api.app.workloads.submit(found.id, found.attempt)


async def schedulable(api: Api, token: str) -> dict[str, bool]:
    found = await api.ok(
        "query($id: ID!) { cluster(id: $id) { nodes { name schedulable } } }",
        {"id": api.cluster_id},
        token=token,
    )
    return {n["name"]: n["schedulable"] for n in found["cluster"]["nodes"]}


async def submitted(api: Api, token: str, **changes: Any) -> str:
    given = api.job_input(resources={"gpuType": A100, "gpuCount": 8}, **changes)
    job_id: str = (await api.ok(SUBMIT, {"input": given}, token=token))["submitJob"]["id"]
    await hand_over(api, job_id)
    return job_id


async def test_a_running_job_is_requeued_with_its_grace_and_runs_on_the_other_node(
    api: Api, clock: FakeClock
) -> None:
    operator = await api.token()
    job_id = await submitted(api, operator, terminationGracePeriodSeconds=90)
    await step(api)
    first = await job(api, job_id)
    assert first.status is JobStatus.RUNNING
    node = first.placements[0].node

    answer = await api.ok(
        DRAIN_NODE, {"cluster": api.cluster_id, "node": node, "reason": "firmware"}, token=operator
    )
    drain = answer["drainNode"]
    assert drain["__typename"] == "Drain" and drain["state"] == "DRAINING", drain
    assert drain["estimatedEnd"].startswith((T0 + timedelta(seconds=90)).strftime("%Y-%m-%dT%H"))
    shown = (await api.ok(JOB, {"id": job_id}, token=operator))["job"]
    assert (shown["status"], shown["attempt"], shown["terminationGracePeriodSeconds"]) == (
        "PENDING",
        0,
        90,
    )  # requeued in the same attempt: no retry used
    assert shown["statusMessage"] == f"requeued: node {node} is drained (firmware)"
    assert [(e["fromStatus"], e["toStatus"]) for e in shown["events"]][-2:] == [
        ("RUNNING", "PREEMPTED"),
        ("PREEMPTED", "PENDING"),
    ]

    await hand_over(api, job_id)  # the old copy gets SIGTERM, then the new one is handed over
    await step(api)
    again = await job(api, job_id)
    assert again.status is JobStatus.RUNNING and again.generation == 1
    assert {p.node for p in again.placements} != {node}  # on the other node
    live = await (await gateway(api)).list_workloads()
    old = [o for o in live if o.job_id == again.id and o.workload != again.workload_name]
    assert [o.phase for o in old] == [WorkloadPhase.RUNNING]  # still checkpointing
    drains = (await api.ok(DRAINS, {"c": api.cluster_id}, token=operator))["drains"]
    assert [d["state"] for d in drains] == ["DRAINING"]

    clock.current = T0 + timedelta(seconds=91)  # its grace is over
    await step(api)
    live = await (await gateway(api)).list_workloads()
    old = [o for o in live if o.job_id == again.id and o.workload != again.workload_name]
    assert [o.phase for o in old] == [WorkloadPhase.DELETED]
    assert (await job(api, job_id)).status is JobStatus.RUNNING  # a stale report changes nothing
    done = await api.app.drains.advance(DrainId(uuid.UUID(drain["id"])))
    assert done is not None and done.state.value == "DRAINED"

    assert (await schedulable(api, operator))[node] is False  # cordoned, as the cluster says
    ended = (await api.ok(UNDRAIN, {"id": drain["id"]}, token=operator))["undrain"]
    assert ended["state"] == "ENDED" and ended["endedAt"] is not None
    assert (await schedulable(api, operator))[node] is True  # takes work again
    later = await submitted(api, operator, name="after")
    await step(api)
    assert {p.node for p in (await job(api, later)).placements} == {node}


async def test_a_deployments_replicas_start_elsewhere_before_the_old_ones_stop(
    api: Api,
) -> None:
    operator = await api.token()
    deploy = await api.ok(
        """
        mutation($input: DeployModelInput!) {
          deployModel(input: $input) { __typename ... on Deployment { id } }
        }
        """,
        {
            "input": {
                "name": "chat",
                "projectId": api.project,
                "clusterId": api.cluster_id,
                "model": "org/model",
                "gpuType": A100,
                "replicas": 2,
                "engineArgs": {"tensorParallelSize": 4},
            }
        },
        token=operator,
    )
    deployment = deploy["deployModel"]["id"]
    async with api.app.db.unit_of_work(TenantScope.system()) as uow:
        d = await uow.deployments.get(uuid.UUID(deployment))  # type: ignore[arg-type]
        assert d is not None
        olds = [str(j) for j in d.replica_jobs]
    for replica in olds:
        await hand_over(api, replica)
    await step(api)
    placed = [await job(api, r) for r in olds]
    assert [j.status for j in placed] == [JobStatus.RUNNING] * 2
    [node] = {p.node for j in placed for p in j.placements}  # both on one node (tightest)

    drain = (await api.ok(DRAIN_NODE, {"cluster": api.cluster_id, "node": node}, token=operator))[
        "drainNode"
    ]
    assert (drain["replacing"], drain["remaining"]) == (2, 2)
    serving = [(await job(api, r)).status for r in olds]
    assert serving == [JobStatus.RUNNING] * 2  # the old ones serve meanwhile
    async with api.app.db.unit_of_work(TenantScope.system()) as uow:
        d = await uow.deployments.get(uuid.UUID(deployment))  # type: ignore[arg-type]
        assert d is not None
        taking = {str(r.old): str(r.new) for r in d.replacements}
    assert sorted(taking) == sorted(olds)
    news = [taking[r] for r in olds]  # each takes the replica number of the one it replaces
    for replica in news:
        await hand_over(api, replica)
    await step(api)
    for replica in news:
        placed_new = await job(api, replica)
        assert placed_new.status is JobStatus.RUNNING
        assert {p.node for p in placed_new.placements} != {node}
    assert await api.app.deployments.refresh(uuid.UUID(deployment))  # type: ignore[arg-type]
    for replica in olds:
        gone = await job(api, replica)
        assert gone.status is JobStatus.CANCELLED
        assert (gone.status_message or "").startswith("replaced: node")
    async with api.app.db.unit_of_work(TenantScope.system()) as uow:
        d = await uow.deployments.get(uuid.UUID(deployment))  # type: ignore[arg-type]
        assert d is not None
        assert [str(j) for j in d.replica_jobs] == news and d.replacements == ()


@pytest.mark.parametrize(
    ("variables", "path", "code"),
    [
        ({"node": "no-such-node"}, "node", "NOT_FOUND"),
        ({"cluster": "not-an-id"}, "clusterId", "MALFORMED_ID"),
        ({"reason": "x" * 501}, "reason", "INVALID"),
    ],
)
async def test_bad_drain_input_names_its_field_and_stores_nothing(
    api: Api, variables: dict[str, Any], path: str, code: str
) -> None:
    operator = await api.token()
    given = {"cluster": api.cluster_id, "node": "sim-a100-0"} | variables
    answer = (await api.ok(DRAIN_NODE, given, token=operator))["drainNode"]
    assert answer["__typename"] == "ValidationError", answer
    assert [(f["path"], f["code"]) for f in answer["fields"]] == [(path, code)]
    assert (await api.ok(DRAINS, {"c": api.cluster_id}, token=operator))["drains"] == []


async def test_a_bad_grace_period_is_refused_naming_its_field(api: Api) -> None:
    operator = await api.token()
    given = api.job_input(terminationGracePeriodSeconds=3601)
    answer = (await api.ok(SUBMIT, {"input": given}, token=operator))["submitJob"]
    assert [f["path"] for f in answer["fields"]] == ["terminationGracePeriodSeconds"]


async def test_a_tenant_may_not_drain_but_sees_the_drain(api: Api) -> None:
    tenant = await api.token(
        Scope.JOBS_READ, Scope.JOBS_WRITE, Scope.CLUSTERS_READ, tenant=TenantId(uuid.uuid4())
    )
    refused = await api.ok(
        DRAIN_NODE, {"cluster": api.cluster_id, "node": "sim-a100-0"}, token=tenant
    )
    assert refused["drainNode"]["__typename"] == "ForbiddenError", refused
    operator = await api.token()
    await api.ok(DRAIN_NODE, {"cluster": api.cluster_id, "node": "sim-a100-0"}, token=operator)
    seen = (await api.ok(DRAINS, {"c": api.cluster_id}, token=tenant))["drains"]
    assert [(d["node"], d["blockedPods"]) for d in seen] == [("sim-a100-0", [])]


async def test_a_cluster_drained_whole_admits_nothing_and_is_deleted_without_force(
    api: Api,
) -> None:
    operator = await api.token()
    running = await submitted(api, operator, name="running")
    await step(api)
    assert (await job(api, running)).status is JobStatus.RUNNING
    drain = (await api.ok(DRAIN_CLUSTER, {"cluster": api.cluster_id}, token=operator))[
        "drainCluster"
    ]
    assert (drain["node"], drain["state"]) == (None, "DRAINING")
    await hand_over(api, running)  # requeued: it waits, as nothing is admitted here
    await step(api)
    assert (await job(api, running)).status is JobStatus.QUEUED
    deleted = await api.ok(
        "mutation($id: ID!) { deleteCluster(id: $id) { __typename ... on UserError { code } } }",
        {"id": api.cluster_id},
        token=operator,
    )
    assert deleted["deleteCluster"]["__typename"] == "Cluster", deleted
