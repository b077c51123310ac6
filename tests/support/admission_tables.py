"""The admission rules as a table, run through both the estimator and the simulated cluster.

Each scenario: nodes, ClusterQueues (with cohorts, strategies, quotas and preemption policies),
workloads already running, workloads waiting, and what one admission pass must do now: which
waiting workloads are admitted, which running ones are preempted, which can never be admitted.
Both the estimator (tests/unit/test_admission_rules.py) and the simulated cluster's engine
(tests/unit/test_simulated_admission.py) must give exactly these answers.

Kueue's cases (KUEUE_CASES), ported from Kueue's own table tests, are run through both too; a
case budcluster answers otherwise is marked `disagrees` (with the rule that differs) and expected
to fail, strictly, in the path(s) where it does: whoever fixes the rule removes the mark.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Literal

import pytest

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
    AMD_GPU,
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
MI300 = "amd-mi300x"
"""An AMD GPU: requested as amd.com/gpu, a resource of its own (Kueue's example.com/gpu)."""
P = JobPriority
FLAVOR_LABEL = "budcluster.test/flavor"
"""The label of nodes that belong to a named flavor (`Scenario.node_flavors`)."""
Limits = tuple[float, float | None, float | None]
"""(nominal quota, borrowing limit, lending limit)"""


@dataclass(frozen=True)
class Q:
    """A ClusterQueue: quotas per GPU flavor as (nominal, borrowing limit, lending limit)."""

    name: str
    quotas: dict[str, Limits]
    """nvidia.com/gpu, per flavor in the queue's order (empty: no GPU resource group)."""
    cohort: str | None = None
    strategy: QueueingStrategy = QueueingStrategy.BEST_EFFORT_FIFO
    within: WithinClusterQueue = WithinClusterQueue.LOWER_PRIORITY
    reclaim: ReclaimWithinCohort = ReclaimWithinCohort.NEVER
    amd_quotas: dict[str, Limits] = field(default_factory=dict)
    """A second GPU resource group, of amd.com/gpu, per flavor (empty: none)."""
    cpu_quotas: dict[str, dict[str, Limits]] | None = None
    """The CPU and memory resource group: per flavor in the queue's order, the limits of `cpu`
    and `memory` it lists; None: one flavor, default-cpu, with room for everything."""


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
    cpu: float = 1
    """Cores per pod."""
    memory: float = 4
    """Memory per pod (GB)."""
    started: int | None = None
    """Running: seconds after the first running workload it started (None: as `age`)."""


@dataclass(frozen=True)
class Scenario:
    name: str
    nodes: list[tuple[str, str, int]]
    """(name, GPU type, GPUs)"""
    queues: list[Q]
    running: list[W] = field(default_factory=list)
    waiting: list[W] = field(default_factory=list)
    admitted: set[str] = field(default_factory=set)
    preempted: set[str] = field(default_factory=set)
    never: set[str] | None = field(default_factory=set)
    """None: not checked (Kueue has no such notion: its cases say only what is admitted)."""
    flavors: dict[str, str] = field(default_factory=dict)
    """The GPU flavor admitted workloads land on, where it matters."""
    node_flavors: dict[str, str] = field(default_factory=dict)
    """Nodes that belong to a named flavor (several flavors over one GPU type, told apart by
    FLAVOR_LABEL); the other nodes belong to the flavor named after their GPU type."""
    node_cpu: float = 128
    node_memory: float = 2048
    local_queues: dict[str, str] = field(default_factory=dict)
    """LocalQueues besides the one named after each ClusterQueue: name -> ClusterQueue."""
    kueue: str = ""
    """A ported Kueue case: the Kueue test file it comes from."""
    disagrees: str = ""
    """Which rule of budcluster gives another answer than Kueue's (the case is expected to
    fail, strictly: a fix makes it pass, and then this mark goes)."""
    disagrees_only_in: Literal["", "estimator", "simulated"] = ""
    """Where the disagreement shows, when only one of the two paths gives another answer."""

    def node_objects(self) -> list[Node]:
        return [
            Node(
                NodeId(uuid.uuid5(CLUSTER, name)),
                CLUSTER,
                name,
                NodeType.GPU,
                gpu,
                count,
                self.node_cpu,
                self.node_memory,
                labels={GPU_LABEL: gpu}
                | ({FLAVOR_LABEL: self.node_flavors[name]} if name in self.node_flavors else {}),
            )
            for name, gpu, count in self.nodes
        ]

    def quota_set(self) -> QuotaSet:
        gpu_types = sorted({gpu for name, gpu, _ in self.nodes if name not in self.node_flavors})
        named = dict.fromkeys(self.node_flavors.values())
        cpu_flavors = dict.fromkeys(
            f for q in self.queues for f in (q.cpu_quotas or {}) if f not in named
        )
        flavors = (
            *tuple(ResourceFlavor(CLUSTER, gpu, {GPU_LABEL: gpu}, NOW, NOW) for gpu in gpu_types),
            *tuple(ResourceFlavor(CLUSTER, f, {FLAVOR_LABEL: f}, NOW, NOW) for f in named),
            ResourceFlavor(CLUSTER, "default-cpu", {}, NOW, NOW),
            *tuple(ResourceFlavor(CLUSTER, f, {}, NOW, NOW) for f in cpu_flavors),
        )
        queues = tuple(
            ClusterQueue(
                CLUSTER,
                q.name,
                NOW,
                NOW,
                cohort=q.cohort,
                queueing_strategy=q.strategy,
                resource_groups=resource_groups(q),
                preemption=PreemptionPolicy(q.within, q.reclaim),
            )
            for q in self.queues
        )
        cohorts = tuple(
            Cohort(CLUSTER, name, NOW)
            for name in sorted({q.cohort for q in self.queues if q.cohort})
        )
        local = tuple(
            LocalQueue(CLUSTER, name, tenant_namespace(TENANT), TENANT, cq, NOW)
            for name, cq in {**{q.name: q.name for q in self.queues}, **self.local_queues}.items()
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
                flavor = self.node_flavors.get(node, w.gpu_type) if w.gpus else None
                placements.append(Placement(node, tuple(range(first, first + w.gpus)), flavor))
            job = make_job(w, JobStatus.RUNNING)
            job.placements = tuple(placements)
            started = w.age if w.started is None else w.started
            job.actual_start = NOW - timedelta(minutes=30) + timedelta(seconds=started)
            jobs.append(job)
        jobs.extend(make_job(w, JobStatus.QUEUED) for w in self.waiting)
        return jobs


def resource_groups(q: Q) -> tuple[ResourceGroup, ...]:
    """The queue's GPU resource groups (nvidia.com/gpu, then amd.com/gpu), then its CPU and
    memory group."""
    groups = [
        ResourceGroup(
            (resource,),
            tuple(
                FlavorQuotas(f, (ResourceQuota(resource, *limits),)) for f, limits in quotas.items()
            ),
        )
        for resource, quotas in ((NVIDIA_GPU, q.quotas), (AMD_GPU, q.amd_quotas))
        if quotas
    ]
    cpu = q.cpu_quotas
    if cpu is None:
        cpu = {"default-cpu": {CPU: (10_000, None, None), MEMORY: (100_000, None, None)}}
    groups.append(
        ResourceGroup(
            (CPU, MEMORY),
            tuple(
                FlavorQuotas(f, tuple(ResourceQuota(r, *limits) for r, limits in listed.items()))
                for f, listed in cpu.items()
            ),
        )
    )
    return tuple(groups)


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
        resources=Resources(w.gpu_type, w.gpus, w.cpu, w.memory, pod_count=w.pods),
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


# --- Kueue's cases ---------------------------------------------------------------------------

BIG = 1_000
"""GPUs of each node of a Kueue case: one node per flavor, so node fit never binds."""


def kq(
    name: str,
    quotas: dict[str, Limits],
    *,
    cohort: str | None = None,
    strategy: QueueingStrategy = QueueingStrategy.BEST_EFFORT_FIFO,
    within: WithinClusterQueue = WithinClusterQueue.NEVER,
    reclaim: ReclaimWithinCohort = ReclaimWithinCohort.NEVER,
    amd: dict[str, Limits] | None = None,
    cpu: dict[str, dict[str, Limits]] | None = None,
) -> Q:
    """A ClusterQueue of a Kueue case, with Kueue's defaults (BestEffortFIFO, no preemption)."""
    return Q(name, quotas, cohort, strategy, within, reclaim, amd or {}, cpu)


def lim(nominal: float, borrow: float | None = None, lend: float | None = None) -> Limits:
    return (nominal, borrow, lend)


def kw(
    key: str,
    queue: str,
    gpus: int,
    priority: JobPriority = P.NORMAL,
    *,
    node: str | None = None,
    age: int = 0,
    started: int | None = None,
    gpu_type: str = A100,
    cpu: float = 0,
    memory: float = 0,
) -> W:
    """A workload of a Kueue case: its `cpu` request is GPUs (one pod); running ones may be
    preempted (Kueue's all may)."""
    return W(
        key,
        queue,
        gpus,
        priority,
        gpu_type,
        preemptible=True,
        node=node,
        age=age,
        cpu=cpu,
        memory=memory,
        started=started,
    )


def kueue_case(
    kueue: str,
    name: str,
    nodes: list[tuple[str, str, str]],
    queues: list[Q],
    *,
    running: list[W] | None = None,
    waiting: list[W] | None = None,
    admitted: set[str] | None = None,
    preempted: set[str] | None = None,
    flavors: dict[str, str] | None = None,
    local_queues: dict[str, str] | None = None,
    disagrees: str = "",
    disagrees_only_in: Literal["", "estimator", "simulated"] = "",
) -> Scenario:
    """A Kueue case: `nodes` are (node, its flavor, GPU type), large enough never to bind."""
    return Scenario(
        name,
        [(node, gpu, BIG) for node, _, gpu in nodes],
        queues,
        running or [],
        waiting or [],
        admitted or set(),
        preempted or set(),
        never=None,
        flavors=flavors or {},
        node_flavors={node: flavor for node, flavor, _ in nodes},
        node_cpu=1_000_000,
        node_memory=1_000_000,
        local_queues=local_queues or {},
        kueue=kueue,
        disagrees=disagrees,
        disagrees_only_in=disagrees_only_in,
    )


def nodes_of(*flavors: str, gpu: str = A100) -> list[tuple[str, str, str]]:
    """One node per flavor, named after it."""
    return [(f, f, gpu) for f in flavors]


KUEUE_CASES: list[Scenario] = []
assert len({s.name for s in [*SCENARIOS, *KUEUE_CASES]}) == len(SCENARIOS) + len(KUEUE_CASES)


def parametrized(path: Literal["estimator", "simulated"]) -> list[pytest.ParameterSet]:
    """SCENARIOS and KUEUE_CASES as pytest parameters, each Kueue case that `path` disagrees on
    marked as a strict expected failure."""
    return [
        pytest.param(
            s,
            id=s.name,
            marks=[pytest.mark.xfail(strict=True, reason=s.disagrees)]
            if s.disagrees and s.disagrees_only_in in ("", path)
            else [],
        )
        for s in [*SCENARIOS, *KUEUE_CASES]
    ]
