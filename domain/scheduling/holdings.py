"""The snapshot admission reads and writes: who holds what, on which nodes, charged to which
queue's quota (Kueue's cache snapshot).

A holding takes its GPUs, cores and memory from its nodes and is charged to its queue in the
ledger; a workload running inside a capacity reservation is charged nothing (its reservation is)
and is remembered in `reservation_of`. Preemptible holdings are also kept by GPU type and by
queue and type, where preemption looks for victims, and every holding that comes or goes bumps a
version per (cohort tree, or queue without one) and GPU type, so that what is worked out from
them (the weakest holding of a queue, a preemption that found no way in) is kept until they
change. A queue shares quota with every queue of its cohort tree (the queues below its root
cohort): a one-level cohort's members, or, with hierarchical cohorts, the whole tree.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import replace

from domain.model.quota import CPU, MEMORY, ClusterQueue, QuotaSet
from domain.scheduling.demand import Demand, Holding
from domain.scheduling.nodes import Nodes
from domain.scheduling.quota_ledger import QuotaLedger

KindKey = tuple[str, str | None]
"""(queue or cohort, GPU type or None for CPU-only work)"""


class Holdings:
    """What holds resources now, indexed for admission and preemption."""

    def __init__(self, quotas: QuotaSet, ledger: QuotaLedger, nodes: Nodes) -> None:
        self.quotas = quotas
        self.queues = {q.name: q for q in quotas.cluster_queues}
        self.ledger = ledger
        self.nodes = nodes
        self.by_key: dict[str, Holding] = {}
        self.reservation_of: dict[str, str] = {}
        """Workloads running inside a capacity reservation: the reservation's key."""
        self._by_type: dict[str | None, dict[str, Holding]] = defaultdict(dict)
        """Preemptible holdings by GPU type: where preemption looks for victims."""
        self._by_queue_type: dict[KindKey, dict[str, Holding]] = defaultdict(dict)
        self._group_of = {
            q.name: f"cohort {ledger.root(q.name)}" if q.cohort else q.name
            for q in quotas.cluster_queues
        }
        self._version: dict[KindKey, int] = defaultdict(int)
        """Per (root cohort, or queue without one) and GPU type: bumped when a holding comes or
        goes."""
        self._weakest: dict[KindKey, tuple[int, int | None]] = {}
        """Per (queue, GPU type): (holdings version, lowest priority of its preemptible
        holdings)."""
        self._cohort_members: dict[str, tuple[ClusterQueue, ...]] = {}
        self._cohort_names: dict[str, tuple[str, ...]] = {}

    # --- cohorts ----------------------------------------------------------------------------

    def cohort_members(self, cohort: str) -> tuple[ClusterQueue, ...]:
        """The queues anywhere below `cohort` (a one-level cohort's members)."""
        found = self._cohort_members.get(cohort)
        if found is None:
            found = self._cohort_members[cohort] = tuple(
                self.queues[name] for name in self.ledger.subtree_queues(cohort)
            )
        return found

    def group(self, queue: str) -> str:
        """The cohort tree whose quota `queue` shares, or the queue alone (named apart)."""
        return self._group_of.get(queue, queue)

    def sharing(self, queue: str) -> tuple[str, ...]:
        """The queues whose quota `queue`'s usage bears on: its cohort tree's, or itself
        alone."""
        root = self.ledger.root(queue)
        if not root:
            return (queue,)
        found = self._cohort_names.get(root)
        if found is None:
            found = self._cohort_names[root] = tuple(q.name for q in self.cohort_members(root))
        return found

    # --- the indexes ------------------------------------------------------------------------

    def keep(self, holding: Holding) -> None:
        """Index a holding (`add` charges it too)."""
        demand = holding.demand
        self.by_key[demand.key] = holding
        kind = demand.gpu_type if demand.gpu_count else None
        if (
            demand.preemptible
            and not demand.critical
            and not demand.is_reservation
            and demand.reservation is None
        ):
            self._by_type[kind][demand.key] = holding
            self._by_queue_type[(demand.cluster_queue, kind)][demand.key] = holding
        queue = demand.cluster_queue
        self._version[(self._group_of.get(queue, queue), kind)] += 1

    def drop(self, key: str) -> Holding | None:
        """Forget the holding of `key` (its resources are given back by the caller)."""
        holding = self.by_key.pop(key, None)
        if holding is not None:
            demand = holding.demand
            kind = demand.gpu_type if demand.gpu_count else None
            self._by_type[kind].pop(key, None)
            self._by_queue_type[(demand.cluster_queue, kind)].pop(key, None)
            queue = demand.cluster_queue
            self._version[(self._group_of.get(queue, queue), kind)] += 1
        return holding

    def version(self, queue: str, kind: str | None) -> int:
        """Bumped whenever a holding of `kind` comes or goes in `queue`'s cohort."""
        return self._version[(self._group_of.get(queue, queue), kind)]

    def weakest(self, queue: str, kind: str | None) -> int | None:
        """The lowest priority among the queue's preemptible holdings of `kind` (None: none)."""
        version = self.version(queue, kind)
        cached = self._weakest.get((queue, kind))
        if cached is not None and cached[0] == version:
            return cached[1]
        mine = self._by_queue_type.get((queue, kind))
        weakest = min((h.demand.priority for h in mine.values()), default=None) if mine else None
        self._weakest[(queue, kind)] = (version, weakest)
        return weakest

    def holdings_of(self, queue: str, gpu_type: str | None) -> Iterable[Holding]:
        """The queue's workloads that may be preempted holding GPUs of `gpu_type`."""
        held = self._by_queue_type.get((queue, gpu_type))
        return held.values() if held else ()

    def holders(self, gpu_type: str | None) -> Iterable[Holding]:
        """Workloads that may be preempted holding GPUs of `gpu_type` (any, for CPU work)."""
        if gpu_type is None:
            return [h for by_type in self._by_type.values() for h in by_type.values()]
        return self._by_type[gpu_type].values()

    # --- resources --------------------------------------------------------------------------

    def charge(self, holding: Holding, sign: int) -> None:
        """Charge (+1) or refund (-1) the holding's queue in the ledger (each pod set to its own
        flavors)."""
        demand = holding.demand
        queue = demand.cluster_queue
        if demand.is_reservation:
            if holding.gpu_flavor:
                self.ledger.charge(
                    queue, holding.gpu_flavor, demand.gpu_resource, sign * holding.gpus
                )
            return
        for part in holding.pod_sets:
            self._charge_pod_set(part, sign)

    def _charge_pod_set(self, holding: Holding, sign: int) -> None:
        demand = holding.demand
        queue = demand.cluster_queue
        if holding.gpu_flavor is not None and demand.gpu_count:
            self.ledger.charge(queue, holding.gpu_flavor, demand.gpu_resource, sign * demand.gpus)
        if holding.cpu_flavor is not None:
            self.ledger.charge(queue, holding.cpu_flavor, CPU, sign * demand.cpu * demand.pods)
            self.ledger.charge(
                queue, holding.cpu_flavor, MEMORY, sign * demand.memory * demand.pods
            )

    def add(self, holding: Holding) -> None:
        """A holding whose pods took their nodes' resources: charge its queue and keep it."""
        self.charge(holding, +1)
        self.keep(holding)

    def hold(self, demand: Demand, holding: Holding) -> None:
        """Record what already holds resources (from the cluster's current state). A real
        cluster tells the node a workload runs on, not its devices: a placement with a node and
        no GPU indices takes that many free GPUs of the node (the lowest), and the first of its
        queue's flavors the node belongs to when it names none, so the GPUs count as busy. A
        workload of several pod sets given as one list of placements (`Demand.gang` order) is
        split into its pod sets' holdings first."""
        if demand.more and not holding.parts:
            self._split(holding)
        for part in holding.pod_sets:
            self._locate(part.demand, part)
            for placement in part.placements:
                node = self.nodes.by_name.get(placement.node)
                if node is not None:
                    node.free.difference_update(placement.gpu_indices)
                    self.nodes.changed(node.gpu_type)
                    node.cpu -= part.demand.cpu  # per pod (a reservation asks none)
                    node.memory -= part.demand.memory
        if holding.parts:
            holding.placements = [p for part in holding.parts for p in part.placements]
            holding.gpu_flavor = holding.parts[0].gpu_flavor
        if demand.reservation is None:
            self.charge(holding, +1)
        else:
            self.reservation_of[demand.key] = demand.reservation
        self.keep(holding)

    @staticmethod
    def _split(holding: Holding) -> None:
        """Give each pod set of the holding's workload its pods' placements, in order (the
        cluster's record names one flavor for the workload: a pod set's own is its first pod's,
        if that names one)."""
        placements = holding.placements
        at = 0
        for part in holding.demand.gang:
            mine = placements[at : at + part.pods]
            at += part.pods
            flavor = next((p.flavor for p in mine if p.flavor), None)
            holding.parts.append(
                Holding(
                    part,
                    flavor if part.gpu_count else None,
                    holding.cpu_flavor,
                    list(mine),
                    holding.since,
                )
            )

    def _locate(self, demand: Demand, holding: Holding) -> None:
        if demand.is_reservation or not demand.gpu_count:
            return
        taken: dict[str, set[int]] = defaultdict(set)
        for i, placement in enumerate(holding.placements):
            node = self.nodes.by_name.get(placement.node)
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

    def vacate(self, holding: Holding) -> None:
        """A dropped workload's pods give back their nodes' resources and its queue's quota; one
        that ran inside a reservation leaves its GPUs to the reservation, while that lasts."""
        owner = self.reservation_of.pop(holding.demand.key, None)
        for part in holding.pod_sets:
            demand = part.demand
            for placement in part.placements:
                node = self.nodes.by_name.get(placement.node)
                if node is None:
                    continue
                if owner is None or owner not in self.by_key:
                    node.free.update(placement.gpu_indices)
                    self.nodes.changed(node.gpu_type)
                node.cpu += demand.cpu
                node.memory += demand.memory
        if owner is None:
            self.charge(holding, -1)
