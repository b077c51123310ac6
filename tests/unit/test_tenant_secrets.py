"""Tenant secrets in the domain, with fakes: what a secret's keys, values and a job's references
may be; the service stores a secret sealed for its tenant and name, replaces it with a new
version, keeps tenants apart, and opens a job's secrets for its hand-over (noted as used and
audited), or says why it can't."""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import timedelta

import pytest

from adapters.secrets.envelope import EnvelopeSecretBox
from adapters.secrets.keyring import Keyring, generate_private_key_pem
from domain.errors import (
    Conflict,
    FieldIssue,
    Forbidden,
    NotFound,
    SecretUnreadable,
    ValidationFailed,
)
from domain.model.ids import TenantId
from domain.model.job import Job, JobStatus
from domain.model.principal import Principal, Scope
from domain.model.tenant_secret import (
    SecretRef,
    data_issues,
    mount_path_problem,
    ref_issues,
    secret_owner,
    usable_issues,
)
from domain.ports.unit_of_work import TenantScope
from domain.services.tenant_secrets import USED, SecretGone, SecretService
from tests.support.fakes import T0, FakeClock, FakeUnitOfWorkFactory
from tests.unit.test_job_model import new_job

ALICE = TenantId(uuid.UUID("a11ce000-0000-4000-8000-000000000001"))
BOB = TenantId(uuid.UUID("b0b00000-0000-4000-8000-000000000002"))
WRITER = frozenset({Scope.JOBS_READ, Scope.SECRETS_WRITE})


@pytest.fixture(scope="module")
def box() -> EnvelopeSecretBox:
    return EnvelopeSecretBox(Keyring.from_pem_text(generate_private_key_pem(bits=3072).decode()))


@pytest.fixture
def uow() -> FakeUnitOfWorkFactory:
    return FakeUnitOfWorkFactory()


@pytest.fixture
def service(uow: FakeUnitOfWorkFactory, box: EnvelopeSecretBox) -> SecretService:
    return SecretService(uow=uow, box=box, clock=FakeClock(T0))


def paths(issues: list[FieldIssue]) -> list[tuple[str, str]]:
    return [(i.field, i.code) for i in issues]


def test_keys_and_values_are_checked_without_quoting_a_value() -> None:
    assert data_issues([("HF_TOKEN", "v")]) == []
    found = data_issues([("a b", "v"), ("..", "v"), ("K", "v"), ("K", "w"), ("N", "x\x00")])
    assert paths(found) == [
        ("data[0].key", "INVALID"),
        ("data[1].key", "INVALID"),
        ("data[3].key", "DUPLICATE"),
        ("data[4].value", "INVALID"),
    ]
    assert all("x\x00" not in i.message for i in found)
    assert paths(data_issues([])) == [("data", "REQUIRED")]


def test_references_and_mount_paths() -> None:
    for bad in ("relative", "/", "/a/../b", "/a:b", "/a/./b"):
        assert mount_path_problem(bad) is not None, bad
    assert mount_path_problem("/etc/tls") is None
    refs = [SecretRef("a", "/etc/a"), SecretRef("b", "/etc/a/b"), SecretRef("a")]
    assert paths(ref_issues(refs)) == [
        ("secrets[1].mount_path", "DUPLICATE"),
        ("secrets[2].name", "DUPLICATE"),
    ]
    assert paths(ref_issues([SecretRef(f"s{i}") for i in range(9)])) == [("secrets", "TOO_MANY")]


async def test_a_secret_is_sealed_for_its_tenant_and_name_and_replaced_with_a_new_version(
    service: SecretService, box: EnvelopeSecretBox
) -> None:
    alice = Principal(ALICE, WRITER)
    first = await service.put(alice, None, "hf", [("HF_TOKEN", "one")])
    assert (first.keys, first.version) == (("HF_TOKEN",), 1)
    assert box.open(first.sealed, owner=secret_owner(ALICE, "hf")) == b'{"HF_TOKEN":"one"}'
    with pytest.raises(SecretUnreadable):  # bound to its owner: another tenant's can't open it
        box.open(first.sealed, owner=secret_owner(BOB, "hf"))
    second = await service.put(alice, None, "hf", [("HF_TOKEN", "two"), ("USER", "me")])
    assert (second.id, second.version, second.keys) == (first.id, 2, ("HF_TOKEN", "USER"))
    assert "two" not in repr(second)
    with pytest.raises(ValidationFailed):
        await service.put(alice, None, "Bad_Name", [("A", "1")])


