"""Start-time accuracy on a real trace: the Philly GPU trace replayed in simulated time.

Every trace job is submitted at its submit time to a simulated cluster (the engine of
`adapters.simulated.engine`, the same admission rules budcluster runs) and runs for its real run
time. At each submission, before the job is admitted, its start is estimated the way budcluster
does it, `estimate()` on a snapshot of the cluster as it is at that moment plus the new job, and
the same way by two baselines. The simulated cluster then says when the job actually started.
The report gives, per estimator, the P50 and P95 absolute error (minutes) between the estimate
at submission and the actual start, and the share of jobs that started within ten minutes of it.

The cluster: N nodes x G GPUs of one type (`nvidia-v100`), one ResourceFlavor (plus
`default-cpu`), one ClusterQueue `default` (BestEffortFIFO, nominal quota = every GPU, no
cohort) and one LocalQueue per tenant. Every job has the same priority (NORMAL), so there is
no preemption. By default the cluster runs the trace as a real one would: each pod takes
`--startup-seconds` (60) from admission to running, and a job's failed attempts are replayed
(`--attempts replay`: each fails after its recorded run time and is retried after the
service's backoff, behind what queued meanwhile); `--attempts one --startup-seconds 0` runs each
job once, for its total run time, at once when admitted. The trace has no user
field, so one tenant by default (`--tenants K` spreads jobs over K tenants by a hash of the job
id, which only thins the history). A job wider than one node runs as a pod set (`--wide pods`,
the default): the fewest pods of equal size, at most a node's GPUs each, that make up its GPUs
(16 on 8-GPU nodes: 2 pods of 8; 12: 2 of 6), admitted all or nothing on as many nodes.
`--wide cap` runs it on one node's GPUs instead (what the replay did before pod sets), `--wide
skip` leaves it out; the counts are printed.

Estimators, all asked at the same submission moments about the same cluster state. The
estimator never sees the run time it estimates: what it learns (`domain.scheduling.durations`,
as the service does) comes from the runs that finished before the submission. User estimates
follow one of two models (`--user-estimates`, both by default, each reported):
- `lognormal`: the run time x lognormal(0, sigma): unbiased in the median, noisy.
- `limits`: users give limits, as published analyses of HPC logs describe them (Mu'alem and
  Feitelson 2001; Tsafrir, Etsion and Feitelson 2005: mostly over-estimates, a few popular
  values): the run time x lognormal(ln 4, 1.0) rounded up to 1, 2, 4, 8, 12, 24, 48, 72 hours,
  1, 2 weeks, 30 days (about 8 % of them below the run time).
Per model:
- budcluster, user estimate as given: `estimated_duration` = the user's estimate, nothing
  learned (a running job past it runs on for a quarter of its age).
- budcluster, user estimate x learned ratio: the estimate times the median actual / estimated of
  comparable finished runs (tenant and name, then tenant, then cluster, with shrinkage).
- Slurm-style (lognormal only; a requested limit already is one): every job's time limit is
  the user estimate x 3 rounded up to the whole hour, and the start is the same admission replay
  with durations = the limits, i.e. every running job is assumed to run to its limit.
And once:
- budcluster, no estimate: `estimated_duration` None: the mean run time of comparable finished
  runs (same chain), else the TRAINING default (1 hour). Names carry
  what a user would reuse: `--names size` (default) names a job by the GPUs it asked for
  (`philly-8gpu`); `--names unique` gives every job its own name, so only the tenant's and the
  cluster's runs apply.
- oracle: budcluster with the exact run times. What is left is the error no duration estimate
  can remove: jobs submitted later that take GPUs first (BestEffortFIFO lets a small job pass a
  wide one waiting for a whole node).
- queue position / admission rate: wait = jobs waiting ahead at submission / admissions per
  minute over the last `--rate-window-hours` (6); no job ahead means "starts now"; with no
  admission in the window the rate is taken as one per window.

The simulated cluster never reads an estimate (admission depends on GPUs, not durations), so
the actual starts are the same for every estimator: one replay serves them all.
Convergence (`--converge`, on by default): a first pass of the cluster alone finds each job's
actual start; the replay then also asks budcluster (x learned ratio, per model) and the oracle
again 24 h, 6 h, 1 h and 10 min before each actual start, while the job still waits, and
prints the error of those estimates (P50 / P95), how often the 80 % window shown then held the
start, and the same jobs' error at submission.
A job the estimator gives no start within its 60-day horizon (`none`) is counted as if the
estimate were the horizon's end, a lower bound on its error. `--profile` prints where the time
goes.

    .venv/bin/python -m benchmarks.replay --trace ../shared/data/philly-2017-sep-oct.json \
        --nodes 50 --gpus-per-node 8 [--user-estimates lognormal,limits] [--noise-sigma 0.5]
        [--seed 1] [--limit N]
"""

from __future__ import annotations

import argparse
import bisect
import cProfile
import csv
import heapq
import json
import math
import pstats
import random
import statistics
import time
import uuid
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from adapters.simulated.engine import FINISHED, Pace, SimWorkload, step
from domain.backoff import backoff_seconds
from domain.model.cluster import Node, NodeType
from domain.model.ids import ClusterId, JobId, NodeId, ProjectId, TenantId
from domain.model.job import (
    DeploymentType,
    Job,
    JobPriority,
    JobStatus,
    JobType,
    Resources,
    RunRecord,
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
    QueueingStrategy,
    QuotaSet,
    ResourceFlavor,
    ResourceGroup,
    ResourceQuota,
    tenant_namespace,
)
from domain.ports.gateways import WorkloadPhase
from domain.scheduling.accuracy import WITHIN, percentile
from domain.scheduling.durations import DEFAULT_SECONDS, Durations, History
from domain.scheduling.estimator import HORIZON, Snapshot, estimate
from domain.scheduling.windows import (
    RECENT,
    Calibration,
    Window,
    late_grace,
    past_waits_window,
    startup_spread,
)
from domain.scheduling.windows import Outcome as WindowOutcome

GPU_TYPE = "nvidia-v100"
CLUSTER = ClusterId(uuid.uuid5(uuid.NAMESPACE_DNS, "replay.budcluster"))
PROJECT = ProjectId(uuid.uuid5(CLUSTER, "project"))
QUEUE = "default"
COHORT = "shared"
NODE_CPU = 64.0
NODE_MEMORY = 512.0
JOB_CPU = 1.0
JOB_MEMORY = 4.0
MAX_RETRIES = 4
"""Every job's retry policy: the trace's jobs ran at most 5 attempts."""

