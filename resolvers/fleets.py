"""Fleets: `Query.fleets`, `Query.fleet`, and the operator's `createFleet`, `updateFleet`,
`deleteFleet`."""

from __future__ import annotations

from typing import Annotated

import strawberry

from domain.model.ids import ClusterId, FleetId
from domain.model.principal import Scope
from domain.services.fleets import FleetInput as DomainFleetInput
from resolvers.common import parse_uuid, query_uuid
from schema.access import requires
from schema.context import Info
from schema.refusals import typed_errors
from schema.types import errors
from schema.types.fleet import Fleet, FleetInput

FleetResult = Annotated[
    Fleet
    | errors.ValidationError
    | errors.NotFoundError
    | errors.ConflictError
    | errors.ForbiddenError,
    strawberry.union("FleetResult"),
]


def _input(given: FleetInput) -> DomainFleetInput:
    return DomainFleetInput(
        name=given.name,
        cluster_ids=tuple(
            ClusterId(parse_uuid(c, f"cluster_ids.{i}")) for i, c in enumerate(given.cluster_ids)
        ),
        cluster_queue=given.cluster_queue,
        local_queue=given.local_queue,
        move_threshold_seconds=given.move_threshold_seconds,
        max_moves=given.max_moves,
        manager_cluster_id=(
            ClusterId(parse_uuid(given.manager_cluster_id, "manager_cluster_id"))
            if given.manager_cluster_id
            else None
        ),
    )


@requires(Scope.CLUSTERS_READ)
async def fleets(info: Info) -> list[Fleet]:
    return [Fleet.from_domain(f) for f in await info.context.services.fleets.all()]


@requires(Scope.CLUSTERS_READ)
async def fleet(info: Info, id: strawberry.ID) -> Fleet | None:
    found = await info.context.services.fleets.get(FleetId(query_uuid(id, "id")))
    return Fleet.from_domain(found) if found else None


@requires(Scope.CLUSTERS_WRITE)
@typed_errors
async def create_fleet(info: Info, input: FleetInput) -> FleetResult:
    return Fleet.from_domain(await info.context.services.fleets.create(_input(input)))


@requires(Scope.CLUSTERS_WRITE)
@typed_errors
async def update_fleet(info: Info, id: strawberry.ID, input: FleetInput) -> FleetResult:
    fleet_id = FleetId(parse_uuid(id, "id"))
    return Fleet.from_domain(await info.context.services.fleets.update(fleet_id, _input(input)))


@requires(Scope.CLUSTERS_WRITE)
@typed_errors
async def delete_fleet(info: Info, id: strawberry.ID) -> FleetResult:
    fleet_id = FleetId(parse_uuid(id, "id"))
    return Fleet.from_domain(await info.context.services.fleets.delete(fleet_id))
