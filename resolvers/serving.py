"""Deployments and benchmarks: queries, mutations and their live streams."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Annotated

import strawberry

from domain.errors import DomainError, NotFound, ValidationFailed
from domain.model.deployment import Deployment as DomainDeployment
from domain.model.deployment import DeploymentStatus, EngineArgs
from domain.model.ids import BenchmarkId, ClusterId, DeploymentId, ProjectId
from domain.model.principal import Scope
from domain.services.benchmarks import BenchmarkRequest
from domain.services.deployments import DeploymentRequest
from domain.services.serving_updates import DeploymentSnapshot as DomainSnapshot
from resolvers.common import (
    caller,
    decode_cursor,
    encode_cursor,
    parse_uuid,
    query_caller,
    query_uuid,
)
from schema.context import Info
from schema.types import errors
from schema.types.connection import PageInfo
from schema.types.errors import UserInputError
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


async def deploy_model(info: Info, input: DeployModelInput) -> DeploymentResult:
    try:
        principal = caller(info, Scope.JOBS_WRITE)
        made = await info.context.services.deployments.deploy(
            principal, to_deployment_request(input)
        )
    except DomainError as exc:
        return errors.from_domain(exc)
    return _deployment(info, made)


async def scale_deployment(info: Info, id: strawberry.ID, replicas: int) -> DeploymentResult:
    try:
        principal = caller(info, Scope.JOBS_WRITE)
        scaled = await info.context.services.deployments.scale(
            principal, DeploymentId(parse_uuid(id, "id")), replicas
        )
    except DomainError as exc:
        return errors.from_domain(exc)
    return _deployment(info, scaled)


async def stop_deployment(info: Info, id: strawberry.ID) -> DeploymentResult:
    try:
        principal = caller(info, Scope.JOBS_WRITE)
        stopped = await info.context.services.deployments.stop(
            principal, DeploymentId(parse_uuid(id, "id"))
        )
    except DomainError as exc:
        return errors.from_domain(exc)
    return _deployment(info, stopped)


async def deployment(info: Info, id: strawberry.ID) -> Deployment | None:
    principal = query_caller(info, Scope.JOBS_READ)
    found = await info.context.services.deployments.get(
        principal, DeploymentId(query_uuid(id, "id"))
    )
    return _deployment(info, found) if found else None


async def deployments(
    info: Info,
    filter: DeploymentFilter | None = None,
    first: int = DEFAULT_PAGE,
    after: str | None = None,
) -> DeploymentConnection:
    principal = query_caller(info, Scope.JOBS_READ)
    cursor = decode_cursor(after) if after else None
    clusters = frozenset(
        ClusterId(query_uuid(c, "filter.clusterIds"))
        for c in (filter.cluster_ids if filter and filter.cluster_ids else ())
    )
    statuses: frozenset[DeploymentStatus] = frozenset(
        filter.statuses if filter and filter.statuses else ()
    )
    try:
        page = await info.context.services.deployments.page(
            principal, cluster_ids=clusters, statuses=statuses, first=first, after=cursor
        )
    except DomainError as exc:
        raise UserInputError(exc.message, field="first") from None
    edges = [
        DeploymentEdge(cursor=encode_cursor(d.created_at, d.id), node=_deployment(info, d))
        for d in page.items
    ]
    return DeploymentConnection(
        edges=edges,
        page_info=PageInfo(
            has_next_page=page.has_next, end_cursor=edges[-1].cursor if edges else None
        ),
    )


async def deployment_updates(
    info: Info, cluster_id: strawberry.ID, since: int | None = None
) -> AsyncGenerator[DeploymentUpdate, None]:
    principal = query_caller(info, Scope.JOBS_READ)
    key = ClusterId(query_uuid(cluster_id, "clusterId"))
    if since is not None and since < 0:
        raise UserInputError("since must not be negative", field="since")
    try:
        stream = await info.context.services.serving_updates.deployment_updates(
            principal, key, since
        )
    except NotFound:
        raise UserInputError("no such cluster", code="NOT_FOUND", field="clusterId") from None
    try:
        async for update in stream:
            info.context.refresh_loaders()
            if isinstance(update, DomainSnapshot):
                yield DeploymentSnapshot(
                    sequence=update.sequence,
                    deployments=[_deployment(info, d) for d in update.deployments],
                    reason=update.reason,
                )
            else:
                yield DeploymentChange(
                    sequence=update.sequence, deployment=_deployment(info, update.deployment)
                )
    finally:
        await stream.aclose()


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


async def run_benchmark(info: Info, input: RunBenchmarkInput) -> BenchmarkCommandResult:
    try:
        principal = caller(info, Scope.JOBS_WRITE)
        made = await info.context.services.benchmarks.run(principal, to_benchmark_request(input))
    except DomainError as exc:
        return errors.from_domain(exc)
    return Benchmark.from_domain(made)


async def cancel_benchmark(info: Info, id: strawberry.ID) -> BenchmarkCommandResult:
    try:
        principal = caller(info, Scope.JOBS_WRITE)
        cancelled = await info.context.services.benchmarks.cancel(
            principal, BenchmarkId(parse_uuid(id, "id"))
        )
    except DomainError as exc:
        return errors.from_domain(exc)
    return Benchmark.from_domain(cancelled)


async def benchmark(info: Info, id: strawberry.ID) -> Benchmark | None:
    principal = query_caller(info, Scope.JOBS_READ)
    found = await info.context.services.benchmarks.get(principal, BenchmarkId(query_uuid(id, "id")))
    return Benchmark.from_domain(found) if found else None


async def benchmarks(
    info: Info,
    deployment_id: strawberry.ID | None = None,
    first: int = DEFAULT_PAGE,
    after: str | None = None,
) -> BenchmarkConnection:
    principal = query_caller(info, Scope.JOBS_READ)
    cursor = decode_cursor(after) if after else None
    deployment = DeploymentId(query_uuid(deployment_id, "deploymentId")) if deployment_id else None
    try:
        page = await info.context.services.benchmarks.page(
            principal, deployment_id=deployment, first=first, after=cursor
        )
    except DomainError as exc:
        raise UserInputError(exc.message, field="first") from None
    edges = [
        BenchmarkEdge(cursor=encode_cursor(b.created_at, b.id), node=Benchmark.from_domain(b))
        for b in page.items
    ]
    return BenchmarkConnection(
        edges=edges,
        page_info=PageInfo(
            has_next_page=page.has_next, end_cursor=edges[-1].cursor if edges else None
        ),
    )


async def compare_benchmarks(info: Info, ids: list[strawberry.ID]) -> BenchmarkComparison:
    principal = query_caller(info, Scope.JOBS_READ)
    keys = [BenchmarkId(query_uuid(i, "ids")) for i in ids]
    try:
        comparison = await info.context.services.benchmarks.compare(principal, keys)
    except NotFound as exc:
        raise UserInputError(exc.message, code="NOT_FOUND", field="ids") from None
    except DomainError as exc:
        raise UserInputError(exc.message, field="ids") from None
    return BenchmarkComparison.from_domain(comparison)


async def benchmark_progress(info: Info, id: strawberry.ID) -> AsyncGenerator[Benchmark, None]:
    principal = query_caller(info, Scope.JOBS_READ)
    key = BenchmarkId(query_uuid(id, "id"))
    try:
        stream = await info.context.services.serving_updates.benchmark_progress(principal, key)
    except NotFound:
        raise UserInputError("no such benchmark", code="NOT_FOUND", field="id") from None
    try:
        async for found in stream:
            yield Benchmark.from_domain(found)
    finally:
        await stream.aclose()
