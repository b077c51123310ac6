"""Task functions. Each takes the runner's context and JSON-serialisable keyword arguments and
calls one domain service; the context carries the services under `workloads`. Tasks may run more
than once: the services they call are idempotent.
"""

from __future__ import annotations

import uuid
from typing import Any

from adapters.tasks import TaskSpec
from domain.errors import Conflict
from domain.model.addons import Addon
from domain.model.ids import BenchmarkId, ClusterId, DeploymentId, JobId
from domain.ports.tasks import RetryTask
from domain.services import task_names
from domain.services.addons import INSTALL_TRIES, AddonService
from domain.services.benchmark_runs import BenchmarkRunner
from domain.services.deployments import DeploymentService
from domain.services.logs import LogService
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


async def keep_logs(ctx: dict[str, Any], *, job_id: str, attempt: int) -> None:
    """Keep a failed attempt's last log lines with it (its pods go soon after)."""
    logs: LogService = ctx["logs"]
    await logs.keep(JobId(uuid.UUID(job_id)), attempt, try_number=ctx.get("job_try", 1))


def _registry(ctx: dict[str, Any]) -> ClusterRegistry:
    registry: ClusterRegistry = ctx["registry"]
    return registry


async def connect_cluster(ctx: dict[str, Any], *, cluster_id: str) -> None:
    await _registry(ctx).connect(ClusterId(uuid.UUID(cluster_id)))


async def reconcile_quotas(ctx: dict[str, Any], *, cluster_id: str) -> None:
    """Put a real cluster's quota model onto it as Kueue objects (after a quota change)."""
    await _registry(ctx).reconcile_quotas(ClusterId(uuid.UUID(cluster_id)))


async def install_addon(
    ctx: dict[str, Any], *, cluster_id: str, addon: str, request_id: str
) -> None:
    """Install one cluster add-on the operator asked for, as a Helm release (when missing)."""
    service: AddonService = ctx["addons"]
    await service.install(
        ClusterId(uuid.UUID(cluster_id)),
        Addon(addon),
        request_id,
        try_number=ctx.get("job_try", 1),
    )


async def sync_clusters(ctx: dict[str, Any]) -> None:
    """The periodic full sync: queues a connection attempt per real cluster (arq cron; a loop
    in-process)."""
    await _registry(ctx).sync_all()


async def refresh_deployment(ctx: dict[str, Any], *, deployment_id: str) -> None:
    """Derive a deployment's workers and status again (one of its replica jobs changed)."""
    service: DeploymentService = ctx["deployments"]
    try:
        await service.refresh(DeploymentId(uuid.UUID(deployment_id)))
    except Conflict:
        raise RetryTask(0.2) from None  # another refresh wrote first: read it again


async def start_benchmark(ctx: dict[str, Any], *, benchmark_id: str) -> None:
    """Start a benchmark's run in this process (its job runs); returns at once, the run
    goes on in the background (`BenchmarkRunner`)."""
    runner: BenchmarkRunner = ctx["benchmark_runner"]
    await runner.start(BenchmarkId(uuid.UUID(benchmark_id)))


async def settle_benchmark(ctx: dict[str, Any], *, benchmark_id: str) -> None:
    runner: BenchmarkRunner = ctx["benchmark_runner"]
    await runner.settle(BenchmarkId(uuid.UUID(benchmark_id)))


LONGEST_TASK_SECONDS = 30
"""No task kind runs longer. arq keeps a running task locked for the longest timeout of any
kind + 10 s, so this is what bounds how long a worker that died keeps its tasks from the others
(it was 610 s, when the cluster sync ran every cluster in one task). Past that, another worker
runs the task again; overdue submissions are queued again sooner, with a fresh key (the sweeper),
and a cancel a dead worker held is done by the reconciler's sweep."""

TASKS: dict[str, TaskSpec] = {
    spec.name: spec
    for spec in (
        # a hand-over or a take-back: one create/delete (a Helm install, without waiting)
        TaskSpec(task_names.SUBMIT_WORKLOAD, submit_workload, timeout_seconds=30, max_tries=12),
        TaskSpec(task_names.CANCEL_WORKLOAD, cancel_workload, timeout_seconds=30, max_tries=12),
        TaskSpec(
            task_names.SET_WORKLOAD_PRIORITY,
            set_workload_priority,
            timeout_seconds=15,
            max_tries=6,
        ),
        # one cluster: a handful of requests, each with its own 10 s limits
        TaskSpec(task_names.CONNECT_CLUSTER, connect_cluster, timeout_seconds=30, max_tries=3),
        TaskSpec(task_names.RECONCILE_QUOTAS, reconcile_quotas, timeout_seconds=30, max_tries=3),
        # one add-on: a helm install, without waiting for its pods
        TaskSpec(
            task_names.INSTALL_ADDON,
            install_addon,
            timeout_seconds=30,
            max_tries=INSTALL_TRIES,
        ),
        # queues one connection attempt per cluster: no cluster holds up another
        TaskSpec(task_names.SYNC_CLUSTERS, sync_clusters, timeout_seconds=15, max_tries=1),
        # a deployment's view, a benchmark's claim or end: a few statements each
        TaskSpec(
            task_names.REFRESH_DEPLOYMENT, refresh_deployment, timeout_seconds=15, max_tries=10
        ),
        TaskSpec(task_names.START_BENCHMARK, start_benchmark, timeout_seconds=15, max_tries=3),
        TaskSpec(task_names.SETTLE_BENCHMARK, settle_benchmark, timeout_seconds=15, max_tries=3),
        # a failed attempt's pods' last lines: one log read per pod
        TaskSpec(task_names.KEEP_LOGS, keep_logs, timeout_seconds=30, max_tries=6),
    )
}
assert max(spec.timeout_seconds for spec in TASKS.values()) <= LONGEST_TASK_SECONDS
