"""Quota arithmetic: what each ClusterQueue uses of each flavor, and what it may still take.

Kueue's resource-node tree (pkg/cache/scheduler/resource_node.go): ClusterQueues are the
leaves, cohorts the inner nodes (an implicit cohort, a name no Cohort object holds, too: no
quotas, no parent). For each flavor and resource, each node has
- a subtree quota: a queue's nominal quota; a cohort's own nominal quota plus what each child
  lends it (the child's subtree quota minus its local quota);
- a local quota: what it keeps from its parent (its subtree quota minus its lending limit; none
  without a lending limit);
- a usage: a queue's own; a cohort's, what its children use beyond their local quotas.
What a queue may still take (Kueue's available()) is what it keeps unused plus what its parent
has available, at each level no more than the node's borrowing limit lets it take from its
parent; without a parent, its subtree quota minus its usage. The most it could ever take
(potentialAvailable()) is the same with nothing used. A one-level cohort is the flat model: each
member keeps its nominal quota minus its lending limit and lends the rest to the cohort's pool,
from which any member may borrow up to its borrowing limit. Without a cohort a queue gets
exactly its nominal quota. Resources a queue's resource groups do not cover are not limited by
quota (only by the nodes). A cycle in cohort parents (which Kueue rejects) is cut: the cohorts on
it have no parent.

Everything a check needs is looked up in tables built once, so a check on a queue directly
under a root cohort (or with none) is a few dict reads; a deeper queue walks its path.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from domain.model.quota import ClusterQueue, Cohort, QuotaSet, ResourceQuota

EPSILON = 1e-9
Key = tuple[str, str, str]
"""(queue or cohort, flavor, resource)"""


class _Entry:
    """What a check of one queue's flavor and resource needs, worked out once."""

    __slots__ = ("bl", "cap", "chain", "kept", "nominal", "pool", "pool_key", "quota")

    def __init__(
        self,
        quota: ResourceQuota,
        kept: float,
        chain: tuple[Key, ...],
        pool: float,
    ) -> None:
        self.quota = quota
        self.nominal = quota.nominal_quota
        self.kept = kept
        """Its local quota: what its cohort can never take."""
        self.bl = quota.borrowing_limit if chain else None
        self.cap = None if self.bl is None else self.nominal + self.bl
        self.chain = chain
        """The cohorts above it (this flavor and resource), its parent first, the root last."""
        self.pool_key = chain[0] if chain else None
        self.pool = pool
        """Its parent's subtree quota."""


