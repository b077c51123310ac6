"""API tokens: issued once, stored hashed, resolved to a principal; revoked, expired and malformed
fail; tenants' tokens get least privilege by default and never the operator's scopes."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest

from domain.errors import Unauthenticated, ValidationFailed
from domain.model.ids import ProjectId, TenantId
from domain.model.principal import OPERATOR_SCOPES, TENANT_DEFAULT_SCOPES, Scope
from domain.services.tokens import TokenService
from tests.support.fakes import FakeClock, FakeHasher, FakeUnitOfWorkFactory


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def tokens(clock: FakeClock) -> TokenService:
    return TokenService(uow=FakeUnitOfWorkFactory(), clock=clock, hasher=FakeHasher())


async def test_issue_and_authenticate(tokens: TokenService) -> None:
    tenant, project = TenantId(uuid.uuid4()), ProjectId(uuid.uuid4())
    issued = await tokens.issue(
        tenant_id=tenant,
        name="ci",
        scopes=frozenset({Scope.JOBS_READ}),
        project_ids=frozenset({project}),
    )
    assert issued.secret.startswith(f"bud_{issued.token.id.hex}_")
    assert issued.secret.split("_", 2)[2] not in issued.token.secret_hash
    principal = await tokens.authenticate(issued.secret)
    assert (principal.tenant_id, principal.scopes, principal.project_ids) == (
        tenant,
        frozenset({Scope.JOBS_READ}),
        frozenset({project}),
    )
    assert principal.has(Scope.JOBS_READ) and not principal.has(Scope.JOBS_WRITE)


@pytest.mark.parametrize(
    "bearer", [None, "", "nonsense", "bud_xyz_abc", f"bud_{uuid.uuid4().hex}_{'a' * 43}"]
)
async def test_missing_malformed_and_unknown_tokens_are_unauthenticated(
    tokens: TokenService, bearer: str | None
) -> None:
    with pytest.raises(Unauthenticated):
        await tokens.authenticate(bearer)


async def test_wrong_secret_and_revoked(tokens: TokenService) -> None:
    issued = await tokens.issue(
        tenant_id=TenantId(uuid.uuid4()), name="x", scopes=frozenset({Scope.ADMIN}), operator=True
    )
    forged = issued.secret[:-4] + "AAAA"
    with pytest.raises(Unauthenticated):
        await tokens.authenticate(forged)
    await tokens.revoke(issued.token.id)
    with pytest.raises(Unauthenticated):
        await tokens.authenticate(issued.secret)


async def test_names_are_required(tokens: TokenService) -> None:
    with pytest.raises(ValidationFailed):
        await tokens.issue(
            tenant_id=TenantId(uuid.uuid4()),
            name="",
            scopes=frozenset({Scope.ADMIN}),
            operator=True,
        )


async def test_least_privilege_by_default_and_operator_scopes_only_for_operators(
    tokens: TokenService,
) -> None:
    """Found from outside: a token issued without scopes was an admin token, even for a new
    tenant, and a tenant could be given the operator's clusters:write."""
    tenant = await tokens.issue(tenant_id=TenantId(uuid.uuid4()), name="team")
    assert tenant.token.scopes == TENANT_DEFAULT_SCOPES
    principal = await tokens.authenticate(tenant.secret)
    assert not principal.is_operator and not principal.has(Scope.CLUSTERS_WRITE)
    for scope in OPERATOR_SCOPES:
        with pytest.raises(ValidationFailed) as caught:
            await tokens.issue(
                tenant_id=TenantId(uuid.uuid4()), name="x", scopes=frozenset({scope})
            )
        assert caught.value.issues[0].field == "scopes"
    operator = await tokens.issue(tenant_id=TenantId(uuid.uuid4()), name="ops", operator=True)
    assert operator.token.scopes == {Scope.ADMIN}
    assert (await tokens.authenticate(operator.secret)).is_operator


async def test_a_token_expires(tokens: TokenService, clock: FakeClock) -> None:
    issued = await tokens.issue(
        tenant_id=TenantId(uuid.uuid4()), name="short", expires_at=clock.now() + timedelta(hours=1)
    )
    other = await tokens.issue(tenant_id=TenantId(uuid.uuid4()), name="long")
    await tokens.authenticate(issued.secret)
    assert await tokens.unusable([issued.token.id, other.token.id]) == set()
    clock.advance(3600)
    with pytest.raises(Unauthenticated, match="expired"):
        await tokens.authenticate(issued.secret)
    assert await tokens.unusable([issued.token.id, other.token.id]) == {issued.token.id}
    await tokens.revoke(other.token.id)
    assert await tokens.unusable([issued.token.id, other.token.id]) == {
        issued.token.id,
        other.token.id,
    }
    with pytest.raises(ValidationFailed):
        await tokens.issue(tenant_id=TenantId(uuid.uuid4()), name="x", expires_at=clock.now())
