"""The waiting demands (Kueue's queue manager): in lanes (`lanes`), with what changed since the
last cycle looked at them.

A lane is looked at again only when work was added to it or resources of its kind came free: its
GPU type's, or, for a lane refused for want of CPU or memory quota, any freed in its queue's
cohort. Each GPU type and each queue has an epoch, bumped when resources of it come back, under
which a lane's remembered refusals hold. Lanes of reservations and of StrictFIFO queues are
looked at every cycle.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator

from domain.model.quota import QueueingStrategy, QuotaSet
from domain.scheduling.demand import Demand, LaneKey
from domain.scheduling.lanes import Lane


class Waiting:
    def __init__(self, quotas: QuotaSet) -> None:
        self.lanes: dict[LaneKey, Lane] = defaultdict(Lane)
        self._by_key: dict[str, Demand] = {}
        self.never: dict[str, str] = {}
        """Waiting demands that can never be admitted as configured."""
        self.strict_queues = frozenset(
            q.name
            for q in quotas.cluster_queues
            if q.queueing_strategy is QueueingStrategy.STRICT_FIFO
        )
        self.cpu_bound: set[LaneKey] = set()
        """GPU lanes refused for want of CPU or memory quota: any release in the cohort may
        help them."""
        self.type_epoch: dict[str | None, int] = defaultdict(int)
        self._queue_epoch: dict[str, int] = defaultdict(int)
        self._active: set[LaneKey] = set()
        """Lanes to look at in the next cycle: where work was added or resources freed."""
        self._lanes_of_type: dict[str | None, set[LaneKey]] = defaultdict(set)
        self._lanes_of_queue: dict[str, set[LaneKey]] = defaultdict(set)

    def enqueue(self, demand: Demand, never: str | None) -> None:
        """`never`: why the demand can never be admitted, None if it may be."""
        if never is not None:
            self.never[demand.key] = never
        self._by_key[demand.key] = demand
        key = demand.lane
        self.lanes[key].add(demand)
        self._lanes_of_type[key[1]].add(key)
        self._lanes_of_queue[key[0]].add(key)
        self._active.add(key)

    def withdraw(self, key: str) -> None:
        self.never.pop(key, None)
        demand = self._by_key.pop(key, None)
        if demand is not None:
            self.lanes[demand.lane].remove(demand.key)
            self.lanes[demand.lane].tidy()

    def get(self, key: str) -> Demand | None:
        return self._by_key.get(key)

    def __contains__(self, key: str) -> bool:
        return key in self._by_key

    def __iter__(self) -> Iterator[Demand]:
        return iter(self._by_key.values())

    def freed(self, gpu_type: str | None, queues: Iterable[str]) -> None:
        """Resources of `gpu_type` came back in `queues` (a queue's cohort): refusals remembered
        for them may no longer hold."""
        self.type_epoch[gpu_type] += 1
        self.type_epoch[None] += 1
        self._active |= self._lanes_of_type[gpu_type] | self._lanes_of_type[None]
        for queue in queues:
            self._queue_epoch[queue] += 1
            self._active |= self.cpu_bound & self._lanes_of_queue[queue]

    def look_again(self, queues: Iterable[str]) -> None:
        """Refusals remembered for `queues` may no longer hold (what held their quota let go):
        their lanes are looked at in the next cycle."""
        for queue in queues:
            self._queue_epoch[queue] += 1
            self._active |= self._lanes_of_queue[queue]

    def epoch(self, lane_key: LaneKey) -> tuple[int, int]:
        """Under which a lane's remembered refusal holds: its GPU type's and its queue's."""
        return (self.type_epoch[lane_key[1]], self._queue_epoch[lane_key[0]])

    def to_look_at(self) -> set[LaneKey]:
        """The lanes a cycle looks at (and, from here on, no longer marked): where something
        changed since the last one, and every reservation's and StrictFIFO queue's."""
        active, self._active = self._active, set()
        strict = self.strict_queues
        active |= {k for k in self.lanes if k[2] is not None or k[0] in strict}
        return active

    def tidy(self) -> None:
        for lane in self.lanes.values():
            lane.tidy()
