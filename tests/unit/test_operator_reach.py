"""The operator's reach: the `admin` token reads and acts on every tenant's objects, with fakes.

Covers: a tenant's job is found by id, in lists and histories, and cancelled, retried and
re-prioritised by the operator, staying its tenant's; its audit event is the tenant's (and
project's), so the tenant reads what was done; the operator's deployments reads, scaling (the
new replicas are the tenant's) and stopping; benchmarks read, sampled and cancelled; job and
deployment streams carry every tenant's changes to the operator; a revoked token's event is its
tenant's; an operator token is not limited to projects.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import replace

import pytest

from domain.errors import ValidationFailed
from domain.model.audit import AuditedOperation, current
from domain.model.ids import ProjectId, TenantId, TokenId
from domain.model.job import JobPriority, JobStatus
from domain.model.principal import Principal, Scope
from domain.ports.repositories import JobFilter
from domain.services.deployment_updates import (
    DeploymentSnapshot,
    DeploymentUpdate,
    DeploymentUpdatesService,
)
from domain.services.tokens import TokenService
from domain.services.updates import Change
from tests.support.fakes import (
    FakeClock,
    FakeEventLog,
    FakeHasher,
    FakeHub,
    FakeUnitOfWorkFactory,
)
from tests.unit import test_benchmarks, test_deployments
from tests.unit.test_job_service import World
from tests.unit.test_submission import GOOD
from tests.unit.test_updates import Stream, UpdatesWorld, snapshotted

OPERATOR = Principal(TenantId(uuid.uuid4()), frozenset({Scope.ADMIN}), token_id=uuid.uuid4())  # type: ignore[arg-type]


def audited(*, operator: bool = True) -> AuditedOperation:
    return AuditedOperation(
        OPERATOR.tenant_id,
        f"token:{OPERATOR.token_id}",
        OPERATOR.token_id,
        "op",
        {},
        operator=operator,
    )


async def test_the_operator_reads_and_acts_on_a_tenants_jobs() -> None:
    world = World()
    job = await world.service.submit(world.alice, GOOD)
    other = await world.service.submit(world.bob, replace(GOOD, name="bobs"))
    assert (await world.service.get(OPERATOR, job.id)) is not None
    found = await world.service.get_many(OPERATOR, [job.id, other.id])
    assert [j.id for j in found] == [job.id, other.id]
    listed = await world.service.page(OPERATOR, JobFilter(), first=10, after=None)
    assert {j.id for j in listed.jobs} == {job.id, other.id}
    assert list(await world.service.events(OPERATOR, [job.id])) == [job.id]

    world.stored(job.id).status = JobStatus.QUEUED
    changed = await world.service.change_priority(OPERATOR, job.id, JobPriority.HIGH)
    assert changed.priority is JobPriority.HIGH
    made = audited()
    token = current.set(made)
    try:
        await world.service.cancel(OPERATOR, job.id, "operator says so")
    finally:
        current.reset(token)
    stored = world.stored(job.id)
    assert (stored.status, stored.tenant_id) == (JobStatus.CANCELLED, world.alice.tenant_id)
    event = made.event(uuid.uuid4(), world.clock.now())
    assert (event.tenant_id, event.project_id) == (world.alice.tenant_id, GOOD.project_id)
    assert (await world.service.get(world.alice, job.id)) is not None  # still the tenant's

    stored.status = JobStatus.FAILED
    retried = await world.service.retry(OPERATOR, job.id)
    assert (retried.status, retried.tenant_id) == (JobStatus.PENDING, world.alice.tenant_id)


async def test_a_tenants_own_event_stays_its_own_whatever_it_touched() -> None:
    """Only the operator's events move to the tenant acted on."""
    made = audited(operator=False)
    made.concerns(TenantId(uuid.uuid4()), None)
    assert made.event(uuid.uuid4(), FakeClock().now()).tenant_id == OPERATOR.tenant_id


