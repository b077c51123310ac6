"""Jobs of several pod sets through submitJob, the database and the simulated cluster.

Covers, on SQLite and PostgreSQL: a job with further pod sets is stored with them and shown
with every pod set ("main" first) and the GPUs of all of them, by submitJob and by the job
query, and previewJob takes them; every bad pod set is a ValidationError naming its field
(`resources.podSets.<i>.<field>`: names that are not DNS-1123 labels, "main", repeated names,
pod counts and GPUs out of bounds, pods wider than the largest node or more than the nodes
hold; too many pod sets; a SERVICE; a job in a reservation; GPUs without a GPU type) and stores
nothing. On the embedded wiring, a job of a leader and two workers runs on the simulated cluster
to COMPLETED with a placement for each of its three pods.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from budcluster.bootstrap import App
from budcluster.runtime import Runtime
from domain.model.ids import JobId
from domain.model.job import JobStatus, PodSet, Resources
from domain.ports.unit_of_work import TenantScope
from tests.integration.test_app_flows import ALICE, make_app, sim_cluster, submission
from tests.integration.test_graphql_api import Api
from tests.integration.test_quota_api import RESERVE, TENANT, reservation, served

POD_SET = "podSets { name podCount gpuCount cpuCores memoryGb }"
SUBMIT = f"""
mutation Submit($input: SubmitJobInput!) {{
  submitJob(input: $input) {{
    __typename
    ... on Job {{ id resources {{ podCount totalGpus {POD_SET} }} }}
    ... on ValidationError {{ fields {{ path code }} }}
  }}
}}
"""
READ = f"""query($id: ID!) {{ job(id: $id) {{ resources {{ totalGpus {POD_SET} }} }} }}"""
PREVIEW = """query($input: SubmitJobInput!) { previewJob(input: $input) {
  __typename ... on JobPreview { placements { node } } } }"""
WORKERS = {"name": "workers", "podCount": 2, "gpuCount": 2, "cpuCores": 8, "memoryGb": 64}


@pytest.fixture
async def api(db_url: str) -> AsyncIterator[Api]:
    async with served(db_url) as running:
        yield running


def resources(*pod_sets: dict[str, Any], **changes: Any) -> dict[str, Any]:
    return {"gpuType": "nvidia-a100-80gb", "gpuCount": 4, "podSets": list(pod_sets), **changes}


async def submit(api: Api, token: str, **changes: Any) -> dict[str, Any]:
    data = await api.ok(SUBMIT, {"input": api.job_input(**changes)}, token=token)
    result: dict[str, Any] = data["submitJob"]
    return result


async def test_a_job_with_pod_sets_is_stored_and_shown_with_them(api: Api) -> None:
    token = await api.token(*TENANT)
    job = await submit(api, token, resources=resources(WORKERS))
    assert job["__typename"] == "Job", job
    main = {"name": "main", "podCount": 1, "gpuCount": 4, "cpuCores": 1.0, "memoryGb": 4.0}
    workers = {**WORKERS, "cpuCores": 8.0, "memoryGb": 64.0}
    assert job["resources"] == {"podCount": 1, "totalGpus": 8, "podSets": [main, workers]}
    read = await api.ok(READ, {"id": job["id"]}, token=token)
    assert read["job"]["resources"] == {"totalGpus": 8, "podSets": [main, workers]}

    async with api.app.db.unit_of_work(TenantScope.system()) as uow:
        stored = await uow.jobs.get(JobId(uuid.UUID(job["id"])))
    assert stored is not None
    assert stored.resources.pod_sets == (PodSet("workers", 2, 2, 8.0, 64.0),)

    preview = await api.ok(
        PREVIEW, {"input": api.job_input(resources=resources(WORKERS))}, token=token
    )
    assert preview["previewJob"]["__typename"] == "JobPreview", preview


async def test_bad_pod_sets_name_their_field_and_store_nothing(api: Api) -> None:
    token = await api.token(*TENANT)
    booked = await api.ok(RESERVE, {"input": reservation(api, "held", 4)}, token=token)
    reserved = booked["createCapacityReservation"]["id"]
    stored = await api.count_jobs()
    sets = [{"name": f"w{i}"} for i in range(8)]
    cases: list[tuple[dict[str, Any], list[tuple[str, str]]]] = [
        ({"resources": resources({"name": "Workers"})}, [("resources.podSets.0.name", "INVALID_NAME")]),
        ({"resources": resources({"name": "x" * 64})}, [("resources.podSets.0.name", "INVALID_NAME")]),
        ({"resources": resources({"name": "main"})}, [("resources.podSets.0.name", "RESERVED")]),
        ({"resources": resources({"name": "w"}, {"name": "w"})}, [("resources.podSets.1.name", "DUPLICATE")]),
        ({"resources": resources({"name": "w", "podCount": 0})}, [("resources.podSets.0.podCount", "INVALID")]),
        ({"resources": resources({"name": "w", "podCount": 257})}, [("resources.podSets.0.podCount", "INVALID")]),
        ({"resources": resources({"name": "w", "gpuCount": -1})}, [("resources.podSets.0.gpuCount", "INVALID")]),
        ({"resources": resources({"name": "w", "cpuCores": 0})}, [("resources.podSets.0.cpuCores", "INVALID")]),
        ({"resources": resources({"name": "w", "gpuCount": 16})}, [("resources.podSets.0.gpuCount", "EXCEEDS_NODE")]),
        ({"resources": resources({"name": "w", "memoryGb": 4096})}, [("resources.podSets.0.memoryGb", "EXCEEDS_NODE")]),
        ({"resources": resources({"name": "w", "podCount": 3, "gpuCount": 4})}, [("resources.podSets.0.podCount", "EXCEEDS_CLUSTER")]),
        ({"resources": resources(*sets)}, [("resources.podSets", "TOO_MANY")]),
        ({"resources": {"gpuCount": 0, "podSets": [{"name": "w", "gpuCount": 1}]}}, [("resources.gpuType", "REQUIRED")]),
        ({"jobType": "SERVICE", "resources": resources(WORKERS)}, [("resources.podSets", "UNSUPPORTED")]),
        ({"reservationId": reserved, "resources": resources(WORKERS)}, [("resources.podSets", "UNSUPPORTED")]),
    ]  # fmt: skip
    for changes, expected in cases:
        result = await submit(api, token, name="refused", **changes)
        assert result["__typename"] == "ValidationError", (changes, result)
        assert [(f["path"], f["code"]) for f in result["fields"]] == expected, changes
    assert await api.count_jobs() == stored


async def test_a_cpu_launcher_with_gpu_workers_is_accepted(api: Api) -> None:
    """The job's own pod set may ask no GPUs while a further one asks them of its GPU type."""
    token = await api.token(*TENANT)
    launcher = resources({"name": "workers", "podCount": 2, "gpuCount": 4}, gpuCount=0)
    job = await submit(api, token, resources=launcher)
    assert job["__typename"] == "Job", job
    assert job["resources"]["totalGpus"] == 8


