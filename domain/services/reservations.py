"""Capacity reservations: a tenant books N GPUs of a flavor on a cluster for [start, end).

A reservation is the caller's own (`jobs:write`), made through a ClusterQueue whose quota pays for
it, so that queue must hold GPU quota in the flavor, and the cluster must have that many GPUs of
it. Names are unique among a tenant's reservations on a cluster that have not ended. Cancelling
stamps `cancelled_at` (the record stays, for jobs that ran in it); a tenant sees and cancels only
its own reservations, an admin any. Reading them goes with the cluster's quotas
(`QuotaService.overview`).

A tenant's reservations are bounded by the operator's `ReservationLimits`: how long one may last,
how far ahead it may start, and what share of the queue's nominal GPU quota in its flavor the
tenant may hold reserved at any moment (its reservations that overlap the new one, at their
peak, plus the new one), so that no tenant books a shared queue away from the others. The
operator's own reservations are not bounded.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from domain.errors import Conflict, FieldIssue, NotFound, ValidationFailed
from domain.model.audit import concerning
from domain.model.events import ClusterChanged, ClusterChangeKind
from domain.model.ids import ClusterId
from domain.model.principal import Principal, Scope
from domain.model.reservation import CapacityReservation, ReservationId
from domain.ports.clock import Clock
from domain.ports.unit_of_work import TenantScope, UnitOfWork, UnitOfWorkFactory
from domain.services import reservation_rules as rules
from domain.services.quota_rules import require, sees_all, taken
from domain.services.reservation_rules import ReservationSpec


@dataclass(frozen=True)
class ReservationLimits:
    """What one tenant may reserve (BUDCLUSTER_RESERVATION_MAX_HOURS, _MAX_LEAD_DAYS,
    _MAX_SHARE). The defaults are the operator's to change: a week at most, starting within
    30 days, half of a queue's quota."""

    max_length: timedelta = timedelta(days=7)
    max_lead: timedelta = timedelta(days=30)
    max_share: float = 0.5

    def issues(
        self,
        spec: ReservationSpec,
        *,
        nominal: float,
        others: Iterable[CapacityReservation],
        now: datetime,
    ) -> list[FieldIssue]:
        issues: list[FieldIssue] = []
        if spec.end - spec.start > self.max_length:
            issues.append(
                FieldIssue(
                    "end",
                    f"a reservation may last at most {_span(self.max_length)}",
                    "RESERVATION_TOO_LONG",
                )
            )
        if spec.start - now > self.max_lead:
            issues.append(
                FieldIssue(
                    "start",
                    f"a reservation may start at most {_span(self.max_lead)} ahead",
                    "RESERVATION_TOO_FAR_AHEAD",
                )
            )
        allowed = int(nominal * self.max_share)
        held = peak(r for r in others if r.overlaps(spec.start, spec.end))
        if held + spec.gpu_count > allowed:
            issues.append(
                FieldIssue(
                    "gpu_count",
                    f"your tenant may hold at most {allowed} GPUs of this queue's {nominal:g} "
                    f"reserved at once ({self.max_share:.0%}), and holds {held} then",
                    "EXCEEDS_RESERVATION_SHARE",
                )
            )
        return issues


def peak(reservations: Iterable[CapacityReservation]) -> int:
    """The most GPUs the reservations hold at one moment."""
    changes = sorted(
        (moment, count)
        for r in reservations
        for moment, count in ((r.start, r.gpu_count), (r.end, -r.gpu_count))
    )
    held = most = 0
    for _, count in changes:  # an end sorts before a start at the same moment
        held += count
        most = max(most, held)
    return most


def _span(length: timedelta) -> str:
    hours = length.total_seconds() / 3600
    return f"{hours / 24:g} days" if hours >= 48 else f"{hours:g} hours"


class ReservationService:
    def __init__(
        self,
        *,
        uow: UnitOfWorkFactory,
        clock: Clock,
        limits: ReservationLimits | None = None,
    ) -> None:
        self._uow = uow
        self._clock = clock
        self._limits = limits or ReservationLimits()

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
            live = await uow.reservations.active(spec.cluster_id, active_after=now)
            if any(r.tenant_id == principal.tenant_id and r.name == spec.name for r in live):
                raise taken(f"reservation {spec.name}")
            quota = rules.gpu_quota(queue, spec.flavor) if queue is not None else None
            if quota is not None and not sees_all(principal):
                mine = [
                    r
                    for r in live
                    if r.tenant_id == principal.tenant_id
                    and r.cluster_queue == spec.cluster_queue
                    and r.flavor == spec.flavor
                ]
                issues = self._limits.issues(
                    spec, nominal=quota.nominal_quota, others=mine, now=now
                )
                if issues:
                    raise ValidationFailed(issues)
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
            await uow.reservations.add(reservation)
            await self._commit(uow, spec.cluster_id)
        return reservation

    async def cancel_reservation(
        self, principal: Principal, reservation_id: ReservationId
    ) -> CapacityReservation:
        require(principal, Scope.JOBS_WRITE)
        now = self._clock.now()
        async with self._uow(TenantScope.system()) as uow:
            found = await uow.reservations.get(reservation_id)
            if found is None or not (sees_all(principal) or found.tenant_id == principal.tenant_id):
                raise NotFound("capacity reservation", reservation_id)
            concerning(found.tenant_id)  # the operator's cancel is the tenant's event
            if found.cancelled_at is not None:
                raise Conflict(f"reservation {found.name} is already cancelled", "CANCELLED")
            if found.end <= now:
                raise Conflict(f"reservation {found.name} has already ended", "ENDED")
            await uow.reservations.cancel(reservation_id=reservation_id, at=now)
            await self._commit(uow, found.cluster_id)
        return replace(found, cancelled_at=now)
