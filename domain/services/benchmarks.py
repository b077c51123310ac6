"""Benchmarks: run one against a deployment or an endpoint, watch it, cancel it, compare them.

`BenchmarkService.run` stores the benchmark and its job (a BATCH job of one core, no GPU) in one
unit of work: the job queues and is estimated and drawn like every job. When the job runs, the
reactions queue `start`: on a simulated cluster (whose pods run nothing) the load generator runs
in the process that took the task (`BenchmarkRunner`), reports progress about every second, stores
the samples and the summary, and then ends the job as the benchmark pod would have
(`ClusterGateway.workload_exited`). A run is claimed with the benchmark's version (a task that
runs twice starts one run); a run whose process died stops reporting, and the sweep fails it.
On a Kubernetes cluster the job runs the load itself: its spec carries the plan, with the
endpoint known at submission (a deployment must serve by then), the cluster's check refuses what
its load generator can't run, naming the field, and what it measured is read back from the
cluster when the job ends (`ClusterGateway.benchmark_run`). An endpoint URL is a destination
(`domain.services.destinations`): a deployment of the caller's, or a host the outbound policy
clears; on a Kubernetes cluster, where no one checks the pod's connections, only a deployment
or a host the operator allows, and the spec says what the pod may reach (`egress`).

The metrics have one definition (`domain.serving.metrics`), whatever produced the samples.
"""

from __future__ import annotations

import logging
import math
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from domain.errors import Conflict, FieldIssue, Forbidden, NotFound, ValidationFailed
from domain.model.benchmark import Benchmark, BenchmarkStatus
from domain.model.cluster import ClusterStatus
from domain.model.deployment import Deployment, DeploymentStatus, engine_args_document
from domain.model.ids import BenchmarkId, ClusterId, DeploymentId, ProjectId, new_benchmark_id
from domain.model.job import DeploymentType, Job, JobStatus, JobType, Resources, SourceKind
from domain.model.load import (
    Api,
    LengthKind,
    Lengths,
    LoadPlan,
    RequestSample,
)
from domain.model.outbound import parse_url
from domain.model.principal import Principal
from domain.names import name_problem, text_problem
from domain.ports.clock import Clock
from domain.ports.outbound import OutboundPolicy
from domain.ports.repositories import JobCursor, Page
from domain.ports.unit_of_work import TenantScope, UnitOfWork, UnitOfWorkFactory
from domain.services.destinations import Destination, Destinations
from domain.services.jobs import JobService
from domain.services.paging import check_first
from domain.services.submission import JobSubmission
from domain.services.visibility import seen

log = logging.getLogger(__name__)

MAX_REQUESTS = 100_000
MAX_CONCURRENCY = 1024
MAX_RATE = 10_000.0
MAX_DURATION = 86_400.0
MAX_PROMPTS = 10_000
MAX_PROMPT_CHARS = 100_000
MAX_TOKENS = 1_048_576
MAX_PAGE = 100
MAX_COMPARED = 10
IN_CLUSTER_MEMORY_GB = 4.0
"""The memory of a benchmark's job on a Kubernetes cluster, whose pod runs vLLM's client: it
imports torch and loads the model's tokenizer."""


async def visible_benchmark(
    uow_factory: UnitOfWorkFactory, principal: Principal, benchmark_id: BenchmarkId
) -> Benchmark | None:
    """The benchmark, if `principal` may see it."""
    async with uow_factory(TenantScope.of(principal)) as uow:
        found = await uow.benchmarks.get(benchmark_id)
    if found is None or not principal.may_see(found.tenant_id, found.project_id):
        return None
    return found


@dataclass(frozen=True)
class BenchmarkRequest:
    name: str
    project_id: ProjectId
    deployment_id: DeploymentId | None = None
    endpoint_url: str | None = None
    cluster_id: ClusterId | None = None
    """Where an endpoint URL's benchmark runs (a deployment's runs on its cluster)."""
    model: str | None = None
    """The model name to request (a deployment's served name by default)."""
    api: Api = Api.CHAT
    concurrency: int | None = None
    request_rate: float | None = None
    request_count: int | None = None
    duration_seconds: float | None = None
    prompt_tokens: Lengths = field(default_factory=lambda: Lengths.fixed(128))
    output_tokens: Lengths = field(default_factory=lambda: Lengths.fixed(128))
    prompts: tuple[str, ...] = ()
    seed: int = 0
    request_timeout_seconds: float = 120.0


