"""The quota API over HTTP (ASGI) on the embedded wiring, on PostgreSQL and SQLite: its objects.

Covers: a new cluster answers with its default flavors and ClusterQueue (and an old cluster
without quotas gets them at start); create, update and delete of flavors, ClusterQueues and
cohorts, each mistake a typed error naming its field in camelCase, refusals of what is in use,
and clusters:write needed; priority classes listed and updated within their order.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from budcluster.http import create_app
from domain.model.ids import ClusterId
from domain.model.principal import Scope
from domain.ports.unit_of_work import TenantScope
from tests.integration.test_app_flows import make_app, sim_cluster
from tests.integration.test_graphql_api import Api
from tests.support.fakes import make_cluster

A100 = "nvidia-a100-80gb"
TENANT = (Scope.JOBS_READ, Scope.JOBS_WRITE, Scope.CLUSTERS_READ)


@contextlib.asynccontextmanager
async def served(url: str) -> AsyncIterator[Api]:
    """The embedded wiring on `url`, with a simulated cluster (8 x A100), behind the ASGI app."""
    app = await make_app(url)
    cluster = await sim_cluster(app)
    transport = httpx.ASGITransport(app=create_app(app, manage_lifecycle=False))
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            yield Api(app, client, str(cluster.id))
    finally:
        await app.close()


@pytest.fixture
async def api(db_url: str) -> AsyncIterator[Api]:
    async with served(db_url) as running:
        yield running


RESULT = """__typename ... on UserError { code } ... on ValidationError { fields { path code } }"""
FLAVOR = f"""mutation($input: ResourceFlavorInput!) {{ createResourceFlavor(input: $input) {{
  {RESULT} ... on ResourceFlavor {{ name nodeLabels {{ key value }} }} }} }}"""
QUEUE = f"""mutation($input: ClusterQueueInput!) {{ createClusterQueue(input: $input) {{
  {RESULT} ... on ClusterQueue {{ name cohort queueingStrategy
    resourceGroups {{ coveredResources flavors {{ flavor resources {{
      name nominalQuota borrowingLimit lendingLimit }} }} }}
    preemption {{ withinClusterQueue reclaimWithinCohort }} }} }} }}"""
DELETE = """mutation($c: ID!, $n: String!) { %s(clusterId: $c, name: $n) { %s } }"""
CLUSTER = """query($id: ID!) { cluster(id: $id) {
  resourceFlavors { name nodeLabels { key value } }
  cohorts { name description }
  clusterQueues { name cohort queueingStrategy resourceGroups { coveredResources
    flavors { flavor resources { name nominalQuota } } } preemption { withinClusterQueue } }
  localQueues { name namespace clusterQueue }
  reservations { name gpuCount cancelledAt } } }"""


def gpu_queue(api: Api, name: str, nominal: float, **extra: Any) -> dict[str, Any]:
    return {
        "clusterId": api.cluster_id,
        "name": name,
        "resourceGroups": [
            {
                "coveredResources": ["nvidia.com/gpu"],
                "flavors": [
                    {
                        "flavor": A100,
                        "resources": [{"name": "nvidia.com/gpu", **extra, "nominalQuota": nominal}],
                    }
                ],
            }
        ],
    }


async def test_a_new_cluster_has_its_defaults(api: Api) -> None:
    data = await api.ok(CLUSTER, {"id": api.cluster_id}, token=await api.token())
    cluster = data["cluster"]
    assert cluster["resourceFlavors"] == [
        {"name": "default-cpu", "nodeLabels": []},
        {"name": A100, "nodeLabels": [{"key": "nvidia.com/gpu.product", "value": A100}]},
    ]
    assert cluster["clusterQueues"] == [
        {
            "name": "default",
            "cohort": None,
            "queueingStrategy": "BEST_EFFORT_FIFO",
            "resourceGroups": [
                {
                    "coveredResources": ["nvidia.com/gpu"],
                    "flavors": [
                        {
                            "flavor": A100,
                            "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 8.0}],
                        }
                    ],
                },
                {
                    "coveredResources": ["cpu", "memory"],
                    "flavors": [
                        {
                            "flavor": "default-cpu",
                            "resources": [
                                {"name": "cpu", "nominalQuota": 96.0},
                                {"name": "memory", "nominalQuota": 1024.0},
                            ],
                        }
                    ],
                },
            ],
            "preemption": {"withinClusterQueue": "LOWER_PRIORITY"},
        }
    ]
    assert cluster["cohorts"] == cluster["localQueues"] == cluster["reservations"] == []


async def test_flavors(api: Api) -> None:
    admin, tenant = await api.token(), await api.token(*TENANT)
    labels = [{"key": "nvidia.com/gpu.product", "value": "nvidia-h100-sxm"}]
    good = {"clusterId": api.cluster_id, "name": "h100", "nodeLabels": labels}

    async def create(value: dict[str, Any], token: str = admin) -> dict[str, Any]:
        created: dict[str, Any] = (await api.ok(FLAVOR, {"input": value}, token=token))[
            "createResourceFlavor"
        ]
        return created

    assert await create(good) == {
        "__typename": "ResourceFlavor",
        "name": "h100",
        "nodeLabels": labels,
    }
    assert await create(good) == {"__typename": "ConflictError", "code": "ALREADY_EXISTS"}
    assert (await create({**good, "name": "H100"}))["fields"] == [
        {"path": "name", "code": "INVALID_NAME"}
    ]
    bad_labels = [{"key": "pool", "value": "a"}, {"key": "pool", "value": "b"}]
    assert (await create({**good, "nodeLabels": bad_labels}))["fields"] == [
        {"path": "nodeLabels", "code": "INVALID"}
    ]
    assert (await create({**good, "clusterId": "nope"}))["fields"] == [
        {"path": "clusterId", "code": "MALFORMED_ID"}
    ]
    assert (await create({**good, "clusterId": str(uuid.uuid4())}))["__typename"] == "NotFoundError"
    assert await create({**good, "name": "x"}, tenant) == {
        "__typename": "ForbiddenError",
        "code": "FORBIDDEN",
    }
    update = """mutation($input: ResourceFlavorInput!) { updateResourceFlavor(input: $input) {
                  __typename ... on ResourceFlavor { nodeLabels { key value } } } }"""
    changed = await api.ok(
        update, {"input": {**good, "nodeLabels": [{"key": "pool", "value": "a"}]}}, token=admin
    )
    assert changed["updateResourceFlavor"]["nodeLabels"] == [{"key": "pool", "value": "a"}]
    delete = DELETE % ("deleteResourceFlavor", RESULT + " ... on ResourceFlavor { name }")
    in_use = await api.ok(delete, {"c": api.cluster_id, "n": A100}, token=admin)
    assert in_use["deleteResourceFlavor"] == {"__typename": "ConflictError", "code": "IN_USE"}
    gone = await api.ok(delete, {"c": api.cluster_id, "n": "h100"}, token=admin)
    assert gone["deleteResourceFlavor"] == {"__typename": "ResourceFlavor", "name": "h100"}
    again = await api.ok(delete, {"c": api.cluster_id, "n": "h100"}, token=admin)
    assert again["deleteResourceFlavor"] == {"__typename": "NotFoundError", "code": "NOT_FOUND"}


async def test_cluster_queues_and_cohorts(api: Api) -> None:
    admin = await api.token()

    async def create(value: dict[str, Any]) -> dict[str, Any]:
        created: dict[str, Any] = (await api.ok(QUEUE, {"input": value}, token=admin))[
            "createClusterQueue"
        ]
        return created

    lending = gpu_queue(api, "research", 4, lendingLimit=5)
    assert (await create(lending))["fields"] == [
        {"path": "resourceGroups.0.flavors.0.resources.0.lendingLimit", "code": "NEEDS_COHORT"}
    ]
    assert (await create({**lending, "cohort": "lab"}))["fields"] == [
        {"path": "cohort", "code": "NOT_FOUND"},
        {"path": "resourceGroups.0.flavors.0.resources.0.lendingLimit", "code": "EXCEEDS_NOMINAL"},
    ]
    cohort = """mutation($input: CohortInput!) { createCohort(input: $input) { __typename } }"""
    made = await api.ok(
        cohort, {"input": {"clusterId": api.cluster_id, "name": "lab"}}, token=admin
    )
    assert made["createCohort"]["__typename"] == "Cohort"
    over = await create({**lending, "cohort": "lab"})
    assert over["fields"] == [
        {"path": "resourceGroups.0.flavors.0.resources.0.lendingLimit", "code": "EXCEEDS_NOMINAL"}
    ]
    queue = await create(
        {
            **gpu_queue(api, "research", 4, lendingLimit=2, borrowingLimit=4),
            "cohort": "lab",
            "queueingStrategy": "STRICT_FIFO",
            "preemption": {"withinClusterQueue": "NEVER", "reclaimWithinCohort": "ANY"},
        }
    )
    assert queue == {
        "__typename": "ClusterQueue",
        "name": "research",
        "cohort": "lab",
        "queueingStrategy": "STRICT_FIFO",
        "resourceGroups": [
            {
                "coveredResources": ["nvidia.com/gpu"],
                "flavors": [
                    {
                        "flavor": A100,
                        "resources": [
                            {
                                "name": "nvidia.com/gpu",
                                "nominalQuota": 4.0,
                                "borrowingLimit": 4.0,
                                "lendingLimit": 2.0,
                            }
                        ],
                    }
                ],
            }
        ],
        "preemption": {"withinClusterQueue": "NEVER", "reclaimWithinCohort": "ANY"},
    }
    assert (await create(gpu_queue(api, "research", 1)))["code"] == "ALREADY_EXISTS"
    update = """mutation($input: ClusterQueueInput!) { updateClusterQueue(input: $input) {
                  __typename ... on ClusterQueue { cohort usage { nominalQuota } } } }"""
    changed = await api.ok(update, {"input": gpu_queue(api, "research", 6)}, token=admin)
    assert changed["updateClusterQueue"] == {
        "__typename": "ClusterQueue",
        "cohort": None,
        "usage": [{"nominalQuota": 6.0}],
    }
    await api.ok(update, {"input": {**gpu_queue(api, "research", 6), "cohort": "lab"}}, token=admin)
    delete_cohort = DELETE % ("deleteCohort", RESULT)
    refused = await api.ok(delete_cohort, {"c": api.cluster_id, "n": "lab"}, token=admin)
    assert refused["deleteCohort"] == {"__typename": "ConflictError", "code": "IN_USE"}
    delete_queue = DELETE % ("deleteClusterQueue", RESULT + " ... on ClusterQueue { name }")
    deleted = await api.ok(delete_queue, {"c": api.cluster_id, "n": "research"}, token=admin)
    assert deleted["deleteClusterQueue"] == {"__typename": "ClusterQueue", "name": "research"}
    gone = await api.ok(delete_cohort, {"c": api.cluster_id, "n": "lab"}, token=admin)
    assert gone["deleteCohort"] == {"__typename": "Cohort"}
    forbidden = await api.ok(
        QUEUE, {"input": gpu_queue(api, "x", 1)}, token=await api.token(*TENANT)
    )
    assert forbidden["createClusterQueue"]["__typename"] == "ForbiddenError"


async def test_priority_classes(api: Api) -> None:
    admin = await api.token()
    listing = "{ workloadPriorityClasses { name priority value } }"
    classes = (await api.ok(listing, token=await api.token(*TENANT)))["workloadPriorityClasses"]
    assert [(c["name"], c["value"]) for c in classes] == [
        ("critical", 1000), ("high", 100), ("normal", 10), ("low", 1), ("spot", 0),
    ]  # fmt: skip
    update = """mutation($p: JobPriority!, $v: Int, $d: String) {
      updateWorkloadPriorityClass(priority: $p, value: $v, description: $d) {
        __typename ... on WorkloadPriorityClass { value description }
        ... on ValidationError { fields { path code } } } }"""
    broken = await api.ok(update, {"p": "HIGH", "v": 1000}, token=admin)
    assert broken["updateWorkloadPriorityClass"]["fields"] == [
        {"path": "value", "code": "BREAKS_ORDER"}
    ]
    changed = await api.ok(update, {"p": "HIGH", "v": 500, "d": "launch week"}, token=admin)
    assert changed["updateWorkloadPriorityClass"] == {
        "__typename": "WorkloadPriorityClass",
        "value": 500,
        "description": "launch week",
    }
    refused = await api.ok(update, {"p": "LOW", "v": 2}, token=await api.token(*TENANT))
    assert refused["updateWorkloadPriorityClass"]["__typename"] == "ForbiddenError"


RESERVE = f"""mutation($input: CapacityReservationInput!) {{ createCapacityReservation(input: $input) {{
  {RESULT} ... on CapacityReservation {{ id name tenantId }} }} }}"""
CANCEL = f"""mutation($id: ID!) {{ cancelCapacityReservation(id: $id) {{
  {RESULT} ... on CapacityReservation {{ cancelledAt }} }} }}"""
LOCAL = f"""mutation($input: LocalQueueInput!) {{ createLocalQueue(input: $input) {{
  {RESULT} ... on LocalQueue {{ name namespace tenantId clusterQueue }} }} }}"""


def reservation(api: Api, name: str, gpus: int, **changes: Any) -> dict[str, Any]:
    now = datetime.now(UTC)
    return {
        "clusterId": api.cluster_id,
        "name": name,
        "clusterQueue": "default",
        "flavor": A100,
        "gpuCount": gpus,
        "start": (now - timedelta(minutes=1)).isoformat(),
        "end": (now + timedelta(hours=1)).isoformat(),
        **changes,
    }


async def test_a_cluster_from_before_quotas_gets_them_at_start(api: Api) -> None:
    old = make_cluster(ClusterId(uuid.uuid4()), name="registered-long-ago")
    async with api.app.db.unit_of_work(TenantScope.system()) as uow:
        await uow.clusters.add(old)
        await uow.commit()
    await api.app.ensure_defaults()
    await api.app.ensure_defaults()  # once is enough
    async with api.app.db.unit_of_work(TenantScope.system()) as uow:
        quotas = await uow.quotas.quota_set(old.id)
    assert [q.name for q in quotas.cluster_queues] == ["default"]
    assert {f.name for f in quotas.flavors} == {"default-cpu", A100, "nvidia-tesla-t4"}
