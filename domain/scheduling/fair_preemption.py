"""Preemption with fair sharing on (Kueue's fairPreemptions, pkg/scheduler/preemption, with its
default strategies LessThanOrEqualToFinalShare then LessThanInitialShare and its default feature
gates, FairSharingPreemptWithinNominal on).

The candidates (in `VictimOrder`) are grouped by queue. Queues are taken highest share first
(`shares`), those that borrow nothing left out except the preemptor's own. From its own queue, or
while the preemptor's queue stays within its nominal quota with the workload admitted, the next
candidate simply goes. From another queue, a candidate goes only if the preemptor's queue, with
the workload, would then not have a larger share than that queue has without the candidate
(first strategy); those refused are tried again, one per queue, if the preemptor's share would be
smaller than that queue's share now (second strategy). It stops as soon as the workload fits,
and then gives back, newest choice first, each victim it can do without.

It is told how to release, hold back and try the workload by the caller (`preemption`), and reads
shares only: it never imports the cycle nor classical preemption.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from domain.scheduling.demand import Demand, Holding
from domain.scheduling.shares import FlavorResource, Shares

Fits = Callable[[], "bool | None"]
"""Whether the workload is admitted now: None if not, else whether it borrows."""


def fair_targets(
    shares: Shares,
    demand: Demand,
    flavor: str | None,
    candidates: list[Holding],
    release: Callable[[str], object],
    hold: Callable[[Demand, Holding], None],
    fits: Fits,
) -> tuple[list[Holding], bool] | None:
    """The victims in `flavor` that let `demand` in, and whether it then borrows; None if no
    victims do. The cluster is left as it was."""
    own = demand.cluster_queue
    added: dict[FlavorResource, float] = {}
    if flavor is not None and demand.gpu_count:
        added[(flavor, demand.gpu_resource)] = float(demand.all_gpus)
    within_nominal = not (set(added) & shares.of(own, added).borrowed)
    """Its queue, with it, borrows nothing where it needs preemption (Kueue's
    queueWithinNominalInResourcesNeedingPreemption)."""
    released: list[Holding] = []

    def take(victim: Holding) -> bool:
        release(victim.demand.key)
        released.append(victim)
        return fits() is not None

    def finish() -> tuple[list[Holding], bool]:
        needed = list(released)
        for victim in reversed(released[:-1]):
            hold(victim.demand, victim)
            if fits() is not None:
                needed.remove(victim)
            else:
                release(victim.demand.key)
        released[:] = needed
        return list(needed), bool(fits())

    rank = {holding.demand.key: i for i, holding in enumerate(candidates)}
    try:
        by_queue: dict[str, list[Holding]] = {}
        for holding in candidates:
            by_queue.setdefault(holding.demand.cluster_queue, []).append(holding)
        retry: list[Holding] = []
        pruned: set[str] = set()
        while (target := _next_target(shares, own, by_queue, pruned, rank)) is not None:
            waiting = by_queue[target]
            if target == own or within_nominal:
                if take(waiting.pop(0)):
                    return finish()
                continue
            preemptor_new = shares.of(own, added)
            target_old = shares.of(target)
            if preemptor_new.key[0] and not target_old.key[0]:
                retry.extend(waiting)  # no candidate of it can pass
                waiting.clear()
                continue
            while waiting:
                victim = waiting.pop(0)
                target_new = shares.of(target, _usage(victim, -1))
                if preemptor_new.key <= target_new.key:  # LessThanOrEqualToFinalShare
                    if take(victim):
                        return finish()
                    break
                retry.append(victim)
        by_queue = {}
        for holding in retry:
            by_queue.setdefault(holding.demand.cluster_queue, []).append(holding)
        pruned = set()
        while (target := _next_target(shares, own, by_queue, pruned, rank)) is not None:
            victim = by_queue[target].pop(0)
            if shares.of(own, added).key < shares.of(target).key and take(victim):
                return finish()  # LessThanInitialShare
            pruned.add(target)  # one try per queue
        return None
    finally:
        for holding in reversed(released):
            hold(holding.demand, holding)


def _next_target(
    shares: Shares,
    own: str,
    by_queue: Mapping[str, list[Holding]],
    pruned: set[str],
    rank: Mapping[str, int],
) -> str | None:
    """The queue of highest share that still has candidates (Kueue's nextTarget, for a flat
    cohort): queues that borrow nothing are left out, except the preemptor's own; ties go to
    the queue whose next candidate comes first (`rank`: the candidates' order)."""
    best: tuple[tuple[bool, float], int, str] | None = None
    for queue, waiting in by_queue.items():
        if queue in pruned:
            continue
        share = shares.of(queue)
        if not waiting or (not share.borrowing and queue != own):
            pruned.add(queue)
            continue
        first = rank[waiting[0].demand.key]
        if best is None or share.key > best[0] or (share.key == best[0] and first < best[1]):
            best = (share.key, first, queue)
    return None if best is None else best[2]


def _usage(holding: Holding, sign: int) -> dict[FlavorResource, float]:
    """What a holding uses of its queue's quota, signed."""
    usage: dict[FlavorResource, float] = {}
    for part in holding.pod_sets:
        demand = part.demand
        if part.gpu_flavor is not None and demand.gpu_count:
            key = (part.gpu_flavor, demand.gpu_resource)
            usage[key] = usage.get(key, 0.0) + sign * float(demand.gpus)
    return usage
