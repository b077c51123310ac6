"""The quota ledger as Kueue's resource-node tree (pkg/cache/scheduler/resource_node.go), and
what the admission cycle and preemption make of it.

Covers: subtree quotas, local quotas and usage passed up beyond them, in two- and three-level
trees; what a queue may take now (available()) and ever (potentialAvailable()), with lending and
borrowing limits of cohorts and cohorts' own quotas; implicit cohorts; a cycle of parents cut;
capacity held for one cycle; the borrowing level (FindHeightOfLowestSubtreeThatFits) and the
cycle ordering by it; a one-level cohort kept exactly as the flat model it was, and random trees
against a plain recursive port of Kueue's functions; hierarchical reclaim (subtrees within their
quota skipped, the advantage of a subtree that holds the request, a candidate valid only while
the cohorts on its way are above their quota). Every expected figure is worked out by hand from
Kueue's definitions, in the comments.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import pytest

from domain.model.quota import (
    NVIDIA_GPU,
    ClusterQueue,
    Cohort,
    FlavorQuotas,
    QuotaSet,
    ReclaimWithinCohort,
    ResourceGroup,
    ResourceQuota,
)
from domain.scheduling.durations import Durations
from domain.scheduling.estimator import HORIZON, Snapshot, estimate
from domain.scheduling.quota_ledger import QuotaLedger
from tests.support.admission_tables import A100, CLUSTER, NOW, P, Q, Scenario, W, job_id

F = "a100"
GPU = NVIDIA_GPU
Limits = tuple[float, float | None, float | None]


def limits(nominal: float, borrow: float | None = None, lend: float | None = None) -> Limits:
    return (nominal, borrow, lend)


def group(quota: Limits | None, flavor: str = F) -> tuple[ResourceGroup, ...]:
    if quota is None:
        return ()
    return (ResourceGroup((GPU,), (FlavorQuotas(flavor, (ResourceQuota(GPU, *quota),)),)),)


def cq(name: str, cohort: str | None, nominal: float, **kw: float | None) -> ClusterQueue:
    return ClusterQueue(
        CLUSTER,
        name,
        NOW,
        NOW,
        cohort=cohort,
        resource_groups=group(limits(nominal, kw.get("borrow"), kw.get("lend"))),
    )


def cohort(
    name: str,
    parent: str | None = None,
    nominal: float | None = None,
    *,
    borrow: float | None = None,
    lend: float | None = None,
    flavor: str = F,
) -> Cohort:
    quota = None
    if nominal is not None or borrow is not None or lend is not None:
        quota = limits(nominal or 0, borrow, lend)
    return Cohort(CLUSTER, name, NOW, parent=parent, resource_groups=group(quota, flavor))


def ledger(queues: Sequence[ClusterQueue], cohorts: Sequence[Cohort] = ()) -> QuotaLedger:
    return QuotaLedger(QuotaSet(cluster_queues=tuple(queues), cohorts=tuple(cohorts)))


def available(book: QuotaLedger, queue: str) -> float:
    """What `fits` lets the queue take now, to the unit (quotas here are whole GPUs)."""
    amount = 0
    while book.fits(queue, F, GPU, amount + 1):
        amount += 1
    return amount


# --- two levels ------------------------------------------------------------------------------


def two_levels(left: Cohort | None = None) -> QuotaLedger:
    """root <- left {a: 4, b: 2}; root <- right {c: 6}. SubtreeQuota: left 6, right 6, root 12
    (less what left keeps, if it has a lending limit)."""
    return ledger(
        [cq("a", "left", 4), cq("b", "left", 2), cq("c", "right", 6)],
        [left or cohort("left", "root"), cohort("right", "root")],
    )


def test_two_levels_usage_goes_up_to_the_root() -> None:
    book = two_levels()
    assert book.path("a") == ("left", "root") and book.root("c") == "root"
    assert book.subtree_queues("root") == ("a", "b", "c")
    assert book.subtree_queues("left") == ("a", "b")
    assert book.most_ever("a", F, GPU) == 12  # potentialAvailable: 0 + 0 + 12
    book.charge("a", F, GPU, 3)  # no local quota anywhere: left and root use 3
    assert available(book, "a") == 9 and available(book, "c") == 9
    book.charge("c", F, GPU, 6)  # right and root: root uses 9 of 12
    assert available(book, "a") == 3 and available(book, "b") == 3
    assert book.fits("a", F, GPU, 3) and not book.fits("a", F, GPU, 4)
    assert book.headroom("a", F, GPU) == 3
    assert not book.cohort_borrowing("left", F, GPU)  # 3 of 6
    book.charge("a", F, GPU, 4)  # left uses 7 of its 6
    assert book.cohort_borrowing("left", F, GPU)
    book.charge("a", F, GPU, -7)
    book.charge("c", F, GPU, -6)
    assert available(book, "a") == 12


def test_cohort_lending_limit_keeps_its_subtree_quota_local() -> None:
    # left lends 2: localQuota(left) = 6 - 2 = 4; SubtreeQuota(root) = 2 + 6 = 8
    book = two_levels(cohort("left", "root", 0, lend=2))
    assert book.most_ever("c", F, GPU) == 8  # 0 + (0 + 8)
    assert book.most_ever("a", F, GPU) == 12  # 0 + (4 + 8)
    book.charge("a", F, GPU, 5)  # left uses 5: 1 beyond its local 4 goes to root
    assert available(book, "c") == 7  # root: 8 - 1
    assert available(book, "a") == 7  # left: max(0, 4 - 5) + root's 7
    book.charge("c", F, GPU, 7)  # right 7, root 8 of 8
    assert available(book, "a") == 0 and available(book, "b") == 0
    book.charge("a", F, GPU, -5)  # removeUsage: left stored 1 in root, gives back 1
    assert available(book, "a") == 5  # left keeps 4 unused, root has 8 - 7 = 1
    assert available(book, "c") == 1


def test_a_subtree_in_debt_takes_from_what_a_cohort_keeps() -> None:
    # overadmission (quota lowered under running work): root uses 10 of 8; available() of a is
    # what left keeps unused (4) plus root's -2
    book = two_levels(cohort("left", "root", 0, lend=2))
    book.charge("c", F, GPU, 10)
    assert available(book, "a") == 2 and available(book, "c") == 0
    assert book.headroom("a", F, GPU) == 4  # an upper bound: a level in debt counts as 0


def test_cohort_borrowing_limit_caps_what_its_subtree_takes_from_its_parent() -> None:
    # left may take 1 beyond what it lends root: withMaxFromParent = 6 - used + 1
    book = two_levels(cohort("left", "root", 0, borrow=1))
    assert book.most_ever("a", F, GPU) == 7  # min(6 + 1, 0 + 12)
    assert book.most_ever("c", F, GPU) == 12
    assert available(book, "a") == 7
    book.charge("a", F, GPU, 6)  # left 6, root 6
    assert available(book, "a") == 1 and available(book, "b") == 1  # min(6 - 6 + 1, 12 - 6)
    assert available(book, "c") == 6
    assert book.headroom("b", F, GPU) == 1


def test_queue_limits_within_a_tree() -> None:
    # a lends 1 (keeps 3) and may borrow 2: left = 1 + 2, root = 3 + 6
    book = ledger(
        [cq("a", "left", 4, borrow=2, lend=1), cq("b", "left", 2), cq("c", "right", 6)],
        [cohort("left", "root"), cohort("right", "root")],
    )
    assert book.most_ever("a", F, GPU) == 6  # min(4 + 2, 3 + 9)
    assert book.most_ever("b", F, GPU) == 9
    book.charge("c", F, GPU, 9)  # root 9 of 9
    assert available(book, "a") == 3  # what it keeps
    assert available(book, "b") == 0


# --- three levels, cohorts' own quotas -----------------------------------------------------


def three_levels() -> QuotaLedger:
    """root (own 4) <- mid (own 2) <- leaf <- a (1); mid <- c (0); root <- b (3).
    SubtreeQuota: leaf 1, mid 2 + 1 + 0 = 3, root 4 + 3 + 3 = 10. Heights: leaf 1, mid 2,
    root 3."""
    return ledger(
        [cq("a", "leaf", 1), cq("b", "root", 3), cq("c", "mid", 0)],
        [cohort("root", None, 4), cohort("mid", "root", 2), cohort("leaf", "mid")],
    )


def test_three_levels_with_cohort_quotas() -> None:
    book = three_levels()
    assert book.path("a") == ("leaf", "mid", "root")
    assert [book.cohort_height(c) for c in ("leaf", "mid", "root")] == [1, 2, 3]
    assert {q: book.most_ever(q, F, GPU) for q in "abc"} == {"a": 10, "b": 10, "c": 10}
    book.charge("c", F, GPU, 3)  # mid 3, root 3
    book.charge("b", F, GPU, 5)  # root 8
    assert available(book, "a") == 2 and available(book, "b") == 2
    assert book.cohort_borrowing("root", F, GPU) is False
    assert book.cohort_borrowing("mid", F, GPU) is False  # 3 of 3
    book.charge("a", F, GPU, 1)  # leaf 1 of 1, mid 4 of 3, root 9
    assert book.cohort_borrowing("mid", F, GPU) and not book.cohort_borrowing("leaf", F, GPU)
    assert available(book, "c") == 1


def test_borrowing_level_is_the_height_of_the_lowest_subtree_that_fits() -> None:
    book = three_levels()
    assert book.borrowing_level("a", F, GPU, 1) == 0  # within its nominal quota
    assert book.fit_level("a", F, GPU, 2) == 2  # leaf: 1 < 2; mid: 3 >= 2
    assert book.borrowing_level("a", F, GPU, 2) == 2
    assert book.borrowing_level("a", F, GPU, 5) == 3  # mid 3 < 5; root 10
    assert book.fit_level("a", F, GPU, 11) is None
    assert book.borrowing_level("a", F, GPU, 11) == 3  # no fit: the root's height
    assert book.borrowing_level("b", F, GPU, 4) == 3  # b borrows from the root
    assert book.may_reclaim_in_hierarchy("a", F, GPU, 2)  # mid is below the root
    assert not book.may_reclaim_in_hierarchy("a", F, GPU, 5)
    assert not book.may_reclaim_in_hierarchy("b", F, GPU, 4)  # b's only cohort is the root
    book.charge("c", F, GPU, 3)  # mid full: a's 2 now fit only at the root
    assert book.borrowing_level("a", F, GPU, 2) == 3


def test_cohort_lending_limit_above_a_queue_lending_limit() -> None:
    # a (4, lends 1) keeps 3; mid (lends 0) keeps everything: root's SubtreeQuota is b's 2
    book = ledger(
        [cq("a", "mid", 4, lend=1), cq("b", "root", 2)],
        [cohort("mid", "root", 0, lend=0)],
    )
    assert book.most_ever("b", F, GPU) == 2
    assert book.most_ever("a", F, GPU) == 6  # 3 + (1 + 2)
    book.charge("a", F, GPU, 5)  # a passes 2 up to mid, mid keeps 1, passes 1 to root
    assert available(book, "b") == 1
    assert available(book, "a") == 1


# --- implicit cohorts, cycles --------------------------------------------------------------


def test_implicit_cohorts_have_no_quota_and_no_parent() -> None:
    # team names org as its parent; no Cohort object is named org (nor is z's "org")
    book = ledger(
        [cq("a", "team", 2), cq("z", "org", 3), cq("solo", "alone", 1)],
        [cohort("team", "org")],
    )
    assert book.path("a") == ("team", "org") and book.path("z") == ("org",)
    assert book.subtree_queues("org") == ("a", "z")
    assert book.most_ever("a", F, GPU) == 5 and book.most_ever("z", F, GPU) == 5
    assert book.most_ever("solo", F, GPU) == 1  # an implicit cohort of its own
    book.charge("z", F, GPU, 4)
    assert available(book, "a") == 1
    assert book.version("a") == book.version("z") != book.version("solo")


def test_a_cycle_of_parents_is_cut() -> None:
    book = ledger(
        [cq("a", "x", 2), cq("b", "y", 3), cq("c", "w", 1), cq("d", "self", 1)],
        [cohort("x", "y"), cohort("y", "x"), cohort("w", "x"), cohort("self", "self")],
    )
    assert book.path("a") == ("x",) and book.path("b") == ("y",)  # x and y: no parent
    assert book.path("c") == ("w", "x")  # w leads into the cycle: its parent stays
    assert book.path("d") == ("self",)
    assert book.most_ever("a", F, GPU) == 3  # a's 2 and c's 1; not b's
    assert book.most_ever("b", F, GPU) == 3


# --- capacity held for a cycle ---------------------------------------------------------------


def test_a_hold_keeps_quota_from_the_tree_but_not_from_its_queue() -> None:
    book = two_levels()
    book.charge("c", F, GPU, 8)  # c borrows 2: root 8 of 12
    book.hold("a", F, GPU, 4)  # a's unused 4 go up to left and root: root 12
    assert available(book, "b") == 0 and available(book, "c") == 0
    assert available(book, "a") == 4  # its own hold is its to use
    before = book.version("b")
    book.release_holds()
    assert book.version("b") != before
    assert available(book, "b") == 4


# --- a one-level cohort is the flat model ------------------------------------------------------


@dataclass
class Flat:
    """The flat cohort model the ledger had before trees (kept here as the reference)."""

    queues: dict[str, Limits]
    usage: dict[str, float] = field(default_factory=dict)
    held: dict[str, float] = field(default_factory=dict)

    def kept(self, name: str) -> float:
        nominal, _, lend = self.queues[name]
        return nominal - (nominal if lend is None else lend)

    def pool(self) -> float:
        return sum(n if lend is None else lend for n, _, lend in self.queues.values())

    def pool_used(self) -> float:
        return sum(max(0.0, self.usage.get(q, 0.0) - self.kept(q)) for q in self.queues) + sum(
            self.held.values()
        )

    def fits(self, name: str, amount: float) -> bool:
        nominal, borrow, _ = self.queues[name]
        used = self.usage.get(name, 0.0)
        after = used + amount
        if borrow is not None and after > nominal + borrow + 1e-9:
            return False
        kept = self.kept(name)
        from_pool = max(0.0, after - kept) - max(0.0, used - kept)
        return self.pool_used() - self.held.get(name, 0.0) + from_pool <= self.pool() + 1e-9

    def headroom(self, name: str) -> float:
        nominal, borrow, _ = self.queues[name]
        used = self.usage.get(name, 0.0)
        pool_used = self.pool_used() - self.held.get(name, 0.0)
        room = max(0.0, self.kept(name) - used) + max(0.0, self.pool() - pool_used)
        return room if borrow is None else min(room, nominal + borrow - used)

    def most_ever(self, name: str) -> float:
        nominal, borrow, _ = self.queues[name]
        most = self.kept(name) + self.pool()
        return most if borrow is None else min(most, nominal + borrow)


@pytest.mark.parametrize("seed", range(20))
def test_a_one_level_cohort_is_the_flat_model(seed: int) -> None:
    rng = random.Random(seed)
    queues: dict[str, Limits] = {}
    for i in range(rng.randint(1, 4)):
        nominal = rng.randint(0, 8)
        borrow = rng.choice([None, rng.randint(0, 6)])
        lend = rng.choice([None, rng.randint(0, nominal)])
        queues[f"q{i}"] = (nominal, borrow, lend)
    flat = Flat(queues)
    book = ledger(
        [cq(name, "pool", n, borrow=b, lend=lend) for name, (n, b, lend) in queues.items()],
        [cohort("pool", None, None)] if rng.random() < 0.5 else [],
    )
    for _ in range(40):
        name = rng.choice(list(queues))
        for q in queues:
            assert book.most_ever(q, F, GPU) == flat.most_ever(q)
            assert book.headroom(q, F, GPU) == flat.headroom(q)
            for amount in (0.5, 1, 2, 3, 5, 8):
                assert book.fits(q, F, GPU, amount) == flat.fits(q, amount), (q, amount)
        step: float = max(rng.choice([-3, -1, 1, 2, 4]), -flat.usage.get(name, 0.0))
        if rng.random() < 0.1 and not flat.held:
            amount = rng.randint(1, 4)
            used = flat.usage.get(name, 0.0)
            kept = flat.kept(name)
            flat.held[name] = max(0.0, used + amount - kept) - max(0.0, used - kept)
            book.hold(name, F, GPU, amount)
        elif rng.random() < 0.2 and flat.held:
            flat.held.clear()
            book.release_holds()
        elif step:
            flat.usage[name] = flat.usage.get(name, 0.0) + step
            book.charge(name, F, GPU, step)


# --- random trees against a plain port of Kueue's recursion -----------------------------------


@dataclass
class Node:
    """One node of Kueue's tree, its figures worked out from scratch (updateCohortResourceNode,
    accumulateFromChild, available, potentialAvailable)."""

    name: str
    quota: Limits | None
    parent: Node | None = None
    children: list[Node] = field(default_factory=list)
    used: float = 0.0
    """A queue's usage."""

    def subtree(self) -> float:
        own = self.quota[0] if self.quota else 0.0
        if not self.children:
            return own
        return own + sum(c.subtree() - c.local() for c in self.children)

    def local(self) -> float:
        if self.parent is None or self.quota is None or self.quota[2] is None:
            return 0.0
        return max(0.0, self.subtree() - self.quota[2])

    def usage(self) -> float:
        if not self.children and self.name.startswith("q"):
            return self.used
        return sum(max(0.0, c.usage() - c.local()) for c in self.children)

    def available(self) -> float:
        if self.parent is None:
            return self.subtree() - self.usage()
        parent = self.parent.available()
        limit = self.quota[1] if self.quota else None
        if limit is not None:
            stored = self.subtree() - self.local()
            parent = min(stored - max(0.0, self.usage() - self.local()) + limit, parent)
        return max(0.0, self.local() - self.usage()) + parent

    def potential(self) -> float:
        if self.parent is None:
            return self.subtree()
        most = self.local() + self.parent.potential()
        limit = self.quota[1] if self.quota else None
        return most if limit is None else min(self.subtree() + limit, most)


