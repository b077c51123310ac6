"""API tokens: issued once, stored hashed, resolved to a principal; revoked and malformed fail."""

from __future__ import annotations

import uuid

import pytest

from domain.errors import Unauthenticated, ValidationFailed
from domain.model.ids import ProjectId, TenantId
from domain.model.principal import Scope
from domain.services.tokens import TokenService
from tests.support.fakes import FakeClock, FakeHasher, FakeUnitOfWorkFactory


@pytest.fixture
def tokens() -> TokenService:
    return TokenService(uow=FakeUnitOfWorkFactory(), clock=FakeClock(), hasher=FakeHasher())


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
        tenant_id=TenantId(uuid.uuid4()), name="x", scopes=frozenset({Scope.ADMIN})
    )
    forged = issued.secret[:-4] + "AAAA"
    with pytest.raises(Unauthenticated):
        await tokens.authenticate(forged)
    await tokens.revoke(issued.token.id)
    with pytest.raises(Unauthenticated):
        await tokens.authenticate(issued.secret)


async def test_scopes_and_names_are_required(tokens: TokenService) -> None:
    with pytest.raises(ValidationFailed):
        await tokens.issue(
            tenant_id=TenantId(uuid.uuid4()), name="", scopes=frozenset({Scope.ADMIN})
        )
    with pytest.raises(ValidationFailed):
        await tokens.issue(tenant_id=TenantId(uuid.uuid4()), name="x", scopes=frozenset())
