"""The admission rules as a table, run through both the estimator and the simulated cluster.

Each scenario: nodes, ClusterQueues (with cohorts, strategies, quotas and preemption policies),
workloads already running, workloads waiting, and what one admission pass must do now: which
waiting workloads are admitted, which running ones are preempted, which can never be admitted.
Both the estimator (tests/unit/test_admission_rules.py) and the simulated cluster's engine
(tests/unit/test_simulated_admission.py) must give exactly these answers.

Kueue's cases (KUEUE_CASES)
---------------------------
Kueue is the specification: KUEUE_CASES are the table cases of kubernetes-sigs/kueue at commit
ff69552e79ad21652c36caa97038382e55625cf7 that budcluster models, from
pkg/scheduler/scheduler_test.go (TestSchedule), pkg/scheduler/preemption/preemption_test.go
(TestPreemption), pkg/scheduler/preemption/preemption_hierarchical_test.go
(TestHierarchicalPreemptions), pkg/scheduler/preemption/preemption_fair_test.go
(TestFairPreemptions) and pkg/scheduler/flavorassigner/flavorassigner_test.go
(TestAssignFlavors, TestHierarchical).
Each is named after its Kueue case, says its file (`Scenario.kueue`) and expects Kueue's answer,
not budcluster's. How they are mapped:
- The resource a case is about (cpu, or "gpu", "r1") is GPUs, nvidia.com/gpu; example.com/gpu is
  amd.com/gpu, a resource of its own. Each Kueue ResourceFlavor is one node, labelled with the
  flavor's name, with room enough that node fit never binds. memory is the CPU group's memory.
  Where a case is about cpu and memory sharing a resource group's flavors, they are cpu and
  memory (budcluster's CPU group) instead.
- Kueue's defaults are set explicitly: BestEffortFIFO, withinClusterQueue, reclaimWithinCohort
  and borrowWithinCohort Never, FlavorFungibility whenCanBorrow MayStopSearch and whenCanPreempt
  TryNextFlavor, weight 1; a case's own settings are as it gives them (`Q.borrow_within`,
  `Q.fungibility`, `Q.weight`). Its Cohort objects (`Scenario.cohorts`) carry their parent
  (implicit when it is no Cohort of the case), their own quotas and weight; a ClusterQueue's
  cohort that the case does not list is a Cohort of that name with none of these. Fair sharing
  is on (`Scenario.fair_sharing`) where the case enables it: TestFairPreemptions and the
  TestAssignFlavors cases that say so.
- Kueue's priorities map, in order, onto SPOT, LOW, NORMAL and HIGH (never CRITICAL, which
  budcluster never preempts); every running workload is preemptible. A maxPriorityThreshold is
  the value of the priority that the case's highest priority at or under it maps to, or a
  number under all of the case's (values: SPOT 0, LOW 1, NORMAL 10, HIGH 100), so that
  "priority <= threshold" keeps Kueue's meaning (`bwc`). Creation and admission times are `age`
  and `started`. Kueue's LocalQueues are the ClusterQueues' names; a workload's key is Kueue's
  namespace/name, and its job id sorts as that name does (Kueue's tests set each UID to the
  name: the last tie-break among preemption candidates).
- `admitted` is what Kueue admits in the cycle plus, on purpose (budcluster admits a preemptor
  in the cycle of its evictions, Kueue in a later one), each preemptor whose preemptions Kueue
  issues; `preempted` is Kueue's targets; `flavors` the GPU flavor of the admission, where it
  matters (for a preemptor: the flavor its targets free). budcluster also admits many workloads
  of a ClusterQueue per cycle (Kueue: its head), on purpose; no ported case has a queue whose
  later workloads Kueue leaves for another cycle. `never` is not checked: Kueue has no such
  notion.
- TestPreemption gives a preemptor and the assignment it must preempt for: here the preemptor
  waits and one cycle runs, in the target ClusterQueue's cohort (or the target alone) of
  TestPreemption's ClusterQueues. TestHierarchicalPreemptions likewise, in its trees of
  cohorts, and TestFairPreemptions, with fair sharing on; a ClusterQueue they give no quota for
  the resource has a nominal quota of 0 (as Kueue counts it; a cycle needs the resource listed
  to assign a flavor). Where a case asks halves of a cpu, every quantity is doubled (GPUs are
  whole; fair sharing's shares are ratios). Their admitted workloads run as the case has them,
  even where they use more than the quotas hold (a few cases do).
- TestAssignFlavors (and TestHierarchical) gives a workload and the quota in use: here that
  usage is running workloads of the same priority and one cycle runs, a Fit assignment admitted
  on its flavor, a Preempt or NoFit one not (its queues preempt nothing). Where its stubbed
  preemption oracle reports candidates and the case is about them (whenCanPreempt
  MayStopSearch), the usage is LOW and the queue preempts within itself: a cycle finds the
  candidates the stub stands for, and the preemption is expected.
A case budcluster answers otherwise is marked `disagrees` (with the rule that differs) and
expected to fail, strictly, in the path(s) where it does: whoever fixes the rule removes it.

Left out (62 of 214 cases; 152 are ported), by reason:
- Pod set groups (Kueue's podSetGroupName, which puts a LeaderWorkerSet's leader and workers on
  one flavor together; budcluster assigns each pod set its own): TestAssignFlavors the three
  "multiple flavors, leader worker set, ..." cases (one also lists cpu in two resource groups).
  Several pod sets in one workload are ported: TestSchedule "assign multiple resources and
  flavors" and "no overadmission while borrowing", TestPreemption "each podset preempts a
  different flavor", TestAssignFlavors "multi-podset, one fits and another fails, ..."; each
  further pod set of N pods is one pod of N times the request, as a workload's own pod set is.
  ("multiple specs, fit different flavors" and "multiple specs, fits borrowing" are ported with
  each pod set a workload: all fit, so all-or-nothing does not bind.) "each podset requires
  preemption on a different flavor" is left out for its taint (below).
- Partial admission: TestSchedule's five "partial admission ..." cases.
- A workload being evicted (still holding its quota; budcluster has no such state):
  TestHierarchicalPreemptions "prefer to preempt evicted workloads".
- More priorities than budcluster's four that it may preempt, where their order decides the
  victims: TestHierarchicalPreemptions "reclaim in complex hierarchy" (nine); TestFairPreemptions
  "hierarchical preemption" (six).
- Fair sharing's preemption strategies (Kueue's controller configuration; budcluster records
  only whether fair sharing is on): TestFairPreemptions "preempt lower priority first, even if
  big" and "preempt workload that doesn't transfer the imbalance, even if high priority".
- A stubbed preemption oracle that reports candidates where the case has none (the secondary
  ClusterQueue's usage is within its nominal quota, so a cycle finds no candidate and goes on to
  flavor two): TestAssignFlavors the four "when borrowing while preemption is needed for flavor
  one[, no borrowingLimit]; WhenCanBorrow=MayStopSearch..." cases and the two "... fair sharing
  enabled, reclaimWithinCohort=Any..." cases.
- Taints, tolerations, node selectors and affinity (a budcluster flavor selects nodes by label;
  a workload asks only a GPU type): TestSchedule "flavors with mixed misconfiguration and
  insufficient quota", "flavors with mixed taint mismatch and exceeding limits", "flavors are
  structurally incompatible"; TestAssignFlavors "single flavor, fits tainted flavor", "... with
  toleration", "multiple flavors, fits while skipping tainted flavor", "multiple flavors, fits a
  node selector", "... fits with node affinity", "... node affinity fits any flavor", "multiple
  flavors with different label keys, ...", "labelless flavor in group with labeled flavor, ...",
  "multiple flavors, doesn't fit node affinity", "can only preempt flavors that match affinity",
  "each podset requires preemption on a different flavor".
- Two resources in one flavor beside the resource mapped to GPUs, or usage in a second CPU
  flavor that its node's labels do not tell (a running workload is charged to the first of its
  queue's CPU flavors its node has): TestSchedule "two workloads can borrow different resources
  from the same flavor in the same cycle"; TestAssignFlavors
  "multiple resource groups with multiple resources, fits with different modes" (also a stubbed
  preemption oracle).
- Zero requests of an unlisted resource, the pods quota, reclaimable pods: TestSchedule "admit
  workload with zero-quantity request for resource not in ClusterQueue", "preempt when workload
  requests zero of a resource not defined in ClusterQueue"; TestAssignFlavors the two "zero
  resource request ..." cases, "num pods fit", "num pods don't fit" and the two "with reclaimable
  pods; ..." cases.
- Topology-aware scheduling: TestAssignFlavors "multiple TAS flavors assigned to different
  resources in the same PodSet leads to NoFit".
- Elastic workload slices: TestSchedule "workload-slice fits in single clusterQueue";
  TestAssignFlavors the two "workload slice preemption ..." cases.
- Admission checks: TestSchedule "workload fits in single clusterQueue, with check state
  ready", "... with check state pending", "pending admission check with nofit and fit flavors".
- Preemption gates (MultiKueue orchestrated preemption): TestSchedule the three "...
  `BlockedOnPreemptionGates` ..." cases.
- Kueue's API objects, validation and errors: TestSchedule "error during admission", "failed to
  match clusterQueue selector" (namespace selectors), "container does not satisfy limitRange
  constraints", "container resource requests exceed limits", the two "prevent integer overflow
  ..." cases.
- An assignment fixed by hand that a cycle would not compute: TestPreemption "only preempt
  workloads using the chosen flavor" (memory in flavor beta), "no workloads borrowing" and
  "can't preempt workloads in ClusterQueue for withinClusterQueue=Never" (the preemptor fits
  by borrowing, so a cycle admits it).
The other tests of these files (TestEntryOrdering, TestLastSchedulingContext and the rest of
scheduler_test.go, TestCandidatesOrdering and the rest of preemption_test.go,
TestFairPreemptionSkipsUnsatisfiableTournament, TestReclaimBeforePriorityPreemption and the
rest of flavorassigner_test.go) test Kueue's internals with hand-set inputs, several cycles, or
its API, and are not ported.
"""

from __future__ import annotations

import functools
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

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
    PodSet,
    Resources,
)
from domain.model.quota import (
    AMD_GPU,
    CPU,
    DEFAULT_PRIORITY_VALUES,
    GPU_LABEL,
    MEMORY,
    NVIDIA_GPU,
    BorrowWithinCohort,
    BorrowWithinCohortPolicy,
    ClusterQueue,
    Cohort,
    FlavorFungibility,
    FlavorQuotas,
    FungibilityPolicy,
    FungibilityPreference,
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
    borrow_within: BorrowWithinCohort = field(default_factory=BorrowWithinCohort)
    fungibility: FlavorFungibility = field(default_factory=FlavorFungibility)
    weight: float = 1.0
    """Its fair-sharing weight."""


@dataclass(frozen=True)
class C:
    """A Cohort object: its parent (which may be implicit) and its own quotas."""

    name: str
    parent: str | None = None
    quotas: dict[str, Limits] = field(default_factory=dict)
    """nvidia.com/gpu, per flavor (empty: no GPU resource group)."""
    cpu_quotas: dict[str, dict[str, Limits]] = field(default_factory=dict)
    """The CPU and memory resource group, as `Q.cpu_quotas` (empty: none)."""
    weight: float = 1.0
    """Its fair-sharing weight."""


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
    pod_sets: tuple[PodSet, ...] = ()
    """Its further pod sets (running: `node` names a node for each of their pods too, after
    its own pods')."""


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
    cohorts: list[C] = field(default_factory=list)
    """Cohort objects (parents, own quotas, weights); a queue's cohort not among them is a
    Cohort object of that name with none of these, a parent not among them is implicit."""
    fair_sharing: bool = False
    """Kueue's fairSharing.enable (`QuotaSet.fair_sharing`)."""

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
            f
            for quotas in (
                *(q.cpu_quotas or {} for q in self.queues),
                *(c.cpu_quotas for c in self.cohorts),
            )
            for f in quotas
            if f not in named
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
                preemption=PreemptionPolicy(q.within, q.reclaim, q.borrow_within),
                flavor_fungibility=q.fungibility,
                fair_sharing_weight=q.weight,
            )
            for q in self.queues
        )
        listed = {c.name for c in self.cohorts}
        cohorts = (
            *(
                Cohort(
                    CLUSTER,
                    c.name,
                    NOW,
                    parent=c.parent,
                    resource_groups=cohort_groups(c),
                    fair_sharing_weight=c.weight,
                )
                for c in self.cohorts
            ),
            *(
                Cohort(CLUSTER, name, NOW)
                for name in sorted({q.cohort for q in self.queues if q.cohort} - listed)
            ),
        )
        local = tuple(
            LocalQueue(CLUSTER, name, tenant_namespace(TENANT), TENANT, cq, NOW)
            for name, cq in {**{q.name: q.name for q in self.queues}, **self.local_queues}.items()
        )
        return QuotaSet(flavors, queues, local, cohorts, fair_sharing=self.fair_sharing)

    def jobs(self) -> list[Job]:
        jobs: list[Job] = []
        taken: dict[str, int] = {}
        for w in self.running:
            assert w.node is not None
            placements = []
            pods = Resources(w.gpu_type, w.gpus, pod_count=w.pods, pod_sets=w.pod_sets).pod_gpus
            for node, gpus in zip(w.node.split(","), pods, strict=True):
                first = taken.get(node, 0)
                taken[node] = first + gpus
                flavor = self.node_flavors.get(node, w.gpu_type) if gpus else None
                placements.append(Placement(node, tuple(range(first, first + gpus)), flavor))
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


