"""The audit trail: ending an audited mutation, reading the trail, keeping it bounded."""

from __future__ import annotations

import uuid
from datetime import timedelta

from domain.errors import DomainError
from domain.model.audit import OK, AuditCursor, AuditedOperation, AuditFilter, AuditPage
from domain.model.principal import Principal, Scope
from domain.ports.clock import Clock
from domain.ports.unit_of_work import TenantScope, UnitOfWorkFactory
from domain.services.quota_rules import require

MAX_PAGE = 100


class AuditService:
    def __init__(self, *, uow: UnitOfWorkFactory, clock: Clock, retention: timedelta) -> None:
        self._uow = uow
        self._clock = clock
        self.retention = retention

    async def finish(self, operation: AuditedOperation, outcome: str = OK) -> None:
        """The mutation ended. Its event was written with its first change, which now gets
        the outcome and every target (nothing is written when they are what was written then,
        as for most mutations: one change, one outcome); a mutation that changed nothing (a
        refusal, or nothing to do) is recorded now."""
        operation.closed = True
        written = operation.written
        if written is not None:
            final = operation.event(written.id, written.at, outcome)
            if final == written:
                return
            async with self._uow(TenantScope.system()) as uow:
                await uow.audit.settle(final, stored=written.targets)
                await uow.commit()
            return
        async with self._uow(TenantScope.system()) as uow:
            await uow.audit.add(operation.event(uuid.uuid4(), self._clock.now(), outcome))
            await uow.commit()

    async def page(
        self,
        principal: Principal,
        audit_filter: AuditFilter,
        *,
        first: int,
        after: AuditCursor | None = None,
    ) -> AuditPage:
        """Newest first. An administrator sees every tenant's events, a tenant its own, a token
        limited to projects its tenant's events of those projects and its own
        (`AuditEvent.seen_by`)."""
        require(principal, Scope.JOBS_READ)
        if not 0 < first <= MAX_PAGE:
            raise DomainError(f"first must be 1 to {MAX_PAGE}")
        everyone = principal.sees_every_tenant
        async with self._uow(TenantScope.system()) as uow:
            return await uow.audit.page(
                audit_filter,
                tenant_id=None if everyone else principal.tenant_id,
                first=first,
                after=after,
                project_ids=None if everyone else principal.project_ids,
                token_id=principal.token_id,
            )

    async def prune(self) -> int:
        """Events older than the retention period are deleted; how many."""
        async with self._uow(TenantScope.system()) as uow:
            pruned = await uow.audit.prune(self._clock.now() - self.retention)
            await uow.commit()
        return pruned