async def test_the_operator_scales_and_stops_a_tenants_deployment() -> None:
    world = test_deployments.World()
    d = await world.service.deploy(world.alice, world.request(replicas=1))
    assert (await world.service.get(OPERATOR, d.id)) is not None
    assert [x.id for x in (await world.service.page(OPERATOR)).items] == [d.id]
    scaled = await world.service.scale(OPERATOR, d.id, 2)
    assert scaled.tenant_id == world.alice.tenant_id
    replicas = world.replica_jobs(world.uow.store.deployments[d.id])
    assert len(replicas) == 2
    assert {(j.tenant_id, j.project_id) for j in replicas} == {
        (world.alice.tenant_id, d.project_id)
    }
    stopped = await world.service.stop(OPERATOR, d.id)
    assert stopped.stopped and stopped.tenant_id == world.alice.tenant_id
    assert (await world.service.get(world.alice, d.id)) is not None


async def test_the_operator_reads_samples_and_cancels_a_tenants_benchmark() -> None:
    world = test_benchmarks.World()
    b = await world.service.run(world.alice, world.request())
    assert (await world.service.get(OPERATOR, b.id)) is not None
    assert await world.service.samples(OPERATOR, b.id) == []
    assert [x.id for x in (await world.service.page(OPERATOR)).items] == [b.id]
    cancelled = await world.service.cancel(OPERATOR, b.id)
    assert cancelled.tenant_id == world.alice.tenant_id
    assert world.stored(b.id).value == "CANCELLED"


async def test_the_operators_job_stream_carries_every_tenant() -> None:
    world = UpdatesWorld()
    stream = await Stream(world, world.hub).open(OPERATOR)
    first = snapshotted(await asyncio.wait_for(anext(stream), 1))
    assert first.jobs == []
    job = await world.service.submit(world.alice, GOOD)
    change = await asyncio.wait_for(anext(stream), 1)
    assert isinstance(change, Change) and change.change.job.id == job.id
    await stream.aclose()
    again = await Stream(world, world.hub).open(OPERATOR)
    assert [j.id for j in snapshotted(await asyncio.wait_for(anext(again), 1)).jobs] == [job.id]
    await again.aclose()


async def test_the_operators_deployment_stream_carries_every_tenant() -> None:
    world = test_deployments.World()
    hub = FakeHub()
    service = DeploymentUpdatesService(uow=world.uow, hub=hub, log=FakeEventLog(world.uow.store))
    d = await world.service.deploy(world.alice, world.request(replicas=1))
    stream = await service.deployment_updates(OPERATOR, world.cluster.id)
    first = await asyncio.wait_for(anext(stream), 1)
    assert isinstance(first, DeploymentSnapshot) and [x.id for x in first.deployments] == [d.id]
    stopped = await world.service.stop(world.alice, d.id)
    hub.deliver(world.uow.store.events[world.cluster.id][-1:])
    update = await asyncio.wait_for(anext(stream), 1)
    assert isinstance(update, DeploymentUpdate) and update.deployment.id == stopped.id
    await stream.aclose()


async def test_a_revoked_tokens_event_is_its_tenants() -> None:
    """`token revoke` runs as the machine's operator, for no tenant: its event is the tenant's
    whose token it revoked, as `token create`'s is."""
    tokens = TokenService(uow=FakeUnitOfWorkFactory(), clock=FakeClock(), hasher=FakeHasher())
    tenant = TenantId(uuid.uuid4())
    issued = await tokens.issue(tenant_id=tenant, name="ci")
    made = AuditedOperation(None, "cli:ops", None, "token revoke", {}, source="cli", operator=True)
    token = current.set(made)
    try:
        await tokens.revoke(TokenId(issued.token.id))
    finally:
        current.reset(token)
    assert made.event(uuid.uuid4(), FakeClock().now()).tenant_id == tenant


async def test_the_operators_token_is_not_limited_to_projects() -> None:
    """Projects are a tenant's: an operator token limited to some would see every tenant's
    objects by id and only those projects' in lists."""
    tokens = TokenService(uow=FakeUnitOfWorkFactory(), clock=FakeClock(), hasher=FakeHasher())
    with pytest.raises(ValidationFailed) as refused:
        await tokens.issue(
            tenant_id=TenantId(uuid.uuid4()),
            name="ops",
            scopes=frozenset({Scope.ADMIN}),
            project_ids=frozenset({ProjectId(uuid.uuid4())}),
            operator=True,
        )
    assert [i.field for i in refused.value.issues] == ["project_ids"]
