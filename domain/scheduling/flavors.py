"""Flavor assignment: which flavor, and which nodes, a demand would be admitted on now (Kueue's
flavor assigner), and whether it can ever be.

The queue's flavors are tried in its order, those whose nodes have the demand's GPU type: the
first where the queue has quota for the whole pod set (within its nominal quota or by borrowing,
`quota_ledger`), CPU and memory quota in one of the queue's CPU flavors (tried in its order, as
Kueue assigns each resource group its own flavor), and a node for each pod gives the
assignment. Nothing is taken or charged: `assign` returns an `Assignment`, or a `NoFit` that
says why there is none. A flavor whose nodes, all empty, could not hold the pods, or whose
quota (with all the cohort can lend) is smaller, never can.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from domain.model.quota import (
    CPU,
    MEMORY,
    FlavorFungibility,
    FungibilityPolicy,
    QuotaSet,
    gpu_resource,
)
from domain.scheduling.demand import Demand, ask
from domain.scheduling.nodes import Nodes, NodeSlots
from domain.scheduling.quota_ledger import EPSILON, QuotaLedger


@dataclass(frozen=True)
class Assignment:
    """Where a demand would be admitted now: its flavors and a node for each pod."""

    gpu_flavor: str | None
    cpu_flavor: str | None
    nodes: list[NodeSlots]


@dataclass(frozen=True)
class NoFit:
    """Why no flavor has room for a demand now (`never`: nor ever will, as configured;
    `cpu_bound`: a flavor had the GPU quota but not the CPU or memory quota)."""

    reason: str
    never: bool = False
    cpu_bound: bool = False


class FlavorAssigner:
    """Flavor order, quota and node fit for one cluster's queues."""

    def __init__(self, quotas: QuotaSet, ledger: QuotaLedger, nodes: Nodes) -> None:
        self.queues = {q.name: q for q in quotas.cluster_queues}
        self.ledger = ledger
        self.nodes = nodes
        self._all_flavors = tuple(f.name for f in quotas.flavors)
        self._type_flavors: dict[tuple[str, str | None], tuple[str | None, ...]] = {}
        self._hosts: dict[tuple[str, str | None], dict[str, NodeSlots]] = {}
        self._cpu_flavors: dict[str, tuple[str | None, ...]] = {
            q.name: ledger.flavors(q.name, CPU) or (None,) for q in quotas.cluster_queues
        }
        self._headrooms: dict[tuple[str, str], tuple[int, float]] = {}
        self._top = {
            q.name: ledger.cohort_height(root)
            for q in quotas.cluster_queues
            if (root := ledger.root(q.name)) is not None
        }
        self._root_level = {
            name: top for name, top in self._top.items() if len(ledger.path(name)) == 1
        }
        self._fungibility = {
            q.name: q.flavor_fungibility
            for q in quotas.cluster_queues
            if q.flavor_fungibility != FlavorFungibility()
        }
        """Queues whose flavorFungibility is not Kueue's default (the search `assign` makes)."""
        self.preemptable: Callable[[Demand, str], bool] = lambda demand, flavor: False
        """Whether some workload in `flavor` may be preempted for `demand` (the cycle sets it:
        preemption sits above flavor assignment)."""
        self._rooms_cache: dict[
            tuple[str, str | None], tuple[int, tuple[tuple[str, float, float], ...]]
        ] = {}

    def flavors_for(self, queue: str, demand: Demand) -> tuple[str | None, ...]:
        """The flavors, in the queue's order, whose nodes have the demand's GPU type: none if no
        resource group of the queue covers its GPUs (Kueue admits no workload that asks a
        resource its ClusterQueue does not list)."""
        if demand.gpu_count == 0:
            return (None,)
        found = self._type_flavors.get((queue, demand.gpu_type))
        if found is None:
            found = self._flavors_of_type(queue, demand.gpu_type, demand.gpu_resource)
        return found

    def _flavors_of_type(
        self, queue: str, gpu_type: str | None, resource: str
    ) -> tuple[str | None, ...]:
        key = (queue, gpu_type)
        found = self._type_flavors.get(key)
        if found is None:
            listed = self.ledger.flavors(queue, resource)
            found = tuple(f for f in listed if (gpu_type, f) in self.nodes.by_type_flavor)
            self._type_flavors[key] = found
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
                for n in self.nodes.by_type_flavor.get((demand.gpu_type, flavor), [])
            }
        return found

    def headroom(self, queue: str, gpu_type: str) -> float:
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
        flavors = self._type_flavors.get((queue, gpu_type))
        if flavors is None:
            flavors = self._flavors_of_type(queue, gpu_type, resource)
        for flavor in flavors:
            if flavor is not None:
                best = max(best, self.ledger.headroom(queue, flavor, resource))
        self._headrooms[(queue, gpu_type)] = (version, best)
        return best

    def top_level(self, queue: str) -> int:
        """The most `borrows` can say of the queue's demands: its root cohort's height (0
        without a cohort)."""
        return self._top.get(queue, 0)

    def borrows(self, demand: Demand) -> int:
        """How far beyond its queue's nominal quota the demand would be admitted (Kueue's
        Assignment.Borrows, the height of the lowest subtree of its cohort tree that holds it:
        0 within its nominal quota; 1 borrowing from a one-level cohort): in the first of its
        flavors whose quota has room for it now, or, if none has, in its first flavor (where it
        would preempt). Only a queue in a cohort can borrow; only GPUs are looked at. The room
        of each flavor is kept until the cohort tree's usage changes."""
        queue = demand.cluster_queue
        if (
            not demand.gpu_count
            or demand.is_reservation
            or demand.reservation is not None
            or self.ledger.cohort(queue) is None
        ):
            return 0
        gpus = demand.gpus
        rooms = self._rooms(queue, demand)
        for flavor, room, nominal_room in rooms:
            if gpus <= room + EPSILON:
                return self._level(queue, flavor, demand) if gpus > nominal_room + EPSILON else 0
        # no flavor has room: it would be admitted after preemptions, in its first flavor
        if rooms and gpus > rooms[0][2] + EPSILON:
            return self._level(queue, rooms[0][0], demand)
        return 0

    def _level(self, queue: str, flavor: str, demand: Demand) -> int:
        """The borrowing level of a demand that borrows in `flavor`: its root's height, for a
        queue directly under its root."""
        level = self._root_level.get(queue)
        if level is not None:
            return level
        return self.ledger.borrowing_level(queue, flavor, demand.gpu_resource, demand.gpus) or 1

    def landing(self, demand: Demand) -> str | None:
        """The GPU flavor the demand would be charged to (as `borrows` reckons it): the first
        whose quota has room for it now, else the first."""
        if not demand.gpu_count or demand.is_reservation or demand.reservation is not None:
            return None
        rooms = self._rooms(demand.cluster_queue, demand)
        for flavor, room, _ in rooms:
            if demand.gpus <= room + EPSILON:
                return flavor
        return rooms[0][0] if rooms else None

    def _rooms(self, queue: str, demand: Demand) -> tuple[tuple[str, float, float], ...]:
        """Per flavor of the demand's GPU type, in the queue's order: the flavor, how much more
        the queue could take now, and how much more within its nominal quota."""
        version = self.ledger.version(queue)
        key = (queue, demand.gpu_type)
        cached = self._rooms_cache.get(key)
        if cached is not None and cached[0] == version:
            return cached[1]
        ledger = self.ledger
        resource = demand.gpu_resource
        rooms = []
        for flavor in self.flavors_for(queue, demand):
            if flavor is None:
                continue
            quota = ledger.quota(queue, flavor, resource)
            nominal = quota.nominal_quota if quota else 0.0
            used = ledger.usage[(queue, flavor, resource)]
            rooms.append((flavor, ledger.headroom(queue, flavor, resource), nominal - used))
        found = tuple(rooms)
        self._rooms_cache[key] = (version, found)
        return found

    def unreclaimable(self, demand: Demand) -> tuple[str, float] | None:
        """What a workload refused for want of GPU quota would hold of its queue's nominal quota
        (Kueue's resourcesToReserve, for an assignment that does not borrow): the first of its
        flavors whose nominal quota could hold it, and its request up to what the queue leaves
        unused there. None if some flavor's quota has room for it (it waits for nodes, not
        quota) or no flavor's nominal quota could hold it."""
        queue = demand.cluster_queue
        resource = demand.gpu_resource
        ledger = self.ledger
        chosen: tuple[str, float] | None = None
        for flavor in self.flavors_for(queue, demand):
            if flavor is None or self._never_in(demand, queue, flavor):
                continue
            if ledger.fits(queue, flavor, resource, demand.gpus):
                return None
            quota = ledger.quota(queue, flavor, resource)
            if chosen is None and quota is not None and quota.nominal_quota >= demand.gpus:
                unused = quota.nominal_quota - ledger.usage[(queue, flavor, resource)]
                chosen = (flavor, max(0.0, min(float(demand.gpus), unused)))
        return chosen

    def cpu_flavor_on(self, queue: str, node: str | None) -> str | None:
        """The CPU flavor a workload of `queue` running on `node` is charged to: the first of
        the queue's CPU flavors whose labels the node has (a running workload's record names its
        GPU flavor, not its CPU flavor)."""
        flavors = self._cpu_flavors.get(queue, (None,))
        slots = self.nodes.by_name.get(node) if node is not None else None
        if slots is not None:
            for flavor in flavors:
                if flavor is not None and flavor in slots.flavors:
                    return flavor
        return flavors[0]

    def _beyond_nominal(self, queue: str, flavor: str, resource: str, amount: float) -> bool:
        quota = self.ledger.quota(queue, flavor, resource)
        nominal = quota.nominal_quota if quota else 0.0
        return self.ledger.usage[(queue, flavor, resource)] + amount > nominal + EPSILON

    # --- never ------------------------------------------------------------------------------

    def never_reason(self, demand: Demand) -> str | None:
        """Why `demand` can never be admitted as the cluster is configured, or None."""
        queue = demand.cluster_queue
        if queue not in self.queues:
            return f"cluster queue {queue} does not exist"
        if demand.is_reservation or demand.reservation is not None:
            return None
        for part in demand.gang:  # every pod set of a workload must be admissible somewhere
            if part.gpu_count and not any(
                flavor is not None and not self._never_in(part, queue, flavor)
                for flavor in self.flavors_for(queue, part)
            ):
                text = self.never_text(part)
                return f"pod set {part.pod_set}: {text}" if demand.more else text
        if demand.more and demand.gpu_count:
            most = sum(
                self.ledger.most_ever(queue, flavor, demand.gpu_resource)
                for flavor in self.flavors_for(queue, demand)
                if flavor is not None
            )
            if demand.all_gpus > most:
                return (
                    f"{queue} can never give {ask(demand)}: its pod sets ask "
                    f"{demand.all_gpus} GPUs, more than all its flavors' quota (with what the "
                    "cohort can lend)"
                )
        return None

    def _never_in(self, demand: Demand, queue: str, flavor: str) -> bool:
        """Whether `demand` can never be admitted in `flavor`: its nodes, all empty, could not
        hold its pods, or the quota (with all the cohort can lend) is smaller."""
        key = (demand.gpu_type, flavor)
        if self.nodes.largest.get(key, 0) < demand.gpu_count:
            return True
        if demand.gpus > self.ledger.most_ever(queue, flavor, demand.gpu_resource):
            return True
        if demand.pods == 1:
            return False
        return sum(size // demand.gpu_count for size in self.nodes.sizes[key]) < demand.pods

    def never_text(self, demand: Demand) -> str:
        if demand.gpu_count and not self.ledger.covers(demand.cluster_queue, demand.gpu_resource):
            return (  # Kueue: "resource ... unavailable in ClusterQueue"
                f"{demand.cluster_queue} can never give {ask(demand)}: none of its resource "
                f"groups covers {demand.gpu_resource}"
            )
        large = "enough nodes that large" if demand.pods > 1 else "a node that large"
        return (
            f"{demand.cluster_queue} can never give {ask(demand)}: no flavor has {large}, "
            "or the quota (with what the cohort can lend) is smaller"
        )

    # --- the assignment ---------------------------------------------------------------------

    def assign(self, demand: Demand) -> Assignment | NoFit:
        """The first of the queue's flavors with quota and nodes for `demand` now, or why none
        is (a workload of the queue's own: not a reservation nor inside one), as the queue's
        flavorFungibility has it (Kueue's findFlavorForPodSets): with whenCanBorrow
        TryNextFlavor a flavor where it would borrow is taken only if no later one fits without;
        with whenCanPreempt MayStopSearch the search stops at a flavor whose quota is taken by
        workloads the demand may preempt (`preemptable`), to preempt there."""
        queue = demand.cluster_queue
        ledger = self.ledger
        cpu_flavors = self._cpu_flavors.get(queue, (None,))
        resource = demand.gpu_resource
        fungibility = self._fungibility.get(queue)
        try_next_to_borrow = (
            fungibility is not None
            and fungibility.when_can_borrow is FungibilityPolicy.TRY_NEXT_FLAVOR
        )
        stop_to_preempt = (
            fungibility is not None
            and fungibility.when_can_preempt is FungibilityPolicy.MAY_STOP_SEARCH
        )
        refusal = ""
        never = True
        cpu_bound = False
        borrowing: Assignment | None = None
        for gpu_flavor in self.flavors_for(queue, demand):
            if gpu_flavor is not None and self._never_in(demand, queue, gpu_flavor):
                continue
            never = False
            if gpu_flavor is not None and not ledger.fits(queue, gpu_flavor, resource, demand.gpus):
                refusal = refusal or f"no quota left in {queue} for {ask(demand)}"
                if stop_to_preempt and self.preemptable(demand, gpu_flavor):
                    break  # it preempts here rather than look further
                continue
            for cpu_flavor in cpu_flavors:
                if cpu_flavor is not None and not (
                    ledger.fits(queue, cpu_flavor, CPU, demand.cpu * demand.pods)
                    and ledger.fits(queue, cpu_flavor, MEMORY, demand.memory * demand.pods)
                ):
                    refusal = refusal or f"no CPU or memory quota left in {queue}"
                    cpu_bound = True
                    continue
                nodes = self.nodes.nodes_for(demand, gpu_flavor, cpu_flavor)
                if nodes is None:
                    where = "no node has" if demand.pods == 1 else "the nodes do not have"
                    refusal = refusal or f"{where} {ask(demand)} free"
                    continue
                found = Assignment(gpu_flavor, cpu_flavor, nodes)
                if (
                    try_next_to_borrow
                    and gpu_flavor is not None
                    and self._beyond_nominal(queue, gpu_flavor, resource, demand.gpus)
                ):
                    borrowing = borrowing or found  # unless a later flavor needs no borrowing
                    break
                return found
        if borrowing is not None:
            return borrowing
        if never:
            return NoFit(self.never_text(demand), never=True)
        return NoFit(refusal, cpu_bound=cpu_bound)