def cohort_groups(c: C) -> tuple[ResourceGroup, ...]:
    """A cohort's own resource groups: nvidia.com/gpu, then CPU and memory, each if it has it."""
    groups = []
    if c.quotas:
        groups.append(
            ResourceGroup(
                (NVIDIA_GPU,),
                tuple(
                    FlavorQuotas(f, (ResourceQuota(NVIDIA_GPU, *limits),))
                    for f, limits in c.quotas.items()
                ),
            )
        )
    if c.cpu_quotas:
        groups.append(
            ResourceGroup(
                (CPU, MEMORY),
                tuple(
                    FlavorQuotas(f, tuple(ResourceQuota(r, *lim_) for r, lim_ in listed.items()))
                    for f, listed in c.cpu_quotas.items()
                ),
            )
        )
    return tuple(groups)


def job_id(key: str) -> JobId:
    """A job's id. A Kueue case's workloads get ids that sort as their names do, as Kueue's
    tests set each workload's UID to its name (the last tie-break among preemption candidates);
    other keys get a hash."""
    rank = _kueue_ranks().get(key)
    if rank is not None:
        return JobId(uuid.UUID(int=(1 << 120) + rank))
    return JobId(uuid.uuid5(CLUSTER, key))


@functools.cache
def _kueue_ranks() -> dict[str, int]:
    keys = {w.key for case in KUEUE_CASES for w in (*case.running, *case.waiting)}
    return {key: rank for rank, key in enumerate(sorted(keys))}


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
        resources=Resources(
            w.gpu_type, w.gpus, w.cpu, w.memory, pod_count=w.pods, pod_sets=w.pod_sets
        ),
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
    borrow_within: BorrowWithinCohort | None = None,
    fungibility: FlavorFungibility | None = None,
    weight: float = 1.0,
) -> Q:
    """A ClusterQueue of a Kueue case, with Kueue's defaults (BestEffortFIFO, no preemption,
    flavor search MayStopSearch when it can borrow, TryNextFlavor when it can preempt)."""
    return Q(
        name,
        quotas,
        cohort,
        strategy,
        within,
        reclaim,
        amd or {},
        cpu,
        borrow_within or BorrowWithinCohort(),
        fungibility or FlavorFungibility(),
        weight,
    )


def bwc(threshold: JobPriority | int | None = None) -> BorrowWithinCohort:
    """borrowWithinCohort LowerPriority, with Kueue's maxPriorityThreshold as the budcluster
    priority whose value it takes (the highest priority of the case at or under Kueue's
    threshold), or as a number under every priority of the case."""
    value = DEFAULT_PRIORITY_VALUES[threshold] if isinstance(threshold, JobPriority) else threshold
    return BorrowWithinCohort(BorrowWithinCohortPolicy.LOWER_PRIORITY, value)


MAY_STOP = FungibilityPolicy.MAY_STOP_SEARCH
TRY_NEXT = FungibilityPolicy.TRY_NEXT_FLAVOR


def search(
    when_can_borrow: FungibilityPolicy, when_can_preempt: FungibilityPolicy
) -> FlavorFungibility:
    """A FlavorFungibility: what a workload does when it can borrow, and when it can preempt,
    in the flavor it is looking at."""
    return FlavorFungibility(when_can_borrow, when_can_preempt)


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
    pod_sets: tuple[PodSet, ...] = (),
) -> W:
    """A workload of a Kueue case: its `cpu` request is GPUs (one pod; a further pod set of N
    pods is one pod of N times the request, in `pod_sets`); running ones may be preempted
    (Kueue's all may)."""
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
        pod_sets=pod_sets,
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
    cohorts: list[C] | None = None,
    fair_sharing: bool = False,
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
        cohorts=cohorts or [],
        fair_sharing=fair_sharing,
    )


def nodes_of(*flavors: str, gpu: str = A100) -> list[tuple[str, str, str]]:
    """One node per flavor, named after it."""
    return [(f, f, gpu) for f in flavors]


# scheduler_test.go, TestSchedule: its ResourceFlavors (those the ported cases use) and its
# ClusterQueues, in every case as in Kueue. Kueue's LocalQueues "main" etc. are the ClusterQueue
# names here; a workload's key is Kueue's namespace/name.
S = "scheduler_test.go"
STRICT = QueueingStrategy.STRICT_FIFO
LOWER = WithinClusterQueue.LOWER_PRIORITY
NEWER = WithinClusterQueue.LOWER_OR_NEWER_EQUAL_PRIORITY
ANY = ReclaimWithinCohort.ANY
LOWER_R = ReclaimWithinCohort.LOWER_PRIORITY
NEVER_R = ReclaimWithinCohort.NEVER
S_NODES = [*nodes_of("default", "on-demand", "spot"), ("model-a", "model-a", MI300)]
S_QUEUES = [
    kq("sales", {"default": lim(50, 0)}, strategy=STRICT),
    kq(
        "eng-alpha",
        {"on-demand": lim(50, 50), "spot": lim(100, 0)},
        cohort="eng",
        strategy=STRICT,
    ),
    kq(
        "eng-beta",
        {"on-demand": lim(50, 10), "spot": lim(0, 100)},
        cohort="eng",
        strategy=STRICT,
        within=LOWER,
        reclaim=ANY,
        amd={"model-a": lim(20, 0)},
    ),
    kq("flavor-nonexistent-cq", {"nonexistent-flavor": lim(50)}, strategy=STRICT),
    kq("lend-a", {"default": lim(3, None, 2)}, cohort="lend"),
    kq("lend-b", {"default": lim(2, None, 2)}, cohort="lend"),
]


TRY_NEXT = FungibilityPolicy.TRY_NEXT_FLAVOR
POB = FlavorFungibility(TRY_NEXT, TRY_NEXT, FungibilityPreference.PREEMPTION_OVER_BORROWING)
BOP = FlavorFungibility(TRY_NEXT, TRY_NEXT, FungibilityPreference.BORROWING_OVER_PREEMPTION)


def s_case(name: str, *, queues: list[Q] | None = None, **kwargs: Any) -> Scenario:
    return kueue_case(S, name, S_NODES, [*S_QUEUES, *(queues or [])], **kwargs)


