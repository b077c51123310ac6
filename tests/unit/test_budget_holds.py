"""PAUSE, and budgets of a project or tenant per month, with fakes of every port.

A job's own PAUSE budget holds it at submission when it is expected to cost more, and takes it
back at 100 % as a preemption does (same attempt: no retry used), until the budget is raised. A
project's or tenant's budget: WARN says so, CANCEL refuses (naming projectId), PAUSE holds the
job until the next month; while running, 80 % and 100 % are said once a month, and a spent PAUSE
budget takes back its running jobs and holds its waiting ones; a raised limit or a new month
releases them. Who may set what; the estimator knows a held job does not start."""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from domain.errors import Forbidden, NotFound, ValidationFailed
from domain.model.budget import Budget, period_of
from domain.model.ids import ProjectId, TenantId
from domain.model.job import BudgetAction, BudgetScope, ChangeKind, Job, JobStatus
from domain.model.principal import OPERATOR_SCOPES, Principal
from domain.ports.unit_of_work import TenantScope
from domain.scheduling.budgets import BudgetStanding, exhaustion
from domain.scheduling.cost import SpendHour
from domain.scheduling.estimator import estimate
from domain.services.budgets import BudgetService
from tests.support.admission_tables import NOW, W
from tests.unit.test_estimator import TWO_NODES, jobs_of, snapshot
from tests.unit.test_job_service import World
from tests.unit.test_submission import GOOD

# GOOD: 8 A100s for an hour (at most two) at the list price of 2.50: expected to cost 20.00;
# running, 20 an hour. The fake clock starts on 2026-01-01 12:00 UTC.

OPERATOR = Principal(TenantId(uuid.uuid4()), frozenset(OPERATOR_SCOPES))


@pytest.fixture
def world() -> World:
    return World()


def service(world: World) -> BudgetService:
    return BudgetService(uow=world.uow, clock=world.clock)


def changes(world: World, job: Job) -> list[ChangeKind]:
    return [
        c.kind
        for e in world.publisher.published
        if (c := e.job_change) is not None and c.job.id == job.id
    ]


def tasks(world: World, job: Job) -> list[str]:
    return [t.key or "" for t in world.tasks.enqueued if t.kwargs.get("job_id") == str(job.id)]


async def start(world: World, job: Job) -> None:
    async with world.uow(TenantScope.system()) as uow:
        stored = await uow.jobs.get(job.id)
        assert stored is not None
        for status in (JobStatus.QUEUED, JobStatus.ADMITTED, JobStatus.RUNNING):
            stored.transition(status, status.value.lower(), world.clock.now())
        await uow.commit()


UNTIMED = replace(GOOD, estimated_duration_seconds=None, max_duration_seconds=None)


async def test_own_pause_holds_at_submission_until_the_budget_is_raised(world: World) -> None:
    sub = replace(GOOD, budget_limit=Decimal("10"), budget_action=BudgetAction.PAUSE)
    job = await world.service.submit(world.alice, sub)
    held = world.stored(job.id)
    assert (held.status, held.held_by, held.next_attempt_at) == (
        JobStatus.PENDING,
        BudgetScope.JOB,
        None,
    )
    assert "held by its budget" in (held.hold_reason or "") and "20.00" in (held.hold_reason or "")
    assert changes(world, job) == [ChangeKind.SUBMITTED, ChangeKind.BUDGET]
    async with world.uow(TenantScope.system()) as uow:  # the sweeper does not hand it over
        assert (
            await uow.jobs.due_for_submission(world.clock.now() + timedelta(days=1), limit=9) == []
        )
    still = await world.service.change_budget(
        world.alice, job.id, Decimal("15"), BudgetAction.PAUSE
    )
    assert still.held_by is BudgetScope.JOB  # 20.00 expected: still over
    raised = await world.service.change_budget(
        world.alice, job.id, Decimal("25"), BudgetAction.PAUSE
    )
    assert raised.held_by is None and raised.hold_reason is None
    assert any(k.startswith(f"submit:{job.id}:0:released:") for k in tasks(world, job))


async def test_own_pause_takes_a_running_job_back_without_using_a_retry(world: World) -> None:
    sub = replace(UNTIMED, budget_limit=Decimal("10"), budget_action=BudgetAction.PAUSE)
    job = await world.service.submit(world.alice, sub)
    await start(world, job)
    world.clock.current += timedelta(minutes=31)  # 10.33 of 10
    [(told, notice)] = await service(world).check()
    assert (told.id, notice.share, notice.action) == (job.id, 100, BudgetAction.PAUSE)
    paused = world.stored(job.id)
    assert (paused.status, paused.held_by, paused.attempt, paused.generation) == (
        JobStatus.PENDING,
        BudgetScope.JOB,
        0,
        1,
    )
    assert paused.actual_cost == Decimal("10.3333")  # its run was metered as it was taken back
    assert paused.actual_start is None and paused.workload_name.endswith("a0g1")
    assert f"cancel:{job.id}:0" in tasks(world, job)  # its workload taken back from the cluster
    history = [(e.from_status, e.to_status) for e in world.uow.store.history if e.job_id == job.id]
    assert history[-2:] == [
        (JobStatus.RUNNING, JobStatus.PREEMPTED),
        (JobStatus.PREEMPTED, JobStatus.PENDING),
    ]
    assert [e.operation for e in world.uow.store.audit] == ["budgetExceeded"]
    assert world.uow.store.audit[0].input["paused"] is True
    world.clock.current += timedelta(hours=1)
    assert await service(world).check() == []  # held: nothing runs, nothing more to say
    raised = await world.service.change_budget(
        world.alice, job.id, Decimal("30"), BudgetAction.PAUSE
    )
    assert raised.held_by is None
    assert any(k.startswith(f"submit:{job.id}:0:released:") for k in tasks(world, job))


