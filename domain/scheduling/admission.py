"""One set of admission rules: Kueue's quota model plus node fit, used by the simulated cluster
and replayed by the schedule estimator, so that what is predicted is what the simulator does.

A demand (one workload, or a capacity reservation) belongs to a ClusterQueue. It is admitted when
1. its queue has quota for it in a flavor of its GPU type, tried in the queue's flavor order:
   within its nominal quota, or beyond it by borrowing what its cohort has unused, within the
   borrowing and lending limits (`quota_ledger`); and
2. one node of that flavor has the GPUs (and CPU and memory) free: the tightest such node. A
   demand of several pods (a Kueue pod set: N pods of G GPUs, as a multi-node training job) is
   admitted all or nothing: quota for N x G, and a node for each pod, tightest first (pods may
   share a node that has room for both).
Queues are served in one order: priority, then age. A StrictFIFO queue admits only its head, so a
head that does not fit (even one that never can) blocks the queue; BestEffortFIFO lets later
workloads pass. The first waiting workload of a queue that does not fit in a cycle may preempt
(`preemption`). A reservation is admitted ahead of everything of its flavor from its start,
takes GPUs as they come free, and lends them only to its own workloads.

Waiting demands sit in lanes (`lanes`), merged through a heap in admission order; a lane stops
being scanned as soon as nothing left in it could fit, so a cycle costs what it admits.
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

from domain.model.cluster import Node
from domain.model.job import Placement
from domain.model.quota import (
    CPU,
    MEMORY,
    ClusterQueue,
    QueueingStrategy,
    QuotaSet,
    ReclaimWithinCohort,
    WithinClusterQueue,
    gpu_resource,
)
from domain.scheduling import preemption
from domain.scheduling.lanes import Lane, LaneKey
from domain.scheduling.quota_ledger import EPSILON, QuotaLedger

INFINITE_PRIORITY = 10**12
_EPOCH_START = datetime(1970, 1, 1, tzinfo=UTC)


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

    @property
    def gpus(self) -> int:
        """GPUs of the whole pod set (what its quota is charged)."""
        return self.gpu_count * self.pods

    @property
    def order(self) -> tuple[int, datetime, str]:
        return (-self.priority, self.created_at, self.key)

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


@dataclass
class NodeSlots:
    name: str
    gpu_type: str | None
    free: set[int]
    cpu: float
    memory: float
    flavors: frozenset[str]


class Refusal(Exception):
    """Why a demand cannot be admitted now; `never` if it cannot be admitted at all."""

    def __init__(self, reason: str, *, never: bool = False, cpu_bound: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.never = never
        self.cpu_bound = cpu_bound


@dataclass
class Decision:
    admitted: list[Holding] = field(default_factory=list)
    preempted: list[Holding] = field(default_factory=list)
    waiting: dict[str, str] = field(default_factory=dict)
    """Why each demand that was looked at still waits."""
    never: dict[str, str] = field(default_factory=dict)
    """Demands that can never be admitted as things are configured."""


Heap = list[tuple[tuple[int, datetime, str], LaneKey, int]]


class ClusterModel:
    """Capacity, quotas and what holds them; `cycle` admits what the rules allow now."""

    def __init__(self, nodes: Iterable[Node], quotas: QuotaSet) -> None:
        self.quotas = quotas
        self.queues = {q.name: q for q in quotas.cluster_queues}
        self.ledger = QuotaLedger(quotas)
        self.nodes: dict[str, NodeSlots] = {}
        for node in nodes:
            if node.usable:
                self.nodes[node.name] = NodeSlots(
                    node.name,
                    node.gpu_type if node.gpu_count else None,
                    set(range(node.gpu_count)),
                    node.cpu_cores,
                    node.memory_gb,
                    frozenset(f.name for f in quotas.flavors if f.matches(node)),
                )
        self.by_type_flavor: dict[tuple[str | None, str], list[NodeSlots]] = defaultdict(list)
        for slots in self.nodes.values():
            for flavor in slots.flavors:
                self.by_type_flavor[(slots.gpu_type, flavor)].append(slots)
        self._sizes = {
            key: sorted((len(n.free) for n in members), reverse=True)
            for key, members in self.by_type_flavor.items()
        }
        """GPUs of each node, largest first, per (GPU type, flavor)."""
        self._largest = {key: sizes[0] for key, sizes in self._sizes.items()}
        self._all_flavors = tuple(f.name for f in quotas.flavors)
        self._type_flavors: dict[tuple[str, str | None], tuple[str | None, ...]] = {}
        self._hosts: dict[tuple[str, str | None], dict[str, NodeSlots]] = {}
        self._cohort_members: dict[str, tuple[ClusterQueue, ...]] = {}
        self._cohort_names: dict[str, tuple[str, ...]] = {}
        self._cpu_flavor = {
            q.name: (self.ledger.flavors(q.name, CPU) or (None,))[0] for q in quotas.cluster_queues
        }
        self.holdings: dict[str, Holding] = {}
        self.reservation_of: dict[str, str] = {}
        self.never: dict[str, str] = {}
        """Waiting demands that can never be admitted as configured."""
        self._lanes: dict[LaneKey, Lane] = defaultdict(Lane)
        self._waiting: dict[str, Demand] = {}
        self._nodes_of_type: dict[str | None, list[NodeSlots]] = defaultdict(list)
        for slots in self.nodes.values():
            self._nodes_of_type[slots.gpu_type].append(slots)
        self._free_count: dict[str | None, tuple[int, int]] = {}
        """(most free on one node, free in all) per GPU type, dropped when a node of the type
        changes: counted again on demand, over that type's nodes only."""
        self._type_epoch: dict[str | None, int] = defaultdict(int)
        self._queue_epoch: dict[str, int] = defaultdict(int)
        self._by_type: dict[str | None, dict[str, Holding]] = defaultdict(dict)
        """Preemptible holdings by GPU type: where preemption looks for victims."""
        self._by_queue_type: dict[tuple[str, str | None], dict[str, Holding]] = defaultdict(dict)
        self._strict_queues = frozenset(
            q.name
            for q in quotas.cluster_queues
            if q.queueing_strategy is QueueingStrategy.STRICT_FIFO
        )
        self._group_of = {
            q.name: f"cohort {q.cohort}" if q.cohort else q.name for q in quotas.cluster_queues
        }
        self._holdings_version: dict[tuple[str, str | None], int] = defaultdict(int)
        """Per (cohort, or queue without one) and GPU type: bumped when a holding comes or goes."""
        self._headrooms: dict[tuple[str, str], tuple[int, float]] = {}
        self._weakest: dict[tuple[str, str | None], tuple[int, int | None]] = {}
        """Per (queue, GPU type): (holdings version, lowest priority of its preemptible
        holdings)."""
        self._preemption_failed: dict[str, tuple[int, int]] = {}
        """Demands whose preemption found no way in, at which holdings version of their type."""
        self._active: set[LaneKey] = set()
        """Lanes to look at in the next cycle: where work was added or resources freed."""
        self._lanes_of_type: dict[str | None, set[LaneKey]] = defaultdict(set)
        self._lanes_of_queue: dict[str, set[LaneKey]] = defaultdict(set)
        self._cpu_bound: set[LaneKey] = set()
        """GPU lanes refused for want of CPU or memory quota: any release in the cohort may
        help them."""

    # --- waiting demands --------------------------------------------------------------------

    def enqueue(self, demand: Demand) -> None:
        why = self.never_reason(demand)
        if why is not None:
            self.never[demand.key] = why
        self._waiting[demand.key] = demand
        key = demand.lane
        self._lanes[key].add(demand)
        self._lanes_of_type[key[1]].add(key)
        self._lanes_of_queue[key[0]].add(key)
        self._active.add(key)

    def withdraw(self, key: str) -> None:
        self.never.pop(key, None)
        demand = self._waiting.pop(key, None)
        if demand is not None:
            self._lanes[demand.lane].remove(demand.key)
            self._lanes[demand.lane].tidy()

    def is_waiting(self, key: str) -> bool:
        return key in self._waiting

    def waiting(self) -> Iterator[Demand]:
        return iter(self._waiting.values())

    def never_reason(self, demand: Demand) -> str | None:
        """Why `demand` can never be admitted as the cluster is configured, or None."""
        queue = demand.cluster_queue
        if queue not in self.queues:
            return f"cluster queue {queue} does not exist"
        if demand.is_reservation or demand.reservation is not None or not demand.gpu_count:
            return None
        for flavor in self.flavors_for(queue, demand):
            if flavor is not None and not self._never_in(demand, queue, flavor):
                return None
        return self._never_text(demand)

    def _never_in(self, demand: Demand, queue: str, flavor: str) -> bool:
        """Whether `demand` can never be admitted in `flavor`: its nodes, all empty, could not
        hold its pods, or the quota (with all the cohort can lend) is smaller."""
        key = (demand.gpu_type, flavor)
        if self._largest.get(key, 0) < demand.gpu_count:
            return True
        if demand.gpus > self.ledger.most_ever(queue, flavor, demand.gpu_resource):
            return True
        if demand.pods == 1:
            return False
        return sum(size // demand.gpu_count for size in self._sizes[key]) < demand.pods

    def _never_text(self, demand: Demand) -> str:
        large = "enough nodes that large" if demand.pods > 1 else "a node that large"
        return (
            f"{demand.cluster_queue} can never give {self.ask(demand)}: no flavor has {large}, "
            "or the quota (with what the cohort can lend) is smaller"
        )

    # --- capacity ---------------------------------------------------------------------------

    def _freed(self, gpu_type: str | None, queue: str | None) -> None:
        """Resources came back: refusals remembered for this type and queue may no longer hold."""
        self._free_count.pop(gpu_type, None)
        self._type_epoch[gpu_type] += 1
        self._type_epoch[None] += 1
        self._active |= self._lanes_of_type[gpu_type] | self._lanes_of_type[None]
        if queue is not None:
            cohort = self.ledger.cohort(queue)
            members = self._member_names(cohort) if cohort else (queue,)
            for member in members:
                self._queue_epoch[member] += 1
                self._active |= self._cpu_bound & self._lanes_of_queue[member]

    def could_preempt(self, demand: Demand) -> bool:
        """A cheap test: could any preemption policy of the demand's queue find a victim?"""
        queue = self.queues.get(demand.cluster_queue)
        if queue is None or demand.is_reservation or demand.reservation is not None:
            return False
        kind = demand.gpu_type if demand.gpu_count else None
        within = queue.preemption.within_cluster_queue
        if within is not WithinClusterQueue.NEVER:
            weakest = self._weakest_holding(queue.name, kind)
            if weakest is not None and (
                weakest < demand.priority
                or (
                    weakest == demand.priority
                    and within is WithinClusterQueue.LOWER_OR_NEWER_EQUAL_PRIORITY
                )
            ):
                return True
        if queue.cohort is None or queue.preemption.reclaim_within_cohort is (
            ReclaimWithinCohort.NEVER
        ):
            return False
        if demand.gpu_count and not self.ledger.within_nominal(
            queue, demand.gpu_resource, demand.gpus
        ):
            return False
        resource = demand.gpu_resource
        for member in self._members(queue.cohort):
            if member.name == queue.name or not self._by_queue_type.get((member.name, kind)):
                continue
            if any(
                flavor and self.ledger.borrowing(member.name, flavor, resource) > 0
                for flavor in self.flavors_for(member.name, demand)
            ):
                return True
        return False

    def _weakest_holding(self, queue: str, kind: str | None) -> int | None:
        """The lowest priority among the queue's preemptible holdings of `kind` (None: none)."""
        version = self._holdings_version[(self._group(queue), kind)]
        cached = self._weakest.get((queue, kind))
        if cached is not None and cached[0] == version:
            return cached[1]
        mine = self._by_queue_type.get((queue, kind))
        weakest = min((h.demand.priority for h in mine.values()), default=None) if mine else None
        self._weakest[(queue, kind)] = (version, weakest)
        return weakest

    def max_free(self, gpu_type: str | None) -> int:
        """The most GPUs of `gpu_type` free on one node."""
        return self._count_free(gpu_type)[0]

    def free_gpus(self, gpu_type: str | None) -> int:
        """All GPUs of `gpu_type` free now (the capacity forecast)."""
        return self._count_free(gpu_type)[1]

    def _count_free(self, gpu_type: str | None) -> tuple[int, int]:
        counted = self._free_count.get(gpu_type)
        if counted is None:
            sizes = [len(node.free) for node in self._nodes_of_type.get(gpu_type, ())]
            counted = self._free_count[gpu_type] = (max(sizes, default=0), sum(sizes))
        return counted

    def _changed(self, node: NodeSlots) -> None:
        self._free_count.pop(node.gpu_type, None)

    def _members(self, cohort: str) -> tuple[ClusterQueue, ...]:
        found = self._cohort_members.get(cohort)
        if found is None:
            found = self._cohort_members[cohort] = self.quotas.members(cohort)
        return found

    def _member_names(self, cohort: str) -> tuple[str, ...]:
        found = self._cohort_names.get(cohort)
        if found is None:
            found = self._cohort_names[cohort] = tuple(q.name for q in self._members(cohort))
        return found

    def hosts_for(self, queue: str, demand: Demand) -> dict[str, NodeSlots]:
        """The nodes, by name, of the flavors `flavors_for` gives (they never change)."""
        key = (queue, demand.gpu_type)
        found = self._hosts.get(key)
        if found is None:
            found = self._hosts[key] = {
                n.name: n
                for flavor in self.flavors_for(queue, demand)
                if flavor is not None
                for n in self.by_type_flavor.get((demand.gpu_type, flavor), [])
            }
        return found

    def flavors_for(self, queue: str, demand: Demand) -> tuple[str | None, ...]:
        """The flavors, in the queue's order, whose nodes have the demand's GPU type."""
        if demand.gpu_count == 0:
            return (None,)
        key = (queue, demand.gpu_type)
        found = self._type_flavors.get(key)
        if found is None:
            resource = demand.gpu_resource
            listed = (
                self.ledger.flavors(queue, resource)
                if self.ledger.covers(queue, resource)
                else self._all_flavors
            )
            found = tuple(f for f in listed if (demand.gpu_type, f) in self.by_type_flavor)
            self._type_flavors[key] = found
        return found

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
            candidates = list(self.nodes.values())
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

    def _nodes_for(
        self,
        demand: Demand,
        gpu_flavor: str | None,
        cpu_flavor: str | None,
        allowed: dict[str, set[int]] | None = None,
    ) -> list[NodeSlots] | None:
        """A node for each pod (tightest first; a node may take several), or None if the pods
        do not all fit now. Nothing is taken."""
        if demand.pods == 1:
            node = self._node_for(demand, gpu_flavor, cpu_flavor, allowed)
            return None if node is None else [node]
        if gpu_flavor is not None:
            candidates = self.by_type_flavor.get((demand.gpu_type, gpu_flavor), [])
        else:
            candidates = list(self.nodes.values())
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

    def _take(self, node: NodeSlots, demand: Demand, pick: set[int] | None = None) -> Placement:
        self._changed(node)
        pool = node.free if pick is None else pick  # a reservation's GPUs are not in `free`
        indices = tuple(sorted(pool)[: demand.gpu_count])
        node.free.difference_update(indices)
        if pick is not None:
            pick.difference_update(indices)
        node.cpu -= demand.cpu
        node.memory -= demand.memory
        return Placement(node.name, indices)

    def _charge_demand(self, holding: Holding, sign: int) -> None:
        demand = holding.demand
        queue = demand.cluster_queue
        if demand.is_reservation:
            if holding.gpu_flavor:
                self.ledger.charge(
                    queue, holding.gpu_flavor, demand.gpu_resource, sign * holding.gpus
                )
            return
        if holding.gpu_flavor is not None and demand.gpu_count:
            self.ledger.charge(queue, holding.gpu_flavor, demand.gpu_resource, sign * demand.gpus)
        if holding.cpu_flavor is not None:
            self.ledger.charge(queue, holding.cpu_flavor, CPU, sign * demand.cpu * demand.pods)
            self.ledger.charge(
                queue, holding.cpu_flavor, MEMORY, sign * demand.memory * demand.pods
            )

    def cpu_flavor(self, queue: str) -> str | None:
        return self._cpu_flavor.get(queue)

    # --- holding and releasing --------------------------------------------------------------

    def _keep(self, holding: Holding) -> None:
        demand = holding.demand
        self.holdings[demand.key] = holding
        kind = demand.gpu_type if demand.gpu_count else None
        if (
            demand.preemptible
            and not demand.critical
            and not demand.is_reservation
            and demand.reservation is None
        ):
            self._by_type[kind][demand.key] = holding
            self._by_queue_type[(demand.cluster_queue, kind)][demand.key] = holding
        self._holdings_version[(self._group(demand.cluster_queue), kind)] += 1

    def _group(self, queue: str) -> str:
        return self._group_of.get(queue, queue)

    def _drop(self, key: str) -> Holding | None:
        holding = self.holdings.pop(key, None)
        if holding is not None:
            demand = holding.demand
            kind = demand.gpu_type if demand.gpu_count else None
            self._by_type[kind].pop(key, None)
            self._by_queue_type[(demand.cluster_queue, kind)].pop(key, None)
            self._holdings_version[(self._group(demand.cluster_queue), kind)] += 1
        return holding

    def holdings_of(self, queue: str, gpu_type: str | None) -> Iterable[Holding]:
        """The queue's workloads that may be preempted holding GPUs of `gpu_type`."""
        held = self._by_queue_type.get((queue, gpu_type))
        return held.values() if held else ()

    def cohort_members(self, cohort: str) -> tuple[ClusterQueue, ...]:
        return self._members(cohort)

    def holders(self, gpu_type: str | None) -> Iterable[Holding]:
        """Workloads that may be preempted holding GPUs of `gpu_type` (any, for CPU work)."""
        if gpu_type is None:
            return [h for by_type in self._by_type.values() for h in by_type.values()]
        return self._by_type[gpu_type].values()

    def _preemption_state(self, demand: Demand) -> tuple[int, int]:
        """Versions of what a preemption attempt for `demand` depends on: the victims it could
        pick (its queue's and its cohort's holdings of its GPU type) and freed capacity."""
        kind = demand.gpu_type if demand.gpu_count else None
        return (
            self._type_epoch[kind],
            self._holdings_version[(self._group(demand.cluster_queue), kind)],
        )

    def _locate(self, demand: Demand, holding: Holding) -> None:
        if demand.is_reservation or not demand.gpu_count:
            return
        taken: dict[str, set[int]] = defaultdict(set)
        for i, placement in enumerate(holding.placements):
            node = self.nodes.get(placement.node)
            if node is None or placement.gpu_indices:
                continue
            pool = sorted(node.free - taken[node.name])
            chosen = tuple(pool[: demand.gpu_count])
            taken[node.name].update(chosen)
            if holding.gpu_flavor is None:
                queue = self.queues.get(demand.cluster_queue)
                offered = queue.flavors_for(demand.gpu_resource) if queue else ()
                holding.gpu_flavor = next(
                    (f.flavor for f in offered if f.flavor in node.flavors), None
                )
            holding.placements[i] = replace(
                placement, gpu_indices=chosen, flavor=placement.flavor or holding.gpu_flavor
            )

    def preemption_hopeless(self, demand: Demand) -> bool:
        return self._preemption_failed.get(demand.key) == self._preemption_state(demand)

    def preemption_failed(self, demand: Demand) -> None:
        self._preemption_failed[demand.key] = self._preemption_state(demand)

    def hold(self, demand: Demand, holding: Holding) -> None:
        """Record what already holds resources (from the cluster's current state). A real
        cluster tells the node a workload runs on, not its devices: a placement with a node and
        no GPU indices takes that many free GPUs of the node (the lowest), and the first of its
        queue's flavors the node belongs to when it names none, so the GPUs count as busy."""
        self._locate(demand, holding)
        for placement in holding.placements:
            node = self.nodes.get(placement.node)
            if node is not None:
                node.free.difference_update(placement.gpu_indices)
                self._changed(node)
                node.cpu -= demand.cpu  # per pod (a reservation asks none)
                node.memory -= demand.memory
        if demand.reservation is None:
            self._charge_demand(holding, +1)
        else:
            self.reservation_of[demand.key] = demand.reservation
        self._keep(holding)

    def release(self, key: str) -> Holding | None:
        holding = self._drop(key)
        if holding is None:
            return None
        demand = holding.demand
        self._freed(demand.gpu_type if demand.gpu_count else None, demand.cluster_queue)
        if demand.is_reservation:
            self._release_reservation(key, holding)
            return holding
        owner = self.reservation_of.pop(key, None)
        for placement in holding.placements:
            node = self.nodes.get(placement.node)
            if node is None:
                continue
            if owner is None or owner not in self.holdings:
                node.free.update(placement.gpu_indices)
                self._changed(node)
            node.cpu += demand.cpu
            node.memory += demand.memory
        if owner is None:
            self._charge_demand(holding, -1)
        return holding

    def _release_reservation(self, key: str, holding: Holding) -> None:
        """The reservation's workloads run on as their queue's own; its idle GPUs go back."""
        self._charge_demand(holding, -1)
        busy: dict[str, set[int]] = defaultdict(set)
        for inner, owner in list(self.reservation_of.items()):
            if owner != key:
                continue
            del self.reservation_of[inner]
            inner_holding = self.holdings[inner]
            for p in inner_holding.placements:
                busy[p.node].update(p.gpu_indices)
            self._charge_demand(inner_holding, +1)
        for placement in holding.placements:
            node = self.nodes.get(placement.node)
            if node is not None:
                node.free.update(set(placement.gpu_indices) - busy[placement.node])
                self._changed(node)

    def reservation_slots(self, key: str) -> dict[str, set[int]]:
        """GPUs a reservation holds that none of its workloads uses."""
        holding = self.holdings.get(key)
        if holding is None:
            return {}
        busy: dict[str, set[int]] = defaultdict(set)
        for inner, owner in self.reservation_of.items():
            if owner == key:
                for p in self.holdings[inner].placements:
                    busy[p.node].update(p.gpu_indices)
        return {p.node: set(p.gpu_indices) - busy[p.node] for p in holding.placements}

    # --- one admission attempt --------------------------------------------------------------

    def try_admit(self, demand: Demand, now: datetime) -> Holding:
        """Admit `demand` now or raise Refusal saying why not."""
        queue = demand.cluster_queue
        if queue not in self.queues:
            raise Refusal(f"cluster queue {queue} does not exist", never=True)
        if demand.is_reservation:
            return self._grow_reservation(demand, now)
        if demand.reservation is not None:
            return self._admit_into_reservation(demand, now)
        ledger = self.ledger
        cpu_flavor = self._cpu_flavor.get(queue)
        resource = demand.gpu_resource
        refusal = ""
        never = True
        cpu_bound = False
        for gpu_flavor in self.flavors_for(queue, demand):
            if gpu_flavor is not None and self._never_in(demand, queue, gpu_flavor):
                continue
            never = False
            if gpu_flavor is not None and not ledger.fits(queue, gpu_flavor, resource, demand.gpus):
                refusal = refusal or f"no quota left in {queue} for {self.ask(demand)}"
                continue
            if cpu_flavor is not None and not (
                ledger.fits(queue, cpu_flavor, CPU, demand.cpu * demand.pods)
                and ledger.fits(queue, cpu_flavor, MEMORY, demand.memory * demand.pods)
            ):
                refusal = refusal or f"no CPU or memory quota left in {queue}"
                cpu_bound = True
                continue
            nodes = self._nodes_for(demand, gpu_flavor, cpu_flavor)
            if nodes is None:
                where = "no node has" if demand.pods == 1 else "the nodes do not have"
                refusal = refusal or f"{where} {self.ask(demand)} free"
                continue
            placements = []
            for node in nodes:
                taken = self._take(node, demand)
                placements.append(Placement(taken.node, taken.gpu_indices, gpu_flavor))
            holding = Holding(demand, gpu_flavor, cpu_flavor, placements, now)
            self._charge_demand(holding, +1)
            self._keep(holding)
            return holding
        if never:
            raise Refusal(self._never_text(demand), never=True)
        raise Refusal(refusal, cpu_bound=cpu_bound)

    @staticmethod
    def ask(demand: Demand) -> str:
        if demand.gpu_count:
            one = f"{demand.gpu_count} x {demand.gpu_type}"
        else:
            one = f"{demand.cpu:g} CPU"
        return one if demand.pods == 1 else f"{demand.pods} pods of {one}"

    def _grow_reservation(self, demand: Demand, now: datetime) -> Holding:
        flavor = demand.flavor or ""
        holding = self.holdings.get(demand.key)
        if holding is None:
            holding = Holding(demand, flavor, None, [], now)
            self._keep(holding)
        missing = demand.gpu_count - holding.gpus
        resource = demand.gpu_resource
        for node in sorted(self.nodes.values(), key=lambda n: (-len(n.free), n.name)):
            if missing <= 0:
                break
            if flavor not in node.flavors or not node.free:
                continue
            take = min(missing, len(node.free))
            if not self.ledger.fits(demand.cluster_queue, flavor, resource, take):
                break
            indices = tuple(sorted(node.free)[:take])
            node.free.difference_update(indices)
            self._changed(node)
            self.ledger.charge(demand.cluster_queue, flavor, resource, take)
            merged = next((p for p in holding.placements if p.node == node.name), None)
            if merged is not None:
                holding.placements.remove(merged)
                indices = tuple(sorted((*merged.gpu_indices, *indices)))
            holding.placements.append(Placement(node.name, indices, flavor))
            missing -= take
        if missing > 0:
            raise Refusal(f"reservation holds {holding.gpus} of {demand.gpu_count} GPUs")
        return holding

    def _admit_into_reservation(self, demand: Demand, now: datetime) -> Holding:
        assert demand.reservation is not None
        slots = self.reservation_slots(demand.reservation)
        if not slots:
            raise Refusal(f"reservation {demand.reservation} is not active")
        owner = self.holdings[demand.reservation]
        nodes = self._nodes_for(demand, owner.gpu_flavor, None, allowed=slots)
        if nodes is None:
            raise Refusal(f"the reservation has no room for {self.ask(demand)}")
        placements = []
        for node in nodes:
            taken = self._take(node, demand, slots[node.name])
            placements.append(Placement(taken.node, taken.gpu_indices, owner.gpu_flavor))
        holding = Holding(demand, owner.gpu_flavor, None, placements, now)
        self._keep(holding)
        self.reservation_of[demand.key] = demand.reservation
        return holding

    # --- the cycle --------------------------------------------------------------------------

    def _epoch(self, lane_key: LaneKey) -> tuple[int, int]:
        return (self._type_epoch[lane_key[1]], self._queue_epoch[lane_key[0]])

    def _strict(self, queue_name: str) -> bool:
        return queue_name in self._strict_queues

    def cycle(self, now: datetime, *, explain: bool = True) -> Decision:
        """Admit, in queue order, what the rules allow now. Only lanes where something changed
        since they were last looked at (work added, resources of their kind freed) are looked
        at: the others would give the same answer as last time.

        A lane's next demand is chosen when the lane is queued, by the GPUs free then; once an
        earlier admission of the cycle took them, it no longer fits. With `explain` it is tried
        anyway, for the reason it waits (`Decision.waiting`); without, it is passed over at once
        unless it may preempt: the same admissions, without the reasons."""
        decision = Decision()
        blocked: set[str] = set()
        tried_preemption: set[str] = set()
        heap: Heap = []
        active, self._active = self._active, set()
        active |= {k for k in self._lanes if k[2] is not None or self._strict(k[0])}
        for lane_key in active:
            lane = self._lanes.get(lane_key)
            if lane is not None and len(lane):
                self._push_next(heap, lane_key, lane, 0, tried_preemption)
        done: list[str] = []
        while heap:
            _, lane_key, index = heapq.heappop(heap)
            lane = self._lanes[lane_key]
            demand = lane.items[index]
            strict = self._strict(demand.cluster_queue)
            if demand.cluster_queue in blocked:
                decision.waiting[demand.key] = (
                    f"behind the head of StrictFIFO queue {demand.cluster_queue}"
                )
                self._push_next(heap, lane_key, lane, index + 1, tried_preemption)
                continue
            if demand.key in self.never:
                decision.never[demand.key] = self.never[demand.key]
                if strict:
                    blocked.add(demand.cluster_queue)
                self._push_next(heap, lane_key, lane, index + 1, tried_preemption)
                continue
            limit = lane.known_limit(self._epoch(lane_key)) if lane_key[2] is None else None
            if (
                limit is not None
                and demand.gpu_count >= limit
                and (
                    strict
                    or demand.cluster_queue in tried_preemption
                    or self.preemption_hopeless(demand)
                )
            ):
                decision.waiting[demand.key] = lane.limit_reason
                if strict:
                    blocked.add(demand.cluster_queue)
                self._push_next(heap, lane_key, lane, index + 1, tried_preemption)
                continue
            if (
                not explain
                and not strict
                and lane_key[2] is None
                and demand.gpu_count > self.max_free(lane_key[1])
                and (
                    demand.cluster_queue in tried_preemption
                    or demand.is_reservation
                    or self.preemption_hopeless(demand)
                    or not self.could_preempt(demand)
                )
            ):
                self._push_next(heap, lane_key, lane, index + 1, tried_preemption)
                continue
            try:
                if (
                    not explain
                    and lane_key[2] is None
                    and demand.gpu_count > self.max_free(lane_key[1])
                ):  # no node has room: it is here to preempt; the attempt would only refuse
                    raise Refusal(f"no node has {self.ask(demand)} free")
                holding = self.try_admit(demand, now)
            except Refusal as refusal:
                outcome = None
                if refusal.never:
                    decision.never[demand.key] = self.never[demand.key] = refusal.reason
                elif (
                    demand.cluster_queue not in tried_preemption
                    and not demand.is_reservation
                    and not self.preemption_hopeless(demand)
                    and self.could_preempt(demand)
                ):
                    tried_preemption.add(demand.cluster_queue)
                    outcome = preemption.try_preempt(self, demand, now)
                    if outcome is None:
                        self.preemption_failed(demand)
                if outcome is None:
                    if not refusal.never:
                        decision.waiting[demand.key] = refusal.reason
                        if lane_key[2] is None and demand.gpu_count and demand.pods == 1:
                            # what one pod of this size cannot get, a larger one cannot either;
                            # a pod set refused for want of nodes says nothing of one pod
                            lane.refused(demand.gpu_count, refusal.reason, self._epoch(lane_key))
                            if refusal.cpu_bound:
                                self._cpu_bound.add(lane_key)
                    if strict:
                        blocked.add(demand.cluster_queue)
                    self._push_next(heap, lane_key, lane, index + 1, tried_preemption)
                    continue
                holding, victims = outcome
                decision.preempted.extend(victims)
                decision.admitted = [h for h in decision.admitted if h not in victims]
            if not demand.is_reservation:
                decision.admitted.append(holding)
            done.append(demand.key)
            lane.remove(demand.key)
            self._push_next(heap, lane_key, lane, index + 1, tried_preemption)
        for key in done:
            self.withdraw(key)
        for lane in self._lanes.values():
            lane.tidy()
        decision.never = dict(self.never)
        return decision

    def _push_next(
        self, heap: Heap, lane_key: LaneKey, lane: Lane, start: int, tried: set[str]
    ) -> None:
        """Queue the lane's next demand that could be admitted (or could preempt), if any."""
        queue_name, gpu_type, reservation = lane_key
        if gpu_type is None or reservation is not None or self._strict(queue_name):
            index = lane.next_live(start)
        else:
            below = min(self.max_free(gpu_type), self._headroom(queue_name, gpu_type)) + 1
            limit = lane.known_limit(self._epoch(lane_key))
            if limit is not None:
                below = min(below, limit)
            index = lane.next_live(start, int(min(below, 1 << 30)))
            if queue_name not in tried:  # the first refused of a queue may preempt
                head = lane.next_live(start)
                if (
                    head is not None
                    and (index is None or head < index)
                    and not self.preemption_hopeless(lane.items[head])
                    and self.could_preempt(lane.items[head])
                ):
                    index = head
        if index is not None:
            heapq.heappush(heap, (lane.items[index].order, lane_key, index))

    def _headroom(self, queue: str, gpu_type: str) -> float:
        """The most GPUs of `gpu_type` the queue's quota could give now (kept until its cohort's
        usage changes)."""
        version = self.ledger.version(queue)
        cached = self._headrooms.get((queue, gpu_type))
        if cached is not None and cached[0] == version:
            return cached[1]
        resource = gpu_resource(gpu_type)
        if not self.ledger.covers(queue, resource):
            self._headrooms[(queue, gpu_type)] = (version, float("inf"))
            return float("inf")
        best = 0.0
        for flavor in self._type_flavors.get((queue, gpu_type)) or self.flavors_for(
            queue, Demand("", queue, 0, _EPOCH_START, gpu_type, 1, 0.0, 0.0)
        ):
            if flavor is not None:
                best = max(best, self.ledger.headroom(queue, flavor, resource))
        self._headrooms[(queue, gpu_type)] = (version, best)
        return best
