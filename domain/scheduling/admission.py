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
fit within theirs (in a cohort tree, after those that borrow from a lower cohort: Kueue's
borrowing level). A StrictFIFO queue admits only its head, so a head that
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
from datetime import datetime, timedelta

from domain.model.cluster import Node
from domain.model.quota import QuotaSet, ReclaimWithinCohort
from domain.scheduling.demand import Demand, Holding, LaneKey, Refusal, ask
from domain.scheduling.flavors import FlavorAssigner, NoFit
from domain.scheduling.holdings import Holdings
from domain.scheduling.lanes import Lane
from domain.scheduling.nodes import Nodes
from domain.scheduling.ordering import AdmissionOrder
from domain.scheduling.preemption import ClusterView, could_preempt, preemptable_in, try_preempt
from domain.scheduling.quota_ledger import QuotaLedger
from domain.scheduling.reservations import ReservationBook
from domain.scheduling.shares import Shares
from domain.scheduling.waiting import Waiting


@dataclass
class Decision:
    admitted: list[Holding] = field(default_factory=list)
    preempted: list[Holding] = field(default_factory=list)
    waiting: dict[str, str] = field(default_factory=dict)
    """Why each demand that was looked at still waits."""
    never: dict[str, str] = field(default_factory=dict)
    """Demands that can never be admitted as things are configured."""
    preemptors: set[str] = field(default_factory=set)
    """Admitted demands that preempted others to get in (Kueue admits them once their victims
    are gone: the estimator starts them that much later)."""
    aside: set[str] = field(default_factory=set)
    """Demands set aside after holding capacity, until resources of their kind come free."""
    again: bool = False
    """Run another cycle `KUEUE_NEXT_CYCLE` later: a refused demand newly held its queue's
    unused nominal quota from the cohort, or demands waited for the victims of a preemption to
    be gone; what that kept out may be admitted in Kueue's next cycle."""


KUEUE_NEXT_CYCLE = timedelta(milliseconds=10)
"""How soon Kueue runs its next cycle after one that admitted nothing: its scheduler backs off
from 1 ms to at most 10 ms (maxBackoff, pkg/util/wait/backoff.go, Kueue ff69552e). A cycle in
which a demand held capacity is followed by one this much later (the estimator's event, the
simulated cluster's next step)."""

HOLDING = "set aside: no workload it may preempt, and its queue cannot always reclaim its quota"
"""Ends the reason of a demand that held capacity and waits, as Kueue's inadmissible
workloads do, until resources of its kind come free (`ClusterModel.set_aside`)."""


Rank = tuple[int, bool, float]
"""What goes before the admission order (`ClusterModel.rank`)."""

Heap = list[tuple[Rank, AdmissionOrder, LaneKey, int, int]]
"""The next demand of each lane being looked at: (its rank, its order, its lane, its index in
the lane, the version of its queue's usage its rank was worked out at)."""


