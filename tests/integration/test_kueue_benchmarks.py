"""Benchmarks on a real cluster: `vllm bench serve` as a batch Job Kueue admits, against kmock's
emulator with the supervisor running. The test plays Kueue, the Job controller and the kubelet
(it admits the Job, makes its pod, and writes what the container printed).

Covers: runBenchmark on a Kubernetes cluster makes a suspended Job with the Kueue labels (queue,
priority class; off the pod), the job's requests, and the `vllm bench serve` flags of the plan,
from the configured image; its pod Ready -> the benchmark RUNNING with no load run here; the Job
complete with a result in its pod's log -> COMPLETED with the summary of that result and every
request's sample stored; a failed Job -> FAILED with the Job's reason; a Job that completed
without a result in its log -> FAILED saying so; a plan vLLM's benchmark can't run (a prompts
dataset) -> refused naming `prompts`; a deployment that does not serve yet -> NOT_SERVING, and
once it serves the Job targets its Service with the model as tokenizer.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from adapters.db.engine import Database
from adapters.kubernetes.benchmark_job import bench_serve_args, samples_from_log
from adapters.kubernetes.kueue.models import replica_service
from domain.errors import Conflict, ValidationFailed
from domain.model.benchmark import Benchmark, BenchmarkStatus
from domain.model.ids import BenchmarkId, ClusterId, ProjectId
from domain.model.job import Job, JobStatus
from domain.model.load import Lengths
from domain.model.quota import tenant_namespace
from domain.model.serving_codec import sample_to_document
from domain.services.benchmarks import BenchmarkRequest
from domain.serving.metrics import summarize
from tests.integration.test_kueue_deployments import installed, replica, request, run_pod
from tests.integration.test_kueue_jobs_flow import (
    ALICE,
    NOW,
    condition,
    handed_over,
    kueue_cluster,
    kueue_workload,
    until,
)
from tests.integration.test_kueue_services import World
from tests.support.helm_standin import write_helm
from tests.support.kube_emulator import KubeEmulator
from tests.unit.test_benchmark_job import ENDPOINT, VLLM_RESULT, log_of

IMAGE = "registry.example/vllm-openai:v0.12.0-bench"


@pytest.fixture
async def world(db: Database, tmp_path: Path) -> AsyncIterator[World]:
    helm = write_helm(tmp_path / "bin")
    async with kueue_cluster(
        db, tmp_path, helm_executable=str(helm), benchmark_image=IMAGE
    ) as world:
        yield world


def bench(cluster_id: ClusterId, /, **changes: Any) -> BenchmarkRequest:
    fields: dict[str, Any] = {
        "name": "llama-c4",
        "project_id": ProjectId(uuid.uuid4()),
        "endpoint_url": ENDPOINT,
        "cluster_id": cluster_id,
        "model": "llama-3-8b",
        "concurrency": 4,
        "request_count": 8,
        "prompt_tokens": Lengths.fixed(512),
        "output_tokens": Lengths.fixed(16),
        "seed": 7,
    }
    return BenchmarkRequest(**{**fields, **changes})


async def benchmark_of(world: World, benchmark_id: BenchmarkId) -> Benchmark:
    found = await world[0].benchmarks.get(ALICE, benchmark_id)
    assert found is not None
    return found


async def status(world: World, benchmark_id: BenchmarkId) -> BenchmarkStatus:
    return (await benchmark_of(world, benchmark_id)).status


async def job_of(world: World, benchmark: Benchmark) -> Job:
    job = await world[0].jobs.get(ALICE, benchmark.job_id)
    assert job is not None
    return job


async def run_job(world: World, manifest: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Kueue admits the Job and the Job controller makes its pod, Ready: (its Workload, pod)."""
    emulator = world[1]
    workload = await emulator.create(
        kueue_workload(
            manifest,
            condition("QuotaReserved", "QuotaReserved"),
            condition("Admitted", "Admitted"),
        )
    )
    await emulator.patch_object(manifest, {"spec": {"suspend": False}, "status": {"active": 1}})
    pod = await emulator.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"{manifest['metadata']['name']}-x7k2p",
                "namespace": manifest["metadata"]["namespace"],
                "creationTimestamp": NOW,
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
    return workload, pod