def random_tree(rng: random.Random) -> tuple[list[ClusterQueue], list[Cohort], dict[str, Node]]:
    nodes: dict[str, Node] = {}
    cohorts: list[Cohort] = []
    for i in range(rng.randint(1, 5)):
        name = f"c{i}"
        parent = nodes[f"c{rng.randrange(i)}"] if i and rng.random() < 0.8 else None
        quota: Limits | None = None
        if rng.random() < 0.6:
            quota = (
                rng.randint(0, 4),
                rng.choice([None, rng.randint(0, 5)]) if parent else None,
                rng.choice([None, rng.randint(0, 6)]) if parent else None,
            )
        node = nodes[name] = Node(name, quota, parent)
        if parent is not None:
            parent.children.append(node)
        if quota is None:
            cohorts.append(cohort(name, parent.name if parent else None))
        else:
            cohorts.append(
                cohort(
                    name, parent.name if parent else None, quota[0], borrow=quota[1], lend=quota[2]
                )
            )
    queues: list[ClusterQueue] = []
    for i in range(rng.randint(1, 6)):
        name = f"q{i}"
        parent = nodes[f"c{rng.randrange(len(cohorts))}"]
        nominal = rng.randint(0, 6)
        quota = (
            nominal,
            rng.choice([None, rng.randint(0, 5)]),
            rng.choice([None, rng.randint(0, nominal)]),
        )
        node = nodes[name] = Node(name, quota, parent)
        parent.children.append(node)
        queues.append(cq(name, parent.name, nominal, borrow=quota[1], lend=quota[2]))
    return queues, cohorts, nodes