def endpoint_problem(url: str) -> str | None:
    """What is wrong with the form of an endpoint URL, or None (where it may lead is for
    `Destinations`: a deployment of the caller's, or a host the outbound policy clears)."""
    try:
        parse_url(url)
    except ValueError as exc:
        return str(exc)
    return None


def _length_issues(path: str, lengths: Lengths) -> list[FieldIssue]:
    issues: list[FieldIssue] = []
    if lengths.kind is LengthKind.FIXED:
        if not 1 <= lengths.mean <= MAX_TOKENS:
            issues.append(FieldIssue(f"{path}.mean", f"must be between 1 and {MAX_TOKENS}"))
    elif not 1 <= lengths.low <= lengths.high <= MAX_TOKENS:
        issues.append(
            FieldIssue(f"{path}.low", f"needs 1 <= low <= high <= {MAX_TOKENS} for {lengths.kind}")
        )
    elif lengths.kind is LengthKind.NORMAL and not (
        lengths.low <= lengths.mean <= lengths.high
        and math.isfinite(lengths.stddev)
        and lengths.stddev >= 0
    ):
        issues.append(
            FieldIssue(f"{path}.stddev", "needs low <= mean <= high and a stddev of at least 0")
        )
    return issues


def validate_benchmark(req: BenchmarkRequest) -> list[FieldIssue]:
    issues: list[FieldIssue] = []

    def bad(path: str, message: str, code: str = "INVALID") -> None:
        issues.append(FieldIssue(path, message, code))

    if problem := text_problem(req.name) or name_problem(req.name, max_length=50):
        bad("name", problem, "INVALID_NAME")
    if (req.deployment_id is None) == (req.endpoint_url is None):
        bad("deployment_id", "give exactly one of `deployment_id` and `endpoint_url`", "REQUIRED")
    if req.endpoint_url is not None:
        if problem := endpoint_problem(req.endpoint_url):
            bad("endpoint_url", problem, "FORBIDDEN_ENDPOINT")
        if req.cluster_id is None:
            bad(
                "cluster_id",
                "is required with `endpoint_url`: the cluster it runs from",
                "REQUIRED",
            )
        if req.model is None:
            bad("model", "is required with `endpoint_url`", "REQUIRED")
    if req.model is not None and (
        not 0 < len(req.model) <= 200 or text_problem(req.model) or not req.model.isprintable()
    ):
        bad("model", "must be 1 to 200 printable characters")
    if req.concurrency is None and req.request_rate is None:
        bad("concurrency", "give `concurrency` (users), `request_rate`, or both", "REQUIRED")
    if req.concurrency is not None and not 1 <= req.concurrency <= MAX_CONCURRENCY:
        bad("concurrency", f"must be between 1 and {MAX_CONCURRENCY}")
    if req.request_rate is not None and not (
        math.isfinite(req.request_rate) and 0 < req.request_rate <= MAX_RATE
    ):
        bad("request_rate", f"must be more than 0 and at most {MAX_RATE:g} requests per second")
    if req.request_count is None and req.duration_seconds is None:
        bad("request_count", "give `request_count`, `duration_seconds`, or both", "REQUIRED")
    if req.request_count is not None and not 1 <= req.request_count <= MAX_REQUESTS:
        bad("request_count", f"must be between 1 and {MAX_REQUESTS}")
    if req.duration_seconds is not None and not (
        math.isfinite(req.duration_seconds) and 1 <= req.duration_seconds <= MAX_DURATION
    ):
        bad("duration_seconds", f"must be between 1 and {MAX_DURATION:g}")
    issues += _length_issues("prompt_tokens", req.prompt_tokens)
    issues += _length_issues("output_tokens", req.output_tokens)
    if len(req.prompts) > MAX_PROMPTS:
        bad("prompts", f"must hold at most {MAX_PROMPTS} prompts", "TOO_MANY")
    elif any(not 0 < len(p) <= MAX_PROMPT_CHARS or text_problem(p) for p in req.prompts):
        bad("prompts", f"each must be 1 to {MAX_PROMPT_CHARS} characters of text")
    if not -(2**63) <= req.seed < 2**63:
        bad("seed", "must fit in 64 bits")
    if not (
        math.isfinite(req.request_timeout_seconds) and 1 <= req.request_timeout_seconds <= 3600
    ):
        bad("request_timeout_seconds", "must be between 1 and 3600")
    return issues


