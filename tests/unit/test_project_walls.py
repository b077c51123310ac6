"""Walls inside a tenant: a token limited to projects, with fakes of every port.

Covers: what a principal may see (its tenant's objects in its projects and those of no project;
the operator every tenant's) and the unit-of-work scope that follows; the schedule and its
stream show a limited token the tenant's other projects' jobs as another tenant's (anonymous,
not `mine`), its reservations named, and never hand it a cut made for an unlimited token; jobs
of other projects are not found by id, in lists, in histories, by a command, as a dependency or
among the users of a LocalQueue it may not delete; the audit trail gives such a token its
projects' events and its own, an event belongs to the project of what it acted on, and an event
that spans projects or names none is not shown to it.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import replace
from datetime import timedelta

import pytest

from domain.errors import Conflict, NotFound, ValidationFailed
from domain.model.audit import AuditedOperation, AuditEvent, AuditFilter, current
from domain.model.ids import JobId, ProjectId, TenantId
from domain.model.job import JobPriority
from domain.model.principal import TENANT_DEFAULT_SCOPES, Principal, Scope
from domain.model.reservation import CapacityReservation, ReservationId
from domain.model.timeline import Timeline
from domain.ports.repositories import JobFilter
from domain.ports.unit_of_work import TenantScope
from domain.scheduling import timeline as timelines
from domain.scheduling.durations import Durations
from domain.scheduling.estimator import Snapshot, estimate
from domain.services.audit import AuditService
from domain.services.quotas import QuotaService
from domain.services.schedule_updates import ScheduleChange, ScheduleUpdatesService
from domain.services.timeline import cut, visible_to
from tests.support.admission_tables import A100, CLUSTER, NOW, TENANT
from tests.support.fakes import FakeClock, FakeEventLog, FakeUnitOfWorkFactory
from tests.unit.test_job_service import World
from tests.unit.test_submission import GOOD
from tests.unit.test_timeline import SCENARIO, service_world

P1, P2 = ProjectId(uuid.uuid4()), ProjectId(uuid.uuid4())
SCOPES = TENANT_DEFAULT_SCOPES


def limited(tenant: TenantId, *projects: ProjectId) -> Principal:
    return Principal(tenant, SCOPES, frozenset(projects), token_id=uuid.uuid4())  # type: ignore[arg-type]


def test_who_may_see_what() -> None:
    tenant, other = TenantId(uuid.uuid4()), TenantId(uuid.uuid4())
    whole = Principal(tenant, SCOPES)
    one = limited(tenant, P1)
    operator = Principal(other, frozenset({Scope.ADMIN}))
    assert whole.may_see(tenant, P2) and not whole.may_see(other, P1)
    assert one.may_see(tenant, P1) and not one.may_see(tenant, P2)
    assert one.may_see(tenant, None)  # a LocalQueue, a reservation: the tenant's
    assert operator.may_see(tenant, P2) and operator.may_see(other, None)
    assert TenantScope.of(one) == TenantScope(tenant)
    assert TenantScope.of(operator) == TenantScope.system()
    assert one.acting_for(other) is one and operator.acting_for(other) is operator
    for_tenant = operator.acting_for(tenant)
    assert (for_tenant.tenant_id, for_tenant.scopes, for_tenant.token_id) == (
        tenant,
        operator.scopes,
        operator.token_id,
    )


# --- the schedule -----------------------------------------------------------------------------


def two_projects() -> Timeline:
    """SCENARIO's jobs, `low` and `next` in P2 and the rest in P1, with a reservation."""
    jobs = SCENARIO.jobs()
    for job in jobs:
        job.estimated_duration_seconds = 3600
        job.project_id = P2 if job.name in ("low", "next") else P1
    booked = CapacityReservation(
        ReservationId(uuid.uuid4()),
        CLUSTER,
        TENANT,
        "demo",
        "cq",
        A100,
        8,
        NOW + timedelta(hours=2),
        NOW + timedelta(hours=3),
        NOW,
    )
    snapshot = Snapshot(
        NOW,
        SCENARIO.node_objects(),
        SCENARIO.quota_set(),
        jobs,
        Durations(),
        reservations=[booked],
    )
    return timelines.build(
        estimate(snapshot),
        SCENARIO.node_objects(),
        jobs,
        [],
        [booked],
        Durations(),
        timelines.SegmentIds(b"test"),
    )