@pytest.mark.parametrize("seed", range(40))
def test_random_trees_follow_kueue(seed: int) -> None:
    rng = random.Random(seed)
    queues, cohorts, nodes = random_tree(rng)
    book = ledger(queues, cohorts)
    names = [q.name for q in queues]
    for _ in range(30):
        for name in names:
            node = nodes[name]
            assert book.most_ever(name, F, GPU) == node.potential()
            expected = node.available()
            assert available(book, name) == max(0, int(expected)), name
            assert book.headroom(name, F, GPU) >= expected - 1e-9
        for c in cohorts:
            assert book.cohort_borrowing(c.name, F, GPU) == (
                nodes[c.name].usage() > nodes[c.name].subtree()
            )
        name = rng.choice(names)
        step = max(rng.choice([-3, -1, 1, 2, 4]), -nodes[name].used)
        if step > 0 and not book.fits(name, F, GPU, step):
            continue  # as admission charges: no node goes into debt
        nodes[name].used += step
        book.charge(name, F, GPU, step)


# --- the admission cycle --------------------------------------------------------------------


def run(scenario: Scenario, cohorts: list[Cohort]) -> tuple[set[str], set[str]]:
    """One estimator pass at NOW over the scenario, with these cohorts: (admitted, preempted)."""
    jobs = scenario.jobs()
    for job in jobs:
        job.estimated_duration_seconds = int(2 * HORIZON.total_seconds())
    quotas = replace(scenario.quota_set(), cohorts=tuple(cohorts))
    schedule = estimate(Snapshot(NOW, scenario.node_objects(), quotas, jobs, Durations()))
    admitted = {w.key for w in scenario.waiting if schedule.jobs[job_id(w.key)].start == NOW}
    preempted = {
        w.key for w in scenario.running if schedule.jobs[job_id(w.key)].preempted_at == NOW
    }
    return admitted, preempted


