"""The simulated cluster's physics: one step of requests, start-up, completion and admission.

`step` is a pure function of the workloads' records, the nodes, the cluster's quotas and
reservations, and the time. Requests (cancel, fail, preempt) are honoured first and free their
resources; admitted workloads start after the configured start-up delay; running ones end when
their run time (scaled by `time_scale`, the simulated seconds per real second) is up, or fail at
`max_duration`; reservations that ended give their GPUs back; then one admission cycle of the
domain's rules (`domain.scheduling.admission`) runs, the same rules the schedule estimator
replays: it admits, preempts, and grows active reservations. Each transition is stamped with the
moment it was due, not when the step ran, so a late step does not distort recorded times.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from domain.model.cluster import Node
from domain.model.job import Placement, PodSet
from domain.model.quota import QuotaSet
from domain.model.reservation import CapacityReservation
from domain.ports.gateways import WorkloadPhase
from domain.scheduling.admission import HOLDING, KUEUE_NEXT_CYCLE, ClusterModel
from domain.scheduling.demand import INFINITE_PRIORITY, Demand, Holding, gang_of

FINISHED = frozenset(
    {WorkloadPhase.SUCCEEDED, WorkloadPhase.FAILED, WorkloadPhase.PREEMPTED, WorkloadPhase.DELETED}
)
RESERVATION = "reservation"


@dataclass
class SimWorkload:
    name: str
    job_id: str
    attempt: int
    priority: int
    gpu_type: str | None
    gpu_count: int
    """Per pod."""
    cpu_cores: float
    memory_gb: float
    runtime_seconds: float | None
    """Simulated seconds it runs; None runs until stopped (a service)."""
    max_duration_seconds: float | None
    outcome: WorkloadPhase
    created_at: datetime
    namespace: str = ""
    queue_name: str = "default"
    preemptible: bool = False
    critical: bool = False
    reservation: str | None = None
    """For a workload: the reservation it runs in. For a reservation's row: its id."""
    kind: str = "workload"
    """`workload`, or `reservation` for the GPUs a reservation holds on one node."""
    phase: WorkloadPhase = WorkloadPhase.QUEUED
    reason: str = "queued"
    node: str | None = None
    """Where its first pod runs (`other_pods`: the others)."""
    gpu_indices: tuple[int, ...] = ()
    flavor: str | None = None
    pod_count: int = 1
    """Pods of its own pod set (`gpu_count`, `cpu_cores`, `memory_gb` each)."""
    pod_sets: tuple[PodSet, ...] = ()
    """Its further pod sets (of `gpu_type` GPUs), admitted with its own or not at all."""
    other_pods: tuple[Placement, ...] = ()
    """Where its other pods run: of every pod set, in the order of its demand's gang."""
    admitted_at: datetime | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    request: str | None = None
    request_reason: str | None = None
    request_due: datetime | None = None
    mounts: tuple[str, ...] = ()
    """What of the tenant's secrets its containers were given, as its pods' logs say it: each
    key's environment variable or file and its length, never a value."""
    """When a request for a running workload is honoured (its grace period after SIGTERM);
    None: at once."""
    changed: bool = field(default=False, compare=False)
    new: bool = field(default=False, compare=False)

    @property
    def placements(self) -> tuple[Placement, ...]:
        if not self.node:
            return ()
        return (Placement(self.node, self.gpu_indices, self.flavor), *self.other_pods)

    def place(self, placements: list[Placement]) -> None:
        first, *others = placements
        self.node, self.gpu_indices, self.flavor = first.node, first.gpu_indices, first.flavor
        self.other_pods = tuple(others)

    def move(self, phase: WorkloadPhase, reason: str) -> None:
        self.phase = phase
        self.reason = reason
        self.changed = True


@dataclass(frozen=True)
class Pace:
    time_scale: float = 1.0
    startup_seconds: float = 2.0

    def real(self, simulated_seconds: float) -> timedelta:
        return timedelta(seconds=simulated_seconds / self.time_scale)


def _end_of_run(w: SimWorkload, pace: Pace) -> tuple[datetime, WorkloadPhase, str] | None:
    assert w.started_at is not None
    limit = w.max_duration_seconds
    if limit is not None and (w.runtime_seconds is None or w.runtime_seconds > limit):
        return (
            w.started_at + pace.real(limit),
            WorkloadPhase.FAILED,
            "timeout: exceeded max_duration",
        )
    if w.runtime_seconds is None:
        return None
    reason = "completed" if w.outcome is WorkloadPhase.SUCCEEDED else "failed: exit code 1"
    return w.started_at + pace.real(w.runtime_seconds), w.outcome, reason


