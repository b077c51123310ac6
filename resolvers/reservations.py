"""Capacity reservations: book and cancel (jobs:write; a tenant books for itself). Reading them
goes through the Cluster type's `reservations` field."""

from __future__ import annotations

from typing import Annotated

import strawberry

from domain.model.principal import Scope
from domain.model.reservation import ReservationId
from domain.services.reservation_rules import ReservationSpec
from resolvers.common import parse_uuid
from resolvers.quotas import Errors, to_cluster_id
from schema.access import requires
from schema.context import Info
from schema.refusals import typed_errors
from schema.types.quota import CapacityReservation
from schema.types.quota_inputs import CapacityReservationInput

CapacityReservationResult = Annotated[
    CapacityReservation | Errors, strawberry.union("CapacityReservationResult")
]


@requires(Scope.JOBS_WRITE)
@typed_errors
async def create_capacity_reservation(
    info: Info, input: CapacityReservationInput
) -> CapacityReservationResult:
    made = await info.context.services.reservations.create_reservation(
        info.context.authenticated(),
        ReservationSpec(
            cluster_id=to_cluster_id(input.cluster_id),
            name=input.name,
            cluster_queue=input.cluster_queue,
            flavor=input.flavor,
            gpu_count=input.gpu_count,
            start=input.start,
            end=input.end,
        ),
    )
    return CapacityReservation.from_domain(made)


@requires(Scope.JOBS_WRITE)
@typed_errors
async def cancel_capacity_reservation(info: Info, id: strawberry.ID) -> CapacityReservationResult:
    cancelled = await info.context.services.reservations.cancel_reservation(
        info.context.authenticated(), ReservationId(parse_uuid(id, "id"))
    )
    return CapacityReservation.from_domain(cancelled)