def kq(
    name: str,
    cohort_name: str,
    nominal: int,
    reclaim: ReclaimWithinCohort = ReclaimWithinCohort.NEVER,
) -> Q:
    return Q(name, {A100: (nominal, None, None)}, cohort_name, reclaim=reclaim)


ANY = ReclaimWithinCohort.ANY
NODES = [("n1", A100, 16), ("n2", A100, 16)]


def test_a_borrowing_level_orders_the_cycle() -> None:
    # Kueue's TestSchedule "in a hierarchical cohort, workload borrowing less is scheduled
    # first": guaranteed borrows from its cohort's own 4 (level 1), best-effort from the root
    # (level 2, the root's height); both want the same 4, so the lower priority goes first
    scenario = Scenario(
        "borrowing level",
        NODES,
        [kq("guaranteed", "guaranteed", 0), kq("best-effort", "root", 0)],
        waiting=[
            W("guaranteed", "guaranteed", 4, P.SPOT),
            W("best-effort", "best-effort", 4, P.NORMAL),
        ],
    )
    cohorts = [cohort("root"), cohort("guaranteed", "root", 4, flavor=A100)]
    assert run(scenario, cohorts) == ({"guaranteed"}, set())


def test_reclaim_skips_a_subtree_within_its_quota() -> None:
    # root <- left {a: 2, c: 2}, mid {d: 2}, right {b: 4}: SubtreeQuota 4 + 2 + 4 = 10. c uses
    # 4 (left 4 of 4: within its quota), d 4 (mid 4 of 2), root 8: b's 4 do not fit. b fits its
    # own nominal quota, so it has the advantage over every other queue; left is within its
    # quota, so c's workload is never a candidate (collectCandidatesInSubtree), d's goes.
    scenario = Scenario(
        "reclaim in a tree",
        NODES,
        [
            kq("a", "left", 2),
            kq("c", "left", 2),
            kq("d", "mid", 2),
            kq("b", "right", 4, reclaim=ANY),
        ],
        running=[
            W("c-low", "c", 4, P.LOW, preemptible=True, node="n1"),
            W("d-high", "d", 4, P.HIGH, preemptible=True, node="n2"),
        ],
        waiting=[W("b-new", "b", 4, P.NORMAL)],
    )
    tree = [cohort("left", "root"), cohort("mid", "root"), cohort("right", "root")]
    assert run(scenario, tree) == ({"b-new"}, {"d-high"})
    # one flat cohort: c borrows too, and its workload is the lower priority
    flat = replace(scenario, queues=[replace(q, cohort="root") for q in scenario.queues])
    assert run(flat, []) == ({"b-new"}, {"c-low"})


