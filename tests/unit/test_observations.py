"""Applying what a cluster reports about a workload.

Covers: the path through intermediate statuses when reports were missed, each step stamped with
the cluster's recorded time; stale and other-attempt reports change nothing; placements are kept;
a preempted attempt is retried automatically with backoff while retries remain, and not after;
a failed attempt waits for the user; a deleted workload cancels its job.
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from domain.model.ids import JobId
from domain.model.job import Job, JobStatus, Placement
from domain.ports.gateways import WorkloadObservation, WorkloadPhase
from domain.services import task_names
from domain.services.observations import ObservationService, transition_path
from tests.support.fakes import T0
from tests.unit.test_job_service import World
from tests.unit.test_submission import GOOD

S = JobStatus

PATHS = [
    (S.PENDING, S.QUEUED, [S.QUEUED]),
    (S.PENDING, S.RUNNING, [S.QUEUED, S.ADMITTED, S.RUNNING]),
    (S.QUEUED, S.COMPLETED, [S.ADMITTED, S.RUNNING, S.COMPLETED]),
    (S.QUEUED, S.FAILED, [S.FAILED]),
    (S.PENDING, S.PREEMPTED, [S.QUEUED, S.PREEMPTED]),
    (S.ADMITTED, S.QUEUED, [S.QUEUED]),
    (S.RUNNING, S.CANCELLED, [S.CANCELLED]),
    (S.RUNNING, S.RUNNING, []),
    (S.RUNNING, S.ADMITTED, []),
    (S.RUNNING, S.QUEUED, []),
    (S.COMPLETED, S.RUNNING, []),
    (S.CANCELLED, S.COMPLETED, []),
    (S.FAILED, S.RUNNING, []),
]


@pytest.mark.parametrize(("current", "target", "path"), PATHS)
def test_transition_path(current: JobStatus, target: JobStatus, path: list[JobStatus]) -> None:
    assert transition_path(current, target) == path


def observation(job: Job, phase: WorkloadPhase, **kw: Any) -> WorkloadObservation:
    return WorkloadObservation(
        job.id,
        job.attempt,
        phase,
        kw.pop("reason", phase.value.lower()),
        T0 + timedelta(seconds=60),
        **kw,
    )


@pytest.fixture
def world() -> World:
    return World()


def service(world: World) -> ObservationService:
    return ObservationService(
        uow=world.uow,
        clock=world.clock,
        jobs=world.service,
    )


async def test_missed_reports_are_walked_through_with_recorded_times(world: World) -> None:
    job = await world.service.submit(world.alice, GOOD)
    admitted, started, finished = (T0 + timedelta(seconds=s) for s in (1, 3, 30))
    placement = Placement("node-0", (0, 1, 2, 3, 4, 5, 6, 7))
    await service(world).apply(
        observation(
            job,
            WorkloadPhase.SUCCEEDED,
            admitted_at=admitted,
            started_at=started,
            finished_at=finished,
            placements=(placement,),
            reason="completed",
        )
    )
    history = [(e.to_status, e.at) for e in world.uow.store.history]
    assert history == [
        (S.PENDING, T0),
        (S.QUEUED, T0 + timedelta(seconds=60)),
        (S.ADMITTED, admitted),
        (S.RUNNING, started),
        (S.COMPLETED, finished),
    ]
    stored = world.stored(job.id)
    assert (stored.actual_start, stored.actual_end) == (started, finished)
    assert stored.placement == placement
    assert [e.sequence for e in world.publisher.published] == [1, 2, 3, 4, 5]


@pytest.mark.parametrize(
    ("phase", "times", "walked"),
    [
        (WorkloadPhase.FAILED, {"admitted_at": 1, "started_at": 3, "finished_at": 9},
         [(S.ADMITTED, 1), (S.RUNNING, 3), (S.FAILED, 9)]),
        (WorkloadPhase.FAILED, {"started_at": 3, "finished_at": 9},
         [(S.ADMITTED, 3), (S.RUNNING, 3), (S.FAILED, 9)]),
        (WorkloadPhase.PREEMPTED, {"admitted_at": 2, "finished_at": 5},
         [(S.ADMITTED, 2), (S.PREEMPTED, 5)]),
        (WorkloadPhase.FAILED, {"finished_at": 4}, [(S.FAILED, 4)]),
    ],
)  # fmt: skip
async def test_a_missed_run_is_walked_through_when_the_report_says_it_ran(
    world: World, phase: WorkloadPhase, times: dict[str, int], walked: list[tuple[S, int]]
) -> None:
    """QUEUED -> FAILED is allowed (a workload refused before it ran), so a failure reported
    with the times it was admitted and started must not skip them: the report of its run was
    missed (a short run between two looks), not the run."""
    job = await world.service.submit(world.alice, GOOD)
    await service(world).apply(observation(job, WorkloadPhase.QUEUED))
    stamps = {key: T0 + timedelta(seconds=100 + s) for key, s in times.items()}
    await service(world).apply(observation(job, phase, **stamps))
    history = [(e.to_status, e.at) for e in world.uow.store.history if e.attempt == 0][2:]
    assert history == [(status, T0 + timedelta(seconds=100 + s)) for status, s in walked]


async def test_placement_is_recorded_when_admitted(world: World) -> None:
    job = await world.service.submit(world.alice, GOOD)
    placement = Placement("node-1", (4, 5))
    await service(world).apply(observation(job, WorkloadPhase.ADMITTED, placements=(placement,)))
    assert world.stored(job.id).placement == placement
    change = world.publisher.published[-1].job_change
    assert change is not None and change.job.placement == placement


async def test_stale_and_foreign_reports_change_nothing(world: World) -> None:
    job = await world.service.submit(world.alice, GOOD)
    svc = service(world)
    await svc.apply(observation(job, WorkloadPhase.RUNNING))
    published = len(world.publisher.published)
    assert await svc.apply(observation(job, WorkloadPhase.ADMITTED)) is None
    assert await svc.apply(replace(observation(job, WorkloadPhase.FAILED), attempt=7)) is None
    assert len(world.publisher.published) == published
    assert world.stored(job.id).status is S.RUNNING


async def test_preemption_retries_automatically_with_backoff(world: World) -> None:
    job = await world.service.submit(world.alice, replace(GOOD, max_retries=1))
    svc = service(world)
    await svc.apply(observation(job, WorkloadPhase.PREEMPTED, reason="evicted by higher"))
    stored = world.stored(job.id)
    assert (stored.status, stored.attempt) == (S.PENDING, 1)
    assert stored.next_attempt_at == world.clock.now() + timedelta(seconds=10)
    retry_task = world.tasks.enqueued[-1]
    assert (retry_task.task, retry_task.kwargs["attempt"]) == (task_names.SUBMIT_WORKLOAD, 1)
    assert retry_task.defer_until == stored.next_attempt_at
    assert [e.to_status for e in world.uow.store.history][-2:] == [S.PREEMPTED, S.PENDING]

    await svc.apply(observation(stored, WorkloadPhase.PREEMPTED))
    stored = world.stored(job.id)
    assert stored.status is S.PREEMPTED  # no retries left
    assert stored.attempt == 1


async def test_a_failure_is_retried_with_backoff_until_the_retries_are_used(
    world: World,
) -> None:
    """Found in production mode: a FAILED job with maxRetries 3 stayed FAILED with retryCount
    0. Each failure starts the next attempt after the backoff, the FAILED kept in its history,
    until the retries are used; the last failure stays."""
    job = await world.service.submit(world.alice, replace(GOOD, max_retries=2))
    svc = service(world)
    for attempt in (0, 1):
        stored = world.stored(job.id)
        await svc.apply(observation(stored, WorkloadPhase.FAILED, reason="exit code 1"))
        stored = world.stored(job.id)
        assert (stored.status, stored.attempt) == (S.PENDING, attempt + 1)
        assert stored.status_message is not None
        assert stored.status_message.startswith("failed (exit code 1): attempt")
        assert stored.next_attempt_at == world.clock.now() + timedelta(seconds=10 * (attempt + 1))
        retry_task = world.tasks.enqueued[-1]
        assert (retry_task.kwargs["attempt"], retry_task.defer_until) == (
            attempt + 1,
            stored.next_attempt_at,
        )
    await svc.apply(observation(world.stored(job.id), WorkloadPhase.FAILED, reason="exit code 1"))
    stored = world.stored(job.id)
    assert (stored.status, stored.status_message, stored.attempt) == (
        S.FAILED,
        "exit code 1",
        2,
    )
    history = [e.to_status for e in world.uow.store.history]
    assert history.count(S.FAILED) == 3 and history.count(S.PENDING) == 3


async def test_a_job_without_retries_stays_failed(world: World) -> None:
    job = await world.service.submit(world.alice, replace(GOOD, max_retries=0))
    await service(world).apply(observation(job, WorkloadPhase.FAILED, reason="exit code 1"))
    stored = world.stored(job.id)
    assert (stored.status, stored.status_message) == (S.FAILED, "exit code 1")
    assert world.tasks.names() == [task_names.SUBMIT_WORKLOAD]  # only the original submission


async def test_deleted_workload_cancels_the_job(world: World) -> None:
    job = await world.service.submit(world.alice, GOOD)
    await service(world).apply(observation(job, WorkloadPhase.DELETED, reason="deleted"))
    assert world.stored(job.id).status is S.CANCELLED


async def test_unknown_job_is_ignored(world: World) -> None:
    job = await world.service.submit(world.alice, GOOD)
    ghost = replace(observation(job, WorkloadPhase.RUNNING), job_id=JobId(uuid.UUID(int=1)))
    assert await service(world).apply(ghost) is None
