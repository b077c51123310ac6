"""Jobs on a real cluster through Kueue, against kmock's emulator, with the supervisor running.

The test plays Kueue's controller: it creates the Workload Kueue would make for a Job and sets
its conditions (QuotaReserved, Admitted, Finished, Evicted) and the Job's status, as documented
for Kueue's v1beta2 API and batch/v1.

Covers, on SQLite and PostgreSQL (and the reconciling rules: a job RUNNING here whose objects
are gone is FAILED "lost"; objects of budcluster's with no job are orphans, removed after a
grace; a hand-over repeated after a crash makes no second Job): a BATCH job becomes a suspended batch/v1 Job with Kueue's
queue and priority-class labels, its GPU request and deadline; QuotaReserved/Admitted ->
ADMITTED, the Job running -> RUNNING, Finished (Succeeded) -> COMPLETED; Evicted (Preempted) ->
PREEMPTED and a retry as a new Job; cancelJob deletes the Job; a Job deleted outside budcluster
-> CANCELLED; SERVICE jobs and jobs without an image are refused with the field.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from adapters.db.engine import Database
from adapters.secrets.keyring import write_new_key
from budcluster.bootstrap import App
from budcluster.http import create_app
from budcluster.runtime import Runtime
from domain.errors import ValidationFailed
from domain.model.cluster import ClusterStatus, Platform
from domain.model.ids import ClusterId, ProjectId, TenantId
from domain.model.job import DeploymentType, Job, JobStatus, JobType, Resources
from domain.model.principal import Principal, Scope
from domain.ports.gateways import Workload
from domain.ports.repositories import JobFilter
from domain.services.registry import Registration
from domain.services.submission import JobSubmission
from tests.integration.test_app_flows import make_app
from tests.support import k8s_nodes
from tests.support.kube_emulator import KubeEmulator, kubeconfig_for, running_emulator

ALICE = Principal(TenantId(uuid.uuid4()), frozenset({Scope.ADMIN}))
NOW = "2026-11-22T12:00:00Z"
S = JobStatus


@contextlib.asynccontextmanager
async def kueue_cluster(
    db: Database,
    tmp_path: Path,
    version: str = "v1beta2",
    *,
    job_sets: bool = False,
    **settings: Any,
) -> AsyncIterator[tuple[App, KubeEmulator, ClusterId]]:
    """The service (supervisor running) with one AVAILABLE cluster, an emulator serving Kueue
    in `version` (and JobSet, with `job_sets`) with an 8 x A100 node."""
    keys = tmp_path / "keys"
    write_new_key(keys, bits=3072)
    app = await make_app(db.url, keys_dir=keys, kube_plain_http=True, **settings)
    async with running_emulator() as emulator:
        emulator.serve_kueue(version)
        if job_sets:
            emulator.serve_job_sets()
        emulator.seed(k8s_nodes.a100_gfd_node())
        runtime = Runtime(app)
        await runtime.start()
        cluster = await app.registry.register(
            Registration(name="lab", platform=Platform.ON_PREM, kubeconfig=kubeconfig_for(emulator))
        )
        await until(lambda: status_of_cluster(app, cluster.id), ClusterStatus.AVAILABLE)
        yield app, emulator, cluster.id
        await runtime.stop()
        await app.close()


@pytest.fixture
async def world(
    db: Database, tmp_path: Path, request: pytest.FixtureRequest
) -> AsyncIterator[tuple[App, KubeEmulator, ClusterId]]:
    """A cluster serving Kueue in one version (v1beta2, or the test's parameter)."""
    async with kueue_cluster(db, tmp_path, getattr(request, "param", "v1beta2")) as world:
        yield world


async def status_of_cluster(app: App, cluster_id: ClusterId) -> ClusterStatus | None:
    found = await app.clusters.get(cluster_id)
    return None if found is None else found.status


async def until(read: Callable[[], Any], wanted: object, within: float = 15.0) -> None:
    last: object = None
    try:
        async with asyncio.timeout(within):
            while (last := await read()) != wanted:
                await asyncio.sleep(0.05)
    except TimeoutError:
        raise AssertionError(f"still {last!r}, waiting for {wanted!r}") from None


def batch(cluster_id: ClusterId, **changes: Any) -> JobSubmission:
    base = JobSubmission(
        name="train-resnet",
        project_id=ProjectId(uuid.uuid4()),
        cluster_id=cluster_id,
        job_type=JobType.BATCH,
        deployment_type=DeploymentType.DOCKER,
        resources=Resources("nvidia-a100-80gb", 4),
        spec={"image": "ghcr.io/acme/train:1.4", "command": ["python", "train.py"]},
        max_duration_seconds=3600,
    )
    return replace(base, **changes)


async def job_status(app: App, job: Job) -> JobStatus:
    found = await app.jobs.get(ALICE, job.id)
    assert found is not None
    return found.status


def jobs_in(emulator: KubeEmulator) -> dict[str, dict[str, Any]]:
    return {
        obj.raw["metadata"]["name"]: obj.raw
        for (resource, _, _), obj in emulator.objects.items()
        if resource.group == "batch" and resource.plural == "jobs" and not obj.deleted
    }


def kueue_workload(
    job: dict[str, Any], *conditions: dict[str, str], version: str = "v1beta2"
) -> dict[str, Any]:
    """The Workload Kueue's job controller makes for a Job, with these conditions."""
    name = job["metadata"]["name"]
    return {
        "apiVersion": f"kueue.x-k8s.io/{version}",
        "kind": "Workload",
        "metadata": {
            "name": f"job-{name}-7c4d2",
            "namespace": job["metadata"]["namespace"],
            "labels": {"kueue.x-k8s.io/job-uid": "0d7f5a2e"},
            "ownerReferences": [
                {
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "name": name,
                    "uid": "0d7f5a2e",
                    "controller": True,
                }
            ],
        },
        "spec": {"queueName": "default", "priorityClassName": "bud-normal", "priority": 100},
        "status": {"conditions": list(conditions)},
    }


def condition(kind: str, reason: str, status: str = "True", message: str = "") -> dict[str, str]:
    return {
        "type": kind,
        "status": status,
        "reason": reason,
        "message": message or reason,
        "lastTransitionTime": NOW,
    }


async def handed_over(app: App, emulator: KubeEmulator, job: Job) -> dict[str, Any]:
    await until(lambda: job_status(app, job), S.QUEUED)
    found = await app.jobs.get(ALICE, job.id)
    assert found is not None
    async with asyncio.timeout(10):
        while found.workload_name not in jobs_in(emulator):
            await asyncio.sleep(0.05)
    return jobs_in(emulator)[found.workload_name]


@pytest.mark.parametrize("world", ["v1beta2", "v1beta1"], indirect=True)
async def test_a_batch_job_runs_through_kueue(
    world: tuple[App, KubeEmulator, ClusterId],
) -> None:
    """On a cluster serving Kueue v1beta2 or only v1beta1; RUNNING comes from the Job's ready
    pod, whose node is the placement, with the flavor Kueue admitted it to."""
    app, emulator, cluster_id = world
    (version,) = emulator.kueue_versions
    job = await app.jobs.submit(ALICE, batch(cluster_id))
    manifest = await handed_over(app, emulator, job)
    labels = manifest["metadata"]["labels"]
    assert manifest["spec"]["suspend"] is True
    assert labels["kueue.x-k8s.io/queue-name"] == "default"
    assert labels["kueue.x-k8s.io/priority-class"] == "bud-normal"
    assert manifest["spec"]["activeDeadlineSeconds"] == 3600
    container = manifest["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == "ghcr.io/acme/train:1.4"
    assert container["resources"]["limits"]["nvidia.com/gpu"] == 4

    workload = kueue_workload(
        manifest,
        condition("QuotaReserved", "QuotaReserved"),
        condition("Admitted", "Admitted"),
        version=version,
    )
    workload["status"]["admission"] = {
        "clusterQueue": "default",
        "podSetAssignments": [{"name": "main", "flavors": {"nvidia.com/gpu": "a100-80gb"}}],
    }
    workload = await emulator.create(workload)
    await until(lambda: job_status(app, job), S.ADMITTED)
    await emulator.patch_object(manifest, {"spec": {"suspend": False}, "status": {"active": 1}})
    await emulator.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"{manifest['metadata']['name']}-x7k2p",
                "namespace": manifest["metadata"]["namespace"],
                "labels": {
                    **manifest["spec"]["template"]["metadata"]["labels"],
                    "batch.kubernetes.io/job-name": manifest["metadata"]["name"],
                },
            },
            "spec": {"nodeName": "gpu-a100-0", "containers": []},
            "status": {
                "phase": "Running",
                "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": NOW}],
            },
        }
    )
    await until(lambda: job_status(app, job), S.RUNNING)

    async def placed() -> tuple[str, str | None] | None:
        # the Job's status and its pod are two watch events: the node may come second (PLACED)
        running = await app.jobs.get(ALICE, job.id)
        assert running is not None
        placement = running.placement
        return None if placement is None else (placement.node, placement.flavor)

    await until(placed, ("gpu-a100-0", "a100-80gb"))
    conditions = [
        *workload["status"]["conditions"],
        condition("Finished", "Succeeded", message="Job finished successfully"),
    ]
    await emulator.patch_object(workload, {"status": {"conditions": conditions}})
    await until(lambda: job_status(app, job), S.COMPLETED)