S_CASES = [
    s_case(
        "skip workload with missing or deleted ClusterQueue (NoFit)",
        waiting=[kw("sales/missing-cq-workload", "non-existent-queue", 1)],
    ),
    s_case(
        "single clusterQueue full",
        running=[kw("sales/assigned", "sales", 40, node="default")],
        waiting=[kw("sales/new", "sales", 11)],
    ),
    s_case(
        "admit in different cohorts",
        waiting=[kw("sales/new", "sales", 1), kw("eng-alpha/new", "eng-alpha", 51)],
        admitted={"sales/new", "eng-alpha/new"},
        flavors={"sales/new": "default", "eng-alpha/new": "on-demand"},
    ),
    s_case(
        "admit in same cohort with no borrowing",
        waiting=[kw("eng-alpha/new", "eng-alpha", 40), kw("eng-beta/new", "eng-beta", 40)],
        admitted={"eng-alpha/new", "eng-beta/new"},
        flavors={"eng-alpha/new": "on-demand", "eng-beta/new": "on-demand"},
    ),
    s_case(
        "cannot borrow if cohort was assigned and would result in overadmission",
        waiting=[kw("eng-alpha/new", "eng-alpha", 45), kw("eng-beta/new", "eng-beta", 56)],
        admitted={"eng-alpha/new"},
        flavors={"eng-alpha/new": "on-demand"},
    ),
    s_case(
        "can borrow if cohort was assigned and will not result in overadmission",
        waiting=[kw("eng-alpha/new", "eng-alpha", 45), kw("eng-beta/new", "eng-beta", 55)],
        admitted={"eng-alpha/new", "eng-beta/new"},
        flavors={"eng-alpha/new": "on-demand", "eng-beta/new": "on-demand"},
    ),
    s_case(
        "can borrow if needs reclaim from cohort in different flavor",
        running=[
            kw("eng-beta/user-on-demand", "eng-beta", 50, node="on-demand"),
            kw("eng-beta/user-spot", "eng-beta", 1, node="spot"),
        ],
        waiting=[
            kw("eng-alpha/can-reclaim", "eng-alpha", 100),
            kw("eng-beta/needs-to-borrow", "eng-beta", 1),
        ],
        admitted={"eng-beta/needs-to-borrow"},
        flavors={"eng-beta/needs-to-borrow": "on-demand"},
    ),
    s_case(
        "workload exceeds lending limit when borrow in cohort",
        running=[kw("lend/a", "lend-b", 2, node="default")],
        waiting=[kw("lend/b", "lend-b", 3)],
    ),
    # The cohort "child" has the parent "root", a Cohort with no quotas and no other member.
    s_case(
        "hierarchical cohort respects lending limit when borrowing",
        queues=[
            kq("cq-lender", {"on-demand": lim(10, None, 3)}, cohort="child"),
            kq("cq-borrower", {"on-demand": lim(5, 10)}, cohort="child"),
        ],
        cohorts=[C("root"), C("child", "root")],
        running=[kw("eng-alpha/wl-existing", "cq-borrower", 5, node="on-demand")],
        waiting=[kw("eng-alpha/wl-pending", "cq-borrower", 4)],
    ),
    s_case(
        "hierarchical cohort allows borrowing up to lending limit",
        queues=[
            kq("cq-lender", {"on-demand": lim(10, None, 5)}, cohort="child"),
            kq("cq-borrower", {"on-demand": lim(5, 10)}, cohort="child"),
        ],
        cohorts=[C("root"), C("child", "root")],
        running=[kw("eng-alpha/wl-existing", "cq-borrower", 5, node="on-demand")],
        waiting=[kw("eng-alpha/wl-borrowing", "cq-borrower", 5)],
        admitted={"eng-alpha/wl-borrowing"},
        flavors={"eng-alpha/wl-borrowing": "on-demand"},
    ),
    # Kueue's priorities -2, -1, 0: SPOT, LOW, NORMAL.
    s_case(
        "preempt workloads in ClusterQueue and cohort",
        running=[
            kw("eng-alpha/use-all-spot", "eng-alpha", 100, node="spot"),
            kw("eng-beta/low-1", "eng-beta", 30, P.LOW, node="on-demand"),
            kw("eng-beta/low-2", "eng-beta", 10, P.SPOT, node="on-demand"),
            kw("eng-alpha/borrower", "eng-alpha", 60, node="on-demand"),
        ],
        waiting=[kw("eng-beta/preemptor", "eng-beta", 20)],
        admitted={"eng-beta/preemptor"},
        preempted={"eng-beta/low-2", "eng-alpha/borrower"},
        flavors={"eng-beta/preemptor": "on-demand"},
    ),
    # Kueue's priorities -1, 0, 1: LOW, NORMAL, HIGH.
    s_case(
        "multiple CQs need preemption",
        queues=[
            kq("other-alpha", {"on-demand": lim(50, 50)}, cohort="other"),
            kq(
                "other-beta",
                {"on-demand": lim(50, 10)},
                cohort="other",
                within=LOWER,
                reclaim=ANY,
            ),
        ],
        running=[kw("eng-alpha/use-all", "other-alpha", 100, node="on-demand")],
        waiting=[
            kw("eng-beta/preemptor", "other-beta", 1, P.LOW),
            kw("eng-alpha/pending", "other-alpha", 1, P.HIGH),
        ],
        admitted={"eng-beta/preemptor"},
        preempted={"eng-alpha/use-all"},
    ),
    # example.com/gpu, which only eng-beta lists (flavor model-a), is amd.com/gpu here.
    s_case(
        "cannot borrow resource not listed in clusterQueue",
        waiting=[kw("eng-alpha/new", "eng-alpha", 1, gpu_type=MI300)],
    ),
    s_case(
        "not enough resources to borrow, fallback to next flavor; WhenCanPreempt: TryNextFlavor",
        running=[kw("eng-beta/existing", "eng-beta", 45, node="on-demand")],
        waiting=[kw("eng-alpha/new", "eng-alpha", 60)],
        admitted={"eng-alpha/new"},
        flavors={"eng-alpha/new": "spot"},
    ),
    s_case(
        "workload should not fit in nonexistent clusterQueue",
        local_queues={"cq-nonexistent-queue": "nonexistent-cq"},
        waiting=[kw("sales/foo", "cq-nonexistent-queue", 1)],
    ),
    s_case(
        "workload should not fit in clusterQueue with nonexistent flavor",
        waiting=[kw("sales/foo", "flavor-nonexistent-cq", 1)],
    ),
    # r1 is the GPUs; r2's quota, which no workload asks, is left out. Priorities -1, -2:
    # NORMAL, LOW.
    s_case(
        "two workloads can borrow the same resources from the same flavor in the same cycle if "
        "fits in the cohort quota",
        queues=[
            kq(cq, {"default": lim(10, 10)}, cohort="co", within=LOWER, reclaim=ANY)
            for cq in ("cq1", "cq2", "cq3")
        ],
        waiting=[kw("sales/wl1", "cq1", 16), kw("sales/wl2", "cq2", 14, P.LOW)],
        admitted={"sales/wl1", "sales/wl2"},
    ),
    s_case(
        "only one workload can borrow one resources from the same flavor in the same cycle if "
        "cohort quota cannot fit",
        queues=[
            kq(cq, {"default": lim(10, 10)}, cohort="co", within=LOWER, reclaim=ANY)
            for cq in ("cq1", "cq2", "cq3")
        ],
        waiting=[kw("sales/wl1", "cq1", 16), kw("sales/wl2", "cq2", 16, P.LOW)],
        admitted={"sales/wl1"},
    ),
    # Kueue's priorities -2, -1, 0: SPOT, LOW, NORMAL.
    s_case(
        "minimal preemptions when target queue is exhausted",
        queues=[
            kq("other-alpha", {"on-demand": lim(2)}, cohort="other", within=LOWER, reclaim=ANY),
            kq("other-beta", {"on-demand": lim(2)}, cohort="other"),
            kq("other-gamma", {"on-demand": lim(2)}, cohort="other"),
        ],
        running=[
            kw("eng-alpha/a1", "other-alpha", 1, P.SPOT, node="on-demand"),
            kw("eng-alpha/a2", "other-alpha", 1, P.SPOT, node="on-demand"),
            kw("eng-alpha/a3", "other-alpha", 1, P.LOW, node="on-demand"),
            kw("eng-beta/b1", "other-beta", 1, node="on-demand"),
            kw("eng-beta/b2", "other-beta", 1, node="on-demand"),
            kw("eng-beta/b3", "other-beta", 1, node="on-demand"),
        ],
        waiting=[kw("eng-alpha/incoming", "other-alpha", 2)],
        admitted={"eng-alpha/incoming"},
        preempted={"eng-alpha/a1", "eng-alpha/a2"},
    ),
    # Kueue's priorities -1, 1: LOW, HIGH.
    s_case(
        "A workload is only eligible to do preemptions if it fits fully within nominal quota",
        queues=[
            kq("other-alpha", {"on-demand": lim(2)}, cohort="other", within=LOWER, reclaim=ANY),
            kq("other-beta", {"on-demand": lim(2)}, cohort="other"),
        ],
        running=[
            kw("eng-alpha/a1", "other-alpha", 1, P.LOW, node="on-demand"),
            kw("eng-beta/b1", "other-beta", 1, P.LOW, node="on-demand"),
        ],
        waiting=[kw("eng-alpha/incoming", "other-alpha", 3, P.HIGH)],
    ),
    # Kueue's priorities 0, 100: NORMAL, HIGH.
    s_case(
        "multiple preemptions without borrowing",
        queues=[
            kq("other-alpha", {"default": lim(2)}, cohort="other", within=LOWER),
            kq("other-beta", {"default": lim(2)}, cohort="other", within=LOWER),
        ],
        running=[
            kw("eng-alpha/a1", "other-alpha", 2, node="default"),
            kw("eng-beta/b1", "other-beta", 2, node="default"),
        ],
        waiting=[
            kw("eng-alpha/preemptor", "other-alpha", 2, P.HIGH),
            kw("eng-beta/preemptor", "other-beta", 2, P.HIGH),
        ],
        admitted={"eng-alpha/preemptor", "eng-beta/preemptor"},
        preempted={"eng-alpha/a1", "eng-beta/b1"},
    ),
    # Kueue's priorities 0, 99, 100: LOW, NORMAL, HIGH.
    s_case(
        "multiple preemptions preemption possible after earlier workload fits",
        queues=[
            kq("other-alpha", {"default": lim(1)}, cohort="other", within=LOWER),
            kq("other-beta", {"default": lim(2)}, cohort="other", within=LOWER),
        ],
        running=[kw("eng-beta/b1", "other-beta", 2, P.LOW, node="default")],
        waiting=[
            kw("eng-alpha/fit", "other-alpha", 1, P.HIGH),
            kw("eng-beta/preemptor", "other-beta", 2, P.NORMAL),
        ],
        admitted={"eng-alpha/fit", "eng-beta/preemptor"},
        preempted={"eng-beta/b1"},
    ),
    s_case("not enough resources", waiting=[kw("sales/new", "sales", 100)]),
    # Kueue's "gpu" is the GPUs; its priorities 50, 100: LOW, NORMAL.
    s_case(
        "prefer reclamation over cq priority based preemption",
        queues=[
            kq(
                "other-alpha",
                {"on-demand": lim(10), "spot": lim(10)},
                cohort="other",
                within=LOWER,
                reclaim=LOWER_R,
            ),
            kq(
                "other-beta",
                {"on-demand": lim(0), "spot": lim(0)},
                cohort="other",
                within=LOWER,
                reclaim=LOWER_R,
            ),
        ],
        running=[
            kw("eng-alpha/a1", "other-alpha", 5, P.LOW, node="on-demand"),
            kw("eng-beta/b1", "other-beta", 5, P.LOW, node="spot"),
        ],
        waiting=[kw("eng-alpha/preemptor", "other-alpha", 6)],
        admitted={"eng-alpha/preemptor"},
        preempted={"eng-beta/b1"},
        flavors={"eng-alpha/preemptor": "spot"},
    ),
    s_case(
        "prefer first preemption flavor when second flavor requires both reclaim and cq "
        "priority preemption",
        queues=[
            kq(
                "other-alpha",
                {"on-demand": lim(10), "spot": lim(10)},
                cohort="other",
                within=LOWER,
                reclaim=LOWER_R,
            ),
            kq("other-beta", {"on-demand": lim(0), "spot": lim(0)}, cohort="other"),
        ],
        running=[
            kw("eng-alpha/a1", "other-alpha", 5, P.LOW, node="on-demand"),
            kw("eng-alpha/a2", "other-alpha", 5, P.LOW, node="spot"),
            kw("eng-beta/b1", "other-beta", 5, P.LOW, node="spot"),
        ],
        waiting=[kw("eng-alpha/preemptor", "other-alpha", 6)],
        admitted={"eng-alpha/preemptor"},
        preempted={"eng-alpha/a1"},
        flavors={"eng-alpha/preemptor": "on-demand"},
    ),
    # Kueue's priorities 50, 100, 9001: LOW, NORMAL, HIGH.
    s_case(
        "prefer first preemption flavor when second flavor also requires cq preemption",
        queues=[
            kq(
                "other-alpha",
                {"on-demand": lim(10), "spot": lim(10)},
                cohort="other",
                within=LOWER,
                reclaim=LOWER_R,
            ),
            kq("other-beta", {"on-demand": lim(0), "spot": lim(0)}, cohort="other"),
        ],
        running=[
            kw("eng-alpha/a1", "other-alpha", 6, P.LOW, node="on-demand"),
            kw("eng-alpha/a2", "other-alpha", 5, P.LOW, node="spot"),
            kw("eng-beta/b1", "other-beta", 5, P.HIGH, node="spot"),
        ],
        waiting=[kw("eng-alpha/preemptor", "other-alpha", 5)],
        admitted={"eng-alpha/preemptor"},
        preempted={"eng-alpha/a1"},
        flavors={"eng-alpha/preemptor": "on-demand"},
    ),
    # Kueue's priorities 0, 1: NORMAL, HIGH; the admitted workloads were created first.
    s_case(
        "workload requiring reclaimation prioritized over wl in another full cq",
        queues=[
            kq("CQ1", {"on-demand": lim(10)}, cohort="other"),
            kq("CQ2", {"on-demand": lim(10)}, cohort="other", reclaim=ANY),
            kq("CQ3", {"on-demand": lim(0)}, cohort="other"),
        ],
        running=[
            kw("eng-alpha/Admitted-Workload-1", "CQ1", 5, node="on-demand"),
            kw("eng-gamma/Admitted-Workload-2", "CQ3", 5, node="on-demand"),
            kw("eng-gamma/Admitted-Workload-3", "CQ3", 5, P.HIGH, node="on-demand"),
        ],
        waiting=[
            kw("eng-alpha/WL1", "CQ1", 10, age=1),
            kw("eng-beta/WL2", "CQ2", 10, age=2),
        ],
        admitted={"eng-beta/WL2"},
        preempted={"eng-gamma/Admitted-Workload-2"},
    ),
    s_case(
        "capacity not blocked when lending clusterqueue can reclaim (ReclaimWithinCohort=Any)",
        queues=[
            kq("ClusterQueueA", {"on-demand": lim(2)}, cohort="root", reclaim=ANY),
            kq("ClusterQueueB", {"on-demand": lim(0)}, cohort="root"),
        ],
        running=[kw("eng-alpha/a1-admitted", "ClusterQueueA", 1, node="on-demand")],
        waiting=[
            kw("eng-alpha/a2-pending", "ClusterQueueA", 2),
            kw("eng-beta/b1-pending", "ClusterQueueB", 1, age=1),
        ],
        admitted={"eng-beta/b1-pending"},
        flavors={"eng-beta/b1-pending": "on-demand"},
    ),
    s_case(
        "capacity blocked when lending clusterqueue not guaranteed to reclaim "
        "(ReclaimWithinCohort=LowerPriority)",
        queues=[
            kq("ClusterQueueA", {"on-demand": lim(2)}, cohort="root", reclaim=LOWER_R),
            kq("ClusterQueueB", {"on-demand": lim(0)}, cohort="root"),
        ],
        running=[kw("eng-alpha/a1-admitted", "ClusterQueueA", 1, node="on-demand")],
        waiting=[
            kw("eng-alpha/a2-pending", "ClusterQueueA", 2),
            kw("eng-beta/b1-pending", "ClusterQueueB", 1, age=1),
        ],
    ),
    s_case(
        "capacity blocked when lending clusterqueue not guaranteed to reclaim "
        "(ReclaimWithinCohort=Never)",
        queues=[
            kq("ClusterQueueA", {"on-demand": lim(2)}, cohort="root", reclaim=NEVER_R),
            kq("ClusterQueueB", {"on-demand": lim(0)}, cohort="root"),
        ],
        running=[kw("eng-alpha/a1-admitted", "ClusterQueueA", 1, node="on-demand")],
        waiting=[
            kw("eng-alpha/a2-pending", "ClusterQueueA", 2),
            kw("eng-beta/b1-pending", "ClusterQueueB", 1, age=1),
        ],
    ),
    # Its FlavorFungibility is Kueue's default. Priorities 50, 100: LOW, NORMAL.
    s_case(
        "admit to second flavor when first needs preemption; WhenCanPreempt: TryNextFlavor",
        queues=[kq("preempt-attempts-cq", {"on-demand": lim(1), "spot": lim(1)}, within=LOWER)],
        running=[kw("eng-alpha/blocker", "preempt-attempts-cq", 1, P.LOW, node="on-demand")],
        waiting=[kw("eng-alpha/test-wl", "preempt-attempts-cq", 1)],
        admitted={"eng-alpha/test-wl"},
        flavors={"eng-alpha/test-wl": "spot"},
    ),
    s_case(
        "use second flavor when the first has no preemption candidates; WhenCanPreempt: "
        "MayStopSearch",
        queues=[
            kq(
                "other-alpha",
                {"on-demand": lim(50, 50), "spot": lim(100, 0)},
                within=LOWER,
                fungibility=search(MAY_STOP, MAY_STOP),
            )
        ],
        running=[kw("eng-alpha/admitted", "other-alpha", 50, node="on-demand")],
        waiting=[kw("eng-alpha/new", "other-alpha", 20)],
        admitted={"eng-alpha/new"},
        flavors={"eng-alpha/new": "spot"},
    ),
    # borrowWithinCohort. Kueue's LocalQueues lq_a and lq_b are cq_a and cq_b; "a" was created
    # 1 s after now, "b" 2 s.
    s_case(
        "preemption while borrowing, workload waiting for preemption should not block a "
        "borrowing workload in another CQ",
        queues=[
            kq("cq_shared", {"default": lim(4, 0)}, cohort="preemption-while-borrowing"),
            kq(
                "cq_a",
                {"default": lim(0, 3)},
                cohort="preemption-while-borrowing",
                reclaim=LOWER_R,
                borrow_within=bwc(),
            ),
            kq(
                "cq_b",
                {"default": lim(0)},
                cohort="preemption-while-borrowing",
                reclaim=LOWER_R,
                borrow_within=bwc(),
            ),
        ],
        running=[kw("eng-alpha/admitted_a", "cq_a", 2, node="default")],
        waiting=[kw("eng-alpha/a", "cq_a", 3, age=1), kw("eng-beta/b", "cq_b", 1, age=2)],
        admitted={"eng-beta/b"},
        flavors={"eng-beta/b": "default"},
    ),
    # Kueue's priorities 0, 99, 100: LOW, NORMAL, HIGH. Its LocalQueues "other" of eng-alpha
    # and eng-beta are other-alpha and other-beta.
    s_case(
        "multiple preemptions skip preemption when shared limited resource",
        queues=[
            kq(
                "other-alpha",
                {"default": lim(2)},
                cohort="other",
                within=LOWER,
                borrow_within=bwc(),
            ),
            kq(
                "other-beta",
                {"default": lim(2)},
                cohort="other",
                within=LOWER,
                borrow_within=bwc(),
            ),
            kq("resource-bank", {"default": lim(1)}, cohort="other"),
        ],
        running=[
            kw("eng-alpha/a1", "other-alpha", 2, P.LOW, node="default"),
            kw("eng-beta/b1", "other-beta", 2, P.LOW, node="default"),
        ],
        waiting=[
            kw("eng-alpha/preemptor", "other-alpha", 3, P.HIGH),
            kw("eng-beta/pretending-preemptor", "other-beta", 3, P.NORMAL),
        ],
        admitted={"eng-alpha/preemptor"},
        preempted={"eng-alpha/a1"},
    ),
    # Kueue's priorities 0, 100: NORMAL, HIGH; admitted was admitted 1 s before now.
    s_case(
        "don't assign flavor if there are no candidates for preemption",
        queues=[
            kq(
                "cq1",
                {"on-demand": lim(0, 1), "spot": lim(0, 1)},
                cohort="cohort",
                within=LOWER,
                reclaim=ANY,
                borrow_within=bwc(),
                fungibility=search(MAY_STOP, MAY_STOP),
            ),
            kq("cq2", {"on-demand": lim(1), "spot": lim(1)}, cohort="cohort"),
        ],
        running=[kw("eng-alpha/admitted", "cq2", 1, node="on-demand")],
        waiting=[kw("eng-alpha/new", "cq1", 1, P.HIGH)],
        admitted={"eng-alpha/new"},
        flavors={"eng-alpha/new": "spot"},
    ),
    # Hierarchical cohorts: the cohort "guaranteed" holds 4 and has the parent "root" (a Cohort
    # with no quotas). Kueue's priorities 0, 3: NORMAL, HIGH.
    s_case(
        "in a hierarchical cohort, workload borrowing less is scheduled first",
        queues=[
            kq("guaranteed", {"default": lim(0)}, cohort="guaranteed"),
            kq("best-effort", {"default": lim(0)}, cohort="root"),
        ],
        cohorts=[C("root"), C("guaranteed", "root", {"default": lim(4)})],
        waiting=[
            kw("eng-alpha/guaranteed", "guaranteed", 4),
            kw("eng-alpha/best-effort", "best-effort", 4, P.HIGH),
        ],
        admitted={"eng-alpha/guaranteed"},
        flavors={"eng-alpha/guaranteed": "default"},
    ),
    s_case(
        "no overadmission while borrowing",
        queues=[
            kq(
                "eng-gamma",
                {"on-demand": lim(50, 10), "spot": lim(0, 100)},
                cohort="eng",
                within=LOWER,
                reclaim=ANY,
            )
        ],
        running=[
            kw(
                "eng-gamma/existing",
                "eng-gamma",
                51,
                node="on-demand,spot",
                pod_sets=(PodSet("use-all-spot", 1, 100, 0, 0),),
            )
        ],
        waiting=[
            kw("eng-beta/new", "eng-beta", 50),
            kw("eng-alpha/new-alpha", "eng-alpha", 1, age=1),
            kw("eng-gamma/new-gamma", "eng-gamma", 50, age=2),
        ],
        admitted={"eng-beta/new", "eng-alpha/new-alpha"},
        flavors={"eng-beta/new": "on-demand", "eng-alpha/new-alpha": "on-demand"},
    ),
    # FlavorFungibility's preference, with both policies TryNextFlavor. Priorities -1, 0: LOW,
    # NORMAL.
    *(
        s_case(
            name,
            queues=[
                kq(
                    f"{prefix}-cq",
                    {"on-demand": lim(5, 0), "spot": lim(0, 5)},
                    cohort=f"{prefix}-cohort",
                    within=LOWER,
                    fungibility=fungibility,
                ),
                kq(
                    f"{prefix}-lender",
                    {"on-demand": lim(0), "spot": lim(5)},
                    cohort=f"{prefix}-cohort",
                ),
            ],
            running=[kw(f"default/low-{prefix}", f"{prefix}-cq", 5, P.LOW, node="on-demand")],
            waiting=[kw(f"default/high-{prefix}", f"{prefix}-cq", 5)],
            admitted={f"default/high-{prefix}"},
            preempted=preempted,
            flavors={f"default/high-{prefix}": flavor},
        )
        for name, prefix, fungibility, preempted, flavor in (
            (
                "PreemptionOverBorrowing preference: preempt in first flavor instead of borrowing "
                "in second",
                "pob",
                POB,
                {"default/low-pob"},
                "on-demand",
            ),
            (
                "BorrowingOverPreemption preference: borrow in second flavor instead of "
                "preempting in first",
                "bop",
                BOP,
                set(),
                "spot",
            ),
        )
    ),
    # nopc-root (on-demand 0, spot 5) over nopc-mid over nopc-cq and nopc-sibling (5 of
    # on-demand, idle); on-demand is nopc-cq's own, used up by a workload of its priority.
    s_case(
        "PreemptionOverBorrowing preference: select fitting second flavor over first flavor with "
        "no preemption candidates",
        queues=[
            kq(
                "nopc-cq",
                {"on-demand": lim(5, 0), "spot": lim(0)},
                cohort="nopc-mid",
                within=LOWER,
                fungibility=POB,
            ),
            kq("nopc-sibling", {"on-demand": lim(5), "spot": lim(0)}, cohort="nopc-mid"),
        ],
        cohorts=[
            C("nopc-root", None, {"on-demand": lim(0), "spot": lim(5)}),
            C("nopc-mid", "nopc-root"),
        ],
        running=[kw("default/admitted-nopc", "nopc-cq", 5, node="on-demand")],
        waiting=[kw("default/pending-nopc", "nopc-cq", 5)],
        admitted={"default/pending-nopc"},
        flavors={"default/pending-nopc": "spot"},
    ),
    # Pod set one asks cpu and example.com/gpu in each pod: here its cpu is cores (eng-alpha's
    # and eng-beta's flavors on-demand and spot are their CPU group's, on no node of their
    # own) and example.com/gpu amd.com/gpu (model-a); pod set two asks cores only. Ten pods of
    # 6 cores and a GPU are one pod of 60 cores and 10 GPUs, forty of a core one of 40.
    kueue_case(
        S,
        "assign multiple resources and flavors",
        [("model-a", "model-a", MI300)],
        [
            kq(
                "eng-alpha",
                {},
                cohort="eng",
                strategy=STRICT,
                cpu={"on-demand": {CPU: lim(50, 50)}, "spot": {CPU: lim(100, 0)}},
            ),
            kq(
                "eng-beta",
                {},
                cohort="eng",
                strategy=STRICT,
                within=LOWER,
                reclaim=ANY,
                cpu={"on-demand": {CPU: lim(50, 10)}, "spot": {CPU: lim(0, 100)}},
                amd={"model-a": lim(20, 0)},
            ),
        ],
        waiting=[
            kw(
                "eng-beta/new",
                "eng-beta",
                10,
                gpu_type=MI300,
                cpu=60,
                pod_sets=(PodSet("two", 1, 0, 40, 0),),
            )
        ],
        admitted={"eng-beta/new"},
        flavors={"eng-beta/new": "model-a"},
    ),
]

