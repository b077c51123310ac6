"""What admission works on: a demand (one workload, or a capacity reservation) of a ClusterQueue,
the holding it becomes once admitted, and the refusal that says why it is not.

A demand is a Kueue pod set: `pods` pods of `gpu_count` GPUs, `cpu` cores and `memory` GB each,
admitted all or nothing. Waiting demands are kept in lanes by `Demand.lane` and served in
`Demand.order`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from domain.model.job import Placement
from domain.model.quota import gpu_resource
from domain.scheduling.ordering import AdmissionOrder

INFINITE_PRIORITY = 10**12

LaneKey = tuple[str, str | None, str | None]
"""(cluster queue, GPU type or None for CPU-only work, reservation or None)"""


@dataclass
class Demand:
    key: str
    cluster_queue: str
    priority: int
    created_at: datetime
    gpu_type: str | None
    gpu_count: int
    """GPUs per pod."""
    cpu: float
    """Cores per pod."""
    memory: float
    """GB per pod."""
    preemptible: bool = False
    critical: bool = False
    reservation: str | None = None
    """The reservation whose GPUs this workload runs on."""
    is_reservation: bool = False
    flavor: str | None = None
    """A reservation's flavor (workloads get theirs from their queue's flavor order)."""
    pods: int = 1
    """Pods in the pod set, each asking `gpu_count` GPUs, `cpu` cores and `memory` GB."""
    _resource: str | None = field(default=None, repr=False, compare=False)
    _order: AdmissionOrder | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def gpus(self) -> int:
        """GPUs of the whole pod set (what its quota is charged)."""
        return self.gpu_count * self.pods

    @property
    def order(self) -> AdmissionOrder:
        """Worked out once: a demand's priority, creation and key never change (a requeued one
        is a new demand, `dataclasses.replace`)."""
        order = self._order
        if order is None:
            order = self._order = AdmissionOrder(-self.priority, self.created_at, self.key)
        return order

    @property
    def lane(self) -> LaneKey:
        """A queue's GPU type, a reservation, or a reservation's own workloads."""
        own = self.key if self.is_reservation else self.reservation
        return (self.cluster_queue, self.gpu_type if self.gpu_count else None, own)

    @property
    def gpu_resource(self) -> str:
        resource = self._resource
        if resource is None:
            resource = self._resource = gpu_resource(self.gpu_type)
        return resource


def ask(demand: Demand) -> str:
    """What the demand asks, in words ("2 pods of 8 x nvidia-h100")."""
    one = f"{demand.gpu_count} x {demand.gpu_type}" if demand.gpu_count else f"{demand.cpu:g} CPU"
    return one if demand.pods == 1 else f"{demand.pods} pods of {one}"


@dataclass
class Holding:
    demand: Demand
    gpu_flavor: str | None
    cpu_flavor: str | None
    placements: list[Placement]
    """One placement per pod of a workload; one per node a reservation holds GPUs on."""
    since: datetime

    @property
    def placement(self) -> Placement:
        return self.placements[0]

    @property
    def gpus(self) -> int:
        return sum(len(p.gpu_indices) for p in self.placements)


class Refusal(Exception):
    """Why a demand cannot be admitted now; `never` if it cannot be admitted at all."""

    def __init__(self, reason: str, *, never: bool = False, cpu_bound: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.never = never
        self.cpu_bound = cpu_bound
