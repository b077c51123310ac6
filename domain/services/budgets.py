"""Budgets that act: a job's own (`Job.budget_limit`), and a project's or tenant's per period
(`domain.model.budget.Budget`; the operator sets a tenant's, a tenant its projects' within it).

At submission (`at_submission`, in the submission's transaction): a job expected to cost more
than its budget, or than what its project's or tenant's budget has left (or submitted when that
is spent), gets the budget's action: WARN says so on the job, CANCEL refuses it (OVER_BUDGET),
PAUSE holds it PENDING with the reason (`Job.hold`: not handed over; the estimator starts it no
earlier than the next period, or not at all for its own budget).

While jobs run, `check` runs every `budget_check_seconds` (a setting; the supervisor's runtime):
- each RUNNING job with a budget is priced up to now (`cost_so_far`); one that newly reached 80 %
  or 100 % gets a BUDGET event on its stream (and so its cluster's), an audit record and a
  metric (from the event); at 100 % CANCEL cancels it, PAUSE takes it back as a preemption
  does and holds it until its budget is raised (`updateJobBudget`);
- each project and tenant budget is priced for its period (the ledger's metered runs plus its
  running jobs so far, `domain.scheduling.budgets.stand`); 80 % and 100 % are said once a period
  (an audit record, and a BUDGET event on each of its running jobs); while it is spent, PAUSE
  takes back its jobs on clusters and holds its waiting ones, CANCEL cancels its running jobs
  and holds its waiting ones (level-triggered: what was submitted or started meanwhile is
  caught by the next round);
- jobs a project's or tenant's budget holds are released, oldest first, once every budget over
  them has room for what they are expected to cost (a raised limit, a new period, a removed
  budget).
So a job overruns a budget by at most what it costs in one check, plus the time its cluster
takes to stop it.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from decimal import Decimal

from domain.errors import Conflict, Forbidden, NotFound, ValidationFailed
from domain.model.audit import AuditEvent
from domain.model.budget import Budget, budget_key, period_of
from domain.model.ids import ClusterId, ProjectId, TenantId
from domain.model.job import BudgetAction, BudgetNotice, BudgetScope, Job, JobStatus
from domain.model.principal import Principal, Scope
from domain.model.spend import SpendGroup, SpendQuery
from domain.ports.clock import Clock
from domain.ports.unit_of_work import TenantScope, UnitOfWork, UnitOfWorkFactory
from domain.scheduling.budgets import (
    SEVERITY,
    BudgetStanding,
    crossed,
    expected_cost,
    hold_reason,
    job_hold_reason,
    over_budgets,
    stand,
)
from domain.scheduling.cost import (
    METERED,
    PriceBook,
    budget_at_submission,
    budget_reached,
    cost_so_far,
)
from domain.services.prices import price_books
from domain.services.submission import MAX_BUDGET

CHECKED_AT_ONCE = 500
"""Jobs read and priced at a time: a round goes through every one, a page at a time."""
SCOPE_JOBS = 10_000
"""The most running (or waiting, or held) jobs of budgeted tenants one round reads; the rest
are reached by the next rounds (each round acts on what it read)."""
SPEND_GROUPS = 100_000
"""The most (tenant, project) groups of a period's spend one round reads."""
SYSTEM_ACTOR = "system:budgets"
ON_CLUSTER = frozenset({JobStatus.QUEUED, JobStatus.ADMITTED, JobStatus.RUNNING})
WAITING = frozenset({JobStatus.PENDING, JobStatus.QUEUED, JobStatus.ADMITTED})


async def _books(uow: UnitOfWork, jobs: Iterable[Job]) -> dict[ClusterId, PriceBook]:
    ids = sorted({j.cluster_id for j in jobs}, key=str)
    return await price_books(uow, (await uow.clusters.get_many(ids)).values())