# preemption_test.go, TestPreemption: a case gives the preemptor and the flavor assignment it
# needs preemption in; here the preemptor waits and one cycle runs, so Kueue's targets are the
# preempted and the preemptor is admitted with them. Only the target ClusterQueue's cohort (or
# the target alone) of TestPreemption's ClusterQueues is kept: preemption looks nowhere else.
# Their cpu is the GPUs (flavor default); their memory quota (in the case's units) is the CPU
# group's, in flavor default too, or alpha and beta for standalone. Priorities -2, -1, 0, 1:
# SPOT, LOW, NORMAL, HIGH (the one case with a 2 maps 1 and 2 to NORMAL and HIGH). The
# preemptor is "in".
PR = "preemption_test.go"


def mem(
    nominal: float, borrow: float | None = None, lend: float | None = None
) -> dict[str, Limits]:
    return {MEMORY: (nominal, borrow, lend)}


STANDALONE = kq(
    "standalone",
    {"default": lim(6)},
    within=LOWER,
    cpu={"alpha": mem(3), "beta": mem(3)},
)
COHORT = [
    kq(
        "c1",
        {"default": lim(6, 6)},
        cohort="cohort",
        within=LOWER,
        reclaim=LOWER_R,
        cpu={"default": mem(3, 3)},
    ),
    kq("c2", {"default": lim(6, 6)}, cohort="cohort", reclaim=ANY, cpu={"default": mem(3, 3)}),
]
COHORT_NO_LIMITS = [
    kq(
        "d1",
        {"default": lim(6)},
        cohort="cohort-no-limits",
        within=LOWER,
        reclaim=LOWER_R,
        cpu={"default": mem(3)},
    ),
    kq("d2", {"default": lim(6)}, cohort="cohort-no-limits", reclaim=ANY, cpu={"default": mem(3)}),
]
LEGION = [
    kq(
        "l1",
        {"default": lim(6, 12)},
        cohort="legion",
        within=LOWER,
        reclaim=LOWER_R,
        cpu={"default": mem(3, 6)},
    )
]
PREVENT_STARVATION = [kq("preventStarvation", {"default": lim(6)}, within=NEWER)]
COHORT_LEND = [
    kq("lend1", {"default": lim(6, None, 4)}, cohort="cohort-lend", within=LOWER, reclaim=LOWER_R),
    kq("lend2", {"default": lim(6, None, 2)}, cohort="cohort-lend", within=LOWER, reclaim=LOWER_R),
]
COHORT_THREE = [
    kq(
        "a",
        {"default": lim(2)},
        cohort="cohort-three",
        within=LOWER,
        reclaim=ANY,
        cpu={"default": mem(2)},
    ),
    kq("b", {"default": lim(2)}, cohort="cohort-three", cpu={"default": mem(2)}),
    kq("c", {"default": lim(2)}, cohort="cohort-three", cpu={"default": mem(2)}),
]


def with_shared_cq(threshold: JobPriority | int) -> list[Q]:
    """The cohort with_shared_cq, its queues' maxPriorityThreshold (Kueue's 0) as `threshold`
    under the case's mapping of priorities (`bwc`)."""
    limit = bwc(threshold)
    cohort = "with_shared_cq"
    return [
        kq(
            "a_standard",
            {"default": lim(1, 12)},
            cohort=cohort,
            reclaim=LOWER_R,
            borrow_within=limit,
        ),
        kq(
            "b_standard",
            {"default": lim(1, 12)},
            cohort=cohort,
            within=LOWER,
            reclaim=ANY,
            borrow_within=limit,
        ),
        kq(
            "a_best_effort",
            {"default": lim(1, 12)},
            cohort=cohort,
            reclaim=LOWER_R,
            borrow_within=limit,
        ),
        kq(
            "b_best_effort",
            {"default": lim(0, 13)},
            cohort=cohort,
            reclaim=LOWER_R,
            borrow_within=limit,
        ),
        kq("shared", {"default": lim(10)}, cohort=cohort),
    ]


def p_case(name: str, queues: list[Q], **kwargs: Any) -> Scenario:
    return kueue_case(PR, name, nodes_of("default"), queues, **kwargs)


def ran(key: str, queue: str, gpus: int, priority: JobPriority = P.NORMAL, **kw_: Any) -> W:
    """A workload TestPreemption has admitted (all in flavor default)."""
    return kw(key, queue, gpus, priority, node="default", **kw_)


