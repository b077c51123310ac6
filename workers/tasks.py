"""Task functions. Each takes the runner's context and JSON-serialisable keyword arguments and
calls one domain service; the context carries the services under `workloads`. Tasks may run more
than once: the services they call are idempotent.
"""

from __future__ import annotations

import uuid
from typing import Any

from adapters.tasks import TaskSpec
from domain.model.ids import JobId
from domain.services import task_names
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
    )
}
