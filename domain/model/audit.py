"""The audit trail: who did what, to which objects, when, and how it ended.

One `AuditEvent` per mutation (and per token or key operation of the command line). A mutation
that changes something writes its event in the transaction of the change (the unit of work
does, while the mutation's `AuditedOperation` is current); one that is refused writes it on its
own, with the refusal's code. Inputs are kept with their secrets removed (`without_secrets`).
"""

from __future__ import annotations

import re
import uuid
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from domain.model.ids import TenantId

OK = "OK"
MAX_TARGETS = 50
MAX_TEXT = 2_000
"""Longer strings in an audited input are cut (a kubeconfig is removed whole)."""

_SECRET_KEY = re.compile(
    r"(?i)(kubeconfig|token|secret|password|passwd|pepper|private|credential|api_?key|"
    r"authorization|pem|cert|client_?key)"
)
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
    targets: list[str] = field(default_factory=list)
    recorded: uuid.UUID | None = None
    closed: bool = False

    def target(self, *ids: object) -> None:
        for found in ids:
            text = str(found)
            if found is not None and text not in self.targets and len(self.targets) < MAX_TARGETS:
                self.targets.append(text)

    def event(self, event_id: uuid.UUID, at: datetime, outcome: str = OK) -> AuditEvent:
        return AuditEvent(
            id=event_id,
            at=at,
            tenant_id=self.tenant_id,
            actor=self.actor,
            token_id=self.token_id,
            operation=self.operation,
            targets=tuple(self.targets),
            input=self.input,
            outcome=outcome,
            source=self.source,
        )


current: ContextVar[AuditedOperation | None] = ContextVar("audited_operation", default=None)
"""The mutation this task works for, if any (set by the GraphQL layer and the command line)."""


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
