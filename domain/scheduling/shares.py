"""Fair sharing's measure: each ClusterQueue's dominant resource share (Kueue's DRS,
pkg/cache/scheduler/fair_sharing.go, at the commit tests/support/admission_tables.py names).

A queue of a cohort that uses more of a resource than its nominal quota borrows the difference;
what it borrows of each resource (over all flavors), per 1000 of what the cohort can lend of it,
is its share of that resource, and the largest is its dominant share, divided by the queue's
fairSharing weight. A queue that borrows nothing has share 0; one of weight 0 that borrows sorts
above every other (Kueue's CompareDRS). With fair sharing on, Kueue admits the heads of a cohort
in order of the share their queue would have once they are admitted, and preempts from the
queues of highest share (`fair_preemption`).

Cohorts are flat here: a cohort's lendable resources are what its members lend (their lending
limits, or their nominal quotas).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass

from domain.model.quota import QuotaSet
from domain.scheduling.quota_ledger import EPSILON, QuotaLedger

FlavorResource = tuple[str, str]
"""(flavor, resource)"""


@dataclass(frozen=True)
class Share:
    ratio: float
    """The dominant share, unweighted: borrowed per 1000 lendable."""
    weight: float
    borrowed: frozenset[FlavorResource] = frozenset()
    """Where the queue uses more than its nominal quota."""

    @property
    def borrowing(self) -> bool:
        return bool(self.borrowed)

    @property
    def key(self) -> tuple[bool, float]:
        """Orders as Kueue's CompareDRS: the weighted share, a zero weight that borrows above
        all (those compared by their unweighted share)."""
        if self.ratio == 0:
            return (False, 0.0)
        if self.weight == 0:
            return (True, self.ratio)
        return (False, self.ratio / self.weight)

    def borrowing_on(self, requested: Mapping[FlavorResource, float]) -> bool:
        """Does the queue borrow where these are requested (Kueue's IsBorrowingOn)?"""
        return any(requested.get(fr, 0) > 0 for fr in self.borrowed)


class Shares:
    """Dominant resource shares from the ledger's usage, as it changes."""

    def __init__(self, quotas: QuotaSet, ledger: QuotaLedger) -> None:
        self.ledger = ledger
        self.enabled = quotas.fair_sharing
        self._weight = {q.name: q.fair_sharing_weight for q in quotas.cluster_queues}
        self._nominal: dict[str, list[tuple[str, str, float]]] = defaultdict(list)
        """Per queue: (flavor, resource, nominal quota) of everything it has quota for."""
        self._lendable: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
        """Per cohort and resource: what its members lend (Kueue's calculateLendable)."""
        for queue in quotas.cluster_queues:
            for group in queue.resource_groups:
                for fq in group.flavors:
                    for quota in fq.resources:
                        self._nominal[queue.name].append(
                            (fq.flavor, quota.name, quota.nominal_quota)
                        )
                        if queue.cohort:
                            self._lendable[queue.cohort][quota.name] += quota.lendable

    def of(self, queue: str, extra: Mapping[FlavorResource, float] | None = None) -> Share:
        """The queue's share now, with `extra` usage added (negative: taken away)."""
        weight = self._weight.get(queue, 1.0)
        cohort = self.ledger.cohort(queue)
        if cohort is None:
            return Share(0.0, weight)
        usage = self.ledger.usage
        borrowed: dict[str, float] = defaultdict(float)
        where: set[FlavorResource] = set()
        for flavor, resource, nominal in self._nominal.get(queue, ()):
            amount = usage[(queue, flavor, resource)] - nominal
            if extra:
                amount += extra.get((flavor, resource), 0.0)
            if amount > EPSILON:
                borrowed[resource] += amount
                where.add((flavor, resource))
        if not where:
            return Share(0.0, weight)
        lendable = self._lendable[cohort]
        ratio = 0.0
        for resource, amount in borrowed.items():
            lends = lendable.get(resource, 0.0)
            if lends > 0:
                ratio = max(ratio, amount * 1000.0 / lends)
        return Share(ratio, weight, frozenset(where))
