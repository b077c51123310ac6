"""API tokens: issued once, stored hashed, resolved to a principal on every request.

A token reads `bud_<token id as 32 hex digits>_<secret>`. The id finds the stored record in one
indexed lookup; the secret is checked against its hash in constant time. Revoked, unknown and
malformed tokens are all the same answer to a caller: unauthenticated.
"""

from __future__ import annotations

import re
import secrets
import uuid
from dataclasses import dataclass

from domain.errors import NotFound, Unauthenticated, ValidationFailed
from domain.model.ids import ProjectId, TenantId, TokenId, new_token_id
from domain.model.principal import ApiToken, Principal, Scope
from domain.ports import Clock, SecretHasher, TenantScope, UnitOfWorkFactory

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
        scopes: frozenset[Scope],
        project_ids: frozenset[ProjectId] | None = None,
    ) -> IssuedToken:
        if not name or len(name) > 100:
            raise ValidationFailed.single("name", "must be 1 to 100 characters")
        if not scopes:
            raise ValidationFailed.single("scopes", "must name at least one scope")
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
        )
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
        return token.principal()

    async def revoke(self, token_id: TokenId) -> None:
        async with self._uow(TenantScope.system()) as uow:
            if not await uow.tokens.revoke(token_id, self._clock.now()):
                raise NotFound("token", token_id)
            await uow.commit()

    async def any_issued(self) -> bool:
        async with self._uow(TenantScope.system()) as uow:
            return await uow.tokens.count() > 0
