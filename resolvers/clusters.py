"""Cluster queries."""

from __future__ import annotations

import strawberry

from domain.model.ids import ClusterId
from domain.model.principal import Scope
from resolvers.common import query_caller, query_uuid
from schema.context import Info
from schema.types.cluster import Cluster


async def cluster(info: Info, id: strawberry.ID) -> Cluster | None:
    query_caller(info, Scope.CLUSTERS_READ)
    found = await info.context.loaders.cluster.load(ClusterId(query_uuid(id, "id")))
    return Cluster.from_domain(found) if found else None


async def clusters(info: Info) -> list[Cluster]:
    query_caller(info, Scope.CLUSTERS_READ)
    return [Cluster.from_domain(c) for c in await info.context.services.clusters.all()]
