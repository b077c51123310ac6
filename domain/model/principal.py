"""Who is asking: a principal (tenant, projects, scopes) resolved from an API token.

Two kinds of principal. A tenant's token acts on its tenant's own objects: jobs (`jobs:read`,
`jobs:write`, which also books capacity reservations), its LocalQueues (`queues:write`), and reads
the clusters it runs on (`clusters:read`). The platform operator's token also changes what tenants
share: clusters, flavors, ClusterQueues, cohorts and priority classes (`clusters:write`), or
everything, every tenant's objects included (`admin`). Operator scopes are issued only to tokens
made as operator tokens, so no tenant can hold them by accident.

Tokens are random secrets shown once; only a hash is stored; a token may expire. A principal
whose `project_ids` is None may act in every project of its tenant.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import datetime

from domain.model.ids import ProjectId, TenantId, TokenId


class Scope(enum.StrEnum):
    JOBS_READ = "jobs:read"
    JOBS_WRITE = "jobs:write"
    QUEUES_WRITE = "queues:write"
    CLUSTERS_READ = "clusters:read"
    CLUSTERS_WRITE = "clusters:write"
    ADMIN = "admin"


OPERATOR_SCOPES = frozenset({Scope.CLUSTERS_WRITE, Scope.ADMIN})
"""Powers over what tenants share: only operator tokens hold them."""
TENANT_DEFAULT_SCOPES = frozenset({Scope.JOBS_READ, Scope.JOBS_WRITE, Scope.CLUSTERS_READ})
"""What a tenant's token gets when no scope is asked for."""


@dataclass(frozen=True)
class Principal:
    tenant_id: TenantId
    scopes: frozenset[Scope]
    project_ids: frozenset[ProjectId] | None = None
    token_id: TokenId | None = None

    def has(self, scope: Scope) -> bool:
        return Scope.ADMIN in self.scopes or scope in self.scopes

    @property
    def is_operator(self) -> bool:
        return bool(self.scopes & OPERATOR_SCOPES)

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
    expires_at: datetime | None = None

    @property
    def revoked(self) -> bool:
        return self.revoked_at is not None

    def expired(self, now: datetime) -> bool:
        return self.expires_at is not None and now >= self.expires_at

    def principal(self) -> Principal:
        return Principal(self.tenant_id, self.scopes, self.project_ids, self.id)