LOGNORMAL = "lognormal"
LIMITS = "limits"
MODELS = (LOGNORMAL, LIMITS)
COMMON_LIMIT_HOURS = (1, 2, 4, 8, 12, 24, 48, 72, 168, 336, 720)
"""The few values users' requested limits are rounded up to (beyond 30 days: whole 30 days)."""
OVERSTATE = 4.0
OVERSTATE_SIGMA = 1.0
"""Requested limit = run time x lognormal(ln 4, 1.0), rounded up: a median over-statement of 4x
before rounding, and about 8 % of requests below the run time."""

HISTORY = "budcluster, no estimate -> history"
ORACLE = "oracle (exact run times)"
QUEUE_RATE = "queue position / rate"
PAST_WAITS = "past waits' quantiles (QBETS-style)"
CONFIDENCES = (0.5, 0.8, 0.95)
LEADS = (timedelta(hours=24), timedelta(hours=6), timedelta(hours=1), timedelta(minutes=10))
"""How long before each job's actual start its estimate is asked again (`--converge`): the
moments a user checks back (the day before, the morning of, the hour before)."""


@dataclass(frozen=True)
class Probe:
    """An estimate asked at `at`, `lead` before job `job`'s actual start, while it waits."""

    at: datetime
    job: int
    lead: int
    """Index in `LEADS`."""


@dataclass(frozen=True)
class Probed:
    """What a probe found: the error of the start estimated then (minutes), and whether the
    80 % window shown then held the actual start (None: no window, for want of record)."""

    job: int
    error: float
    covered: bool | None


def as_given(model: str) -> str:
    return f"budcluster, user estimate ({model}) as given"


def corrected(model: str) -> str:
    return f"budcluster, user estimate ({model}) x learned ratio"


def slurm(model: str) -> str:
    return f"Slurm-style limits ({model})"


@dataclass(frozen=True)
class Estimator:
    """One way of estimating, replayed with `estimate()` at every submission."""

    name: str
    duration: Callable[[TraceJob], int | None]
    """The job's `estimated_duration_seconds` as this estimator sees it."""
    learns: str | None
    """The user-estimate model whose history (actual / estimated, run times) it learns from;
    None: it learns nothing (`Durations()`)."""


def estimators(models: tuple[str, ...]) -> list[Estimator]:
    found: list[Estimator] = []
    for model in models:
        users = _users_estimate(model)
        found.append(Estimator(as_given(model), users, None))
        found.append(Estimator(corrected(model), users, model))
        if model == LOGNORMAL:  # a requested limit is already a Slurm-style limit
            found.append(Estimator(slurm(model), lambda tj: tj.limit, None))
    found.append(Estimator(HISTORY, lambda tj: None, models[0]))
    found.append(Estimator(ORACLE, lambda tj: tj.runs[-1], None))
    return found


def _users_estimate(model: str) -> Callable[[TraceJob], int | None]:
    return lambda tj: tj.estimates[model]


def requested_limit(seconds: float) -> int:
    """Round a wish up to the next common limit, as users' time limits are."""
    hours = seconds / 3600
    for common in COMMON_LIMIT_HOURS:
        if hours <= common:
            return common * 3600
    return math.ceil(hours / COMMON_LIMIT_HOURS[-1]) * COMMON_LIMIT_HOURS[-1] * 3600


# --- the trace ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class TraceJob:
    index: int
    trace_id: str
    submitted: datetime
    asked_gpus: int
    gpus: int
    """GPUs per pod."""
    runtime: int
    """Real run time, seconds (the trace's minutes, which come from second-resolution times)."""
    estimates: dict[str, int]
    """Seconds, per user-estimate model: `lognormal`, the run time x lognormal(0, sigma) noise;
    `limits`, a requested limit (`requested_limit` of the run time x the over-statement)."""
    limit: int
    """Seconds: the lognormal estimate x 3, rounded up to the whole hour (a Slurm time limit)."""
    name: str
    tenant: TenantId
    attempts: tuple[int, ...] = ()
    """Seconds each attempt ran, the last one succeeding (the trace's attempts); () = one run
    of `runtime`."""
    pods: int = 1

    @property
    def total_gpus(self) -> int:
        return self.gpus * self.pods

    @property
    def runs(self) -> tuple[int, ...]:
        return self.attempts or (self.runtime,)


def retry_delay(attempt: int, job: int) -> float:
    """The service's retry backoff (`domain.backoff`), its jitter drawn per job and attempt."""
    jitter = random.Random(job * 31 + attempt)
    return backoff_seconds(attempt, uniform=jitter.uniform)


def attempt_seconds(row: dict[str, Any]) -> tuple[int, ...]:
    """The trace's attempts of a job, in seconds; () when it ran once or they cannot be read."""
    found = []
    for attempt in row.get("attempts") or ():
        try:
            began = datetime.strptime(attempt["start_time"], "%Y-%m-%d %H:%M:%S")
            ended = datetime.strptime(attempt["end_time"], "%Y-%m-%d %H:%M:%S")
        except (KeyError, TypeError, ValueError):
            return ()
        found.append(max(1, round((ended - began).total_seconds())))
    return tuple(found) if len(found) > 1 else ()


@dataclass
class Trace:
    jobs: list[TraceJob]
    read: int
    capped: int = 0
    skipped: int = 0
    pod_sets: int = 0
    gpu_hours_asked: float = 0.0
    gpu_hours_run: float = 0.0


def tenant_ids(count: int) -> list[TenantId]:
    return [TenantId(uuid.uuid5(CLUSTER, f"tenant-{i}")) for i in range(count)]