async def end_job(
    emulator: KubeEmulator,
    manifest: dict[str, Any],
    workload: dict[str, Any],
    pod: dict[str, Any],
    *,
    log: str,
    succeeded: bool = True,
) -> None:
    """The container printed `log` and exited; the Job controller and Kueue record the end."""
    emulator.set_log(pod, log)
    await emulator.patch_object(pod, {"status": {"phase": "Succeeded" if succeeded else "Failed"}})
    if succeeded:
        ended = condition("Complete", "CompletionsReached", message="Reached expected number")
        job_status = {"conditions": [ended], "succeeded": 1, "active": 0, "completionTime": NOW}
        finished = condition("Finished", "Succeeded", message="Job finished successfully")
    else:
        ended = condition("Failed", "BackoffLimitExceeded", message="Job has reached the limit")
        job_status = {"conditions": [ended], "failed": 1, "active": 0}
        finished = condition("Finished", "Failed", message="Job has reached the limit")
    await emulator.patch_object(manifest, {"status": job_status})
    conditions = [*workload["status"]["conditions"], finished]
    await emulator.patch_object(workload, {"status": {"conditions": conditions}})


async def test_a_benchmark_runs_as_a_vllm_job_and_its_result_is_read_from_the_log(
    world: World,
) -> None:
    app, emulator, cluster_id = world
    benchmark = await app.benchmarks.run(ALICE, bench(cluster_id))
    job = await job_of(world, benchmark)
    manifest = await handed_over(app, emulator, job)

    # a suspended Job Kueue admits, running vLLM's benchmark of the plan from the set image
    labels = manifest["metadata"]["labels"]
    assert manifest["spec"]["suspend"] is True
    assert labels["kueue.x-k8s.io/queue-name"] == "default"
    assert labels["kueue.x-k8s.io/priority-class"] == "bud-normal"
    assert labels["bud.ai/job-id"] == str(job.id)
    pod_labels = manifest["spec"]["template"]["metadata"]["labels"]
    assert not [k for k in pod_labels if k.startswith("kueue.x-k8s.io/")]
    assert pod_labels["bud.ai/job-id"] == str(job.id)
    (container,) = manifest["spec"]["template"]["spec"]["containers"]
    assert container["image"] == IMAGE
    assert container["command"][:2] == ["python3", "-c"]
    assert container["args"] == bench_serve_args(benchmark.plan)
    assert container["args"][:4] == ["--backend", "openai-chat", "--base-url", ENDPOINT[:-3]]
    assert container["resources"] == {"requests": {"cpu": 1, "memory": "4Gi"}}
    assert (job.resources.gpu_count, job.resources.cpu_cores) == (0, 1.0)

    # its pod runs: the benchmark is RUNNING, and no load runs in this process
    workload, pod = await run_job(world, manifest)
    await until(lambda: status(world, benchmark.id), BenchmarkStatus.RUNNING)
    assert app.benchmark_runner.running == frozenset()

    # the Job completes: what its pod printed is the benchmark's result
    log = log_of(VLLM_RESULT)
    await end_job(emulator, manifest, workload, pod, log=log)
    await until(lambda: status(world, benchmark.id), BenchmarkStatus.COMPLETED)
    done = await benchmark_of(world, benchmark.id)
    run = samples_from_log(log)
    assert done.result == summarize(run)
    assert done.status_message == "6 requests in 0.7 s, 2 failed"
    stored = await app.benchmarks.samples(ALICE, benchmark.id)
    assert stored is not None
    assert [sample_to_document(s) for s in stored] == [sample_to_document(s) for s in run.samples]
    assert emulator.log_reads[-1]["container"] == "main"
    assert (await job_of(world, benchmark)).status is JobStatus.COMPLETED