async def standings_of(
    uow: UnitOfWork, tenant_id: TenantId, project_id: ProjectId | None, now: datetime
) -> list[BudgetStanding]:
    """The tenant's budget and its projects' (only `project_id`'s, if given) in the period of
    `now`: none when it has none (one read)."""
    found = [
        b
        for b in await uow.budgets.of_tenant(tenant_id)
        if project_id is None or b.project_id in (None, project_id)
    ]
    if not found:
        return []
    first, following = period_of(now)
    query = SpendQuery(
        first, following - timedelta(days=1), (SpendGroup.PROJECT,), tenant_id=tenant_id
    )
    metered = {
        r.project_id: r.cost for r in await uow.usage.spend(query, offset=0, limit=SPEND_GROUPS)
    }
    running = await uow.jobs.of_tenants([tenant_id], {JobStatus.RUNNING}, limit=SCOPE_JOBS)
    books = await _books(uow, running)
    return [stand(b, _metered(b, metered), running, books, now) for b in found]


def _metered(budget: Budget, by_project: Mapping[ProjectId | None, Decimal]) -> Decimal:
    if budget.project_id is None:
        return sum(by_project.values(), Decimal(0))
    return by_project.get(budget.project_id, Decimal(0))


async def at_submission(uow: UnitOfWork, job: Job, now: datetime) -> list[BudgetNotice]:
    """What the job's budgets say of it as it is submitted (before `record_submission`): raises
    OVER_BUDGET when a CANCEL budget refuses it, holds it (`Job.hold`) when a PAUSE one does;
    the notices to say on it (WARN's and PAUSE's). One statement when the job and its tenant
    have no budget (`standings_of`), the cluster's prices read only when one does."""
    standings = await standings_of(uow, job.tenant_id, job.project_id, now)
    if job.budget_limit is None and not standings:
        return []
    cluster = await uow.clusters.get(job.cluster_id)
    assert cluster is not None  # (validated)
    book = (await price_books(uow, [cluster]))[cluster.id]
    said: list[BudgetNotice] = []
    own = budget_at_submission(job, book) if job.budget_limit is not None else None
    if own is not None:
        if own.action is BudgetAction.CANCEL:
            raise ValidationFailed.single(
                "budget_limit",
                f"the job is {own.message}: refused; raise the budget, or submit with "
                "budgetAction WARN or PAUSE",
                "OVER_BUDGET",
            )
        said.append(own)
    over = over_budgets(expected_cost(job, book), standings)
    if over and over[0][1].action is BudgetAction.CANCEL:
        standing, notice = over[0]
        raise ValidationFailed.single(
            "project_id",
            f"the job is {notice.message}: refused; ask for a higher budget, or wait for the "
            f"next period ({standing.period_end.isoformat()})",
            "OVER_BUDGET",
        )
    said.extend(notice for _, notice in over)
    if own is not None and own.action is BudgetAction.PAUSE:
        job.hold(BudgetScope.JOB, job_hold_reason(own), None, now)
    elif over and over[0][1].action is BudgetAction.PAUSE:
        standing, notice = over[0]
        job.hold(notice.scope, hold_reason(standing), standing.next_period, now)
    return said


