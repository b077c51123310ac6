"""Job commands with fakes of every port.

Covers: submit stores a PENDING job with its first history event and outbox event, then queues its
hand-over; idempotency on (tenant, project, key), including a race; validation and project checks store
nothing; cancel (and cancelling a finished job); retry bounded by max_retries with backoff; priority
changes; tenant isolation in reads and commands; paging limits; the submission sweeper.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import replace
from datetime import timedelta

import pytest

from domain.errors import Conflict, Forbidden, NotFound, ValidationFailed
from domain.model.cluster import ClusterStatus
from domain.model.ids import ClusterId, JobId, ProjectId, TenantId
from domain.model.job import ChangeKind, Job, JobPriority, JobStatus, TimeWindow
from domain.model.principal import TENANT_DEFAULT_SCOPES, Principal, Scope
from domain.ports.events import StoredEvent
from domain.ports.repositories import JobFilter
from domain.services import task_names
from domain.services.jobs import JobService
from domain.services.reactions import Reactions
from tests.support.fakes import (
    FakeClock,
    FakeHub,
    FakeJobRepository,
    FakePublisher,
    FakeTaskQueue,
    FakeUnitOfWorkFactory,
    install_cluster,
    make_cluster,
)
from tests.unit.test_submission import GOOD


class HubPublisher(FakePublisher):
    """Publishes to a hub as well, as the in-process publisher does."""

    def __init__(self, hub: FakeHub) -> None:
        super().__init__()
        self.hub = hub

    async def publish(self, events: Sequence[StoredEvent]) -> None:
        await super().publish(events)
        self.hub.deliver(events)


class World:
    def __init__(self, publisher: FakePublisher | None = None) -> None:
        self.clock = FakeClock()
        self.uow = FakeUnitOfWorkFactory()
        self.tasks = FakeTaskQueue()
        self.publisher = publisher if publisher is not None else FakePublisher()
        self.cluster = install_cluster(self.uow.store, make_cluster(GOOD.cluster_id))
        self.service = JobService(
            uow=self.uow,
            clock=self.clock,
            tasks=self.tasks,
            backoff=lambda attempt: 10.0 * attempt,
        )
        # what follows each commit (notify, hand over, take back...), as the wiring sets it
        self.uow.after_commit = Reactions(publisher=self.publisher, tasks=self.tasks, uow=self.uow)
        self.alice = Principal(TenantId(uuid.uuid4()), TENANT_DEFAULT_SCOPES)
        self.bob = Principal(TenantId(uuid.uuid4()), TENANT_DEFAULT_SCOPES)

    def stored(self, job_id: JobId) -> Job:
        return self.uow.store.jobs[job_id]


@pytest.fixture
def world() -> World:
    return World()


async def test_submit_stores_pending_job_with_history_and_event(world: World) -> None:
    job = await world.service.submit(world.alice, GOOD)
    stored = world.stored(job.id)
    assert stored.status is JobStatus.PENDING
    assert stored.tenant_id == world.alice.tenant_id
    assert [(e.from_status, e.to_status) for e in world.uow.store.history] == [
        (None, JobStatus.PENDING)
    ]
    [event] = world.publisher.published
    assert (event.sequence, event.change.kind) == (1, ChangeKind.SUBMITTED)
    [task] = world.tasks.enqueued
    assert task.task == task_names.SUBMIT_WORKLOAD
    assert task.kwargs == {"job_id": str(job.id), "attempt": 0}


async def test_same_idempotency_key_returns_the_same_job(world: World) -> None:
    sub = replace(GOOD, idempotency_key="run-42")
    first = await world.service.submit(world.alice, sub)
    second = await world.service.submit(world.alice, replace(sub, name="other-name"))
    assert second.id == first.id
    assert len(world.uow.store.jobs) == 1
    other_tenant = await world.service.submit(world.bob, sub)
    assert other_tenant.id != first.id


async def test_a_key_used_in_another_project_is_unused_in_this_one(world: World) -> None:
    """Found from outside: a project-restricted token read another project's job (its whole
    spec and env) by submitting with that job's idempotency key; then a refusal still told it
    the key was taken there. Now the key is the project's: the token's submission is made as if
    nobody had used the key, and a repeat of it answers with that job."""
    secret = await world.service.submit(
        world.alice, replace(GOOD, idempotency_key="shared", spec={"env": {"TOKEN": "s3cret"}})
    )
    other_project = ProjectId(uuid.uuid4())
    restricted = Principal(
        world.alice.tenant_id, frozenset({Scope.JOBS_WRITE}), frozenset({other_project})
    )
    sub = replace(GOOD, project_id=other_project, idempotency_key="shared")
    own = await world.service.submit(restricted, sub)
    assert own.id != secret.id and own.project_id == other_project and own.spec == GOOD.spec
    assert (await world.service.submit(restricted, sub)).id == own.id
    assert (
        await world.service.submit(world.alice, replace(GOOD, idempotency_key="shared"))
    ).id == secret.id
    assert len(world.uow.store.jobs) == 2


async def test_idempotency_race_returns_the_winner(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    sub = replace(GOOD, idempotency_key="race")
    winner = await world.service.submit(world.alice, sub)
    real_lookup = FakeJobRepository.get_by_idempotency_key
    lookups = 0

    async def not_yet_committed(
        self: FakeJobRepository, tenant_id: TenantId, project_id: ProjectId, key: str
    ) -> Job | None:
        nonlocal lookups
        lookups += 1
        if lookups == 1:  # the loser looked before the winner committed
            return None
        return await real_lookup(self, tenant_id, project_id, key)

    monkeypatch.setattr(FakeJobRepository, "get_by_idempotency_key", not_yet_committed)
    loser = await world.service.submit(world.alice, sub)
    assert loser.id == winner.id
    assert len(world.uow.store.jobs) == 1
    assert lookups == 2


async def test_invalid_submission_stores_nothing(world: World) -> None:
    with pytest.raises(ValidationFailed) as err:
        await world.service.submit(world.alice, replace(GOOD, name="Nope"))
    assert err.value.issues[0].field == "name"
    assert world.uow.store.jobs == {} and world.publisher.published == []
    assert world.tasks.enqueued == []


async def test_unknown_cluster_stores_nothing(world: World) -> None:
    with pytest.raises(ValidationFailed) as err:
        await world.service.submit(world.alice, replace(GOOD, cluster_id=ClusterId(uuid.uuid4())))
    assert [i.field for i in err.value.issues] == ["cluster_id"]
    assert world.uow.store.jobs == {}


async def test_project_outside_the_token_is_forbidden(world: World) -> None:
    limited = replace(world.alice, project_ids=frozenset({ProjectId(uuid.uuid4())}))
    with pytest.raises(Forbidden):
        await world.service.submit(limited, GOOD)
    assert world.uow.store.jobs == {}


async def test_cancel_then_cancel_again_conflicts(world: World) -> None:
    job = await world.service.submit(world.alice, GOOD)
    cancelled = await world.service.cancel(world.alice, job.id, "no longer needed")
    assert cancelled.status is JobStatus.CANCELLED
    assert world.stored(job.id).status_message == "no longer needed"
    assert task_names.CANCEL_WORKLOAD in world.tasks.names()
    with pytest.raises(Conflict) as err:
        await world.service.cancel(world.alice, job.id, None)
    assert err.value.code == "ALREADY_FINISHED"


@pytest.mark.parametrize("finished", [JobStatus.COMPLETED, JobStatus.FAILED])
async def test_cancelling_a_finished_job_conflicts(world: World, finished: JobStatus) -> None:
    job = await world.service.submit(world.alice, GOOD)
    world.stored(job.id).status = finished
    with pytest.raises(Conflict):
        await world.service.cancel(world.alice, job.id, None)
    assert world.stored(job.id).status is finished


async def test_other_tenants_jobs_are_invisible(world: World) -> None:
    job = await world.service.submit(world.alice, GOOD)
    assert await world.service.get(world.bob, job.id) is None
    with pytest.raises(NotFound):
        await world.service.cancel(world.bob, job.id, None)
    with pytest.raises(NotFound):
        await world.service.change_priority(world.bob, job.id, JobPriority.HIGH)
    page = await world.service.page(world.bob, JobFilter(), first=10, after=None)
    assert page.jobs == []
    assert (await world.service.events(world.bob, [job.id]))[job.id] == []
    assert world.stored(job.id).status is JobStatus.PENDING


async def test_project_limited_token_sees_only_its_projects(world: World) -> None:
    job = await world.service.submit(world.alice, GOOD)
    limited = replace(world.alice, project_ids=frozenset({ProjectId(uuid.uuid4())}))
    assert await world.service.get(limited, job.id) is None
    assert (await world.service.page(limited, JobFilter(), first=5, after=None)).jobs == []


async def test_retry_after_failure_backs_off_and_is_bounded(world: World) -> None:
    job = await world.service.submit(world.alice, replace(GOOD, max_retries=2))
    for attempt in (1, 2):
        world.stored(job.id).status = JobStatus.FAILED
        retried = await world.service.retry(world.alice, job.id)
        assert (retried.status, retried.attempt) == (JobStatus.PENDING, attempt)
        assert retried.next_attempt_at == world.clock.now() + timedelta(seconds=10.0 * attempt)
        task = world.tasks.enqueued[-1]
        assert task.key == f"submit:{job.id}:{attempt}"
        assert task.defer_until == retried.next_attempt_at
    world.stored(job.id).status = JobStatus.FAILED
    with pytest.raises(Conflict) as err:
        await world.service.retry(world.alice, job.id)
    assert err.value.code == "RETRIES_EXHAUSTED"
    assert world.stored(job.id).attempt == 2


@pytest.mark.parametrize(
    ("max_retries", "message"),
    [
        (0, "job train-llama is FAILED and has no retries (maxRetries is 0)"),
        (1, "job train-llama is FAILED and has used its 1 retry"),
        (3, "job train-llama is FAILED and has used all 3 retries"),
    ],
)
async def test_a_refused_retry_counts_the_retries_in_words(
    world: World, max_retries: int, message: str
) -> None:
    job = await world.service.submit(world.alice, replace(GOOD, max_retries=max_retries))
    world.stored(job.id).attempt = max_retries
    world.stored(job.id).status = JobStatus.FAILED
    with pytest.raises(Conflict) as err:
        await world.service.retry(world.alice, job.id)
    assert (err.value.code, str(err.value)) == ("RETRIES_EXHAUSTED", message)


async def test_retry_of_a_live_job_conflicts(world: World) -> None:
    job = await world.service.submit(world.alice, GOOD)
    with pytest.raises(Conflict) as err:
        await world.service.retry(world.alice, job.id)
    assert err.value.code == "NOT_RETRYABLE"


async def test_priority_change(world: World) -> None:
    job = await world.service.submit(world.alice, GOOD)
    world.stored(job.id).status = JobStatus.QUEUED
    changed = await world.service.change_priority(world.alice, job.id, JobPriority.HIGH)
    assert changed.priority is JobPriority.HIGH
    assert world.publisher.published[-1].change.kind is ChangeKind.PRIORITY_CHANGED
    assert task_names.SET_WORKLOAD_PRIORITY in world.tasks.names()
    events_before = len(world.publisher.published)
    await world.service.change_priority(world.alice, job.id, JobPriority.HIGH)
    assert len(world.publisher.published) == events_before  # no change, no event


async def test_preemptible_job_cannot_become_critical(world: World) -> None:
    job = await world.service.submit(world.alice, replace(GOOD, preemptible=True))
    with pytest.raises(ValidationFailed) as err:
        await world.service.change_priority(world.alice, job.id, JobPriority.CRITICAL)
    assert err.value.issues[0].field == "priority"


async def test_page_size_is_bounded(world: World) -> None:
    for bad in (0, 101):
        with pytest.raises(ValidationFailed):
            await world.service.page(world.alice, JobFilter(), first=bad, after=None)


async def test_sweeper_requeues_overdue_submissions(world: World) -> None:
    job = await world.service.submit(world.alice, GOOD)
    world.tasks.enqueued.clear()  # as if the process died before the task reached the queue
    assert await world.service.sweep_due_submissions(grace=timedelta(seconds=30)) == 0
    world.clock.advance(31)
    assert await world.service.sweep_due_submissions(grace=timedelta(seconds=30)) == 1
    [first] = world.tasks.enqueued
    assert first.key.startswith(f"submit:{job.id}:0:sweep-")
    # a second sweep in the same period is the same key (several processes sweep)...
    assert await world.service.sweep_due_submissions(grace=timedelta(seconds=30)) == 1
    assert {t.key for t in world.tasks.enqueued} == {first.key}
    # ...the next period's is fresh: a task a dead worker still holds does not hold the job back
    world.clock.advance(30)
    await world.service.sweep_due_submissions(grace=timedelta(seconds=30))
    assert len({t.key for t in world.tasks.enqueued}) == 2


async def test_sweeper_leaves_jobs_that_wait_for_something(world: World) -> None:
    now = world.clock.now()
    shut = TimeWindow((now + timedelta(hours=2)).time(), (now + timedelta(hours=3)).time())
    await world.service.submit(world.alice, replace(GOOD, name="later", window=shut))
    waiting = await world.service.submit(world.alice, replace(GOOD, name="first"))
    dependent = await world.service.submit(
        world.alice, replace(GOOD, name="then", depends_on=(waiting.id,))
    )
    world.tasks.enqueued.clear()
    world.clock.advance(31)
    assert await world.service.sweep_due_submissions(grace=timedelta(seconds=30)) == 1
    assert [t.kwargs["job_id"] for t in world.tasks.enqueued] == [str(waiting.id)]
    assert world.stored(dependent.id).status is JobStatus.PENDING  # handed over after `first`

    world.tasks.enqueued.clear()
    unanswering = replace(world.cluster, status=ClusterStatus.NOT_AVAILABLE)
    world.uow.store.clusters[world.cluster.id] = unanswering  # its reconnect hands over
    world.clock.advance(31)
    assert await world.service.sweep_due_submissions(grace=timedelta(seconds=30)) == 0
