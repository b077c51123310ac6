"""Preemption: which running workloads to evict so that a waiting one fits.

Within its ClusterQueue, a waiting workload may evict lower-priority ones (LowerPriority), or also
newer ones of equal priority (LowerOrNewerEqualPriority), per the queue's withinClusterQueue
policy. To win back its own nominal quota it may evict workloads of other queues of its cohort
that are borrowing, of any priority (Any) or lower (LowerPriority), per reclaimWithinCohort.
CRITICAL workloads, workloads not marked preemptible and reservations are never evicted.

Victims are chosen preferring borrowers of other queues, then the lowest priority, then the most
recently started; for each node that could host the waiting workload the victims on it are taken
in that order until its GPUs are free, then others until the quota allows; the plan with the
fewest victims wins. A pod set (several pods) takes candidates in that order until all its pods
fit, then gives back, newest choice first, each victim it can do without (as Kueue minimises
its preemptions).

It reads the cluster through a `ClusterView` and tries admissions through `Trials` (the admission
cycle provides both), so it never imports the cycle.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from domain.model.quota import ClusterQueue, ReclaimWithinCohort, WithinClusterQueue
from domain.scheduling.demand import Demand, Holding, Refusal
from domain.scheduling.nodes import NodeSlots
from domain.scheduling.ordering import VictimOrder
from domain.scheduling.quota_ledger import QuotaLedger


@dataclass(frozen=True)
class ClusterView:
    """What preemption reads of the cluster."""

    queues: Mapping[str, ClusterQueue]
    ledger: QuotaLedger
    holdings_of: Callable[[str, str | None], Iterable[Holding]]
    """A queue's preemptible holdings of a GPU type."""
    holders: Callable[[str | None], Iterable[Holding]]
    """Preemptible holdings of a GPU type (any, for CPU work)."""
    weakest: Callable[[str, str | None], int | None]
    """The lowest priority among a queue's preemptible holdings of a GPU type."""
    cohort_members: Callable[[str], tuple[ClusterQueue, ...]]
    flavors_for: Callable[[str, Demand], tuple[str | None, ...]]
    hosts_for: Callable[[str, Demand], dict[str, NodeSlots]]
    max_free: Callable[[str | None], int]


class Trials(Protocol):
    """The admissions preemption tries: each is undone unless it is the one chosen."""

    def release(self, key: str) -> Holding | None: ...

    def hold(self, demand: Demand, holding: Holding) -> None: ...

    def try_admit(self, demand: Demand, now: datetime) -> Holding:
        """Admit now or raise Refusal."""
        ...


def could_preempt(cluster: ClusterView, demand: Demand) -> bool:
    """A cheap test: could any preemption policy of the demand's queue find a victim?"""
    queue = cluster.queues.get(demand.cluster_queue)
    if queue is None or demand.is_reservation or demand.reservation is not None:
        return False
    kind = demand.gpu_type if demand.gpu_count else None
    within = queue.preemption.within_cluster_queue
    if within is not WithinClusterQueue.NEVER:
        weakest = cluster.weakest(queue.name, kind)
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
    if demand.gpu_count and not cluster.ledger.within_nominal(
        queue, demand.gpu_resource, demand.gpus
    ):
        return False
    resource = demand.gpu_resource
    for member in cluster.cohort_members(queue.cohort):
        if member.name == queue.name or not cluster.holdings_of(member.name, kind):
            continue
        if any(
            flavor and cluster.ledger.borrowing(member.name, flavor, resource) > 0
            for flavor in cluster.flavors_for(member.name, demand)
        ):
            return True
    return False


def victim_test(
    cluster: ClusterView, queue: ClusterQueue, demand: Demand
) -> Callable[[Holding], bool]:
    """Whether `demand` (of `queue`) may evict a holding, by the queue's preemption policies.
    What does not depend on the victim (the policies, whether the demand is within its nominal
    quota) is worked out once, and each other queue's borrowing once per flavor."""
    within = queue.preemption.within_cluster_queue
    reclaim = queue.preemption.reclaim_within_cohort
    nominal: list[bool] = []
    borrowing: dict[tuple[str, str], bool] = {}

    def within_nominal() -> bool:
        if not nominal:
            nominal.append(cluster.ledger.within_nominal(queue, demand.gpu_resource, demand.gpus))
        return nominal[0]

    def may_preempt(victim: Holding) -> bool:
        other = victim.demand
        if other.critical or not other.preemptible or other.is_reservation or other.reservation:
            return False
        if other.cluster_queue == queue.name:
            if within is WithinClusterQueue.LOWER_PRIORITY:
                return other.priority < demand.priority
            if within is WithinClusterQueue.LOWER_OR_NEWER_EQUAL_PRIORITY:
                return other.priority < demand.priority or (
                    other.priority == demand.priority and other.created_at > demand.created_at
                )
            return False
        if queue.cohort is None or reclaim is ReclaimWithinCohort.NEVER:
            return False
        victim_queue = cluster.queues.get(other.cluster_queue)
        if victim_queue is None or victim_queue.cohort != queue.cohort or not within_nominal():
            return False
        flavor = victim.gpu_flavor
        if flavor is None:
            return False
        key = (other.cluster_queue, flavor)
        lends = borrowing.get(key)
        if lends is None:
            lends = borrowing[key] = (
                cluster.ledger.borrowing(other.cluster_queue, flavor, other.gpu_resource) > 0
            )
        if not lends:
            return False
        return reclaim is ReclaimWithinCohort.ANY or other.priority < demand.priority

    return may_preempt


