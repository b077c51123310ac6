"""A tenant's secrets: `Query.secrets`, `setSecret`, `removeSecret`."""

from __future__ import annotations

from typing import Annotated

import strawberry

from domain.model.ids import TenantId
from domain.model.principal import Scope
from resolvers.common import parse_uuid, query_uuid
from schema.access import requires
from schema.context import Info
from schema.refusals import typed_errors
from schema.types import errors
from schema.types.secrets import Secret, SetSecretInput

SecretResult = Annotated[
    Secret
    | errors.ValidationError
    | errors.NotFoundError
    | errors.ForbiddenError
    | errors.ConflictError,
    strawberry.union("SecretResult"),
]


@requires(Scope.JOBS_READ)
async def secrets(info: Info, tenant_id: strawberry.ID | None = None) -> list[Secret]:
    tenant = TenantId(query_uuid(tenant_id, "tenantId")) if tenant_id else None
    found = await info.context.services.secrets.secrets(info.context.authenticated(), tenant)
    return [Secret.from_domain(s) for s in found]


@requires(Scope.SECRETS_WRITE)
@typed_errors
async def set_secret(info: Info, input: SetSecretInput) -> SecretResult:
    tenant = TenantId(parse_uuid(input.tenant_id, "tenant_id")) if input.tenant_id else None
    stored = await info.context.services.secrets.put(
        info.context.authenticated(), tenant, input.name, [(e.key, e.value) for e in input.data]
    )
    return Secret.from_domain(stored)


@requires(Scope.SECRETS_WRITE)
@typed_errors
async def remove_secret(
    info: Info, name: str, tenant_id: strawberry.ID | None = None, force: bool = False
) -> SecretResult:
    tenant = TenantId(parse_uuid(tenant_id, "tenant_id")) if tenant_id else None
    removed = await info.context.services.secrets.remove(
        info.context.authenticated(), tenant, name, force=force
    )
    return Secret.from_domain(removed)