class QuotaLedger:
    def __init__(self, quotas: QuotaSet) -> None:
        self.queues = {q.name: q for q in quotas.cluster_queues}
        self._order = {name: i for i, name in enumerate(self.queues)}
        self._quota: dict[Key, ResourceQuota] = {}
        self._covered: set[tuple[str, str]] = set()
        self._flavors: dict[tuple[str, str], tuple[str, ...]] = {}
        self._cohort: dict[str, str | None] = {}
        self._parent: dict[str, str | None] = _parents(quotas)
        """Each cohort's parent (implicit ones too), cycles cut."""
        self._paths: dict[str, tuple[str, ...]] = {}
        """Each queue's cohorts, its own first, the root last."""
        self._child_cohorts: dict[str, list[str]] = defaultdict(list)
        self._child_queues: dict[str, list[str]] = defaultdict(list)
        self._subtree_queues: dict[str, tuple[str, ...]] = {}
        self._queue_quotas: dict[str, dict[tuple[str, str], ResourceQuota]] = defaultdict(dict)
        for cohort, parent in self._parent.items():
            if parent is not None:
                self._child_cohorts[parent].append(cohort)
        for queue in quotas.cluster_queues:
            self._cohort[queue.name] = queue.cohort
            self._paths[queue.name] = self._path_of(queue.cohort)
            if queue.cohort:
                self._child_queues[queue.cohort].append(queue.name)
            for group in queue.resource_groups:
                for resource in group.covered_resources:
                    self._covered.add((queue.name, resource))
                    self._flavors[(queue.name, resource)] = tuple(f.flavor for f in group.flavors)
                for fq in group.flavors:
                    for quota in fq.resources:
                        self._quota[(queue.name, fq.flavor, quota.name)] = quota
                        self._queue_quotas[queue.name][(fq.flavor, quota.name)] = quota
        self._own_quotas: dict[str, dict[tuple[str, str], ResourceQuota]] = defaultdict(dict)
        """A cohort's own quotas, by flavor and resource."""
        for cohort_object in quotas.cohorts:
            for group in cohort_object.resource_groups:
                for fq in group.flavors:
                    for quota in fq.resources:
                        self._own_quotas[cohort_object.name][(fq.flavor, quota.name)] = quota
        self._subtree: dict[Key, float] = {}
        """A cohort's subtree quota (Kueue's SubtreeQuota)."""
        self._local: dict[Key, float] = {}
        """A cohort's local quota: what it keeps from its parent."""
        self._cohort_bl: dict[Key, float | None] = {}
        """A cohort's borrowing limit towards its parent (None: none, or no parent)."""
        self._height: dict[str, int] = {}
        for cohort in self._parent:
            if self._parent[cohort] is None:
                self._build(cohort)
        self._entries: dict[Key, _Entry] = {}
        for key, quota in self._quota.items():
            name, flavor, resource = key
            chain = tuple((c, flavor, resource) for c in self._paths[name])
            kept = _local_quota(quota.nominal_quota, quota) if chain else 0.0
            pool = self._subtree.get(chain[0], 0.0) if chain else 0.0
            self._entries[key] = _Entry(quota, kept, chain, pool)
        self.usage: dict[Key, float] = defaultdict(float)
        self._pool_used: dict[Key, float] = defaultdict(float)
        """A cohort's usage (Kueue's Usage of a cohort): what its children use beyond their
        local quotas."""
        self._held: dict[Key, float] = {}
        self._held_pool: dict[Key, float] = {}
        """What holds add to each queue's first cohort (`hold`)."""
        self.hold_refused = False
        """A check came out short because of what other queues hold (`hold`): what the holds
        kept out may fit once they end."""
        """What a queue holds of its cohort's quota for a waiting workload, in this cycle only
        (`hold`): what it passed up to its parent. The others of the tree cannot borrow it; the
        queue itself can use it."""
        self._group: dict[str, str] = {
            q.name: self._paths[q.name][-1] if q.cohort else q.name for q in quotas.cluster_queues
        }
        self._versions: dict[str, int] = defaultdict(int)
        """Per root cohort (or queue without one): bumped by every charge, so that what is
        worked out from a queue's usage can be kept until it changes."""

    # --- the tree ---------------------------------------------------------------------------

    def _path_of(self, cohort: str | None) -> tuple[str, ...]:
        path: list[str] = []
        while cohort is not None:
            path.append(cohort)
            cohort = self._parent.get(cohort)
        return tuple(path)

    def _build(self, cohort: str) -> dict[tuple[str, str], float]:
        """Work out the subtree quotas, local quotas and heights of `cohort`'s subtree (Kueue's
        updateCohortResourceNode and accumulateFromChild); what it lends its parent."""
        has_parent = self._parent.get(cohort) is not None
        own = self._own_quotas.get(cohort, {})
        subtree = {fr: quota.nominal_quota for fr, quota in own.items()}
        height = min(len(self._child_cohorts[cohort]) + len(self._child_queues[cohort]), 1)
        queues: list[str] = []
        for child in self._child_cohorts[cohort]:
            for fr, lent in self._build(child).items():
                subtree[fr] = subtree.get(fr, 0.0) + lent
            height = max(height, self._height[child] + 1)
            queues.extend(self._subtree_queues[child])
        for queue in self._child_queues[cohort]:
            queues.append(queue)
            for fr, quota in self._queue_quotas.get(queue, {}).items():
                subtree[fr] = subtree.get(fr, 0.0) + _lendable(quota.nominal_quota, quota)
        lends: dict[tuple[str, str], float] = {}
        for fr, amount in subtree.items():
            key = (cohort, *fr)
            limits = own.get(fr) if has_parent else None
            self._subtree[key] = amount
            self._local[key] = _local_quota(amount, limits)
            self._cohort_bl[key] = limits.borrowing_limit if limits is not None else None
            lends[fr] = _lendable(amount, limits)
        self._height[cohort] = height
        self._subtree_queues[cohort] = tuple(sorted(queues, key=self._order.__getitem__))
        return lends

    def path(self, queue: str) -> tuple[str, ...]:
        """The cohorts above `queue`: its own first, the root last (empty: no cohort)."""
        return self._paths.get(queue, ())

    def root(self, queue: str) -> str | None:
        """The root of the queue's cohort tree (None: no cohort)."""
        path = self._paths.get(queue)
        return path[-1] if path else None

    def subtree_queues(self, cohort: str) -> tuple[str, ...]:
        """The queues anywhere below `cohort` (Kueue's SubtreeClusterQueues), in the quota
        set's order."""
        return self._subtree_queues.get(cohort, ())

    def cohort_height(self, cohort: str) -> int:
        """The distance from `cohort` to its furthest leaf (Kueue's getNodeHeight)."""
        return self._height.get(cohort, 0)

    def cohort_borrowing(self, cohort: str, flavor: str, resource: str) -> bool:
        """Does the cohort's subtree use more than its subtree quota (Kueue: not
        IsWithinNominalInResources)?"""
        key = (cohort, flavor, resource)
        return self._pool_used[key] > self._subtree.get(key, 0.0) + EPSILON

    # --- lookups ----------------------------------------------------------------------------

    def version(self, queue: str) -> int:
        """Changes whenever the usage of `queue` or of any queue of its cohort tree changes."""
        return self._versions[self._group.get(queue, queue)]

    def covers(self, queue: str, resource: str) -> bool:
        return (queue, resource) in self._covered

    def flavors(self, queue: str, resource: str) -> tuple[str, ...]:
        """The flavors, in the queue's order of preference, holding quota for `resource`."""
        return self._flavors.get((queue, resource), ())

    def quota(self, queue: str, flavor: str, resource: str) -> ResourceQuota | None:
        return self._quota.get((queue, flavor, resource))

    def cohort(self, queue: str) -> str | None:
        return self._cohort.get(queue)

    # --- what fits --------------------------------------------------------------------------

    def fits(self, queue: str, flavor: str, resource: str, amount: float) -> bool:
        """Would `amount` more fit now (Kueue's Fits: at most what is available)?"""
        if amount <= 0:
            return True
        key = (queue, flavor, resource)
        entry = self._entries.get(key)
        if entry is None:
            return (queue, resource) not in self._covered
        used = self.usage[key]
        after = used + amount
        chain = entry.chain
        if not chain:
            return after <= entry.nominal + EPSILON
        if len(chain) > 1:
            fits = amount <= self._available(key, entry, used, clamp=False) + EPSILON
            if not fits and self._held:
                self._refused_by_holds()
            return fits
        cap = entry.cap
        if cap is not None and after > cap + EPSILON:
            return False
        kept = entry.kept
        from_pool = max(0.0, after - kept) - max(0.0, used - kept)
        pool_used = self._pool_used[chain[0]]
        if self._held:
            pool_used -= self._held.get(key, 0.0)
            if pool_used + from_pool > entry.pool + EPSILON:
                others = self._held_pool.get(chain[0], 0.0) - self._held.get(key, 0.0)
                if pool_used - others + from_pool <= entry.pool + EPSILON:
                    self._refused_by_holds()  # it fits but for the others' holds
                return False
            return True
        return pool_used + from_pool <= entry.pool + EPSILON

    def most_ever(self, queue: str, flavor: str, resource: str) -> float:
        """The most of `resource` in `flavor` the queue could hold, everything else idle
        (Kueue's potentialAvailable)."""
        if (queue, resource) not in self._covered:
            return float("inf")
        entry = self._entries.get((queue, flavor, resource))
        if entry is None:
            return 0.0
        chain = entry.chain
        if not chain:
            return entry.nominal
        most = self._subtree.get(chain[-1], 0.0)
        for ckey in reversed(chain[:-1]):
            most = self._local[ckey] + most
            limit = self._cohort_bl[ckey]
            if limit is not None:
                most = min(most, self._subtree[ckey] + limit)
        most = entry.kept + most
        if entry.cap is not None:
            most = min(most, entry.cap)
        return most

    def headroom(self, queue: str, flavor: str, resource: str) -> float:
        """How much more the queue could take now (an upper bound)."""
        if (queue, resource) not in self._covered:
            return float("inf")
        key = (queue, flavor, resource)
        entry = self._entries.get(key)
        if entry is None:
            return 0.0
        used = self.usage[key]
        chain = entry.chain
        if not chain:
            return entry.nominal - used
        if len(chain) > 1:
            return self._available(key, entry, used, clamp=True)
        pool_used = self._pool_used[chain[0]]
        if self._held:
            pool_used -= self._held.get(key, 0.0)
            others = self._held_pool.get(chain[0], 0.0) - self._held.get(key, 0.0)
            if others > EPSILON and pool_used - others < entry.pool - EPSILON:
                self._refused_by_holds()  # the others' holds lowered it
        room = max(0.0, entry.kept - used) + max(0.0, entry.pool - pool_used)
        if entry.cap is not None:
            room = min(room, entry.cap - used)
        return room

    def _available(self, key: Key, entry: _Entry, used: float, *, clamp: bool) -> float:
        """Kueue's available(): walk from the root down the queue's path. `clamp`: a level
        that is in debt counts as having nothing, not less (an upper bound)."""
        chain = entry.chain
        usages = self._usages(key, chain)
        top = len(chain) - 1
        avail = self._subtree.get(chain[top], 0.0) - usages[top]
        for i in range(top - 1, -1, -1):
            if clamp and avail < 0.0:
                avail = 0.0
            ckey = chain[i]
            local = self._local[ckey]
            usage = usages[i]
            limit = self._cohort_bl[ckey]
            if limit is not None:
                stored = self._subtree[ckey] - local
                avail = min(stored - max(0.0, usage - local) + limit, avail)
            avail = max(0.0, local - usage) + avail
        if clamp and avail < 0.0:
            avail = 0.0
        kept = entry.kept
        if entry.bl is not None:
            stored = entry.nominal - kept
            avail = min(stored - max(0.0, used - kept) + entry.bl, avail)
        return max(0.0, kept - used) + avail

    def _usages(self, key: Key, chain: tuple[Key, ...]) -> list[float]:
        """The usages of the queue's cohorts, less what the queue itself holds (`hold`)."""
        pool_used = self._pool_used
        usages = [pool_used[c] for c in chain]
        held = self._held.get(key) if self._held else None
        if held:
            for i, ckey in enumerate(chain):  # Kueue's removeUsage
                stored = usages[i] - self._local[ckey]
                usages[i] -= held
                if stored <= 0.0:
                    break
                held = min(held, stored)
        return usages

    def fit_level(self, queue: str, flavor: str, resource: str, amount: float) -> int | None:
        """The lowest node of the queue's path whose subtree quota holds `amount` more (Kueue's
        QuantitiesFitInQuota along PathParentToRoot, as collectCandidatesForHierarchicalReclaim
        goes): 0 the queue's nominal quota, i its i-th cohort; None: none."""
        key = (queue, flavor, resource)
        entry = self._entries.get(key)
        if entry is None:
            return None
        used = self.usage[key]
        if used + amount <= entry.nominal + EPSILON:
            return 0
        remaining = max(0.0, amount - max(0.0, entry.kept - used))
        usages = self._usages(key, entry.chain)
        for i, ckey in enumerate(entry.chain):
            usage = usages[i]
            if usage + remaining <= self._subtree.get(ckey, 0.0) + EPSILON:
                return i + 1
            remaining = max(0.0, remaining - max(0.0, self._local.get(ckey, 0.0) - usage))
        return None

    def borrowing_level(self, queue: str, flavor: str, resource: str, amount: float) -> int:
        """How far up its tree the queue must borrow to take `amount` more (Kueue's
        FindHeightOfLowestSubtreeThatFits, an Assignment's Borrows): 0 within its nominal
        quota, else the height of the lowest cohort of its path whose subtree holds it (the
        root's if none does); 0 without a cohort."""
        level = self.fit_level(queue, flavor, resource, amount)
        path = self._paths.get(queue, ())
        if not path or level == 0:
            return 0
        if level is None:
            return self._height[path[-1]]
        return self._height[path[level - 1]]

    def may_reclaim_in_hierarchy(
        self, queue: str, flavor: str, resource: str, amount: float
    ) -> bool:
        """Would the queue borrow `amount` more from a cohort below its root (Kueue's
        mayReclaimInHierarchy, a reason to try preemption beyond its nominal quota)?"""
        path = self._paths.get(queue, ())
        if len(path) < 2:
            return False
        level = self.fit_level(queue, flavor, resource, amount)
        return level is not None and level < len(path)

    # --- usage ------------------------------------------------------------------------------

    def charge(self, queue: str, flavor: str, resource: str, amount: float) -> None:
        if amount == 0 or (queue, resource) not in self._covered:
            return
        key = (queue, flavor, resource)
        before = self.usage[key]
        self.usage[key] = before + amount
        self._versions[self._group.get(queue, queue)] += 1
        entry = self._entries.get(key)
        if entry is not None and entry.chain:
            kept = entry.kept
            delta = max(0.0, before + amount - kept) - max(0.0, before - kept)
            chain = entry.chain
            if len(chain) == 1:
                self._pool_used[chain[0]] += delta
            else:
                self._pass_up(chain, delta)

    def _pass_up(self, chain: tuple[Key, ...], delta: float) -> None:
        """What a child passes to its parent changed by `delta`: so does the parent's usage,
        and what it passes up beyond its local quota (Kueue's addUsage and removeUsage)."""
        pool_used = self._pool_used
        last = len(chain) - 1
        for i, ckey in enumerate(chain):
            if delta == 0:
                return
            usage = pool_used[ckey]
            pool_used[ckey] = usage + delta
            if i == last:
                return
            local = self._local[ckey]
            if delta > 0:
                delta = max(0.0, delta - max(0.0, local - usage))
            else:
                delta = -min(-delta, max(0.0, usage - local))

    def hold(self, queue: str, flavor: str, resource: str, amount: float) -> None:
        """Keep `amount` of the queue's unused nominal quota from the rest of its cohort tree
        until `release_holds` (Kueue's reserveCapacityForUnreclaimablePreempt, for one
        cycle)."""
        key = (queue, flavor, resource)
        entry = self._entries.get(key)
        if entry is None or not entry.chain or amount <= 0:
            return
        used = self.usage[key]
        kept = entry.kept
        delta = max(0.0, used + amount - kept) - max(0.0, used - kept)
        self._pass_up(entry.chain, delta)
        self._held[key] = self._held.get(key, 0.0) + delta
        top = entry.chain[0]
        self._held_pool[top] = self._held_pool.get(top, 0.0) + delta
        self._versions[self._group[queue]] += 1

    def _refused_by_holds(self) -> None:
        self.hold_refused = True

    def release_holds(self) -> None:
        for key, delta in self._held.items():
            self._pass_up(self._entries[key].chain, -delta)
            self._versions[self._group[key[0]]] += 1
        self._held.clear()
        self._held_pool.clear()

    def borrowing_with(self, queue: str, flavor: str, resource: str, amount: float) -> bool:
        """Would `amount` more take the queue beyond its nominal quota of `resource` in
        `flavor` (Kueue's BorrowingWith)? A resource it does not cover is never borrowed."""
        if amount <= 0 or (queue, resource) not in self._covered:
            return False
        quota = self._quota.get((queue, flavor, resource))
        nominal = quota.nominal_quota if quota else 0.0
        return self.usage[(queue, flavor, resource)] + amount > nominal + EPSILON

    # --- nominal quota ----------------------------------------------------------------------

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