def estimated_seconds(req: BenchmarkRequest) -> int:
    """A first guess of how long the run takes, for its job's estimate (learned run times
    of earlier benchmarks of the same name take over): its duration if given; else the
    requests over the users or the rate, each taking 0.2 s plus 30 ms per output token
    (a 7-8B model on one datacenter GPU at moderate load)."""
    if req.duration_seconds is not None:
        return max(1, math.ceil(req.duration_seconds))
    count = req.request_count or 1
    per_request = 0.2 + 0.03 * req.output_tokens.mean
    if req.request_rate is not None:
        return max(1, math.ceil(count / req.request_rate + per_request))
    users = req.concurrency or 1
    return max(1, math.ceil(math.ceil(count / users) * per_request))


@dataclass(frozen=True)
class Difference:
    key: str
    values: tuple[str | None, ...]
    """One per compared benchmark, in their order."""


@dataclass(frozen=True)
class Best:
    metric: str
    benchmark_id: BenchmarkId
    value: float


@dataclass(frozen=True)
class Comparison:
    benchmarks: list[Benchmark]
    differences: list[Difference]
    best: list[Best]


LOWER_IS_BETTER = ("ttft", "tpot", "itl", "e2el")
HIGHER_IS_BETTER = ("request_throughput", "output_throughput", "total_token_throughput")


def compare(benchmarks: Sequence[Benchmark]) -> Comparison:
    """What differs in their configuration, and which is best by each metric (mean latencies
    lowest, throughputs highest), among those with results."""
    keys = sorted({k for b in benchmarks for k in b.configuration})
    differences = []
    for key in keys:
        values = tuple(_text(b.configuration.get(key)) for b in benchmarks)
        if len(set(values)) > 1:
            differences.append(Difference(key, values))
    measured = [b for b in benchmarks if b.result is not None]
    best: list[Best] = []
    for metric in LOWER_IS_BETTER:
        scored = [(s.mean, b) for b in measured if (s := getattr(b.result, metric)) is not None]
        if scored:
            value, winner = min(scored, key=lambda p: p[0])
            best.append(Best(metric, winner.id, value))
    for metric in HIGHER_IS_BETTER:
        scored = [(float(getattr(b.result, metric)), b) for b in measured]
        if scored:
            value, winner = max(scored, key=lambda p: p[0])
            best.append(Best(metric, winner.id, value))
    return Comparison(list(benchmarks), differences, best)


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, dict):
        return ", ".join(f"{k}={_text(v)}" for k, v in sorted(value.items()))
    if isinstance(value, list | tuple):
        return " ".join(str(v) for v in value)
    return str(value)


def _lengths_text(lengths: Lengths) -> str:
    if lengths.kind is LengthKind.FIXED:
        return str(lengths.mean)
    if lengths.kind is LengthKind.UNIFORM:
        return f"uniform {lengths.low}-{lengths.high}"
    return f"normal {lengths.mean}±{lengths.stddev:g} [{lengths.low}-{lengths.high}]"


def configuration_of(plan: LoadPlan, deployment: Deployment | None) -> dict[str, Any]:
    """What a comparison shows of a run: the load's shape, and the deployment as it served."""
    shape: dict[str, Any] = {
        "concurrency": plan.concurrency,
        "request_rate": plan.request_rate,
        "request_count": plan.request_count,
        "duration_seconds": plan.duration_seconds,
        "prompt_tokens": _lengths_text(plan.prompt_tokens),
        "output_tokens": _lengths_text(plan.output_tokens),
        "api": plan.api.value,
        "model": plan.model,
    }
    if deployment is None:
        return {**shape, "endpoint": plan.endpoint}
    running = sum(1 for w in deployment.workers if w.status.value == "RUNNING")
    return {
        **shape,
        "gpu_type": deployment.gpu_type,
        "gpus_per_replica": deployment.gpus_per_replica,
        "replicas": running,
        "engine": deployment.engine.value,
        "engine_args": {
            k: v
            for k, v in engine_args_document(deployment.engine_args).items()
            if v not in (None, [])
        },
    }


