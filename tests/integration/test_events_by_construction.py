"""No committed change without its event, by construction, on real PostgreSQL.

Covers: random sequences of commands and cluster observations (submit, cancel, re-prioritise,
retry, workload reports of every phase, placements arriving late, reports about older attempts)
leave, for every job, exactly one outbox event per committed change: its history rows are its
SUBMITTED and TRANSITION events one for one, the last event carries the job as stored, and no
two of its events repeat each other; a job changed other than through a method that records the
change is refused at commit (nothing stored); what a commit sets off runs after the unit of work
has given its connection back (one connection per unit of work).
"""

from __future__ import annotations

import itertools
import random
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import replace
from datetime import timedelta

import pytest
from sqlalchemy.pool import QueuePool

from adapters.db.uow import ChangeWithoutEvent
from adapters.shapes.documents import job_to_document
from budcluster.bootstrap import App
from domain.errors import DomainError
from domain.model.ids import ClusterId, JobId
from domain.model.job import ChangeKind, Job, JobChanged, JobPriority, Placement
from domain.ports.events import StoredEvent
from domain.ports.gateways import WorkloadObservation, WorkloadPhase
from domain.ports.unit_of_work import TenantScope
from tests.integration.test_app_flows import ALICE, make_app, sim_cluster, submission

PHASES = list(WorkloadPhase)
PLACES: list[tuple[Placement, ...]] = [
    (),
    (Placement("node-a", (0, 1)),),
    (Placement("node-b", (2, 3)),),
    (Placement("node-a", (0, 1)), Placement("node-b", (2, 3))),
]


@pytest.fixture
async def app(pg_url: str) -> AsyncIterator[App]:
    made = await make_app(pg_url)  # not started: no cluster loop runs beside the test's steps
    yield made
    await made.close()


def visible(job: Job) -> tuple[object, ...]:
    """What a subscriber must be able to know of a job from its last event."""
    return (
        job.status,
        job.attempt,
        job.priority,
        job.placements,
        job.status_message,
        job.next_attempt_at,
    )


async def play(
    app: App,
    rng: random.Random,
    steps: int,
    each: Callable[[ClusterId], Awaitable[None]] | None = None,
) -> list[JobId]:
    """Random commands and cluster reports; `each` runs after every step."""
    cluster = await sim_cluster(app)
    jobs: list[JobId] = []
    ended: set[JobId] = set()  # the jobs that reached a final status (still used, less often)
    now = app.clock.now()
    for step in range(steps):
        roll = rng.random()
        try:
            if not jobs or roll < 0.12:
                sub = submission(cluster.id, max_retries=rng.choice([0, 2, 5]))
                jobs.append((await app.jobs.submit(ALICE, sub)).id)
                continue
            live = [j for j in jobs if j not in ended]
            job_id = rng.choice(live if live and rng.random() < 0.85 else jobs)
            current = await app.jobs.get(ALICE, job_id)
            assert current is not None
            if roll < 0.18:
                await app.jobs.cancel(ALICE, job_id, None)
            elif roll < 0.24:
                priority = rng.choice([JobPriority.LOW, JobPriority.NORMAL, JobPriority.HIGH])
                await app.jobs.change_priority(ALICE, job_id, priority)
            elif roll < 0.28:
                await app.jobs.retry(ALICE, job_id)
            else:
                attempt = current.attempt - (1 if current.attempt and rng.random() < 0.1 else 0)
                at = now + timedelta(seconds=step)
                await app.observations.apply(
                    WorkloadObservation(
                        job_id=job_id,
                        attempt=attempt,
                        phase=rng.choice(PHASES),
                        reason=f"step {step}",
                        observed_at=at,
                        admitted_at=at,
                        started_at=at,
                        finished_at=at,
                        placements=rng.choice(PLACES),
                        workload=current.workload_name if rng.random() < 0.95 else "stale-one",
                    )
                )
        except DomainError:
            pass  # a refused command changes nothing (checked below with the rest)
        if jobs:
            last = await app.jobs.get(ALICE, jobs[-1] if roll < 0.12 else job_id)
            if last is not None and last.status.is_finished:
                ended.add(last.id)
        if each is not None:
            await each(cluster.id)
    return jobs


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
async def test_every_committed_change_has_exactly_one_event(app: App, seed: int) -> None:
    jobs = await play(app, random.Random(seed), steps=90)
    first = await app.jobs.get(ALICE, jobs[0])
    assert first is not None
    cluster_id = first.cluster_id
    events = await app.event_log.read_after(cluster_id, 0, limit=100_000)
    assert [e.sequence for e in events] == list(range(1, len(events) + 1))
    histories = await app.jobs.events(ALICE, jobs)
    for job_id in jobs:
        mine = [
            e.change
            for e in events
            if isinstance(e.change, JobChanged) and e.change.job.id == job_id
        ]
        stored = await app.jobs.get(ALICE, job_id)
        assert stored is not None
        assert visible(mine[-1].job) == visible(stored), "a committed change without its event"
        steps = [c for c in mine if c.kind in (ChangeKind.SUBMITTED, ChangeKind.TRANSITION)]
        assert len(steps) == len(histories[job_id])
        for change, row in zip(steps, histories[job_id], strict=True):
            assert change.transition == row or change.kind is ChangeKind.SUBMITTED
        for before, after in itertools.pairwise(mine):  # each event is a change
            assert visible(before.job) != visible(after.job)


