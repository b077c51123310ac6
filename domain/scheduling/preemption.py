"""Preemption: which running workloads to evict so that a waiting one fits.

Within its ClusterQueue, a waiting workload may evict lower-priority ones (LowerPriority), or also
newer ones of equal priority (LowerOrNewerEqualPriority), per the queue's withinClusterQueue
policy. It may evict workloads of other queues of its cohort tree that are borrowing, of any
priority (Any) or lower (LowerPriority), per reclaimWithinCohort: when it has the advantage of
the hierarchy over them, or, if its queue uses less than its nominal quota, so long as it then
fits without borrowing. CRITICAL workloads, workloads not marked preemptible and reservations
are never evicted.

Kueue's hierarchical reclaim (pkg/scheduler/preemption/classical): the other queues' workloads
are found by walking up from the preemptor's queue, each cohort of its path in turn the root of
a subtree looked at (less the subtree looked at before it); below it, only cohorts and queues
that use more than their quota are looked into. The preemptor has the advantage over a
workload found below a cohort if its request fits its queue's nominal quota, or the subtree
quota of a cohort of its path below that one (what the cohorts on the way keep counted). A
workload of another queue may go only while its queue, and every cohort between it and the
lowest cohort it shares with the preemptor, use more than their quota. In a one-level cohort
this is: the preemptor fits its own nominal quota, and the other queue borrows.

Victims are taken as Kueue's classical preemption takes them (pkg/scheduler/preemption,
classicalPreemptions): other queues' workloads first (those the preemptor has the advantage over
before the others), then in `VictimOrder` (the lowest priority, then the most recently started)
until the waiting workload fits (its quota and, here, nodes for its pods), then each victim it
can do without is given back, newest choice first.

It reads the cluster through a `ClusterView` and tries admissions through `Trials` (the admission
cycle provides both), so it never imports the cycle.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from domain.model.quota import (
    CPU,
    MEMORY,
    BorrowWithinCohortPolicy,
    ClusterQueue,
    FungibilityPolicy,
    ReclaimWithinCohort,
    WithinClusterQueue,
)
from domain.scheduling.demand import Demand, Holding, Refusal
from domain.scheduling.fair_preemption import fair_targets
from domain.scheduling.nodes import NodeSlots
from domain.scheduling.ordering import VictimOrder
from domain.scheduling.quota_ledger import EPSILON, QuotaLedger
from domain.scheduling.shares import Shares


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
    """The queues anywhere below a cohort."""
    flavors_for: Callable[[str, Demand], tuple[str | None, ...]]
    hosts_for: Callable[[str, Demand], dict[str, NodeSlots]]
    max_free: Callable[[str | None], int]
    shares: Shares
    """Fair sharing's shares (`shares.enabled`: the cluster's Kueue shares by weight)."""


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
    ledger = cluster.ledger
    while_borrowing = preempts_while_borrowing(cluster, queue)
    if (
        demand.gpu_count
        and not while_borrowing
        and not ledger.nominal_holds(queue.name, demand.gpu_resource, demand.gpus)
        and not _may_reclaim_in_hierarchy(cluster, queue, demand)
    ):
        return False  # Kueue preempts only for a request within a flavor's nominal quota
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
    path = ledger.path(queue.name)
    if (
        demand.gpu_count
        and not while_borrowing
        and len(path) < 2
        and not ledger.under_nominal(queue.name, demand.gpu_resource)
    ):
        return False  # at or above its nominal quota it may only preempt within its queue
    resource = demand.gpu_resource
    for member in cluster.cohort_members(path[-1]):
        if member.name == queue.name or not cluster.holdings_of(member.name, kind):
            continue
        if any(
            flavor and ledger.borrowing(member.name, flavor, resource) > 0
            for flavor in cluster.flavors_for(member.name, demand)
        ):
            return True
    return False


def _may_reclaim_in_hierarchy(cluster: ClusterView, queue: ClusterQueue, demand: Demand) -> bool:
    """Would the demand borrow, in a flavor of its GPU type, only from a cohort below its root
    (Kueue's mayReclaimInHierarchy)?"""
    ledger = cluster.ledger
    if len(ledger.path(queue.name)) < 2:
        return False
    return any(
        flavor is not None
        and ledger.may_reclaim_in_hierarchy(queue.name, flavor, demand.gpu_resource, demand.gpus)
        for flavor in cluster.flavors_for(queue.name, demand)
    )


@dataclass(frozen=True)
class Reach:
    """Where another queue's workload sits in the preemptor's cohort tree."""

    level: int
    """The lowest cohort the two queues share: its place in the preemptor's path, from 1 (the
    preemptor's own cohort)."""
    below: tuple[str, ...]
    """The cohorts between the other queue and that cohort, which must use more than their
    quota for its workloads to go (Kueue's candidateIsValid)."""


def reach(ledger: QuotaLedger, queue: str, other: str) -> Reach | None:
    """Where `other` sits in `queue`'s cohort tree (None: not in it)."""
    path = ledger.path(queue)
    below: list[str] = []
    for cohort in ledger.path(other):
        if cohort in path:
            return Reach(path.index(cohort) + 1, tuple(below))
        below.append(cohort)
    return None


def fit_level(
    ledger: QuotaLedger, queue: ClusterQueue, demand: Demand, flavor: str | None
) -> float:
    """The lowest node of the queue's path whose quota holds the demand in `flavor`: 0 its own
    nominal quota, i its i-th cohort (inf: none). The preemptor has the advantage of the
    hierarchy over workloads found below a cohort of its path higher than that (Kueue's
    hasHierarchicalAdvantage, QuantitiesFitInQuota up collectCandidatesForHierarchicalReclaim's
    walk)."""
    if flavor is None:
        return 0
    resource = demand.gpu_resource
    quota = ledger.quota(queue.name, flavor, resource)
    nominal = quota.nominal_quota if quota is not None else 0.0
    if ledger.usage[(queue.name, flavor, resource)] + demand.gpus <= nominal + EPSILON:
        return 0
    if len(ledger.path(queue.name)) < 2:
        return float("inf")  # in a one-level cohort, only its own quota gives the advantage
    level = ledger.fit_level(queue.name, flavor, resource, demand.gpus)
    return float("inf") if level is None else level


def above_nominal(
    ledger: QuotaLedger, other: str, below: tuple[str, ...], flavor: str, resource: str
) -> bool:
    """Does the other queue borrow in `flavor`, and every cohort of `below` use more than its
    quota (Kueue's candidateIsValid)?"""
    return ledger.borrowing(other, flavor, resource) > 0 and all(
        ledger.cohort_borrowing(cohort, flavor, resource) for cohort in below
    )


def borrows_within_cohort(queue: ClusterQueue) -> bool:
    """May a workload of `queue` that must borrow preempt in other queues of its cohort
    (borrowWithinCohort, Kueue's IsBorrowingWithinCohortForbidden negated)?"""
    return queue.preemption.borrow_within_cohort.policy is not BorrowWithinCohortPolicy.NEVER


def preempts_while_borrowing(cluster: ClusterView, queue: ClusterQueue) -> bool:
    """May a workload of `queue` preempt for a request beyond its nominal quota (Kueue's
    canPreemptWhileBorrowing): by borrowWithinCohort, or with fair sharing whenever it may
    reclaim (fair sharing ignores borrowWithinCohort)."""
    if cluster.shares.enabled:
        return (
            queue.cohort is not None
            and queue.preemption.reclaim_within_cohort is not ReclaimWithinCohort.NEVER
        )
    return borrows_within_cohort(queue)


def victim_test(
    cluster: ClusterView, queue: ClusterQueue, demand: Demand
) -> Callable[[Holding], bool]:
    """Whether `demand` (of `queue`) may evict a holding, by the queue's preemption policies
    (Kueue's classifyPreemptionVariant): in its own queue by withinClusterQueue; in another
    queue of its cohort tree by reclaimWithinCohort, and only while that queue, and the
    cohorts between it and the lowest one it shares with `queue`, use more than their quota in
    the holding's flavor (Kueue collects candidates only from subtrees above their quota).
    Each other queue's borrowing is worked out once per flavor."""
    within = queue.preemption.within_cluster_queue
    reclaim = queue.preemption.reclaim_within_cohort
    borrowing: dict[tuple[str, str], bool] = {}
    reaches: dict[str, Reach | None] = {}

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
        name = other.cluster_queue
        if name in reaches:
            where = reaches[name]
        else:
            where = reaches[name] = (
                reach(cluster.ledger, queue.name, name) if name in cluster.queues else None
            )
        if where is None:
            return False
        flavor = victim.gpu_flavor
        if flavor is None:
            return False
        key = (name, flavor)
        lends = borrowing.get(key)
        if lends is None:
            lends = borrowing[key] = above_nominal(
                cluster.ledger, name, where.below, flavor, other.gpu_resource
            )
        if not lends:
            return False
        return reclaim is ReclaimWithinCohort.ANY or other.priority < demand.priority

    return may_preempt


def preemptable_in(cluster: ClusterView, demand: Demand, flavor: str) -> bool:
    """Whether some workload holding `flavor` may be preempted for `demand`, whose request that
    flavor's nominal quota could hold (or a cohort below its root, or whose queue may preempt
    while borrowing): where Kueue's flavor assigner finds a Preempt mode rather than no
    candidates."""
    queue = cluster.queues.get(demand.cluster_queue)
    if queue is None or demand.is_reservation or demand.reservation is not None:
        return False
    ledger = cluster.ledger
    quota = ledger.quota(queue.name, flavor, demand.gpu_resource)
    if (
        not preempts_while_borrowing(cluster, queue)
        and (quota is None or quota.nominal_quota < demand.gpus)
        and not ledger.may_reclaim_in_hierarchy(
            queue.name, flavor, demand.gpu_resource, demand.gpus
        )
    ):
        return False
    may_preempt = victim_test(cluster, queue, demand)
    return any(
        flavor in h.gpu_flavors and may_preempt(h) for h in _eligible(cluster, queue, demand)
    )


def try_preempt(
    cluster: ClusterView, trials: Trials, demand: Demand, now: datetime
) -> tuple[Holding, list[Holding]] | None:
    """Evict a minimal set of the least important workloads that lets `demand` in (Kueue's
    classicalPreemptions); None if none does.

    Candidates are taken in order (other queues' first, those the demand has the advantage of
    the hierarchy over before the others, then `VictimOrder`) until the demand fits, then each
    but the last is given back, newest choice first, if the demand still fits without it
    (Kueue's fillBackWorkloads). A candidate of another queue counts only while that queue (and
    the cohorts between it and the demand's queue) still borrows. Up to two attempts, in Kueue's
    order: one where the demand may borrow once admitted, where another queue's workloads may go
    only if the demand has the advantage of the hierarchy over them (Kueue's hierarchical
    reclaim); and one where it must fit within its nominal quota, where they may go whenever its
    queue uses less than its nominal quota (reclaiming without borrowing)."""
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
    if demand.gpu_count and not _could_hold(
        cluster, demand, cluster.hosts_for(queue.name, demand), evictable
    ):
        return None  # the nodes could not hold it even with every candidate gone
    candidates.sort(
        key=lambda h: VictimOrder(
            h.demand.cluster_queue == queue.name,
            h.demand.priority,
            -h.since.timestamp(),
            h.demand.key,
        )
    )
    by_flavor: dict[str | None, list[Holding]] = {}
    for holding in candidates:
        for held in holding.gpu_flavors if demand.gpu_count else (None,):
            by_flavor.setdefault(held, []).append(holding)
    fungibility = queue.flavor_fungibility.when_can_preempt
    best: tuple[tuple[bool, bool, int], list[Holding]] | None = None
    for index, flavor in enumerate(cluster.flavors_for(queue.name, demand)):
        in_flavor = by_flavor.get(flavor)
        if not in_flavor:
            continue  # no candidates: Kueue tries the next flavor
        if demand.more:
            # several pod sets may each need room in a flavor of their own (Kueue's targets
            # span every flavor-resource the assignment preempts in): the candidates of all
            # flavors, in one search, anchored at the first flavor that has any
            in_flavor = candidates
        if cluster.shares.enabled:
            found = fair_targets(
                cluster.shares,
                demand,
                flavor,
                in_flavor,
                trials.release,
                trials.hold,
                lambda: _fits(cluster, trials, demand, True, now),
            )
        else:
            found = _targets(cluster, trials, queue, demand, flavor, in_flavor, now)
        if found is None:
            if demand.more:
                break  # all flavors' candidates were looked at
            continue
        victims, borrows = found
        reclaim = all(v.demand.cluster_queue != queue.name for v in victims)
        rank = (not reclaim, borrows, index)
        if best is None or rank < best[0]:
            best = (rank, victims)
        if fungibility is FungibilityPolicy.MAY_STOP_SEARCH or demand.more:
            break
    if best is None:
        return None
    victims = best[1]
    for victim in victims:
        trials.release(victim.demand.key)
    return trials.try_admit(demand, now), victims


def _targets(
    cluster: ClusterView,
    trials: Trials,
    queue: ClusterQueue,
    demand: Demand,
    flavor: str | None,
    candidates: list[Holding],
    now: datetime,
) -> tuple[list[Holding], bool] | None:
    """The victims in one flavor (Kueue's getTargets for the flavor-resources that need
    preemption) and whether the demand then borrows; None if no victims let it in."""
    resource = demand.gpu_resource
    ledger = cluster.ledger
    from_others = candidates[0].demand.cluster_queue != queue.name
    quota = ledger.quota(queue.name, flavor, resource) if flavor is not None else None
    nominal = quota.nominal_quota if quota is not None else 0.0
    used = ledger.usage[(queue.name, flavor, resource)] if flavor is not None else 0.0
    under_nominal = flavor is None or used < nominal - EPSILON
    forbidden = not borrows_within_cohort(queue)
    threshold = queue.preemption.borrow_within_cohort.max_priority_threshold
    fits_at = fit_level(ledger, queue, demand, flavor)
    if fits_at == 0 and not _cpu_within_nominal(ledger, queue.name, demand):
        fits_at = float("inf")  # it would borrow cores or memory: no advantage (GPUs decide
        # the levels above: a tree's cores and memory are not looked at)
    below: dict[str, tuple[str, ...]] = {}
    """Per other queue of a candidate: the cohorts between it and the demand's queue
    (`Reach`)."""
    advantage: set[str] = set()
    """The other queues the demand has the advantage of the hierarchy over (Kueue's
    hasHierarchicalAdvantage): their workloads may go even if it then borrows."""
    for holding in candidates:
        name = holding.demand.cluster_queue
        if name != queue.name and name not in below:
            where = reach(ledger, queue.name, name)
            assert where is not None  # victim_test accepts only queues of the tree
            below[name] = where.below
            if fits_at < where.level:
                advantage.add(name)
    if advantage and len(advantage) < len(below):  # Kueue: hierarchy candidates first
        candidates = sorted(
            candidates,
            key=lambda h: (
                h.demand.cluster_queue == queue.name,
                h.demand.cluster_queue not in advantage,
            ),
        )

    def while_borrowing(victim: Holding) -> bool:
        """May go even if the demand then borrows (Kueue's preemption variants)."""
        if victim.demand.cluster_queue in advantage:
            return True  # hierarchical reclaim
        priority = victim.demand.priority
        return (
            not forbidden
            and priority < demand.priority
            and (threshold is None or priority <= threshold)
        )  # reclaim while borrowing, under borrowWithinCohort's threshold

    attempts: tuple[bool, ...]
    if not from_others or (forbidden and not under_nominal):
        attempts = (True,)
    elif forbidden and not advantage:
        attempts = (False, True)
    else:
        attempts = (True, False)
    for borrow in attempts:
        found = _minimal(cluster, trials, demand, candidates, borrow, while_borrowing, below, now)
        if found is not None:
            return found
    return None


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


def _minimal(
    cluster: ClusterView,
    trials: Trials,
    demand: Demand,
    candidates: list[Holding],
    borrow: bool,
    while_borrowing: Callable[[Holding], bool],
    below: Mapping[str, tuple[str, ...]],
    now: datetime,
) -> tuple[list[Holding], bool] | None:
    """One attempt: release candidates in order until `demand` fits, then give back those it
    can do without; undo it all and say who had to go and whether the demand then borrows
    (None: even all of them do not make room). `below`: per other queue, the cohorts between it
    and the demand's, which must still use more than their quota for its workloads to go."""
    queue = demand.cluster_queue
    ledger = cluster.ledger
    released: list[Holding] = []
    try:
        for holding in candidates:
            other = holding.demand
            if other.cluster_queue != queue:
                if borrow and not while_borrowing(holding):
                    continue  # only to let the demand in without borrowing
                if not any(
                    above_nominal(
                        ledger,
                        other.cluster_queue,
                        below[other.cluster_queue],
                        flavor,
                        other.gpu_resource,
                    )
                    for flavor in holding.gpu_flavors
                ):
                    continue  # its queue (or a cohort on the way) no longer borrows
            trials.release(other.key)
            released.append(holding)
            if _fits(cluster, trials, demand, borrow, now) is not None:
                needed = list(released)
                for victim in reversed(released[:-1]):
                    trials.hold(victim.demand, victim)
                    if _fits(cluster, trials, demand, borrow, now) is not None:
                        needed.remove(victim)
                    else:
                        trials.release(victim.demand.key)
                released = needed
                return list(needed), bool(_fits(cluster, trials, demand, borrow, now))
        return None
    finally:
        for holding in reversed(released):
            trials.hold(holding.demand, holding)


def _fits(
    cluster: ClusterView, trials: Trials, demand: Demand, borrow: bool, now: datetime
) -> bool | None:
    """Whether `demand` is admitted now (without borrowing, unless `borrow`): None if not, else
    whether it borrows. The cluster is left as it was."""
    if demand.pods == 1 and demand.gpu_count > cluster.max_free(demand.gpu_type):
        return None  # no node has room: the attempt would only refuse
    try:
        trial = trials.try_admit(demand, now)
    except Refusal:
        return None
    try:
        ledger, queue = cluster.ledger, demand.cluster_queue
        borrows = any(
            (
                part.gpu_flavor is not None
                and ledger.borrowing(queue, part.gpu_flavor, demand.gpu_resource) > 0
            )
            or (
                part.cpu_flavor is not None
                and (
                    ledger.borrowing(queue, part.cpu_flavor, CPU) > 0
                    or ledger.borrowing(queue, part.cpu_flavor, MEMORY) > 0
                )
            )
            for part in trial.pod_sets
        )
        return None if borrows and not borrow else borrows
    finally:
        trials.release(trial.demand.key)


def _cpu_within_nominal(ledger: QuotaLedger, queue: str, demand: Demand) -> bool:
    """Would the demand's cores and memory fit its queue's nominal quota, in the CPU flavor it
    would take (the first with room for both, else the first)?"""
    flavors = ledger.flavors(queue, CPU)
    if not flavors:
        return True
    cpu, memory = demand.cpu * demand.pods, demand.memory * demand.pods
    chosen = next(
        (
            f
            for f in flavors
            if ledger.fits(queue, f, CPU, cpu) and ledger.fits(queue, f, MEMORY, memory)
        ),
        flavors[0],
    )
    return not ledger.borrowing_with(queue, chosen, CPU, cpu) and not ledger.borrowing_with(
        queue, chosen, MEMORY, memory
    )


def _eligible(cluster: ClusterView, queue: ClusterQueue, demand: Demand) -> Iterable[Holding]:
    """The preemptible holdings `victim_test` may accept: of the demand's GPU type, in its own
    queue (if its within-queue policy allows any) and in the other queues of its cohort tree
    (if it may reclaim); the rest of the cluster's holdings are never looked at."""
    if not demand.gpu_count:
        yield from cluster.holders(None)
        return
    kind = demand.gpu_type
    if queue.preemption.within_cluster_queue is not WithinClusterQueue.NEVER:
        yield from cluster.holdings_of(queue.name, kind)
    if queue.cohort is None or queue.preemption.reclaim_within_cohort is ReclaimWithinCohort.NEVER:
        return
    root = cluster.ledger.root(queue.name)
    for member in cluster.cohort_members(root or queue.cohort):
        if member.name != queue.name:
            yield from cluster.holdings_of(member.name, kind)