async def until(check: Callable[[], Awaitable[bool]], within: float = 15.0) -> None:
    async with asyncio.timeout(within):
        while not await check():
            await asyncio.sleep(0.05)


@pytest.fixture
async def embedded(db_url: str) -> AsyncIterator[App]:
    app = await make_app(db_url)
    runtime = Runtime(app)
    await runtime.start()
    yield app
    await runtime.stop()
    await app.close()


async def test_a_leader_and_its_workers_run_on_the_simulated_cluster(embedded: App) -> None:
    cluster = await sim_cluster(embedded)
    workers = PodSet("workers", pod_count=2, gpu_count=2)
    job = await embedded.jobs.submit(
        ALICE,
        submission(cluster.id, resources=Resources("nvidia-a100-80gb", 4, pod_sets=(workers,))),
    )

    async def done() -> bool:
        found = await embedded.jobs.get(ALICE, job.id)
        return found is not None and found.status is JobStatus.COMPLETED

    await until(done)
    finished = await embedded.jobs.get(ALICE, job.id)
    assert finished is not None and finished.resources.pod_sets == (workers,)
    assert len(finished.placements) == 3  # the leader's pod and both workers'
    assert sorted(len(p.gpu_indices) for p in finished.placements) == [2, 2, 4]
    held = [(p.node, i) for p in finished.placements for i in p.gpu_indices]
    assert len(set(held)) == 8  # every GPU of the node, none twice
