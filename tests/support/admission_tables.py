"""The admission rules as a table, run through both the estimator and the simulated cluster.

Each scenario: nodes, ClusterQueues (with cohorts, strategies, quotas and preemption policies),
workloads already running, workloads waiting, and what one admission pass must do now: which
waiting workloads are admitted, which running ones are preempted, which can never be admitted.
Both the estimator (tests/unit/test_admission_rules.py) and the simulated cluster's engine
(tests/unit/test_simulated_admission.py) must give exactly these answers.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from domain.model.cluster import Node, NodeType
from domain.model.ids import ClusterId, JobId, NodeId, ProjectId, TenantId
from domain.model.job import (
    DeploymentType,
    Job,
    JobPriority,
    JobStatus,
    JobType,
    Placement,
    Resources,
)
from domain.model.quota import (
    CPU,
    GPU_LABEL,
    MEMORY,
    NVIDIA_GPU,
    ClusterQueue,
    Cohort,
    FlavorQuotas,
    LocalQueue,
    PreemptionPolicy,
    QueueingStrategy,
    QuotaSet,
    ReclaimWithinCohort,
    ResourceFlavor,
    ResourceGroup,
    ResourceQuota,
    WithinClusterQueue,
    tenant_namespace,
)

NOW = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
CLUSTER = ClusterId(uuid.UUID(int=7))
TENANT = TenantId(uuid.UUID(int=42))
A100 = "nvidia-a100-80gb"
H100 = "nvidia-h100-sxm"
P = JobPriority


@dataclass(frozen=True)
class Q:
    """A ClusterQueue: quotas per GPU flavor as (nominal, borrowing limit, lending limit)."""

    name: str
    quotas: dict[str, tuple[float, float | None, float | None]]
    cohort: str | None = None
    strategy: QueueingStrategy = QueueingStrategy.BEST_EFFORT_FIFO
    within: WithinClusterQueue = WithinClusterQueue.LOWER_PRIORITY
    reclaim: ReclaimWithinCohort = ReclaimWithinCohort.NEVER


@dataclass(frozen=True)
class W:
    """A workload: running ones carry the node they run on."""

    key: str
    queue: str
    gpus: int
    priority: JobPriority = P.NORMAL
    gpu_type: str = A100
    preemptible: bool = False
    node: str | None = None
    """Running: the node of each pod, comma-separated."""
    age: int = 0
    """Seconds after the first workload it was created (FIFO order)."""
    pods: int = 1
    """Pods of `gpus` GPUs each."""


@dataclass(frozen=True)
class Scenario:
    name: str
    nodes: list[tuple[str, str, int]]
    queues: list[Q]
    running: list[W] = field(default_factory=list)
    waiting: list[W] = field(default_factory=list)
    admitted: set[str] = field(default_factory=set)
    preempted: set[str] = field(default_factory=set)
    never: set[str] = field(default_factory=set)

    def node_objects(self) -> list[Node]:
        return [
            Node(
                NodeId(uuid.uuid5(CLUSTER, name)),
                CLUSTER,
                name,
                NodeType.GPU,
                gpu,
                count,
                128,
                2048,
                labels={GPU_LABEL: gpu},
            )
            for name, gpu, count in self.nodes
        ]

    def quota_set(self) -> QuotaSet:
        gpu_types = sorted({gpu for _, gpu, _ in self.nodes})
        flavors = (
            *tuple(ResourceFlavor(CLUSTER, gpu, {GPU_LABEL: gpu}, NOW, NOW) for gpu in gpu_types),
            ResourceFlavor(CLUSTER, "default-cpu", {}, NOW, NOW),
        )
        queues = tuple(
            ClusterQueue(
                CLUSTER,
                q.name,
                NOW,
                NOW,
                cohort=q.cohort,
                queueing_strategy=q.strategy,
                resource_groups=(
                    ResourceGroup(
                        (NVIDIA_GPU,),
                        tuple(
                            FlavorQuotas(f, (ResourceQuota(NVIDIA_GPU, *limits),))
                            for f, limits in q.quotas.items()
                        ),
                    ),
                    ResourceGroup(
                        (CPU, MEMORY),
                        (
                            FlavorQuotas(
                                "default-cpu",
                                (
                                    ResourceQuota(CPU, 10_000),
                                    ResourceQuota(MEMORY, 100_000),
                                ),
                            ),
                        ),
                    ),
                ),
                preemption=PreemptionPolicy(q.within, q.reclaim),
            )
            for q in self.queues
        )
        cohorts = tuple(
            Cohort(CLUSTER, name, NOW)
            for name in sorted({q.cohort for q in self.queues if q.cohort})
        )
        local = tuple(
            LocalQueue(CLUSTER, q.name, tenant_namespace(TENANT), TENANT, q.name, NOW)
            for q in self.queues
        )
        return QuotaSet(flavors, queues, local, cohorts)

    def jobs(self) -> list[Job]:
        jobs: list[Job] = []
        taken: dict[str, int] = {}
        for w in self.running:
            assert w.node is not None
            placements = []
            for node in w.node.split(","):
                first = taken.get(node, 0)
                taken[node] = first + w.gpus
                placements.append(Placement(node, tuple(range(first, first + w.gpus)), w.gpu_type))
            job = make_job(w, JobStatus.RUNNING)
            job.placements = tuple(placements)
            job.actual_start = NOW - timedelta(minutes=30) + timedelta(seconds=w.age)
            jobs.append(job)
        jobs.extend(make_job(w, JobStatus.QUEUED) for w in self.waiting)
        return jobs


def job_id(key: str) -> JobId:
    return JobId(uuid.uuid5(CLUSTER, key))


def make_job(w: W, status: JobStatus) -> Job:
    created = NOW - timedelta(hours=1) + timedelta(seconds=w.age)
    return Job(
        id=job_id(w.key),
        name=w.key,
        tenant_id=TENANT,
        project_id=ProjectId(uuid.UUID(int=1)),
        cluster_id=CLUSTER,
        job_type=JobType.TRAINING,
        deployment_type=DeploymentType.DOCKER,
        created_at=created,
        updated_at=created,
        resources=Resources(w.gpu_type, w.gpus, 1, 4, pod_count=w.pods),
        estimated_duration_seconds=86_400,
        priority=w.priority,
        preemptible=w.preemptible,
        status=status,
        queue_name=w.queue,
        max_retries=3,
    )


def q(
    name: str,
    nominal: float,
    *,
    borrow: float | None = None,
    lend: float | None = None,
    cohort: str | None = None,
    flavor: str = A100,
    strategy: QueueingStrategy = QueueingStrategy.BEST_EFFORT_FIFO,
    within: WithinClusterQueue = WithinClusterQueue.LOWER_PRIORITY,
    reclaim: ReclaimWithinCohort = ReclaimWithinCohort.NEVER,
) -> Q:
    return Q(name, {flavor: (nominal, borrow, lend)}, cohort, strategy, within, reclaim)


SCENARIOS = [
    Scenario("fifo within a priority", [("n1", A100, 8)], [q("cq", 8)],
             waiting=[W("late", "cq", 8, age=2), W("early", "cq", 8, age=1)],
             admitted={"early"}),
    Scenario("priority before age", [("n1", A100, 8)], [q("cq", 8)],
             waiting=[W("old-low", "cq", 8, P.LOW), W("new-high", "cq", 8, P.HIGH, age=9)],
             admitted={"new-high"}),
    Scenario("best effort: a small job passes a head that does not fit", [("n1", A100, 8)],
             [q("cq", 8)], running=[W("r", "cq", 4, node="n1")],
             waiting=[W("big", "cq", 8), W("small", "cq", 4, age=1)], admitted={"small"}),
    Scenario("strict fifo: a head that does not fit blocks the queue", [("n1", A100, 8)],
             [q("cq", 8, strategy=QueueingStrategy.STRICT_FIFO)],
             running=[W("r", "cq", 4, node="n1")],
             waiting=[W("big", "cq", 8), W("small", "cq", 4, age=1)], admitted=set()),
    Scenario("strict fifo blocks only its own queue", [("n1", A100, 8)],
             [q("strict", 4, strategy=QueueingStrategy.STRICT_FIFO), q("other", 4)],
             waiting=[W("big", "strict", 8), W("s2", "strict", 2, age=1),
                      W("o", "other", 4, age=2)],
             admitted={"o"}, never={"big"}),
    Scenario("nominal quota caps a queue even with idle GPUs", [("n1", A100, 8)], [q("cq", 4)],
             waiting=[W("a", "cq", 4), W("b", "cq", 4, age=1)], admitted={"a"}),
    Scenario("more than quota plus borrowing can ever give never fits", [("n1", A100, 8)],
             [q("cq", 4)], waiting=[W("huge", "cq", 6)], never={"huge"}),
    Scenario("more GPUs than any node has never fits", [("n1", A100, 8), ("n2", A100, 8)],
             [q("cq", 16)], waiting=[W("wide", "cq", 12)], never={"wide"}),
    Scenario("a GPU type the queue has no flavor for never fits", [("n1", A100, 8)],
             [q("cq", 8)], waiting=[W("h", "cq", 1, gpu_type=H100)], never={"h"}),
    Scenario("borrowing idle quota from the cohort", [("n1", A100, 8)],
             [q("a", 4, cohort="co"), q("b", 4, cohort="co")],
             waiting=[W("a1", "a", 4), W("a2", "a", 4, age=1)], admitted={"a1", "a2"}),
    Scenario("borrowing limit caps borrowing", [("n1", A100, 8)],
             [q("a", 4, borrow=2, cohort="co"), q("b", 4, cohort="co")],
             waiting=[W("a1", "a", 4), W("a2", "a", 4, age=1), W("a3", "a", 2, age=2)],
             admitted={"a1", "a3"}),
    Scenario("lending limit keeps part of a queue's quota for itself", [("n1", A100, 8)],
             [q("a", 4, cohort="co"), q("b", 4, lend=1, cohort="co")],
             waiting=[W("a1", "a", 4), W("a2", "a", 2, age=1), W("a3", "a", 1, age=2)],
             admitted={"a1", "a3"}),
    Scenario("what a queue does not lend stays free for it when the cohort is full",
             [("n1", A100, 8)], [q("a", 4, cohort="co"), q("b", 4, lend=1, cohort="co")],
             running=[W("a-big", "a", 5, node="n1")],
             waiting=[W("a-more", "a", 1), W("b-own", "b", 3, age=1)], admitted={"b-own"}),
    Scenario("no borrowing without a cohort", [("n1", A100, 8)], [q("a", 4), q("b", 4)],
             waiting=[W("a1", "a", 4), W("a2", "a", 4, age=1)], admitted={"a1"}),
    Scenario("preempt a lower-priority preemptible job in the same queue", [("n1", A100, 8)],
             [q("cq", 8)], running=[W("low", "cq", 8, P.LOW, preemptible=True, node="n1")],
             waiting=[W("high", "cq", 8, P.HIGH)], admitted={"high"}, preempted={"low"}),
    Scenario("never preempt a job that is not preemptible", [("n1", A100, 8)], [q("cq", 8)],
             running=[W("low", "cq", 8, P.LOW, preemptible=False, node="n1")],
             waiting=[W("high", "cq", 8, P.HIGH)], admitted=set()),
    Scenario("CRITICAL is never preempted", [("n1", A100, 8)], [q("cq", 8)],
             running=[W("crit", "cq", 8, P.CRITICAL, preemptible=True, node="n1")],
             waiting=[W("crit2", "cq", 8, P.CRITICAL, age=5)], admitted=set()),
    Scenario("equal priority does not preempt under LowerPriority", [("n1", A100, 8)],
             [q("cq", 8)], running=[W("old", "cq", 8, preemptible=True, node="n1")],
             waiting=[W("new", "cq", 8, age=5)], admitted=set()),
    Scenario("policy Never: no preemption within the queue", [("n1", A100, 8)],
             [q("cq", 8, within=WithinClusterQueue.NEVER)],
             running=[W("low", "cq", 8, P.LOW, preemptible=True, node="n1")],
             waiting=[W("high", "cq", 8, P.HIGH)], admitted=set()),
    Scenario("preempt the fewest, lowest-priority jobs on one node",
             [("n1", A100, 8), ("n2", A100, 8)], [q("cq", 16)],
             running=[W("spot1", "cq", 4, P.SPOT, preemptible=True, node="n1"),
                      W("low1", "cq", 4, P.LOW, preemptible=True, node="n1"),
                      W("spot2", "cq", 8, P.SPOT, preemptible=True, node="n2")],
             waiting=[W("high", "cq", 8, P.HIGH)], admitted={"high"}, preempted={"spot2"}),
    Scenario("reclaim lent quota from a borrowing queue of the cohort", [("n1", A100, 8)],
             [q("a", 4, cohort="co", reclaim=ReclaimWithinCohort.ANY), q("b", 4, cohort="co")],
             running=[W("b1", "b", 8, P.HIGH, preemptible=True, node="n1")],
             waiting=[W("a1", "a", 4, P.LOW)], admitted={"a1"}, preempted={"b1"}),
    Scenario("reclaim LowerPriority spares higher-priority borrowers", [("n1", A100, 8)],
             [q("a", 4, cohort="co", reclaim=ReclaimWithinCohort.LOWER_PRIORITY),
              q("b", 4, cohort="co")],
             running=[W("b1", "b", 8, P.HIGH, preemptible=True, node="n1")],
             waiting=[W("a1", "a", 4, P.LOW)], admitted=set()),
    Scenario("reclaim Never waits for the borrower to finish", [("n1", A100, 8)],
             [q("a", 4, cohort="co"), q("b", 4, cohort="co")],
             running=[W("b1", "b", 8, P.LOW, preemptible=True, node="n1")],
             waiting=[W("a1", "a", 4, P.HIGH)], admitted=set()),
    Scenario("a queue within its nominal quota is not reclaimed from", [("n1", A100, 8)],
             [q("a", 4, cohort="co", reclaim=ReclaimWithinCohort.ANY), q("b", 4, cohort="co")],
             running=[W("a0", "a", 4, node="n1"), W("b1", "b", 4, P.LOW, preemptible=True,
                                                   node="n1")],
             waiting=[W("a1", "a", 4, P.HIGH)], admitted=set()),
    Scenario("higher priority first across queues", [("n1", A100, 8)],
             [q("a", 8, cohort="co"), q("b", 8, cohort="co")],
             waiting=[W("a-low", "a", 8, P.LOW), W("b-high", "b", 8, P.HIGH, age=10)],
             admitted={"b-high"}),
    Scenario("the tightest node keeps a whole node free", [("full", A100, 8), ("half", A100, 8)],
             [q("cq", 16)], running=[W("r", "cq", 4, node="half")],
             waiting=[W("four", "cq", 4), W("eight", "cq", 8, age=1)],
             admitted={"four", "eight"}),
    # pod sets: N pods of G GPUs, each on one node, all or nothing
    Scenario("a pod set wider than a node takes two nodes", [("n1", A100, 8), ("n2", A100, 8)],
             [q("cq", 16)], waiting=[W("wide", "cq", 8, pods=2)], admitted={"wide"}),
    Scenario("a pod set is all or nothing: one node free is not enough",
             [("n1", A100, 8), ("n2", A100, 8), ("n3", A100, 8)], [q("cq", 24)],
             running=[W("r1", "cq", 4, node="n1"), W("r2", "cq", 4, node="n2")],
             waiting=[W("wide", "cq", 8, pods=2), W("four", "cq", 4, age=1)],
             admitted={"four"}),
    Scenario("a refused pod set does not hold back a single pod of its size",
             [("n1", A100, 8), ("n2", A100, 8)], [q("cq", 16)],
             running=[W("r", "cq", 8, node="n1")],
             waiting=[W("wide", "cq", 8, pods=2), W("eight", "cq", 8, age=1)],
             admitted={"eight"}),
    Scenario("pods of a set may share a node", [("n1", A100, 8)], [q("cq", 8)],
             waiting=[W("pair", "cq", 4, pods=2)], admitted={"pair"}),
    Scenario("a pod set's quota is all its pods", [("n1", A100, 8), ("n2", A100, 8)],
             [q("cq", 12)], waiting=[W("wide", "cq", 8, pods=2)], never={"wide"}),
    Scenario("more pods than the nodes can hold never fits", [("n1", A100, 8), ("n2", A100, 8)],
             [q("cq", 32)], waiting=[W("wide", "cq", 8, pods=3)], never={"wide"}),
    Scenario("a pod set preempts on as many nodes as it needs, no more",
             [("n1", A100, 8), ("n2", A100, 8), ("n3", A100, 8)], [q("cq", 24)],
             running=[W("low1", "cq", 8, P.LOW, preemptible=True, node="n1"),
                      W("low2", "cq", 8, P.LOW, preemptible=True, node="n2", age=1),
                      W("low3", "cq", 8, P.LOW, preemptible=True, node="n3", age=2)],
             waiting=[W("wide", "cq", 8, P.HIGH, pods=2)], admitted={"wide"},
             preempted={"low2", "low3"}),
    Scenario("a pod set gives back a victim it can do without",
             [("n1", A100, 8), ("n2", A100, 8), ("n3", A100, 8)], [q("cq", 40)],
             running=[W("keep", "cq", 4, node="n1"),
                      W("spot", "cq", 4, P.SPOT, preemptible=True, node="n1"),
                      W("low2", "cq", 8, P.LOW, preemptible=True, node="n2", age=1),
                      W("low3", "cq", 8, P.LOW, preemptible=True, node="n3", age=2)],
             waiting=[W("wide", "cq", 8, P.HIGH, pods=2)], admitted={"wide"},
             preempted={"low2", "low3"}),
    Scenario("a running pod set is evicted whole", [("n1", A100, 8), ("n2", A100, 8)],
             [q("cq", 16)],
             running=[W("spread", "cq", 4, P.LOW, preemptible=True, node="n1,n2", pods=2)],
             waiting=[W("high", "cq", 8, P.HIGH, age=1)], admitted={"high"},
             preempted={"spread"}),
]  # fmt: skip
