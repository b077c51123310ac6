"""Container restarts, from the pods a cluster reports to a deployment's worker.

Covers: a service's live pods' restart counts and last termination time in its observation
(none without pods); applying observations records a PLACED change only when the count (or the
time) changes, and only of the job's current hand-over; a worker's restarts are its job's
retries plus its current attempt's container restarts, a new attempt starting from none.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from adapters.kubernetes.kueue.services import container_restarts, observe_service
from domain.model.deployment import WorkerStatus
from domain.model.ids import JobId
from domain.model.job import ChangeKind, JobStatus
from domain.ports.gateways import WorkloadObservation, WorkloadPhase
from domain.services.observations import ObservationService
from tests.unit.test_deployments import World as DeploymentWorld
from tests.unit.test_job_service import World
from tests.unit.test_submission import GOOD

T0 = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
CRASHED = datetime(2026, 11, 22, 12, 5, tzinfo=UTC)


def pod(restarts: int, finished: str | None = None, *, ready: bool = True) -> dict[str, Any]:
    last = {"terminated": {"exitCode": 1, "finishedAt": finished}} if finished else {}
    return {
        "metadata": {"name": "p", "labels": {"bud.ai/release": "r"}},
        "spec": {"nodeName": "gpu-0"},
        "status": {
            "conditions": [
                {
                    "type": "Ready",
                    "status": str(ready),
                    "lastTransitionTime": "2026-11-22T12:00:00Z",
                }
            ],
            "containerStatuses": [{"name": "main", "restartCount": restarts, "lastState": last}],
        },
    }


def test_the_pods_restart_counts_and_last_termination_reach_the_observation() -> None:
    assert container_restarts([]) == (None, None)
    assert container_restarts([pod(0)]) == (0, None)
    two = [pod(2, "2026-11-22T12:05:00Z"), pod(1, "2026-11-22T12:01:00Z")]
    assert container_restarts(two) == (3, CRASHED)
    job_id = JobId(uuid.uuid4())
    seen = observe_service((job_id, 0), [pod(2, "2026-11-22T12:05:00Z")], {}, observed_at=T0)
    assert (seen.phase, seen.restarts, seen.last_restart_at) == (WorkloadPhase.RUNNING, 2, CRASHED)


class RestartWorld(World):
    def __init__(self) -> None:
        super().__init__()
        self.observations = ObservationService(uow=self.uow, clock=self.clock, jobs=self.service)

    def running(
        self, job_id: JobId, restarts: int | None, at: datetime | None = None
    ) -> WorkloadObservation:
        return WorkloadObservation(
            job_id,
            self.stored(job_id).attempt,
            WorkloadPhase.RUNNING,
            "running",
            self.clock.now(),
            admitted_at=T0,
            started_at=T0,
            restarts=restarts,
            last_restart_at=at,
        )


async def test_a_restart_is_recorded_once_per_change_of_the_count() -> None:
    world = RestartWorld()
    job = await world.service.submit(world.alice, GOOD)
    world.stored(job.id).transition(JobStatus.QUEUED, "queued", T0)
    await world.observations.apply(world.running(job.id, 0))
    assert world.stored(job.id).status is JobStatus.RUNNING
    assert world.stored(job.id).container_restarts == (0, None)

    placed = len(world.publisher.published)
    assert await world.observations.apply(world.running(job.id, 0)) is None
    assert await world.observations.apply(world.running(job.id, None)) is None  # not said
    changed = await world.observations.apply(world.running(job.id, 2, CRASHED))
    assert changed is not None and changed.container_restarts == (2, CRASHED)
    assert await world.observations.apply(world.running(job.id, 2, CRASHED)) is None
    kinds = [e.change.kind for e in world.publisher.published[placed:]]
    assert kinds == [ChangeKind.PLACED]
    assert world.stored(job.id).outputs["container_restarts"]["count"] == 2


async def test_a_worker_counts_retries_and_its_current_pods_restarts() -> None:
    world = DeploymentWorld()
    deployment = await world.service.deploy(world.alice, world.request(replicas=1))
    (job,) = world.replica_jobs(deployment)
    world.run(job)
    job.report_restarts(3, CRASHED, world.clock.now())
    await world.service.refresh(deployment.id)
    (worker,) = world.uow.store.deployments[deployment.id].workers
    assert (worker.status, worker.restarts, worker.last_restart_at) == (
        WorkerStatus.RUNNING,
        3,
        CRASHED,
    )

    now = world.clock.now()
    job = world.uow.store.jobs[job.id]
    job.transition(JobStatus.FAILED, "engine died", now)
    job.begin_retry(now, now + timedelta(seconds=5), "retrying")
    await world.service.refresh(deployment.id)
    (worker,) = world.uow.store.deployments[deployment.id].workers
    assert worker.restarts == 1  # one retry; the new attempt's containers have not restarted
    assert job.container_restarts == (0, None)
