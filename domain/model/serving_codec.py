"""Deployments, benchmarks and what benchmarks measure, as plain JSON documents: how they are
stored and how their events travel (through the outbox and Redis, never pickled)."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from domain.model.benchmark import (
    Benchmark,
    BenchmarkChanged,
    BenchmarkChangeKind,
    BenchmarkStatus,
)
from domain.model.deployment import (
    Deployment,
    DeploymentChanged,
    DeploymentChangeKind,
    DeploymentStatus,
    Engine,
    ModelApi,
    Worker,
    WorkerStatus,
    engine_args_document,
    engine_args_from_document,
)
from domain.model.ids import BenchmarkId, ClusterId, DeploymentId, JobId, ProjectId, TenantId
from domain.model.load import (
    Api,
    FailureKind,
    LengthKind,
    Lengths,
    LoadPlan,
    LoadProgress,
    LoadResult,
    RequestSample,
    Summary,
)


def _dt(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _parse_dt(value: Any) -> datetime | None:
    return datetime.fromisoformat(value) if value is not None else None


def _required_dt(value: Any) -> datetime:
    parsed = _parse_dt(value)
    assert parsed is not None
    return parsed


# --- deployments ----------------------------------------------------------------------------


def worker_to_document(w: Worker) -> dict[str, Any]:
    return {
        "replica": w.replica,
        "job_id": str(w.job_id),
        "name": w.name,
        "status": w.status.value,
        "reason": w.reason,
        "node": w.node,
        "devices": list(w.devices),
        "restarts": w.restarts,
        "last_restart_at": _dt(w.last_restart_at),
        "started_at": _dt(w.started_at),
        "cpu_cores": w.cpu_cores,
        "memory_gb": w.memory_gb,
        "utilisation": w.utilisation,
    }


def worker_from_document(doc: dict[str, Any]) -> Worker:
    return Worker(
        replica=int(doc["replica"]),
        job_id=JobId(UUID(doc["job_id"])),
        name=doc["name"],
        status=WorkerStatus(doc["status"]),
        reason=doc.get("reason"),
        node=doc.get("node"),
        devices=tuple(int(i) for i in doc.get("devices") or ()),
        restarts=int(doc["restarts"]),
        last_restart_at=_parse_dt(doc.get("last_restart_at")),
        started_at=_parse_dt(doc.get("started_at")),
        cpu_cores=float(doc["cpu_cores"]),
        memory_gb=float(doc["memory_gb"]),
        utilisation=doc.get("utilisation"),
    )


def deployment_to_document(d: Deployment) -> dict[str, Any]:
    return {
        "id": str(d.id),
        "tenant_id": str(d.tenant_id),
        "project_id": str(d.project_id),
        "cluster_id": str(d.cluster_id),
        "name": d.name,
        "model": d.model,
        "served_model_name": d.served_model_name,
        "engine": d.engine.value,
        "engine_args": engine_args_document(d.engine_args),
        "gpu_type": d.gpu_type,
        "cpu_cores": d.cpu_cores,
        "memory_gb": d.memory_gb,
        "replicas": d.replicas,
        "created_at": _dt(d.created_at),
        "updated_at": _dt(d.updated_at),
        "image": d.image,
        "chart": d.chart,
        "status": d.status.value,
        "status_message": d.status_message,
        "endpoint_url": d.endpoint_url,
        "endpoints": [e.value for e in d.endpoints],
        "replica_jobs": [str(j) for j in d.replica_jobs],
        "workers": [worker_to_document(w) for w in d.workers],
        "stopped_at": _dt(d.stopped_at),
        "version": d.version,
    }


def deployment_from_document(doc: dict[str, Any]) -> Deployment:
    return Deployment(
        id=DeploymentId(UUID(doc["id"])),
        tenant_id=TenantId(UUID(doc["tenant_id"])),
        project_id=ProjectId(UUID(doc["project_id"])),
        cluster_id=ClusterId(UUID(doc["cluster_id"])),
        name=doc["name"],
        model=doc["model"],
        served_model_name=doc["served_model_name"],
        engine=Engine(doc["engine"]),
        engine_args=engine_args_from_document(doc["engine_args"]),
        gpu_type=doc.get("gpu_type"),
        cpu_cores=float(doc["cpu_cores"]),
        memory_gb=float(doc["memory_gb"]),
        replicas=int(doc["replicas"]),
        created_at=_required_dt(doc["created_at"]),
        updated_at=_required_dt(doc["updated_at"]),
        image=doc.get("image"),
        chart=doc.get("chart"),
        status=DeploymentStatus(doc["status"]),
        status_message=doc.get("status_message"),
        endpoint_url=doc.get("endpoint_url"),
        endpoints=tuple(ModelApi(e) for e in doc.get("endpoints") or ()),
        replica_jobs=tuple(JobId(UUID(j)) for j in doc.get("replica_jobs") or ()),
        workers=tuple(worker_from_document(w) for w in doc.get("workers") or ()),
        stopped_at=_parse_dt(doc.get("stopped_at")),
        version=int(doc.get("version", 0)),
    )


# --- what a benchmark sends and measures -----------------------------------------------------


def lengths_to_document(lengths: Lengths) -> dict[str, Any]:
    return {
        "kind": lengths.kind.value,
        "mean": lengths.mean,
        "low": lengths.low,
        "high": lengths.high,
        "stddev": lengths.stddev,
    }


def lengths_from_document(doc: dict[str, Any]) -> Lengths:
    return Lengths(
        LengthKind(doc["kind"]),
        int(doc["mean"]),
        int(doc["low"]),
        int(doc["high"]),
        float(doc["stddev"]),
    )


def plan_to_document(plan: LoadPlan) -> dict[str, Any]:
    return {
        "endpoint": plan.endpoint,
        "model": plan.model,
        "api": plan.api.value,
        "concurrency": plan.concurrency,
        "request_rate": plan.request_rate,
        "request_count": plan.request_count,
        "duration_seconds": plan.duration_seconds,
        "prompt_tokens": lengths_to_document(plan.prompt_tokens),
        "output_tokens": lengths_to_document(plan.output_tokens),
        "prompts": list(plan.prompts),
        "seed": plan.seed,
        "request_timeout_seconds": plan.request_timeout_seconds,
    }


def plan_from_document(doc: dict[str, Any]) -> LoadPlan:
    return LoadPlan(
        endpoint=doc["endpoint"],
        model=doc["model"],
        api=Api(doc["api"]),
        concurrency=doc.get("concurrency"),
        request_rate=doc.get("request_rate"),
        request_count=doc.get("request_count"),
        duration_seconds=doc.get("duration_seconds"),
        prompt_tokens=lengths_from_document(doc["prompt_tokens"]),
        output_tokens=lengths_from_document(doc["output_tokens"]),
        prompts=tuple(doc.get("prompts") or ()),
        seed=int(doc.get("seed", 0)),
        request_timeout_seconds=float(doc.get("request_timeout_seconds", 120.0)),
    )


def _summary_to_document(s: Summary | None) -> list[float] | None:
    return None if s is None else [s.mean, s.p50, s.p90, s.p99, s.max, s.count]


def _summary_from_document(doc: Any) -> Summary | None:
    if doc is None:
        return None
    mean, p50, p90, p99, top, count = doc
    return Summary(float(mean), float(p50), float(p90), float(p99), float(top), int(count))


def result_to_document(r: LoadResult) -> dict[str, Any]:
    return {
        "duration_seconds": r.duration_seconds,
        "successful_requests": r.successful_requests,
        "failed_requests": r.failed_requests,
        "input_tokens": r.input_tokens,
        "output_tokens": r.output_tokens,
        "request_throughput": r.request_throughput,
        "input_throughput": r.input_throughput,
        "output_throughput": r.output_throughput,
        "total_token_throughput": r.total_token_throughput,
        "ttft": _summary_to_document(r.ttft),
        "tpot": _summary_to_document(r.tpot),
        "itl": _summary_to_document(r.itl),
        "e2el": _summary_to_document(r.e2el),
        "failures": [[reason, count] for reason, count in r.failures],
    }


def result_from_document(doc: dict[str, Any]) -> LoadResult:
    return LoadResult(
        duration_seconds=float(doc["duration_seconds"]),
        successful_requests=int(doc["successful_requests"]),
        failed_requests=int(doc["failed_requests"]),
        input_tokens=int(doc["input_tokens"]),
        output_tokens=int(doc["output_tokens"]),
        request_throughput=float(doc["request_throughput"]),
        input_throughput=float(doc["input_throughput"]),
        output_throughput=float(doc["output_throughput"]),
        total_token_throughput=float(doc["total_token_throughput"]),
        ttft=_summary_from_document(doc.get("ttft")),
        tpot=_summary_from_document(doc.get("tpot")),
        itl=_summary_from_document(doc.get("itl")),
        e2el=_summary_from_document(doc.get("e2el")),
        failures=tuple((str(reason), int(count)) for reason, count in doc.get("failures") or ()),
    )


def progress_to_document(p: LoadProgress) -> dict[str, Any]:
    return {
        "elapsed_seconds": p.elapsed_seconds,
        "requests_done": p.requests_done,
        "requests_failed": p.requests_failed,
        "output_tokens": p.output_tokens,
        "ttft_mean": p.ttft_mean,
        "output_throughput": p.output_throughput,
    }


def progress_from_document(doc: dict[str, Any]) -> LoadProgress:
    return LoadProgress(
        elapsed_seconds=float(doc["elapsed_seconds"]),
        requests_done=int(doc["requests_done"]),
        requests_failed=int(doc["requests_failed"]),
        output_tokens=int(doc["output_tokens"]),
        ttft_mean=doc.get("ttft_mean"),
        output_throughput=float(doc["output_throughput"]),
    )


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


def sample_to_document(s: RequestSample) -> list[Any]:
    """Compact (a run keeps every request): a list in a fixed order, times to the microsecond."""
    return [
        s.index,
        _round(s.sent_at),
        s.ok,
        s.prompt_tokens,
        s.output_tokens,
        _round(s.ttft),
        _round(s.e2el),
        [round(gap, 6) for gap in s.itl],
        s.failure.value if s.failure else None,
        s.error,
    ]


def sample_from_document(doc: list[Any]) -> RequestSample:
    index, sent_at, ok, prompt, output, ttft, e2el, itl, failure, error = doc
    return RequestSample(
        index=int(index),
        sent_at=float(sent_at),
        ok=bool(ok),
        prompt_tokens=int(prompt),
        output_tokens=int(output),
        ttft=ttft,
        e2el=e2el,
        itl=tuple(float(g) for g in itl),
        failure=FailureKind(failure) if failure else None,
        error=error,
    )


# --- benchmarks -----------------------------------------------------------------------------


def benchmark_to_document(b: Benchmark) -> dict[str, Any]:
    return {
        "id": str(b.id),
        "tenant_id": str(b.tenant_id),
        "project_id": str(b.project_id),
        "cluster_id": str(b.cluster_id),
        "name": b.name,
        "plan": plan_to_document(b.plan),
        "job_id": str(b.job_id),
        "created_at": _dt(b.created_at),
        "updated_at": _dt(b.updated_at),
        "deployment_id": str(b.deployment_id) if b.deployment_id else None,
        "configuration": b.configuration,
        "status": b.status.value,
        "status_message": b.status_message,
        "started_at": _dt(b.started_at),
        "finished_at": _dt(b.finished_at),
        "progress": progress_to_document(b.progress) if b.progress else None,
        "result": result_to_document(b.result) if b.result else None,
        "version": b.version,
    }


def benchmark_from_document(doc: dict[str, Any]) -> Benchmark:
    return Benchmark(
        id=BenchmarkId(UUID(doc["id"])),
        tenant_id=TenantId(UUID(doc["tenant_id"])),
        project_id=ProjectId(UUID(doc["project_id"])),
        cluster_id=ClusterId(UUID(doc["cluster_id"])),
        name=doc["name"],
        plan=plan_from_document(doc["plan"]),
        job_id=JobId(UUID(doc["job_id"])),
        created_at=_required_dt(doc["created_at"]),
        updated_at=_required_dt(doc["updated_at"]),
        deployment_id=DeploymentId(UUID(doc["deployment_id"]))
        if doc.get("deployment_id")
        else None,
        configuration=dict(doc.get("configuration") or {}),
        status=BenchmarkStatus(doc["status"]),
        status_message=doc.get("status_message"),
        started_at=_parse_dt(doc.get("started_at")),
        finished_at=_parse_dt(doc.get("finished_at")),
        progress=progress_from_document(doc["progress"]) if doc.get("progress") else None,
        result=result_from_document(doc["result"]) if doc.get("result") else None,
        version=int(doc.get("version", 0)),
    )


# --- their events ---------------------------------------------------------------------------


def serving_change_to_document(change: DeploymentChanged | BenchmarkChanged) -> dict[str, Any]:
    if isinstance(change, DeploymentChanged):
        return {
            "type": "deployment",
            "kind": change.kind.value,
            "deployment": deployment_to_document(change.deployment),
        }
    return {
        "type": "benchmark",
        "kind": change.kind.value,
        "benchmark": benchmark_to_document(change.benchmark),
    }


def serving_change_from_document(doc: dict[str, Any]) -> DeploymentChanged | BenchmarkChanged:
    if doc["type"] == "deployment":
        return DeploymentChanged(
            DeploymentChangeKind(doc["kind"]), deployment_from_document(doc["deployment"])
        )
    return BenchmarkChanged(
        BenchmarkChangeKind(doc["kind"]), benchmark_from_document(doc["benchmark"])
    )
