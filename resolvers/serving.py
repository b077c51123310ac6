"""Deployments and benchmarks: queries, mutations and their live streams."""

from __future__ import annotations

import functools
from collections.abc import AsyncGenerator
from typing import Annotated

import strawberry

from domain.errors import ValidationFailed
from domain.model.deployment import Deployment as DomainDeployment
from domain.model.deployment import DeploymentStatus, EngineArgs
from domain.model.ids import BenchmarkId, ClusterId, DeploymentId, ProjectId
from domain.model.principal import Scope
from domain.services.benchmarks import BenchmarkRequest
from domain.services.deployments import DeploymentRequest
from domain.services.serving_updates import DeploymentSnapshot as DomainSnapshot
from domain.services.serving_updates import DeploymentUpdate as DomainUpdate
from resolvers.common import connection, decode_cursor, parse_uuid, query_uuid
from resolvers.streams import relay, resumable
from schema.access import requires
from schema.context import Info
from schema.refusals import argument_error, typed_errors
from schema.types import errors
from schema.types.serving import (
    Benchmark,
    BenchmarkComparison,
    BenchmarkConnection,
    BenchmarkEdge,
    Deployment,
    DeploymentChange,
    DeploymentConnection,
    DeploymentEdge,
    DeploymentFilter,
    DeploymentSnapshot,
    DeploymentUpdate,
    DeployModelInput,
    RunBenchmarkInput,
    TokenLengthsInput,
)

DeploymentResult = Annotated[
    Deployment
    | errors.ValidationError
    | errors.NotFoundError
    | errors.ConflictError
    | errors.ForbiddenError,
    strawberry.union("DeploymentResult"),
]
BenchmarkCommandResult = Annotated[
    Benchmark
    | errors.ValidationError
    | errors.NotFoundError
    | errors.ConflictError
    | errors.ForbiddenError,
    strawberry.union("BenchmarkResultUnion"),
]

DEFAULT_PAGE = 50


def _deployment(info: Info, found: DomainDeployment) -> Deployment:
    return Deployment.from_domain(found, info.context.services.deployments.now())


# --- deployments ----------------------------------------------------------------------------


def to_deployment_request(data: DeployModelInput) -> DeploymentRequest:
    a = data.engine_args
    given = a.max_num_seqs if a else None
    if given is not None and data.concurrency is not None and given != data.concurrency:
        raise ValidationFailed.single(
            "concurrency", "differs from `engine_args.max_num_seqs`: give one of them"
        )
    max_num_seqs = given if given is not None else data.concurrency
    if max_num_seqs is None:
        max_num_seqs = 256  # vLLM's default
    args = (
        EngineArgs(max_num_seqs=max_num_seqs)
        if a is None
        else EngineArgs(
            tensor_parallel_size=a.tensor_parallel_size,
            pipeline_parallel_size=a.pipeline_parallel_size,
            max_model_len=a.max_model_len,
            max_num_seqs=max_num_seqs,
            dtype=a.dtype,
            gpu_memory_utilization=a.gpu_memory_utilization,
            quantization=a.quantization,
            extra_args=tuple(a.extra_args),
        )
    )
    return DeploymentRequest(
        name=data.name,
        project_id=ProjectId(parse_uuid(data.project_id, "project_id")),
        cluster_id=ClusterId(parse_uuid(data.cluster_id, "cluster_id")),
        model=data.model,
        gpu_type=data.gpu_type,
        engine=data.engine,
        engine_args=args,
        gpus_per_replica=data.gpus_per_replica,
        replicas=data.replicas,
        served_model_name=data.served_model_name,
        cpu_cores=data.cpu_cores,
        memory_gb=data.memory_gb,
        image=data.image,
        chart=data.chart,
        priority=data.priority,
        max_retries=data.max_retries,
    )


@requires(Scope.JOBS_WRITE)
@typed_errors
async def deploy_model(info: Info, input: DeployModelInput) -> DeploymentResult:
    principal = info.context.authenticated()
    made = await info.context.services.deployments.deploy(principal, to_deployment_request(input))
    return _deployment(info, made)


@requires(Scope.JOBS_WRITE)
@typed_errors
async def scale_deployment(info: Info, id: strawberry.ID, replicas: int) -> DeploymentResult:
    principal = info.context.authenticated()
    scaled = await info.context.services.deployments.scale(
        principal, DeploymentId(parse_uuid(id, "id")), replicas
    )
    return _deployment(info, scaled)


@requires(Scope.JOBS_WRITE)
@typed_errors
async def stop_deployment(info: Info, id: strawberry.ID) -> DeploymentResult:
    principal = info.context.authenticated()
    stopped = await info.context.services.deployments.stop(
        principal, DeploymentId(parse_uuid(id, "id"))
    )
    return _deployment(info, stopped)


@requires(Scope.JOBS_READ)
async def deployment(info: Info, id: strawberry.ID) -> Deployment | None:
    principal = info.context.authenticated()
    found = await info.context.services.deployments.get(
        principal, DeploymentId(query_uuid(id, "id"))
    )
    return _deployment(info, found) if found else None


