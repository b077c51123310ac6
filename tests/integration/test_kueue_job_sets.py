"""Jobs of several pod sets on a real cluster: a JobSet Kueue admits, against kmock's emulator.

The test plays Kueue's and JobSet's controllers: it creates the Workload Kueue makes for a JobSet
(owned by it, one PodSet per replicated job), sets its conditions, the JobSet's status, and the
Jobs and pods the JobSet controller makes.

Covers: a BATCH job with a further pod set becomes a suspended jobset.x-k8s.io/v1alpha2 JobSet
with Kueue's labels and one replicated job per pod set ("main" first: parallelism = completions
= its pods, its own GPU request, BUD_POD_SET), and no batch Job of its own; the JobSet's Jobs
are not taken for attempts; its Workload's Admitted -> ADMITTED, its pods ready -> RUNNING with
a placement per pod and the flavor of its pod set's assignment, its Completed condition ->
COMPLETED; cancelJob deletes the JobSet; a cluster that serves no JobSet API fails the job with
a reason that says so.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from adapters.db.engine import Database
from budcluster.bootstrap import App
from domain.model.ids import ClusterId
from domain.model.job import Job, JobStatus, PodSet, Resources
from tests.integration.test_kueue_jobs_flow import (
    ALICE,
    NOW,
    batch,
    condition,
    job_status,
    jobs_in,
    kueue_cluster,
    until,
)
from tests.support.kube_emulator import KubeEmulator

S = JobStatus
NODE = "ip-10-0-12-34.ec2.internal"
WORKERS = PodSet("workers", pod_count=2, gpu_count=2, cpu_cores=4, memory_gb=32)


@pytest.fixture
async def world(db: Database, tmp_path: Path) -> AsyncIterator[tuple[App, KubeEmulator, ClusterId]]:
    async with kueue_cluster(db, tmp_path, job_sets=True) as world:
        yield world


def job_sets_in(emulator: KubeEmulator) -> dict[str, dict[str, Any]]:
    return {
        obj.raw["metadata"]["name"]: obj.raw
        for (resource, _, _), obj in emulator.objects.items()
        if resource.group == "jobset.x-k8s.io" and resource.plural == "jobsets" and not obj.deleted
    }


async def handed_over(app: App, emulator: KubeEmulator, job: Job) -> dict[str, Any]:
    await until(lambda: job_status(app, job), S.QUEUED)
    found = await app.jobs.get(ALICE, job.id)
    assert found is not None
    async with asyncio.timeout(10):
        while found.workload_name not in job_sets_in(emulator):
            await asyncio.sleep(0.05)
    return job_sets_in(emulator)[found.workload_name]


def with_workers(cluster_id: ClusterId, **changes: Any) -> Any:
    return batch(
        cluster_id, resources=Resources("nvidia-a100-80gb", 4, pod_sets=(WORKERS,)), **changes
    )


def job_set_workload(job_set: dict[str, Any], *conditions: dict[str, str]) -> dict[str, Any]:
    name = job_set["metadata"]["name"]
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {
            "name": f"jobset-{name}-3e1a9",
            "namespace": job_set["metadata"]["namespace"],
            "ownerReferences": [
                {
                    "apiVersion": "jobset.x-k8s.io/v1alpha2",
                    "kind": "JobSet",
                    "name": name,
                    "uid": "5b0c9d1e",
                    "controller": True,
                }
            ],
        },
        "spec": {"queueName": "default", "priorityClassName": "bud-normal", "priority": 100},
        "status": {
            "conditions": list(conditions),
            "admission": {
                "clusterQueue": "default",
                "podSetAssignments": [
                    {"name": "main", "flavors": {"nvidia.com/gpu": "a100-main"}, "count": 1},
                    {"name": "workers", "flavors": {"nvidia.com/gpu": "a100-more"}, "count": 2},
                ],
            },
        },
    }


def pod_of(job_set: dict[str, Any], pod_set: str, index: int) -> dict[str, Any]:
    """A pod the JobSet controller's Job for `pod_set` made, ready on the node."""
    name = job_set["metadata"]["name"]
    labels = next(
        rj["template"]["spec"]["template"]["metadata"]["labels"]
        for rj in job_set["spec"]["replicatedJobs"]
        if rj["name"] == pod_set
    )
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{name}-{pod_set}-0-{index}-x7k2p",
            "namespace": job_set["metadata"]["namespace"],
            "labels": {
                **labels,
                "batch.kubernetes.io/job-name": f"{name}-{pod_set}-0",
                "jobset.sigs.k8s.io/jobset-name": name,
                "jobset.sigs.k8s.io/replicatedjob-name": pod_set,
            },
            "annotations": {"batch.kubernetes.io/job-completion-index": str(index)},
        },
        "spec": {"nodeName": NODE, "containers": []},
        "status": {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": NOW}],
        },
    }