def _lendable(subtree: float, quota: ResourceQuota | None) -> float:
    """What a node with this subtree quota lends its parent (Kueue: subtree minus local)."""
    if quota is None or quota.lending_limit is None:
        return subtree
    return min(subtree, quota.lending_limit)


def _local_quota(subtree: float, quota: ResourceQuota | None) -> float:
    """What a node keeps from its parent (Kueue's localQuota)."""
    if quota is None or quota.lending_limit is None:
        return 0.0
    return max(0.0, subtree - quota.lending_limit)


def _parents(quotas: QuotaSet) -> dict[str, str | None]:
    """Every cohort (named by a Cohort object, a queue or a parent) and its parent; a cohort on
    a cycle of parents has none."""
    declared: dict[str, str | None] = {c.name: c.parent or None for c in quotas.cohorts}
    names: list[str] = []
    for name in _cohort_names(quotas.cohorts, quotas.cluster_queues):
        if name not in names:
            names.append(name)
    parents = {name: declared.get(name) for name in names}
    for name in names:
        seen: list[str] = []
        current: str | None = name
        while current is not None and current not in seen:
            seen.append(current)
            current = parents.get(current)
        if current is not None:  # a cycle through `current`
            start = current
            while True:
                following = parents[current]
                parents[current] = None
                if following is None or following == start:
                    break
                current = following
    return parents


def _cohort_names(cohorts: Iterable[Cohort], queues: Iterable[ClusterQueue]) -> Iterable[str]:
    for cohort in cohorts:
        yield cohort.name
        if cohort.parent:
            yield cohort.parent
    for queue in queues:
        if queue.cohort:
            yield queue.cohort