def test_the_schedule_shows_a_limited_token_its_other_projects_as_another_tenants() -> None:
    tl = two_projects()
    window = (NOW - timedelta(hours=1), NOW + timedelta(days=1))
    one = limited(TENANT, P1)
    seen = cut(tl, one, *window)
    names = sorted(s.name for s in seen.segments.values())
    assert names == ["another tenant", "another tenant", "cpu-only", "demo", "run"]
    shown = visible_to(one)
    assert all(
        shown(s) == (s.name != "another tenant") and (s.job_id is None) == (s.name != "run")
        for s in seen.segments.values()
        if s.name != "cpu-only"
    )
    assert sorted((e.name, shown(e), bool(e.job_id)) for e in seen.queue) == [
        ("another tenant", False, False),
        ("cpu-only", True, True),
    ]
    assert {s.name for s in cut(tl, one, *window, only_mine=True).segments.values()} == {
        "run",
        "cpu-only",
        "demo",
    }
    whole = cut(tl, Principal(TENANT, SCOPES), *window)
    assert sorted(s.name for s in whole.segments.values()) == [
        "cpu-only",
        "demo",
        "low",
        "next",
        "run",
    ]


async def test_a_schedule_stream_is_cut_per_view_never_shared_across_projects() -> None:
    """The cut of a change is shared by subscribers with the same view: the tenant's unlimited
    token and its token limited to P1 are not the same view."""
    world, svc, hub = service_world()
    await world.quota_service.ensure_defaults(world.cluster)
    tenant = world.alice.tenant_id
    one = limited(tenant, P1)
    await world.service.submit(world.alice, replace(GOOD, project_id=P1, name="first"))
    await svc.refresh(world.cluster.id)
    streams = ScheduleUpdatesService(timeline=svc, hub=hub, log=FakeEventLog(world.uow.store))
    now = world.clock.now()
    window = (now - timedelta(hours=1), now + timedelta(days=1))
    whole = await streams.updates(world.alice, world.cluster.id, *window)
    part = await streams.updates(one, world.cluster.id, *window)
    for stream in (whole, part):
        await asyncio.wait_for(anext(stream), 1)  # the snapshots
    secret = await world.service.submit(world.alice, replace(GOOD, project_id=P2, name="secret"))
    await svc.refresh(world.cluster.id)
    to_whole = await asyncio.wait_for(anext(whole), 1)
    to_part = await asyncio.wait_for(anext(part), 1)
    assert isinstance(to_whole, ScheduleChange) and isinstance(to_part, ScheduleChange)
    assert [s.name for s in to_whole.added] == ["secret"]
    assert [(s.name, s.job_id) for s in to_part.added] == [("another tenant", None)]
    assert str(secret.id) not in str(to_part)
    for stream in (whole, part):
        await stream.aclose()


# --- jobs ---------------------------------------------------------------------------------------


async def test_jobs_of_other_projects_are_not_found() -> None:
    world = World()
    theirs = await world.service.submit(world.alice, replace(GOOD, project_id=P2))
    ours = await world.service.submit(world.alice, replace(GOOD, project_id=P1, name="ours"))
    one = limited(world.alice.tenant_id, P1)
    assert await world.service.get(one, theirs.id) is None
    assert [j.id for j in await world.service.get_many(one, [theirs.id, ours.id])] == [ours.id]
    listed = await world.service.page(one, JobFilter(), first=10, after=None)
    assert [j.id for j in listed.jobs] == [ours.id]
    asked = JobFilter(project_ids=frozenset({P2}))
    assert (await world.service.page(one, asked, first=10, after=None)).jobs == []
    assert list(await world.service.events(one, [theirs.id, ours.id])) == [ours.id]
    for command in (
        world.service.cancel(one, theirs.id, None),
        world.service.retry(one, theirs.id),
        world.service.change_priority(one, theirs.id, JobPriority.HIGH),
    ):
        with pytest.raises(NotFound):
            await command


