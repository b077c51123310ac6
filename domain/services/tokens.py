"""API tokens: issued once, stored hashed, resolved to a principal on every operation.

A token reads `bud_<token id as 32 hex digits>_<secret>`. The id finds the stored record in one
indexed lookup; the secret is checked against its hash in constant time. Revoked, expired, unknown
and malformed tokens are all the same answer to a caller: unauthenticated. Operator scopes
(`clusters:write`, `admin`) are issued only to operator tokens, and a tenant's token with no scope
asked for gets the tenant defaults, never more. `unusable` tells which of the tokens behind open
connections were revoked or expired since they were checked, so those connections can be closed.
Issuing and revoking a token are events of its tenant's audit trail.
"""

from __future__ import annotations

import re
import secrets
import uuid
from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime

from domain.errors import NotFound, Unauthenticated, ValidationFailed
from domain.model.audit import concerning
from domain.model.ids import ProjectId, TenantId, TokenId, new_token_id
from domain.model.principal import (
    OPERATOR_SCOPES,
    TENANT_DEFAULT_SCOPES,
    ApiToken,
    Principal,
    Scope,
)
from domain.ports.clock import Clock
from domain.ports.secrets import SecretHasher
from domain.ports.unit_of_work import TenantScope, UnitOfWorkFactory

_TOKEN = re.compile(r"^bud_([0-9a-f]{32})_([A-Za-z0-9_-]{20,128})$")


@dataclass(frozen=True)
class IssuedToken:
    token: ApiToken
    secret: str
    """The whole bearer value. Shown once; never stored."""


class TokenService:
    def __init__(self, *, uow: UnitOfWorkFactory, clock: Clock, hasher: SecretHasher) -> None:
        self._uow = uow
        self._clock = clock
        self._hasher = hasher

    async def issue(
        self,
        *,
        tenant_id: TenantId,
        name: str,
        scopes: frozenset[Scope] = frozenset(),
        project_ids: frozenset[ProjectId] | None = None,
        operator: bool = False,
        expires_at: datetime | None = None,
    ) -> IssuedToken:
        """A token for `tenant_id`. A tenant's token gets the tenant defaults when `scopes` is
        empty and may not hold operator scopes; an operator token gets `admin` by default."""
        if not name or len(name) > 100:
            raise ValidationFailed.single("name", "must be 1 to 100 characters")
        if not scopes:
            scopes = frozenset({Scope.ADMIN}) if operator else TENANT_DEFAULT_SCOPES
        if not operator and scopes & OPERATOR_SCOPES:
            named = ", ".join(sorted(s.value for s in scopes & OPERATOR_SCOPES))
            raise ValidationFailed.single(
                "scopes", f"{named}: the platform operator's scopes need an operator token"
            )
        if Scope.ADMIN in scopes and project_ids is not None:
            raise ValidationFailed.single(
                "project_ids", "admin acts on every tenant's objects: it is not limited to projects"
            )
        if expires_at is not None and expires_at <= self._clock.now():
            raise ValidationFailed.single("expires_at", "must be in the future")
        token_id = new_token_id()
        secret = secrets.token_urlsafe(32)
        bearer = f"bud_{token_id.hex}_{secret}"
        token = ApiToken(
            id=token_id,
            tenant_id=tenant_id,
            name=name,
            secret_hash=self._hasher.hash(secret),
            scopes=scopes,
            project_ids=project_ids,
            created_at=self._clock.now(),
            expires_at=expires_at,
        )
        concerning(tenant_id)
        async with self._uow(TenantScope.system()) as uow:
            await uow.tokens.add(token)
            await uow.commit()
        return IssuedToken(token, bearer)

    async def authenticate(self, bearer: str | None) -> Principal:
        if not bearer:
            raise Unauthenticated()
        match = _TOKEN.match(bearer.strip())
        if match is None:
            raise Unauthenticated("malformed bearer token")
        token_id = TokenId(uuid.UUID(match.group(1)))
        async with self._uow(TenantScope.system()) as uow:
            token = await uow.tokens.get(token_id)
        if (
            token is None
            or token.revoked
            or not self._hasher.verify(match.group(2), token.secret_hash)
        ):
            raise Unauthenticated("invalid or revoked token")
        if token.expired(self._clock.now()):
            raise Unauthenticated("the token has expired")
        return token.principal()

    async def unusable(self, token_ids: Collection[TokenId]) -> set[TokenId]:
        """Those of `token_ids` that are revoked, expired or gone: one query for them all."""
        if not token_ids:
            return set()
        async with self._uow(TenantScope.system()) as uow:
            return await uow.tokens.unusable(token_ids, self._clock.now())

    async def revoke(self, token_id: TokenId) -> None:
        """Revoke a token (its tenant's audit trail tells of it)."""
        async with self._uow(TenantScope.system()) as uow:
            token = await uow.tokens.get(token_id)
            if token is not None:
                concerning(token.tenant_id)
            if not await uow.tokens.revoke(token_id, self._clock.now()):
                raise NotFound("token", token_id)
            await uow.commit()

    async def any_issued(self) -> bool:
        async with self._uow(TenantScope.system()) as uow:
            return await uow.tokens.count() > 0
