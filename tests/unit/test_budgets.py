"""Budgets that act, with fakes of every port: at submission a job expected to cost more than its
budget is refused with CANCEL (nothing stored) and said with WARN; while it runs, its cost is
said at 80 % and at 100 % of its budget, once each, and at 100 % a CANCEL job is cancelled (its
workload taken back), with an audit record of each; a job that ended or was told since it was
read is left alone."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from decimal import Decimal

import pytest

from domain.errors import Conflict, NotFound, ValidationFailed
from domain.model.job import (
    BudgetAction,
    BudgetNotice,
    ChangeKind,
    Job,
    JobStatus,
)
from domain.ports.unit_of_work import TenantScope
from domain.scheduling.cost import PriceBook, budget_at_submission, budget_reached
from domain.services import task_names
from domain.services.budgets import BudgetService
from tests.support.fakes import T0
from tests.unit.test_job_service import World
from tests.unit.test_submission import GOOD

# GOOD: 8 A100s for an hour (at most two) at the list price of 2.50: expected to cost 20.00


@pytest.fixture
def world() -> World:
    return World()


def kinds(world: World, job: Job) -> list[ChangeKind]:
    return [
        change.kind
        for e in world.publisher.published
        if (change := e.job_change) is not None and change.job.id == job.id
    ]


async def test_over_budget_with_cancel_is_refused_at_submission_and_nothing_is_stored(
    world: World,
) -> None:
    over = replace(GOOD, budget_limit=Decimal("19.99"), budget_action=BudgetAction.CANCEL)
    with pytest.raises(ValidationFailed) as refused:
        await world.service.submit(world.alice, over)
    [issue] = refused.value.issues
    assert (issue.field, issue.code) == ("budget_limit", "OVER_BUDGET")
    assert "20.00" in issue.message and "19.99" in issue.message
    assert world.uow.store.jobs == {} and world.publisher.published == []
    within = replace(over, budget_limit=Decimal("20"))
    assert (await world.service.submit(world.alice, within)).budget_alerted == 0


async def test_over_budget_with_warn_is_accepted_and_said_with_its_submission(
    world: World,
) -> None:
    job = await world.service.submit(world.alice, replace(GOOD, budget_limit=Decimal("5")))
    assert job.status is JobStatus.PENDING and job.budget_alerted == 0  # (not cost yet)
    assert kinds(world, job) == [ChangeKind.SUBMITTED, ChangeKind.BUDGET]
    [notice] = [
        change.budget
        for e in world.publisher.published
        if (change := e.job_change) is not None and change.budget is not None
    ]
    assert notice == BudgetNotice(100, Decimal("20.00"), Decimal("5"), BudgetAction.WARN, True)
    assert task_names.SUBMIT_WORKLOAD in [t.task for t in world.tasks.enqueued]


def test_what_is_expected_and_reached() -> None:
    job = Job(
        id=GOOD.cluster_id,  # type: ignore[arg-type]
        name="j",
        tenant_id=GOOD.project_id,  # type: ignore[arg-type]
        project_id=GOOD.project_id,
        cluster_id=GOOD.cluster_id,
        job_type=GOOD.job_type,
        deployment_type=GOOD.deployment_type,
        created_at=T0,
        updated_at=T0,
        resources=GOOD.resources,
        max_duration_seconds=1800,
        budget_limit=Decimal("10"),
    )
    assert budget_at_submission(job, PriceBook()) is None  # 8 x 2.50 x half an hour
    assert budget_at_submission(replace(job, max_duration_seconds=None), PriceBook()) is None
    expected = budget_at_submission(job, PriceBook({"nvidia-a100-80gb": "3"}))
    assert expected is not None and expected.cost == Decimal("12.00")
    assert budget_reached(job, Decimal("7.99")) is None
    assert budget_reached(job, Decimal("8")) == BudgetNotice(
        80, Decimal("8"), Decimal("10"), BudgetAction.WARN
    )
    assert budget_reached(replace(job, budget_alerted=80), Decimal("9")) is None
    reached = budget_reached(replace(job, budget_alerted=80), Decimal("10"))
    assert reached is not None and reached.share == 100
    assert budget_reached(replace(job, budget_limit=None), Decimal("1e6")) is None


async def running(world: World, action: BudgetAction, limit: str = "10") -> Job:
    sub = replace(
        GOOD,
        budget_limit=Decimal(limit),
        budget_action=action,
        estimated_duration_seconds=None,
        max_duration_seconds=None,
    )
    job = await world.service.submit(world.alice, sub)
    async with world.uow(TenantScope.system()) as uow:
        stored = await uow.jobs.get(job.id)
        assert stored is not None
        for status in (JobStatus.QUEUED, JobStatus.ADMITTED, JobStatus.RUNNING):
            stored.transition(status, status.value.lower(), world.clock.now())
        await uow.commit()
    return job


async def test_a_running_job_is_told_at_80_and_100_percent_once_each_and_cancel_stops_it(
    world: World,
) -> None:
    budgets = BudgetService(uow=world.uow, clock=world.clock)
    warned = await running(world, BudgetAction.WARN)
    cancelled = await running(world, BudgetAction.CANCEL)
    # 8 A100s at 2.50: 20 an hour; 80 % of 10 is reached at 24 minutes, 100 % at 30
    world.clock.current += timedelta(minutes=23)
    assert await budgets.check() == []
    world.clock.current += timedelta(minutes=2)
    said = await budgets.check()
    assert sorted((j.id, n.share) for j, n in said) == sorted([(warned.id, 80), (cancelled.id, 80)])
    assert await budgets.check() == []  # said once
    world.clock.current += timedelta(minutes=6)
    said = await budgets.check()
    assert sorted((j.id, n.share) for j, n in said) == sorted(
        [(warned.id, 100), (cancelled.id, 100)]
    )
    assert world.stored(warned.id).status is JobStatus.RUNNING
    assert world.stored(warned.id).budget_alerted == 100
    gone = world.stored(cancelled.id)
    assert gone.status is JobStatus.CANCELLED and "over budget" in (gone.status_message or "")
    assert task_names.CANCEL_WORKLOAD in [t.task for t in world.tasks.enqueued]
    assert gone.actual_cost == Decimal("10.3333")  # metered to its end: 31 minutes
    world.clock.current += timedelta(hours=5)
    assert await budgets.check() == []  # the WARN job was told at 100 %: nothing more
    audited = [(e.operation, e.actor, e.targets[0]) for e in world.uow.store.audit]
    assert audited.count(("budgetWarning", "system:budgets", str(warned.id))) == 1
    assert audited.count(("budgetExceeded", "system:budgets", str(cancelled.id))) == 1
    assert kinds(world, cancelled).count(ChangeKind.BUDGET) == 2


async def test_a_job_that_ended_before_it_was_told_is_left_alone(world: World) -> None:
    budgets = BudgetService(uow=world.uow, clock=world.clock)
    job = await running(world, BudgetAction.CANCEL, limit="1")
    world.clock.current += timedelta(hours=1)
    seen = world.stored(job.id)
    async with world.uow(TenantScope.system()) as uow:
        stored = await uow.jobs.get(job.id)
        assert stored is not None
        stored.transition(JobStatus.COMPLETED, "done", world.clock.now())
        await uow.commit()
    notice = budget_reached(seen, Decimal("20"))
    assert notice is not None
    assert await budgets._act(seen, notice) is None
    assert world.stored(job.id).status is JobStatus.COMPLETED
    assert world.uow.store.audit == []


async def test_a_new_budget_is_said_again_from_the_next_check(world: World) -> None:
    budgets = BudgetService(uow=world.uow, clock=world.clock)
    job = await running(world, BudgetAction.WARN, limit="5")
    world.clock.current += timedelta(minutes=20)  # 6.67 of 5
    assert [n.share for _, n in await budgets.check()] == [100]
    raised = await world.service.change_budget(
        world.alice, job.id, Decimal("100"), BudgetAction.CANCEL
    )
    assert (raised.budget_limit, raised.budget_action, raised.budget_alerted) == (
        Decimal("100"),
        BudgetAction.CANCEL,
        0,
    )
    assert kinds(world, job)[-1] is ChangeKind.BUDGET
    assert await budgets.check() == []  # 6.67 of 100
    world.clock.current += timedelta(hours=5)  # 106.67: over, and CANCEL now
    assert [n.share for _, n in await budgets.check()] == [100]
    assert world.stored(job.id).status is JobStatus.CANCELLED

    with pytest.raises(Conflict):  # finished
        await world.service.change_budget(world.alice, job.id, None, BudgetAction.WARN)
    other = await running(world, BudgetAction.WARN)
    with pytest.raises(NotFound):
        await world.service.change_budget(world.bob, other.id, None, BudgetAction.WARN)
    for bad in (Decimal("-1"), Decimal("NaN"), Decimal("1e20")):
        with pytest.raises(ValidationFailed) as refused:
            await world.service.change_budget(world.alice, other.id, bad, BudgetAction.WARN)
        assert refused.value.issues[0].field == "budget_limit"
    cleared = await world.service.change_budget(world.alice, other.id, None, BudgetAction.WARN)
    assert cleared.budget_limit is None
    world.clock.current += timedelta(days=30)
    assert await budgets.check() == []  # no budget: nothing to say