P_CASES = [
    p_case(
        "preempt lowest priority",
        [STANDALONE],
        running=[
            ran("low", "standalone", 2, P.LOW),
            ran("mid", "standalone", 2),
            ran("high", "standalone", 2, P.HIGH),
        ],
        waiting=[kw("in", "standalone", 2, P.HIGH)],
        admitted={"in"},
        preempted={"low"},
    ),
    p_case(
        "preempt multiple",
        [STANDALONE],
        running=[
            ran("low", "standalone", 2, P.LOW),
            ran("mid", "standalone", 2),
            ran("high", "standalone", 2, P.HIGH),
        ],
        waiting=[kw("in", "standalone", 3, P.HIGH)],
        admitted={"in"},
        preempted={"low", "mid"},
    ),
    p_case(
        "no preemption for low priority",
        [STANDALONE],
        running=[ran("low", "standalone", 3, P.LOW), ran("mid", "standalone", 3)],
        waiting=[kw("in", "standalone", 1, P.LOW)],
    ),
    p_case(
        "not enough low priority workloads",
        [STANDALONE],
        running=[ran("low", "standalone", 3, P.LOW), ran("mid", "standalone", 3)],
        waiting=[kw("in", "standalone", 4)],
    ),
    p_case(
        "some free quota, preempt low priority",
        [STANDALONE],
        running=[
            ran("low", "standalone", 1, P.LOW),
            ran("mid", "standalone", 1),
            ran("high", "standalone", 3, P.HIGH),
        ],
        waiting=[kw("in", "standalone", 2, P.HIGH)],
        admitted={"in"},
        preempted={"low"},
    ),
    p_case(
        "minimal set excludes low priority",
        [STANDALONE],
        running=[
            ran("low", "standalone", 1, P.LOW),
            ran("mid", "standalone", 2),
            ran("high", "standalone", 3, P.HIGH),
        ],
        waiting=[kw("in", "standalone", 2, P.HIGH)],
        admitted={"in"},
        preempted={"mid"},
    ),
    p_case(
        "reclaim quota from borrower",
        COHORT,
        running=[
            ran("c1-low", "c1", 3, P.LOW),
            ran("c2-mid", "c2", 3),
            ran("c2-high", "c2", 6, P.HIGH),
        ],
        waiting=[kw("in", "c1", 3, P.HIGH)],
        admitted={"in"},
        preempted={"c2-mid"},
    ),
    p_case(
        "reclaim quota if workload requests 0 resources for a resource at nominal quota",
        COHORT,
        running=[
            ran("c1-low", "c1", 3, P.LOW, memory=3),
            ran("c2-mid", "c2", 3),
            ran("c2-high", "c2", 6, P.HIGH),
        ],
        waiting=[kw("in", "c1", 3, P.HIGH, memory=0)],
        admitted={"in"},
        preempted={"c2-mid"},
    ),
    p_case(
        "not enough workloads borrowing",
        COHORT,
        running=[
            ran("c1-high", "c1", 4, P.HIGH),
            ran("c2-low-1", "c2", 4, P.LOW),
            ran("c2-low-2", "c2", 4, P.LOW),
        ],
        waiting=[kw("in", "c1", 4, P.HIGH)],
    ),
    p_case(
        "preempting locally and borrowing other resources in cohort, without cohort candidates",
        COHORT,
        running=[
            ran("c1-low", "c1", 4, P.LOW),
            ran("c2-low-1", "c2", 4, P.LOW),
            ran("c2-high-2", "c2", 4, P.HIGH),
        ],
        waiting=[kw("in", "c1", 4, P.HIGH, memory=5)],
        admitted={"in"},
        preempted={"c1-low"},
    ),
    p_case(
        "preempting locally and borrowing same resource in cohort",
        COHORT,
        running=[
            ran("c1-med", "c1", 4),
            ran("c1-low", "c1", 4, P.LOW),
            ran("c2-low-1", "c2", 4, P.LOW),
        ],
        waiting=[kw("in", "c1", 4, P.HIGH)],
        admitted={"in"},
        preempted={"c1-low"},
    ),
    p_case(
        "preempting locally and borrowing same resource in cohort; no borrowing limit in the "
        "cohort",
        COHORT_NO_LIMITS,
        running=[
            ran("d1-med", "d1", 4),
            ran("d1-low", "d1", 4, P.LOW),
            ran("d2-low-1", "d2", 4, P.LOW),
        ],
        waiting=[kw("in", "d1", 4, P.HIGH)],
        admitted={"in"},
        preempted={"d1-low"},
    ),
    p_case(
        "preempting locally and borrowing other resources in cohort, with cohort candidates",
        COHORT,
        running=[
            ran("c1-med", "c1", 4),
            ran("c2-low-1", "c2", 5, P.LOW),
            ran("c2-low-2", "c2", 1, P.LOW),
            ran("c2-low-3", "c2", 1, P.LOW),
        ],
        waiting=[kw("in", "c1", 2, P.HIGH, memory=5)],
        admitted={"in"},
        preempted={"c1-med"},
    ),
    p_case(
        "preempting locally and not borrowing same resource in 1-queue cohort",
        LEGION,
        running=[ran("l1-med", "l1", 4), ran("l1-low", "l1", 2, P.LOW)],
        waiting=[kw("in", "l1", 4, P.HIGH)],
        admitted={"in"},
        preempted={"l1-med"},
    ),
    p_case(
        "do not reclaim borrowed quota from same priority for "
        "withinCohort=ReclaimFromLowerPriority",
        COHORT,
        running=[ran("c1", "c1", 2), ran("c2-1", "c2", 4), ran("c2-2", "c2", 4)],
        waiting=[kw("in", "c1", 4)],
    ),
    p_case(
        "reclaim borrowed quota from same priority for withinCohort=ReclaimFromAny",
        COHORT,
        running=[ran("c1-1", "c1", 4), ran("c1-2", "c1", 4, P.HIGH), ran("c2", "c2", 2)],
        waiting=[kw("in", "c2", 4)],
        admitted={"in"},
        preempted={"c1-1"},
    ),
    p_case(
        "preempt from all ClusterQueues in cohort",
        COHORT,
        running=[
            ran("c1-low", "c1", 3, P.LOW),
            ran("c1-mid", "c1", 2),
            ran("c2-low", "c2", 3, P.LOW),
            ran("c2-mid", "c2", 4),
        ],
        waiting=[kw("in", "c1", 4)],
        admitted={"in"},
        preempted={"c1-low", "c2-low"},
    ),
    # wl1 was created long before, "in" 15 s before wl2 and wl3; wl2 was admitted 1 s after
    # wl1 and wl3.
    p_case(
        "preempt newer workloads with the same priority",
        PREVENT_STARVATION,
        running=[
            ran("wl1", "preventStarvation", 2, P.HIGH),
            ran("wl2", "preventStarvation", 2, age=16, started=1),
            ran("wl3", "preventStarvation", 2, age=16, started=0),
        ],
        waiting=[kw("in", "preventStarvation", 2, age=1)],
        admitted={"in"},
        preempted={"wl2"},
    ),
    # borrowWithinCohort, in the cohort with_shared_cq. Kueue's priorities -1, 0: LOW, NORMAL,
    # its threshold 0 NORMAL's value.
    p_case(
        "use BorrowWithinCohort; allow preempting a lower-priority workload from another "
        "ClusterQueue while borrowing",
        with_shared_cq(P.NORMAL),
        running=[
            ran("a_best_effort_low", "a_best_effort", 10, P.LOW),
            ran("b_best_effort_low", "b_best_effort", 1, P.LOW),
        ],
        waiting=[kw("in", "a_standard", 10)],
        admitted={"in"},
        preempted={"a_best_effort_low"},
    ),
    # Kueue's priorities 1, 2: NORMAL, HIGH; its threshold 0 is under both: LOW's value.
    p_case(
        "use BorrowWithinCohort; don't allow preempting a lower-priority workload with priority "
        "above MaxPriorityThreshold, if borrowing is required even after the preemption",
        with_shared_cq(P.LOW),
        running=[ran("b_standard", "b_standard", 10)],
        waiting=[kw("in", "a_standard", 10, P.HIGH)],
    ),
    p_case(
        "use BorrowWithinCohort; allow preempting a lower-priority workload with priority above "
        "MaxPriorityThreshold, if borrowing is not required after the preemption",
        with_shared_cq(P.LOW),
        running=[ran("b_standard", "b_standard", 13)],
        waiting=[kw("in", "a_standard", 1, P.HIGH)],
        admitted={"in"},
        preempted={"b_standard"},
    ),
    p_case(
        "use BorrowWithinCohort; don't allow for preemption of lower-priority workload from the "
        "same ClusterQueue",
        with_shared_cq(P.LOW),
        running=[ran("a_standard", "a_standard", 13)],
        waiting=[kw("in", "a_standard", 1, P.HIGH)],
    ),
    # Kueue's priorities 1, 2, 3: LOW, NORMAL, HIGH; its threshold 0 is under all: SPOT's value.
    p_case(
        "use BorrowWithinCohort; only preempt from CQ if no workloads below threshold and already "
        "above nominal",
        with_shared_cq(P.SPOT),
        running=[
            ran("a_standard_1", "a_standard", 10, P.LOW),
            ran("a_standard_2", "a_standard", 1, P.LOW),
            ran("b_standard_1", "b_standard", 1, P.LOW),
            ran("b_standard_2", "b_standard", 1),
        ],
        waiting=[kw("in", "b_standard", 1, P.HIGH)],
        admitted={"in"},
        preempted={"b_standard_1"},
    ),
    # Kueue's priorities -2, -1, 1, 2: SPOT, LOW, NORMAL, HIGH; its threshold 0 LOW's value.
    p_case(
        "use BorrowWithinCohort; preempt from CQ and from other CQs with workloads below threshold",
        with_shared_cq(P.LOW),
        running=[
            ran("b_standard_high", "b_standard", 10, P.HIGH),
            ran("b_standard_mid", "b_standard", 1),
            ran("a_best_effort_low", "a_best_effort", 1, P.LOW),
            ran("a_best_effort_lower", "a_best_effort", 1, P.SPOT),
        ],
        waiting=[kw("in", "b_standard", 2, P.HIGH)],
        admitted={"in"},
        preempted={"a_best_effort_lower", "b_standard_mid"},
    ),
    p_case(
        "reclaim quota from lender",
        COHORT_LEND,
        running=[
            ran("lend1-low", "lend1", 3, P.LOW),
            ran("lend2-mid", "lend2", 3),
            ran("lend2-high", "lend2", 4, P.HIGH),
        ],
        waiting=[kw("in", "lend1", 3, P.HIGH)],
        admitted={"in"},
        preempted={"lend2-mid"},
    ),
    p_case(
        "preempt from all ClusterQueues in cohort-lend",
        COHORT_LEND,
        running=[
            ran("lend1-low", "lend1", 3, P.LOW),
            ran("lend1-mid", "lend1", 2),
            ran("lend2-low", "lend2", 3, P.LOW),
            ran("lend2-mid", "lend2", 4),
        ],
        waiting=[kw("in", "lend1", 4)],
        admitted={"in"},
        preempted={"lend1-low", "lend2-low"},
    ),
    p_case(
        "cannot preempt from other ClusterQueues if exceeds requestable quota including "
        "lending limit",
        COHORT_LEND,
        running=[ran("lend2-low", "lend2", 10, P.LOW)],
        waiting=[kw("in", "lend1", 9)],
    ),
    *[
        p_case(
            name,
            COHORT_THREE,
            running=[
                ran("a1", "a", 1, P.SPOT, memory=running_memory),
                ran("a2", "a", 1, P.SPOT, memory=running_memory),
                ran("a3", "a", 1, P.LOW, memory=running_memory),
                ran("b1", "b", 1, memory=running_memory),
                ran("b2", "b", 1, memory=running_memory),
                ran("b3", "b", 1, memory=running_memory),
            ],
            waiting=[kw("in", "a", 2, memory=memory)],
            admitted={"in"},
            preempted={"a1", "a2"},
        )
        for name, running_memory, memory in (
            (
                "preemptions from cq when target queue is exhausted for the single requested "
                "resource",
                0,
                0,
            ),
            (
                "preemptions from cq when target queue is exhausted for two requested resources",
                1,
                2,
            ),
            (
                "preemptions from cq when target queue is exhausted for one requested resource, "
                "but not the other",
                0,
                2,
            ),
        )
    ],
    p_case(
        "allow preemption from other cluster queues if target cq is not exhausted for the "
        "requested resource",
        COHORT_THREE,
        running=[
            ran("a1", "a", 1, P.LOW),
            ran("b1", "b", 1),
            ran("b2", "b", 1),
            ran("b3", "b", 1),
            ran("b4", "b", 1),
            ran("b5", "b", 1, P.LOW),
        ],
        waiting=[kw("in", "a", 2)],
        admitted={"in"},
        preempted={"a1", "b5"},
    ),
    # Hierarchical cohorts: cohort-left and cohort-right have the implicit parent root.
    p_case(
        "long range preemption",
        [
            kq("cq-left", {"default": lim(10)}, cohort="cohort-left", reclaim=ANY),
            kq("cq-right", {"default": lim(0)}, cohort="cohort-right"),
        ],
        cohorts=[C("cohort-left", "root"), C("cohort-right", "root")],
        running=[ran("to-be-preempted", "cq-right", 5)],
        waiting=[kw("in", "cq-left", 8)],
        admitted={"in"},
        preempted={"to-be-preempted"},
    ),
    # launcher and workers (two pods of 1Gi: one pod of 2) ask memory only, the CPU group's, in
    # standalone's flavors alpha and beta, each the label of a node of its own; Kueue's
    # assignment (launcher in alpha, workers in beta) is what a cycle computes once both go.
    kueue_case(
        PR,
        "each podset preempts a different flavor",
        nodes_of("default", "alpha", "beta"),
        [STANDALONE],
        running=[
            kw("low-alpha", "standalone", 0, P.LOW, node="alpha", memory=2),
            kw("low-beta", "standalone", 0, P.LOW, node="beta", memory=2),
        ],
        waiting=[kw("in", "standalone", 0, memory=2, pod_sets=(PodSet("workers", 1, 0, 0, 2),))],
        admitted={"in"},
        preempted={"low-alpha", "low-beta"},
    ),
]

# preemption_hierarchical_test.go, TestHierarchicalPreemptions: as TestPreemption (one flavor,
# default; the preemptor "in" waits and one cycle runs), in trees of cohorts. A queue the case
# gives no cpu quota (its flavor default lists no resource) has a nominal quota of 0 here: Kueue
# counts a missing quota as 0, and a cycle needs the resource listed to assign a flavor at all.
# Each case says its mapping of priorities; a maxPriorityThreshold of 0 is the value of the
# priority Kueue's 0 maps to.
PH = "preemption_hierarchical_test.go"


def ph_case(name: str, queues: list[Q], cohorts: list[C], **kwargs: Any) -> Scenario:
    return kueue_case(PH, name, nodes_of("default"), queues, cohorts=cohorts, **kwargs)


def hq(name: str, cohort: str, nominal: float = 0, **kwargs: Any) -> Q:
    """A queue of TestHierarchicalPreemptions: withinClusterQueue LowerPriority and
    reclaimWithinCohort Any unless the case says otherwise."""
    kwargs = {"within": LOWER, "reclaim": ANY, **kwargs}
    return kq(name, {"default": lim(nominal, *kwargs.pop("limits", ()))}, cohort=cohort, **kwargs)


def r_c(quota: float) -> list[C]:
    """The root r (no quotas) and its child c, with `quota`."""
    return [C("r"), C("c", "r", {"default": lim(quota)})]