async def test_cancel_deletes_and_a_deleted_job_is_cancelled(
    world: tuple[App, KubeEmulator, ClusterId],
) -> None:
    app, emulator, cluster_id = world
    first = await app.jobs.submit(ALICE, batch(cluster_id, name="first"))
    manifest = await handed_over(app, emulator, first)
    await app.jobs.cancel(ALICE, first.id, "not needed")
    async with asyncio.timeout(10):
        while manifest["metadata"]["name"] in jobs_in(emulator):
            await asyncio.sleep(0.05)

    second = await app.jobs.submit(ALICE, batch(cluster_id, name="second"))
    manifest = await handed_over(app, emulator, second)
    await emulator.delete_object(manifest)  # someone ran kubectl delete job
    await until(lambda: job_status(app, second), S.CANCELLED)


async def test_an_evicted_workload_is_preempted_then_retried(
    world: tuple[App, KubeEmulator, ClusterId],
) -> None:
    app, emulator, cluster_id = world
    job = await app.jobs.submit(ALICE, batch(cluster_id, max_retries=2))
    manifest = await handed_over(app, emulator, job)
    await emulator.create(
        kueue_workload(
            manifest,
            condition("QuotaReserved", "QuotaReserved", "False"),
            condition("Admitted", "Admitted", "False"),
            condition("Evicted", "Preempted", message="Preempted to accommodate a workload"),
        )
    )

    async def attempt() -> int:
        found = await app.jobs.get(ALICE, job.id)
        assert found is not None
        return found.attempt

    await until(attempt, 1)  # retried per its policy: a new attempt, a new Job
    retried = await app.jobs.get(ALICE, job.id)
    assert retried is not None
    async with asyncio.timeout(15):
        while retried.workload_name not in jobs_in(emulator):
            await asyncio.sleep(0.05)
    assert retried.workload_name != manifest["metadata"]["name"]
    async with asyncio.timeout(10):  # the evicted attempt is taken back: Kueue won't rerun it
        while manifest["metadata"]["name"] in jobs_in(emulator):
            await asyncio.sleep(0.05)