async def test_tenants_stay_apart_and_writing_needs_its_scope(service: SecretService) -> None:
    await service.put(Principal(ALICE, WRITER), None, "hf", [("HF_TOKEN", "x")])
    with pytest.raises(Forbidden):
        await service.put(Principal(ALICE, frozenset({Scope.JOBS_READ})), None, "hf", [("A", "1")])
    bob = Principal(BOB, WRITER)
    assert await service.secrets(bob) == []
    with pytest.raises(NotFound):
        await service.secrets(bob, ALICE)
    with pytest.raises(NotFound):
        await service.remove(bob, None, "hf")
    operator = Principal(BOB, frozenset({Scope.ADMIN}))
    assert [s.name for s in await service.secrets(operator, ALICE)] == ["hf"]


async def test_a_jobs_secrets_are_opened_noted_and_audited_or_it_says_why_not(
    service: SecretService, uow: FakeUnitOfWorkFactory
) -> None:
    alice = Principal(ALICE, WRITER)
    await service.put(alice, None, "hf", [("HF_TOKEN", "s3cr3t-value")])
    job = replace(new_job(), tenant_id=ALICE, secrets=(SecretRef("hf"),))
    async with uow(TenantScope.system()) as opened:
        (mounted,) = await service.open_for(opened, job, "sim-a")
    assert mounted.data == {"HF_TOKEN": "s3cr3t-value"} and "s3cr3t-value" not in repr(mounted)
    (event,) = uow.store.audit
    assert event.operation == USED and event.input["names"] == ["hf"]
    assert "s3cr3t-value" not in repr(event)
    (stored,) = uow.store.secrets.values()
    assert stored.last_used_at == T0
    assert usable_issues([SecretRef("hf")], {"hf": stored}) == []
    await service.remove(alice, None, "hf")
    async with uow(TenantScope.system()) as opened:
        with pytest.raises(SecretGone, match="secret hf was removed"):
            await service.open_for(opened, job, "sim-a")


async def test_removal_is_refused_while_jobs_not_ended_name_it_unless_forced(
    service: SecretService, uow: FakeUnitOfWorkFactory
) -> None:
    alice = Principal(ALICE, WRITER)
    await service.put(alice, None, "hf", [("HF_TOKEN", "x")])
    await service.put(alice, None, "other", [("K", "y")])

    def stored(status: JobStatus, tenant: TenantId, *names: str) -> Job:
        # each created a minute after the last: the refusal names them oldest first
        created = T0 + timedelta(minutes=len(uow.store.jobs))
        refs = tuple(SecretRef(n) for n in names)
        job = replace(new_job(status), tenant_id=tenant, secrets=refs, created_at=created)
        uow.store.jobs[job.id] = job
        return job

    waiting = stored(JobStatus.PENDING, ALICE, "other", "hf")
    preempted = stored(JobStatus.PREEMPTED, ALICE, "hf")  # requeued: opens it again
    stored(JobStatus.COMPLETED, ALICE, "hf")
    stored(JobStatus.RUNNING, ALICE, "other")
    stored(JobStatus.RUNNING, BOB, "hf")  # Bob's hf is another secret

    with pytest.raises(Conflict) as refused:
        await service.remove(alice, None, "hf")
    assert refused.value.code == "IN_USE"
    assert f"2 jobs ({waiting.id}, {preempted.id})" in str(refused.value)
    assert [s.name for s in await service.secrets(alice)] == ["hf", "other"]  # nothing removed

    uow.store.jobs[preempted.id] = replace(preempted, status=JobStatus.CANCELLED)
    with pytest.raises(Conflict, match=rf"1 job \({waiting.id}\)"):
        await service.remove(alice, None, "hf")
    assert (await service.remove(alice, None, "hf", force=True)).name == "hf"
    assert [s.name for s in await service.secrets(alice)] == ["other"]
