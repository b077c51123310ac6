"""Drains: `Query.drains`, and the operator's `drainNode`, `drainCluster` and `undrain`."""

from __future__ import annotations

from typing import Annotated

import strawberry

from domain.model.drain import DrainId
from domain.model.ids import ClusterId
from domain.model.principal import Scope
from resolvers.common import parse_uuid, query_uuid
from schema.access import requires
from schema.context import Info
from schema.refusals import typed_errors
from schema.types import errors
from schema.types.drain import Drain

DrainResult = Annotated[
    Drain
    | errors.ValidationError
    | errors.NotFoundError
    | errors.ConflictError
    | errors.ForbiddenError,
    strawberry.union("DrainResult"),
]


def _operator(info: Info) -> bool:
    principal = info.context.principal
    return principal is not None and principal.is_operator


@requires(Scope.CLUSTERS_READ)
async def drains(info: Info, cluster_id: strawberry.ID) -> list[Drain]:
    found = await info.context.services.drains.drains(
        [ClusterId(query_uuid(cluster_id, "clusterId"))]
    )
    return [Drain.from_domain(d, operator=_operator(info)) for d in found]


@requires(Scope.CLUSTERS_WRITE)
@typed_errors
async def drain_node(
    info: Info, cluster_id: strawberry.ID, node: str, reason: str | None = None
) -> DrainResult:
    principal = info.context.authenticated()
    done = await info.context.services.drains.drain(
        principal, ClusterId(parse_uuid(cluster_id, "cluster_id")), node, reason
    )
    return Drain.from_domain(done, operator=True)


@requires(Scope.CLUSTERS_WRITE)
@typed_errors
async def drain_cluster(
    info: Info, cluster_id: strawberry.ID, reason: str | None = None
) -> DrainResult:
    principal = info.context.authenticated()
    done = await info.context.services.drains.drain(
        principal, ClusterId(parse_uuid(cluster_id, "cluster_id")), None, reason
    )
    return Drain.from_domain(done, operator=True)


@requires(Scope.CLUSTERS_WRITE)
@typed_errors
async def undrain(info: Info, id: strawberry.ID) -> DrainResult:
    principal = info.context.authenticated()
    done = await info.context.services.drains.undrain(principal, DrainId(parse_uuid(id, "id")))
    return Drain.from_domain(done, operator=True)