async def test_a_job_of_another_project_is_no_dependency_to_name() -> None:
    """Depending on another project's job is refused as depending on one that does not exist
    (its existence, its cluster, are not for this token to learn)."""
    world = World()
    theirs = await world.service.submit(world.alice, replace(GOOD, project_id=P2))
    one = limited(world.alice.tenant_id, P1)
    answers = []
    for named in (theirs.id, JobId(uuid.uuid4())):
        with pytest.raises(ValidationFailed) as refused:
            await world.service.submit(
                one, replace(GOOD, project_id=P1, name="after", depends_on=(named,))
            )
        [issue] = refused.value.issues
        answers.append((issue.field, issue.code, issue.message.replace(str(named), "<id>")))
    assert answers[0] == answers[1] == ("depends_on", "NOT_FOUND", "no job of yours with id <id>")
    whole = Principal(world.alice.tenant_id, SCOPES)
    after = await world.service.submit(whole, replace(GOOD, name="after", depends_on=(theirs.id,)))
    assert after.depends_on == (theirs.id,)


async def test_a_queue_in_use_by_another_projects_job_does_not_name_it() -> None:
    world = World()
    await world.service.submit(world.alice, replace(GOOD, project_id=P2, name="secret-plan"))
    ours = await world.service.submit(world.alice, replace(GOOD, project_id=P1, name="ours"))
    quotas = QuotaService(uow=world.uow, clock=world.clock)
    one = replace(limited(world.alice.tenant_id, P1), scopes=SCOPES | {Scope.QUEUES_WRITE})
    with pytest.raises(Conflict) as refused:
        await quotas.delete_local_queue(one, cluster_id=ours.cluster_id, name="default")
    assert "secret-plan" not in refused.value.message
    assert "job ours" in refused.value.message and "1 object of other projects" in (
        refused.value.message
    )


# --- the audit trail ----------------------------------------------------------------------------


def operation(tenant: TenantId | None, *, operator: bool = False) -> AuditedOperation:
    return AuditedOperation(tenant, "token:x", None, "cancelJob", {}, operator=operator)


def test_an_event_belongs_to_the_project_of_what_it_acted_on() -> None:
    tenant, other = TenantId(uuid.uuid4()), TenantId(uuid.uuid4())
    one = operation(tenant)
    one.concerns(tenant, P1)
    one.concerns(tenant, P1)
    assert one.owner() == (tenant, P1)
    both = operation(tenant)
    both.concerns(tenant, P1)
    both.concerns(tenant, P2)
    assert both.owner() == (tenant, None)
    whole = operation(tenant)
    whole.concerns(tenant)
    assert whole.owner() == (tenant, None)
    assert operation(tenant).owner() == (tenant, None)  # refused before finding anything
    strange = operation(tenant)  # a tenant's event never moves to another tenant
    strange.concerns(other, P1)
    assert strange.owner() == (tenant, None)


async def test_a_limited_token_reads_its_projects_events_and_its_own() -> None:
    uow = FakeUnitOfWorkFactory()
    clock = FakeClock()
    audit = AuditService(uow=uow, clock=clock, retention=timedelta(days=1))
    tenant = TenantId(uuid.uuid4())
    one = limited(tenant, P1)

    async def recorded(project: ProjectId | None, token: uuid.UUID | None = None) -> AuditEvent:
        made = AuditedOperation(tenant, "token:x", token, "submitJob", {"p": str(project)})
        if project is not None:
            made.concerns(tenant, project)
        await audit.finish(made, "OK")
        clock.advance(1)
        return uow.store.audit[-1]

    in_p1, in_p2, in_none = await recorded(P1), await recorded(P2), await recorded(None)
    own = await recorded(None, one.token_id)
    assert (in_p1.project_id, in_p2.project_id, in_none.project_id) == (P1, P2, None)
    page = await audit.page(one, AuditFilter(), first=10)
    assert [e.id for e in page.events] == [own.id, in_p1.id]
    whole = await audit.page(Principal(tenant, SCOPES), AuditFilter(), first=10)
    assert len(whole.events) == 4


async def test_a_service_says_whose_job_a_refused_command_was_about() -> None:
    """A refusal changes nothing, yet its event is the project's of the job it was about."""
    world = World()
    job = await world.service.submit(world.alice, replace(GOOD, project_id=P2))
    await world.service.cancel(world.alice, job.id, None)
    made = operation(world.alice.tenant_id)
    token = current.set(made)
    try:
        with pytest.raises(Exception, match="already CANCELLED"):
            await world.service.cancel(world.alice, job.id, None)
    finally:
        current.reset(token)
    assert made.owner() == (world.alice.tenant_id, P2)