class BenchmarkService:
    def __init__(
        self, *, uow: UnitOfWorkFactory, clock: Clock, jobs: JobService, outbound: OutboundPolicy
    ) -> None:
        self._uow = uow
        self._clock = clock
        self._jobs = jobs
        self._destinations = Destinations(uow=uow, outbound=outbound)

    async def run(self, principal: Principal, req: BenchmarkRequest) -> Benchmark:
        if not principal.may_use_project(req.project_id):
            raise Forbidden(f"this token may not run benchmarks in project {req.project_id}")
        issues = validate_benchmark(req)
        if issues:
            raise ValidationFailed(issues)
        destination: Destination | None = None
        if req.endpoint_url is not None:  # resolved before the transaction: DNS takes its time
            destination = await self._destinations.endpoint(
                principal, req.endpoint_url, "endpoint_url"
            )
        now = self._clock.now()
        async with self._uow(TenantScope(principal.tenant_id)) as uow:
            deployment = None
            if req.deployment_id is not None:
                deployment = await uow.deployments.get(req.deployment_id)
                if deployment is None or not principal.may_use_project(deployment.project_id):
                    raise NotFound("deployment", req.deployment_id)
                if deployment.status in (DeploymentStatus.STOPPED, DeploymentStatus.FAILED):
                    raise Conflict(
                        f"deployment {deployment.name} is {deployment.status.value}",
                        code="NOT_SERVING",
                    )
                longest = req.prompt_tokens.largest + req.output_tokens.largest
                if not req.prompts and longest > deployment.engine_args.max_model_len:
                    raise ValidationFailed.single(
                        "output_tokens",
                        f"prompt and output of up to {longest} tokens exceed the deployment's "
                        f"max model length ({deployment.engine_args.max_model_len})",
                        "EXCEEDS_MODEL_LENGTH",
                    )
            cluster_id = deployment.cluster_id if deployment else req.cluster_id
            assert cluster_id is not None
            cluster = await uow.clusters.get(cluster_id)
            if cluster is not None and cluster.status is ClusterStatus.DELETING:
                raise ValidationFailed.single(
                    "cluster_id", "the cluster is being deleted", "CLUSTER_DELETING"
                )
            in_cluster = cluster is not None and cluster.is_real
            endpoint = destination.endpoint if destination is not None else ""
            if in_cluster and deployment is not None:
                endpoint = serving_endpoint(deployment)
            plan = LoadPlan(
                endpoint=endpoint,
                model=req.model or (deployment.served_model_name if deployment else ""),
                api=req.api,
                concurrency=req.concurrency,
                request_rate=req.request_rate,
                request_count=req.request_count,
                duration_seconds=req.duration_seconds,
                prompt_tokens=req.prompt_tokens,
                output_tokens=req.output_tokens,
                prompts=req.prompts,
                seed=req.seed,
                request_timeout_seconds=req.request_timeout_seconds,
            )
            benchmark_id = new_benchmark_id()
            spec: dict[str, Any] = {"id": str(benchmark_id)}
            if in_cluster:  # its pod may reach the endpoint only (and DNS)
                spec["plan"] = plan.document()
                if deployment is not None:
                    spec["egress"] = {"deployment_id": str(deployment.id)}
                elif destination is not None:
                    spec["egress"] = destination.egress()
                if tokenizer := tokenizer_of(deployment, plan):
                    spec["tokenizer"] = tokenizer
            memory_gb = IN_CLUSTER_MEMORY_GB if in_cluster else 2.0
            sub = JobSubmission(
                name=f"bench-{req.name}"[:53].rstrip("-"),
                project_id=req.project_id,
                cluster_id=cluster_id,
                job_type=JobType.BATCH,
                deployment_type=DeploymentType.DOCKER,
                spec={"benchmark": spec},
                resources=Resources(gpu_type=None, gpu_count=0, cpu_cores=1.0, memory_gb=memory_gb),
                source_kind=SourceKind.BENCHMARK,
                source_id=str(benchmark_id),
                estimated_duration_seconds=estimated_seconds(req),
                max_retries=0,
            )
            job, default_queue = await self._jobs.prepare(uow, principal, sub, now, managed=True)
            benchmark = Benchmark(
                id=benchmark_id,
                tenant_id=principal.tenant_id,
                project_id=req.project_id,
                cluster_id=cluster_id,
                name=req.name,
                plan=plan,
                job_id=job.id,
                created_at=now,
                updated_at=now,
                deployment_id=req.deployment_id,
                configuration=configuration_of(plan, deployment),
                status_message="waiting for its job to run",
            )
            benchmark.record_creation()
            if default_queue is not None:
                await uow.quotas.add_local_queue(default_queue, if_absent=True)
            job.record_submission()
            await uow.jobs.add(job)
            await uow.benchmarks.add(benchmark)
            await uow.commit()
        return benchmark

    async def cancel(self, principal: Principal, benchmark_id: BenchmarkId) -> Benchmark:
        now = self._clock.now()
        async with self._uow(TenantScope.of(principal)) as uow:
            b = await self._get(uow, principal, benchmark_id)
            if b.status.is_final:
                raise Conflict(
                    f"benchmark {b.name} is already {b.status.value}", code="ALREADY_FINISHED"
                )
            b.finish(BenchmarkStatus.CANCELLED, "cancelled by user", now)
            job = await uow.jobs.get(b.job_id, for_update=True)
            if job is not None and not job.status.is_finished:
                job.transition(JobStatus.CANCELLED, "benchmark cancelled by user", now)
            await uow.benchmarks.save(b)
            await uow.commit()  # the run notices at its next progress report
        return b

    async def get(self, principal: Principal, benchmark_id: BenchmarkId) -> Benchmark | None:
        return await visible_benchmark(self._uow, principal, benchmark_id)

    async def samples(
        self, principal: Principal, benchmark_id: BenchmarkId
    ) -> list[RequestSample] | None:
        async with self._uow(TenantScope.of(principal)) as uow:
            b = await uow.benchmarks.get(benchmark_id)
            if b is None or not principal.may_see(b.tenant_id, b.project_id):
                return None
            return await uow.benchmarks.samples(benchmark_id) or []

    async def page(
        self,
        principal: Principal,
        *,
        deployment_id: DeploymentId | None = None,
        first: int = 50,
        after: JobCursor | None = None,
    ) -> Page[Benchmark]:
        check_first(first, MAX_PAGE)
        async with self._uow(TenantScope.of(principal)) as uow:
            return await uow.benchmarks.page(
                deployment_id=deployment_id,
                project_ids=principal.project_ids,
                first=first,
                after=after,
            )

    async def compare(
        self, principal: Principal, benchmark_ids: Sequence[BenchmarkId]
    ) -> Comparison:
        ids = list(dict.fromkeys(benchmark_ids))
        if not 2 <= len(ids) <= MAX_COMPARED:
            raise ValidationFailed.single(
                "ids", f"name 2 to {MAX_COMPARED} different benchmarks", "INVALID"
            )
        async with self._uow(TenantScope.of(principal)) as uow:
            found = await uow.benchmarks.get_many(ids)
        for benchmark_id in ids:
            b = found.get(benchmark_id)
            if b is None or not principal.may_see(b.tenant_id, b.project_id):
                raise NotFound("benchmark", benchmark_id)
        return compare([found[i] for i in ids])

    @staticmethod
    async def _get(uow: UnitOfWork, principal: Principal, benchmark_id: BenchmarkId) -> Benchmark:
        found = await uow.benchmarks.get(benchmark_id, for_update=True)
        return seen(principal, found, "benchmark", benchmark_id)


