"""Fleet dispatch on a real trace: the Philly GPU trace replayed on a fleet of three simulated
clusters, once per dispatcher, over the same jobs and freshly made engines, to compare
budcluster's dispatch by estimate with Kueue's MultiKueue dispatchers and two plain rules.

The fleet (`FLEET`) is a chosen test fleet, not fitted to the trace: alpha 25 nodes x 8 GPUs at
2.00 a GPU-hour, beta 25 x 4 at 1.20, gamma 6 x 16 at 3.50, 396 GPUs of one type (the
single-cluster replay, `benchmarks.replay`, loads 400 with this trace). Each member is its own
engine with replay's quotas (one ClusterQueue holding its GPUs, evicting lower priorities within
it); a job runs there as `pod_shape` pods, and a member that can never hold them is skipped.
Priorities are drawn from the seed (`PRIORITY_MIX`: 15 % HIGH, 65 % NORMAL, 20 % LOW, every job
preemptible; a chosen test mix, so that work is evicted); an evicted job loses its run (no
checkpoints) and is retried on its member after the service's backoff. Each job runs once for
the trace's total run time (failed attempts are not replayed), with `--startup-seconds` (0) of
pod start-up. `estimate` is `domain.services.dispatch` (one estimate per member of it now plus
the job, durations learned from that member's finished runs: replay's "user estimate (lognormal)
x learned ratio"; `rank` of the offers) followed by `domain.services.balancing`'s pass every
`--balance-minutes` (`ByEstimate`: `move_to` with the start window each member's own record of
estimates at dispatch against real starts gives, as the service's calibration does; only first
attempts move, `balancing.movable`); `estimate (no moves)` is the dispatch alone. `Nominating`
is MultiKueue's AllAtOnce and Incremental dispatchers. A wait is first start - submission, so a
job evicted later counts only its first wait; the delay to completion says the rest.

What the replay taught the service (2026-12-02, the whole trace, seeds 1 to 4; each seed is a
different run of chaotic dynamics, so a change is judged over several): moving retries too
(jobs evicted after they ran) made the mean first wait 20 to 40 % longer than moving no job at
all, as they took, at once and ahead of their turn, the room jobs still waiting for their first
start needed; with first attempts alone moved, dispatch by estimate waits less than every other
dispatcher on mean and P95 on all four seeds, and still preempts more than all-at-once.

Tried 2026-12-04 and not kept (seeds 1 to 3): `rank` counting as wait the run a start would throw
away (each victim's GPUs x how long it will have run, over the job's GPUs: a preempted run starts
again), at dispatch and in balancing. It cut the GPU-hours lost to preemption by 55 to 72 % on
every seed (seed 1: 53,147 to 24,275), but not the count of preemptions (394 to 490, 435 to 337,
454 to 436 with dispatch alone), and made the mean first wait 20 % longer on seeds 2 and 3, its
P95 on seed 2 past all-at-once's (27,245 min against 26,954): it evicts many young runs rather
than one old one, and the count is what preemption's aim measures. As a fleet's setting (for
those who pay for lost runs more than for waits) it may still be worth offering.

What the count is made of ("Preempted runs", 2026-12-04, seeds 1 and 2, estimate / all-at-once):
dispatch by estimate evicts fewer jobs (161 / 172, 156 / 159, each first in its first run) and
their second runs about as often (58 / 69, 63 / 66), but their third or later runs far more often
(175 / 77, 216 / 66; the job evicted most, 15 and 19 times against 9 and 8): a retry restarts on
its member in the first gap, which a higher priority takes again. The excess is in where a
retry runs, not in the dispatch.

    .venv/bin/python -m benchmarks.fleet_replay --trace ../shared/data/philly-2017-sep-oct.json \
        [--limit N] [--seed 1] [--balance-minutes 5] [--startup-seconds 0] [--dispatchers ...]
"""

from __future__ import annotations

import argparse
import cProfile
import heapq
import pstats
import random
import statistics
import time
import uuid
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Protocol

from adapters.simulated.engine import FINISHED, Pace, SimWorkload, step
from benchmarks.replay import (
    GPU_TYPE,
    LOGNORMAL,
    TraceJob,
    _State,
    load_trace,
    make_job,
    make_nodes,
    make_quotas,
    make_workload,
    pod_shape,
    retry_delay,
)
from domain.model.fleet import Fleet
from domain.model.ids import ClusterId, FleetId, JobId
from domain.model.job import Job, JobPriority, JobStatus
from domain.ports.gateways import WorkloadPhase
from domain.scheduling.accuracy import WITHIN, percentile
from domain.scheduling.cost import estimate_cost
from domain.scheduling.dispatch import DISPATCH_CONFIDENCE, Offer, move_to, rank
from domain.scheduling.durations import Durations
from domain.scheduling.estimator import HORIZON, JobPlan, Snapshot, estimate, queued_since
from domain.scheduling.windows import Calibration, Outcome, late_grace
from domain.services.balancing import arrival, movable
from domain.services.timeline import load

FLEET_ID = FleetId(uuid.uuid5(uuid.NAMESPACE_DNS, "fleet-replay.budcluster"))
WHOLE_POD = 1 << 20
"""Nodes this wide load the trace with every job as one pod; each member shapes it after."""
PRIORITY_MIX = ((JobPriority.HIGH, 0.15), (JobPriority.NORMAL, 0.65), (JobPriority.LOW, 0.20))
"""A chosen test mix, so that preemption happens; not the trace's (it has no priorities)."""
KUEUE_STEP = 3
"""Kueue's Incremental dispatcher nominates up to this many more workers a round, in sorted
order (pkg/controller/workloaddispatcher/incrementaldispatcher.go, getNextNominatedWorkers'
batch size)."""
KUEUE_ROUND = timedelta(minutes=5)
"""Kueue's Incremental dispatcher round (incrementalDispatcherRoundTimeout, the same file)."""

