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
once it serves the Job targets its Service with the model as tokenizer. Where the pod may go: a
public endpoint the operator did not allow is refused (no one checks the pod's connections);
the Job comes with a NetworkPolicy of its name letting its pod reach the allowed address at its
port, kube-dns and public HTTPS only (a deployment's endpoint: that deployment's pods, and
another tenant's is NOT_FOUND), which a second hand-over leaves as it is (owned by the Job) and
a cancel deletes.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from adapters.db.engine import Database
from adapters.kubernetes.benchmark_job import bench_serve_args, samples_from_log
from adapters.kubernetes.kueue.models import replica_service
from adapters.shapes.documents import sample_to_document
from domain.errors import Conflict, NotFound, ValidationFailed
from domain.model.benchmark import Benchmark, BenchmarkStatus
from domain.model.ids import BenchmarkId, ClusterId, ProjectId, TenantId
from domain.model.job import Job, JobStatus
from domain.model.load import Lengths
from domain.model.principal import Principal
from domain.model.quota import tenant_namespace
from domain.ports.gateways import Workload
from domain.services.benchmarks import BenchmarkRequest
from domain.serving.metrics import progress, summarize
from tests.integration.test_kueue_deployments import installed, replica, request, run_pod
from tests.integration.test_kueue_jobs_flow import (
    ALICE,
    NOW,
    condition,
    handed_over,
    jobs_in,
    kueue_cluster,
    kueue_workload,
    until,
)
from tests.integration.test_kueue_services import World
from tests.support.helm_standin import write_helm
from tests.support.kube_emulator import KubeEmulator
from tests.unit.test_benchmark_job import VLLM_RESULT, log_of

IMAGE = "registry.example/vllm-openai:v0.12.0-bench"
ENDPOINT = "http://10.20.30.40:8000/v1"
"""A private vLLM the operator allows benchmarks to reach (BUDCLUSTER_OUTBOUND_ALLOW)."""


@pytest.fixture
async def world(db: Database, tmp_path: Path) -> AsyncIterator[World]:
    helm = write_helm(tmp_path / "bin")
    async with kueue_cluster(
        db,
        tmp_path,
        helm_executable=str(helm),
        benchmark_image=IMAGE,
        outbound_allow=("10.20.30.0/24",),
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
    assert done.progress == progress(list(run.samples), run.duration_seconds)  # every request
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


async def within(check: Callable[[], bool], seconds: float = 10.0) -> None:
    async with asyncio.timeout(seconds):
        while not check():
            await asyncio.sleep(0.05)


def policies_in(emulator: KubeEmulator) -> dict[str, dict[str, Any]]:
    """The benchmarks' NetworkPolicies (not the tenant namespace's isolation policy)."""
    return {
        obj.raw["metadata"]["name"]: obj.raw
        for (resource, _, _), obj in emulator.objects.items()
        if resource.group == "networking.k8s.io"
        and resource.plural == "networkpolicies"
        and not obj.deleted
        and obj.raw["metadata"]["name"] != "bud-tenant-isolation"
    }


async def test_the_pod_may_reach_its_target_only(world: World) -> None:
    app, emulator, cluster_id = world
    with pytest.raises(ValidationFailed) as caught:  # public, but no one checks the pod there
        await app.benchmarks.run(ALICE, bench(cluster_id, endpoint_url="http://1.1.1.1/v1"))
    assert [(i.field, i.code) for i in caught.value.issues] == [
        ("endpoint_url", "FORBIDDEN_ENDPOINT")
    ]
    benchmark = await app.benchmarks.run(ALICE, bench(cluster_id))
    job = await job_of(world, benchmark)
    manifest = await handed_over(app, emulator, job)
    name = manifest["metadata"]["name"]
    policy = policies_in(emulator)[name]
    namespace = tenant_namespace(ALICE.tenant_id)
    assert policy["metadata"]["namespace"] == namespace
    assert policy["metadata"]["labels"]["bud.ai/job-id"] == str(job.id)
    spec = policy["spec"]
    assert spec["podSelector"] == {
        "matchLabels": {"bud.ai/job-id": str(job.id), "bud.ai/attempt": "0"}
    }
    pod_labels = manifest["spec"]["template"]["metadata"]["labels"]
    assert spec["podSelector"]["matchLabels"].items() <= pod_labels.items()
    assert spec["policyTypes"] == ["Egress"]
    dns, target, hub = spec["egress"]
    assert dns["to"] == [
        {
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
            "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}},
        }
    ]
    assert dns["ports"] == [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]
    assert target == {
        "to": [{"ipBlock": {"cidr": "10.20.30.40/32"}}],
        "ports": [{"protocol": "TCP", "port": 8000}],
    }
    assert hub["ports"] == [{"protocol": "TCP", "port": 443}]
    v4, v6 = (block["ipBlock"] for block in hub["to"])
    assert v4["cidr"] == "0.0.0.0/0" and {"10.0.0.0/8", "169.254.0.0/16"} <= set(v4["except"])
    assert v6["cidr"] == "::/0" and {"fc00::/7", "::ffff:0:0/96"} <= set(v6["except"])
    # a second hand-over of the attempt makes nothing new (the policy is owned by the Job);
    # cancelling takes the policy away
    cluster = await app.clusters.get(cluster_id)
    found = await app.jobs.get(ALICE, job.id)
    assert cluster is not None and found is not None
    uid = str(uuid.uuid4())  # as an API server gives a Job (the emulator does not)
    await emulator.patch_object(manifest, {"metadata": {"uid": uid}})
    await app.gateways.for_cluster(cluster).submit(Workload.of(found))
    assert list(policies_in(emulator)) == [name] and list(jobs_in(emulator)) == [name]
    owner = {"apiVersion": "batch/v1", "kind": "Job", "name": name, "uid": uid}
    assert policies_in(emulator)[name]["metadata"]["ownerReferences"] == [owner]  # goes with it
    await app.benchmarks.cancel(ALICE, benchmark.id)
    await within(lambda: name not in policies_in(emulator))


async def test_a_deployments_pods_are_its_target(world: World) -> None:
    app, emulator, cluster_id = world
    deployment = await app.deployments.deploy(ALICE, request(cluster_id))
    manifest = await installed(app, emulator, deployment, 0)
    await run_pod(emulator, manifest, "r0", "gpu-a100-0")

    async def endpoint() -> str | None:
        found = await app.deployments.get(ALICE, deployment.id)
        return None if found is None else found.endpoint_url

    async with asyncio.timeout(15):
        while (url := await endpoint()) is None:
            await asyncio.sleep(0.05)
    bob = Principal(TenantId(uuid.uuid4()), ALICE.scopes)
    with pytest.raises(NotFound):
        await app.benchmarks.run(bob, bench(cluster_id, endpoint_url=url))
    benchmark = await app.benchmarks.run(ALICE, bench(cluster_id, endpoint_url=url))
    job_manifest = await handed_over(app, emulator, await job_of(world, benchmark))
    policy = policies_in(emulator)[job_manifest["metadata"]["name"]]
    target = policy["spec"]["egress"][1]
    assert target == {
        "to": [{"podSelector": {"matchLabels": {"bud.ai/deployment-id": str(deployment.id)}}}],
        "ports": [{"protocol": "TCP", "port": 8000}],
    }
