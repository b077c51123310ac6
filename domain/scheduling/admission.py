"""One set of admission rules: Kueue's quota model plus node fit, used by the simulated cluster
and replayed by the schedule estimator, so that what is predicted is what the simulator does.

A demand (one workload, or a capacity reservation) belongs to a ClusterQueue. It is admitted when
1. its queue has quota for it in a flavor of its GPU type, tried in the queue's flavor order: usage
   within the nominal quota, or beyond it by borrowing unused quota of the cohort, within the
   queue's borrowing limit and the other members' lending limits; and
2. one node of that flavor has the GPUs (and CPU and memory) free: the tightest such node.
Queues are served in one order: priority, then age. A StrictFIFO queue admits only its head, so a
head that does not fit blocks the queue; BestEffortFIFO lets later workloads pass. The first
waiting workload of a queue that does not fit may preempt: lower-priority preemptible workloads of
its own queue (withinClusterQueue), and, to win back its nominal quota, preemptible workloads of
other queues of its cohort that are borrowing (reclaimWithinCohort). CRITICAL workloads and those
not marked preemptible are never preempted. A reservation is admitted ahead of everything in its
flavor from its start, takes GPUs as they come free, and lends them only to its own workloads.

The state is built for speed: waiting demands sit in per-(queue, GPU type) lanes ordered by
priority and age, merged through a heap; a lane stops being scanned when even its smallest
remaining request could not fit on any node or in the queue's quota.
"""

from __future__ import annotations

import bisect
import heapq
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime

from domain.model.cluster import Node
from domain.model.job import Placement
from domain.model.quota import (
    CPU,
    MEMORY,
    ClusterQueue,
    QueueingStrategy,
    QuotaSet,
    ReclaimWithinCohort,
    ResourceQuota,
    WithinClusterQueue,
    gpu_resource,
)

INFINITE_PRIORITY = 10**12
LaneKey = tuple[str, str | None, str | None]
EPSILON = 1e-9


@dataclass
class Demand:
    key: str
    cluster_queue: str
    priority: int
    created_at: datetime
    gpu_type: str | None
    gpu_count: int
    cpu: float
    memory: float
    preemptible: bool = False
    critical: bool = False
    reservation: str | None = None
    """The reservation whose GPUs this workload runs on."""
    is_reservation: bool = False
    flavor: str | None = None
    """A reservation's flavor (workloads get theirs from their queue's flavor order)."""

    @property
    def order(self) -> tuple[int, datetime, str]:
        return (-self.priority, self.created_at, self.key)

    @property
    def lane(self) -> LaneKey:
        """Demands compete in lanes: a queue's GPU type, a reservation, or a reservation's own
        workloads (which only ever use its GPUs)."""
        own = self.key if self.is_reservation else self.reservation
        return (self.cluster_queue, self.gpu_type if self.gpu_count else None, own)