PH_CASES = [
    # Kueue's priority 0: NORMAL.
    ph_case(
        "preempt with hierarchical advantage",
        [hq("q", "c"), hq("q_borrowing", "r")],
        r_c(2),
        running=[ran("admitted2", "q_borrowing", 2)],
        waiting=[kw("in", "q", 2)],
        admitted={"in"},
        preempted={"admitted2"},
    ),
    # Kueue's priorities -10, 0: LOW, NORMAL.
    ph_case(
        "avoid queues within nominal quota",
        [hq("q_nominal", "r", 2), hq("q", "c"), hq("q_borrowing", "r")],
        r_c(2),
        running=[
            ran("admitted1", "q_nominal", 2, P.LOW),
            ran("admitted2", "q_borrowing", 2),
        ],
        waiting=[kw("in", "q", 2)],
        admitted={"in"},
        preempted={"admitted2"},
    ),
    # Kueue's priorities 0, 1, 2: LOW, NORMAL, HIGH.
    ph_case(
        "preempt multiple with hierarchical advantage",
        [hq("q", "c"), hq("q_borrowing", "r")],
        r_c(2),
        running=[
            ran("admitted1", "q_borrowing", 1),
            ran("admitted2", "q_borrowing", 1, P.HIGH),
        ],
        waiting=[kw("in", "q", 2, P.LOW)],
        admitted={"in"},
        preempted={"admitted1", "admitted2"},
    ),
    # Kueue's priorities -1, 0, 1: LOW, NORMAL, HIGH. admitted_preemptible asks 1 but its
    # admission holds 2, which Kueue counts: 2 here.
    ph_case(
        "preempt in cohort and own CQ",
        [hq("q", "c", borrow_within=bwc(P.NORMAL)), hq("q_same_cohort", "c")],
        r_c(3),
        running=[
            ran("admitted_not_preemptible", "q_same_cohort", 1, P.HIGH),
            ran("admitted_preemptible", "q_same_cohort", 2),
            ran("admitted_own_queue", "q", 1, P.LOW),
        ],
        waiting=[kw("in", "q", 2, P.HIGH)],
        admitted={"in"},
        preempted={"admitted_own_queue", "admitted_preemptible"},
    ),
    # Kueue's priorities -2, 0, 1: LOW, NORMAL, HIGH.
    ph_case(
        "prefer to preempt hierarchical candidate",
        [hq("q", "c"), hq("q_borrowing", "r")],
        r_c(2),
        running=[
            ran("admitted_borrowing", "q_borrowing", 1, P.HIGH),
            ran("admitted_same_queue", "q", 1, P.LOW),
        ],
        waiting=[kw("in", "q", 1)],
        admitted={"in"},
        preempted={"admitted_borrowing"},
    ),
    # Kueue's priorities -10, -1, 0: SPOT, LOW, NORMAL.
    ph_case(
        "forced to preempt priority candidate",
        [
            hq("q", "c", borrow_within=bwc(P.NORMAL)),
            hq("q_nominal", "r", 2),
            hq("q_same_cohort", "c"),
        ],
        r_c(2),
        running=[
            ran("admitted_nominal", "q_nominal", 2, P.SPOT),
            ran("admitted_same_cohort", "q_same_cohort", 2, P.LOW),
        ],
        waiting=[kw("in", "q", 2)],
        admitted={"in"},
        preempted={"admitted_same_cohort"},
    ),
    # Kueue's priorities 0, 10: NORMAL, HIGH.
    ph_case(
        "incoming workload fits in CQ nominal quota",
        [hq("q", "c", 4), hq("q_borrowing", "r"), hq("q_same_cohort", "c")],
        r_c(2),
        running=[
            ran("admitted_borrowing", "q_borrowing", 3, P.HIGH),
            ran("admitted_same_cohort", "q_same_cohort", 3, P.HIGH),
        ],
        waiting=[kw("in", "q", 4)],
        admitted={"in"},
        preempted={"admitted_borrowing", "admitted_same_cohort"},
    ),
    # r holds 1, c 4. Kueue's priorities -1, 0, 1: LOW, NORMAL, HIGH.
    *[
        ph_case(
            name,
            [
                hq("q", "c", reclaim=LOWER_R, borrow_within=bwc(P.NORMAL)),
                hq("q_borrowing", "r"),
                hq("q_same_cohort", "c"),
            ],
            [C("r", None, {"default": lim(1)}), C("c", "r", {"default": lim(4)})],
            running=[
                ran("admitted_borrowing", "q_borrowing", 2, P.LOW),
                ran(other, other_queue, 1, P.LOW),
                ran("admitted_borrowing_not_preemptible", "q_borrowing", 2, P.HIGH),
            ],
            waiting=[kw("in", "q", 3)],
            admitted={"in"},
            preempted={"admitted_borrowing", other},
        )
        for name, other, other_queue, why in (
            (
                "preempt hierarchical and priority candidates",
                "admitted_same_cohort_preemptible",
                "q_same_cohort",
                "under the threshold, while borrowing",
            ),
            (
                "preempt hierarchical candidates and inside CQ",
                "admitted_same_queue_preemptible",
                "q",
                "in q",
            ),
        )
    ],
    # Kueue's priorities -2, 0, 8, 9: SPOT, LOW, NORMAL, HIGH (admitted_borrowing_prio_10 has 9
    # too).
    ph_case(
        "reclaim nominal quota from lowest priority workload, excluding non-borrowing",
        [hq("q", "c"), hq("q_borrowing", "r"), hq("q_nominal", "r", 2)],
        r_c(3),
        running=[
            ran("admitted_borrowing_prio_8", "q_borrowing", 1),
            ran("admitted_borrowing_prio_9", "q_borrowing", 1, P.HIGH),
            ran("admitted_borrowing_prio_10", "q_borrowing", 1, P.HIGH),
            ran("admitted_nominal", "q_nominal", 2, P.SPOT),
        ],
        waiting=[kw("in", "q", 1, P.LOW)],
        admitted={"in"},
        preempted={"admitted_borrowing_prio_8"},
    ),
    # Kueue's priorities -10, 0: LOW, NORMAL.
    ph_case(
        "infeasible preemption all available workloads in pruned subtrees",
        [hq("q_other", "c_other"), hq("q", "c"), hq("q_same_cohort", "c")],
        [*r_c(2), C("c_other", "r", {"default": lim(2)})],
        running=[
            ran("admitted_other_1", "q_other", 1, P.LOW),
            ran("admitted_other_2", "q_other", 1, P.LOW),
            ran("admitted_same_cohort", "q_same_cohort", 2),
        ],
        waiting=[kw("in", "q", 2)],
    ),
    # cpu is the GPUs, memory (Gi) the CPU group's: r holds 3 GPUs and no memory, c 4 GPUs and
    # 4 of memory. Kueue's priorities -2, 0: LOW, NORMAL.
    ph_case(
        "hiearchical preemption with multiple resources",
        [
            hq(name, cohort, cpu={"default": mem(0)})
            for name, cohort in (("q", "c"), ("q_borrowing", "r"), ("q_same_cohort", "c"))
        ],
        [
            C("r", None, {"default": lim(3)}),
            C("c", "r", {"default": lim(4)}, {"default": mem(4)}),
        ],
        running=[
            ran("admitted_borrowing", "q_borrowing", 3, memory=1),
            ran("admitted_same_cohort", "q_same_cohort", 1, P.LOW, memory=3),
        ],
        waiting=[kw("in", "q", 2, P.LOW, memory=1)],
        admitted={"in"},
        preempted={"admitted_borrowing"},
    ),
    # Kueue's priorities -2, 0: LOW, NORMAL.
    ph_case(
        "respect lending limits",
        [hq("q", "c", 3, limits=(None, 2)), hq("q_borrowing", "r")],
        r_c(2),
        running=[ran("admitted_borrowing", "q_borrowing", 4)],
        waiting=[kw("in", "q", 5, P.LOW)],
        admitted={"in"},
        preempted={"admitted_borrowing"},
    ),
]

# preemption_fair_test.go, TestFairPreemptions: as TestPreemption (one flavor, default; the
# preemptor waits and one cycle runs), with fair sharing on. Its ClusterQueues a, b and c (3
# each) and preemptible (0) in the cohort all are `fair_queues`; where a case gives its own, they
# preempt as it says (a queue it gives no quota has a nominal quota of 0, as in
# TestHierarchicalPreemptions). Kueue's priorities -3, -1, 0 and above: SPOT, LOW, NORMAL, HIGH;
# the queues' maxPriorityThreshold -3 is SPOT's value. Where a case asks halves of a cpu, every
# quantity is doubled (GPUs are whole; shares are ratios, so they do not change).
PF = "preemption_fair_test.go"


def pf_case(
    name: str,
    queues: list[Q],
    *,
    nodes: list[tuple[str, str, str]] | None = None,
    **kwargs: Any,
) -> Scenario:
    return kueue_case(PF, name, nodes or nodes_of("default"), queues, fair_sharing=True, **kwargs)


def fair_queues(scale: int = 1) -> list[Q]:
    """TestFairPreemptions' baseCQs, every quota times `scale`."""
    return [
        *(
            kq(
                name,
                {"default": lim(3 * scale)},
                cohort="all",
                within=LOWER,
                reclaim=ANY,
                borrow_within=bwc(P.SPOT),
            )
            for name in ("a", "b", "c")
        ),
        kq("preemptible", {"default": lim(0)}, cohort="all"),
    ]


def weighted(*weights: tuple[str, float], nominal: float = 3) -> list[Q]:
    """ClusterQueues of the cohort all, with `nominal` each and the given weights, that preempt
    within themselves LowerPriority and reclaim Any."""
    return [
        kq(
            name,
            {"default": lim(nominal)},
            cohort="all",
            within=LOWER,
            reclaim=ANY,
            weight=weight,
        )
        for name, weight in weights
    ]


def units(queue: str, *keys: str, priority: JobPriority = P.NORMAL) -> list[W]:
    """Running workloads of 1 GPU each."""
    return [ran(key, queue, 1, priority) for key in keys]


A3 = units("a", "a1", "a2", "a3")
B3 = units("b", "b1", "b2", "b3")
B5 = units("b", "b1", "b2", "b3", "b4", "b5")
B6 = units("b", "b1", "b2", "b3", "b4", "b5", "b6")

