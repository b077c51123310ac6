"""What admission works on: a demand (one workload, or a capacity reservation) of a ClusterQueue,
the holding it becomes once admitted, and the refusal that says why it is not.

A demand is a Kueue pod set: `pods` pods of `gpu_count` GPUs, `cpu` cores and `memory` GB each,
admitted all or nothing. A workload of several pod sets is one demand for its first pod set that
asks GPUs, carrying the others (`Demand.more`, `gang_of`): admitted together or not at all, each
on a flavor of its own, and held as one (`Holding.parts`). Waiting demands are kept in lanes by
`Demand.lane` and served in `Demand.order`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

from domain.model.job import MAIN_POD_SET, Placement, PodSet
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
    more: tuple[Demand, ...] = ()
    """The workload's other pod sets (`gang_of`), admitted with this one or not at all."""
    pod_set: str = MAIN_POD_SET
    """The name of this pod set in its workload."""
    _resource: str | None = field(default=None, repr=False, compare=False)
    _order: AdmissionOrder | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def gpus(self) -> int:
        """GPUs of the whole pod set (what its quota is charged)."""
        return self.gpu_count * self.pods

    @property
    def gang(self) -> tuple[Demand, ...]:
        """Every pod set of the workload, this one first."""
        return (self, *self.more) if self.more else (self,)

    @property
    def all_gpus(self) -> int:
        """GPUs of all the workload's pod sets."""
        return self.gpus + sum(d.gpus for d in self.more) if self.more else self.gpus

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
    """What the demand asks, in words ("2 pods of 8 x nvidia-h100"; a workload of several pod
    sets: each, joined by " + ")."""
    if demand.more:
        return " + ".join(_ask_one(d) for d in demand.gang)
    return _ask_one(demand)


def _ask_one(demand: Demand) -> str:
    one = f"{demand.gpu_count} x {demand.gpu_type}" if demand.gpu_count else f"{demand.cpu:g} CPU"
    return one if demand.pods == 1 else f"{demand.pods} pods of {one}"


def gang_of(first: Demand, further: Sequence[PodSet]) -> Demand:
    """One demand for a workload of several pod sets: `first` is its own pod set (the job's
    `Resources`, as a demand) and `further` its other pod sets, in the workload's order, each a
    demand like `first` with its own shape (keyed "<key>/<pod set>"). The demand that carries
    the others (`Demand.more`) is the first pod set that asks GPUs, so that the workload waits,
    is found and is preempted for by its GPUs; the pod sets keep their order otherwise (Kueue
    assigns flavors pod set by pod set, in order: one without GPUs that comes before the first
    with them is assigned its CPU flavor after it here)."""
    if not further:
        return first
    sets = [first] + [
        replace(
            first,
            key=f"{first.key}/{p.name}",
            pod_set=p.name,
            gpu_count=p.gpu_count,
            cpu=p.cpu_cores,
            memory=p.memory_gb,
            pods=p.pod_count,
            more=(),
        )
        for p in further
    ]
    lead = next((i for i, d in enumerate(sets) if d.gpu_count), 0)
    head = sets.pop(lead)
    if lead:
        sets[0] = replace(sets[0], key=f"{first.key}/{first.pod_set}")
    return replace(head, key=first.key, more=tuple(sets))


@dataclass
class Holding:
    demand: Demand
    gpu_flavor: str | None
    cpu_flavor: str | None
    placements: list[Placement]
    """One placement per pod of a workload (of all its pod sets, in `Demand.gang` order); one
    per node a reservation holds GPUs on."""
    since: datetime
    parts: list[Holding] = field(default_factory=list)
    """A workload of several pod sets: the holding of each (`Demand.gang` order), each charged
    to its own flavors; empty for one pod set."""

    @property
    def pod_sets(self) -> list[Holding]:
        """The holding of each pod set (itself, for one)."""
        return self.parts or [self]

    @property
    def gpu_flavors(self) -> set[str]:
        """The GPU flavors its pod sets are charged to."""
        return {
            h.gpu_flavor for h in self.pod_sets if h.gpu_flavor is not None and h.demand.gpu_count
        }

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