async def test_a_job_of_two_pod_sets_runs_as_a_job_set(
    world: tuple[App, KubeEmulator, ClusterId],
) -> None:
    app, emulator, cluster_id = world
    job = await app.jobs.submit(ALICE, with_workers(cluster_id))
    manifest = await handed_over(app, emulator, job)
    assert manifest["apiVersion"] == "jobset.x-k8s.io/v1alpha2"
    assert manifest["spec"]["suspend"] is True
    labels = manifest["metadata"]["labels"]
    assert labels["kueue.x-k8s.io/queue-name"] == "default"
    assert labels["kueue.x-k8s.io/priority-class"] == "bud-normal"
    assert (labels["bud.ai/job-id"], labels["bud.ai/attempt"]) == (str(job.id), "0")
    shapes = []
    for rj in manifest["spec"]["replicatedJobs"]:
        spec = rj["template"]["spec"]
        (container,) = spec["template"]["spec"]["containers"]
        env = {e["name"]: e["value"] for e in container.get("env", [])}
        shapes.append(
            (
                rj["name"],
                rj["replicas"],
                spec["parallelism"],
                spec["completions"],
                container["resources"]["limits"]["nvidia.com/gpu"],
                env["BUD_POD_SET"],
                spec["activeDeadlineSeconds"],
            )
        )
    assert shapes == [("main", 1, 1, 1, 4, "main", 3600), ("workers", 1, 2, 2, 2, "workers", 3600)]
    assert jobs_in(emulator) == {}  # no batch Job of its own

    # the JobSet controller makes its Jobs (with the template's labels): not attempts of their own
    name = manifest["metadata"]["name"]
    for rj in manifest["spec"]["replicatedJobs"]:
        child_labels = {
            **rj["template"]["metadata"]["labels"],
            "jobset.sigs.k8s.io/jobset-name": name,
            "jobset.sigs.k8s.io/replicatedjob-name": rj["name"],
        }
        await emulator.create(
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": {
                    "name": f"{name}-{rj['name']}-0",
                    "namespace": manifest["metadata"]["namespace"],
                    "labels": child_labels,
                },
                "spec": {**rj["template"]["spec"], "suspend": True},
            }
        )
    workload = await emulator.create(
        job_set_workload(
            manifest,
            condition("QuotaReserved", "QuotaReserved"),
            condition("Admitted", "Admitted"),
        )
    )
    await until(lambda: job_status(app, job), S.ADMITTED)

    await emulator.patch_object(manifest, {"spec": {"suspend": False}})
    for pod_set, index in (("workers", 1), ("main", 0), ("workers", 0)):
        await emulator.create(pod_of(manifest, pod_set, index))
    await until(lambda: job_status(app, job), S.RUNNING)

    async def placed() -> list[str | None]:
        running = await app.jobs.get(ALICE, job.id)
        assert running is not None
        return [p.flavor for p in running.placements]

    await until(placed, ["a100-main", "a100-more", "a100-more"])
    await emulator.patch_object(
        manifest,
        {
            "status": {
                "terminalState": "Completed",
                "conditions": [
                    condition("Completed", "AllJobsCompleted", message="jobset completed")
                ],
            }
        },
    )
    await until(lambda: job_status(app, job), S.COMPLETED)
    done = await app.jobs.get(ALICE, job.id)
    assert done is not None and done.status_message == "jobset completed"
    assert workload["metadata"]["name"].startswith("jobset-")


async def test_cancel_deletes_the_job_set(world: tuple[App, KubeEmulator, ClusterId]) -> None:
    app, emulator, cluster_id = world
    job = await app.jobs.submit(ALICE, with_workers(cluster_id, name="cancelled"))
    manifest = await handed_over(app, emulator, job)
    await app.jobs.cancel(ALICE, job.id, "not needed")
    async with asyncio.timeout(10):
        while manifest["metadata"]["name"] in job_sets_in(emulator):
            await asyncio.sleep(0.05)
    assert await job_status(app, job) is S.CANCELLED


async def test_a_cluster_without_job_sets_fails_the_job_saying_why(
    db: Database, tmp_path: Path
) -> None:
    async with kueue_cluster(db, tmp_path) as (app, emulator, cluster_id):
        job = await app.jobs.submit(
            ALICE, with_workers(cluster_id, name=f"x-{uuid.uuid4().hex[:6]}")
        )
        await until(lambda: job_status(app, job), S.FAILED)
        failed = await app.jobs.get(ALICE, job.id)
        assert failed is not None and failed.status_message is not None
        assert "JobSet" in failed.status_message, failed.status_message
        assert job_sets_in(emulator) == {} and jobs_in(emulator) == {}
