"""Model deployments: queries, mutations and their live stream."""

from __future__ import annotations

import functools
from collections.abc import AsyncGenerator
from typing import Annotated

import strawberry

from domain.errors import ValidationFailed
from domain.model.deployment import Deployment as DomainDeployment
from domain.model.deployment import DeploymentStatus, EngineArgs
from domain.model.ids import ClusterId, DeploymentId, ProjectId
from domain.model.principal import Scope
from domain.services.deployment_updates import DeploymentSnapshot as DomainSnapshot
from domain.services.deployment_updates import DeploymentUpdate as DomainUpdate
from domain.services.deployments import DeploymentRequest
from resolvers.common import connection, decode_cursor, parse_uuid, query_uuid, target
from resolvers.streams import relay, resumable
from schema.access import requires
from schema.context import Info
from schema.fairness import heavy_work
from schema.refusals import argument_error, typed_errors
from schema.types import errors
from schema.types.autoscaling import AutoscalingInput, ScalingStep
from schema.types.deployment import (
    Deployment,
    DeploymentChange,
    DeploymentConnection,
    DeploymentEdge,
    DeploymentFilter,
    DeploymentSnapshot,
    DeploymentUpdate,
    DeployModelInput,
)

DeploymentResult = Annotated[
    Deployment
    | errors.ValidationError
    | errors.NotFoundError
    | errors.ConflictError
    | errors.ForbiddenError,
    strawberry.union("DeploymentResult"),
]

DEFAULT_PAGE = 50


def _deployment(info: Info, found: DomainDeployment) -> Deployment:
    return Deployment.from_domain(found, info.context.services.deployments.now())


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
        cluster_id=target(data.cluster_id, data.fleet_id)[0],
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
        secrets=tuple(r.to_domain() for r in data.secrets),
        autoscaling=data.autoscaling.to_domain() if data.autoscaling else None,
    )


@requires(Scope.JOBS_WRITE)
@typed_errors
async def deploy_model(info: Info, input: DeployModelInput) -> DeploymentResult:
    principal = info.context.authenticated()
    request = to_deployment_request(input)
    _, fleet = target(input.cluster_id, input.fleet_id)
    if fleet is not None:
        async with heavy_work(info.context):  # an estimate on each member
            made = await info.context.services.dispatcher.deploy(principal, request, fleet)
    else:
        made = await info.context.services.deployments.deploy(principal, request)
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
async def set_autoscaling(
    info: Info, id: strawberry.ID, autoscaling: AutoscalingInput | None = None
) -> DeploymentResult:
    principal = info.context.authenticated()
    changed = await info.context.services.autoscaler.configure(
        principal,
        DeploymentId(parse_uuid(id, "id")),
        autoscaling.to_domain() if autoscaling else None,
    )
    return _deployment(info, changed)


@requires(Scope.JOBS_READ)
async def scaling_steps(info: Info, cluster_id: strawberry.ID) -> list[ScalingStep]:
    principal = info.context.authenticated()
    found = await info.context.services.autoscaler.steps(
        principal, ClusterId(query_uuid(cluster_id, "cluster_id"))
    )
    return [ScalingStep.from_domain(step, d) for step, d in found]


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
        d = update.deployment
        return DeploymentChange(
            sequence=update.sequence,
            deployment=_deployment(info, d),
            scaling_step=ScalingStep.from_domain(update.step, d) if update.step else None,
        )

    return relay(
        info,
        lambda: info.context.services.deployment_updates.deployment_updates(principal, key, since),
        message,
        fresh_loaders=True,
    )


# --- benchmarks -----------------------------------------------------------------------------