class BudgetService:
    def __init__(self, *, uow: UnitOfWorkFactory, clock: Clock) -> None:
        self._uow = uow
        self._clock = clock

    # --- project and tenant budgets -----------------------------------------------------------

    async def budgets(
        self, principal: Principal, tenant_id: TenantId | None = None
    ) -> list[BudgetStanding]:
        """The budgets `principal` may see, where each stands now: its tenant's and its
        projects' (a token limited to projects: those and the tenant's); the operator's,
        every tenant's, or `tenant_id`'s."""
        now = self._clock.now()
        async with self._uow(TenantScope.system()) as uow:
            if principal.sees_every_tenant and tenant_id is None:
                tenants = sorted({b.tenant_id for b in await uow.budgets.all()}, key=str)
            else:
                tenants = [
                    tenant_id if principal.sees_every_tenant and tenant_id else principal.tenant_id
                ]
            found: list[BudgetStanding] = []
            for tenant in tenants:
                found.extend(await standings_of(uow, tenant, None, now))
        return [
            s
            for s in found
            if s.budget.project_id is None
            or principal.may_see(s.budget.tenant_id, s.budget.project_id)
        ]

    async def set_budget(
        self,
        principal: Principal,
        tenant_id: TenantId | None,
        project_id: ProjectId | None,
        limit: Decimal,
        action: BudgetAction,
    ) -> BudgetStanding:
        """Set a tenant's budget (the operator) or a project's (its tenant, within the tenant's
        budget; or the operator). Jobs it held are released at once if it now allows."""
        tenant = tenant_id or principal.tenant_id
        if not limit.is_finite() or not 0 <= limit <= MAX_BUDGET:
            raise ValidationFailed.single("limit", f"must be an amount from 0 to {MAX_BUDGET}")
        if int(limit.as_tuple().exponent) < -4:
            raise ValidationFailed.single("limit", "has at most 4 decimals")
        limit = limit.quantize(METERED)
        self._may_set(principal, tenant, project_id)
        now = self._clock.now()
        async with self._uow(TenantScope.system()) as uow:
            key = budget_key(tenant, project_id)
            if project_id is not None:
                whole = await uow.budgets.get(budget_key(tenant, None))
                if whole is not None and limit > whole.limit:
                    raise ValidationFailed.single(
                        "limit",
                        f"is over the tenant's budget of {whole.limit:.2f}: a project's budget "
                        "is within it",
                    )
            budget = await uow.budgets.get(key, for_update=True)
            if budget is None:
                budget = Budget(tenant, project_id, limit, action, now, now)
            elif (budget.limit, budget.action) != (limit, action):
                budget.limit, budget.action, budget.updated_at = limit, action, now
                budget.alerted, budget.alerted_period = 0, None  # said again as reached
            await uow.budgets.put(budget)
            await uow.commit()
        await self.release_held([tenant])
        async with self._uow(TenantScope.system()) as uow:
            standings = await standings_of(uow, tenant, project_id, now)
        return next(s for s in standings if s.budget.key == key)

    async def remove_budget(
        self, principal: Principal, tenant_id: TenantId | None, project_id: ProjectId | None
    ) -> BudgetStanding:
        """Remove a budget (who may set it may remove it); where it stood as it went. Jobs
        it held are released at once if nothing else holds them."""
        tenant = tenant_id or principal.tenant_id
        self._may_set(principal, tenant, project_id)
        key = budget_key(tenant, project_id)
        async with self._uow(TenantScope.system()) as uow:
            standing = next(
                (
                    s
                    for s in await standings_of(uow, tenant, project_id, self._clock.now())
                    if s.budget.key == key
                ),
                None,
            )
            if standing is None or not await uow.budgets.remove(key):
                raise NotFound("budget", key)
            await uow.commit()
        await self.release_held([tenant])
        return standing

    @staticmethod
    def _may_set(principal: Principal, tenant: TenantId, project_id: ProjectId | None) -> None:
        if principal.sees_every_tenant:
            return
        if tenant != principal.tenant_id:
            raise NotFound("tenant", tenant)
        if project_id is None:
            raise Forbidden("a tenant's budget is set by the operator (admin)")
        if not principal.has(Scope.JOBS_WRITE) or not principal.may_use_project(project_id):
            raise Forbidden(f"this token may not set the budget of project {project_id}")

    # --- the check -------------------------------------------------------------------------

    async def check(self) -> list[tuple[Job, BudgetNotice]]:
        """One round: jobs' own budgets, then projects' and tenants' (see the module)."""
        acted = await self._check_jobs()
        acted.extend(await self._check_scopes())
        return acted

    async def _check_jobs(self) -> list[tuple[Job, BudgetNotice]]:
        """Every RUNNING job with a budget, `CHECKED_AT_ONCE` at a time, oldest first."""
        acted: list[tuple[Job, BudgetNotice]] = []
        after: Job | None = None
        while True:
            async with self._uow(TenantScope.system()) as uow:
                jobs = await uow.jobs.running_over(100, after=after, limit=CHECKED_AT_ONCE)
                books = await _books(uow, jobs)
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
        """Say `notice` on the job (at 100 %: cancel it with CANCEL, pause and hold it with
        PAUSE), if it still runs and has not been told since it was read."""
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
                acted = _enforce_own(job, notice, now)
                job.notice_budget(notice, now)
                await uow.audit.add(_audited(job, notice, acted))
                await uow.commit()
        except Conflict:  # changed meanwhile (it ended, say): the next round looks again
            return None
        return job, notice

    async def _check_scopes(self) -> list[tuple[Job, BudgetNotice]]:
        now = self._clock.now()
        async with self._uow(TenantScope.system()) as uow:
            budgets = await uow.budgets.all()
            if not budgets:
                return []
            first, following = period_of(now)
            query = SpendQuery(
                first, following - timedelta(days=1), (SpendGroup.TENANT, SpendGroup.PROJECT)
            )
            rows = await uow.usage.spend(query, offset=0, limit=SPEND_GROUPS)
            tenants = sorted({b.tenant_id for b in budgets}, key=str)
            running = await uow.jobs.of_tenants(tenants, {JobStatus.RUNNING}, limit=SCOPE_JOBS)
            books = await _books(uow, running)
        metered: dict[TenantId, dict[ProjectId | None, Decimal]] = defaultdict(dict)
        for row in rows:
            if row.tenant_id is not None:
                metered[row.tenant_id][row.project_id] = row.cost
        standings = [
            stand(b, _metered(b, metered.get(b.tenant_id, {})), running, books, now)
            for b in budgets
        ]
        acted: list[tuple[Job, BudgetNotice]] = []
        for standing in standings:
            notice = crossed(standing)
            if notice is not None:
                acted.extend(await self._say(standing, notice, running))
        spent = [s for s in standings if s.exhausted and s.budget.action is not BudgetAction.WARN]
        if spent:
            acted.extend(await self._enforce(spent))
        await self.release_held(tenants, standings)
        return acted

    async def _say(
        self, standing: BudgetStanding, notice: BudgetNotice, running: Sequence[Job]
    ) -> list[tuple[Job, BudgetNotice]]:
        """Record that `standing`'s budget reached `notice.share` this period (once), audit
        it, and say it on each of its running jobs."""
        budget, now = standing.budget, self._clock.now()
        async with self._uow(TenantScope.system()) as uow:
            stored = await uow.budgets.get(budget.key, for_update=True)
            if stored is None or stored.alerted_in(standing.period_start) >= notice.share:
                return []
            stored.alerted, stored.alerted_period = notice.share, standing.period_start
            await uow.budgets.put(stored)
            await uow.audit.add(_audited_budget(stored, notice, now))
            await uow.commit()
        told: list[tuple[Job, BudgetNotice]] = []
        if notice.share >= 100 and budget.action is not BudgetAction.WARN:
            return told  # its running jobs are told as they are taken back (`_enforce`)
        for seen in running:
            if not budget.covers(seen.tenant_id, seen.project_id):
                continue
            try:
                async with self._uow(TenantScope.system()) as uow:
                    job = await uow.jobs.get(seen.id, for_update=True)
                    if job is None or job.status is not JobStatus.RUNNING:
                        continue
                    job.notice_budget(notice, now)
                    await uow.commit()
                told.append((job, notice))
            except Conflict:
                continue
        return told

    async def _enforce(self, spent: Sequence[BudgetStanding]) -> list[tuple[Job, BudgetNotice]]:
        """While a PAUSE or CANCEL budget is spent: its jobs on clusters are taken back and
        held (PAUSE) or, running, cancelled (CANCEL); its waiting jobs are held."""
        tenants = sorted({s.budget.tenant_id for s in spent}, key=str)
        async with self._uow(TenantScope.system()) as uow:
            active = await uow.jobs.of_tenants(
                tenants, {*WAITING, JobStatus.RUNNING}, held=False, limit=SCOPE_JOBS
            )
        acted: list[tuple[Job, BudgetNotice]] = []
        for seen in active:
            over = [s for s in spent if s.budget.covers(seen.tenant_id, seen.project_id)]
            if not over:
                continue
            standing = max(over, key=lambda s: SEVERITY[s.budget.action])
            done = await self._hold(seen, standing)
            if done is not None:
                acted.append(done)
        return acted

    async def _hold(self, seen: Job, standing: BudgetStanding) -> tuple[Job, BudgetNotice] | None:
        budget, now = standing.budget, self._clock.now()
        notice = BudgetNotice(
            100, standing.spent, budget.limit, budget.action, scope=budget.scope,
            spent=standing.spent,
        )  # fmt: skip
        reason = hold_reason(standing)
        try:
            async with self._uow(TenantScope.system()) as uow:
                job = await uow.jobs.get(seen.id, for_update=True)
                if job is None or not job.status.is_active or job.held_by is not None:
                    return None
                if job.status is JobStatus.RUNNING and budget.action is BudgetAction.CANCEL:
                    job.transition(JobStatus.CANCELLED, f"over budget: {notice.message}", now)
                elif job.status in ON_CLUSTER:
                    job.pause(budget.scope, reason, standing.next_period, now)
                else:
                    job.hold(budget.scope, reason, standing.next_period, now)
                job.notice_budget(notice, now)
                await uow.commit()  # taking back from its cluster follows (reactions)
        except Conflict:
            return None
        return job, notice

    async def release_held(
        self, tenants: Sequence[TenantId], standings: Sequence[BudgetStanding] | None = None
    ) -> int:
        """Release the jobs of `tenants` that a project's or tenant's budget holds, oldest
        first, while every budget over each has room for what it is expected to cost (what
        one released takes from the room the next sees). Returns how many."""
        now = self._clock.now()
        async with self._uow(TenantScope.system()) as uow:
            held = [
                j
                for j in await uow.jobs.of_tenants(
                    tenants, {JobStatus.PENDING}, held=True, limit=SCOPE_JOBS
                )
                if j.held_by is not BudgetScope.JOB
            ]
            if not held:
                return 0
            if standings is None:
                standings = [s for t in tenants for s in await standings_of(uow, t, None, now)]
            books = await _books(uow, held)
        room = {s.budget.key: s.left for s in standings}
        exhausted = {s.budget.key for s in standings if s.exhausted}
        released = 0
        for job in held:
            over = [s for s in standings if s.budget.covers(job.tenant_id, job.project_id)]
            book = books.get(job.cluster_id)
            cost = (expected_cost(job, book) if book is not None else None) or Decimal(0)
            if any(
                s.budget.action is not BudgetAction.WARN
                and (s.budget.key in exhausted or cost > room[s.budget.key])
                for s in over
            ):
                continue
            for s in over:
                room[s.budget.key] -= cost
            if await self._release(job):
                released += 1
        return released

    async def _release(self, seen: Job) -> bool:
        try:
            async with self._uow(TenantScope.system()) as uow:
                job = await uow.jobs.get(seen.id, for_update=True)
                if job is None or job.status is not JobStatus.PENDING or job.held_by is None:
                    return False
                job.release(self._clock.now())
                await uow.commit()  # its hand-over follows (reactions)
        except Conflict:
            return False
        return True