def test_a_candidate_goes_only_while_the_cohorts_on_its_way_are_above_their_quota() -> None:
    # root <- right {b: 4}, mid {d: 1, e: 1}, far {f: 0}: SubtreeQuota 4 + 2 + 0 = 6, all used
    # (mid 4 of 2, far 2 of 0). b wants 4: e-spot goes first (mid 2 of 2 then: b has 2); d is
    # still above its nominal quota, but mid no longer is, so d-low is no candidate
    # (candidateIsValid) and f-normal goes; e-spot cannot be given back (2 < 4).
    scenario = Scenario(
        "validity on the way",
        NODES,
        [kq("b", "right", 4, reclaim=ANY), kq("d", "mid", 1), kq("e", "mid", 1), kq("f", "far", 0)],
        running=[
            W("e-spot", "e", 2, P.SPOT, preemptible=True, node="n1"),
            W("d-low", "d", 2, P.LOW, preemptible=True, node="n1"),
            W("f-normal", "f", 2, P.NORMAL, preemptible=True, node="n2"),
        ],
        waiting=[W("b-new", "b", 4, P.HIGH)],
    )
    tree = [cohort("right", "root"), cohort("mid", "root"), cohort("far", "root")]
    assert run(scenario, tree) == ({"b-new"}, {"e-spot", "f-normal"})
    flat = replace(scenario, queues=[replace(q, cohort="root") for q in scenario.queues])
    assert run(flat, []) == ({"b-new"}, {"e-spot", "d-low"})