def demand_of(w: SimWorkload, quotas: QuotaSet) -> Demand:
    """Its own pod set as a demand, carrying its further pod sets (`gang_of`)."""
    local = quotas.local_queue(w.namespace, w.queue_name)
    own = Demand(
        key=w.name,
        cluster_queue=local.cluster_queue if local else f"(no local queue {w.queue_name})",
        priority=w.priority,
        created_at=w.created_at,
        gpu_type=w.gpu_type if w.gpu_count or any(p.gpu_count for p in w.pod_sets) else None,
        gpu_count=w.gpu_count,
        cpu=w.cpu_cores,
        memory=w.memory_gb,
        pods=w.pod_count,
        preemptible=w.preemptible,
        critical=w.critical,
        reservation=f"reservation-{w.reservation}" if w.reservation else None,
    )
    return gang_of(own, w.pod_sets) if w.pod_sets else own


def _reservation_demand(r: CapacityReservation, gpu_type: str | None) -> Demand:
    return Demand(
        key=f"reservation-{r.id}",
        cluster_queue=r.cluster_queue,
        priority=INFINITE_PRIORITY,
        created_at=r.start,
        gpu_type=gpu_type,
        gpu_count=r.gpu_count,
        cpu=0.0,
        memory=0.0,
        is_reservation=True,
        flavor=r.flavor,
    )


def step(
    workloads: list[SimWorkload],
    nodes: Sequence[Node],
    quotas: QuotaSet,
    now: datetime,
    pace: Pace,
    reservations: Sequence[CapacityReservation] = (),
) -> datetime | None:
    """Advance every workload to `now`; new reservation rows are appended to `workloads` (marked
    `new`). Returns when the next thing is due (None: nothing is)."""
    live = [w for w in workloads if w.phase not in FINISHED]
    holders = [w for w in live if w.phase in (WorkloadPhase.ADMITTED, WorkloadPhase.RUNNING)]
    _honour_requests(live, now)
    _start_and_finish(live, now, pace)
    by_id = {str(r.id): r for r in reservations}
    for row in live:
        if row.kind == RESERVATION and row.phase is WorkloadPhase.RUNNING:
            booked = by_id.get(row.reservation or "")
            if booked is None or not booked.active_at(now):
                row.finished_at = min(now, booked.end) if booked else now
                row.move(WorkloadPhase.SUCCEEDED, "reservation ended")

    freed = {w.gpu_type for w in holders if w.phase in FINISHED}
    """GPU types something gave back in this step before its cycle."""
    model = ClusterModel(nodes, quotas)
    _restore(model, live, quotas, by_id)
    for reservation in reservations:
        if reservation.active_at(now):
            gpu_type = next(
                (
                    n.gpu_type
                    for n in nodes
                    for f in quotas.flavors
                    if f.name == reservation.flavor and f.matches(n) and n.gpu_count
                ),
                None,
            )
            model.enqueue(_reservation_demand(reservation, gpu_type))
    queued = {w.name: w for w in live if w.kind != RESERVATION and w.phase is WorkloadPhase.QUEUED}
    for w in queued.values():
        demand = demand_of(w, quotas)
        model.enqueue(demand)
        if w.reason.endswith(HOLDING) and w.gpu_type not in freed:
            model.set_aside(w.name, demand.gpu_type if demand.gpu_count else None)
    decision = model.cycle(now)
    for victim in decision.preempted:
        w = next(x for x in live if x.name == victim.demand.key)
        w.finished_at = now
        w.move(WorkloadPhase.PREEMPTED, "preempted: evicted for a higher-priority workload")
    for holding in decision.admitted:
        w = queued[holding.demand.key]
        w.place(holding.placements)
        w.admitted_at = now
        hosts = ", ".join(sorted({p.node for p in holding.placements}))
        w.move(WorkloadPhase.ADMITTED, f"admitted on {hosts}")
        if pace.startup_seconds <= 0:
            w.started_at = now
            w.move(WorkloadPhase.RUNNING, "pods running")
    for key, why in {**decision.waiting, **decision.never}.items():
        waiting = queued.get(key)
        if waiting is not None and waiting.phase is WorkloadPhase.QUEUED and waiting.reason != why:
            waiting.reason = why  # as Kueue's QuotaReserved=False message: not a phase change
    for w in queued.values():  # the reason says whether it is set aside, as the model has it
        if w.phase is WorkloadPhase.QUEUED and w.reason.endswith(HOLDING) != (
            w.name in decision.aside
        ):
            w.reason = (
                f"{w.reason}; {HOLDING}"
                if w.name in decision.aside
                else w.reason.removesuffix(f"; {HOLDING}")
            )
    _record_reservations(model, workloads, live, reservations, now)
    due = _next_due(live, pace, reservations, now)
    if decision.again:  # what this cycle kept out may go in Kueue's next one
        due = min(due or now + KUEUE_NEXT_CYCLE, now + KUEUE_NEXT_CYCLE)
    return due


