"""How much of its quota each ClusterQueue of a cluster uses: a row per (flavor, resource) of its
quota, with what its admitted and running jobs hold, what they borrow, and the reservations."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from domain.model.job import Job, JobStatus
from domain.model.quota import (
    CPU,
    GPU_LABEL,
    MEMORY,
    ClusterQueue,
    FlavorQuotas,
    QuotaSet,
    ResourceFlavor,
    gpu_resource,
    tenant_namespace,
)
from domain.model.reservation import CapacityReservation

WAITING = frozenset({JobStatus.PENDING, JobStatus.QUEUED})
HOLDING = frozenset({JobStatus.ADMITTED, JobStatus.RUNNING})


@dataclass(frozen=True)
class FlavorUsage:
    """One (flavor, resource) row of a ClusterQueue: its quota and what holds it now."""

    flavor: str
    resource: str
    nominal_quota: float
    borrowing_limit: float | None
    lending_limit: float | None
    used: float
    borrowed: float
    reserved: int
    pending_workloads: int
    admitted_workloads: int


def queue_of(job: Job, quotas: QuotaSet) -> str | None:
    """The ClusterQueue a job is submitted to: through its LocalQueue in its tenant's namespace."""
    local = quotas.local_queue(tenant_namespace(job.tenant_id), job.queue_name)
    return local.cluster_queue if local else None


def _used(resource: str, flavor: str, cpu_flavor: str | None, holding: Sequence[Job]) -> float:
    if resource in (CPU, MEMORY):
        wanted = (
            j.resources.total_cpu_cores if resource == CPU else j.resources.total_memory_gb
            for j in holding
        )
        return float(sum(wanted)) if flavor == cpu_flavor else 0.0
    return float(
        sum(
            _gpus_in(j, flavor)
            for j in holding
            if j.placement is not None and gpu_resource(j.resources.gpu_type) == resource
        )
    )


def _gpus_in(job: Job, flavor: str) -> int:
    """The job's GPUs charged to `flavor`: each pod's on its placement's flavor (pod sets may
    land on different flavors), or all on the first placement's when the cluster reported
    fewer placements than pods."""
    pods = job.resources.pod_gpus
    if len(job.placements) == len(pods):
        return sum(gpus for p, gpus in zip(job.placements, pods, strict=True) if p.flavor == flavor)
    first = job.placement
    return job.resources.total_gpus if first is not None and first.flavor == flavor else 0


def _reserved_resource(fq: FlavorQuotas, flavor: ResourceFlavor | None) -> str | None:
    """The resource reservations of a flavor hold: its GPU product's, else its first non-CPU."""
    names = [q.name for q in fq.resources]
    if flavor is not None and GPU_LABEL in flavor.node_labels:
        own = gpu_resource(flavor.node_labels[GPU_LABEL])
        return own if own in names else None
    return next((n for n in names if n not in (CPU, MEMORY)), None)


def _queue_usage(
    queue: ClusterQueue,
    jobs: Sequence[Job],
    reservations: Sequence[CapacityReservation],
    flavors: Mapping[str, ResourceFlavor],
) -> tuple[FlavorUsage, ...]:
    holding = [j for j in jobs if j.status in HOLDING]
    waiting = sum(1 for j in jobs if j.status in WAITING)
    cpu_flavors = queue.flavors_for(CPU)
    cpu_flavor = cpu_flavors[0].flavor if cpu_flavors else None
    rows: list[FlavorUsage] = []
    for group in queue.resource_groups:
        for fq in group.flavors:
            held = _reserved_resource(fq, flavors.get(fq.flavor))
            booked = sum(r.gpu_count for r in reservations if r.flavor == fq.flavor)
            for quota in fq.resources:
                used = _used(quota.name, fq.flavor, cpu_flavor, holding)
                rows.append(
                    FlavorUsage(
                        flavor=fq.flavor,
                        resource=quota.name,
                        nominal_quota=quota.nominal_quota,
                        borrowing_limit=quota.borrowing_limit,
                        lending_limit=quota.lending_limit,
                        used=used,
                        borrowed=max(0.0, used - quota.nominal_quota),
                        reserved=booked if quota.name == held else 0,
                        pending_workloads=waiting,
                        admitted_workloads=len(holding),
                    )
                )
    return tuple(rows)


def cluster_queue_usage(
    quotas: QuotaSet,
    jobs: Iterable[Job],
    reservations: Iterable[CapacityReservation],
    now: datetime,
) -> dict[str, tuple[FlavorUsage, ...]]:
    """For each ClusterQueue of one cluster, a row per (flavor, resource) of its quota.

    `used` sums the requests of the queue's ADMITTED and RUNNING jobs: GPUs against the flavor
    they were admitted under (`placement.flavor`), cores and GB against the queue's CPU flavor
    (the first covering "cpu"). `reserved` is the GPUs of its reservations active at `now`.
    """
    by_queue: dict[str, list[Job]] = defaultdict(list)
    for job in jobs:
        if (name := queue_of(job, quotas)) is not None:
            by_queue[name].append(job)
    active = [r for r in reservations if r.active_at(now)]
    flavors = {f.name: f for f in quotas.flavors}
    return {
        q.name: _queue_usage(
            q, by_queue[q.name], [r for r in active if r.cluster_queue == q.name], flavors
        )
        for q in quotas.cluster_queues
    }
