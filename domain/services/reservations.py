"""Capacity reservations: a tenant books N GPUs of a flavor on a cluster for [start, end).

A reservation is the caller's own (`jobs:write`), made through a ClusterQueue whose quota pays for
it, so that queue must hold GPU quota in the flavor, and the cluster must have that many GPUs of
it. Names are unique among a tenant's reservations on a cluster that have not ended. Cancelling
stamps `cancelled_at` (the record stays, for jobs that ran in it); a tenant sees and cancels only
its own reservations, an admin any. Reading them goes with the cluster's quotas
(`QuotaService.overview`).
"""

from __future__ import annotations

import uuid
from dataclasses import replace

from domain.errors import Conflict, NotFound, ValidationFailed
from domain.model.events import ClusterChanged, ClusterChangeKind
from domain.model.ids import ClusterId
from domain.model.principal import Principal, Scope
from domain.model.reservation import CapacityReservation, ReservationId
from domain.ports import Clock, TenantScope, UnitOfWork, UnitOfWorkFactory
from domain.services import quota_rules as rules
from domain.services.quota_rules import ReservationSpec, require, sees_all, taken


class ReservationService:
    def __init__(self, *, uow: UnitOfWorkFactory, clock: Clock) -> None:
        self._uow = uow
        self._clock = clock

    async def _commit(self, uow: UnitOfWork, cluster_id: ClusterId) -> None:
        """Commit, with the event that has the cluster's timeline recomputed."""
        uow.record(ClusterChanged(ClusterChangeKind.RESERVATIONS, cluster_id))
        await uow.commit()

    async def create_reservation(
        self, principal: Principal, spec: ReservationSpec
    ) -> CapacityReservation:
        require(principal, Scope.JOBS_WRITE)
        now = self._clock.now()
        async with self._uow(TenantScope.system()) as uow:
            cluster = await uow.clusters.get(spec.cluster_id)
            if cluster is None:
                raise NotFound("cluster", spec.cluster_id)
            queue = await uow.quotas.get_cluster_queue(
                cluster_id=spec.cluster_id, name=spec.cluster_queue
            )
            flavor = await uow.quotas.get_flavor(cluster_id=spec.cluster_id, name=spec.flavor)
            issues = rules.reservation_issues(
                spec, cluster=cluster, queue=queue, flavor=flavor, now=now
            )
            if issues:
                raise ValidationFailed(issues)
            live = await uow.quotas.reservations(spec.cluster_id, active_after=now)
            if any(r.tenant_id == principal.tenant_id and r.name == spec.name for r in live):
                raise taken(f"reservation {spec.name}")
            reservation = CapacityReservation(
                id=ReservationId(uuid.uuid4()),
                cluster_id=spec.cluster_id,
                tenant_id=principal.tenant_id,
                name=spec.name,
                cluster_queue=spec.cluster_queue,
                flavor=spec.flavor,
                gpu_count=spec.gpu_count,
                start=spec.start,
                end=spec.end,
                created_at=now,
            )
            await uow.quotas.add_reservation(reservation)
            await self._commit(uow, spec.cluster_id)
        return reservation

    async def cancel_reservation(
        self, principal: Principal, reservation_id: ReservationId
    ) -> CapacityReservation:
        require(principal, Scope.JOBS_WRITE)
        now = self._clock.now()
        async with self._uow(TenantScope.system()) as uow:
            found = await uow.quotas.get_reservation(reservation_id)
            if found is None or not (sees_all(principal) or found.tenant_id == principal.tenant_id):
                raise NotFound("capacity reservation", reservation_id)
            if found.cancelled_at is not None:
                raise Conflict(f"reservation {found.name} is already cancelled", "CANCELLED")
            if found.end <= now:
                raise Conflict(f"reservation {found.name} has already ended", "ENDED")
            await uow.quotas.cancel_reservation(reservation_id=reservation_id, at=now)
            await self._commit(uow, found.cluster_id)
        return replace(found, cancelled_at=now)
