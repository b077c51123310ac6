"""The parts admission is split into, each on its own.

Covers: flavor assignment returns a value (the flavor and a node per pod, or why none fits)
and takes nothing; admitting the assignment takes the nodes' GPUs and charges the queue, releasing
gives both back; the admission order (priority, then age, then key) and the victim order
(other queues' borrowers, lowest priority, most recently started) compare as the tuples they name.
"""

from __future__ import annotations

from datetime import timedelta

from domain.model.quota import NVIDIA_GPU
from domain.scheduling.admission import ClusterModel
from domain.scheduling.demand import Demand
from domain.scheduling.flavors import Assignment, NoFit
from domain.scheduling.ordering import AdmissionOrder, VictimOrder
from tests.support.admission_tables import A100, NOW, Scenario, q

TWO_NODES = Scenario("two nodes", [("n1", A100, 8), ("n2", A100, 4)], [q("cq", 12)])


def model() -> ClusterModel:
    return ClusterModel(TWO_NODES.node_objects(), TWO_NODES.quota_set())


def demand(key: str, gpus: int, *, pods: int = 1, priority: int = 0, age: int = 0) -> Demand:
    return Demand(
        key, "cq", priority, NOW + timedelta(seconds=age), A100, gpus, 1.0, 4.0, pods=pods
    )


def free(cluster: ClusterModel) -> dict[str, int]:
    return {name: len(node.free) for name, node in cluster.nodes.by_name.items()}


def test_assignment_is_a_value_and_takes_nothing() -> None:
    cluster = model()
    assignment = cluster.flavors.assign(demand("a", 4, pods=2))
    assert isinstance(assignment, Assignment)
    assert (assignment.gpu_flavor, assignment.cpu_flavor) == (A100, "default-cpu")
    assert [node.name for node in assignment.nodes] == ["n2", "n1"]  # tightest first
    assert free(cluster) == {"n1": 8, "n2": 4}
    assert cluster.ledger.headroom("cq", A100, NVIDIA_GPU) == 12


def test_no_fit_is_returned_not_raised() -> None:
    cluster = model()
    too_wide = cluster.flavors.assign(demand("a", 8, pods=2))
    assert isinstance(too_wide, NoFit) and too_wide.never
    cluster.try_admit(demand("running", 8), NOW)
    over_quota = cluster.flavors.assign(demand("b", 8))
    assert isinstance(over_quota, NoFit) and not over_quota.never
    assert over_quota.reason == "no quota left in cq for 8 x nvidia-a100-80gb"


def test_admitting_takes_and_releasing_gives_back() -> None:
    cluster = model()
    holding = cluster.try_admit(demand("a", 4, pods=2), NOW)
    assert [(p.node, p.gpu_indices) for p in holding.placements] == [
        ("n2", (0, 1, 2, 3)),
        ("n1", (0, 1, 2, 3)),
    ]
    assert free(cluster) == {"n1": 4, "n2": 0}
    assert cluster.ledger.headroom("cq", A100, NVIDIA_GPU) == 4
    assert cluster.release("a") is holding
    assert free(cluster) == {"n1": 8, "n2": 4}
    assert cluster.ledger.headroom("cq", A100, NVIDIA_GPU) == 12


def test_admission_order() -> None:
    high = demand("z", 1, priority=200, age=9)
    old = demand("b", 1, priority=100, age=1)
    new = demand("a", 1, priority=100, age=2)
    same_time = demand("c", 1, priority=100, age=1)
    ordered = sorted([new, same_time, old, high], key=lambda d: d.order)
    assert [d.key for d in ordered] == ["z", "b", "c", "a"]
    assert old.order == AdmissionOrder(-100, old.created_at, "b") == (-100, old.created_at, "b")


def test_victim_order() -> None:
    victims = [
        VictimOrder(own_queue=True, priority=0, minus_since=-1.0, key="own-low"),
        VictimOrder(own_queue=False, priority=50, minus_since=-1.0, key="borrower-high"),
        VictimOrder(own_queue=False, priority=10, minus_since=-1.0, key="borrower-old"),
        VictimOrder(own_queue=False, priority=10, minus_since=-0.5, key="borrower-older"),
        VictimOrder(own_queue=False, priority=10, minus_since=-2.0, key="borrower-recent"),
    ]
    assert [v.key for v in sorted(victims)] == [
        "borrower-recent",
        "borrower-old",
        "borrower-older",
        "borrower-high",
        "own-low",
    ]
