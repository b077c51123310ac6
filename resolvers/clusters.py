"""Cluster queries and the real-cluster mutations (clusters:write)."""

from __future__ import annotations

from typing import Annotated

import strawberry

from domain.model.cluster import Platform
from domain.model.ids import ClusterId
from domain.model.principal import Scope
from domain.services.registry import ClusterEdit, Registration
from resolvers.common import parse_uuid, query_uuid
from schema.access import requires
from schema.context import Info
from schema.refusals import typed_errors
from schema.types import errors
from schema.types.cluster import Cluster, GpuPrice
from schema.types.cluster_inputs import (
    RegisterClusterInput,
    SetGpuPriceInput,
    UpdateClusterInput,
)

Errors = (
    errors.ValidationError | errors.NotFoundError | errors.ConflictError | errors.ForbiddenError
)
ClusterResult = Annotated[Cluster | Errors, strawberry.union("ClusterResult")]
GpuPriceResult = Annotated[
    GpuPrice | errors.ValidationError | errors.NotFoundError | errors.ForbiddenError,
    strawberry.union("GpuPriceResult"),
]


@requires(Scope.CLUSTERS_READ)
async def cluster(info: Info, id: strawberry.ID) -> Cluster | None:
    found = await info.context.loaders.cluster.load(ClusterId(query_uuid(id, "id")))
    return Cluster.from_domain(found) if found else None


@requires(Scope.CLUSTERS_READ)
async def clusters(info: Info) -> list[Cluster]:
    return [Cluster.from_domain(c) for c in await info.context.services.clusters.all()]


@requires(Scope.CLUSTERS_WRITE)
@typed_errors
async def register_cluster(info: Info, input: RegisterClusterInput) -> ClusterResult:
    addons = info.context.services.addons
    if input.addons:  # refused before anything is stored
        await addons.check(
            info.context.authenticated(), input.addons, input.addons_mirror, "addons_mirror"
        )
    made = await info.context.services.registry.register(
        Registration(
            name=input.name,
            platform=Platform(input.platform.value),
            kubeconfig=input.kubeconfig,
            context=input.context,
            ingress_url=input.ingress_url,
            enable_master_node=input.enable_master_node,
        )
    )
    if input.addons:  # installed once the cluster is reached
        await addons.request(
            info.context.authenticated(),
            made.id,
            input.addons,
            input.addons_mirror,
            "addons_mirror",
        )
    return Cluster.from_domain(made)


@requires(Scope.CLUSTERS_WRITE)
@typed_errors
async def update_cluster(info: Info, id: strawberry.ID, input: UpdateClusterInput) -> ClusterResult:
    changed = await info.context.services.registry.update(
        ClusterId(parse_uuid(id, "id")),
        ClusterEdit(
            name=input.name,
            kubeconfig=input.kubeconfig,
            context=input.context,
            ingress_url=input.ingress_url,
            enable_master_node=input.enable_master_node,
        ),
    )
    return Cluster.from_domain(changed)


@requires(Scope.CLUSTERS_WRITE)
@typed_errors
async def delete_cluster(info: Info, id: strawberry.ID, force: bool = False) -> ClusterResult:
    gone = await info.context.services.registry.delete(ClusterId(parse_uuid(id, "id")), force=force)
    return Cluster.from_domain(gone)


@requires(Scope.CLUSTERS_WRITE)
@typed_errors
async def refresh_cluster(info: Info, id: strawberry.ID) -> ClusterResult:
    synced = await info.context.services.registry.refresh(ClusterId(parse_uuid(id, "id")))
    return Cluster.from_domain(synced)


@requires(Scope.CLUSTERS_WRITE)
@typed_errors
async def set_gpu_price(info: Info, input: SetGpuPriceInput) -> GpuPriceResult:
    price = await info.context.services.clusters.set_gpu_price(
        ClusterId(parse_uuid(input.cluster_id, "cluster_id")), input.gpu_type, input.hourly_price
    )
    return GpuPrice(gpu_type=price.gpu_type, hourly_price=price.hourly, since=price.since)