def serving_endpoint(deployment: Deployment) -> str:
    """Where a benchmark run by its cluster sends its requests: the deployment's endpoint, which
    its job is given at submission. Raises Conflict NOT_SERVING until the deployment serves."""
    if deployment.status is not DeploymentStatus.RUNNING or not deployment.endpoint_url:
        raise Conflict(
            f"deployment {deployment.name} is not serving yet ({deployment.status.value}): on a "
            "Kubernetes cluster a benchmark's job is given the endpoint when it is submitted; "
            "run it once the deployment is RUNNING",
            code="NOT_SERVING",
        )
    return deployment.endpoint_url.rstrip("/")


def tokenizer_of(deployment: Deployment | None, plan: LoadPlan) -> str | None:
    """The Hugging Face repository a benchmark run by its cluster counts tokens with, when the
    served name is not one: the deployment's model, if it names a repository (org/name)."""
    if deployment is None or deployment.model == plan.model:
        return None
    model = deployment.model.removeprefix("hf://")
    return model if "://" not in model and not model.startswith("/") else None


def benchmark_of(job: Job) -> BenchmarkId | None:
    """The benchmark a job runs."""
    if job.source.kind is SourceKind.BENCHMARK and job.source.source_id:
        try:
            return BenchmarkId(uuid.UUID(job.source.source_id))
        except ValueError:
            return None
    return None
