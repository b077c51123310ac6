"""Who is asking: a principal (tenant, projects, scopes) resolved from an API token.

Tokens are random secrets shown once; only a hash is stored. A principal whose `project_ids` is
None may act in every project of its tenant.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import datetime

from domain.model.ids import ProjectId, TenantId, TokenId


class Scope(enum.StrEnum):
    JOBS_READ = "jobs:read"
    JOBS_WRITE = "jobs:write"
    CLUSTERS_READ = "clusters:read"
    CLUSTERS_WRITE = "clusters:write"
    ADMIN = "admin"


@dataclass(frozen=True)
class Principal:
    tenant_id: TenantId
    scopes: frozenset[Scope]
    project_ids: frozenset[ProjectId] | None = None
    token_id: TokenId | None = None

    def has(self, scope: Scope) -> bool:
        return Scope.ADMIN in self.scopes or scope in self.scopes

    def may_use_project(self, project_id: ProjectId) -> bool:
        return self.project_ids is None or project_id in self.project_ids


@dataclass
class ApiToken:
    id: TokenId
    tenant_id: TenantId
    name: str
    secret_hash: str
    scopes: frozenset[Scope]
    project_ids: frozenset[ProjectId] | None
    created_at: datetime
    revoked_at: datetime | None = None

    @property
    def revoked(self) -> bool:
        return self.revoked_at is not None

    def principal(self) -> Principal:
        return Principal(self.tenant_id, self.scopes, self.project_ids, self.id)
