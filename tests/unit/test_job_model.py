"""The job state machine: the one table of allowed transitions, and what each transition records.

Covers: every (from, to) pair of statuses is either allowed by the table or raises; transitions
stamp actual start and end; each records a JobEvent and a JobChanged for the outbox; a retry is a
new attempt with a new workload name; priority changes raise an event with the old priority.
"""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest

from domain.errors import InvalidTransition
from domain.model.ids import ClusterId, JobId, ProjectId, TenantId
from domain.model.job import (
    ALLOWED_TRANSITIONS,
    ChangeKind,
    DeploymentType,
    Job,
    JobPriority,
    JobStatus,
    JobType,
)
from tests.support.fakes import T0

S = JobStatus

EXPECTED = {
    (S.PENDING, S.QUEUED), (S.PENDING, S.CANCELLED), (S.PENDING, S.FAILED),
    (S.QUEUED, S.ADMITTED), (S.QUEUED, S.CANCELLED), (S.QUEUED, S.FAILED), (S.QUEUED, S.PREEMPTED),
    (S.QUEUED, S.PENDING),
    (S.ADMITTED, S.RUNNING), (S.ADMITTED, S.QUEUED), (S.ADMITTED, S.CANCELLED),
    (S.ADMITTED, S.FAILED), (S.ADMITTED, S.PREEMPTED),
    (S.RUNNING, S.COMPLETED), (S.RUNNING, S.FAILED), (S.RUNNING, S.CANCELLED),
    (S.RUNNING, S.PREEMPTED),
    (S.FAILED, S.PENDING), (S.PREEMPTED, S.PENDING), (S.PREEMPTED, S.CANCELLED),
}  # fmt: skip


def new_job(status: JobStatus = JobStatus.PENDING) -> Job:
    return Job(
        id=JobId(uuid.uuid4()),
        name="train",
        tenant_id=TenantId(uuid.uuid4()),
        project_id=ProjectId(uuid.uuid4()),
        cluster_id=ClusterId(uuid.uuid4()),
        job_type=JobType.BATCH,
        deployment_type=DeploymentType.DOCKER,
        created_at=T0,
        updated_at=T0,
        status=status,
    )


def test_the_table_is_exactly_the_lifecycle() -> None:
    table = {(a, b) for a, targets in ALLOWED_TRANSITIONS.items() for b in targets}
    assert table == EXPECTED
    assert set(ALLOWED_TRANSITIONS) == set(JobStatus)


@pytest.mark.parametrize("source", list(JobStatus))
@pytest.mark.parametrize("target", list(JobStatus))
def test_every_pair_is_allowed_or_refused(source: JobStatus, target: JobStatus) -> None:
    job = new_job(source)
    at = T0 + timedelta(minutes=1)
    if (source, target) in EXPECTED:
        event = job.transition(target, "because", at)
        assert job.status is target
        assert (event.from_status, event.to_status, event.reason, event.at) == (
            source,
            target,
            "because",
            at,
        )
        assert job.changes[-1].kind is ChangeKind.TRANSITION
        assert job.changes[-1].transition == event
    else:
        with pytest.raises(InvalidTransition):
            job.transition(target, "because", at)
        assert job.status is source
        assert job.changes == []


def test_running_and_finishing_stamp_actual_times() -> None:
    job = new_job()
    job.transition(S.QUEUED, "q", T0)
    job.transition(S.ADMITTED, "a", T0 + timedelta(seconds=1))
    job.transition(S.RUNNING, "r", T0 + timedelta(seconds=2))
    job.transition(S.COMPLETED, "done", T0 + timedelta(seconds=10))
    assert job.actual_start == T0 + timedelta(seconds=2)
    assert job.actual_end == T0 + timedelta(seconds=10)
    assert [c.transition.to_status for c in job.changes if c.transition] == [
        S.QUEUED,
        S.ADMITTED,
        S.RUNNING,
        S.COMPLETED,
    ]


def test_event_snapshots_do_not_change_afterwards() -> None:
    job = new_job()
    job.transition(S.QUEUED, "q", T0)
    snapshot = job.changes[-1].job
    job.transition(S.ADMITTED, "a", T0)
    assert snapshot.status is S.QUEUED


def test_retry_is_a_new_attempt_with_a_new_workload_name() -> None:
    job = new_job(S.FAILED)
    first_name = job.workload_name
    later = T0 + timedelta(seconds=30)
    event = job.begin_retry(T0, later, "retry")
    assert (job.status, job.attempt, job.next_attempt_at) == (S.PENDING, 1, later)
    assert event.attempt == 1  # the PENDING event opens the new attempt
    assert job.workload_name != first_name
    assert job.workload_name.endswith("-a1")
    assert job.changes[-1].job.next_attempt_at == later


def test_retry_from_a_live_status_is_refused() -> None:
    job = new_job(S.RUNNING)
    with pytest.raises(InvalidTransition):
        job.begin_retry(T0, T0, "retry")
    assert job.attempt == 0


def test_priority_change_records_the_previous_priority() -> None:
    job = new_job(S.QUEUED)
    job.change_priority(JobPriority.HIGH, T0)
    change = job.changes[-1]
    assert change.kind is ChangeKind.PRIORITY_CHANGED
    assert change.previous_priority is JobPriority.NORMAL
    assert change.previous_view() == (S.QUEUED, JobPriority.NORMAL)


def test_workload_names_are_dns_labels() -> None:
    from domain.names import name_problem

    assert name_problem(new_job().workload_name) is None
