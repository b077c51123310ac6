"""Cluster add-ons: the operator's `installAddons` and `removeAddons` (clusters:write)."""

from __future__ import annotations

import strawberry

from domain.model.addons import Addon
from domain.model.ids import ClusterId
from domain.model.principal import Scope
from resolvers.clusters import ClusterResult
from resolvers.common import parse_uuid
from schema.access import requires
from schema.context import Info
from schema.refusals import typed_errors
from schema.types.addons import ClusterAddon  # noqa: F401  (registers the add-on enums)
from schema.types.cluster import Cluster


@requires(Scope.CLUSTERS_WRITE)
@typed_errors
async def install_addons(
    info: Info, cluster_id: strawberry.ID, addons: list[Addon], mirror: str | None = None
) -> ClusterResult:
    principal = info.context.authenticated()
    cluster = await info.context.services.addons.request(
        principal, ClusterId(parse_uuid(cluster_id, "cluster_id")), addons, mirror
    )
    return Cluster.from_domain(cluster)


@requires(Scope.CLUSTERS_WRITE)
@typed_errors
async def remove_addons(
    info: Info, cluster_id: strawberry.ID, addons: list[Addon]
) -> ClusterResult:
    principal = info.context.authenticated()
    cluster = await info.context.services.addons.remove(
        principal, ClusterId(parse_uuid(cluster_id, "cluster_id")), addons
    )
    return Cluster.from_domain(cluster)