def load_trace(
    path: str,
    *,
    limit: int | None,
    gpus_per_node: int,
    wide: str,
    sigma: float,
    seed: int,
    names: str,
    tenants: int,
    attempts: bool = True,
) -> Trace:
    with open(path) as f:
        raw = json.load(f)
    raw.sort(key=lambda r: r["submitted_time"])  # stable: the file's order breaks ties
    if limit is not None:
        raw = raw[:limit]
    rng = random.Random(seed)
    overstate = random.Random(seed * 7919 + 1)  # its own stream: the lognormal draws stay put
    who = tenant_ids(tenants)
    trace = Trace([], len(raw))
    for row in raw:
        noise = rng.lognormvariate(0.0, sigma)  # drawn for every row: --wide does not reshuffle
        factor = overstate.lognormvariate(math.log(OVERSTATE), OVERSTATE_SIGMA)
        asked = int(row["num_gpus"])
        runs = attempt_seconds(row) if attempts else ()
        runtime = sum(runs) if runs else max(1, round(float(row["runtime"]) * 60))
        trace.gpu_hours_asked += asked * runtime / 3600
        gpus, pods = asked, 1
        if asked > gpus_per_node:
            if wide == "skip":
                trace.skipped += 1
                continue
            if wide == "cap":
                trace.capped += 1
                gpus = gpus_per_node
            else:
                trace.pod_sets += 1
                pods = pod_shape(asked, gpus_per_node)
                gpus = asked // pods
        trace.gpu_hours_run += gpus * pods * runtime / 3600
        succeeded = runs[-1] if runs else runtime  # what a user estimates: a run that succeeds
        user_estimate = max(1, round(succeeded * noise))
        trace_id = str(row["id"])
        trace.jobs.append(
            TraceJob(
                index=len(trace.jobs),
                trace_id=trace_id,
                submitted=datetime.strptime(row["submitted_time"], "%Y-%m-%d %H:%M:%S").replace(
                    tzinfo=UTC
                ),
                asked_gpus=asked,
                gpus=gpus,
                runtime=runtime,
                estimates={
                    LOGNORMAL: user_estimate,
                    LIMITS: requested_limit(succeeded * factor),
                },
                limit=math.ceil(user_estimate * 3 / 3600) * 3600,
                name=f"philly-{asked}gpu" if names == "size" else f"philly-{trace_id}",
                tenant=who[zlib.crc32(trace_id.encode()) % len(who)],
                attempts=runs,
                pods=pods,
            )
        )
    return trace