async def budget(
    world: World, limit: str, action: BudgetAction, project: ProjectId | None = GOOD.project_id
) -> BudgetStanding:
    return await service(world).set_budget(
        world.alice if project else OPERATOR,
        None if project else world.alice.tenant_id,
        project,
        Decimal(limit),
        action,
    )


async def test_a_project_budget_acts_at_submission(world: World) -> None:
    await budget(world, "10", BudgetAction.CANCEL)
    with pytest.raises(ValidationFailed) as refused:
        await world.service.submit(world.alice, GOOD)
    [issue] = refused.value.issues
    assert (issue.field, issue.code) == ("project_id", "OVER_BUDGET")
    assert "20.00" in issue.message and "project" in issue.message
    assert world.uow.store.jobs == {}
    small = replace(GOOD, estimated_duration_seconds=1200)  # 6.67: fits
    assert (await world.service.submit(world.alice, small)).held_by is None

    await budget(world, "10", BudgetAction.PAUSE)
    held = await world.service.submit(world.alice, GOOD)
    assert held.held_by is BudgetScope.PROJECT
    assert held.next_attempt_at == datetime(2026, 2, 1, tzinfo=UTC)
    assert "2026-02-01" in (held.hold_reason or "")

    await budget(world, "10", BudgetAction.WARN)
    warned = await world.service.submit(world.alice, GOOD)
    assert warned.held_by is None
    notices = [
        c.budget
        for e in world.publisher.published
        if (c := e.job_change) is not None and c.job.id == warned.id and c.budget
    ]
    assert [(n.scope, n.expected, n.cost) for n in notices] == [
        (BudgetScope.PROJECT, True, Decimal("20.00"))
    ]
    other = replace(GOOD, project_id=ProjectId(uuid.uuid4()))  # another project: no budget
    assert (await world.service.submit(world.alice, other)).held_by is None


async def test_a_spent_project_budget_pauses_its_work_until_raised(world: World) -> None:
    checks = service(world)
    await budget(world, "10", BudgetAction.PAUSE)
    runs = await world.service.submit(world.alice, UNTIMED)
    await start(world, runs)
    waits = await world.service.submit(world.alice, UNTIMED)
    elsewhere = await world.service.submit(
        world.alice, replace(UNTIMED, project_id=ProjectId(uuid.uuid4()))
    )
    world.clock.current += timedelta(minutes=25)  # 8.33 of 10
    said = await checks.check()
    assert [(j.id, n.share, n.scope) for j, n in said] == [(runs.id, 80, BudgetScope.PROJECT)]
    assert await checks.check() == []  # once a month
    world.clock.current += timedelta(minutes=6)  # 10.33 of 10
    said = await checks.check()
    assert {j.id for j, n in said} == {runs.id, waits.id}
    for job in (runs, waits):
        stored = world.stored(job.id)
        assert (stored.status, stored.held_by) == (JobStatus.PENDING, BudgetScope.PROJECT)
        assert stored.next_attempt_at == datetime(2026, 2, 1, tzinfo=UTC)
    assert world.stored(elsewhere.id).held_by is None
    assert world.stored(runs.id).actual_cost == Decimal("10.3333")
    audited = [(e.operation, e.input.get("scope")) for e in world.uow.store.audit]
    assert audited == [("budgetWarning", "PROJECT"), ("budgetExceeded", "PROJECT")]
    [standing] = await checks.budgets(world.alice)
    assert (standing.spent, standing.exhausted, standing.budget.alerted) == (
        Decimal("10.3333"),
        True,
        100,
    )
    world.clock.current += timedelta(hours=2)
    assert await checks.check() == []  # nothing runs: nothing more spent, nothing released
    # raised: room for both again (their cost is unknown: counted as 0)
    await budget(world, "50", BudgetAction.PAUSE)
    for job in (runs, waits):
        assert world.stored(job.id).held_by is None
        assert any(k.startswith(f"submit:{job.id}:0:released:") for k in tasks(world, job))


