"""Which queued workloads a cluster admits now, and onto which node and GPUs.

The rules: the queue is ordered by priority, then creation time (FIFO within a priority); each
request is placed on one node that has enough free GPUs of its type and enough CPU and memory,
choosing the tightest fit so large requests are not fragmented out; a request that does not fit
is passed over and later ones may still be admitted (Kueue's BestEffortFIFO). GPUs are numbered per
node, and a placement names the indices it takes, which become the rows of the schedule timeline.
This module is pure: the simulated cluster applies it step by step, the estimator replays it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from domain.model.cluster import Node
from domain.model.job import Placement


@dataclass(frozen=True)
class Request:
    key: str
    priority: int
    created_at: datetime
    gpu_type: str | None
    gpu_count: int
    cpu_cores: float
    memory_gb: float


@dataclass
class NodeState:
    name: str
    gpu_type: str | None
    free_gpus: set[int]
    free_cpu: float
    free_memory: float

    def fits(self, request: Request) -> bool:
        if request.gpu_count > 0 and (
            self.gpu_type != request.gpu_type or len(self.free_gpus) < request.gpu_count
        ):
            return False
        return self.free_cpu >= request.cpu_cores and self.free_memory >= request.memory_gb

    def take(self, request: Request) -> Placement:
        indices = tuple(sorted(self.free_gpus)[: request.gpu_count])
        self.free_gpus.difference_update(indices)
        self.free_cpu -= request.cpu_cores
        self.free_memory -= request.memory_gb
        return Placement(self.name, indices)


@dataclass
class ClusterState:
    nodes: dict[str, NodeState] = field(default_factory=dict)

    @classmethod
    def empty(cls, nodes: Iterable[Node]) -> ClusterState:
        return cls(
            {
                n.name: NodeState(
                    n.name, n.gpu_type, set(range(n.gpu_count)), n.cpu_cores, n.memory_gb
                )
                for n in nodes
                if n.usable
            }
        )

    def occupy(self, placement: Placement, cpu_cores: float, memory_gb: float) -> None:
        """Account for a workload already holding resources (admitted or running)."""
        node = self.nodes.get(placement.node)
        if node is None:
            return
        node.free_gpus.difference_update(placement.gpu_indices)
        node.free_cpu -= cpu_cores
        node.free_memory -= memory_gb

    def place(self, request: Request) -> Placement | None:
        candidates = [n for n in self.nodes.values() if n.fits(request)]
        if not candidates:
            return None
        best = min(candidates, key=lambda n: (len(n.free_gpus), n.free_cpu, n.name))
        return best.take(request)


def queue_order(requests: Iterable[Request]) -> list[Request]:
    return sorted(requests, key=lambda r: (-r.priority, r.created_at, r.key))


def admit(state: ClusterState, queued: Sequence[Request]) -> list[tuple[Request, Placement]]:
    """Admit what fits now, in queue order, best-effort; `state` is updated in place."""
    admitted: list[tuple[Request, Placement]] = []
    for request in queue_order(queued):
        placement = state.place(request)
        if placement is not None:
            admitted.append((request, placement))
    return admitted
