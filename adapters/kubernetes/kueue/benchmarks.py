"""A benchmark's attempt on a real cluster: vLLM's load generator as a batch Job Kueue admits.

A benchmark's job carries its plan in its spec (`{"benchmark": {"id", "plan", "tokenizer"}}`,
written by BenchmarkService with the endpoint known at submission). `job_manifest` renders such
a BATCH attempt with `benchmark_job` (the `vllm bench serve` container, its driver and its
result markers) and everything else with `batch_job`; either way the Job carries the labels,
suspension, queue and priority class every Job of budcluster's has, and pod requests equal the
job's resources (what budcluster and Kueue both account for), so Kueue admits it and the
gateway's watch follows it like any batch Job. `result_pod` picks the pod whose log holds the run's
result; the gateway reads that log and `samples_from_log` turns it into samples.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from adapters.kubernetes.benchmark_job import BENCHMARK_IMAGE, benchmark_job
from adapters.kubernetes.kueue.jobs import batch_job, job_labels, pod_resources
from adapters.kubernetes.kueue.objects import JsonObject
from domain.model.ids import ClusterId
from domain.model.load import LoadPlan
from domain.model.serving_codec import plan_from_document
from domain.ports import Workload

BENCHMARK_KEY = "benchmark"
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
"""Set by the Job controller on the pods it makes."""


def job_manifest(
    workload: Workload, *, cluster_id: ClusterId, benchmark_image: str = BENCHMARK_IMAGE
) -> JsonObject:
    """The batch/v1 Job of a BATCH or TRAINING attempt: a benchmark's `vllm bench serve` Job,
    or the spec's container. Raises ValueError("<field>: <problem>")."""
    plan = benchmark_plan(workload)
    if plan is None:
        return batch_job(workload, cluster_id=cluster_id)
    tokenizer = workload.spec[BENCHMARK_KEY].get("tokenizer")
    manifest = benchmark_job(
        name=workload.name,
        namespace=workload.namespace,
        plan=plan,
        image=benchmark_image,
        labels=job_labels(workload, cluster_id),
        tokenizer=tokenizer if isinstance(tokenizer, str) and tokenizer else None,
    )
    spec = manifest["spec"]
    spec["template"]["spec"]["containers"][0]["resources"] = pod_resources(workload)
    if workload.max_duration_seconds is not None:
        spec["activeDeadlineSeconds"] = workload.max_duration_seconds
    return manifest


def benchmark_plan(workload: Workload) -> LoadPlan | None:
    """The plan of a benchmark's attempt; None for any other workload. Raises ValueError when
    a benchmark's spec has no readable plan."""
    benchmark = workload.spec.get(BENCHMARK_KEY)
    if benchmark is None:
        return None
    document = benchmark.get("plan") if isinstance(benchmark, Mapping) else None
    if not isinstance(document, dict):
        raise ValueError("spec.benchmark.plan: a benchmark on a Kubernetes cluster needs its plan")
    try:
        return plan_from_document(document)
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"spec.benchmark.plan: not a load plan ({exc})") from None


def result_pod(pods: Sequence[JsonObject]) -> JsonObject | None:
    """The pod that ran the benchmark to its end: one that succeeded, else the last made (the
    Job allows one pod; a pod deleted and made again by the Job controller is the later)."""
    if not pods:
        return None

    def made(pod: JsonObject) -> tuple[bool, str, str]:
        meta = pod.get("metadata") or {}
        phase = (pod.get("status") or {}).get("phase")
        created = str(meta.get("creationTimestamp") or "")
        return phase == "Succeeded", created, str(meta.get("name") or "")

    return max(pods, key=made)
