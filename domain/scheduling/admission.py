"""One set of admission rules: Kueue's quota model plus node fit, used by the simulated cluster
and replayed by the schedule estimator, so that what is predicted is what the simulator does.

A demand (one workload, or a capacity reservation; `demand`) belongs to a ClusterQueue. It is
admitted when
1. its queue has quota for it in a flavor of its GPU type, tried in the queue's flavor order:
   within its nominal quota, or beyond it by borrowing what its cohort has unused, within the
   borrowing and lending limits (`quota_ledger`); and
2. one node of that flavor has the GPUs (and CPU and memory) free: the tightest such node
   (`nodes`). A demand of several pods (a Kueue pod set: N pods of G GPUs, as a multi-node
   training job) is admitted all or nothing: quota for N x G, and a node for each pod, tightest
   first (pods may share a node that has room for both).
`flavors` finds that assignment without taking anything; admitting it takes the nodes' GPUs
and charges the queue in the snapshot of who holds what (`holdings`). Queues are served in one
order (`ordering`): priority, then age, except that, as in Kueue's cycle (entry ordering in
pkg/scheduler), a demand that would borrow beyond its queue's nominal quota goes after those that
fit within theirs. A StrictFIFO queue admits only its head, so a head that
does not fit (even one that never can) blocks the queue; BestEffortFIFO lets later workloads
pass. The first waiting workload of a queue that does not fit in a cycle may preempt
(`preemption`). A reservation is admitted ahead of everything of its flavor from its start,
takes GPUs as they come free, and lends them only to its own workloads (`reservations`).

Waiting demands sit in lanes (`waiting`, `lanes`), merged through a heap in admission order; a
lane stops being scanned as soon as nothing left in it could fit, so a cycle costs what it
admits. This module is the cycle: it ties the others together and is the one they never import.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from domain.model.cluster import Node
from domain.model.quota import QuotaSet
from domain.scheduling.demand import Demand, Holding, LaneKey, Refusal, ask
from domain.scheduling.flavors import FlavorAssigner, NoFit
from domain.scheduling.holdings import Holdings
from domain.scheduling.lanes import Lane
from domain.scheduling.nodes import Nodes
from domain.scheduling.ordering import AdmissionOrder
from domain.scheduling.preemption import ClusterView, could_preempt, try_preempt
from domain.scheduling.quota_ledger import QuotaLedger
from domain.scheduling.reservations import ReservationBook
from domain.scheduling.waiting import Waiting


@dataclass
class Decision:
    admitted: list[Holding] = field(default_factory=list)
    preempted: list[Holding] = field(default_factory=list)
    waiting: dict[str, str] = field(default_factory=dict)
    """Why each demand that was looked at still waits."""
    never: dict[str, str] = field(default_factory=dict)
    """Demands that can never be admitted as things are configured."""


Heap = list[tuple[bool, AdmissionOrder, LaneKey, int]]
"""The next demand of each lane being looked at: (whether it would borrow, its order, its lane,
its index in the lane)."""


class ClusterModel:
    """Capacity, quotas and what holds them; `cycle` admits what the rules allow now."""

    def __init__(self, nodes: Iterable[Node], quotas: QuotaSet) -> None:
        self.quotas = quotas
        self.ledger = QuotaLedger(quotas)
        self.nodes = Nodes(nodes, quotas.flavors)
        self.snapshot = Holdings(quotas, self.ledger, self.nodes)
        self.flavors = FlavorAssigner(quotas, self.ledger, self.nodes)
        self.reservations = ReservationBook(self.snapshot, self.nodes)
        self.waiting = Waiting(quotas)
        self.queues = self.snapshot.queues
        self.holdings = self.snapshot.by_key
        """What holds resources now, by demand key."""
        self.never = self.waiting.never
        """Waiting demands that can never be admitted as configured."""
        self._view = ClusterView(
            queues=self.queues,
            ledger=self.ledger,
            holdings_of=self.snapshot.holdings_of,
            holders=self.snapshot.holders,
            weakest=self.snapshot.weakest,
            cohort_members=self.snapshot.cohort_members,
            flavors_for=self.flavors.flavors_for,
            hosts_for=self.flavors.hosts_for,
            max_free=self.nodes.max_free,
        )
        """What preemption reads (bound to the parts, not to the model: no reference cycle)."""
        self._preemption_failed: dict[str, tuple[int, int]] = {}
        """Demands whose preemption found no way in, at which holdings version of their type."""

    # --- waiting demands --------------------------------------------------------------------

    def enqueue(self, demand: Demand) -> None:
        self.waiting.enqueue(demand, self.flavors.never_reason(demand))

    def withdraw(self, key: str) -> None:
        self.waiting.withdraw(key)

    def is_waiting(self, key: str) -> bool:
        return key in self.waiting

    def free_gpus(self, gpu_type: str | None) -> int:
        """All GPUs of `gpu_type` free now (the capacity forecast)."""
        return self.nodes.free_gpus(gpu_type)

    # --- holding and releasing --------------------------------------------------------------

    def hold(self, demand: Demand, holding: Holding) -> None:
        """Record what already holds resources (`Holdings.hold`)."""
        self.snapshot.hold(demand, holding)

    def release(self, key: str) -> Holding | None:
        """The holding of `key` ends: its resources come back, and lanes they may help are
        looked at again."""
        holding = self.snapshot.drop(key)
        if holding is None:
            return None
        demand = holding.demand
        kind = demand.gpu_type if demand.gpu_count else None
        self.nodes.changed(kind)
        self.waiting.freed(kind, self.snapshot.sharing(demand.cluster_queue))
        if demand.is_reservation:
            self.reservations.release(key, holding)
        else:
            self.snapshot.vacate(holding)
        return holding

    def try_admit(self, demand: Demand, now: datetime) -> Holding:
        """Admit `demand` now or raise Refusal saying why not."""
        queue = demand.cluster_queue
        if queue not in self.queues:
            raise Refusal(f"cluster queue {queue} does not exist", never=True)
        if demand.is_reservation:
            return self.reservations.grow(demand, now)
        if demand.reservation is not None:
            return self.reservations.admit_into(demand, now)
        assignment = self.flavors.assign(demand)
        if isinstance(assignment, NoFit):
            raise Refusal(assignment.reason, never=assignment.never, cpu_bound=assignment.cpu_bound)
        flavor = assignment.gpu_flavor
        placements = [self.nodes.take(node, demand, flavor) for node in assignment.nodes]
        holding = Holding(demand, flavor, assignment.cpu_flavor, placements, now)
        self.snapshot.add(holding)
        return holding

    # --- preemption -------------------------------------------------------------------------

    def _preemption_state(self, demand: Demand) -> tuple[int, int]:
        """Versions of what a preemption attempt for `demand` depends on: the victims it could
        pick (its queue's and its cohort's holdings of its GPU type) and freed capacity."""
        kind = demand.gpu_type if demand.gpu_count else None
        return (self.waiting.type_epoch[kind], self.snapshot.version(demand.cluster_queue, kind))

    def preemption_hopeless(self, demand: Demand) -> bool:
        return self._preemption_failed.get(demand.key) == self._preemption_state(demand)

    def preemption_failed(self, demand: Demand) -> None:
        self._preemption_failed[demand.key] = self._preemption_state(demand)

    # --- the cycle --------------------------------------------------------------------------

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
        waiting, nodes, view = self.waiting, self.nodes, self._view
        lanes = waiting.lanes
        for lane_key in waiting.to_look_at():
            lane = lanes.get(lane_key)
            if lane is not None and len(lane):
                self._push_next(heap, lane_key, lane, 0, tried_preemption)
        done: list[str] = []
        while heap:
            borrowing, order, lane_key, index = heapq.heappop(heap)
            lane = lanes[lane_key]
            demand = lane.items[index]
            if not borrowing and heap and self.flavors.borrows(demand):
                # earlier admissions of the cycle used its nominal quota: it now goes after
                # those that fit within theirs
                heapq.heappush(heap, (True, order, lane_key, index))
                continue
            strict = demand.cluster_queue in waiting.strict_queues
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
            limit = lane.known_limit(waiting.epoch(lane_key)) if lane_key[2] is None else None
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
                and demand.gpu_count > nodes.max_free(lane_key[1])
                and (
                    demand.cluster_queue in tried_preemption
                    or demand.is_reservation
                    or self.preemption_hopeless(demand)
                    or not could_preempt(view, demand)
                )
            ):
                self._push_next(heap, lane_key, lane, index + 1, tried_preemption)
                continue
            try:
                if (
                    not explain
                    and lane_key[2] is None
                    and demand.gpu_count > nodes.max_free(lane_key[1])
                ):  # no node has room: it is here to preempt; the attempt would only refuse
                    raise Refusal(f"no node has {ask(demand)} free")
                holding = self.try_admit(demand, now)
            except Refusal as refusal:
                outcome = None
                if refusal.never:
                    decision.never[demand.key] = self.never[demand.key] = refusal.reason
                elif (
                    demand.cluster_queue not in tried_preemption
                    and not demand.is_reservation
                    and not self.preemption_hopeless(demand)
                    and could_preempt(view, demand)
                ):
                    tried_preemption.add(demand.cluster_queue)
                    outcome = try_preempt(view, self, demand, now)
                    if outcome is None:
                        self.preemption_failed(demand)
                if outcome is None:
                    if not refusal.never:
                        decision.waiting[demand.key] = refusal.reason
                        if lane_key[2] is None and demand.gpu_count and demand.pods == 1:
                            # what one pod of this size cannot get, a larger one cannot either;
                            # a pod set refused for want of nodes says nothing of one pod
                            lane.refused(demand.gpu_count, refusal.reason, waiting.epoch(lane_key))
                            if refusal.cpu_bound:
                                waiting.cpu_bound.add(lane_key)
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
        waiting.tidy()
        decision.never = dict(self.never)
        return decision

    def _push_next(
        self, heap: Heap, lane_key: LaneKey, lane: Lane, start: int, tried: set[str]
    ) -> None:
        """Queue the lane's next demand that could be admitted (or could preempt), if any."""
        queue_name, gpu_type, reservation = lane_key
        if gpu_type is None or reservation is not None or queue_name in self.waiting.strict_queues:
            index = lane.next_live(start)
        else:
            below = (
                min(self.nodes.max_free(gpu_type), self.flavors.headroom(queue_name, gpu_type)) + 1
            )
            limit = lane.known_limit(self.waiting.epoch(lane_key))
            if limit is not None:
                below = min(below, limit)
            index = lane.next_live(start, int(min(below, 1 << 30)))
            if queue_name not in tried:  # the first refused of a queue may preempt
                head = lane.next_live(start)
                if (
                    head is not None
                    and (index is None or head < index)
                    and not self.preemption_hopeless(lane.items[head])
                    and could_preempt(self._view, lane.items[head])
                ):
                    index = head
        if index is not None:
            demand = lane.items[index]
            heapq.heappush(heap, (self.flavors.borrows(demand), demand.order, lane_key, index))
