"""Quota arithmetic: what each ClusterQueue uses of each flavor, and what it may still take.

The cohort model: each member's nominal quota splits into a part it keeps for itself (nominal
minus lending limit) and a part it lends to the cohort's pool (lending limit, or all of it).
A queue's usage beyond its kept part draws on the pool; it may go beyond its nominal quota
(borrowing) while the pool has room, up to its borrowing limit. Without a cohort a queue gets
exactly its nominal quota. Resources a queue's resource groups do not cover are not limited by
quota (only by the nodes).

Everything a check needs is looked up in tables built once, so a check is a few dict reads.
"""

from __future__ import annotations

from collections import defaultdict

from domain.model.quota import ClusterQueue, QuotaSet, ResourceQuota

EPSILON = 1e-9
Key = tuple[str, str, str]
"""(queue or cohort, flavor, resource)"""


class QuotaLedger:
    def __init__(self, quotas: QuotaSet) -> None:
        self.queues = {q.name: q for q in quotas.cluster_queues}
        self._quota: dict[Key, ResourceQuota] = {}
        self._covered: set[tuple[str, str]] = set()
        self._flavors: dict[tuple[str, str], tuple[str, ...]] = {}
        self._cohort: dict[str, str | None] = {}
        self._members: dict[str, tuple[str, ...]] = defaultdict(tuple)
        self._pool: dict[Key, float] = defaultdict(float)
        self._kept: dict[Key, float] = {}
        for queue in quotas.cluster_queues:
            self._cohort[queue.name] = queue.cohort
            if queue.cohort:
                self._members[queue.cohort] += (queue.name,)
            for group in queue.resource_groups:
                for resource in group.covered_resources:
                    self._covered.add((queue.name, resource))
                    self._flavors[(queue.name, resource)] = tuple(f.flavor for f in group.flavors)
                for fq in group.flavors:
                    for quota in fq.resources:
                        self._quota[(queue.name, fq.flavor, quota.name)] = quota
                        self._kept[(queue.name, fq.flavor, quota.name)] = quota.guaranteed
                        if queue.cohort:
                            self._pool[(queue.cohort, fq.flavor, quota.name)] += quota.lendable
        self.usage: dict[Key, float] = defaultdict(float)
        self._pool_used: dict[Key, float] = defaultdict(float)
        self._held: dict[Key, float] = {}
        """What a queue holds of its cohort's pool for a waiting workload, in this cycle only
        (`hold`): the others of the cohort cannot borrow it; the queue itself can use it."""
        self._versions: dict[str, int] = defaultdict(int)
        """Per cohort (or queue without one): bumped by every charge, so that what is worked
        out from a queue's usage can be kept until it changes."""

    def version(self, queue: str) -> int:
        """Changes whenever the usage of `queue` or of its cohort changes."""
        return self._versions[self._cohort.get(queue) or queue]

    def covers(self, queue: str, resource: str) -> bool:
        return (queue, resource) in self._covered

    def flavors(self, queue: str, resource: str) -> tuple[str, ...]:
        """The flavors, in the queue's order of preference, holding quota for `resource`."""
        return self._flavors.get((queue, resource), ())

    def quota(self, queue: str, flavor: str, resource: str) -> ResourceQuota | None:
        return self._quota.get((queue, flavor, resource))

    def cohort(self, queue: str) -> str | None:
        return self._cohort.get(queue)

    def fits(self, queue: str, flavor: str, resource: str, amount: float) -> bool:
        if amount <= 0 or (queue, resource) not in self._covered:
            return True
        quota = self._quota.get((queue, flavor, resource))
        if quota is None:
            return False
        used = self.usage[(queue, flavor, resource)]
        after = used + amount
        cohort = self._cohort.get(queue)
        if cohort is None:
            return after <= quota.nominal_quota + EPSILON
        if quota.borrowing_limit is not None and after > (
            quota.nominal_quota + quota.borrowing_limit + EPSILON
        ):
            return False
        kept = self._kept[(queue, flavor, resource)]
        from_pool = max(0.0, after - kept) - max(0.0, used - kept)
        pool_key = (cohort, flavor, resource)
        pool_used = self._pool_used[pool_key]
        if self._held:
            pool_used -= self._held.get((queue, flavor, resource), 0.0)
        return pool_used + from_pool <= self._pool[pool_key] + EPSILON

    def most_ever(self, queue: str, flavor: str, resource: str) -> float:
        """The most of `resource` in `flavor` the queue could hold, everything else idle."""
        if (queue, resource) not in self._covered:
            return float("inf")
        quota = self._quota.get((queue, flavor, resource))
        if quota is None:
            return 0.0
        cohort = self._cohort.get(queue)
        if cohort is None:
            return quota.nominal_quota
        most = quota.guaranteed + self._pool[(cohort, flavor, resource)]
        if quota.borrowing_limit is not None:
            most = min(most, quota.nominal_quota + quota.borrowing_limit)
        return most

    def headroom(self, queue: str, flavor: str, resource: str) -> float:
        """How much more the queue could take now (an upper bound)."""
        if (queue, resource) not in self._covered:
            return float("inf")
        quota = self._quota.get((queue, flavor, resource))
        if quota is None:
            return 0.0
        used = self.usage[(queue, flavor, resource)]
        cohort = self._cohort.get(queue)
        if cohort is None:
            return quota.nominal_quota - used
        pool_key = (cohort, flavor, resource)
        pool_used = self._pool_used[pool_key]
        if self._held:
            pool_used -= self._held.get((queue, flavor, resource), 0.0)
        room = max(0.0, self._kept[(queue, flavor, resource)] - used) + max(
            0.0, self._pool[pool_key] - pool_used
        )
        if quota.borrowing_limit is not None:
            room = min(room, quota.nominal_quota + quota.borrowing_limit - used)
        return room

    def charge(self, queue: str, flavor: str, resource: str, amount: float) -> None:
        if amount == 0 or (queue, resource) not in self._covered:
            return
        key = (queue, flavor, resource)
        before = self.usage[key]
        self.usage[key] = before + amount
        quota = self._quota.get(key)
        cohort = self._cohort.get(queue)
        self._versions[cohort or queue] += 1
        if cohort is not None and quota is not None:
            kept = self._kept[key]
            delta = max(0.0, before + amount - kept) - max(0.0, before - kept)
            self._pool_used[(cohort, flavor, resource)] += delta

    def hold(self, queue: str, flavor: str, resource: str, amount: float) -> None:
        """Keep `amount` of the queue's unused nominal quota from the rest of its cohort until
        `release_holds` (Kueue's reserveCapacityForUnreclaimablePreempt, for one cycle)."""
        cohort = self._cohort.get(queue)
        key = (queue, flavor, resource)
        if cohort is None or amount <= 0 or key not in self._kept:
            return
        used = self.usage[key]
        kept = self._kept[key]
        delta = max(0.0, used + amount - kept) - max(0.0, used - kept)
        self._pool_used[(cohort, flavor, resource)] += delta
        self._held[key] = self._held.get(key, 0.0) + delta
        self._versions[cohort] += 1

    def release_holds(self) -> None:
        for (queue, flavor, resource), delta in self._held.items():
            cohort = self._cohort[queue]
            assert cohort is not None
            self._pool_used[(cohort, flavor, resource)] -= delta
            self._versions[cohort] += 1
        self._held.clear()

    def borrowing_with(self, queue: str, flavor: str, resource: str, amount: float) -> bool:
        """Would `amount` more take the queue beyond its nominal quota of `resource` in
        `flavor` (Kueue's BorrowingWith)? A resource it does not cover is never borrowed."""
        if amount <= 0 or (queue, resource) not in self._covered:
            return False
        quota = self._quota.get((queue, flavor, resource))
        nominal = quota.nominal_quota if quota else 0.0
        return self.usage[(queue, flavor, resource)] + amount > nominal + EPSILON

    def borrowing(self, queue: str, flavor: str, resource: str) -> float:
        quota = self._quota.get((queue, flavor, resource))
        nominal = quota.nominal_quota if quota else 0.0
        return max(0.0, self.usage[(queue, flavor, resource)] - nominal)

    def nominal_holds(self, queue: str, resource: str, amount: float) -> bool:
        """Is some flavor's nominal quota of `resource` at least `amount` (Kueue's condition for
        a request to preempt, fitsResourceQuota in pkg/scheduler/flavorassigner, without
        borrowWithinCohort)? A resource the queue does not cover is not limited."""
        if (queue, resource) not in self._covered:
            return True
        for flavor in self.flavors(queue, resource):
            quota = self._quota.get((queue, flavor, resource))
            if quota is not None and amount <= quota.nominal_quota + EPSILON:
                return True
        return False

    def under_nominal(self, queue: str, resource: str) -> bool:
        """Does the queue use less than its nominal quota of `resource` in some flavor (Kueue's
        queueUnderNominalInResourcesNeedingPreemption: the condition to reclaim from the cohort
        without borrowing)?"""
        for flavor in self.flavors(queue, resource):
            quota = self._quota.get((queue, flavor, resource))
            if quota is not None and self.usage[(queue, flavor, resource)] < (
                quota.nominal_quota - EPSILON
            ):
                return True
        return False

    def within_nominal(self, queue: ClusterQueue, resource: str, amount: float) -> bool:
        """Would `amount` more fit in the queue's own nominal quota of some flavor?"""
        for flavor in self.flavors(queue.name, resource):
            quota = self._quota.get((queue.name, flavor, resource))
            if quota is not None and (
                self.usage[(queue.name, flavor, resource)] + amount <= quota.nominal_quota + EPSILON
            ):
                return True
        return False
