"""Who is asking: a principal (tenant, projects, scopes) resolved from an API token.

Two kinds of principal. A tenant's token acts on its tenant's own objects: jobs (`jobs:read`,
`jobs:write`, which also books capacity reservations), its LocalQueues (`queues:write`), and reads
the clusters it runs on (`clusters:read`). The platform operator's token also changes what tenants
share: clusters, flavors, ClusterQueues, cohorts and priority classes (`clusters:write`), or
everything, every tenant's objects included (`admin`). Operator scopes are issued only to tokens
made as operator tokens, so no tenant can hold them by accident.

Tokens are random secrets shown once; only a hash is stored; a token may expire. A principal
whose `project_ids` is None may act in every project of its tenant; one limited to projects sees
an object of its tenant's other projects as another tenant would (`may_see`), and the objects of
no project (LocalQueues, reservations) as its tenant's. The operator (`admin`) reads and acts on
every tenant's objects; what it makes for one belongs to that tenant (`acting_for`).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import datetime

from domain.model.ids import ProjectId, TenantId, TokenId


class Scope(enum.StrEnum):
    JOBS_READ = "jobs:read"
    JOBS_WRITE = "jobs:write"
    JOBS_LOGS = "jobs:logs"
    """Read what a job's containers wrote (it may hold what the job printed of its secrets:
    asked for by name, never a default)."""
    SECRETS_WRITE = "secrets:write"
    """Store and remove the tenant's secrets (asked for by name, never a default)."""
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

    @property
    def sees_every_tenant(self) -> bool:
        """The operator's `admin`: reads and acts on every tenant's objects."""
        return Scope.ADMIN in self.scopes

    def may_use_project(self, project_id: ProjectId) -> bool:
        return self.project_ids is None or project_id in self.project_ids

    def may_see(self, tenant_id: TenantId, project_id: ProjectId | None) -> bool:
        """Whether an object of this tenant and project (None: of the whole tenant) is this
        principal's to read and act on."""
        if self.sees_every_tenant:
            return True
        if tenant_id != self.tenant_id:
            return False
        return project_id is None or self.may_use_project(project_id)

    def acting_for(self, tenant_id: TenantId) -> Principal:
        """This principal making something for `tenant_id` (the operator scaling a tenant's
        deployment makes the tenant's replicas): itself, unless it is the operator acting on
        another tenant's object."""
        if tenant_id == self.tenant_id or not self.sees_every_tenant:
            return self
        return Principal(tenant_id, self.scopes, None, self.token_id)


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