async def test_a_change_that_records_nothing_is_refused_at_commit(app: App) -> None:
    cluster = await sim_cluster(app)
    job = await app.jobs.submit(ALICE, submission(cluster.id))
    before = await app.event_log.current_sequence(cluster.id)
    with pytest.raises(ChangeWithoutEvent, match="placement"):
        async with app.db.unit_of_work(TenantScope.system()) as uow:
            loaded = await uow.jobs.get(job.id, for_update=True)
            assert loaded is not None
            loaded.placements = (Placement("node-a", (0,)),)  # not through place(): no event
            await uow.commit()
    stored = await app.jobs.get(ALICE, job.id)
    assert stored is not None and stored.placement is None
    assert await app.event_log.current_sequence(cluster.id) == before


async def test_a_late_placement_reaches_subscribers(app: App) -> None:
    cluster = await sim_cluster(app)
    job = await app.jobs.submit(ALICE, submission(cluster.id))
    now = app.clock.now()
    running = WorkloadObservation(
        job.id, 0, WorkloadPhase.RUNNING, "running", now, now, now, workload=job.workload_name
    )
    await app.observations.apply(running)
    seen = await app.event_log.current_sequence(cluster.id)
    node = Placement("node-a", (0, 1, 2, 3))
    await app.observations.apply(replace(running, placements=(node,)))
    [event] = await app.event_log.read_after(cluster.id, seen, limit=10)
    assert isinstance(event.change, JobChanged)
    assert (event.change.kind, event.change.job.placement) == (ChangeKind.PLACED, node)


async def test_reactions_run_with_the_connection_given_back(app: App) -> None:
    checked_out: list[int] = []
    reactions = app.db.after_commit
    assert reactions is not None

    async def watching(events: Sequence[StoredEvent]) -> None:
        pool = app.db.engine.pool
        assert isinstance(pool, QueuePool)  # PostgreSQL's: it counts what is checked out
        checked_out.append(pool.checkedout())
        await reactions(events)

    app.db.after_commit = watching
    cluster = await sim_cluster(app)
    job = await app.jobs.submit(ALICE, submission(cluster.id, name=f"j-{uuid.uuid4().hex[:6]}"))
    await app.jobs.cancel(ALICE, job.id, None)
    assert checked_out and set(checked_out) == {0}


def _as_estimated(job: Job) -> dict[str, object]:
    """What the estimator reads of a job: its document without this service's own output (the
    estimates it stores) and the row version."""
    doc = job_to_document(job)
    for key in (
        "estimated_start",
        "estimated_end",
        "estimate_reason",
        "estimate_warnings",
        "submission_estimate",
        "admission_estimate",
        "estimated_cost",
        "version",
        "updated_at",
    ):
        doc.pop(key)
    return doc


@pytest.mark.parametrize("seed", [5, 6])
async def test_the_timelines_active_jobs_kept_from_events_are_what_a_whole_read_gives(
    app: App, seed: int
) -> None:
    """Between whole reads (once a minute), a recompute's active jobs are the last ones folded
    with the events committed since: after every random change they equal a whole read."""
    rng = random.Random(seed)
    checked = 0

    async def compare(cluster_id: ClusterId) -> None:
        nonlocal checked
        if rng.random() < 0.5:
            return  # several changes between two recomputes, too
        await app.timeline.refresh(cluster_id)
        async with app.db.unit_of_work(TenantScope.system()) as uow:
            whole = await uow.jobs.active_on_cluster(cluster_id)
        kept = await app.timeline.active_jobs(cluster_id)
        assert [_as_estimated(j) for j in kept] == [
            _as_estimated(j) for j in sorted(whole, key=lambda j: (j.created_at, str(j.id)))
        ]
        checked += 1

    await play(app, rng, steps=70, each=compare)
    assert checked > 20 and app.timeline.active_reads == 1  # one whole read, then events