@dataclass
class Holding:
    demand: Demand
    gpu_flavor: str | None
    cpu_flavor: str | None
    placements: list[Placement]
    """One placement for a workload; a reservation may hold GPUs on several nodes."""
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

    def __init__(self, reason: str, *, never: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.never = never


@dataclass
class Decision:
    admitted: list[Holding] = field(default_factory=list)
    preempted: list[Holding] = field(default_factory=list)
    waiting: dict[str, str] = field(default_factory=dict)
    """Why each demand that was looked at still waits."""
    never: dict[str, str] = field(default_factory=dict)
    """Demands that can never be admitted as things are configured."""


class ClusterModel:
    """Capacity, quotas and what holds them; `cycle` admits what the rules allow now."""

    def __init__(self, nodes: Iterable[Node], quotas: QuotaSet) -> None:
        self.quotas = quotas
        self.queues = {q.name: q for q in quotas.cluster_queues}
        flavors = quotas.flavors
        self.nodes: dict[str, NodeSlots] = {}
        for node in nodes:
            if not node.usable:
                continue
            self.nodes[node.name] = NodeSlots(
                node.name,
                node.gpu_type if node.gpu_count else None,
                set(range(node.gpu_count)),
                node.cpu_cores,
                node.memory_gb,
                frozenset(f.name for f in flavors if f.matches(node)),
            )
        self.usage: dict[tuple[str, str, str], float] = defaultdict(float)
        self.pool_used: dict[tuple[str, str, str], float] = defaultdict(float)
        self.holdings: dict[str, Holding] = {}
        self.reservation_of: dict[str, str] = {}
        self._by_type_flavor: dict[tuple[str | None, str], list[NodeSlots]] = defaultdict(list)
        for slots in self.nodes.values():
            for flavor in slots.flavors:
                self._by_type_flavor[(slots.gpu_type, flavor)].append(slots)
        self._capacity: dict[tuple[str | None, str], int] = {
            key: max(len(n.free) for n in members) for key, members in self._by_type_flavor.items()
        }
        self._lanes: dict[LaneKey, Lane] = defaultdict(Lane)
        self._waiting: dict[str, Demand] = {}
        self._max_free: dict[str | None, int] | None = None
        self.never: dict[str, str] = {}
        """Waiting demands that can never be admitted as configured (they still block a
        StrictFIFO queue, as they do in Kueue)."""

    # --- quota arithmetic --------------------------------------------------------------------

    def _quota(self, queue: ClusterQueue, flavor: str, resource: str) -> ResourceQuota | None:
        return queue.quota(flavor, resource)

    def _covers(self, queue: ClusterQueue, resource: str) -> bool:
        return bool(queue.flavors_for(resource))

    def _pool(self, queue: ClusterQueue, flavor: str, resource: str) -> float:
        assert queue.cohort is not None
        total = 0.0
        for member in self.quotas.members(queue.cohort):
            q = member.quota(flavor, resource)
            if q is not None:
                total += q.lendable
        return total

    def fits_quota(self, queue: ClusterQueue, flavor: str, resource: str, amount: float) -> bool:
        if amount <= 0 or not self._covers(queue, resource):
            return True
        quota = queue.quota(flavor, resource)
        if quota is None:
            return False
        used = self.usage[(queue.name, flavor, resource)]
        after = used + amount
        if after <= quota.nominal_quota + EPSILON and queue.cohort is None:
            return True
        if queue.cohort is None:
            return False
        if quota.borrowing_limit is not None and after > (
            quota.nominal_quota + quota.borrowing_limit + EPSILON
        ):
            return False
        pool_key = (queue.cohort, flavor, resource)
        from_pool = max(0.0, after - quota.guaranteed) - max(0.0, used - quota.guaranteed)
        return self.pool_used[pool_key] + from_pool <= self._pool(queue, flavor, resource) + EPSILON

    def most_ever(self, queue: ClusterQueue, flavor: str, resource: str) -> float:
        """The most of `resource` in `flavor` the queue could ever hold, all else idle."""
        if not self._covers(queue, resource):
            return float("inf")
        quota = queue.quota(flavor, resource)
        if quota is None:
            return 0.0
        if queue.cohort is None:
            return quota.nominal_quota
        most = quota.guaranteed + self._pool(queue, flavor, resource)
        if quota.borrowing_limit is not None:
            most = min(most, quota.nominal_quota + quota.borrowing_limit)
        return most

    def _charge(self, queue: ClusterQueue, flavor: str, resource: str, amount: float) -> None:
        if amount == 0 or not self._covers(queue, resource):
            return
        quota = queue.quota(flavor, resource)
        key = (queue.name, flavor, resource)
        before = self.usage[key]
        self.usage[key] = before + amount
        if queue.cohort is not None and quota is not None:
            guaranteed = quota.guaranteed
            delta = max(0.0, before + amount - guaranteed) - max(0.0, before - guaranteed)
            self.pool_used[(queue.cohort, flavor, resource)] += delta

    def borrowing(self, queue_name: str, flavor: str, resource: str) -> float:
        queue = self.queues.get(queue_name)
        if queue is None:
            return 0.0
        quota = queue.quota(flavor, resource)
        nominal = quota.nominal_quota if quota else 0.0
        return max(0.0, self.usage[(queue_name, flavor, resource)] - nominal)

    # --- waiting demands --------------------------------------------------------------------

    def enqueue(self, demand: Demand) -> None:
        self._waiting[demand.key] = demand
        self._lanes[demand.lane].add(demand)

    def withdraw(self, key: str) -> None:
        self.never.pop(key, None)
        demand = self._waiting.pop(key, None)
        if demand is not None:
            self._lanes[demand.lane].remove(demand.key)

    def is_waiting(self, key: str) -> bool:
        return key in self._waiting

    def waiting(self) -> Iterator[Demand]:
        return iter(self._waiting.values())

    # --- holding and releasing --------------------------------------------------------------

    def _flavors_for(self, queue: ClusterQueue, demand: Demand) -> list[str | None]:
        if demand.gpu_count == 0:
            return [None]
        resource = gpu_resource(demand.gpu_type)
        if not self._covers(queue, resource):
            return [f.name for f in self.quotas.flavors]
        return [f.flavor for f in queue.flavors_for(resource)]

    def _cpu_flavor(self, queue: ClusterQueue) -> str | None:
        flavors = queue.flavors_for(CPU)
        return flavors[0].flavor if flavors else None

    def _node_for(
        self,
        demand: Demand,
        gpu_flavor: str | None,
        cpu_flavor: str | None,
        allowed: dict[str, set[int]] | None = None,
    ) -> NodeSlots | None:
        if gpu_flavor is not None:
            candidates = self._by_type_flavor.get((demand.gpu_type, gpu_flavor), [])
        else:
            candidates = list(self.nodes.values())
        best: NodeSlots | None = None
        for node in candidates:
            if cpu_flavor is not None and cpu_flavor not in node.flavors:
                continue
            free = node.free if allowed is None else allowed.get(node.name, set())
            if (
                len(free) >= demand.gpu_count
                and node.cpu + EPSILON >= demand.cpu
                and node.memory + EPSILON >= demand.memory
                and (best is None or (len(free), node.name) < (len(best.free), best.name))
            ):
                best = node
        return best

    def _take(self, node: NodeSlots, demand: Demand, pick: set[int] | None = None) -> Placement:
        self._max_free = None
        pool = node.free if pick is None else pick  # a reservation's GPUs are not in `free`
        indices = tuple(sorted(pool)[: demand.gpu_count])
        node.free.difference_update(indices)
        node.cpu -= demand.cpu
        node.memory -= demand.memory
        return Placement(node.name, indices)

    def hold(self, demand: Demand, holding: Holding) -> None:
        """Record a workload already admitted (from the cluster's current state)."""
        self._max_free = None
        queue = self.queues.get(demand.cluster_queue)
        for placement in holding.placements:
            node = self.nodes.get(placement.node)
            if node is not None:
                node.free.difference_update(placement.gpu_indices)
        if holding.placements and holding.placements[0].node in self.nodes:
            node = self.nodes[holding.placements[0].node]
            node.cpu -= demand.cpu
            node.memory -= demand.memory
        if queue is not None and demand.is_reservation and holding.gpu_flavor:
            self._charge(queue, holding.gpu_flavor, gpu_resource(demand.gpu_type), holding.gpus)
        elif queue is not None and demand.reservation is None:
            self._charge_demand(queue, demand, holding.gpu_flavor, holding.cpu_flavor, +1)
        self.holdings[demand.key] = holding
        if demand.reservation is not None:
            self.reservation_of[demand.key] = demand.reservation

    def _charge_demand(
        self,
        queue: ClusterQueue,
        demand: Demand,
        gpu_flavor: str | None,
        cpu_flavor: str | None,
        sign: int,
    ) -> None:
        if gpu_flavor is not None and demand.gpu_count:
            self._charge(queue, gpu_flavor, gpu_resource(demand.gpu_type), sign * demand.gpu_count)
        if cpu_flavor is not None:
            self._charge(queue, cpu_flavor, CPU, sign * demand.cpu)
            self._charge(queue, cpu_flavor, MEMORY, sign * demand.memory)

    def release(self, key: str) -> Holding | None:
        holding = self.holdings.pop(key, None)
        if holding is None:
            return None
        self._max_free = None
        demand = holding.demand
        queue = self.queues.get(demand.cluster_queue)
        if demand.is_reservation:
            self._release_reservation(key, holding, queue)
            return holding
        owner = self.reservation_of.pop(key, None)
        node = self.nodes.get(holding.placement.node)
        if node is not None:
            if owner is None or owner not in self.holdings:
                node.free.update(holding.placement.gpu_indices)
            node.cpu += demand.cpu
            node.memory += demand.memory
        if queue is not None and owner is None:
            self._charge_demand(queue, demand, holding.gpu_flavor, holding.cpu_flavor, -1)
        return holding

    def _release_reservation(self, key: str, holding: Holding, queue: ClusterQueue | None) -> None:
        """The reservation's workloads run on as the queue's own; its idle GPUs go back."""
        if queue is not None and holding.gpu_flavor:
            self._charge(
                queue, holding.gpu_flavor, gpu_resource(holding.demand.gpu_type), -holding.gpus
            )
        busy: dict[str, set[int]] = defaultdict(set)
        for inner, owner in list(self.reservation_of.items()):
            if owner != key:
                continue
            del self.reservation_of[inner]
            inner_holding = self.holdings[inner]
            busy[inner_holding.placement.node].update(inner_holding.placement.gpu_indices)
            if queue is not None:
                self._charge_demand(
                    queue,
                    inner_holding.demand,
                    inner_holding.gpu_flavor,
                    inner_holding.cpu_flavor,
                    +1,
                )
        for placement in holding.placements:
            node = self.nodes.get(placement.node)
            if node is not None:
                node.free.update(set(placement.gpu_indices) - busy[placement.node])

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
        queue = self.queues.get(demand.cluster_queue)
        if queue is None:
            raise Refusal(f"cluster queue {demand.cluster_queue} does not exist", never=True)
        if demand.is_reservation:
            return self._grow_reservation(queue, demand, now)
        if demand.reservation is not None:
            return self._admit_into_reservation(queue, demand, now)
        cpu_flavor = self._cpu_flavor(queue)
        reasons: list[str] = []
        never = True
        for gpu_flavor in self._flavors_for(queue, demand):
            if gpu_flavor is not None:
                capacity = self._capacity.get((demand.gpu_type, gpu_flavor), 0)
                if capacity < demand.gpu_count or demand.gpu_count > self.most_ever(
                    queue, gpu_flavor, gpu_resource(demand.gpu_type)
                ):
                    continue
            never = False
            quota_ok = (
                gpu_flavor is None
                or self.fits_quota(
                    queue, gpu_flavor, gpu_resource(demand.gpu_type), demand.gpu_count
                )
            ) and (
                cpu_flavor is None
                or (
                    self.fits_quota(queue, cpu_flavor, CPU, demand.cpu)
                    and self.fits_quota(queue, cpu_flavor, MEMORY, demand.memory)
                )
            )
            if not quota_ok:
                reasons.append(
                    f"no quota left in {queue.name} for {self._ask(demand)}"
                    + (f" in {gpu_flavor}" if gpu_flavor else "")
                )
                continue
            node = self._node_for(demand, gpu_flavor, cpu_flavor)
            if node is None:
                reasons.append(f"no node has {self._ask(demand)} free")
                continue
            placement = self._take(node, demand)
            holding = Holding(
                demand,
                gpu_flavor,
                cpu_flavor,
                [Placement(placement.node, placement.gpu_indices, gpu_flavor)],
                now,
            )
            self._charge_demand(queue, demand, gpu_flavor, cpu_flavor, +1)
            self.holdings[demand.key] = holding
            return holding
        if never:
            raise Refusal(
                f"{queue.name} can never give {self._ask(demand)}: no flavor has a node that "
                "large, or the quota (with what the cohort can lend) is smaller",
                never=True,
            )
        raise Refusal(reasons[0])

    @staticmethod
    def _ask(demand: Demand) -> str:
        if demand.gpu_count:
            return f"{demand.gpu_count} x {demand.gpu_type}"
        return f"{demand.cpu:g} CPU"

    def _grow_reservation(self, queue: ClusterQueue, demand: Demand, now: datetime) -> Holding:
        flavor = demand.flavor or ""
        holding = self.holdings.get(demand.key)
        if holding is None:
            holding = Holding(demand, flavor, None, [], now)
            self.holdings[demand.key] = holding
        missing = demand.gpu_count - holding.gpus
        resource = gpu_resource(demand.gpu_type)
        for node in sorted(self.nodes.values(), key=lambda n: (-len(n.free), n.name)):
            if missing <= 0:
                break
            if flavor not in node.flavors or not node.free:
                continue
            take = min(missing, len(node.free))
            if not self.fits_quota(queue, flavor, resource, take):
                break
            indices = tuple(sorted(node.free)[:take])
            node.free.difference_update(indices)
            self._max_free = None
            self._charge(queue, flavor, resource, take)
            merged = next((p for p in holding.placements if p.node == node.name), None)
            if merged is not None:
                holding.placements.remove(merged)
                indices = tuple(sorted((*merged.gpu_indices, *indices)))
            holding.placements.append(Placement(node.name, indices, flavor))
            missing -= take
        if missing > 0:
            raise Refusal(f"reservation holds {holding.gpus} of {demand.gpu_count} GPUs")
        return holding

    def _admit_into_reservation(
        self, queue: ClusterQueue, demand: Demand, now: datetime
    ) -> Holding:
        assert demand.reservation is not None
        slots = self.reservation_slots(demand.reservation)
        if not slots:
            raise Refusal(f"reservation {demand.reservation} is not active")
        owner = self.holdings[demand.reservation]
        node = self._node_for(demand, owner.gpu_flavor, None, allowed=slots)
        if node is None:
            raise Refusal(f"reservation has no node with {self._ask(demand)} free")
        placement = self._take(node, demand, slots[node.name])
        holding = Holding(
            demand,
            owner.gpu_flavor,
            None,
            [Placement(placement.node, placement.gpu_indices, owner.gpu_flavor)],
            now,
        )
        self.holdings[demand.key] = holding
        self.reservation_of[demand.key] = demand.reservation
        return holding

    # --- preemption -------------------------------------------------------------------------

    def _may_preempt(self, queue: ClusterQueue, demand: Demand, victim: Holding) -> bool:
        other = victim.demand
        if other.critical or not other.preemptible or other.is_reservation:
            return False
        if other.reservation is not None:
            return False
        if other.cluster_queue == queue.name:
            policy = queue.preemption.within_cluster_queue
            if policy is WithinClusterQueue.LOWER_PRIORITY:
                return other.priority < demand.priority
            if policy is WithinClusterQueue.LOWER_OR_NEWER_EQUAL_PRIORITY:
                return other.priority < demand.priority or (
                    other.priority == demand.priority and other.created_at > demand.created_at
                )
            return False
        victim_queue = self.queues.get(other.cluster_queue)
        if queue.cohort is None or victim_queue is None or victim_queue.cohort != queue.cohort:
            return False
        reclaim = queue.preemption.reclaim_within_cohort
        if reclaim is ReclaimWithinCohort.NEVER or not self._within_nominal(queue, demand):
            return False
        if (
            victim.gpu_flavor is None
            or self.borrowing(other.cluster_queue, victim.gpu_flavor, gpu_resource(other.gpu_type))
            <= 0
        ):
            return False
        return reclaim is ReclaimWithinCohort.ANY or other.priority < demand.priority

    def _within_nominal(self, queue: ClusterQueue, demand: Demand) -> bool:
        """Would the demand fit in its queue's own nominal quota (what reclaiming wins back)?"""
        resource = gpu_resource(demand.gpu_type)
        for fq in queue.flavors_for(resource):
            quota = fq.quota(resource)
            if quota is not None and (
                self.usage[(queue.name, fq.flavor, resource)] + demand.gpu_count
                <= quota.nominal_quota + EPSILON
            ):
                return True
        return False

    def try_preempt(self, demand: Demand, now: datetime) -> tuple[Holding, list[Holding]] | None:
        """Evict the fewest, least important workloads that let `demand` in; None if none do.

        Victims are taken preferring borrowers of other queues, then the lowest priority, then
        the most recently started; for each node that could host the demand, the victims on it
        are taken in that order until the GPUs are free, then others until the quota allows."""
        queue = self.queues.get(demand.cluster_queue)
        if queue is None or demand.is_reservation or demand.reservation is not None:
            return None
        candidates = [h for h in self.holdings.values() if self._may_preempt(queue, demand, h)]
        if not candidates:
            return None
        candidates.sort(
            key=lambda h: (
                h.demand.cluster_queue == queue.name,
                h.demand.priority,
                -h.since.timestamp(),
            )
        )
        plans: list[list[Holding]] = []
        hosts = (
            {
                n.name: n
                for f in self._flavors_for(queue, demand)
                if f is not None
                for n in self._by_type_flavor.get((demand.gpu_type, f), [])
            }
            if demand.gpu_count
            else {}
        )
        for name, node in hosts.items():
            on_node = [h for h in candidates if h.placement.node == name]
            freeable = len(node.free) + sum(len(h.placement.gpu_indices) for h in on_node)
            if freeable < demand.gpu_count:
                continue
            plan: list[Holding] = []
            free = len(node.free)
            for holding in on_node:
                if free >= demand.gpu_count:
                    break
                plan.append(holding)
                free += len(holding.placement.gpu_indices)
            plans.append(plan)
        if not demand.gpu_count:
            plans.append([])
        best: list[Holding] | None = None
        for plan in sorted(plans, key=len):
            if best is not None and len(plan) >= len(best):
                break
            victims = self._complete_plan(demand, plan, candidates, now)
            if victims is not None and (best is None or len(victims) < len(best)):
                best = victims
        if best is None:
            return None
        for victim in best:
            self.release(victim.demand.key)
        return self.try_admit(demand, now), best

    def _complete_plan(
        self, demand: Demand, plan: list[Holding], candidates: list[Holding], now: datetime
    ) -> list[Holding] | None:
        """Release `plan`, then further candidates until `demand` is admitted; restore the state
        and return the victims (None if even all candidates do not make room)."""
        released: list[Holding] = []
        extra = (h for h in candidates if h not in plan)
        try:
            for holding in plan:
                self.release(holding.demand.key)
                released.append(holding)
            while True:
                try:
                    trial = self.try_admit(demand, now)
                except Refusal:
                    nxt = next(extra, None)
                    if nxt is None:
                        return None
                    self.release(nxt.demand.key)
                    released.append(nxt)
                    continue
                self.release(trial.demand.key)
                return list(released)
        finally:
            for holding in reversed(released):
                self.hold(holding.demand, holding)

    # --- the cycle --------------------------------------------------------------------------

    def cycle(self, now: datetime, *, eligible: set[str] | None = None) -> Decision:
        """Admit, in queue order, what the rules allow now. `eligible` limits which waiting
        demands may go (others wait for a window or a dependency, outside Kueue)."""
        decision = Decision()
        blocked: set[str] = set()
        tried_preemption: set[str] = set()
        heap: list[tuple[tuple[int, datetime, str], LaneKey, int]] = []
        for lane_key, lane in self._lanes.items():
            first = lane.next_live(0)
            if first is not None:
                heapq.heappush(heap, (lane.items[first].order, lane_key, first))
        done: list[str] = []
        while heap:
            _, lane_key, index = heapq.heappop(heap)
            lane = self._lanes[lane_key]
            demand = lane.items[index]
            if demand.key in lane.removed:
                self._push_next(heap, lane_key, lane, index + 1, check=False)
                continue
            if demand.cluster_queue in blocked:
                decision.waiting[demand.key] = (
                    f"behind the head of StrictFIFO queue {demand.cluster_queue}"
                )
                self._push_next(heap, lane_key, lane, index + 1, check=False)
                continue
            if eligible is not None and demand.key not in eligible:
                self._push_next(heap, lane_key, lane, index + 1, check=False)
                continue
            queue = self.queues.get(demand.cluster_queue)
            strict = queue is not None and queue.queueing_strategy is QueueingStrategy.STRICT_FIFO
            if demand.key in self.never:
                decision.never[demand.key] = self.never[demand.key]
                if strict:
                    blocked.add(demand.cluster_queue)
                self._push_next(heap, lane_key, lane, index + 1, check=True)
                continue
            try:
                holding = self.try_admit(demand, now)
            except Refusal as refusal:
                admitted_by_preemption = False
                if refusal.never:
                    decision.never[demand.key] = refusal.reason
                    self.never[demand.key] = refusal.reason
                elif demand.cluster_queue not in tried_preemption and not demand.is_reservation:
                    tried_preemption.add(demand.cluster_queue)
                    outcome = self.try_preempt(demand, now)
                    if outcome is not None:
                        holding, victims = outcome
                        decision.preempted.extend(victims)
                        decision.admitted = [h for h in decision.admitted if h not in victims]
                        admitted_by_preemption = True
                if not admitted_by_preemption:
                    if not refusal.never:
                        decision.waiting[demand.key] = refusal.reason
                    if strict:
                        blocked.add(demand.cluster_queue)
                    self._push_next(heap, lane_key, lane, index + 1, check=True)
                    continue
            if not demand.is_reservation:
                decision.admitted.append(holding)
            done.append(demand.key)
            lane.removed.add(demand.key)
            self._push_next(heap, lane_key, lane, index + 1, check=False)
        for key in done:
            self.withdraw(key)
        return decision

    def _push_next(
        self,
        heap: list[tuple[tuple[int, datetime, str], LaneKey, int]],
        lane_key: LaneKey,
        lane: Lane,
        start: int,
        *,
        check: bool,
    ) -> None:
        index = lane.next_live(start)
        if index is None:
            return
        if check and not self._may_fit(lane_key, lane, index):
            return
        heapq.heappush(heap, (lane.items[index].order, lane_key, index))

    def _may_fit(self, lane_key: LaneKey, lane: Lane, index: int) -> bool:
        """Could any demand from `index` on fit? A cheap test that errs towards yes."""
        queue_name, gpu_type, reservation = lane_key
        if gpu_type is None or reservation is not None:
            return True
        smallest = lane.smallest_from(index)
        if smallest > self.max_free(gpu_type):
            return False
        queue = self.queues.get(queue_name)
        if queue is None:
            return False
        return smallest <= self._headroom(queue, gpu_type)

    def max_free(self, gpu_type: str | None) -> int:
        if self._max_free is None:
            best: dict[str | None, int] = defaultdict(int)
            for node in self.nodes.values():
                best[node.gpu_type] = max(best[node.gpu_type], len(node.free))
            self._max_free = best
        return self._max_free.get(gpu_type, 0)

    def _headroom(self, queue: ClusterQueue, gpu_type: str) -> float:
        resource = gpu_resource(gpu_type)
        if not self._covers(queue, resource):
            return float("inf")
        best = 0.0
        for fq in queue.flavors_for(resource):
            quota = fq.quota(resource)
            if quota is None:
                continue
            used = self.usage[(queue.name, fq.flavor, resource)]
            if queue.cohort is None:
                room = quota.nominal_quota - used
            else:
                pool_free = (
                    self._pool(queue, fq.flavor, resource)
                    - self.pool_used[(queue.cohort, fq.flavor, resource)]
                )
                room = max(0.0, quota.guaranteed - used) + max(0.0, pool_free)
                if quota.borrowing_limit is not None:
                    room = min(room, quota.nominal_quota + quota.borrowing_limit - used)
            best = max(best, room)
        return best


class Lane:
    """Waiting demands of one (queue, GPU type), in queue order. Admitted ones are only marked
    removed (and compacted away in bulk), so a cycle costs what it looks at, not the lane."""

    def __init__(self) -> None:
        self.items: list[Demand] = []
        self.removed: set[str] = set()
        self._suffix_min: list[int] | None = None

    def add(self, demand: Demand) -> None:
        if demand.key in self.removed:
            self.compact()
        bisect.insort(self.items, demand, key=lambda d: d.order)
        self._suffix_min = None

    def remove(self, key: str) -> None:
        self.removed.add(key)
        if len(self.removed) > 32 and len(self.removed) * 2 > len(self.items):
            self.compact()

    def compact(self) -> None:
        self.items = [d for d in self.items if d.key not in self.removed]
        self.removed.clear()
        self._suffix_min = None

    def next_live(self, start: int) -> int | None:
        for index in range(start, len(self.items)):
            if self.items[index].key not in self.removed:
                return index
        return None

    def smallest_from(self, index: int) -> int:
        """A lower bound of the GPUs asked by demands from `index` on."""
        if self._suffix_min is None:
            suffix = [0] * len(self.items)
            smallest = 1 << 30
            for i in range(len(self.items) - 1, -1, -1):
                smallest = min(smallest, self.items[i].gpu_count)
                suffix[i] = smallest
            self._suffix_min = suffix
        return self._suffix_min[index]
