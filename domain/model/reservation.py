"""Capacity reservations: N GPUs of a flavor on a cluster, booked for [start, end).

Kueue has no advance reservation, so budcluster provides it. A reservation is made through a
ClusterQueue (its quota pays for it). From its start it is admitted ahead of every waiting
workload of its flavor, taking GPUs as they come free (it preempts nothing), and holds them until
its end; only jobs submitted into it (same tenant, `reservation_id`) run on those GPUs. Admission
and the timeline both see the held GPUs as booked.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import NewType

from domain.model.ids import ClusterId, TenantId

ReservationId = NewType("ReservationId", uuid.UUID)


@dataclass
class CapacityReservation:
    id: ReservationId
    cluster_id: ClusterId
    tenant_id: TenantId
    name: str
    cluster_queue: str
    flavor: str
    gpu_count: int
    start: datetime
    end: datetime
    created_at: datetime
    cancelled_at: datetime | None = None

    def active_at(self, moment: datetime) -> bool:
        return self.cancelled_at is None and self.start <= moment < self.end

    def overlaps(self, start: datetime, end: datetime) -> bool:
        return self.cancelled_at is None and self.start < end and start < self.end
