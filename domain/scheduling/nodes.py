"""Node fit: what is free on each usable node, and which nodes a demand's pods would go to.

Each pod goes to the tightest node that has its GPUs (and cores and memory) free, by name among
equals; pods of one pod set may share a node that has room for both. Finding nodes takes nothing:
`take` does, once a flavor assignment is chosen. The most GPUs free on one node and in all, per
GPU type, are counted again only after a node of that type changed.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from domain.model.cluster import Node
from domain.model.job import Placement
from domain.model.quota import ResourceFlavor
from domain.scheduling.demand import Demand
from domain.scheduling.quota_ledger import EPSILON

FlavorKey = tuple[str | None, str]
"""(GPU type, flavor)"""


@dataclass
class NodeSlots:
    name: str
    gpu_type: str | None
    free: set[int]
    cpu: float
    memory: float
    flavors: frozenset[str]


class Nodes:
    """The usable nodes' free GPUs, cores and memory."""

    def __init__(self, nodes: Iterable[Node], flavors: Sequence[ResourceFlavor]) -> None:
        self.by_name: dict[str, NodeSlots] = {}
        for node in nodes:
            if node.usable:
                self.by_name[node.name] = NodeSlots(
                    node.name,
                    node.gpu_type if node.gpu_count else None,
                    set(range(node.gpu_count)),
                    node.cpu_cores,
                    node.memory_gb,
                    frozenset(f.name for f in flavors if f.matches(node)),
                )
        self.by_type_flavor: dict[FlavorKey, list[NodeSlots]] = defaultdict(list)
        for slots in self.by_name.values():
            for flavor in slots.flavors:
                self.by_type_flavor[(slots.gpu_type, flavor)].append(slots)
        self.sizes = {
            key: sorted((len(n.free) for n in members), reverse=True)
            for key, members in self.by_type_flavor.items()
        }
        """GPUs of each node, largest first, per (GPU type, flavor)."""
        self.largest = {key: sizes[0] for key, sizes in self.sizes.items()}
        self._of_type: dict[str | None, list[NodeSlots]] = defaultdict(list)
        for slots in self.by_name.values():
            self._of_type[slots.gpu_type].append(slots)
        self._free_count: dict[str | None, tuple[int, int]] = {}
        """(most free on one node, free in all) per GPU type, dropped when a node of the type
        changes: counted again on demand, over that type's nodes only."""

    def max_free(self, gpu_type: str | None) -> int:
        """The most GPUs of `gpu_type` free on one node."""
        return self._count_free(gpu_type)[0]

    def free_gpus(self, gpu_type: str | None) -> int:
        """All GPUs of `gpu_type` free now (the capacity forecast)."""
        return self._count_free(gpu_type)[1]

    def _count_free(self, gpu_type: str | None) -> tuple[int, int]:
        counted = self._free_count.get(gpu_type)
        if counted is None:
            sizes = [len(node.free) for node in self._of_type.get(gpu_type, ())]
            counted = self._free_count[gpu_type] = (max(sizes, default=0), sum(sizes))
        return counted

    def changed(self, gpu_type: str | None) -> None:
        """A node of `gpu_type` took or gave back GPUs."""
        self._free_count.pop(gpu_type, None)

    def _node_for(
        self,
        demand: Demand,
        gpu_flavor: str | None,
        cpu_flavor: str | None,
        allowed: dict[str, set[int]] | None = None,
    ) -> NodeSlots | None:
        if gpu_flavor is not None:
            candidates = self.by_type_flavor.get((demand.gpu_type, gpu_flavor), [])
        else:
            candidates = list(self.by_name.values())
        best: NodeSlots | None = None
        best_free = 1 << 30
        for node in candidates:
            free = node.free if allowed is None else allowed.get(node.name, set())
            count = len(free)
            if (
                count >= demand.gpu_count
                and (count < best_free or (count == best_free and best and node.name < best.name))
                and node.cpu + EPSILON >= demand.cpu
                and node.memory + EPSILON >= demand.memory
                and (cpu_flavor is None or cpu_flavor in node.flavors)
            ):
                best, best_free = node, count
        return best

    def nodes_for(
        self,
        demand: Demand,
        gpu_flavor: str | None,
        cpu_flavor: str | None,
        allowed: dict[str, set[int]] | None = None,
    ) -> list[NodeSlots] | None:
        """A node for each pod (tightest first; a node may take several), or None if the pods
        do not all fit now. Nothing is taken. `allowed`: only these GPUs of each node (a
        reservation's)."""
        if demand.pods == 1:
            node = self._node_for(demand, gpu_flavor, cpu_flavor, allowed)
            return None if node is None else [node]
        if gpu_flavor is not None:
            candidates = self.by_type_flavor.get((demand.gpu_type, gpu_flavor), [])
        else:
            candidates = list(self.by_name.values())
        room: list[tuple[int, str, float, float, NodeSlots]] = []
        for node in candidates:
            if cpu_flavor is not None and cpu_flavor not in node.flavors:
                continue
            free = len(node.free if allowed is None else allowed.get(node.name, ()))
            room.append((free, node.name, node.cpu, node.memory, node))
        chosen: list[NodeSlots] = []
        for _ in range(demand.pods):
            best: int | None = None
            for i, (free, name, cpu, memory, _node) in enumerate(room):
                if (
                    free >= demand.gpu_count
                    and cpu + EPSILON >= demand.cpu
                    and memory + EPSILON >= demand.memory
                    and (best is None or (free, name) < room[best][:2])
                ):
                    best = i
            if best is None:
                return None
            free, name, cpu, memory, node = room[best]
            room[best] = (
                free - demand.gpu_count,
                name,
                cpu - demand.cpu,
                memory - demand.memory,
                node,
            )
            chosen.append(node)
        return chosen

    def take(
        self, node: NodeSlots, demand: Demand, flavor: str | None, pick: set[int] | None = None
    ) -> Placement:
        """One pod of `demand` takes the lowest free GPUs of `node` (of `pick`, a reservation's
        GPUs on it, which are not in `free`), and its cores and memory."""
        self._free_count.pop(node.gpu_type, None)
        pool = node.free if pick is None else pick
        indices = tuple(sorted(pool)[: demand.gpu_count])
        node.free.difference_update(indices)
        if pick is not None:
            pick.difference_update(indices)
        node.cpu -= demand.cpu
        node.memory -= demand.memory
        return Placement(node.name, indices, flavor)