def test_a_subtree_that_holds_the_request_gives_the_advantage() -> None:
    # root <- left (own 4) {q: 0, s: 2}, right {x: 0}. left: SubtreeQuota 6, s uses 3; root: 6,
    # x uses 3, so root is full. q wants 2: beyond its nominal quota (0), but left holds it
    # (3 + 2 <= 6): q may reclaim in the hierarchy (mayReclaimInHierarchy), and has the
    # advantage over x (found at the root, above left) but not over s (found in left, where q
    # alone does not fit). q is not under its nominal quota: one attempt, borrowing, in which s
    # (reclaim without borrowing) is no candidate and x (hierarchical reclaim) is, though s has
    # the lower priority.
    scenario = Scenario(
        "advantage of a subtree",
        NODES,
        [
            kq("q", "left", 0, reclaim=ReclaimWithinCohort.LOWER_PRIORITY),
            kq("s", "left", 2),
            kq("x", "right", 0),
        ],
        running=[
            W("s-spot", "s", 3, P.SPOT, preemptible=True, node="n1"),
            W("x-normal", "x", 3, P.NORMAL, preemptible=True, node="n2"),
        ],
        waiting=[W("q-new", "q", 2, P.HIGH)],
    )
    tree = [cohort("left", "root", 4, flavor=A100), cohort("right", "root")]
    assert run(scenario, tree) == ({"q-new"}, {"x-normal"})
    # one flat cohort with the same quota: q cannot preempt beyond its nominal quota
    flat = replace(scenario, queues=[replace(q, cohort="root") for q in scenario.queues])
    assert run(flat, [cohort("root", None, 4, flavor=A100)]) == (set(), set())
