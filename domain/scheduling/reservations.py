"""The reservation book: capacity reservations and the workloads that run inside them.

A reservation is admitted ahead of everything of its flavor from its start and takes GPUs as
they come free, the emptiest nodes first, each charged to its queue as it is taken, until it
holds all it asks. Its GPUs that none of its workloads uses are lent to its own workloads only
(they are charged nothing: the reservation is). When it ends, its workloads run on as their
queue's own (charged from then) and its idle GPUs go back.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime

from domain.model.job import Placement
from domain.scheduling.demand import Demand, Holding, Refusal, ask
from domain.scheduling.holdings import Holdings
from domain.scheduling.nodes import Nodes


class ReservationBook:
    def __init__(self, holdings: Holdings, nodes: Nodes) -> None:
        self.holdings = holdings
        self.nodes = nodes

    def slots(self, key: str) -> dict[str, set[int]]:
        """GPUs a reservation holds that none of its workloads uses."""
        holding = self.holdings.by_key.get(key)
        if holding is None:
            return {}
        busy: dict[str, set[int]] = defaultdict(set)
        for inner, owner in self.holdings.reservation_of.items():
            if owner == key:
                for p in self.holdings.by_key[inner].placements:
                    busy[p.node].update(p.gpu_indices)
        return {p.node: set(p.gpu_indices) - busy[p.node] for p in holding.placements}

    def grow(self, demand: Demand, now: datetime) -> Holding:
        """A reservation takes what GPUs of its flavor are free, up to what it asks; Refusal if
        it still holds less."""
        flavor = demand.flavor or ""
        holding = self.holdings.by_key.get(demand.key)
        if holding is None:
            holding = Holding(demand, flavor, None, [], now)
            self.holdings.keep(holding)
        missing = demand.gpu_count - holding.gpus
        resource = demand.gpu_resource
        ledger = self.holdings.ledger
        for node in sorted(self.nodes.by_name.values(), key=lambda n: (-len(n.free), n.name)):
            if missing <= 0:
                break
            if flavor not in node.flavors or not node.free:
                continue
            take = min(missing, len(node.free))
            if not ledger.fits(demand.cluster_queue, flavor, resource, take):
                break
            indices = tuple(sorted(node.free)[:take])
            node.free.difference_update(indices)
            self.nodes.changed(node.gpu_type)
            ledger.charge(demand.cluster_queue, flavor, resource, take)
            merged = next((p for p in holding.placements if p.node == node.name), None)
            if merged is not None:
                holding.placements.remove(merged)
                indices = tuple(sorted((*merged.gpu_indices, *indices)))
            holding.placements.append(Placement(node.name, indices, flavor))
            missing -= take
        if missing > 0:
            raise Refusal(f"reservation holds {holding.gpus} of {demand.gpu_count} GPUs")
        return holding

    def admit_into(self, demand: Demand, now: datetime) -> Holding:
        """A workload of a reservation takes its pods' GPUs among the reservation's idle ones;
        Refusal if they are not there."""
        assert demand.reservation is not None
        slots = self.slots(demand.reservation)
        if not slots:
            raise Refusal(f"reservation {demand.reservation} is not active")
        owner = self.holdings.by_key[demand.reservation]
        parts: list[Holding] = []
        for part in demand.gang:  # a workload of several pod sets: each in turn, all or none
            nodes = self.nodes.nodes_for(part, owner.gpu_flavor, None, allowed=slots)
            if nodes is None:
                for taken in parts:
                    self._give_back(taken, slots)
                raise Refusal(f"the reservation has no room for {ask(demand)}")
            placements = [
                self.nodes.take(node, part, owner.gpu_flavor, slots[node.name]) for node in nodes
            ]
            parts.append(Holding(part, owner.gpu_flavor, None, placements, now))
        holding = parts[0]
        if demand.more:
            placed = [p for part in parts for p in part.placements]
            holding = Holding(demand, owner.gpu_flavor, None, placed, now, parts=parts)
        self.holdings.keep(holding)
        self.holdings.reservation_of[demand.key] = demand.reservation
        return holding

    def _give_back(self, part: Holding, slots: dict[str, set[int]]) -> None:
        """Undo `Nodes.take` of a pod set placed in a reservation's GPUs."""
        for placement in part.placements:
            node = self.nodes.by_name[placement.node]
            slots[placement.node].update(placement.gpu_indices)
            node.cpu += part.demand.cpu
            node.memory += part.demand.memory
        self.nodes.changed(part.demand.gpu_type)

    def release(self, key: str, holding: Holding) -> None:
        """The reservation (dropped from the holdings) ends: its workloads run on as their
        queue's own; its idle GPUs go back."""
        self.holdings.charge(holding, -1)
        busy: dict[str, set[int]] = defaultdict(set)
        reservation_of = self.holdings.reservation_of
        for inner, owner in list(reservation_of.items()):
            if owner != key:
                continue
            del reservation_of[inner]
            inner_holding = self.holdings.by_key[inner]
            for p in inner_holding.placements:
                busy[p.node].update(p.gpu_indices)
            self.holdings.charge(inner_holding, +1)
        for placement in holding.placements:
            node = self.nodes.by_name.get(placement.node)
            if node is not None:
                node.free.update(set(placement.gpu_indices) - busy[placement.node])
                self.nodes.changed(node.gpu_type)
