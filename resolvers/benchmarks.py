"""LLM benchmarks: queries, mutations and their live progress."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Annotated

import strawberry

from domain.model.ids import BenchmarkId, ClusterId, DeploymentId, ProjectId
from domain.model.principal import Scope
from domain.services.benchmarks import BenchmarkRequest
from resolvers.common import connection, decode_cursor, parse_uuid, query_uuid
from resolvers.streams import relay
from schema.access import requires
from schema.context import Info
from schema.refusals import argument_error, typed_errors
from schema.types import errors
from schema.types.benchmark import (
    Benchmark,
    BenchmarkComparison,
    BenchmarkConnection,
    BenchmarkEdge,
    RunBenchmarkInput,
    TokenLengthsInput,
)

BenchmarkCommandResult = Annotated[
    Benchmark
    | errors.ValidationError
    | errors.NotFoundError
    | errors.ConflictError
    | errors.ForbiddenError,
    strawberry.union("BenchmarkResultUnion"),
]

DEFAULT_PAGE = 50


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
        lambda: info.context.services.benchmark_progress.benchmark_progress(principal, key),
        Benchmark.from_domain,
        missing="no such benchmark",
        field="id",
    )
