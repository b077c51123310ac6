"""Budgets that act while jobs run. Every `budget_check_seconds` (a setting; the supervisor's
runtime calls `check`) the RUNNING jobs with a budget are priced up to now (`cost_so_far`). One
whose cost newly reached 80 % or 100 % of its budget gets a BUDGET event on its stream (and so
its cluster's), an audit record and a metric (from the event); at 100 % with CANCEL it is
cancelled as a user's cancel would be (its workload is taken back from its cluster). So a job
overruns its budget by at most what it costs in one check, plus the time its cluster takes to
stop it. Each share is said once (`Job.budget_alerted`).
"""

from __future__ import annotations

import uuid

from domain.errors import Conflict
from domain.model.audit import AuditEvent
from domain.model.job import BudgetAction, BudgetNotice, Job, JobStatus
from domain.ports.clock import Clock
from domain.ports.unit_of_work import TenantScope, UnitOfWorkFactory
from domain.scheduling.cost import budget_reached, cost_so_far
from domain.services.prices import price_books

CHECKED_AT_ONCE = 500
"""Jobs read and priced at a time: a round goes through every one, a page at a time."""
SYSTEM_ACTOR = "system:budgets"


class BudgetService:
    def __init__(self, *, uow: UnitOfWorkFactory, clock: Clock) -> None:
        self._uow = uow
        self._clock = clock

    async def check(self) -> list[tuple[Job, BudgetNotice]]:
        """One round over every RUNNING job with a budget, `CHECKED_AT_ONCE` at a time, oldest
        first: what was said (and done)."""
        acted: list[tuple[Job, BudgetNotice]] = []
        after: Job | None = None
        while True:
            async with self._uow(TenantScope.system()) as uow:
                jobs = await uow.jobs.running_over(100, after=after, limit=CHECKED_AT_ONCE)
                ids = sorted({j.cluster_id for j in jobs}, key=str)
                books = await price_books(uow, (await uow.clusters.get_many(ids)).values())
            now = self._clock.now()
            for job in jobs:
                book = books.get(job.cluster_id)
                cost = cost_so_far(job, book, now) if book is not None else None
                notice = budget_reached(job, cost) if cost is not None else None
                if notice is not None and (done := await self._act(job, notice)) is not None:
                    acted.append(done)
            if len(jobs) < CHECKED_AT_ONCE:
                return acted
            after = jobs[-1]

    async def _act(self, seen: Job, notice: BudgetNotice) -> tuple[Job, BudgetNotice] | None:
        """Say `notice` on the job (and cancel it, at 100 % with CANCEL), if it still runs and
        has not been told since it was read."""
        now = self._clock.now()
        try:
            async with self._uow(TenantScope.system()) as uow:
                job = await uow.jobs.get(seen.id, for_update=True)
                if (
                    job is None
                    or job.status is not JobStatus.RUNNING
                    or job.budget_alerted >= notice.share
                ):
                    return None
                job.notice_budget(notice, now)
                cancel = notice.share >= 100 and notice.action is BudgetAction.CANCEL
                if cancel:
                    job.transition(JobStatus.CANCELLED, f"over budget: {notice.message}", now)
                await uow.audit.add(_audited(job, notice, cancelled=cancel))
                await uow.commit()
        except Conflict:  # changed meanwhile (it ended, say): the next round looks again
            return None
        return job, notice


def _audited(job: Job, notice: BudgetNotice, *, cancelled: bool) -> AuditEvent:
    operation = "budgetExceeded" if notice.share >= 100 else "budgetWarning"
    return AuditEvent(
        id=uuid.uuid4(),
        at=job.updated_at,
        tenant_id=job.tenant_id,
        actor=SYSTEM_ACTOR,
        token_id=None,
        operation=operation,
        targets=(str(job.id), str(job.project_id), str(job.cluster_id)),
        input={
            "cost": str(notice.cost),
            "budgetLimit": str(notice.limit),
            "share": notice.share,
            "budgetAction": notice.action.value,
            "cancelled": cancelled,
        },
        outcome="OK",
        source="system",
        project_id=job.project_id,
    )
