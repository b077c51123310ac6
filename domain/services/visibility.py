"""What a caller may act on of a tenant's jobs, deployments and benchmarks: what
`Principal.may_see` lets it see. Anything else is answered as not found, never as forbidden, so a
caller learns nothing of another tenant's objects."""

from __future__ import annotations

from typing import Protocol, TypeVar

from domain.errors import NotFound
from domain.model.audit import concerning
from domain.model.ids import ProjectId, TenantId
from domain.model.principal import Principal


class Owned(Protocol):
    @property
    def tenant_id(self) -> TenantId: ...

    @property
    def project_id(self) -> ProjectId: ...


T = TypeVar("T", bound=Owned)


def seen(principal: Principal, found: T | None, what: str, key: object) -> T:
    """`found`, when the principal may see it, as what the operation under way concerns
    (`concerning`); else NotFound(what, key)."""
    if found is None or not principal.may_see(found.tenant_id, found.project_id):
        raise NotFound(what, key)
    concerning(found.tenant_id, found.project_id)
    return found
