"""The audit trail: who did what, to which objects, when, and how it ended.

One `AuditEvent` per mutation (and per token or key operation of the command line). A mutation
that changes something writes its event in the transaction of the change (the unit of work
does, while the mutation's `AuditedOperation` is current); one that is refused writes it on its
own, with the refusal's code. Inputs are kept with their secrets removed (`without_secrets`).

An event belongs to a tenant, and to a project when everything it acted on is of one project:
what the unit of work commits, and what a service looked up to act on (`concerning`), are noted
as it goes. The operator's event (and the command line's) belongs to the tenant whose objects it
acted on, so that tenant reads what was done to them. A token limited to projects reads its
tenant's events of those projects and its own (`AuditEvent.seen_by`): an event of no one
project may tell of another project (a refusal's input names it), so it is not shown.
"""

from __future__ import annotations

import re
import uuid
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from domain.model.ids import ProjectId, TenantId

OK = "OK"
MAX_TARGETS = 50
MAX_TEXT = 2_000
"""Longer strings in an audited input are cut (a kubeconfig is removed whole)."""

_SECRET_KEY = re.compile(
    r"(?i)(kubeconfig|token|secret|password|passwd|pepper|private|credential|api_?key|"
    r"authorization|pem|cert|client_?key)|^data$"
)
"""Keys whose values are secrets; `data` is a secret's values (setSecret's input)."""
REMOVED = "<removed>"


def without_secrets(value: Any, depth: int = 0) -> Any:
    """A copy of an input for the audit trail: values under keys that name secrets are
    replaced by REMOVED, long strings are cut, deep nesting is flattened to a marker."""
    if depth > 8:
        return "<nested>"
    if isinstance(value, dict):
        return {
            str(k): REMOVED if _SECRET_KEY.search(str(k)) else without_secrets(v, depth + 1)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [without_secrets(v, depth + 1) for v in value[:200]]
    if isinstance(value, str):
        return value if len(value) <= MAX_TEXT else value[:MAX_TEXT] + "…"
    if value is None or isinstance(value, bool | int | float):
        return value
    return str(value)[:MAX_TEXT]


@dataclass(frozen=True)
class AuditEvent:
    id: uuid.UUID
    at: datetime
    tenant_id: TenantId | None
    """The tenant the caller acted for (None: the machine's operator, from the command line)."""
    actor: str
    """`token:<id>` for an API token, `cli:<user>` for the command line."""
    token_id: uuid.UUID | None
    operation: str
    """The mutation's field name (`submitJob`) or the command (`token create`)."""
    targets: tuple[str, ...]
    """Ids of the objects it changed or named."""
    input: dict[str, Any]
    outcome: str
    """OK, or the code of the refusal (VALIDATION_FAILED, NOT_FOUND, FORBIDDEN, ...)."""
    source: str
    """graphql or cli."""
    project_id: ProjectId | None = None
    """The project of everything it acted on, if one."""

    def seen_by(
        self,
        tenant_id: TenantId | None,
        project_ids: frozenset[ProjectId] | None = None,
        token_id: uuid.UUID | None = None,
    ) -> bool:
        """Whether a reader sees it: every event (tenant None: the operator), a tenant's own,
        or, limited to `project_ids`, those of these projects and `token_id`'s own."""
        if tenant_id is None:
            return True
        if self.tenant_id != tenant_id:
            return False
        if project_ids is None:
            return True
        return self.project_id in project_ids or (
            token_id is not None and self.token_id == token_id
        )


@dataclass
class AuditedOperation:
    """A mutation under way: what its event will say. The unit of work that commits its first
    change writes the event in that transaction and keeps its id here."""

    tenant_id: TenantId | None
    actor: str
    token_id: uuid.UUID | None
    operation: str
    input: dict[str, Any]
    source: str = "graphql"
    operator: bool = False
    """Acts for every tenant (`admin`, or the command line): its event is the tenant's whose
    objects it acted on, when they are one tenant's."""
    targets: list[str] = field(default_factory=list)
    owners: set[tuple[TenantId, ProjectId | None]] = field(default_factory=set)
    """(tenant, project) of each object it acted on; project None: one of the whole tenant."""
    written: AuditEvent | None = None
    """The event as its first change's transaction wrote it, once that transaction committed."""
    closed: bool = False

    def target(self, *ids: object) -> None:
        for found in ids:
            text = str(found)
            if found is not None and text not in self.targets and len(self.targets) < MAX_TARGETS:
                self.targets.append(text)

    def concerns(self, tenant_id: TenantId, project_id: ProjectId | None = None) -> None:
        """It acts on an object of this tenant (and project)."""
        if len(self.owners) < MAX_TARGETS:
            self.owners.add((tenant_id, project_id))

    def owner(self) -> tuple[TenantId | None, ProjectId | None]:
        """The tenant and project its event belongs to: the caller's tenant (the operator's:
        the one tenant whose objects it acted on), and the project everything it acted on is
        of, if one."""
        tenants = {tenant for tenant, _ in self.owners}
        tenant = self.tenant_id
        if self.operator and len(tenants) == 1:
            tenant = next(iter(tenants))
        projects = {project for _, project in self.owners}
        if tenants == {tenant} and len(projects) == 1:
            return tenant, next(iter(projects))
        return tenant, None

    def event(self, event_id: uuid.UUID, at: datetime, outcome: str = OK) -> AuditEvent:
        tenant, project = self.owner()
        return AuditEvent(
            id=event_id,
            at=at,
            tenant_id=tenant,
            actor=self.actor,
            token_id=self.token_id,
            operation=self.operation,
            targets=tuple(self.targets),
            input=self.input,
            outcome=outcome,
            source=self.source,
            project_id=project,
        )


current: ContextVar[AuditedOperation | None] = ContextVar("audited_operation", default=None)
"""The mutation this task works for, if any (set by the GraphQL layer and the command line)."""


def concerning(tenant_id: TenantId, project_id: ProjectId | None = None) -> None:
    """The mutation under way, if any, acts on an object of this tenant (and project): said by
    a service once it found what it acts on, so that even a refusal is the owner's event."""
    operation = current.get()
    if operation is not None and not operation.closed:
        operation.concerns(tenant_id, project_id)


@dataclass(frozen=True)
class AuditFilter:
    operations: tuple[str, ...] = ()
    actor: str | None = None
    target: str | None = None
    outcome: str | None = None
    since: datetime | None = None
    until: datetime | None = None


@dataclass(frozen=True)
class AuditCursor:
    at: datetime
    event_id: uuid.UUID


@dataclass(frozen=True)
class AuditPage:
    events: tuple[AuditEvent, ...]
    has_next: bool
