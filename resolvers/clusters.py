"""Cluster queries and the real-cluster mutations (clusters:write)."""

from __future__ import annotations

from typing import Annotated

import strawberry

from domain.errors import DomainError
from domain.model.cluster import Platform
from domain.model.ids import ClusterId
from domain.model.principal import Scope
from domain.services.registry import ClusterEdit, Registration
from resolvers.common import caller, parse_uuid, query_caller, query_uuid
from schema.context import Info
from schema.types import errors
from schema.types.cluster import Cluster
from schema.types.cluster_inputs import RegisterClusterInput, UpdateClusterInput

Errors = (
    errors.ValidationError | errors.NotFoundError | errors.ConflictError | errors.ForbiddenError
)
ClusterResult = Annotated[Cluster | Errors, strawberry.union("ClusterResult")]


async def cluster(info: Info, id: strawberry.ID) -> Cluster | None:
    query_caller(info, Scope.CLUSTERS_READ)
    found = await info.context.loaders.cluster.load(ClusterId(query_uuid(id, "id")))
    return Cluster.from_domain(found) if found else None


async def clusters(info: Info) -> list[Cluster]:
    query_caller(info, Scope.CLUSTERS_READ)
    return [Cluster.from_domain(c) for c in await info.context.services.clusters.all()]


async def register_cluster(info: Info, input: RegisterClusterInput) -> ClusterResult:
    try:
        caller(info, Scope.CLUSTERS_WRITE)
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
    except DomainError as exc:
        return errors.from_domain(exc)
    return Cluster.from_domain(made)


async def update_cluster(info: Info, id: strawberry.ID, input: UpdateClusterInput) -> ClusterResult:
    try:
        caller(info, Scope.CLUSTERS_WRITE)
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
    except DomainError as exc:
        return errors.from_domain(exc)
    return Cluster.from_domain(changed)


async def delete_cluster(info: Info, id: strawberry.ID, force: bool = False) -> ClusterResult:
    try:
        caller(info, Scope.CLUSTERS_WRITE)
        gone = await info.context.services.registry.delete(
            ClusterId(parse_uuid(id, "id")), force=force
        )
    except DomainError as exc:
        return errors.from_domain(exc)
    return Cluster.from_domain(gone)


async def refresh_cluster(info: Info, id: strawberry.ID) -> ClusterResult:
    try:
        caller(info, Scope.CLUSTERS_WRITE)
        synced = await info.context.services.registry.refresh(ClusterId(parse_uuid(id, "id")))
    except DomainError as exc:
        return errors.from_domain(exc)
    return Cluster.from_domain(synced)