PF_CASES = [
    pf_case(
        "reclaim nominal from user using the most",
        fair_queues(),
        running=[*A3, *B5, *units("c", "c1")],
        waiting=[kw("c_incoming", "c", 1)],
        admitted={"c_incoming"},
        preempted={"b1"},
    ),
    pf_case(
        "can reclaim from queue using less, if taking the latest workload from user using the "
        "most isn't enough",
        fair_queues(),
        running=[ran("a1", "a", 3), ran("a2", "a", 1), ran("b1", "b", 2), ran("b2", "b", 3)],
        waiting=[kw("c_incoming", "c", 3)],
        admitted={"c_incoming"},
        preempted={"a1"},
    ),
    pf_case(
        "reclaim borrowable quota from user using the most",
        fair_queues(),
        running=[*A3, *B5, *units("c", "c1")],
        waiting=[kw("a_incoming", "a", 1)],
        admitted={"a_incoming"},
        preempted={"b1"},
    ),
    # Doubled.
    pf_case(
        "preempt one from each CQ borrowing",
        fair_queues(2),
        running=[
            ran("a1", "a", 1),
            ran("a2", "a", 1),
            ran("a3", "a", 6),
            ran("b1", "b", 1),
            ran("b2", "b", 1),
            ran("b3", "b", 6),
        ],
        waiting=[kw("c_incoming", "c", 4)],
        admitted={"c_incoming"},
        preempted={"a1", "b1"},
    ),
    pf_case(
        "can't preempt when everyone under nominal",
        fair_queues(),
        running=[*A3, *B3, *units("c", "c1", "c2", "c3")],
        waiting=[kw("c_incoming", "c", 1)],
    ),
    pf_case(
        "can't preempt when it would switch the imbalance",
        fair_queues(),
        running=[*A3, *B5],
        waiting=[kw("a_incoming", "a", 2)],
    ),
    pf_case(
        "can preempt lower priority workloads from same CQ",
        fair_queues(),
        running=[
            *units("a", "a1_low", "a2_low", priority=P.LOW),
            *units("a", "a3", "a4"),
            *B5,
        ],
        waiting=[kw("a_incoming", "a", 2)],
        admitted={"a_incoming"},
        preempted={"a1_low", "a2_low"},
    ),
    pf_case(
        "can preempt a combination of same CQ and highest user",
        fair_queues(),
        running=[*units("a", "a_low", priority=P.LOW), *units("a", "a2", "a3"), *B6],
        waiting=[kw("a_incoming", "a", 2)],
        admitted={"a_incoming"},
        preempted={"a_low", "b1"},
    ),
    pf_case(
        "preempt huge workload if there is no other option, as long as the target CQ gets a "
        "lower share",
        fair_queues(),
        running=[ran("b1", "b", 9)],
        waiting=[kw("a_incoming", "a", 2)],
        admitted={"a_incoming"},
        preempted={"b1"},
    ),
    pf_case(
        "can't preempt huge workload if the incoming is also huge",
        fair_queues(),
        running=[ran("a1", "a", 2), ran("b1", "b", 7)],
        waiting=[kw("a_incoming", "a", 5)],
    ),
    pf_case(
        "can't preempt 2 smaller workloads if the incoming is huge",
        fair_queues(),
        running=[ran("b1", "b", 2), ran("b2", "b", 2), ran("b3", "b", 3)],
        waiting=[kw("a_incoming", "a", 6)],
    ),
    pf_case(
        "preempt from target and others even if over nominal",
        fair_queues(),
        running=[
            ran("a1_low", "a", 2, P.LOW),
            ran("a2_low", "a", 1, P.LOW),
            ran("b1", "b", 3),
            ran("b2", "b", 3),
        ],
        waiting=[kw("a_incoming", "a", 4)],
        admitted={"a_incoming"},
        preempted={"a1_low", "b1"},
    ),
    # Doubled.
    pf_case(
        "prefer to preempt workloads that don't make the target CQ have the biggest share",
        fair_queues(2),
        running=[ran("b1", "b", 4), ran("b2", "b", 2), ran("b3", "b", 4), ran("c1", "c", 2)],
        waiting=[kw("a_incoming", "a", 7)],
        admitted={"a_incoming"},
        preempted={"b2"},
    ),
    # Doubled.
    pf_case(
        "preempt from different cluster queues if the end result has a smaller max share",
        fair_queues(2),
        running=[ran("b1", "b", 4), ran("b2", "b", 5), ran("c1", "c", 4), ran("c2", "c", 5)],
        waiting=[kw("a_incoming", "a", 7)],
        admitted={"a_incoming"},
        preempted={"b1", "c1"},
    ),
    # Doubled.
    pf_case(
        "scenario above does not flap",
        fair_queues(2),
        running=[ran("a1", "a", 7), ran("b2", "b", 5), ran("c2", "c", 5)],
        waiting=[kw("b_incoming", "b", 4)],
    ),
    pf_case(
        "cannot preempt if it would make the candidate CQ go under nominal after preempting one "
        "element",
        fair_queues(),
        running=[ran("b1", "b", 3), ran("b2", "b", 3), ran("c1", "c", 3)],
        waiting=[kw("a_incoming", "a", 4)],
    ),
    pf_case(
        "workloads under priority threshold not capriciously preempted",
        fair_queues(),
        running=[
            *A3,
            *B3,
            *units("preemptible", "preemptible1", "preemptible2", "preemptible3", priority=P.SPOT),
        ],
        waiting=[kw("a_incoming", "a", 2)],
    ),
    pf_case(
        "CQ with higher weight can preempt more",
        weighted(("a", 2), ("b", 1), ("c", 1)),
        running=[*A3, *B6],
        waiting=[kw("a_incoming", "a", 2)],
        admitted={"a_incoming"},
        preempted={"b1", "b2"},
    ),
    pf_case(
        "can preempt anything borrowing from CQ with 0 weight",
        weighted(("a", 1), ("b", 0), ("c", 1)),
        running=[*A3, *B6],
        waiting=[kw("a_incoming", "a", 3)],
        admitted={"a_incoming"},
        preempted={"b1", "b2", "b3"},
    ),
    pf_case(
        "can't preempt nominal from CQ with 0 weight",
        weighted(("a", 1), ("b", 0)),
        running=[*A3, *B3],
        waiting=[kw("a_incoming", "a", 1)],
    ),
    pf_case(
        "can't preempt nominal from Cohort with 0 weight",
        [
            kq("left-cq", {"default": lim(0)}, cohort="root", reclaim=ANY),
            kq("right-cq", {"default": lim(0)}, cohort="right-cohort", reclaim=ANY, weight=0),
        ],
        cohorts=[C("right-cohort", "root", {"default": lim(1)}, weight=0)],
        running=[ran("right-1", "right-cq", 1)],
        waiting=[kw("left-1", "left-cq", 1)],
    ),
    # Kueue's priority 1000: HIGH.
    pf_case(
        "can preempt within cluster queue when no cohort",
        [kq("a", {"default": lim(1)}, within=LOWER)],
        running=[ran("a1", "a", 1)],
        waiting=[kw("a_incoming", "a", 1, P.HIGH)],
        admitted={"a_incoming"},
        preempted={"a1"},
    ),
    # ROOT holds nothing; RIGHT (weight 0.1) holds 1; b (weight 0.1) no quota.
    pf_case(
        "borrowing cq in non-borrowing cohort is protected",
        [
            kq("a", {"default": lim(5)}, cohort="ROOT", within=LOWER, reclaim=ANY, weight=10),
            kq("b", {"default": lim(0)}, cohort="RIGHT", weight=0.1),
        ],
        cohorts=[C("ROOT"), C("RIGHT", "ROOT", {"default": lim(1)}, weight=0.1)],
        running=[*units("a", "a1", "a2", "a3", priority=P.LOW), ran("b1", "b", 1, P.LOW)],
        waiting=[kw("unit", "a", 5)],
        admitted={"unit"},
        preempted={"a1", "a2", "a3"},
    ),
    # RIGHT (weight 0.1) holds 3; b (weight 0.1) no quota. Kueue's priority 100: HIGH.
    pf_case(
        "forced to preempt within clusterqueue because borrowing workload too important",
        [
            kq(
                "a",
                {"default": lim(5)},
                cohort="ROOT",
                within=LOWER,
                reclaim=LOWER_R,
                weight=10,
            ),
            kq("b", {"default": lim(0)}, cohort="RIGHT", weight=0.1),
        ],
        cohorts=[C("ROOT"), C("RIGHT", "ROOT", {"default": lim(3)}, weight=0.1)],
        running=[*units("a", "a1", "a2", "a3", priority=P.LOW), ran("b1", "b", 4, P.HIGH)],
        waiting=[kw("unit", "a", 4)],
        admitted={"unit"},
        preempted={"a1", "a2", "a3"},
    ),
    # ROOT's children A (weight 1.01), B (0.99) and C, each with a chain of two more below; only
    # CCCC, under C, holds quota: 1.
    pf_case(
        "deep preemption",
        [
            kq("a", {"default": lim(0)}, cohort="AAA", reclaim=ANY),
            kq("b", {"default": lim(0)}, cohort="BBB"),
        ],
        cohorts=[
            C("ROOT"),
            C("A", "ROOT", weight=1.01),
            C("AA", "A"),
            C("AAA", "AA"),
            C("B", "ROOT", weight=0.99),
            C("BB", "B"),
            C("BBB", "BB"),
            C("C", "ROOT"),
            C("CC", "C"),
            C("CCC", "CC"),
            C("CCCC", "CCC", {"default": lim(1)}),
        ],
        running=[ran("b1", "b", 1)],
        waiting=[kw("a1", "a", 1)],
        admitted={"a1"},
        preempted={"b1"},
    ),
    pf_case(
        "cq with zero weight can reclaim nominal quota",
        [
            kq("a", {"default": lim(1)}, cohort="ROOT", reclaim=ANY, weight=0),
            kq("b", {"default": lim(0)}, cohort="ROOT"),
        ],
        running=[ran("b1", "b", 1)],
        waiting=[kw("a1", "a", 1)],
        admitted={"a1"},
        preempted={"b1"},
    ),
    pf_case(
        "cohort with zero weight can reclaim nominal quota",
        [
            kq("a", {"default": lim(0)}, cohort="A", reclaim=ANY, weight=0),
            kq("b", {"default": lim(0)}, cohort="ROOT"),
        ],
        cohorts=[C("A", "ROOT", {"default": lim(1)}, weight=0)],
        running=[ran("b1", "b", 1)],
        waiting=[kw("a1", "a", 1)],
        admitted={"a1"},
        preempted={"b1"},
    ),
    pf_case(
        "nominal first: workload fitting within nominal can preempt despite high aggregate DRS",
        [
            kq(
                "a",
                {"premium": lim(3), "cheap": lim(0)},
                cohort="all",
                reclaim=ANY,
                fungibility=search(MAY_STOP, MAY_STOP),
            ),
            kq("b", {"premium": lim(0), "cheap": lim(6)}, cohort="all"),
        ],
        nodes=nodes_of("premium", "cheap"),
        running=[
            *(kw(f"a_prem{i}", "a", 1, node="premium") for i in (1, 2)),
            *(kw(f"a_cheap{i}", "a", 1, node="cheap") for i in range(1, 6)),
            kw("b_prem1", "b", 1, node="premium"),
        ],
        waiting=[kw("a_incoming", "a", 1)],
        admitted={"a_incoming"},
        preempted={"b_prem1"},
        flavors={"a_incoming": "premium"},
    ),
    pf_case(
        "zero weight borrowing preemptor cannot preempt from a borrowing CQ with a non-zero weight",
        [
            kq("a", {"default": lim(1)}, cohort="all", reclaim=ANY, weight=0),
            kq("b", {"default": lim(1)}, cohort="all"),
        ],
        running=[ran("a1", "a", 1), *units("b", "b1", "b2")],
        waiting=[kw("a_incoming", "a", 1)],
    ),
    *[
        pf_case(
            name,
            [
                kq("a", {"default": lim(1)}, cohort="all", reclaim=ANY, weight=weight),
                kq("b", {"default": lim(0)}, cohort="all", weight=weight),
            ],
            cohorts=[C("all", None, {"default": lim(3)})],
            running=units("b", "b1", "b2", "b3"),
            waiting=[kw("a_incoming", "a", 2)],
            admitted={"a_incoming"},
            preempted={"b1"},
        )
        for name, weight in (
            (
                "zero weight borrowing preemptor can preempt from a borrowing CQ which also has "
                "zero weight",
                0,
            ),
            ("non-zero weight borrowing preemptor preempts from a borrowing CQ", 1),
        )
    ],
    # A (weight 0) holds 1 and has the implicit parent ROOT.
    pf_case(
        "candidates skipped by the first strategy are still available to the second strategy",
        [
            kq("p", {"default": lim(2)}, cohort="A", reclaim=ANY),
            kq("y", {"default": lim(2)}, cohort="A"),
            kq("x", {"default": lim(1)}, cohort="ROOT"),
        ],
        cohorts=[C("A", "ROOT", {"default": lim(1)}, weight=0)],
        running=[ran("p1", "p", 2), ran("y1", "y", 2), ran("y2", "y", 2), *units("x", "x1", "x2")],
        waiting=[kw("p_incoming", "p", 1)],
        admitted={"p_incoming"},
        preempted={"y1", "x1"},
    ),
]

# flavorassigner_test.go, TestAssignFlavors: a case gives one workload ("wl") and the quota
# its ClusterQueue (and a second one of its cohort) already uses; here that usage is running
# workloads of the same priority ("usage", "secondary-usage"), the queues keep the case's
# policies (Kueue's defaults: no preemption), and one cycle runs: a Fit assignment is admitted on its flavor, a
# Preempt or NoFit one is not. cpu is the GPUs (memory, in MiB, the CPU group's) unless the case
# is about cpu and memory sharing a resource group's flavors: then they are cpu and memory (and
# the GPUs, if any, are the case's example.com/gpu); only a GPU flavor is in a placement, so
# only GPU flavors are checked.
# The pods quota, where it is not what the case is about, never binds and is left out.
FA = "flavorassigner_test.go"
CQ = "test-clusterqueue"
CQ2 = "test-secondary-clusterqueue"


def f_case(
    name: str, nodes: list[tuple[str, str, str]], queues: list[Q], **kwargs: Any
) -> Scenario:
    return kueue_case(FA, name, nodes, queues, **kwargs)