def try_preempt(
    cluster: ClusterView, trials: Trials, demand: Demand, now: datetime
) -> tuple[Holding, list[Holding]] | None:
    """Evict the fewest, least important workloads that let `demand` in; None if none do."""
    queue = cluster.queues.get(demand.cluster_queue)
    if queue is None or demand.is_reservation or demand.reservation is not None:
        return None
    may_preempt = victim_test(cluster, queue, demand)
    candidates: list[Holding] = []
    evictable: dict[str, int] = {}
    for holding in _eligible(cluster, queue, demand):
        if may_preempt(holding):
            candidates.append(holding)
            for p in holding.placements:
                evictable[p.node] = evictable.get(p.node, 0) + len(p.gpu_indices)
    if not candidates:
        return None
    hosts = cluster.hosts_for(queue.name, demand)
    if demand.gpu_count and not _could_hold(cluster, demand, hosts, evictable):
        return None  # the nodes could not hold it even with every candidate gone
    candidates.sort(
        key=lambda h: VictimOrder(
            h.demand.cluster_queue == queue.name,
            h.demand.priority,
            -h.since.timestamp(),
            h.demand.key,
        )
    )
    plans: list[list[Holding]] = []
    if demand.gpu_count and demand.pods == 1:
        by_node: dict[str, list[tuple[Holding, int]]] = {}
        for holding in candidates:
            for p in holding.placements:
                by_node.setdefault(p.node, []).append((holding, len(p.gpu_indices)))
        for name, node in hosts.items():
            on_node = by_node.get(name, [])
            if len(node.free) + sum(gpus for _, gpus in on_node) < demand.gpu_count:
                continue
            plan: list[Holding] = []
            free = len(node.free)
            for holding, gpus in on_node:
                if free >= demand.gpu_count:
                    break
                plan.append(holding)
                free += gpus
            plans.append(plan)
    else:
        plans.append([])
    best: list[Holding] | None = None
    for plan in sorted(plans, key=len):
        if best is not None and len(plan) >= len(best):
            break
        victims = _complete(trials, demand, plan, candidates, now)
        if victims is not None and (best is None or len(victims) < len(best)):
            best = victims
    if best is None:
        return None
    if demand.pods > 1:
        best = _fewest(trials, demand, best, now)
    for victim in best:
        trials.release(victim.demand.key)
    return trials.try_admit(demand, now), best


def _could_hold(
    cluster: ClusterView, demand: Demand, hosts: dict[str, NodeSlots], evictable: dict[str, int]
) -> bool:
    """Whether the demand's pods could find nodes if every candidate were gone."""
    if demand.pods == 1:
        return cluster.max_free(demand.gpu_type) >= demand.gpu_count or any(
            name in hosts and len(hosts[name].free) + count >= demand.gpu_count
            for name, count in evictable.items()
        )
    room = sum(
        (len(node.free) + evictable.get(name, 0)) // demand.gpu_count
        for name, node in hosts.items()
    )
    return room >= demand.pods


def _fewest(trials: Trials, demand: Demand, victims: list[Holding], now: datetime) -> list[Holding]:
    """`victims` without those the demand can do without: each, newest choice first, is kept if
    the demand is still admitted with the others gone."""
    needed = list(victims)
    for victim in reversed(victims):
        others = [v for v in needed if v is not victim]
        if _admitted_without(trials, demand, others, now):
            needed = others
    return needed


def _admitted_without(trials: Trials, demand: Demand, gone: list[Holding], now: datetime) -> bool:
    """Whether `demand` is admitted once `gone` are released; the cluster is left as it was."""
    released: list[Holding] = []
    try:
        for holding in gone:
            trials.release(holding.demand.key)
            released.append(holding)
        try:
            trial = trials.try_admit(demand, now)
        except Refusal:
            return False
        trials.release(trial.demand.key)
        return True
    finally:
        for holding in reversed(released):
            trials.hold(holding.demand, holding)


def _eligible(cluster: ClusterView, queue: ClusterQueue, demand: Demand) -> Iterable[Holding]:
    """The preemptible holdings `victim_test` may accept: of the demand's GPU type, in its own
    queue (if its within-queue policy allows any) and in the other queues of its cohort (if it
    may reclaim); the rest of the cluster's holdings are never looked at."""
    if not demand.gpu_count:
        yield from cluster.holders(None)
        return
    kind = demand.gpu_type
    if queue.preemption.within_cluster_queue is not WithinClusterQueue.NEVER:
        yield from cluster.holdings_of(queue.name, kind)
    if queue.cohort is None or queue.preemption.reclaim_within_cohort is ReclaimWithinCohort.NEVER:
        return
    for member in cluster.cohort_members(queue.cohort):
        if member.name != queue.name:
            yield from cluster.holdings_of(member.name, kind)


def _complete(
    trials: Trials,
    demand: Demand,
    plan: list[Holding],
    candidates: list[Holding],
    now: datetime,
) -> list[Holding] | None:
    """Release `plan`, then more candidates until `demand` is admitted; undo it all and say who
    had to go (None if even all of them do not make room)."""
    released: list[Holding] = []
    extra = (h for h in candidates if h not in plan)
    try:
        for holding in plan:
            trials.release(holding.demand.key)
            released.append(holding)
        while True:
            try:
                trial = trials.try_admit(demand, now)
            except Refusal:
                nxt = next(extra, None)
                if nxt is None:
                    return None
                trials.release(nxt.demand.key)
                released.append(nxt)
                continue
            trials.release(trial.demand.key)
            return list(released)
    finally:
        for holding in reversed(released):
            trials.hold(holding.demand, holding)
