"""Task functions. Each takes the runner's context and JSON-serialisable keyword arguments and
calls one domain service; the context carries the services under `workloads`. Tasks may run more
than once: the services they call are idempotent.
"""

from __future__ import annotations

import uuid
from typing import Any

from adapters.tasks import TaskSpec
from domain.model.ids import ClusterId, JobId
from domain.services import task_names
from domain.services.registry import ClusterRegistry
from domain.services.workloads import WorkloadService


def _service(ctx: dict[str, Any]) -> WorkloadService:
    service: WorkloadService = ctx["workloads"]
    return service


async def submit_workload(ctx: dict[str, Any], *, job_id: str, attempt: int) -> bool:
    return await _service(ctx).submit(
        JobId(uuid.UUID(job_id)), attempt, try_number=ctx.get("job_try", 1)
    )


async def cancel_workload(ctx: dict[str, Any], *, job_id: str, attempt: int) -> None:
    await _service(ctx).cancel(JobId(uuid.UUID(job_id)), attempt, try_number=ctx.get("job_try", 1))


async def set_workload_priority(ctx: dict[str, Any], *, job_id: str, attempt: int) -> None:
    await _service(ctx).set_priority(
        JobId(uuid.UUID(job_id)), attempt, try_number=ctx.get("job_try", 1)
    )


def _registry(ctx: dict[str, Any]) -> ClusterRegistry:
    registry: ClusterRegistry = ctx["registry"]
    return registry


async def connect_cluster(ctx: dict[str, Any], *, cluster_id: str) -> None:
    await _registry(ctx).connect(ClusterId(uuid.UUID(cluster_id)))


async def reconcile_quotas(ctx: dict[str, Any], *, cluster_id: str) -> None:
    """Put a real cluster's quota model onto it as Kueue objects (after a quota change)."""
    await _registry(ctx).reconcile_quotas(ClusterId(uuid.UUID(cluster_id)))


async def sync_clusters(ctx: dict[str, Any]) -> None:
    """The periodic full sync of every real cluster (arq cron; a loop in-process)."""
    await _registry(ctx).sync_all()


TASKS: dict[str, TaskSpec] = {
    spec.name: spec
    for spec in (
        TaskSpec(task_names.SUBMIT_WORKLOAD, submit_workload, timeout_seconds=120, max_tries=12),
        TaskSpec(task_names.CANCEL_WORKLOAD, cancel_workload, timeout_seconds=120, max_tries=12),
        TaskSpec(
            task_names.SET_WORKLOAD_PRIORITY,
            set_workload_priority,
            timeout_seconds=60,
            max_tries=6,
        ),
        TaskSpec(task_names.CONNECT_CLUSTER, connect_cluster, timeout_seconds=120, max_tries=3),
        TaskSpec(task_names.SYNC_CLUSTERS, sync_clusters, timeout_seconds=600, max_tries=1),
        TaskSpec(task_names.RECONCILE_QUOTAS, reconcile_quotas, timeout_seconds=300, max_tries=3),
    )
}