class ClusterModel:
    """Capacity, quotas and what holds them; `cycle` admits what the rules allow now."""

    def __init__(self, nodes: Iterable[Node], quotas: QuotaSet) -> None:
        self.quotas = quotas
        self.ledger = QuotaLedger(quotas)
        self.nodes = Nodes(nodes, quotas.flavors)
        self.snapshot = Holdings(quotas, self.ledger, self.nodes)
        self.shares = Shares(quotas, self.ledger)
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
            shares=self.shares,
        )
        """What preemption reads (bound to the parts, not to the model: no reference cycle)."""
        view = self._view
        self.flavors.preemptable = lambda demand, flavor: preemptable_in(view, demand, flavor)
        self._aside: dict[tuple[str, str | None], int] = {}
        """(queue, GPU type) whose demands hold no more capacity, at which epoch of the type
        (`set_aside`)."""
        self._may_hold_queues = frozenset(
            q.name
            for q in quotas.cluster_queues
            if q.cohort is not None
            and q.preemption.reclaim_within_cohort is not ReclaimWithinCohort.ANY
        )
        """Queues whose refused workloads may hold capacity (`_hold`)."""
        self._holders: dict[str, tuple[str, str | None]] = {}
        """Demands that held capacity: their (queue, GPU type)."""
        self._held_in: set[str] = set()
        """Queues whose demand held capacity in this cycle (Kueue: one head per queue)."""
        self._preemption_failed: dict[str, tuple[int, int]] = {}
        """Demands whose preemption found no way in, at which holdings version of their type."""

    # --- waiting demands --------------------------------------------------------------------

    def enqueue(self, demand: Demand) -> None:
        self.waiting.enqueue(demand, self.flavors.never_reason(demand))

    def withdraw(self, key: str) -> None:
        self.waiting.withdraw(key)
        self._holders.pop(key, None)

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
        if demand.more:
            return self._admit_gang(demand, now)
        holding = self._admit_pod_set(demand, now)
        self.snapshot.keep(holding)
        return holding

    def _admit_pod_set(self, demand: Demand, now: datetime) -> Holding:
        """One pod set takes its flavors' quota and its nodes (not yet kept as a holding)."""
        assignment = self.flavors.assign(demand)
        if isinstance(assignment, NoFit):
            raise Refusal(assignment.reason, never=assignment.never, cpu_bound=assignment.cpu_bound)
        flavor = assignment.gpu_flavor
        placements = [self.nodes.take(node, demand, flavor) for node in assignment.nodes]
        holding = Holding(demand, flavor, assignment.cpu_flavor, placements, now)
        self.snapshot.charge(holding, +1)
        return holding

    def _admit_gang(self, demand: Demand, now: datetime) -> Holding:
        """A workload of several pod sets: each is assigned its flavors in turn, with what the
        ones before it took already counted (Kueue's flavor assigner, pod set by pod set), and
        all are admitted or none (a refusal gives back what the others took and says which pod
        set did not fit)."""
        parts: list[Holding] = []
        try:
            for part in demand.gang:
                parts.append(self._admit_pod_set(part, now))
        except Refusal as refusal:
            for taken in reversed(parts):
                self.snapshot.vacate(taken)
            self.nodes.changed(demand.gpu_type if demand.gpu_count else None)
            part_name = demand.gang[len(parts)].pod_set
            raise Refusal(
                f"pod set {part_name}: {refusal.reason}",
                never=refusal.never,
                cpu_bound=refusal.cpu_bound,
            ) from None
        holding = Holding(
            demand,
            parts[0].gpu_flavor,
            parts[0].cpu_flavor,
            [p for part in parts for p in part.placements],
            now,
            parts=parts,
        )
        self.snapshot.keep(holding)
        return holding

    def _undo(self, holding: Holding) -> None:
        """Take back an admission of this cycle: nothing came free that was not free before."""
        demand = holding.demand
        self.snapshot.drop(demand.key)
        self.nodes.changed(demand.gpu_type if demand.gpu_count else None)
        self.snapshot.vacate(holding)

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

    # --- capacity held for a workload that cannot preempt ---------------------------------

    def set_aside(self, key: str, gpu_type: str | None) -> None:
        """`key` held capacity before (a simulated cluster's step rebuilds the model: it says
        which, by `HOLDING` in the reason) and nothing of its kind has come free since: its
        queue holds no more for that kind."""
        demand = self.waiting.get(key)
        if demand is not None:
            where = (demand.cluster_queue, gpu_type)
            self._aside[where] = self.waiting.type_epoch[gpu_type]
            self._holders[key] = where

    def is_aside(self, demand: Demand) -> bool:
        """Whether `demand`'s queue held capacity for its kind and waits, like Kueue's
        inadmissible workloads, until resources of that kind come free. Kueue sets a
        BestEffortFIFO queue's heads aside one per cycle, each holding once, and lets the rest
        of the cohort borrow once none is left; here the queue's first holds and the queue is
        set aside at once (the same admissions, some 10 ms cycles sooner). A StrictFIFO queue
        keeps its head: never aside."""
        kind = demand.gpu_type if demand.gpu_count else None
        epoch = self._aside.get((demand.cluster_queue, kind))
        return (
            epoch is not None
            and epoch == self.waiting.type_epoch[kind]
            and demand.cluster_queue not in self.waiting.strict_queues
        )

    def _may_hold(self, demand: Demand) -> bool:
        """Could `demand` hold capacity in this cycle: a GPU workload of a queue in a cohort
        that cannot always reclaim (reclaimWithinCohort not Any), none of whose demands held
        yet in this cycle, and not set aside."""
        return (
            demand.cluster_queue in self._may_hold_queues
            and demand.gpu_count > 0
            and not demand.is_reservation
            and demand.reservation is None
            and demand.cluster_queue not in self._held_in
            and not self.is_aside(demand)
        )

    def _hold(self, demand: Demand, decision: Decision) -> bool:
        """A demand refused for want of its queue's GPU quota, with no workload it may preempt,
        keeps what its queue has unused of its nominal quota from the rest of the cohort for the
        rest of the cycle (Kueue's reserveCapacityForUnreclaimablePreempt, pkg/scheduler), so
        another queue does not borrow what this one might never get back; then it is set aside
        (Kueue: inadmissible) until resources of its kind come free. Whether it held."""
        if not self._may_hold(demand):
            return False
        hold = self.flavors.unreclaimable(demand)
        if hold is None:
            return False
        queue = demand.cluster_queue
        self.ledger.hold(queue, hold[0], demand.gpu_resource, hold[1])
        self._held_in.add(queue)
        if queue not in self.waiting.strict_queues:
            where = (queue, demand.gpu_type)
            self._aside[where] = self.waiting.type_epoch[demand.gpu_type]
            self._holders[demand.key] = where
        return True

    def _end_holds(self, decision: Decision) -> None:
        """The cycle's holds end; what they refused is looked at again. The demands still set
        aside are said (`Decision.aside`), and so is it in the reason of each looked at."""
        if self._held_in:
            if self.ledger.hold_refused:  # Kueue's next cycle admits what the holds kept out
                decision.again = True
            self.ledger.hold_refused = False
            self.ledger.release_holds()
            for queue in self._held_in:
                self.waiting.look_again(self.snapshot.sharing(queue))
            self._held_in.clear()
        if not self._holders:
            return
        epochs = self.waiting.type_epoch
        for where, epoch in list(self._aside.items()):
            if epoch != epochs[where[1]]:
                del self._aside[where]
        for key, where in list(self._holders.items()):
            if where not in self._aside:
                del self._holders[key]
        decision.aside = set(self._holders)
        for key, reason in decision.waiting.items():
            if key in self._holders and not reason.endswith(HOLDING):
                decision.waiting[key] = f"{reason}; {HOLDING}"

    def rank(self, demand: Demand) -> Rank:
        """What orders demands before priority and age, as Kueue's cycle orders its heads
        (classical): by borrowing level, those that fit within their queue's nominal quota
        first, then those that borrow from a lower cohort of their tree; with fair sharing,
        those that do not borrow where they ask, then the lowest share their queue would have
        with them admitted (Kueue's fair-sharing tournament, for a flat cohort)."""
        if not self.shares.enabled:
            return (self.flavors.borrows(demand), False, 0.0)
        flavor = self.flavors.landing(demand)
        if flavor is None:
            return (0, False, 0.0)
        asked = {(flavor, demand.gpu_resource): float(demand.gpus)}
        share = self.shares.of(demand.cluster_queue, asked)
        infinite, value = share.key
        return (int(share.borrowing_on(asked)), infinite, value)

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
        preempting: set[tuple[str, str | None]] = set()
        """(cohort, or queue without one; GPU type) where a preemption happened in this cycle:
        Kueue nominates every workload on the cycle's first snapshot, so what the victims free
        goes to the preemptor alone until the next cycle. A later demand there that fits is
        taken back and waits for it; one that must preempt may, as in Kueue."""
        heap: Heap = []
        waiting, nodes, view = self.waiting, self.nodes, self._view
        lanes = waiting.lanes
        nominated: dict[str, str] = {}
        """The GPU flavor each lane's first demand would take on the cycle's first snapshot
        (Kueue nominates its heads so, and one that no longer fits there once earlier ones are
        admitted waits for the next cycle rather than take another flavor)."""
        for lane_key in waiting.to_look_at():
            lane = lanes.get(lane_key)
            if lane is not None and len(lane):
                head = self._push_next(heap, lane_key, lane, 0, tried_preemption)
                flavor = self.flavors.landing(head) if head is not None else None
                if head is not None and flavor is not None:
                    nominated[head.key] = flavor
        done: list[str] = []
        while heap:
            rank, order, lane_key, index, version = heapq.heappop(heap)
            lane = lanes[lane_key]
            demand = lane.items[index]
            if (
                heap
                and self.ledger.version(lane_key[0]) != version
                and (self.shares.enabled or rank[0] < self.flavors.top_level(demand.cluster_queue))
            ):  # (classical: a rank at its queue's top borrowing level cannot rise)
                now_rank = self.rank(demand)
                if now_rank > rank:
                    # earlier admissions of the cycle used its quota (or raised its queue's
                    # share): it now goes after those that rank before it
                    heapq.heappush(
                        heap,
                        (now_rank, order, lane_key, index, self.ledger.version(lane_key[0])),
                    )
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
                self._hold(demand, decision)
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
                self._hold(demand, decision)
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
                flavor = nominated.pop(demand.key, None)
                later = None
                if (
                    preempting
                    and (self.snapshot.group(demand.cluster_queue), lane_key[1]) in preempting
                    and not demand.is_reservation
                ):  # it may only have fitted in what the victims left
                    later = "waits for the next cycle: preemptions are under way"
                elif (
                    flavor is not None
                    and holding.gpu_flavor != flavor
                    and not self.ledger.fits(
                        demand.cluster_queue, flavor, demand.gpu_resource, demand.gpus
                    )
                ):
                    later = f"waits for the next cycle: {flavor} was taken in this one"
                if later is not None:
                    self._undo(holding)
                    decision.waiting[demand.key] = later
                    decision.again = True
                    if strict:
                        blocked.add(demand.cluster_queue)
                    self._push_next(heap, lane_key, lane, index + 1, tried_preemption)
                    continue
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
                        self._hold(demand, decision)
                        decision.waiting[demand.key] = refusal.reason
                        if (
                            lane_key[2] is None
                            and demand.gpu_count
                            and demand.pods == 1
                            and not demand.more
                        ):
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
                decision.preemptors.add(demand.key)
                preempting.add((self.snapshot.group(demand.cluster_queue), lane_key[1]))
                decision.preempted.extend(victims)
                decision.admitted = [h for h in decision.admitted if h not in victims]
            if not demand.is_reservation:
                decision.admitted.append(holding)
            done.append(demand.key)
            lane.remove(demand.key)
            self._push_next(heap, lane_key, lane, index + 1, tried_preemption)
        for key in done:
            self.withdraw(key)
        self._end_holds(decision)
        waiting.tidy()
        decision.never = dict(self.never)
        return decision

    def _push_next(
        self, heap: Heap, lane_key: LaneKey, lane: Lane, start: int, tried: set[str]
    ) -> Demand | None:
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
            head: int | None = -1  # not looked for yet
            if queue_name not in tried:  # the first refused of a queue may preempt
                head = lane.next_live(start)
                if (
                    head is not None
                    and (index is None or head < index)
                    and not self.preemption_hopeless(lane.items[head])
                    and could_preempt(self._view, lane.items[head])
                ):
                    index = head
            if (
                queue_name in self._may_hold_queues
                and queue_name not in self._held_in
                and self._aside.get((queue_name, gpu_type), -1) != self.waiting.type_epoch[gpu_type]
            ):  # or hold capacity
                if head == -1:
                    head = lane.next_live(start)
                if (
                    head is not None
                    and (index is None or head < index)
                    and self.flavors.headroom(queue_name, gpu_type) < lane.items[head].gpus
                    and self.flavors.unreclaimable(lane.items[head]) is not None
                ):  # its quota is short, not only its nodes
                    index = head
        if index is None:
            return None
        demand = lane.items[index]
        heapq.heappush(
            heap,
            (self.rank(demand), demand.order, lane_key, index, self.ledger.version(queue_name)),
        )
        return demand