async def test_a_new_month_releases_what_a_spent_budget_held(world: World) -> None:
    checks = service(world)
    await budget(world, "10", BudgetAction.PAUSE, project=None)  # the tenant's, by the operator
    job = await world.service.submit(world.alice, UNTIMED)
    await start(world, job)
    world.clock.current = datetime(2026, 1, 31, 23, 30, tzinfo=UTC)  # spent long ago
    await checks.check()
    assert world.stored(job.id).held_by is BudgetScope.TENANT
    world.clock.current = datetime(2026, 1, 31, 23, 59, tzinfo=UTC)
    await checks.check()
    assert world.stored(job.id).held_by is BudgetScope.TENANT
    world.clock.current = datetime(2026, 2, 1, 0, 0, 3, tzinfo=UTC)  # February: 0 of 10
    await checks.check()
    released = world.stored(job.id)
    assert (released.held_by, released.status) == (None, JobStatus.PENDING)
    assert any(k.startswith(f"submit:{job.id}:0:released:") for k in tasks(world, job))
    [standing] = await checks.budgets(world.alice)
    assert (standing.spent, standing.budget.alerted_in(standing.period_start)) == (Decimal(0), 0)

    await budget(world, "0", BudgetAction.PAUSE, project=None)  # a limit of 0 is spent at once
    again = await world.service.submit(world.alice, replace(GOOD, deadline=None))
    assert world.stored(again.id).held_by is BudgetScope.TENANT


async def test_who_may_set_which_budget(world: World) -> None:
    checks = service(world)
    with pytest.raises(Forbidden):  # a tenant's own is the operator's to set
        await checks.set_budget(world.alice, None, None, Decimal("5"), BudgetAction.WARN)
    with pytest.raises(NotFound):
        await checks.set_budget(
            world.alice, world.bob.tenant_id, GOOD.project_id, Decimal("5"), BudgetAction.WARN
        )
    limited = replace(world.alice, project_ids=frozenset({ProjectId(uuid.uuid4())}))
    with pytest.raises(Forbidden):
        await checks.set_budget(limited, None, GOOD.project_id, Decimal("5"), BudgetAction.WARN)
    await budget(world, "100", BudgetAction.WARN, project=None)
    with pytest.raises(ValidationFailed) as over:
        await budget(world, "100.01", BudgetAction.WARN)
    assert over.value.issues[0].field == "limit"
    for bad in ("-1", "NaN", "1e20"):
        with pytest.raises(ValidationFailed):
            await budget(world, bad, BudgetAction.WARN)
    await budget(world, "60", BudgetAction.CANCEL)
    assert [s.budget.scope for s in await checks.budgets(world.alice)] == [
        BudgetScope.TENANT,
        BudgetScope.PROJECT,
    ]
    assert await checks.budgets(world.bob) == []
    assert len(await checks.budgets(OPERATOR)) == 2
    assert [s.budget.scope for s in await checks.budgets(limited)] == [BudgetScope.TENANT]
    removed = await checks.remove_budget(world.alice, None, GOOD.project_id)
    assert removed.budget.limit == Decimal("60")
    with pytest.raises(NotFound):
        await checks.remove_budget(world.alice, None, GOOD.project_id)


def test_the_estimator_knows_a_held_job_does_not_start() -> None:
    scenario = replace(TWO_NODES, waiting=[W("held", "cq", 8), W("later", "cq", 8, age=1)])
    jobs = jobs_of(scenario, held=60, later=60)
    jobs["held"].held_by, jobs["held"].hold_reason = BudgetScope.JOB, "held by its budget: x"
    jobs["later"].held_by, jobs["later"].hold_reason = BudgetScope.PROJECT, "held by y"
    jobs["later"].next_attempt_at = NOW + timedelta(days=3)
    plan = estimate(snapshot(list(jobs.values()))).jobs
    assert plan[jobs["held"].id].start is None
    assert plan[jobs["held"].id].reason == "held by its budget: x"
    assert plan[jobs["later"].id].start == NOW + timedelta(days=3)
    assert plan[jobs["later"].id].reason == "held by y"


def test_exhaustion_is_walked_hour_by_hour_within_the_period() -> None:
    now = datetime(2026, 1, 30, 10, 30, tzinfo=UTC)
    first, following = period_of(now)
    b = Budget(TenantId(uuid.uuid4()), None, Decimal("100"), BudgetAction.WARN, now, now)
    standing = BudgetStanding(b, first, following, Decimal("70"))
    hour = datetime(2026, 1, 30, 10, tzinfo=UTC)
    hours = [
        SpendHour(hour + timedelta(hours=h), Decimal(c), Decimal(lo), Decimal(hi))
        for h, (c, lo, hi) in enumerate([("10", "5", "20"), ("20", "10", "20"), ("0", "0", "0")])
    ]
    found = exhaustion(standing, hours, now)
    # 30 left: 10 in the rest of the first hour, then 20 of the next hour's 20
    assert found.expected == hour + timedelta(hours=2)
    assert found.earliest == hour + timedelta(hours=1, minutes=30)  # 20 in the first half hour
    assert found.latest is None  # 5 + 10: not within what is scheduled
    assert exhaustion(replace(standing, spent=Decimal("100")), [], now).expected == now
    late = [replace(h, start=h.start + timedelta(days=2)) for h in hours]
    assert exhaustion(standing, late, now).expected is None  # after the period's end