@requires(Scope.JOBS_READ)
async def deployments(
    info: Info,
    filter: DeploymentFilter | None = None,
    first: int = DEFAULT_PAGE,
    after: str | None = None,
) -> DeploymentConnection:
    principal = info.context.authenticated()
    cursor = decode_cursor(after) if after else None
    clusters = frozenset(
        ClusterId(query_uuid(c, "filter.clusterIds"))
        for c in (filter.cluster_ids if filter and filter.cluster_ids else ())
    )
    statuses: frozenset[DeploymentStatus] = frozenset(
        filter.statuses if filter and filter.statuses else ()
    )
    with argument_error("first"):
        page = await info.context.services.deployments.page(
            principal, cluster_ids=clusters, statuses=statuses, first=first, after=cursor
        )
    shown = functools.partial(_deployment, info)
    return connection(DeploymentConnection, DeploymentEdge, page.items, shown, page.has_next)


@requires(Scope.JOBS_READ)
def deployment_updates(
    info: Info, cluster_id: strawberry.ID, since: int | None = None
) -> AsyncGenerator[DeploymentUpdate, None]:
    principal = info.context.authenticated()
    key = resumable(cluster_id, since)

    def message(update: DomainSnapshot | DomainUpdate) -> DeploymentUpdate:
        if isinstance(update, DomainSnapshot):
            return DeploymentSnapshot(
                sequence=update.sequence,
                deployments=[_deployment(info, d) for d in update.deployments],
                reason=update.reason,
            )
        return DeploymentChange(
            sequence=update.sequence, deployment=_deployment(info, update.deployment)
        )

    return relay(
        info,
        lambda: info.context.services.serving_updates.deployment_updates(principal, key, since),
        message,
        fresh_loaders=True,
    )


# --- benchmarks -----------------------------------------------------------------------------


def _lengths(data: TokenLengthsInput | None) -> TokenLengthsInput:
    return data if data is not None else TokenLengthsInput()


def to_benchmark_request(data: RunBenchmarkInput) -> BenchmarkRequest:
    return BenchmarkRequest(
        name=data.name,
        project_id=ProjectId(parse_uuid(data.project_id, "project_id")),
        deployment_id=(
            DeploymentId(parse_uuid(data.deployment_id, "deployment_id"))
            if data.deployment_id
            else None
        ),
        endpoint_url=data.endpoint_url,
        cluster_id=ClusterId(parse_uuid(data.cluster_id, "cluster_id"))
        if data.cluster_id
        else None,
        model=data.model,
        api=data.api,
        concurrency=data.concurrency,
        request_rate=data.request_rate,
        request_count=data.request_count,
        duration_seconds=data.duration_seconds,
        prompt_tokens=_lengths(data.prompt_tokens).to_domain(),
        output_tokens=_lengths(data.output_tokens).to_domain(),
        prompts=tuple(data.prompts or ()),
        seed=data.seed,
        request_timeout_seconds=data.request_timeout_seconds,
    )


@requires(Scope.JOBS_WRITE)
@typed_errors
async def run_benchmark(info: Info, input: RunBenchmarkInput) -> BenchmarkCommandResult:
    principal = info.context.authenticated()
    made = await info.context.services.benchmarks.run(principal, to_benchmark_request(input))
    return Benchmark.from_domain(made)


@requires(Scope.JOBS_WRITE)
@typed_errors
async def cancel_benchmark(info: Info, id: strawberry.ID) -> BenchmarkCommandResult:
    principal = info.context.authenticated()
    cancelled = await info.context.services.benchmarks.cancel(
        principal, BenchmarkId(parse_uuid(id, "id"))
    )
    return Benchmark.from_domain(cancelled)


@requires(Scope.JOBS_READ)
async def benchmark(info: Info, id: strawberry.ID) -> Benchmark | None:
    principal = info.context.authenticated()
    found = await info.context.services.benchmarks.get(principal, BenchmarkId(query_uuid(id, "id")))
    return Benchmark.from_domain(found) if found else None


@requires(Scope.JOBS_READ)
async def benchmarks(
    info: Info,
    deployment_id: strawberry.ID | None = None,
    first: int = DEFAULT_PAGE,
    after: str | None = None,
) -> BenchmarkConnection:
    principal = info.context.authenticated()
    cursor = decode_cursor(after) if after else None
    deployment = DeploymentId(query_uuid(deployment_id, "deploymentId")) if deployment_id else None
    with argument_error("first"):
        page = await info.context.services.benchmarks.page(
            principal, deployment_id=deployment, first=first, after=cursor
        )
    return connection(
        BenchmarkConnection, BenchmarkEdge, page.items, Benchmark.from_domain, page.has_next
    )


@requires(Scope.JOBS_READ)
async def compare_benchmarks(info: Info, ids: list[strawberry.ID]) -> BenchmarkComparison:
    principal = info.context.authenticated()
    keys = [BenchmarkId(query_uuid(i, "ids")) for i in ids]
    with argument_error("ids"):
        comparison = await info.context.services.benchmarks.compare(principal, keys)
    return BenchmarkComparison.from_domain(comparison)


@requires(Scope.JOBS_READ)
def benchmark_progress(info: Info, id: strawberry.ID) -> AsyncGenerator[Benchmark, None]:
    principal = info.context.authenticated()
    key = BenchmarkId(query_uuid(id, "id"))
    return relay(
        info,
        lambda: info.context.services.serving_updates.benchmark_progress(principal, key),
        Benchmark.from_domain,
        missing="no such benchmark",
        field="id",
    )