async def test_what_a_real_cluster_cannot_run_is_refused(
    world: tuple[App, KubeEmulator, ClusterId],
) -> None:
    """Each spec problem is named by its field, as the gateway would meet it; nothing is
    stored."""
    app, _, cluster_id = world
    cases = [
        (batch(cluster_id, spec={"command": ["true"]}), "spec.image"),
        (batch(cluster_id, spec={"image": "x", "command": "python train.py"}), "spec.command"),
        (batch(cluster_id, spec={"image": "x", "env": [{"value": "1"}]}), "spec.env[0]"),
        (batch(cluster_id, job_type=JobType.SERVICE, spec={"port": 80}), "spec.image"),
        (
            batch(cluster_id, job_type=JobType.SERVICE, spec={"image": "x", "replicas": 0}),
            "spec.replicas",
        ),
        (
            batch(cluster_id, job_type=JobType.SERVICE, spec={"image": "x", "port": "http"}),
            "spec.port",
        ),
        (
            batch(cluster_id, job_type=JobType.SERVICE, deployment_type=DeploymentType.HELM),
            "spec.chart",
        ),
        (
            batch(
                cluster_id,
                job_type=JobType.SERVICE,
                deployment_type=DeploymentType.MODEL,
                spec={"chart": "vllm/vllm", "values": ["a"]},
            ),
            "spec.values",
        ),
    ]
    for submission, field in cases:
        with pytest.raises(ValidationFailed) as refused:
            await app.jobs.submit(ALICE, submission)
        assert [issue.field for issue in refused.value.issues] == [field], submission.spec
    stored = await app.jobs.page(ALICE, JobFilter(), first=10, after=None)
    assert stored.jobs == []