def pod_shape(gpus: int, per_node: int) -> int:
    """The fewest pods of equal size, each at most `per_node` GPUs, that make up `gpus`."""
    return next(p for p in range(1, gpus + 1) if gpus % p == 0 and gpus // p <= per_node)


# --- the cluster --------------------------------------------------------------------------------


def make_nodes(count: int, gpus: int) -> list[Node]:
    return [
        Node(
            NodeId(uuid.uuid5(CLUSTER, f"node-{i:03d}")),
            CLUSTER,
            f"node-{i:03d}",
            NodeType.GPU,
            GPU_TYPE,
            gpus,
            NODE_CPU,
            NODE_MEMORY,
            labels={GPU_LABEL: GPU_TYPE},
        )
        for i in range(count)
    ]


def make_quotas(
    nodes: list[Node], tenants: list[TenantId], at: datetime, queues: int = 1
) -> QuotaSet:
    """One ClusterQueue with all the capacity; or, with `queues` > 1, that many in one cohort,
    the capacity split evenly as their nominal quotas (each may borrow what the others leave
    unused; Kueue's default policies: nothing is reclaimed), tenant i's LocalQueue pointing at
    queue i mod `queues`."""
    flavors = (
        ResourceFlavor(CLUSTER, GPU_TYPE, {GPU_LABEL: GPU_TYPE}, at, at),
        ResourceFlavor(CLUSTER, "default-cpu", {}, at, at),
    )
    gpus = sum(n.gpu_count for n in nodes)
    cpu = sum(n.cpu_cores for n in nodes)
    memory = sum(n.memory_gb for n in nodes)

    def share(total: float, i: int) -> float:
        whole = int(total) // queues
        return whole + (1 if i < int(total) - whole * queues else 0)

    names = [QUEUE] if queues == 1 else [f"cq-{i}" for i in range(queues)]
    cluster_queues = tuple(
        ClusterQueue(
            CLUSTER,
            name,
            at,
            at,
            cohort=None if queues == 1 else COHORT,
            queueing_strategy=QueueingStrategy.BEST_EFFORT_FIFO,
            resource_groups=(
                ResourceGroup(
                    (NVIDIA_GPU,),
                    (FlavorQuotas(GPU_TYPE, (ResourceQuota(NVIDIA_GPU, share(gpus, i)),)),),
                ),
                ResourceGroup(
                    (CPU, MEMORY),
                    (
                        FlavorQuotas(
                            "default-cpu",
                            (
                                ResourceQuota(CPU, share(cpu, i)),
                                ResourceQuota(MEMORY, share(memory, i)),
                            ),
                        ),
                    ),
                ),
            ),
        )
        for i, name in enumerate(names)
    )
    local = tuple(
        LocalQueue(CLUSTER, QUEUE, tenant_namespace(t), t, names[i % len(names)], at)
        for i, t in enumerate(tenants)
    )
    cohorts = () if queues == 1 else (Cohort(CLUSTER, COHORT, at),)
    return QuotaSet(flavors, cluster_queues, local, cohorts)


def make_job(tj: TraceJob, estimated: int | None) -> Job:
    return Job(
        id=JobId(uuid.UUID(int=tj.index + 1)),  # str(id) sorts like the index: FIFO ties agree
        name=tj.name,
        tenant_id=tj.tenant,
        project_id=PROJECT,
        cluster_id=CLUSTER,
        job_type=JobType.TRAINING,
        deployment_type=DeploymentType.DOCKER,
        created_at=tj.submitted,
        updated_at=tj.submitted,
        resources=Resources(GPU_TYPE, tj.gpus, JOB_CPU, JOB_MEMORY, pod_count=tj.pods),
        estimated_duration_seconds=estimated,
        priority=JobPriority.NORMAL,
        status=JobStatus.QUEUED,
        queue_name=QUEUE,
        max_retries=MAX_RETRIES,
    )


def make_workload(
    tj: TraceJob, job: Job, quotas: QuotaSet, attempt: int = 0, at: datetime | None = None
) -> SimWorkload:
    last = attempt == len(tj.runs) - 1
    return SimWorkload(
        name=f"{job.id}/a{attempt}",
        job_id=str(job.id),
        attempt=attempt,
        priority=quotas.priority_value(job.priority),
        gpu_type=GPU_TYPE,
        gpu_count=tj.gpus,
        pod_count=tj.pods,
        cpu_cores=JOB_CPU,
        memory_gb=JOB_MEMORY,
        runtime_seconds=float(tj.runs[attempt]),
        max_duration_seconds=None,
        outcome=WorkloadPhase.SUCCEEDED if last else WorkloadPhase.FAILED,
        created_at=at or tj.submitted,
        namespace=tenant_namespace(tj.tenant),
        queue_name=QUEUE,
    )


# --- the replay ---------------------------------------------------------------------------------


@dataclass
class Outcome:
    names: list[str]
    """The estimators, in the order they are reported."""
    estimated: dict[str, list[datetime | None]]
    """Per estimator, per job (trace order): the start estimated at submission."""
    failed: dict[str, set[int]]
    """Per estimator, the jobs whose estimate at submission raised (no estimate)."""
    started: list[datetime]
    ended: list[datetime]
    estimate_seconds: dict[str, float]
    """Wall time spent in `estimate()` per estimator."""
    engine_seconds: float
    steps: int
    max_waiting: int
    history_runs: int
    """Finished runs the estimators could learn from at the last submission."""
    history_used: int
    """Submissions whose no-estimate duration came from history (else the type's default)."""
    failures: int
    """Attempts that failed (and were retried)."""
    windows: dict[str, dict[float, list[Window | None]]] = field(default_factory=dict)
    """Per estimator (and the past-waits baseline), per confidence, per job: the start window
    shown at submission (None: not enough record yet)."""
    probed: dict[str, list[list[Probed]]] = field(default_factory=dict)
    """Per probed estimator, per lead (`LEADS`): the jobs still waiting then, and the error of
    their estimate at that moment."""


@dataclass
class _State:
    """The simulated cluster as the replay sees it, and the estimators' views of its jobs."""

    trace: list[TraceJob]
    nodes: list[Node]
    quotas: QuotaSet
    live: list[SimWorkload] = field(default_factory=list)
    index_of: dict[str, int] = field(default_factory=dict)
    active: dict[int, None] = field(default_factory=dict)
    """Submitted jobs that have not finished, in submission order."""
    views: dict[str, dict[int, Job]] = field(default_factory=dict)
    started: dict[int, datetime] = field(default_factory=dict)
    ended: dict[int, datetime] = field(default_factory=dict)
    admissions: list[datetime] = field(default_factory=list)
    seen_started: set[str] = field(default_factory=set)
    start_order: list[int] = field(default_factory=list)
    """Jobs in the order they started (the order their outcome became known)."""
    finished: list[tuple[int, float]] = field(default_factory=list)
    """(job, seconds it ran) of every finished job, in the order they ended."""
    failed_runs: list[tuple[int, float]] = field(default_factory=list)
    """(job, seconds it ran) of every attempt that failed, in the order they failed."""
    pace: Pace = field(default_factory=Pace)
    retries: list[tuple[datetime, int, int]] = field(default_factory=list)
    """(due, job, attempt): failed attempts' next ones, released after the retry backoff."""
    startups: list[float] = field(default_factory=list)
    """Seconds from admission to running of every attempt that started."""
    failures: int = 0
    due: datetime | None = None
    steps: int = 0
    engine_seconds: float = 0.0

    def step(self, now: datetime) -> None:
        while self.retries and self.retries[0][0] <= now:
            at, i, attempt = heapq.heappop(self.retries)
            view = next(iter(self.views.values()))
            self.live.append(make_workload(self.trace[i], view[i], self.quotas, attempt, at))
        began = time.perf_counter()
        self.due = step(self.live, self.nodes, self.quotas, now, self.pace)
        self.engine_seconds += time.perf_counter() - began
        self.steps += 1
        for w in self.live:
            i = self.index_of[w.job_id]
            if w.started_at is not None and w.name not in self.seen_started:
                assert w.placements and w.admitted_at is not None
                self.seen_started.add(w.name)
                if i not in self.started:  # the first attempt's start is the one scored
                    self.started[i] = w.started_at
                    self.start_order.append(i)
                self.admissions.append(w.started_at)
                self.startups.append((w.started_at - w.admitted_at).total_seconds())
                for view in self.views.values():
                    job = view[i]
                    job.status = JobStatus.RUNNING
                    job.placements = w.placements
                    job.actual_start = w.started_at
                    job.next_attempt_at = None
            if w.phase in FINISHED:
                assert w.finished_at is not None and w.started_at is not None
                if w.phase is WorkloadPhase.FAILED:  # retried after the job's backoff
                    self.failures += 1
                    self.failed_runs.append((i, (w.finished_at - w.started_at).total_seconds()))
                    due = w.finished_at + timedelta(seconds=retry_delay(w.attempt + 1, i))
                    heapq.heappush(self.retries, (due, i, w.attempt + 1))
                    for view in self.views.values():
                        job = view[i]
                        job.status = JobStatus.QUEUED
                        job.placements = ()
                        job.actual_start = None
                        job.attempt = w.attempt + 1
                        job.next_attempt_at = due
                    continue
                assert w.phase is WorkloadPhase.SUCCEEDED
                self.ended[i] = w.finished_at
                del self.active[i]
                self.finished.append((i, (w.finished_at - w.started_at).total_seconds()))
        self.live = [w for w in self.live if w.phase not in FINISHED]
        if self.retries and (self.due is None or self.retries[0][0] < self.due):
            self.due = self.retries[0][0]

    def startup(self) -> dict[JobType, float]:
        """What the service learns: the median start-up of the attempts that started."""
        return {JobType.TRAINING: statistics.median(self.startups)} if self.startups else {}

    def waiting(self) -> int:
        return sum(1 for w in self.live if w.phase is WorkloadPhase.QUEUED)

    def history(self, model: str) -> History:
        """What the service would learn from now: every finished run, with the user's
        estimate under `model`, and every attempt that failed. Never the job being estimated,
        nor any run still going."""
        runs = [
            RunRecord(
                self.trace[i].tenant,
                self.trace[i].name,
                JobType.TRAINING,
                GPU_TYPE,
                self.trace[i].total_gpus,
                seconds,
                float(self.trace[i].estimates[model]),
            )
            for i, seconds in self.finished
        ]
        runs += [
            RunRecord(
                self.trace[i].tenant,
                self.trace[i].name,
                JobType.TRAINING,
                GPU_TYPE,
                self.trace[i].total_gpus,
                seconds,
                failed=True,
            )
            for i, seconds in self.failed_runs
        ]
        return History(runs)


def actual_starts(
    trace: list[TraceJob], nodes: list[Node], startup_seconds: float = 0.0, queues: int = 1
) -> list[datetime]:
    """The simulated cluster alone, no estimate asked: each job's actual (first) start. The
    cluster never reads an estimate, so `replay` finds the same starts (it checks)."""
    quotas = make_quotas(nodes, sorted({tj.tenant for tj in trace}), trace[0].submitted, queues)
    state = _State(trace, nodes, quotas, views={"": {}})
    state.pace = Pace(time_scale=1.0, startup_seconds=startup_seconds)
    for tj in trace:
        while state.due is not None and state.due <= tj.submitted:
            state.step(state.due)
        job = state.views[""][tj.index] = make_job(tj, None)
        state.index_of[str(job.id)] = tj.index
        state.active[tj.index] = None
        state.live.append(make_workload(tj, job, quotas))
        state.step(tj.submitted)
    while state.due is not None:
        state.step(state.due)
    return [state.started[tj.index] for tj in trace]


def probes_for(trace: list[TraceJob], started: list[datetime]) -> list[Probe]:
    """Every moment `LEADS` before a job's actual start at which it was already waiting (after
    its submission), in time order."""
    found = [
        Probe(started[tj.index] - lead, tj.index, k)
        for tj in trace
        for k, lead in enumerate(LEADS)
        if started[tj.index] - lead > tj.submitted
    ]
    return sorted(found, key=lambda p: (p.at, p.job, p.lead))


def replay(
    trace: list[TraceJob],
    nodes: list[Node],
    rate_window: timedelta,
    models: tuple[str, ...] = MODELS,
    startup_seconds: float = 0.0,
    queues: int = 1,
    probes: list[Probe] | None = None,
    probing: tuple[str, ...] = (),
) -> Outcome:
    """Estimate every job at its submission with every estimator; with `probes` (from
    `probes_for` on `actual_starts`), estimate again with each of `probing` at each probe's
    moment, for the job it names."""
    quotas = make_quotas(nodes, sorted({tj.tenant for tj in trace}), trace[0].submitted, queues)
    replayed = estimators(models)
    names = [*(e.name for e in replayed), QUEUE_RATE]
    state = _State(trace, nodes, quotas, views={e.name: {} for e in replayed})
    state.pace = Pace(time_scale=1.0, startup_seconds=startup_seconds)
    by_name = {e.name: e for e in replayed}
    asked: dict[str, list[tuple[Probe, datetime | None, Window | None]]] = {
        name: [] for name in probing
    }
    queued_probes = list(probes or ())
    next_probe = 0
    estimated: dict[str, list[datetime | None]] = {name: [] for name in names}
    spent = {e.name: 0.0 for e in replayed}
    failed: dict[str, set[int]] = {name: set() for name in names}
    window_minutes = rate_window.total_seconds() / 60
    max_waiting = 0
    history_used = 0
    first = replayed[0].name
    windowed = [e.name for e in replayed if e.name != ORACLE]
    windows: dict[str, dict[float, list[Window | None]]] = {
        name: {c: [] for c in CONFIDENCES} for name in [*windowed, PAST_WAITS]
    }

    def record_of(name: str, now: datetime, floor: timedelta) -> list[WindowOutcome]:
        """What the service calibrates `name`'s windows on at `now`: the latest jobs that
        started, and those still waiting past the start estimated for them by more than
        `late_grace` (censored)."""
        known = [
            WindowOutcome(
                trace[j].submitted,
                estimated[name][j] or trace[j].submitted + HORIZON,
                state.started[j],
                wide=trace[j].pods > 1,
            )
            for j in state.start_order[-2 * RECENT :]
        ]
        grace = late_grace(floor)
        late = [
            WindowOutcome(trace[j].submitted, est, now, wide=trace[j].pods > 1, censored=True)
            for j in state.active
            if j not in state.started
            and j < len(estimated[name])
            and (est := estimated[name][j]) is not None
            and est < now - grace
        ]
        return known + late

    def probe_until(limit: datetime | None) -> None:
        """Ask the probes due before `limit` (None: all that are left)."""
        nonlocal next_probe
        while next_probe < len(queued_probes) and (
            limit is None or queued_probes[next_probe].at < limit
        ):
            probe = queued_probes[next_probe]
            next_probe += 1
            while state.due is not None and state.due <= probe.at:
                state.step(state.due)
            if probe.job in state.started:  # (the first pass says it has not started yet)
                continue
            startup = state.startup()
            for name in probing:
                e = by_name[name]
                view = state.views[name]
                durations = (
                    Durations(state.history(e.learns), startup=startup)
                    if e.learns is not None
                    else Durations(startup=startup)
                )
                jobs = [view[i] for i in state.active]
                schedule = estimate(Snapshot(probe.at, nodes, quotas, jobs, durations))
                point = schedule.jobs[view[probe.job].id].start
                floor = startup_spread(state.startups)
                window = Calibration(record_of(name, probe.at, floor), floor).window(
                    probe.at, point or probe.at + HORIZON, 0.8, wide=trace[probe.job].pods > 1
                )
                asked[name].append((probe, point, window))

    for tj in trace:
        now = tj.submitted
        probe_until(now)
        while state.due is not None and state.due <= now:
            state.step(state.due)
        # the estimate at submission: the cluster as it is now, plus the new job
        ahead = state.waiting()
        max_waiting = max(max_waiting, ahead + 1)
        startup = state.startup()
        learned = {m: Durations(state.history(m), startup=startup) for m in models}
        for e in replayed:
            view = state.views[e.name]
            view[tj.index] = make_job(tj, e.duration(tj))
            jobs = [view[i] for i in state.active]
            jobs.append(view[tj.index])
            durations = learned[e.learns] if e.learns is not None else Durations(startup=startup)
            began = time.perf_counter()
            schedule = estimate(Snapshot(now, nodes, quotas, jobs, durations))
            estimated[e.name].append(schedule.jobs[view[tj.index].id].start)
            spent[e.name] += time.perf_counter() - began
            if e.name == HISTORY and durations.source(view[tj.index]) == "history":
                history_used += 1
        known = state.start_order[-2 * RECENT :]
        for name in windowed:
            floor = startup_spread(state.startups)
            calibration = Calibration(record_of(name, now, floor), floor)
            point = estimated[name][tj.index] or now + HORIZON
            for confidence in CONFIDENCES:
                windows[name][confidence].append(
                    calibration.window(now, point, confidence, wide=tj.pods > 1)
                )
        record = [
            WindowOutcome(trace[j].submitted, trace[j].submitted, state.started[j]) for j in known
        ]
        for confidence in CONFIDENCES:
            windows[PAST_WAITS][confidence].append(past_waits_window(now, record, confidence))
        recent = len(state.admissions) - bisect.bisect_right(state.admissions, now - rate_window)
        rate = max(recent, 1) / window_minutes  # admissions per minute
        estimated[QUEUE_RATE].append(now + timedelta(minutes=ahead / rate))
        # then the simulated cluster takes the job
        state.index_of[str(state.views[first][tj.index].id)] = tj.index
        state.active[tj.index] = None
        state.live.append(make_workload(tj, state.views[first][tj.index], quotas))
        state.step(now)
    probe_until(None)
    while state.due is not None:
        state.step(state.due)
    missing = [tj.trace_id for tj in trace if tj.index not in state.ended]
    assert not missing, f"never finished: {missing[:5]}"
    started = [state.started[tj.index] for tj in trace]
    probed: dict[str, list[list[Probed]]] = {name: [[] for _ in LEADS] for name in probing}
    for name, found in asked.items():
        for probe, asked_start, shown in found:
            actual = started[probe.job]
            error = abs((actual - (asked_start or probe.at + HORIZON)).total_seconds()) / 60
            covered = (
                None
                if shown is None
                else shown.earliest <= actual and (shown.latest is None or actual <= shown.latest)
            )
            probed[name][probe.lead].append(Probed(probe.job, error, covered))
    return Outcome(
        names,
        estimated,
        failed,
        started,
        [state.ended[tj.index] for tj in trace],
        spent,
        state.engine_seconds,
        state.steps,
        max_waiting,
        len(state.finished),
        history_used,
        state.failures,
        windows,
        probed,
    )


# --- the report ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Figures:
    jobs: int
    none: int
    failed: int
    p50: float | None
    p95: float | None
    within: float | None
    bias: float | None
    """Median of (actual - estimated) start, minutes: > 0 means the estimate was early."""


def figures(
    estimates: list[datetime | None],
    started: list[datetime],
    submitted: list[datetime],
    chosen: list[int],
    failed: set[int],
) -> Figures:
    """Errors of the jobs in `chosen`. A job with no start within the horizon counts as if its
    estimate were the horizon's end (a lower bound on its error); a failed estimate not at all."""
    errors: list[float] = []
    signed: list[float] = []
    none = crashed = 0
    for i in chosen:
        est = estimates[i]
        if i in failed:
            crashed += 1
            continue
        if est is None:
            none += 1
            est = submitted[i] + HORIZON
        delta = (started[i] - est).total_seconds() / 60
        signed.append(delta)
        errors.append(abs(delta))
    limit = WITHIN.total_seconds() / 60
    return Figures(
        len(errors),
        none,
        crashed,
        percentile(errors, 50),
        percentile(errors, 95),
        sum(1 for e in errors if e <= limit) / len(errors) if errors else None,
        statistics.median(signed) if signed else None,
    )


def _num(value: float | None, fmt: str = ".1f") -> str:
    return "-" if value is None else format(value, fmt)


def table(
    title: str,
    outcome: Outcome,
    submitted: list[datetime],
    chosen: list[int],
    labels: dict[str, str],
) -> None:
    print(f"\n{title} ({len(chosen)} jobs)")
    width = max(len(label) for label in labels.values())
    header = (
        f"  {'estimator':<{width}} {'jobs':>5} {'none':>5} {'failed':>6} {'P50 min':>9} "
        f"{'P95 min':>10} {'<=10 min':>9} {'bias min':>9}"
    )
    print(header)
    print("  " + "-" * (len(header) - 2))
    for name in outcome.names:
        f = figures(
            outcome.estimated[name], outcome.started, submitted, chosen, outcome.failed[name]
        )
        print(
            f"  {labels[name]:<{width}} {f.jobs:>5} {f.none:>5} {f.failed:>6} {_num(f.p50):>9} "
            f"{_num(f.p95):>10} "
            f"{'-' if f.within is None else format(f.within * 100, '.1f') + '%':>9} "
            f"{_num(f.bias):>9}"
        )


def window_table(
    title: str, outcome: Outcome, started: list[datetime], chosen: list[int], labels: dict[str, str]
) -> None:
    """Coverage: the share of jobs whose actual start fell in the window shown at submission
    (jobs shown no window, for want of record, are counted apart); width: the median of the
    80 % windows (no upper bound = infinite)."""
    print(f"\n{title} ({len(chosen)} jobs): start windows at submission")
    width = max(len(labels.get(n, n)) for n in outcome.windows)
    header = (
        f"  {'estimator':<{width}} {'shown':>6} {'cov 50%':>8} {'cov 80%':>8} {'cov 95%':>8} "
        f"{'width 80% h':>12} {'narrower':>9}"
    )
    print(header)
    print("  " + "-" * (len(header) - 2))
    widths: dict[str, float] = {}
    rows: list[tuple[str, int, list[float | None], float]] = []
    for name, by_confidence in outcome.windows.items():
        covered: list[float | None] = []
        shown = 0
        for confidence in CONFIDENCES:
            hits = total = 0
            for i in chosen:
                window = by_confidence[confidence][i]
                if window is None:
                    continue
                total += 1
                hits += window.earliest <= started[i] and (
                    window.latest is None or started[i] <= window.latest
                )
            covered.append(hits / total if total else None)
            shown = total
        spans = [
            math.inf if w.latest is None else (w.latest - w.earliest).total_seconds() / 3600
            for i in chosen
            if (w := by_confidence[0.8][i]) is not None
        ]
        widths[name] = statistics.median(spans) if spans else math.nan
        rows.append((name, shown, covered, widths[name]))
    for name, shown, covered, median_width in rows:
        base = widths.get(PAST_WAITS, math.nan)
        ratio = base / median_width if median_width and math.isfinite(median_width) else math.nan
        print(
            f"  {labels.get(name, name):<{width}} {shown:>6} "
            + " ".join(f"{'-' if c is None else format(c * 100, '.1f') + '%':>8}" for c in covered)
            + f" {median_width:>12.1f} "
            + f"{'-' if name == PAST_WAITS else format(ratio, '.2f') + 'x':>9}"
        )


def converge_table(outcome: Outcome, submitted: list[datetime], labels: dict[str, str]) -> None:
    """Per probed estimator and lead: the jobs still waiting that long before their actual
    start, the error of the estimate made then (P50 / P95) and whether its 80 % window held the
    start, beside the error at submission of the same jobs."""
    for name, by_lead in outcome.probed.items():
        print(f"\nConverging: {labels.get(name, name)}, asked again before each actual start")
        header = (
            f"  {'before start':<13} {'jobs':>5} {'P50 min':>9} {'P95 min':>9} {'cov 80%':>8}"
            f"   {'at submission: P50':>18} {'P95':>9}"
        )
        print(header)
        print("  " + "-" * (len(header) - 2))
        for lead, found in zip(LEADS, by_lead, strict=True):
            jobs = [p.job for p in found]
            errors = [p.error for p in found]
            shown = [p.covered for p in found if p.covered is not None]
            first = figures(
                outcome.estimated[name], outcome.started, submitted, jobs, outcome.failed[name]
            )
            minutes = lead.total_seconds() / 60
            when = f"{minutes / 60:g} h" if minutes >= 60 else f"{minutes:g} min"
            coverage = f"{sum(shown) / len(shown) * 100:.1f}%" if shown else "-"
            print(
                f"  {when:<13} {len(found):>5} {_num(percentile(errors, 50)):>9} "
                f"{_num(percentile(errors, 95)):>9} {coverage:>8}   "
                f"{_num(first.p50):>18} {_num(first.p95):>9}"
            )


def oracle_check(trace: list[TraceJob], outcome: Outcome) -> tuple[int, int]:
    """Oracle misses, and those not explained by a later submission starting first (given exact
    run times, the estimate can only be wrong because of jobs it could not know about)."""
    misses = unexplained = 0
    started = outcome.started
    for tj in trace:
        est = outcome.estimated[ORACLE][tj.index]
        if est == started[tj.index]:
            continue
        misses += 1
        if est is not None and not any(
            started[later] < started[tj.index] for later in range(tj.index + 1, len(trace))
        ):
            unexplained += 1
    return misses, unexplained


def write_csv(path: str, trace: list[TraceJob], outcome: Outcome) -> None:
    models = sorted(trace[0].estimates) if trace else []
    with open(path, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(
            [
                "trace_id",
                "submitted",
                "asked_gpus",
                "gpus",
                "runtime_min",
                *(f"user_estimate_{m}_min" for m in models),
                "limit_min",
                "actual_start",
                *outcome.names,
            ]
        )
        for tj in trace:
            out.writerow(
                [
                    tj.trace_id,
                    tj.submitted.isoformat(),
                    tj.asked_gpus,
                    tj.total_gpus,
                    round(tj.runtime / 60, 2),
                    *(round(tj.estimates[m] / 60, 2) for m in models),
                    tj.limit // 60,
                    outcome.started[tj.index].isoformat(),
                    *(
                        "" if (e := outcome.estimated[name][tj.index]) is None else e.isoformat()
                        for name in outcome.names
                    ),
                ]
            )


def run(args: argparse.Namespace) -> None:
    began = time.perf_counter()
    trace = load_trace(
        args.trace,
        limit=args.limit,
        gpus_per_node=args.gpus_per_node,
        wide=args.wide,
        sigma=args.noise_sigma,
        seed=args.seed,
        names=args.names,
        tenants=args.tenants,
        attempts=args.attempts == "replay",
    )
    jobs = trace.jobs
    if not jobs:
        raise SystemExit("no jobs to replay")
    nodes = make_nodes(args.nodes, args.gpus_per_node)
    window = timedelta(hours=args.rate_window_hours)
    models = tuple(m.strip() for m in args.user_estimates.split(",") if m.strip())
    unknown = [m for m in models if m not in MODELS]
    if unknown or not models:
        raise SystemExit(f"--user-estimates: one or more of {', '.join(MODELS)}")
    if args.queues > 1 and args.tenants < args.queues:
        raise SystemExit("--queues K needs --tenants >= K (each queue gets tenants' work)")
    probes: list[Probe] = []
    probing: tuple[str, ...] = ()
    if args.converge:
        started = actual_starts(jobs, nodes, args.startup_seconds, args.queues)
        probes = probes_for(jobs, started)
        probing = (*(corrected(m) for m in models), ORACLE)
    outcome = replay(
        jobs, nodes, window, models, args.startup_seconds, args.queues, probes, probing
    )
    if args.converge:
        assert outcome.started == started, "the cluster read an estimate: starts differ"
    wall = time.perf_counter() - began

    first = jobs[0].submitted
    waits = [(outcome.started[tj.index] - tj.submitted).total_seconds() / 60 for tj in jobs]
    last_submit = max(tj.submitted for tj in jobs)
    span = max(outcome.ended) - first
    gpus = args.nodes * args.gpus_per_node
    busy = sum(tj.total_gpus * tj.runtime for tj in jobs) / 3600
    print("Philly trace replay: start estimated at submission vs actual start (simulated)")
    print(
        f"  trace        {args.trace}: {trace.read} jobs read"
        + (f" (--limit {args.limit})" if args.limit else "")
        + f", {len(jobs)} replayed; submissions {first:%Y-%m-%d %H:%M} .. "
        f"{last_submit:%Y-%m-%d %H:%M} UTC"
    )
    print(
        f"  capacity     {args.nodes} nodes x {args.gpus_per_node} {GPU_TYPE} = {gpus} GPUs; "
        + (
            f"one flavor, ClusterQueue '{QUEUE}' (BestEffortFIFO, nominal {gpus} GPUs), "
            if args.queues == 1
            else f"one flavor, {args.queues} ClusterQueues in cohort '{COHORT}' (BestEffortFIFO, "
            f"nominal {gpus} GPUs split evenly, borrowing what the others leave), "
        )
        + f"{args.tenants} tenant(s) with a LocalQueue each (tenant = hash of the job id)"
    )
    print(
        f"  wide jobs    > {args.gpus_per_node} GPUs: "
        + (
            f"{trace.capped} capped to {args.gpus_per_node} GPUs (same run time)"
            if args.wide == "cap"
            else f"{trace.skipped} skipped"
            if args.wide == "skip"
            else f"{trace.pod_sets} run as pod sets over several nodes"
        )
        + f"; GPU-hours asked {trace.gpu_hours_asked:,.0f}, replayed {trace.gpu_hours_run:,.0f}"
    )
    print(
        f"  load         {busy / (span.total_seconds() / 3600):,.0f} GPUs busy on average over "
        f"the simulated span; {busy / ((last_submit - first).total_seconds() / 3600):,.0f} "
        f"GPUs of work per hour of submissions"
    )
    print(
        "  estimates    the estimator never sees a run time: user estimates are "
        + "; ".join(
            {
                LOGNORMAL: f"lognormal = run time x lognormal(0, {args.noise_sigma}) "
                "(Slurm-style limit = ceil_hour(it x 3))",
                LIMITS: f"limits = run time x lognormal(ln {OVERSTATE:g}, {OVERSTATE_SIGMA:g}) "
                f"rounded up to {', '.join(map(str, COMMON_LIMIT_HOURS))} h",
            }[m]
            for m in models
        )
        + f"; seed {args.seed}; queue rate over the last {args.rate_window_hours:g} h"
    )
    history_default = DEFAULT_SECONDS[JobType.TRAINING] or 0
    print(
        f"  history      names by {'size (philly-<gpus>gpu)' if args.names == 'size' else 'job'}"
        f"; learned from the runs finished before each submission: "
        f"{outcome.history_runs} at the last one; "
        f"{outcome.history_used} of {len(jobs)} no-estimate submissions had history, the rest "
        f"used the TRAINING default ({history_default / 3600:g} h)"
    )
    retried = sum(1 for tj in jobs if len(tj.runs) > 1)
    print(
        f"  real cluster pod start-up {args.startup_seconds:g} s (budcluster learns it from the "
        f"attempts that started); attempts "
        + (
            f"replayed: {retried} jobs failed {outcome.failures} attempts before succeeding, "
            f"each retried after the service's backoff (maxRetries {MAX_RETRIES})"
            if args.attempts == "replay"
            else "not replayed (one run of the total run time each)"
        )
    )
    print(
        f"  simulated    {span.total_seconds() / 86400:.1f} days (first submission to last "
        f"completion); {outcome.steps} engine steps; at most {outcome.max_waiting} jobs waiting"
    )
    print(
        f"  actual wait  P50 {_num(percentile(waits, 50))} min, P95 {_num(percentile(waits, 95))}"
        f" min, max {max(waits) / 1440:.1f} days; "
        f"{sum(1 for w in waits if w <= args.startup_seconds / 60)} of "
        f"{len(jobs)} jobs started at submission (after start-up only)"
    )
    timed = outcome.estimate_seconds
    print(
        f"  wall time    {wall:.1f} s: estimate() "
        + ", ".join(
            f"{timed[n]:.1f} s ({timed[n] / len(jobs) * 1000:.1f} ms/call) {n}" for n in timed
        )
        + f"; engine {outcome.engine_seconds:.1f} s"
    )
    labels = {name: name for name in outcome.names}
    labels[QUEUE_RATE] = f"{QUEUE_RATE} ({args.rate_window_hours:g} h)"
    labels[HISTORY] = f"{HISTORY} ({args.names} names)"
    if LOGNORMAL in models:
        labels[slurm(LOGNORMAL)] = f"{slurm(LOGNORMAL)}: ceil_hour(estimate x 3)"
    if LIMITS in models:
        labels[as_given(LIMITS)] = f"{as_given(LIMITS)} = Slurm-style"
    everyone = [tj.index for tj in jobs]
    startup = timedelta(seconds=args.startup_seconds)
    waited = [tj.index for tj in jobs if outcome.started[tj.index] > tj.submitted + startup]
    submitted = [tj.submitted for tj in jobs]
    table("All jobs", outcome, submitted, everyone, labels)
    table("Jobs that waited (actual start after submission)", outcome, submitted, waited, labels)
    window_table("All jobs", outcome, outcome.started, everyone, labels)
    window_table("Jobs that waited", outcome, outcome.started, waited, labels)
    wide = [tj.index for tj in jobs if tj.pods > 1]
    if wide:
        spread = 2 * math.sqrt(0.8 * 0.2 / len(wide)) * 100
        window_table(
            f"Jobs wider than a node (a calibrated 80 % window covers {80 - spread:.1f}-"
            f"{80 + spread:.1f}% of so few: 2 binomial standard deviations)",
            outcome,
            outcome.started,
            wide,
            labels,
        )
    for q in range(4):
        part = everyone[q * len(everyone) // 4 : (q + 1) * len(everyone) // 4]
        window_table(
            f"Quarter {q + 1} of the trace (by submission)", outcome, outcome.started, part, labels
        )
    converge_table(outcome, submitted, labels)
    misses, unexplained = oracle_check(jobs, outcome)
    print(
        f"\n  jobs: estimates compared; none: of those, jobs with no start within the "
        f"estimator's {HORIZON.days}-day horizon, counted as starting at its end (a lower bound "
        "on their error); failed: no estimate at all (not counted); bias: median(actual - "
        "estimate), > 0 = estimated too early."
    )
    print(
        f"  oracle: {misses} of {len(jobs)} starts missed with exact run times; "
        f"{unexplained} of them without a later submission starting first (with one run "
        "per job and no start-up, expected 0: only jobs the estimate could not know about "
        "move a start; failed attempts and start-up move them too)."
    )
    print(
        "  The simulated cluster never reads estimates: actual starts are the same for every "
        "row, both modes included."
    )
    if args.csv:
        write_csv(args.csv, jobs, outcome)
        print(f"  per-job estimates written to {args.csv}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--trace", required=True, help="Philly trace JSON")
    parser.add_argument("--nodes", type=int, default=50)
    parser.add_argument("--gpus-per-node", type=int, default=8)
    parser.add_argument("--noise-sigma", type=float, default=0.5)
    parser.add_argument(
        "--user-estimates",
        default=",".join(MODELS),
        help=f"user-estimate models to replay, comma-separated: {', '.join(MODELS)} (default both)",
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--limit", type=int, default=None, help="replay only the first N jobs")
    parser.add_argument(
        "--wide", choices=("pods", "cap", "skip"), default="pods", help="jobs wider than one node"
    )
    parser.add_argument(
        "--names", choices=("size", "unique"), default="size", help="job names (history key)"
    )
    parser.add_argument("--tenants", type=int, default=1)
    parser.add_argument(
        "--queues",
        type=int,
        default=1,
        help="ClusterQueues in one cohort, sharing the capacity (tenants spread over them)",
    )
    parser.add_argument(
        "--startup-seconds",
        type=float,
        default=60.0,
        help="pod start-up (admission to running) on the simulated cluster; learned by budcluster",
    )
    parser.add_argument(
        "--attempts",
        choices=("replay", "one"),
        default="replay",
        help="replay the trace's failed attempts (retried after the service's backoff), or one run",
    )
    parser.add_argument(
        "--converge",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also estimate each job again 24 h, 6 h, 1 h and 10 min before its actual start "
        "(budcluster x learned ratio and the oracle; a first pass of the cluster alone finds "
        "the starts)",
    )
    parser.add_argument("--rate-window-hours", type=float, default=6.0)
    parser.add_argument("--csv", default=None, help="write per-job estimates to this file")
    parser.add_argument("--profile", action="store_true", help="print the top functions by time")
    args = parser.parse_args()
    if args.profile:
        profiler = cProfile.Profile()
        profiler.runcall(run, args)
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)
    else:
        run(args)


if __name__ == "__main__":
    main()