F_CASES = [
    f_case(
        "single flavor, fits",
        nodes_of("default"),
        [kq(CQ, {"default": lim(1)}, cpu={"default": mem(2)})],
        waiting=[kw("wl", CQ, 1, memory=1)],
        admitted={"wl"},
        flavors={"wl": "default"},
    ),
    f_case(
        "single flavor, used resources, doesn't fit",
        nodes_of("default"),
        [kq(CQ, {"default": lim(4)})],
        running=[kw("usage", CQ, 3, node="default")],
        waiting=[kw("wl", CQ, 2)],
    ),
    f_case(
        "multiple resource groups, fits",
        nodes_of("one", "two"),
        [kq(CQ, {"one": lim(2), "two": lim(4)}, cpu={"b_one": mem(1024), "b_two": mem(5120)})],
        waiting=[kw("wl", CQ, 3, memory=10)],
        admitted={"wl"},
        flavors={"wl": "two"},
    ),
    f_case(
        "multiple resource groups, one could fit with preemption, other doesn't fit",
        nodes_of("one"),
        [kq(CQ, {"one": lim(3)}, cpu={"b_one": mem(1)})],
        running=[kw("usage", CQ, 1, node="one")],
        waiting=[kw("wl", CQ, 3, memory=10)],
    ),
    # cpu and memory share a group's flavors: here they are cpu and memory, and
    # example.com/gpu is the GPUs.
    f_case(
        "multiple resource groups with multiple resources, fits",
        nodes_of("b_one", "b_two"),
        [
            kq(
                CQ,
                {"b_one": lim(4), "b_two": lim(2)},
                cpu={
                    "one": {CPU: lim(2), MEMORY: lim(1024)},
                    "two": {CPU: lim(4), MEMORY: lim(15)},
                },
            )
        ],
        waiting=[kw("wl", CQ, 3, cpu=3, memory=10)],
        admitted={"wl"},
        flavors={"wl": "b_one"},
    ),
    f_case(
        "multiple resources in a group, doesn't fit",
        nodes_of("node"),
        [
            kq(
                CQ,
                {},
                cpu={
                    "one": {CPU: lim(2), MEMORY: lim(1024)},
                    "two": {CPU: lim(4), MEMORY: lim(5)},
                },
            )
        ],
        waiting=[kw("wl", CQ, 0, cpu=3, memory=10)],
    ),
    # Its two pod sets (driver: 5 cpu, worker: 3 cpu) are two workloads here; both fit, so
    # all-or-nothing does not bind. Kueue puts the driver in flavor two, the worker in one.
    f_case(
        "multiple specs, fit different flavors",
        nodes_of("node"),
        [kq(CQ, {}, cpu={"one": {CPU: lim(4)}, "two": {CPU: lim(10)}})],
        waiting=[kw("wl/driver", CQ, 0, cpu=5), kw("wl/worker", CQ, 0, cpu=3, age=1)],
        admitted={"wl/driver", "wl/worker"},
    ),
    # Its two pod sets are two workloads here too (both fit); memory is in GiB.
    f_case(
        "multiple specs, fits borrowing",
        nodes_of("default"),
        [
            kq(CQ, {"default": lim(2, 98)}, cohort="test-cohort", cpu={"default": mem(2)}),
            kq(CQ2, {"default": lim(198)}, cohort="test-cohort", cpu={"default": mem(198)}),
        ],
        waiting=[
            kw("wl/driver", CQ, 4, memory=1),
            kw("wl/worker", CQ, 6, memory=4, age=1),
        ],
        admitted={"wl/driver", "wl/worker"},
        flavors={"wl/driver": "default", "wl/worker": "default"},
    ),
    f_case(
        "not enough space to borrow",
        nodes_of("one"),
        [
            kq(CQ, {"one": lim(1)}, cohort="test-cohort"),
            kq(CQ2, {"one": lim(10, None, 0)}, cohort="test-cohort"),
        ],
        running=[kw("secondary-usage", CQ2, 9, node="one")],
        waiting=[kw("wl", CQ, 2)],
    ),
    f_case(
        "past max, but can preempt in ClusterQueue",
        nodes_of("one"),
        [
            kq(CQ, {"one": lim(2, 8)}, cohort="test-cohort"),
            kq(CQ2, {"one": lim(98)}, cohort="test-cohort"),
        ],
        running=[kw("usage", CQ, 9, node="one"), kw("secondary-usage", CQ2, 9, node="one")],
        waiting=[kw("wl", CQ, 2)],
    ),
    f_case(
        "past min, but can preempt in ClusterQueue",
        nodes_of("one"),
        [kq(CQ, {"one": lim(2)})],
        running=[kw("usage", CQ, 1, node="one")],
        waiting=[kw("wl", CQ, 2)],
    ),
    f_case(
        "past min, but can preempt in cohort and ClusterQueue",
        nodes_of("one"),
        [
            kq(CQ, {"one": lim(3)}, cohort="test-cohort"),
            kq(CQ2, {"one": lim(7)}, cohort="test-cohort"),
        ],
        running=[kw("usage", CQ, 2, node="one"), kw("secondary-usage", CQ2, 8, node="one")],
        waiting=[kw("wl", CQ, 2)],
    ),
    # example.com/gpu is amd.com/gpu here: flavor one has nodes of it, the queue lists only cpu.
    f_case(
        "resource not listed in clusterQueue",
        [("one", "one", A100), ("one-amd", "one", MI300)],
        [kq(CQ, {"one": lim(4)})],
        waiting=[kw("wl", CQ, 2, gpu_type=MI300)],
    ),
    # The stub oracle reports preemption possible in flavor one, which the case is about
    # (MayStopSearch when it can preempt): here usage is LOW and the queue preempts within itself,
    # the candidates the stub stands for; wl preempts it and lands on one.
    f_case(
        "preempt before try next flavor",
        nodes_of("one", "two"),
        [
            kq(
                CQ,
                {"one": lim(10), "two": lim(10)},
                within=LOWER,
                fungibility=search(MAY_STOP, MAY_STOP),
            )
        ],
        running=[kw("usage", CQ, 2, P.LOW, node="one")],
        waiting=[kw("wl", CQ, 9)],
        admitted={"wl"},
        preempted={"usage"},
        flavors={"wl": "one"},
    ),
    f_case(
        "preempt before try next flavor; using WhenCanBorrow=MayStopSearch,WhenCanPreempt=MayStopSearch",
        nodes_of("one", "two"),
        [
            kq(
                CQ,
                {"one": lim(10), "two": lim(10)},
                within=LOWER,
                fungibility=search(MAY_STOP, MAY_STOP),
            )
        ],
        running=[kw("usage", CQ, 2, P.LOW, node="one")],
        waiting=[kw("wl", CQ, 9)],
        admitted={"wl"},
        preempted={"usage"},
        flavors={"wl": "one"},
    ),
    f_case(
        "preempt try next flavor",
        nodes_of("one", "two"),
        [kq(CQ, {"one": lim(10), "two": lim(10)})],
        running=[kw("usage", CQ, 2, node="one")],
        waiting=[kw("wl", CQ, 9)],
        admitted={"wl"},
        flavors={"wl": "two"},
    ),
    f_case(
        "borrow try next flavor, found the first flavor",
        nodes_of("one", "two"),
        [
            kq(
                CQ,
                {"one": lim(10, 1), "two": lim(1)},
                cohort="test-cohort",
                fungibility=search(TRY_NEXT, TRY_NEXT),
            ),
            kq(CQ2, {"one": lim(1)}, cohort="test-cohort"),
        ],
        running=[kw("usage", CQ, 2, node="one")],
        waiting=[kw("wl", CQ, 9)],
        admitted={"wl"},
        flavors={"wl": "one"},
    ),
    f_case(
        "borrow try next flavor, found the second flavor",
        nodes_of("one", "two"),
        [
            kq(
                CQ,
                {"one": lim(10, 1), "two": lim(10)},
                cohort="test-cohort",
                fungibility=search(TRY_NEXT, TRY_NEXT),
            ),
            kq(CQ2, {"one": lim(1)}, cohort="test-cohort"),
        ],
        running=[kw("usage", CQ, 2, node="one")],
        waiting=[kw("wl", CQ, 9)],
        admitted={"wl"},
        flavors={"wl": "two"},
    ),
    f_case(
        "borrow before try next flavor",
        nodes_of("one", "two"),
        [
            kq(CQ, {"one": lim(10, 1), "two": lim(10)}, cohort="test-cohort"),
            kq(CQ2, {"one": lim(1)}, cohort="test-cohort"),
        ],
        running=[kw("usage", CQ, 2, node="one")],
        waiting=[kw("wl", CQ, 9)],
        admitted={"wl"},
        flavors={"wl": "one"},
    ),
    f_case(
        "when borrowing while preemption is needed for flavor one; WhenCanBorrow=TryNextFlavor",
        nodes_of("one", "two"),
        [
            kq(
                CQ,
                {"one": lim(0, 12), "two": lim(12)},
                cohort="test-cohort",
                reclaim=LOWER_R,
                borrow_within=bwc(),
                fungibility=search(TRY_NEXT, MAY_STOP),
            ),
            kq(CQ2, {"one": lim(12)}, cohort="test-cohort"),
        ],
        waiting=[kw("wl", CQ, 12)],
        admitted={"wl"},
        flavors={"wl": "two"},
    ),
    f_case(
        "when borrowing while preemption is needed for flavor one; WhenCanBorrow=TryNextFlavor,WhenCanPreempt=MayStopSearch",
        nodes_of("one", "two"),
        [
            kq(
                CQ,
                {"one": lim(0, 12), "two": lim(12)},
                cohort="test-cohort",
                reclaim=LOWER_R,
                borrow_within=bwc(),
                fungibility=search(TRY_NEXT, MAY_STOP),
            ),
            kq(CQ2, {"one": lim(12)}, cohort="test-cohort"),
        ],
        waiting=[kw("wl", CQ, 12)],
        admitted={"wl"},
        flavors={"wl": "two"},
    ),
    f_case(
        "when borrowing while preemption is needed, but borrowingLimit exceeds the quota "
        "available in the cohort",
        nodes_of("one"),
        [
            kq(
                CQ,
                {"one": lim(0, 12)},
                cohort="test-cohort",
                reclaim=LOWER_R,
                borrow_within=bwc(),
            ),
            kq(CQ2, {"one": lim(11)}, cohort="test-cohort"),
        ],
        running=[kw("secondary-usage", CQ2, 10, node="one")],
        waiting=[kw("wl", CQ, 12)],
    ),
    f_case(
        "lend try next flavor, found the second flavor",
        nodes_of("one", "two"),
        [
            kq(
                CQ,
                {"one": lim(10, None, 1), "two": lim(10, None, 0)},
                cohort="test-cohort",
                fungibility=search(TRY_NEXT, TRY_NEXT),
            ),
            kq(CQ2, {"one": lim(1)}, cohort="test-cohort"),
        ],
        running=[kw("usage", CQ, 2, node="one")],
        waiting=[kw("wl", CQ, 9)],
        admitted={"wl"},
        flavors={"wl": "two"},
    ),
    f_case(
        "lend try next flavor, found the first flavor",
        nodes_of("one", "two"),
        [
            kq(
                CQ,
                {"one": lim(10, None, 1), "two": lim(1, None, 0)},
                cohort="test-cohort",
                fungibility=search(TRY_NEXT, TRY_NEXT),
            ),
            kq(CQ2, {"one": lim(1)}, cohort="test-cohort"),
        ],
        running=[kw("usage", CQ, 2, node="one")],
        waiting=[kw("wl", CQ, 9)],
        admitted={"wl"},
        flavors={"wl": "one"},
    ),
    f_case(
        "cannot preempt in cohort (oracle returns None) for the first flavor, tries the second flavor (which fits)",
        nodes_of("one", "two"),
        [
            kq(
                CQ,
                {"one": lim(0, 2), "two": lim(0, 2)},
                cohort="test-cohort",
                reclaim=LOWER_R,
                borrow_within=bwc(),
                fungibility=search(MAY_STOP, MAY_STOP),
            ),
            kq(CQ2, {"one": lim(2), "two": lim(2)}, cohort="test-cohort"),
        ],
        running=[kw("secondary-usage", CQ2, 2, node="one")],
        waiting=[kw("wl", CQ, 2)],
        admitted={"wl"},
        flavors={"wl": "two"},
    ),
    f_case(
        "cannot preempt in cohort (oracle returns None) for the first flavor, tries the second flavor (which fits); using deprecated WhenCanBorrow=MayStopSearch,WhenCanPreempt=MayStopSearch",
        nodes_of("one", "two"),
        [
            kq(
                CQ,
                {"one": lim(0, 2), "two": lim(0, 2)},
                cohort="test-cohort",
                reclaim=LOWER_R,
                borrow_within=bwc(),
                fungibility=search(MAY_STOP, MAY_STOP),
            ),
            kq(CQ2, {"one": lim(2), "two": lim(2)}, cohort="test-cohort"),
        ],
        running=[kw("secondary-usage", CQ2, 2, node="one")],
        waiting=[kw("wl", CQ, 2)],
        admitted={"wl"},
        flavors={"wl": "two"},
    ),
    f_case(
        "quota exhausted, but can preempt in cohort and ClusterQueue",
        nodes_of("one"),
        [
            kq(CQ, {"one": lim(10, None, 0)}, cohort="test-cohort"),
            kq(CQ2, {"one": lim(0)}, cohort="test-cohort"),
        ],
        running=[kw("usage", CQ, 2, node="one")],
        waiting=[kw("wl", CQ, 9)],
    ),
    f_case(
        "when borrowing while preemption is needed for flavor one, fair sharing enabled, reclaimWithinCohort=Never",
        nodes_of("one", "two"),
        [
            kq(
                CQ,
                {"one": lim(0), "two": lim(12)},
                cohort="test-cohort",
                fungibility=search(MAY_STOP, MAY_STOP),
            ),
            kq(CQ2, {"one": lim(12)}, cohort="test-cohort"),
        ],
        running=[kw("secondary-usage", CQ2, 10, node="one")],
        waiting=[kw("wl", CQ, 12)],
        admitted={"wl"},
        flavors={"wl": "two"},
        fair_sharing=True,
    ),
    f_case(
        "when borrowing while preemption is needed for flavor one, fair sharing enabled, reclaimWithinCohort=Never; using deprecated WhenCanBorrow=MayStopSearch,WhenCanPreempt=MayStopSearch",
        nodes_of("one", "two"),
        [
            kq(
                CQ,
                {"one": lim(0), "two": lim(12)},
                cohort="test-cohort",
                fungibility=search(MAY_STOP, MAY_STOP),
            ),
            kq(CQ2, {"one": lim(12)}, cohort="test-cohort"),
        ],
        running=[kw("secondary-usage", CQ2, 10, node="one")],
        waiting=[kw("wl", CQ, 12)],
        admitted={"wl"},
        flavors={"wl": "two"},
        fair_sharing=True,
    ),
    # TestHierarchical: the cohorts three (4 of flavor three), two (4 of two; parent three) and
    # one (4 of one; parent two); the queue under one, with 0 of each flavor, and another under
    # two, with 0 of each too.
    f_case(
        "Select the top flavor",
        nodes_of("one", "two", "three"),
        [
            kq(
                CQ,
                {"one": lim(0), "two": lim(0), "three": lim(0)},
                cohort="one",
                within=LOWER,
                reclaim=LOWER_R,
            ),
            kq("other-clusterqueue", {"one": lim(0), "two": lim(0), "three": lim(0)}, cohort="two"),
        ],
        cohorts=[
            C("three", None, {"three": lim(4)}),
            C("two", "three", {"two": lim(4)}),
            C("one", "two", {"one": lim(4)}),
        ],
        running=[
            kw("usage", CQ, 4, node="one"),
            kw("other-usage", "other-clusterqueue", 4, node="two"),
        ],
        waiting=[kw("wl", CQ, 4)],
        admitted={"wl"},
        flavors={"wl": "three"},
    ),
    f_case(
        "Select the first flavor which fits",
        nodes_of("one", "two", "three"),
        [
            kq(
                CQ,
                {"one": lim(0), "two": lim(0), "three": lim(0)},
                cohort="one",
                within=LOWER,
                reclaim=LOWER_R,
            ),
            kq("other-clusterqueue", {"one": lim(0), "two": lim(0), "three": lim(0)}, cohort="two"),
        ],
        cohorts=[
            C("three", None, {"three": lim(4)}),
            C("two", "three", {"two": lim(4)}),
            C("one", "two", {"one": lim(4)}),
        ],
        running=[
            kw("usage", CQ, 4, node="one"),
        ],
        waiting=[kw("wl", CQ, 4)],
        admitted={"wl"},
        flavors={"wl": "two"},
    ),
    # The testCq's own flavorFungibility is the case's (TryNextFlavor for both, with the
    # preference); the stub's NoCandidates for flavor one is what a cycle finds: its usage is of
    # the workload's own priority.
    f_case(
        "Select deeper-borrowing flavor that fits when shallower-borrowing flavor has no "
        "preemption candidates",
        nodes_of("one", "two", "three"),
        [
            kq(
                CQ,
                {"one": lim(4, 0), "two": lim(0), "three": lim(0)},
                cohort="one",
                within=LOWER,
                reclaim=LOWER_R,
                fungibility=POB,
            ),
            kq("other-clusterqueue", {"one": lim(0), "two": lim(0), "three": lim(0)}, cohort="two"),
        ],
        cohorts=[
            C("three", None, {"three": lim(4)}),
            C("two", "three", {"two": lim(4)}),
            C("one", "two", {"one": lim(4)}),
        ],
        running=[kw("usage", CQ, 4, node="one")],
        waiting=[kw("wl", CQ, 4)],
        admitted={"wl"},
        flavors={"wl": "two"},
    ),
    # Two pod sets; fitting-podset's node selector (type: one) is left out: it picks the flavor
    # the queue's order picks anyway, and the other pod set never fits.
    f_case(
        "multi-podset, one fits and another fails, fitting podset attempts skipped in "
        "resolveNoFitReason",
        nodes_of("one", "two"),
        [kq(CQ, {"one": lim(2), "two": lim(2)})],
        waiting=[kw("wl", CQ, 1, pod_sets=(PodSet("blocking-podset", 1, 5, 0, 0),))],
    ),
]

KUEUE_CASES: list[Scenario] = [*S_CASES, *P_CASES, *PH_CASES, *PF_CASES, *F_CASES]
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