def _honour_requests(live: list[SimWorkload], now: datetime) -> None:
    for w in live:
        if w.request is None:
            continue
        running = w.phase in (WorkloadPhase.ADMITTED, WorkloadPhase.RUNNING)
        if running and w.request_due is not None and w.request_due > now:
            continue  # its containers have their grace period after SIGTERM
        phase = {
            "DELETE": WorkloadPhase.DELETED,
            "FAIL": WorkloadPhase.FAILED,
            "PREEMPT": WorkloadPhase.PREEMPTED,
            "SUCCEED": WorkloadPhase.SUCCEEDED,
        }[w.request]
        w.finished_at = now if w.request_due is None or not running else w.request_due
        w.move(phase, w.request_reason or phase.value.lower())
        w.request = w.request_due = None


def _start_and_finish(live: list[SimWorkload], now: datetime, pace: Pace) -> None:
    for w in live:
        if w.kind == RESERVATION:
            continue
        if w.phase is WorkloadPhase.ADMITTED:
            assert w.admitted_at is not None
            start = w.admitted_at + pace.real(pace.startup_seconds)
            if start <= now:
                w.started_at = start
                w.move(WorkloadPhase.RUNNING, "pods running")
        if w.phase is WorkloadPhase.RUNNING:
            end = _end_of_run(w, pace)
            if end is not None and end[0] <= now:
                w.finished_at = end[0]
                w.move(end[1], end[2])


def _restore(
    model: ClusterModel,
    live: list[SimWorkload],
    quotas: QuotaSet,
    reservations: dict[str, CapacityReservation],
) -> None:
    """Put what already holds resources back into the model: reservations first."""
    rows: dict[str, list[SimWorkload]] = defaultdict(list)
    for w in live:
        if w.kind == RESERVATION and w.phase is WorkloadPhase.RUNNING and w.reservation:
            rows[w.reservation].append(w)
    for reservation_id, held in rows.items():
        booked = reservations[reservation_id]
        demand = _reservation_demand(booked, held[0].gpu_type)
        placements = [Placement(r.node or "", r.gpu_indices, r.flavor) for r in held]
        model.hold(demand, Holding(demand, booked.flavor, None, placements, held[0].created_at))
    for w in live:
        if w.kind == RESERVATION or w.phase not in (WorkloadPhase.ADMITTED, WorkloadPhase.RUNNING):
            continue
        demand = demand_of(w, quotas)
        if demand.reservation is not None and demand.reservation not in model.holdings:
            demand = replace(demand, reservation=None)  # its reservation is over
        assert w.node is not None
        model.hold(
            demand,
            Holding(
                demand,
                w.flavor,
                model.flavors.cpu_flavor_on(demand.cluster_queue, w.node),
                list(w.placements),
                w.started_at or w.admitted_at or w.created_at,
            ),
        )


def _record_reservations(
    model: ClusterModel,
    workloads: list[SimWorkload],
    live: list[SimWorkload],
    reservations: Sequence[CapacityReservation],
    now: datetime,
) -> None:
    """Reservations that took GPUs in this cycle get a row per node for what they now hold."""
    for reservation in reservations:
        holding = model.holdings.get(f"reservation-{reservation.id}")
        if holding is None:
            continue
        rows = {
            w.node: w
            for w in live
            if w.kind == RESERVATION
            and w.reservation == str(reservation.id)
            and w.phase is WorkloadPhase.RUNNING
        }
        for placement in holding.placements:
            row = rows.get(placement.node)
            if row is not None:
                if row.gpu_indices != placement.gpu_indices:
                    row.gpu_indices = placement.gpu_indices
                    row.changed = True
                continue
            row = SimWorkload(
                name=f"rsv-{reservation.id.hex[:16]}-{placement.node}"[:63],
                job_id=str(reservation.id),
                attempt=0,
                priority=INFINITE_PRIORITY,
                gpu_type=None,
                gpu_count=len(placement.gpu_indices),
                cpu_cores=0.0,
                memory_gb=0.0,
                runtime_seconds=None,
                max_duration_seconds=None,
                outcome=WorkloadPhase.SUCCEEDED,
                created_at=now,
                kind=RESERVATION,
                reservation=str(reservation.id),
                phase=WorkloadPhase.RUNNING,
                reason="reserved",
                node=placement.node,
                gpu_indices=placement.gpu_indices,
                flavor=placement.flavor,
                admitted_at=now,
                started_at=now,
            )
            row.new = row.changed = True
            workloads.append(row)
            live.append(row)


def _next_due(
    live: list[SimWorkload],
    pace: Pace,
    reservations: Sequence[CapacityReservation],
    now: datetime,
) -> datetime | None:
    due: list[datetime] = []
    for w in live:
        if w.kind == RESERVATION:
            continue
        if w.phase is WorkloadPhase.ADMITTED and w.admitted_at is not None:
            due.append(w.admitted_at + pace.real(pace.startup_seconds))
        elif w.phase is WorkloadPhase.RUNNING:
            end = _end_of_run(w, pace)
            if end is not None:
                due.append(end[0])
        if w.request is not None and w.request_due is not None:
            due.append(w.request_due)
    for r in reservations:
        if r.cancelled_at is None:
            due.extend(t for t in (r.start, r.end) if t > now)
    return min(due) if due else None