async def test_the_cluster_is_the_truth_lost_jobs_and_orphans(
    world: tuple[App, KubeEmulator, ClusterId],
) -> None:
    app, emulator, cluster_id = world
    job = await app.jobs.submit(ALICE, batch(cluster_id))
    manifest = await handed_over(app, emulator, job)
    await emulator.create(kueue_workload(manifest, condition("Admitted", "Admitted")))
    await emulator.patch_object(
        manifest, {"spec": {"suspend": False}, "status": {"active": 1, "startTime": NOW}}
    )
    await until(lambda: job_status(app, job), S.RUNNING)

    # while nobody watched: its objects vanished, and someone left a Job of budcluster's
    # whose job this database does not know
    key = ("batch/v1/jobs", manifest["metadata"]["namespace"], manifest["metadata"]["name"])
    del emulator.objects[key]  # gone without a watch event
    stray = {
        **manifest,
        "metadata": {
            **manifest["metadata"],
            "name": "bud-00000000000000000000-a0",
            "labels": {**manifest["metadata"]["labels"], "bud.ai/job-id": str(uuid.uuid4())},
        },
    }
    emulator.seed(stray)
    cluster = await app.clusters.get(cluster_id)
    assert cluster is not None
    gateway = app.gateways.for_cluster(cluster)
    listed = await gateway.list_workloads()
    found = await app.observations.reconcile_listing(cluster_id, listed, gateway)
    assert found.lost == [job.id] and found.orphans == ["bud-00000000000000000000-a0"]
    lost = await app.jobs.get(ALICE, job.id)
    assert lost is not None and (lost.status, lost.attempt) == (S.PENDING, 1)  # retried
    events = await app.jobs.events(ALICE, [job.id])
    failed = [e for e in events[job.id] if e.to_status is S.FAILED]
    assert [e.reason.startswith("lost") for e in failed] == [True]

    app.observations.orphan_grace = timedelta(0)  # seen long enough: removed
    found = await app.observations.reconcile_listing(cluster_id, listed, gateway)
    assert found.removed == ["bud-00000000000000000000-a0"]
    assert "bud-00000000000000000000-a0" not in jobs_in(emulator)


async def test_a_hand_over_repeated_after_a_crash_makes_one_job(
    world: tuple[App, KubeEmulator, ClusterId],
) -> None:
    """A worker that created the Job and died before recording it: the task runs again and
    finds the Job there (deterministic name), so the attempt has exactly one workload."""
    app, emulator, cluster_id = world
    job = await app.jobs.submit(ALICE, batch(cluster_id, name="twice"))
    manifest = await handed_over(app, emulator, job)
    found = await app.jobs.get(ALICE, job.id)
    assert found is not None
    cluster = await app.clusters.get(cluster_id)
    assert cluster is not None
    await app.gateways.for_cluster(cluster).submit(Workload.of(found))  # the task, again
    ours = [n for n in jobs_in(emulator) if n.startswith(manifest["metadata"]["name"][:25])]
    assert ours == [manifest["metadata"]["name"]]