ESTIMATE = "estimate"
ESTIMATE_STILL = "estimate (no moves)"
"""The same dispatch at submission, with no balancing pass: what the moves change."""
ALL_AT_ONCE = "all-at-once"
INCREMENTAL = "incremental"
INCREMENTAL_1 = "incremental (step 1)"
ROUND_ROBIN = "round-robin"
LEAST_LOADED = "least-loaded"
DISPATCHERS = (
    ESTIMATE,
    ESTIMATE_STILL,
    ALL_AT_ONCE,
    INCREMENTAL,
    INCREMENTAL_1,
    ROUND_ROBIN,
    LEAST_LOADED,
)


@dataclass(frozen=True)
class MemberSpec:
    name: str
    nodes: int
    gpus_per_node: int
    price: Decimal
    """Per GPU-hour."""

    @property
    def gpus(self) -> int:
        return self.nodes * self.gpus_per_node

    def shape(self, tj: TraceJob) -> TraceJob | None:
        """The job as this member runs it (`pod_shape` of its GPUs on its nodes), or None when
        the member can never hold all its pods at once."""
        pods = pod_shape(tj.asked_gpus, self.gpus_per_node)
        per_pod = tj.asked_gpus // pods
        if pods > self.nodes * (self.gpus_per_node // per_pod):
            return None
        return replace(tj, gpus=per_pod, pods=pods)


FLEET = (
    MemberSpec("alpha", 25, 8, Decimal("2.00")),
    MemberSpec("beta", 25, 4, Decimal("1.20")),
    MemberSpec("gamma", 6, 16, Decimal("3.50")),
)
"""A chosen test fleet (unequal size, node shape and price), not fitted to the trace."""


def draw_priorities(count: int, seed: int) -> list[JobPriority]:
    """One priority per job from `PRIORITY_MIX`, on a stream of its own (the trace's draws stay
    put)."""
    rng = random.Random(seed * 7919 + 2)
    kinds = [p for p, _ in PRIORITY_MIX]
    return rng.choices(kinds, [share for _, share in PRIORITY_MIX], k=count)


# --- the fleet ----------------------------------------------------------------------------------


class Member:
    """One simulated cluster of the fleet: its engine's workloads, its jobs as budcluster's
    estimator sees them (`views`: waiting, in a retry's backoff, or running), and its record of
    finished runs (replay's `_State`, whose `history` and `startup` are what it learns)."""

    def __init__(
        self, index: int, spec: MemberSpec, trace: list[TraceJob], at: datetime, startup: float
    ) -> None:
        self.index = index
        self.spec = spec
        self.id = ClusterId(uuid.uuid5(FLEET_ID, spec.name))
        self.nodes = make_nodes(spec.nodes, spec.gpus_per_node)
        self.quotas = make_quotas(self.nodes, sorted({tj.tenant for tj in trace}), at)
        self.pace = Pace(time_scale=1.0, startup_seconds=startup)
        self.shapes = [spec.shape(tj) for tj in trace]
        self.record = _State(
            [s or tj for s, tj in zip(self.shapes, trace, strict=True)], [], self.quotas
        )
        self.live: list[SimWorkload] = []
        self.job_of: dict[str, int] = {}
        self.views: dict[int, Job] = {}
        self.seen_admitted: set[str] = set()
        self.seen_started: set[str] = set()
        self.due: datetime | None = None
        self.dirty = False
        self.version = 0
        """Bumped on every change of what it holds or waits for: plans of an older one are stale."""
        self._durations: tuple[tuple[int, int], Durations] | None = None
        self.plan: tuple[int, dict[JobId, JobPlan]] | None = None

    def holds(self, job: int) -> bool:
        return self.shapes[job] is not None

    def durations(self) -> Durations:
        """What it has learned from the runs finished on it (cached until one more ends)."""
        key = (len(self.record.finished), len(self.record.startups))
        if self._durations is None or self._durations[0] != key:
            learned = Durations(self.record.history(LOGNORMAL), startup=self.record.startup())
            self._durations = (key, learned)
        return self._durations[1]

    def snapshot(self, now: datetime, *extra: Job) -> Snapshot:
        return Snapshot(
            now, self.nodes, self.quotas, [*self.views.values(), *extra], self.durations()
        )

    def own_plan(self, now: datetime) -> dict[JobId, JobPlan]:
        """Its last recompute: its estimate of its own jobs, made again once it changed."""
        if self.plan is None or self.plan[0] != self.version:
            self.plan = (self.version, estimate(self.snapshot(now)).jobs)
        return self.plan[1]

    def load(self) -> float:
        """GPUs its jobs hold or ask (running, waiting, in backoff) over its GPUs."""
        return sum(v.resources.total_gpus for v in self.views.values()) / self.spec.gpus

    def changed(self) -> None:
        self.version += 1
        self.dirty = True


@dataclass
class Result:
    name: str
    waits: list[float]
    """Minutes from submission to first start, per job."""
    utilisation: float
    preemptions: int
    moves: int
    duplicates: int
    withdrawn: int
    started_on: dict[str, int]
    """Jobs by the member they first started on."""
    preempted_on: dict[str, int]
    lost_gpu_hours: float
    """What the preempted runs had run (lost: no checkpoints)."""
    delay: float
    """Mean minutes from submission to completion beyond the run time: the wait, and what a
    preemption cost (its lost run and its wait again)."""
    errors: list[float] | None = None
    """Minutes between the start estimated at dispatch and the actual first start (estimate)."""
    beyond_horizon: int = 0
    estimate_seconds: float = 0.0
    estimates: int = 0
    passes: int = 0
    """Balancing passes, and of them those that estimated again (`recomputed`)."""
    recomputed: int = 0
    needless_evictions: int = 0
    evicted_runs: list[tuple[int, int]] = field(default_factory=list)
    """(job, attempt) of every preempted run: which jobs the count is made of."""
    engine_seconds: float = 0.0
    steps: int = 0
    wall: float = 0.0
    span_days: float = 0.0

    @property
    def mean_wait(self) -> float:
        return statistics.fmean(self.waits) if self.waits else 0.0

    @property
    def p95_wait(self) -> float:
        return percentile(self.waits, 95) or 0.0


class FleetReplay:
    """The fleet in simulated time under one dispatcher: submissions at their trace times, each
    member stepped at its own due moments, retries after their backoff, the dispatcher woken
    when it asks. A job's copies (`copies`) are the members it waits, runs or backs off on: one,
    except under MultiKueue dispatchers before a copy is admitted."""

    def __init__(
        self,
        trace: list[TraceJob],
        priorities: Sequence[JobPriority],
        *,
        specs: Sequence[MemberSpec] = FLEET,
        startup_seconds: float = 0.0,
    ) -> None:
        self.trace = trace
        self.priorities = priorities
        at = trace[0].submitted
        self.members = [Member(k, spec, trace, at, startup_seconds) for k, spec in enumerate(specs)]
        self.fleet = Fleet(FLEET_ID, "replay", tuple(m.id for m in self.members), at, at)
        self.copies: dict[int, list[int]] = {}
        self.admitted: set[int] = set()
        self.assigned: set[int] = set()
        """Jobs a copy of which was admitted: MultiKueue nominates no more for them."""
        self.started: dict[int, datetime] = {}
        self.ended: dict[int, datetime] = {}
        self.backoff: dict[int, tuple[int, int, datetime]] = {}
        """Preempted jobs waiting out the retry backoff: (member, next attempt, due)."""
        self._retries: list[tuple[datetime, int]] = []
        self.moves: dict[int, int] = {}
        self.gpu_seconds = 0.0
        self.lost_gpu_seconds = 0.0
        self.preemptions = 0
        self.evicted_runs: list[tuple[int, int]] = []
        """(job, its run's attempt: 0 the first) of every preempted run."""
        self.copies_made = 0
        self.withdrawn = 0
        self.steps = 0
        self.engine_seconds = 0.0
        self.log: list[tuple[datetime, str, int, str]] = []
        """(when, what, job, member) of every admission, start, end, preemption, withdrawal and
        move: what the tests read."""

    # the jobs as members see them

    def view(self, job: int, member: Member) -> Job:
        """The job as a new arrival on `member`: its shape there, its user's estimate (lognormal,
        which budcluster corrects by its learned ratio), its priority, and preemptible (every
        job is: a chosen test setting, so that priorities evict)."""
        shaped = member.shapes[job]
        assert shaped is not None
        made = make_job(shaped, shaped.estimates[LOGNORMAL])
        made.priority = self.priorities[job]
        made.preemptible = True
        made.cluster_id = member.id
        return made

    def waiting(self) -> list[int]:
        """Dispatched jobs not admitted and not finished, in submission order."""
        return sorted(j for j in self.copies if j not in self.admitted)

    def queue(self, job: int, member: Member, now: datetime, view: Job | None = None) -> None:
        """A copy of the job on `member`, made now (a MultiKueue copy queues by this moment);
        a moved job's by its place in the queue (`queued_since`)."""
        made = view or self.view(job, member)
        created = queued_since(made) if made.generation else now
        shaped = member.shapes[job]
        assert shaped is not None
        workload = make_workload(shaped, made, member.quotas, 0, created)
        workload.preemptible = made.preemptible
        if made.attempt:
            workload.name, workload.attempt = f"{made.id}/a{made.attempt}", made.attempt
        member.live.append(workload)
        member.job_of[workload.name] = job
        member.views[job] = made
        member.changed()
        self.copies.setdefault(job, []).append(member.index)
        self.copies_made += 1

    def withdraw(self, job: int, member: Member, now: datetime, why: str = "withdrawn") -> Job:
        """Take the job's waiting copy (or its backoff) off `member`; returns its view there."""
        member.live = [w for w in member.live if member.job_of.get(w.name) != job]
        view = member.views.pop(job)
        member.changed()
        self.copies[job].remove(member.index)
        self.log.append((now, why, job, member.spec.name))
        if why == "withdrawn":
            self.withdrawn += 1
        return view

    def move(self, job: int, origin: Member, target: Member, now: datetime) -> None:
        """A waiting job to another member: a new hand-over of the same attempt (`Job.move`'s
        generation), its copy withdrawn first; one in a retry's backoff takes its backoff along."""
        left = self.withdraw(job, origin, now, "moved from")
        moved = replace(
            left,
            cluster_id=target.id,
            resources=self.view(job, target).resources,
            generation=left.generation + 1,
            status=JobStatus.QUEUED,
            placements=(),
        )
        self.moves[job] = self.moves.get(job, 0) + 1
        self.log.append((now, "moved to", job, target.spec.name))
        if job in self.backoff:
            _, attempt, due = self.backoff[job]
            self.backoff[job] = (target.index, attempt, due)
            target.views[job] = moved
            target.changed()
            self.copies[job].append(target.index)
            return
        self.queue(job, target, now, moved)
        self.copies_made -= 1  # the same job's one copy, somewhere else

    # simulated time

    def settle(self, now: datetime) -> None:
        """Step every member that is due or changed at `now` until none is."""
        while True:
            due = [m for m in self.members if m.dirty or (m.due is not None and m.due <= now)]
            if not due:
                return
            for member in due:
                if member.dirty or (member.due is not None and member.due <= now):
                    began = time.perf_counter()
                    member.due = step(member.live, member.nodes, member.quotas, now, member.pace)
                    self.engine_seconds += time.perf_counter() - began
                    self.steps += 1
                    member.dirty = False
                    self._observe(member, now)

    def _observe(self, member: Member, now: datetime) -> None:
        name = member.spec.name
        changed = False
        for w in member.live:
            job = member.job_of[w.name]
            view = member.views[job]
            if w.admitted_at is not None and w.name not in member.seen_admitted:
                member.seen_admitted.add(w.name)
                changed = True
                self.admitted.add(job)
                self.assigned.add(job)
                self.log.append((w.admitted_at, "admitted", job, name))
                for other in [self.members[k] for k in self.copies[job] if k != member.index]:
                    self.withdraw(job, other, now)  # the first copy admitted wins
                view.status, view.placements = JobStatus.ADMITTED, w.placements
            if w.started_at is not None and w.name not in member.seen_started:
                assert w.admitted_at is not None
                member.seen_started.add(w.name)
                self.started.setdefault(job, w.started_at)
                member.record.startups.append((w.started_at - w.admitted_at).total_seconds())
                view.status, view.actual_start = JobStatus.RUNNING, w.started_at
                self.log.append((w.started_at, "started", job, name))
            if w.phase not in FINISHED:
                continue
            assert w.finished_at is not None
            changed = True
            ran = (w.finished_at - w.started_at).total_seconds() if w.started_at else 0.0
            self.gpu_seconds += ran * w.gpu_count * w.pod_count
            self.admitted.discard(job)
            if w.phase is WorkloadPhase.SUCCEEDED:
                self.ended[job] = w.finished_at
                member.record.finished.append((job, ran))
                del member.views[job]
                del self.copies[job]
                self.log.append((w.finished_at, "ended", job, name))
                continue
            assert w.phase is WorkloadPhase.PREEMPTED, w.phase
            self.preemptions += 1
            self.evicted_runs.append((job, w.attempt))
            self.lost_gpu_seconds += ran * w.gpu_count * w.pod_count
            self.log.append((w.finished_at, "preempted", job, name))
            attempt = w.attempt + 1
            due = w.finished_at + timedelta(seconds=retry_delay(attempt, job))
            self.backoff[job] = (member.index, attempt, due)
            heapq.heappush(self._retries, (due, job))
            view.status, view.placements, view.actual_start = JobStatus.QUEUED, (), None
            view.attempt, view.next_attempt_at = attempt, due
        if changed:
            member.changed()
            member.dirty = False  # (it was just stepped: a change of its own needs no step)
        member.live = [w for w in member.live if w.phase not in FINISHED]

    def _release(self, now: datetime) -> None:
        while self._retries and self._retries[0][0] <= now:
            due, job = heapq.heappop(self._retries)
            held = self.backoff.get(job)
            if held is None or held[2] != due:
                continue
            del self.backoff[job]
            member = self.members[held[0]]
            view = member.views.pop(job)
            self.copies[job].remove(member.index)
            self.queue(job, member, now, view)
            self.copies_made -= 1  # its retry, not another copy

    def run(self, dispatcher: Dispatcher) -> None:
        submissions = iter(self.trace)
        upcoming: TraceJob | None = next(submissions, None)
        now = self.trace[0].submitted
        while True:
            moments = [m.due for m in self.members if m.due is not None]
            if self._retries:
                moments.append(self._retries[0][0])
            if upcoming is not None:
                moments.append(upcoming.submitted)
            wake = dispatcher.next_wake(self, now)
            if wake is not None:
                moments.append(wake)
            if not moments:
                break
            now = min(moments)
            self.settle(now)
            self._release(now)
            self.settle(now)
            while upcoming is not None and upcoming.submitted <= now:
                dispatcher.submit(self, upcoming.index, now)
                self.settle(now)
                upcoming = next(submissions, None)
            if wake is not None and wake <= now:
                dispatcher.wake(self, now)
                self.settle(now)
        missing = [tj.trace_id for tj in self.trace if tj.index not in self.ended]
        assert not missing, f"never finished: {missing[:5]}"

    def result(self, name: str) -> Result:
        waits = [(self.started[tj.index] - tj.submitted).total_seconds() / 60 for tj in self.trace]
        first = self.trace[0].submitted
        span = (max(self.ended.values()) - first).total_seconds()
        gpus = sum(m.spec.gpus for m in self.members)
        first_start: dict[int, str] = {}
        preempted = dict.fromkeys((m.spec.name for m in self.members), 0)
        for _, what, job, where in self.log:
            if what == "started":
                first_start.setdefault(job, where)
            elif what == "preempted":
                preempted[where] += 1
        return Result(
            name,
            waits,
            self.gpu_seconds / (gpus * span) if span else 0.0,
            self.preemptions,
            sum(self.moves.values()),
            self.copies_made - len(self.trace),
            self.withdrawn,
            {
                m.spec.name: sum(1 for w in first_start.values() if w == m.spec.name)
                for m in self.members
            },
            preempted,
            self.lost_gpu_seconds / 3600,
            statistics.fmean(
                (self.ended[tj.index] - tj.submitted).total_seconds() / 60 - tj.runtime / 60
                for tj in self.trace
            ),
            evicted_runs=list(self.evicted_runs),
            engine_seconds=self.engine_seconds,
            steps=self.steps,
            span_days=span / 86400,
        )


# --- the dispatchers ----------------------------------------------------------------------------


class Dispatcher(Protocol):
    name: str

    def submit(self, fleet: FleetReplay, job: int, now: datetime) -> None: ...

    def next_wake(self, fleet: FleetReplay, now: datetime) -> datetime | None:
        """When it wants to act again (None: only at submissions)."""
        ...

    def wake(self, fleet: FleetReplay, now: datetime) -> None: ...


def holders(fleet: FleetReplay, job: int) -> list[Member]:
    found = [m for m in fleet.members if m.holds(job)]
    if not found:
        raise SystemExit(f"job {fleet.trace[job].trace_id}: no member can ever hold it")
    return found


@dataclass
class RoundRobin:
    name: str = ROUND_ROBIN
    turn: int = 0

    def submit(self, fleet: FleetReplay, job: int, now: datetime) -> None:
        count = len(fleet.members)
        member = next(
            fleet.members[(self.turn + k) % count]
            for k in range(count)
            if fleet.members[(self.turn + k) % count].holds(job)
        )
        self.turn = member.index + 1
        fleet.queue(job, member, now)

    def next_wake(self, fleet: FleetReplay, now: datetime) -> datetime | None:
        return None

    def wake(self, fleet: FleetReplay, now: datetime) -> None:
        pass


@dataclass
class LeastLoaded:
    name: str = LEAST_LOADED

    def submit(self, fleet: FleetReplay, job: int, now: datetime) -> None:
        member = min(holders(fleet, job), key=lambda m: (m.load(), m.index))
        fleet.queue(job, member, now)

    def next_wake(self, fleet: FleetReplay, now: datetime) -> datetime | None:
        return None

    def wake(self, fleet: FleetReplay, now: datetime) -> None:
        pass


@dataclass
class Nominating:
    """MultiKueue's dispatchers: copies on the members nominated, in name order, `step` more
    each round of `KUEUE_ROUND` while no copy is admitted (None: every member at once,
    AllAtOnce), earlier nominees keeping theirs; the first admitted wins and `FleetReplay`
    withdraws the others at that moment. A copy is a workload made when it is nominated, so it
    queues by that moment. With three members Incremental's first batch of three is all of
    them: it is AllAtOnce, and `incremental (step 1)` shows the batching."""

    name: str
    step: int | None
    nominated: dict[int, set[int]] = field(default_factory=dict)
    rounds: list[tuple[datetime, int]] = field(default_factory=list)

    def submit(self, fleet: FleetReplay, job: int, now: datetime) -> None:
        holders(fleet, job)
        self.nominated[job] = set()
        self._nominate(fleet, job, now)

    def _nominate(self, fleet: FleetReplay, job: int, now: datetime) -> None:
        left = sorted(
            (m for m in fleet.members if m.holds(job) and m.index not in self.nominated[job]),
            key=lambda m: m.spec.name,
        )
        batch = left if self.step is None else left[: self.step]
        for member in batch:
            self.nominated[job].add(member.index)
            fleet.queue(job, member, now)
        if len(batch) < len(left):
            heapq.heappush(self.rounds, (now + KUEUE_ROUND, job))

    def next_wake(self, fleet: FleetReplay, now: datetime) -> datetime | None:
        return self.rounds[0][0] if self.rounds else None

    def wake(self, fleet: FleetReplay, now: datetime) -> None:
        while self.rounds and self.rounds[0][0] <= now:
            _, job = heapq.heappop(self.rounds)
            if job not in fleet.assigned:
                self._nominate(fleet, job, now)


@dataclass
class ByEstimate:
    """budcluster's fleet dispatch. At submission, an `Offer` per member from its estimate of
    itself now plus the job (cost: GPUs x expected hours x its price; load: `load`), and
    `rank(...)[0]`, as `domain.services.dispatch`. Every `period` on the fleet's clock, while
    jobs wait, a pass as `domain.services.balancing`: each member's own plan, and one what-if
    per member with every movable waiting job of the others arriving at once; `move_to` with
    the fleet's threshold, at most its `max_moves` a job, the copy withdrawn before it is
    queued on the new member. Plans are made again only when a member changed since they were
    (the service re-estimates on events, not on time): between, they stand and only `now`
    moves."""

    period: timedelta
    name: str = ESTIMATE
    balancing: bool = True
    """False: dispatch at submission only (`ESTIMATE_STILL`)."""
    estimated: dict[int, datetime | None] = field(default_factory=dict)
    """The start of the offer taken at dispatch, per job."""
    estimate_seconds: float = 0.0
    estimates: int = 0
    passes: int = 0
    recomputed: int = 0
    needless_evictions: int = 0
    """Jobs sent where their start evicts work while another member started them as soon
    without (a diagnostic: `rank` weighs start, cost and load, not evictions)."""
    last_pass: datetime | None = None
    _plans: tuple[tuple[int, ...], list[dict[JobId, JobPlan]]] | None = None
    promised: dict[int, tuple[int, datetime, datetime | None]] = field(default_factory=dict)
    """Per waiting job: the member it was last sent to, when, and the start estimated there."""
    records: dict[int, list[Outcome]] = field(default_factory=dict)
    """Each member's record of starts estimated when a job was sent there against its real
    first start, as the service keeps one per cluster (`TimelineService.calibration`)."""

    def _estimate(self, snapshot: Snapshot) -> dict[JobId, JobPlan]:
        began = time.perf_counter()
        plans = estimate(snapshot).jobs
        self.estimate_seconds += time.perf_counter() - began
        self.estimates += 1
        return plans

    def submit(self, fleet: FleetReplay, job: int, now: datetime) -> None:
        offers: list[Offer] = []
        views: dict[ClusterId, Job] = {}
        evicting: set[ClusterId] = set()
        for member in holders(fleet, job):
            view = views[member.id] = fleet.view(job, member)
            snapshot = member.snapshot(now, view)
            plans = self._estimate(snapshot)
            plan = plans[view.id]
            victims = _victims(plans, plan)
            if victims:
                evicting.add(member.id)
            seconds = snapshot.durations.expected(view)
            offers.append(
                Offer(
                    member.id,
                    member.spec.name,
                    start=plan.start,
                    end=plan.end,
                    cost=estimate_cost(view.resources, seconds, {GPU_TYPE: member.spec.price}),
                    load=load(snapshot, view),
                    evicts=victims,
                    reason=plan.reason,
                    warnings=plan.warnings,
                )
            )
        best = rank(offers, now)[0]
        self.estimated[job] = best.start
        self.promised[job] = (
            next(m.index for m in fleet.members if m.id == best.cluster_id),
            now,
            best.start,
        )
        if best.cluster_id in evicting and any(
            o.cluster_id not in evicting and _wait(o, now) == _wait(best, now) for o in offers
        ):
            self.needless_evictions += 1
        chosen = next(m for m in fleet.members if m.id == best.cluster_id)
        fleet.queue(job, chosen, now, views[chosen.id])

    def next_wake(self, fleet: FleetReplay, now: datetime) -> datetime | None:
        """The next pass on the fleet's clock (every `period` from the first submission), while
        any job waits."""
        if not self.balancing or not fleet.waiting():
            return None
        first = fleet.trace[0].submitted
        floor = max(now, self.last_pass + self.period) if self.last_pass else now
        ticks = -(-(floor - first) // self.period)
        return first + ticks * self.period

    def wake(self, fleet: FleetReplay, now: datetime) -> None:
        self.last_pass = now
        self.passes += 1
        waiting = [
            j for j in fleet.waiting() if movable(fleet.members[fleet.copies[j][0]].views[j])
        ]
        if not waiting:
            return
        own, what_if = self._plans_at(fleet, waiting, now)
        calibrations = self._calibrations(fleet, now)
        evicted = [
            Counter(p.preempted_at for p in plans.values() if p.preempted_at) for plans in what_if
        ]
        moves: list[tuple[int, Member, Member]] = []
        for job in waiting:
            home = fleet.members[fleet.copies[job][0]]
            if fleet.moves.get(job, 0) >= fleet.fleet.max_moves:
                continue
            view = home.views[job]
            mine = own[home.index].get(view.id)
            window = (
                calibrations[home.index].window(
                    now, mine.start, DISPATCH_CONFIDENCE, wide=view.resources.total_pods > 1
                )
                if mine is not None and mine.start is not None
                else None
            )
            current = Offer(
                home.id,
                home.spec.name,
                start=mine.start if mine else None,
                end=mine.end if mine else None,
                window=None if window is None else (window.earliest, window.latest),
                warnings=mine.warnings if mine else (),
            )
            others = [
                Offer(
                    m.id,
                    m.spec.name,
                    start=p.start,
                    end=p.end,
                    evicts=evicted[m.index][p.start] if p.start else 0,
                    warnings=p.warnings,
                )
                for m in fleet.members
                if m is not home and (p := what_if[m.index].get(view.id)) is not None
            ]
            target = move_to(
                current,
                rank(others, now),
                now,
                threshold=timedelta(seconds=fleet.fleet.move_threshold_seconds),
            )
            if target is not None:
                moves.append(
                    (job, home, next(m for m in fleet.members if m.id == target.cluster_id))
                )
        for job, origin, destination in moves:
            fleet.move(job, origin, destination, now)
            planned = what_if[destination.index].get(destination.views[job].id)
            self.promised[job] = (destination.index, now, planned.start if planned else None)

    def _calibrations(self, fleet: FleetReplay, now: datetime) -> list[Calibration]:
        """Each member's calibration now: its record of jobs that started there, and those
        still waiting there well past the start estimated when they were sent (censored), as
        `TimelineService.calibration` reads a cluster's."""
        for job in [j for j in self.promised if j in fleet.started]:
            index, at, start = self.promised.pop(job)
            if start is not None:
                wide = _wide(fleet, index, job)
                self.records.setdefault(index, []).append(
                    Outcome(at, start, fleet.started[job], wide=wide)
                )
        late = now - late_grace()
        censored: dict[int, list[Outcome]] = {}
        for job, (index, at, start) in self.promised.items():
            if start is not None and start < late:
                wide = _wide(fleet, index, job)
                censored.setdefault(index, []).append(
                    Outcome(at, start, now, wide=wide, censored=True)
                )
        return [
            Calibration(
                sorted(
                    [*self.records.get(m.index, []), *censored.get(m.index, [])],
                    key=lambda o: o.actual,
                )
            )
            for m in fleet.members
        ]

    def _plans_at(
        self, fleet: FleetReplay, waiting: list[int], now: datetime
    ) -> tuple[list[dict[JobId, JobPlan]], list[dict[JobId, JobPlan]]]:
        """Each member's own plan and its what-if with every other member's movable waiting
        jobs arriving at once; made again only when some member changed since the last pass."""
        versions = tuple(m.version for m in fleet.members)
        own = [self._own(m, now) for m in fleet.members]
        if self._plans is not None and self._plans[0] == versions:
            return own, self._plans[1]
        self.recomputed += 1
        what_if: list[dict[JobId, JobPlan]] = []
        for member in fleet.members:
            arrivals = [
                arrival(
                    replace(
                        fleet.members[fleet.copies[j][0]].views[j],
                        resources=fleet.view(j, member).resources,
                    ),
                    member.id,
                    fleet.fleet,
                )
                for j in waiting
                if fleet.copies[j][0] != member.index and member.holds(j)
            ]
            what_if.append(self._estimate(member.snapshot(now, *arrivals)) if arrivals else {})
        self._plans = (versions, what_if)
        return own, what_if

    def _own(self, member: Member, now: datetime) -> dict[JobId, JobPlan]:
        if member.plan is None or member.plan[0] != member.version:
            self.estimates += 1
            began = time.perf_counter()
            member.own_plan(now)
            self.estimate_seconds += time.perf_counter() - began
        return member.own_plan(now)


def _wait(offer: Offer, now: datetime) -> int | None:
    """Seconds to the offer's start as `rank` compares them (a start already past is now)."""
    if offer.start is None:
        return None
    return round(max(0.0, (offer.start - now).total_seconds()))


def make_dispatcher(name: str, balance: timedelta) -> Dispatcher:
    if name == ESTIMATE:
        return ByEstimate(balance)
    if name == ESTIMATE_STILL:
        return ByEstimate(balance, name=ESTIMATE_STILL, balancing=False)
    if name == ALL_AT_ONCE:
        return Nominating(ALL_AT_ONCE, None)
    if name == INCREMENTAL:
        return Nominating(INCREMENTAL, KUEUE_STEP)
    if name == INCREMENTAL_1:
        return Nominating(INCREMENTAL_1, 1)
    if name == ROUND_ROBIN:
        return RoundRobin()
    if name == LEAST_LOADED:
        return LeastLoaded()
    raise SystemExit(f"unknown dispatcher {name!r}: one of {', '.join(DISPATCHERS)}")


def _victims(plans: dict[JobId, JobPlan], plan: JobPlan) -> int:
    """The jobs the estimate has `plan`'s start evict (as `TimelineService.preview` counts)."""
    if plan.start is None:
        return 0
    return sum(1 for p in plans.values() if p is not plan and p.preempted_at == plan.start)


def _wide(fleet: FleetReplay, member: int, job: int) -> bool:
    shaped = fleet.members[member].shapes[job]
    return shaped is not None and shaped.pods > 1


def replay_with(
    name: str,
    trace: list[TraceJob],
    priorities: Sequence[JobPriority],
    *,
    balance: timedelta = timedelta(minutes=5),
    startup_seconds: float = 0.0,
    specs: Sequence[MemberSpec] = FLEET,
) -> tuple[Result, FleetReplay, Dispatcher]:
    """One dispatcher over the whole trace on a fresh fleet."""
    began = time.perf_counter()
    fleet = FleetReplay(trace, priorities, specs=specs, startup_seconds=startup_seconds)
    dispatcher = make_dispatcher(name, balance)
    fleet.run(dispatcher)
    result = fleet.result(name)
    if isinstance(dispatcher, ByEstimate):
        errors: list[float] = []
        for tj in trace:
            promised = dispatcher.estimated[tj.index]
            if promised is None:
                result.beyond_horizon += 1
                promised = tj.submitted + HORIZON
            errors.append(abs((fleet.started[tj.index] - promised).total_seconds()) / 60)
        result.errors = errors
        result.estimate_seconds = dispatcher.estimate_seconds
        result.estimates = dispatcher.estimates
        result.passes, result.recomputed = dispatcher.passes, dispatcher.recomputed
        result.needless_evictions = dispatcher.needless_evictions
    result.wall = time.perf_counter() - began
    return result, fleet, dispatcher


# --- the report ---------------------------------------------------------------------------------


def _num(value: float | None, fmt: str = ".1f") -> str:
    return "-" if value is None else format(value, fmt)


def row(r: Result) -> str:
    within = WITHIN.total_seconds() / 60
    accuracy = (
        f"{_num(percentile(r.errors, 50)):>9} {_num(percentile(r.errors, 95)):>9} "
        f"{sum(1 for e in r.errors if e <= within) / len(r.errors) * 100:>8.1f}%"
        if r.errors
        else f"{'-':>9} {'-':>9} {'-':>9}"
    )
    return (
        f"  {r.name:<21} {len(r.waits):>5} {r.mean_wait:>10.1f} {r.p95_wait:>10.1f} "
        f"{r.utilisation * 100:>6.1f}% {r.preemptions:>8} {r.moves:>6} {r.duplicates:>6} "
        f"{accuracy} {r.wall:>8.1f}"
    )


HEADER = (
    f"  {'dispatcher':<21} {'jobs':>5} {'mean wait':>10} {'P95 wait':>10} {'util':>7} "
    f"{'preempt':>8} {'moves':>6} {'dups':>6} {'est P50':>9} {'est P95':>9} {'<=10 min':>9} "
    f"{'wall s':>8}"
)


def aim(results: dict[str, Result]) -> Iterator[tuple[str, bool]]:
    """The issue's aim, clause by clause (only those whose dispatchers were replayed)."""
    mine = results[ESTIMATE]
    for other in (ROUND_ROBIN, LEAST_LOADED, INCREMENTAL):
        if other in results:
            theirs = results[other]
            yield (
                f"estimate waits less than {other} on mean ({mine.mean_wait:.1f} vs "
                f"{theirs.mean_wait:.1f} min) and P95 ({mine.p95_wait:.1f} vs "
                f"{theirs.p95_wait:.1f})",
                mine.mean_wait < theirs.mean_wait and mine.p95_wait < theirs.p95_wait,
            )
    if ROUND_ROBIN in results:
        rr = results[ROUND_ROBIN].mean_wait
        yield (
            f"estimate's mean wait at least 20 % below round-robin's ({mine.mean_wait:.1f} vs "
            f"{0.8 * rr:.1f} min = 80 % of {rr:.1f})",
            mine.mean_wait <= 0.8 * rr,
        )
    if ALL_AT_ONCE in results:
        aao = results[ALL_AT_ONCE]
        yield (
            f"estimate waits no more than all-at-once on mean ({mine.mean_wait:.1f} vs "
            f"{aao.mean_wait:.1f} min) and P95 ({mine.p95_wait:.1f} vs {aao.p95_wait:.1f})",
            mine.mean_wait <= aao.mean_wait and mine.p95_wait <= aao.p95_wait,
        )
        yield (
            f"estimate preempts less than all-at-once ({mine.preemptions} vs {aao.preemptions})",
            mine.preemptions < aao.preemptions,
        )
    yield f"estimate makes no duplicate objects ({mine.duplicates})", mine.duplicates == 0


def by_priority(waits: list[float], priorities: Sequence[JobPriority]) -> dict[JobPriority, float]:
    """Mean wait per priority (of those drawn)."""
    found: dict[JobPriority, list[float]] = {}
    for wait, priority in zip(waits, priorities, strict=True):
        found.setdefault(priority, []).append(wait)
    return {p: statistics.fmean(found[p]) for p, _ in PRIORITY_MIX if p in found}


def evictions(runs: Sequence[tuple[int, int]], priorities: Sequence[JobPriority]) -> str:
    """What a dispatcher's preemption count is made of: the evicted runs by their job's
    priority and by attempt, and how many jobs they were."""
    of_priority = Counter(priorities[job] for job, _ in runs)
    by_attempt = Counter(min(attempt + 1, 3) for _, attempt in runs)
    jobs = Counter(job for job, _ in runs)
    return (
        ", ".join(f"{p.value} {of_priority[p]}" for p, _ in PRIORITY_MIX)
        + f"; attempt 1: {by_attempt[1]}, 2: {by_attempt[2]}, 3 or later: {by_attempt[3]}; "
        + f"{len(jobs)} job{'' if len(jobs) == 1 else 's'} evicted, one at most "
        + f"{max(jobs.values(), default=0)} times"
    )


def run(args: argparse.Namespace) -> None:
    began = time.perf_counter()
    names = [n.strip() for n in args.dispatchers.split(",") if n.strip()]
    unknown = [n for n in names if n not in DISPATCHERS]
    if unknown or not names:
        raise SystemExit(f"--dispatchers: one or more of {', '.join(DISPATCHERS)}")
    if args.balance_minutes <= 0:
        raise SystemExit("--balance-minutes must be positive")
    trace = load_trace(
        args.trace,
        limit=args.limit,
        gpus_per_node=WHOLE_POD,
        wide="pods",
        sigma=args.noise_sigma,
        seed=args.seed,
        names="size",
        tenants=1,
        attempts=False,
    ).jobs
    if not trace:
        raise SystemExit("no jobs to replay")
    priorities = draw_priorities(len(trace), args.seed)
    first, last = trace[0].submitted, trace[-1].submitted
    gpus = sum(m.gpus for m in FLEET)
    work = sum(tj.asked_gpus * tj.runtime for tj in trace) / 3600
    print("Fleet dispatch on the Philly trace (simulated): where each dispatcher sends the jobs")
    print(
        f"  trace        {args.trace}: {len(trace)} jobs"
        + (f" (--limit {args.limit})" if args.limit else "")
        + f", submissions {first:%Y-%m-%d %H:%M} .. {last:%Y-%m-%d %H:%M} UTC; "
        f"{work:,.0f} GPU-hours, one run each, pod start-up {args.startup_seconds:g} s"
    )
    print(
        "  fleet        "
        + "; ".join(
            f"{m.name} {m.nodes} x {m.gpus_per_node} GPUs at {m.price}/GPU-h" for m in FLEET
        )
        + f" = {gpus} GPUs of {GPU_TYPE} (a chosen test fleet)"
    )
    counts = {p: priorities.count(p) for p, _ in PRIORITY_MIX}
    print(
        "  priorities   "
        + ", ".join(f"{p.value} {n}" for p, n in counts.items())
        + f" (drawn with seed {args.seed}: "
        + ", ".join(f"{share:.0%} {p.value}" for p, share in PRIORITY_MIX)
        + "); "
        "preemption of lower priorities within each member's ClusterQueue"
    )
    print(
        f"  estimate     user estimate = run time x lognormal(0, {args.noise_sigma}) x the learned "
        f"ratio of each member's finished runs; balancing every {args.balance_minutes:g} min, "
        f"threshold {Fleet(FLEET_ID, '', (), first, first).move_threshold_seconds} s, "
        f"at most {Fleet(FLEET_ID, '', (), first, first).max_moves} moves a job"
    )
    print(
        "  incremental  with 3 members its first batch of 3 is every member: it is all-at-once; "
        "'incremental (step 1)' nominates one member a round to show the batching"
    )
    results: dict[str, Result] = {}
    print("\n" + HEADER)
    print("  " + "-" * (len(HEADER) - 2), flush=True)
    for name in names:
        result, _, _ = replay_with(
            name,
            trace,
            priorities,
            balance=timedelta(minutes=args.balance_minutes),
            startup_seconds=args.startup_seconds,
        )
        results[name] = result
        print(row(result), flush=True)
    print(
        "\n  wait: first start - submission, minutes; util: GPU-seconds run (preempted runs "
        "included) / (fleet GPUs x first submission to last end); preempt: workloads evicted; "
        "dups: copies beyond one a job; est: |start estimated at dispatch - actual first start|,"
        " minutes (estimate only)"
    )
    print("\nJobs by the member they first started on (preemptions there), and other figures")
    for r in results.values():
        where = ", ".join(f"{k} {v} ({r.preempted_on[k]})" for k, v in r.started_on.items())
        extra = (
            f"; {r.estimates} estimates, {r.estimate_seconds:.1f} s; {r.passes} balancing "
            f"passes, {r.recomputed} of them estimating again; {r.needless_evictions} jobs sent "
            "where they evict work though another member started them as soon without"
            + (f", {r.beyond_horizon} beyond the horizon" if r.beyond_horizon else "")
            if r.name in (ESTIMATE, ESTIMATE_STILL)
            else ""
        )
        print(
            f"  {r.name:<21} {where}; withdrawn copies {r.withdrawn}; "
            f"{r.lost_gpu_hours:,.0f} GPU-hours lost to preemption; mean wait "
            + ", ".join(f"{p.value} {w:,.0f}" for p, w in by_priority(r.waits, priorities).items())
            + f" min; mean delay to completion {r.delay:,.0f} min; simulated "
            f"{r.span_days:.1f} days; engine {r.steps} steps, {r.engine_seconds:.1f} s{extra}"
        )
    print("\nPreempted runs: by the priority of their job, and by their attempt (1: a first run)")
    for r in results.values():
        print(f"  {r.name:<21} {evictions(r.evicted_runs, priorities)}")
    if ESTIMATE in results and len(results) > 1:
        print("\nThe issue's aim (estimate against the others)")
        clauses = list(aim(results))
        for text, met in clauses:
            print(f"  {'MET    ' if met else 'NOT MET'} {text}")
        print(f"  overall: {'MET' if all(m for _, m in clauses) else 'NOT MET'}")
    print(f"\n  wall time {time.perf_counter() - began:.1f} s")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--trace", required=True, help="Philly trace JSON")
    parser.add_argument("--limit", type=int, default=None, help="replay only the first N jobs")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--noise-sigma",
        type=float,
        default=0.5,
        help="users' estimates = run time x lognormal(0, this), as benchmarks.replay's default",
    )
    parser.add_argument(
        "--balance-minutes",
        type=float,
        default=5.0,
        help="simulated minutes between balancing passes: a chosen test setting, Kueue's "
        "Incremental round (the service passes every BUDCLUSTER_FLEET_BALANCE_SECONDS, 15 s)",
    )
    parser.add_argument(
        "--startup-seconds",
        type=float,
        default=0.0,
        help="pod start-up on every member (0: a chosen test setting, replay's one-run mode)",
    )
    parser.add_argument(
        "--dispatchers",
        default=",".join(DISPATCHERS),
        help=f"comma-separated, of {', '.join(DISPATCHERS)} (default all)",
    )
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
