"""Project and tenant budgets: `Query.budgets`, `setBudget`, `removeBudget`."""

from __future__ import annotations

from typing import Annotated

import strawberry

from domain.model.ids import ProjectId, TenantId
from domain.model.principal import Scope
from resolvers.common import parse_uuid, query_uuid
from schema.access import requires
from schema.context import Info
from schema.refusals import typed_errors
from schema.types import errors
from schema.types.budget import Budget, SetBudgetInput

BudgetResult = Annotated[
    Budget | errors.ValidationError | errors.NotFoundError | errors.ForbiddenError,
    strawberry.union("BudgetResult"),
]


@requires(Scope.JOBS_READ)
async def budgets(info: Info, tenant_id: strawberry.ID | None = None) -> list[Budget]:
    principal = info.context.authenticated()
    tenant = TenantId(query_uuid(tenant_id, "tenantId")) if tenant_id else None
    found = await info.context.services.budgets.budgets(principal, tenant)
    return [Budget.from_domain(s) for s in found]


@requires(Scope.JOBS_WRITE)
@typed_errors
async def set_budget(info: Info, input: SetBudgetInput) -> BudgetResult:
    tenant = TenantId(parse_uuid(input.tenant_id, "tenant_id")) if input.tenant_id else None
    project = ProjectId(parse_uuid(input.project_id, "project_id")) if input.project_id else None
    standing = await info.context.services.budgets.set_budget(
        info.context.authenticated(), tenant, project, input.limit, input.action
    )
    return Budget.from_domain(standing)


@requires(Scope.JOBS_WRITE)
@typed_errors
async def remove_budget(
    info: Info, tenant_id: strawberry.ID | None = None, project_id: strawberry.ID | None = None
) -> BudgetResult:
    tenant = TenantId(parse_uuid(tenant_id, "tenant_id")) if tenant_id else None
    project = ProjectId(parse_uuid(project_id, "project_id")) if project_id else None
    removed = await info.context.services.budgets.remove_budget(
        info.context.authenticated(), tenant, project
    )
    return Budget.from_domain(removed)
