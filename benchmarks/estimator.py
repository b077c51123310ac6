"""Estimator cost: a full recompute for 1,000 and 10,000 waiting jobs on 100 and 1,000 GPUs.

The cluster has 4 GPU flavors (8-GPU nodes, split evenly), 6 ClusterQueues in 3 cohorts whose
nominal quotas add up to the capacity (so borrowing matters), a mixed priority queue with some
preemptible work, and half of the GPUs busy with running jobs. Each configuration is estimated
`--repeat` times; the median wall time is printed, alone and with every waiting job's 80 %
start window (calibrated on a synthetic record of 500 starts), with the number of admission
cycles the replay ran. One more submission is timed the same way: there is no incremental path
yet, so it is a full replay. `--divergence` also prints, for 10,000 waiting on 1,000 GPUs, how
much of the replay each kind of change leaves as it was (the most a replay resumed from a
checkpoint could skip) and how many plans it changes.

    .venv/bin/python -m benchmarks.estimator [--repeat 5] [--divergence]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
import uuid
from dataclasses import replace
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
    QuotaSet,
    ReclaimWithinCohort,
    ResourceFlavor,
    ResourceGroup,
    ResourceQuota,
    tenant_namespace,
)
from domain.scheduling.durations import Durations
from domain.scheduling.estimator import Snapshot, estimate
from domain.scheduling.windows import Calibration, Outcome

NOW = datetime(2026, 6, 1, 9, 0, tzinfo=UTC)
FLAVORS = ["nvidia-a100-80gb", "nvidia-h100-sxm", "nvidia-l40s", "nvidia-a10g"]
CLUSTER = ClusterId(uuid.UUID(int=1))
TENANTS = [TenantId(uuid.UUID(int=100 + i)) for i in range(3)]


def build(gpus: int, pending: int, seed: int = 7) -> Snapshot:
    rng = random.Random(seed)
    nodes: list[Node] = []
    per_flavor = gpus // len(FLAVORS)
    for flavor in FLAVORS:
        for i in range(per_flavor // 8):
            name = f"{flavor.split('-')[1]}-{i}"
            nodes.append(
                Node(
                    NodeId(uuid.uuid5(CLUSTER, name)),
                    CLUSTER,
                    name,
                    NodeType.GPU,
                    flavor,
                    8,
                    128,
                    2048,
                    labels={GPU_LABEL: flavor},
                )
            )
    flavors = (
        *tuple(ResourceFlavor(CLUSTER, f, {GPU_LABEL: f}, NOW, NOW) for f in FLAVORS),
        ResourceFlavor(CLUSTER, "cpu", {}, NOW, NOW),
    )
    queues, local = [], []
    cohorts = [f"cohort-{i}" for i in range(3)]
    for i in range(6):
        name = f"cq-{i}"
        share = per_flavor / 2  # two queues per cohort would each own half; 3 cohorts overlap
        queues.append(
            ClusterQueue(
                CLUSTER,
                name,
                NOW,
                NOW,
                cohort=cohorts[i % 3],
                resource_groups=(
                    ResourceGroup(
                        (NVIDIA_GPU,),
                        tuple(
                            FlavorQuotas(f, (ResourceQuota(NVIDIA_GPU, share / 3 * 2, None, None),))
                            for f in FLAVORS
                        ),
                    ),
                    ResourceGroup(
                        (CPU, MEMORY),
                        (
                            FlavorQuotas(
                                "cpu",
                                (ResourceQuota(CPU, 100_000), ResourceQuota(MEMORY, 10_000_000)),
                            ),
                        ),
                    ),
                ),
                preemption=PreemptionPolicy(
                    reclaim_within_cohort=ReclaimWithinCohort.LOWER_PRIORITY
                ),
            )
        )
        for tenant in TENANTS:
            local.append(LocalQueue(CLUSTER, name, tenant_namespace(tenant), tenant, name, NOW))
    quotas = QuotaSet(
        flavors, tuple(queues), tuple(local), tuple(Cohort(CLUSTER, c, NOW) for c in cohorts)
    )
    jobs: list[Job] = []
    priorities = [
        JobPriority.HIGH,
        JobPriority.NORMAL,
        JobPriority.NORMAL,
        JobPriority.LOW,
        JobPriority.SPOT,
    ]
    busy = {n.name: 0 for n in nodes}
    for node in nodes[: len(nodes) // 2]:  # half the GPUs run something
        job = _job(
            rng,
            f"running-{node.name}",
            node.gpu_type or "",
            8,
            rng.choice(priorities),
            JobStatus.RUNNING,
            rng,
        )
        job.placements = (Placement(node.name, tuple(range(8)), node.gpu_type),)
        job.actual_start = NOW - timedelta(minutes=rng.randrange(1, 600))
        busy[node.name] = 8
        jobs.append(job)
    for i in range(pending):
        jobs.append(
            _job(
                rng,
                f"job-{i}",
                rng.choice(FLAVORS),
                rng.choice([1, 1, 2, 4, 4, 8]),
                rng.choice(priorities),
                JobStatus.QUEUED,
                rng,
                age=i,
            )
        )
    return Snapshot(NOW, nodes, quotas, jobs, Durations())


def _job(
    rng: random.Random,
    name: str,
    gpu_type: str,
    gpus: int,
    priority: JobPriority,
    status: JobStatus,
    r: random.Random,
    age: int = 0,
) -> Job:
    tenant = r.choice(TENANTS)
    created = NOW - timedelta(hours=2) + timedelta(seconds=age)
    return Job(
        id=JobId(uuid.UUID(int=r.getrandbits(128))),
        name=name,
        tenant_id=tenant,
        project_id=ProjectId(uuid.UUID(int=1)),
        cluster_id=CLUSTER,
        job_type=JobType.TRAINING,
        deployment_type=DeploymentType.DOCKER,
        created_at=created,
        updated_at=created,
        resources=Resources(gpu_type, gpus, 4, 32),
        priority=priority,
        preemptible=priority in (JobPriority.LOW, JobPriority.SPOT),
        status=status,
        estimated_duration_seconds=r.randrange(600, 6 * 3600),
        queue_name=f"cq-{r.randrange(6)}",
    )


def record(rng: random.Random, size: int = 500) -> Calibration:
    """A cluster's record of estimated against actual starts: waits estimated up to a day,
    off by a log-normal factor (a fifth of the jobs started at once)."""
    outcomes = []
    for i in range(size):
        submitted = NOW - timedelta(days=20) + timedelta(minutes=i * 30)
        wait = 0.0 if rng.random() < 0.2 else rng.uniform(60, 86_400)
        actual = wait * rng.lognormvariate(0, 0.6)
        outcomes.append(
            Outcome(
                submitted,
                submitted + timedelta(seconds=wait),
                submitted + timedelta(seconds=actual),
            )
        )
    outcomes.sort(key=lambda o: o.actual)
    return Calibration(outcomes)


def timed(
    snapshot: Snapshot, repeat: int, calibration: Calibration
) -> tuple[float, float, int, int]:
    """Median ms of a full estimate, and of the estimate with every waiting job's 80 % start
    window (what a refresh shows); admission cycles; jobs given a start."""
    runs, with_windows = [], []
    schedule = None
    for _ in range(repeat):
        began = time.perf_counter()
        schedule = estimate(snapshot)
        estimated = time.perf_counter()
        waiting = set(schedule.queue)
        windows = [
            calibration.window(snapshot.now, plan.start, 0.8)
            for plan in schedule.jobs.values()
            if plan.start is not None and plan.job_id in waiting
        ]
        assert len(windows) <= len(schedule.queue)
        runs.append((estimated - began) * 1000)
        with_windows.append((time.perf_counter() - began) * 1000)
    assert schedule is not None
    started = sum(1 for p in schedule.jobs.values() if p.start is not None)
    return statistics.median(runs), statistics.median(with_windows), schedule.cycles, started


def divergence(gpus: int, pending: int, trials: int = 4) -> None:
    """How much of a replay a change leaves as it was: the first moment any other job's plan
    differs from the replay without the change, as the share of the replay's job starts
    before it (what a replay resumed from a checkpoint there would not redo, the most an
    incremental path by resumption can save), and how many plans changed (what it must
    still send). Submissions of each priority, cancels of waiting jobs, and running jobs
    that end now rather than when estimated."""
    base = build(gpus, pending)
    far = NOW + timedelta(days=10_000)
    before = estimate(base)
    starts = sorted(p.start for p in before.jobs.values() if p.start is not None)

    def compare(snapshot: Snapshot, changed: JobId) -> tuple[float, int]:
        after = estimate(snapshot)
        moments = [
            min(old.start or far, new.start or far)
            for key, old in before.jobs.items()
            if key != changed
            and (new := after.jobs.get(key)) is not None
            and (old.start, old.end, old.placements) != (new.start, new.end, new.placements)
        ]
        if not moments:
            return 1.0, 0
        first = min(moments)
        return sum(1 for s in starts if s < first) / len(starts), len(moments)

    rng = random.Random(3)
    rows: list[tuple[str, float, int]] = []
    for i in range(trials):
        priority = [JobPriority.HIGH, JobPriority.NORMAL, JobPriority.LOW, JobPriority.SPOT][i % 4]
        job = _job(rng, f"new-{i}", rng.choice(FLAVORS), rng.choice([1, 2, 4, 8]), priority,
                   JobStatus.QUEUED, rng, age=pending + 10)  # fmt: skip
        job = replace(job, created_at=NOW, updated_at=NOW)
        kept, moved = compare(replace(base, jobs=(*base.jobs, job)), job.id)
        rows.append(
            (f"submit {priority.value.lower()}, {job.resources.gpu_count} GPUs", kept, moved)
        )
    waiting = [j for j in base.jobs if j.status is JobStatus.QUEUED]
    running = [j for j in base.jobs if j.status is JobStatus.RUNNING]
    for what, pool in (("cancel a waiting job", waiting), ("a running job ends now", running)):
        for _ in range(trials // 2):
            gone = rng.choice(pool)
            kept, moved = compare(
                replace(base, jobs=tuple(j for j in base.jobs if j.id != gone.id)), gone.id
            )
            rows.append((what, kept, moved))
    print(f"\n{pending} waiting on {gpus} GPUs: what a change leaves as it was")
    print(f"{'change':<32} {'starts before its first effect':>31} {'plans changed':>14}")
    for what, kept, moved in rows:
        print(f"{what:<32} {kept:>30.1%} {moved:>14}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--divergence",
        action="store_true",
        help="also print how much of a replay each kind of change leaves as it was",
    )
    args = parser.parse_args()
    calibration = record(random.Random(3))
    print(
        f"{'GPUs':>6} {'waiting':>8} {'full ms':>10} {'+windows ms':>12} {'cycles':>7} "
        f"{'scheduled':>9} {'+1 job ms':>10}"
    )
    for gpus in (100, 1000):
        for pending in (1000, 10_000):
            snapshot = build(gpus, pending)
            median, windowed, cycles, started = timed(snapshot, args.repeat, calibration)
            extra = build(gpus, pending)
            extra_jobs = [
                *list(extra.jobs),
                _job(
                    random.Random(1),
                    "late-arrival",
                    FLAVORS[0],
                    4,
                    JobPriority.HIGH,
                    JobStatus.QUEUED,
                    random.Random(2),
                    age=pending + 1,
                ),
            ]
            plus_one, _, _, _ = timed(
                Snapshot(NOW, extra.nodes, extra.quotas, extra_jobs, Durations()),
                args.repeat,
                calibration,
            )
            print(
                f"{gpus:>6} {pending:>8} {median:>10.1f} {windowed:>12.1f} {cycles:>7} "
                f"{started:>9} {plus_one:>10.1f}"
            )
    if args.divergence:
        divergence(1000, 10_000)


if __name__ == "__main__":
    main()