async def test_a_failed_job_fails_the_benchmark_with_its_reason(world: World) -> None:
    app, emulator, cluster_id = world
    benchmark = await app.benchmarks.run(ALICE, bench(cluster_id))
    manifest = await handed_over(app, emulator, await job_of(world, benchmark))
    workload, pod = await run_job(world, manifest)
    await until(lambda: status(world, benchmark.id), BenchmarkStatus.RUNNING)

    await end_job(emulator, manifest, workload, pod, log="Traceback...\n", succeeded=False)
    await until(lambda: status(world, benchmark.id), BenchmarkStatus.FAILED)
    failed = await benchmark_of(world, benchmark.id)
    assert failed.status_message is not None
    assert failed.status_message.startswith("its job is FAILED: ")
    assert "Job has reached the limit" in failed.status_message
    assert failed.result is None


async def test_a_job_that_completed_without_a_result_fails_saying_so(world: World) -> None:
    app, emulator, cluster_id = world
    benchmark = await app.benchmarks.run(ALICE, bench(cluster_id))
    manifest = await handed_over(app, emulator, await job_of(world, benchmark))
    workload, pod = await run_job(world, manifest)

    await end_job(emulator, manifest, workload, pod, log="INFO starting\nconnection refused\n")
    await until(lambda: status(world, benchmark.id), BenchmarkStatus.FAILED)
    failed = await benchmark_of(world, benchmark.id)
    assert failed.status_message == (
        "its result could not be read: the benchmark printed no result (it failed or is"
        " running); its last line: connection refused"
    )


async def test_what_vllms_benchmark_cant_run_is_refused_naming_the_field(world: World) -> None:
    app, _, cluster_id = world
    with pytest.raises(ValidationFailed) as caught:
        await app.benchmarks.run(ALICE, bench(cluster_id, prompts=("Tell me about GPUs",)))
    assert [i.field for i in caught.value.issues] == ["prompts"]
    with pytest.raises(ValidationFailed) as caught:
        await app.benchmarks.run(
            ALICE, bench(cluster_id, request_count=None, duration_seconds=60.0)
        )
    assert [i.field for i in caught.value.issues] == ["request_count"]
    page = await app.benchmarks.page(ALICE)
    assert page.items == []


async def test_a_deployment_is_benchmarked_once_it_serves(world: World) -> None:
    app, emulator, cluster_id = world
    deployment = await app.deployments.deploy(ALICE, request(cluster_id))
    target = bench(
        cluster_id, endpoint_url=None, cluster_id=None, model=None, deployment_id=deployment.id
    )
    with pytest.raises(Conflict) as caught:
        await app.benchmarks.run(ALICE, target)
    assert caught.value.code == "NOT_SERVING"
    assert "is not serving yet (DEPLOYING)" in str(caught.value)

    manifest = await installed(app, emulator, deployment, 0)
    await run_pod(emulator, manifest, "r0", "gpu-a100-0")

    async def serving() -> bool:
        found = await app.deployments.get(ALICE, deployment.id)
        return found is not None and found.endpoint_url is not None

    await until(serving, True)
    benchmark = await app.benchmarks.run(ALICE, target)
    job = await job_of(world, benchmark)
    args = (await handed_over(app, emulator, job))["spec"]["template"]["spec"]["containers"][0][
        "args"
    ]
    service = replica_service((await replica(app, deployment, 0)).id)
    namespace = tenant_namespace(ALICE.tenant_id)
    base = f"http://{service}.{namespace}.svc.cluster.local:8000"
    assert args[args.index("--base-url") + 1] == base
    assert args[args.index("--model") + 1] == "llama-3-8b"
    assert args[args.index("--tokenizer") + 1] == "meta-llama/Meta-Llama-3-8B-Instruct"
