"""Admission and placement rules (table-driven): priority, then FIFO, best-effort, tightest fit.

Each row: nodes as (name, gpu type, gpus), workloads already holding GPUs, the queue as
(key, priority, age rank, gpu type, gpus), and the expected admissions with their node.
"""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest

from domain.model.cluster import Node, NodeType
from domain.model.ids import ClusterId, NodeId
from domain.model.job import Placement
from domain.scheduling.placement import ClusterState, Request, admit
from tests.support.fakes import T0

A = "nvidia-a100-80gb"
T = "nvidia-tesla-t4"
CLUSTER = ClusterId(uuid.uuid4())


def nodes(*spec: tuple[str, str | None, int]) -> list[Node]:
    return [
        Node(NodeId(uuid.uuid4()), CLUSTER, name, NodeType.GPU, gpu, count, 64, 512)
        for name, gpu, count in spec
    ]


def req(key: str, priority: int, age: int, gpu: str | None, count: int, cpu: float = 1) -> Request:
    return Request(key, priority, T0 + timedelta(seconds=age), gpu, count, cpu, 4)


TABLE = [
    ("fifo within a priority",
     nodes(("n1", A, 8)), [],
     [req("late", 10, 2, A, 8), req("early", 10, 1, A, 8)],
     {"early": "n1"}),
    ("priority before age",
     nodes(("n1", A, 8)), [],
     [req("old-low", 1, 0, A, 8), req("new-high", 100, 5, A, 8)],
     {"new-high": "n1"}),
    ("best effort: a later small job passes a big head that does not fit",
     nodes(("n1", A, 8)), [(Placement("n1", (0, 1, 2, 3)), 1)],
     [req("big", 10, 0, A, 8), req("small", 10, 1, A, 4)],
     {"small": "n1"}),
    ("gpu type must match",
     nodes(("a", A, 8), ("t", T, 4)), [],
     [req("t4-job", 10, 0, T, 4), req("a100-job", 10, 1, A, 4)],
     {"t4-job": "t", "a100-job": "a"}),
    ("tightest fit keeps a whole node free",
     nodes(("full", A, 8), ("half", A, 8)), [(Placement("half", (0, 1, 2, 3)), 1)],
     [req("four", 10, 0, A, 4), req("eight", 10, 1, A, 8)],
     {"four": "half", "eight": "full"}),
    ("a job never spans nodes",
     nodes(("n1", A, 4), ("n2", A, 4)), [],
     [req("six", 10, 0, A, 6)],
     {}),
    ("cpu-only jobs fit any node with cpu left",
     nodes(("n1", A, 8)), [],
     [req("cpu", 10, 0, None, 0, cpu=8)],
     {"cpu": "n1"}),
    ("cpu is a limit too",
     nodes(("n1", A, 8)), [],
     [req("hungry", 10, 0, A, 1, cpu=65)],
     {}),
]  # fmt: skip


@pytest.mark.parametrize(
    ("case", "cluster", "holding", "queue", "expected"), TABLE, ids=[row[0] for row in TABLE]
)
def test_admission(case, cluster, holding, queue, expected) -> None:  # type: ignore[no-untyped-def]
    state = ClusterState.empty(cluster)
    for placement, cpu in holding:
        state.occupy(placement, cpu, 4)
    admitted = admit(state, queue)
    assert {r.key: p.node for r, p in admitted} == expected, case


def test_gpu_indices_are_distinct_and_lowest_free() -> None:
    state = ClusterState.empty(nodes(("n1", A, 8)))
    state.occupy(Placement("n1", (0, 2)), 1, 4)
    [(_, first), (_, second)] = admit(state, [req("x", 10, 0, A, 3), req("y", 10, 1, A, 3)])
    assert first.gpu_indices == (1, 3, 4)
    assert second.gpu_indices == (5, 6, 7)
    assert admit(state, [req("z", 10, 2, A, 1)]) == []


def test_unusable_nodes_take_nothing() -> None:
    cordoned = nodes(("n1", A, 8))
    cordoned[0].schedulable = False
    assert admit(ClusterState.empty(cordoned), [req("x", 10, 0, A, 1)]) == []