POSITIONS = """
query Positions($cluster: ID!) {
  jobs(filter: {clusterIds: [$cluster]}, first: 10) {
    edges { node { name status estimate { reason } kueuePosition {
      localQueue positionInLocalQueue positionInClusterQueue pendingInLocalQueue priority
    } } }
  }
}
"""


async def test_kueue_positions_beside_the_estimate(
    world: tuple[App, KubeEmulator, ClusterId],
) -> None:
    """Where the cluster serves Kueue's visibility API, a QUEUED job shows Kueue's position of
    it (in its LocalQueue and ClusterQueue, from 0); an admitted job shows none."""
    app, emulator, cluster_id = world
    emulator.serve_kueue_visibility("v1beta2")
    names = ["first", "second", "urgent", "running"]
    jobs = [await app.jobs.submit(ALICE, batch(cluster_id, name=n)) for n in names]
    manifests = [await handed_over(app, emulator, job) for job in jobs]
    for second, (manifest, priority) in enumerate(
        zip(manifests, (100, 100, 1000, 100), strict=True)
    ):
        workload = kueue_workload(manifest, condition("QuotaReserved", "Pending", "False"))
        workload["spec"]["priority"] = priority
        workload["metadata"]["creationTimestamp"] = f"2026-11-22T12:00:0{second}Z"  # in order
        await emulator.create(workload)
    running = kueue_workload(manifests[3], condition("QuotaReserved", "QuotaReserved"))
    await emulator.patch_object(
        next(
            w
            for w in emulator.kueue_objects("workloads")
            if w["metadata"]["name"] == running["metadata"]["name"]
        ),
        {
            "status": {
                "conditions": [
                    condition("QuotaReserved", "QuotaReserved"),
                    condition("Admitted", "Admitted"),
                ]
            }
        },
    )
    await until(lambda: job_status(app, jobs[3]), S.ADMITTED)

    token = await app.tokens.issue(
        tenant_id=ALICE.tenant_id, name="t", scopes=frozenset({Scope.ADMIN}), operator=True
    )
    transport = httpx.ASGITransport(app=create_app(app, manage_lifecycle=False))
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        response = await client.post(
            "/graphql",
            json={"query": POSITIONS, "variables": {"cluster": str(cluster_id)}},
            headers={"Authorization": f"Bearer {token.secret}"},
        )
    body = response.json()
    assert "errors" not in body, body
    nodes = [edge["node"] for edge in body["data"]["jobs"]["edges"]]
    seen = {n["name"]: (n["status"], n["kueuePosition"]) for n in nodes}

    def at(local: int, cluster: int, priority: int) -> dict[str, Any]:
        return {
            "localQueue": "default",
            "positionInLocalQueue": local,
            "positionInClusterQueue": cluster,
            "pendingInLocalQueue": 3,
            "priority": priority,
        }

    assert seen == {
        "urgent": ("QUEUED", at(0, 0, 1000)),  # higher priority first
        "first": ("QUEUED", at(1, 1, 100)),
        "second": ("QUEUED", at(2, 2, 100)),
        "running": ("ADMITTED", None),
    }


async def test_no_visibility_api_no_position(world: tuple[App, KubeEmulator, ClusterId]) -> None:
    app, emulator, cluster_id = world
    job = await app.jobs.submit(ALICE, batch(cluster_id))
    await handed_over(app, emulator, job)
    found = await app.jobs.get(ALICE, job.id)
    assert found is not None
    from domain.services.queue_positions import PositionQuery

    query = PositionQuery(
        job.id, cluster_id, ALICE.tenant_id, found.queue_name, found.workload_name, found.status
    )
    assert await app.queue_positions.positions([query]) == [None]