def _enforce_own(job: Job, notice: BudgetNotice, now: datetime) -> str | None:
    """At 100 % of its own budget: CANCEL cancels the job, PAUSE takes it back and holds it
    until its budget is raised. What was done, if anything."""
    if notice.share < 100 or notice.action is BudgetAction.WARN:
        return None
    if notice.action is BudgetAction.CANCEL:
        job.transition(JobStatus.CANCELLED, f"over budget: {notice.message}", now)
        return "cancelled"
    job.pause(BudgetScope.JOB, job_hold_reason(notice), None, now)
    return "paused"


def _audited(job: Job, notice: BudgetNotice, acted: str | None) -> AuditEvent:
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
            "cancelled": acted == "cancelled",
            "paused": acted == "paused",
        },
        outcome="OK",
        source="system",
        project_id=job.project_id,
    )


def _audited_budget(budget: Budget, notice: BudgetNotice, at: datetime) -> AuditEvent:
    operation = "budgetExceeded" if notice.share >= 100 else "budgetWarning"
    targets = (str(budget.tenant_id),) + ((str(budget.project_id),) if budget.project_id else ())
    return AuditEvent(
        id=uuid.uuid4(),
        at=at,
        tenant_id=budget.tenant_id,
        actor=SYSTEM_ACTOR,
        token_id=None,
        operation=operation,
        targets=targets,
        input={
            "scope": budget.scope.value,
            "spent": str(notice.cost),
            "limit": str(budget.limit),
            "share": notice.share,
            "budgetAction": budget.action.value,
        },
        outcome="OK",
        source="system",
        project_id=budget.project_id,
    )
