"""The audit trail in GraphQL."""

from __future__ import annotations

from datetime import datetime
from typing import cast

import strawberry
from strawberry.scalars import JSON

from domain.model import audit as model
from schema.types.connection import PageInfo


@strawberry.type(description="One mutation (or command-line token or key operation): who, what, "
                 "when, and how it ended.")  # fmt: skip
class AuditEvent:
    id: strawberry.ID
    at: datetime
    actor: str = strawberry.field(
        description="`token:<token id>` for an API token, `cli:<user>` for the command line, "
        "`address:<ip>` for a caller refused before it had a principal."
    )
    token_id: strawberry.ID | None
    tenant_id: strawberry.ID | None = strawberry.field(
        description="The tenant it acted for; null for the command line's operator."
    )
    operation: str = strawberry.field(
        description="The mutation (`submitJob`) or the command (`token create`)."
    )
    targets: list[str] = strawberry.field(description="Ids of the objects it changed or named.")
    input: JSON = strawberry.field(
        description="What was asked, secrets removed (kubeconfigs, tokens, keys: <removed>)."
    )
    outcome: str = strawberry.field(
        description="OK, or the code it was refused with (VALIDATION_FAILED, NOT_FOUND, ...)."
    )
    source: str = strawberry.field(description="graphql or cli.")

    @classmethod
    def from_domain(cls, event: model.AuditEvent) -> AuditEvent:
        return cls(
            id=strawberry.ID(str(event.id)),
            at=event.at,
            actor=event.actor,
            token_id=strawberry.ID(str(event.token_id)) if event.token_id else None,
            tenant_id=strawberry.ID(str(event.tenant_id)) if event.tenant_id else None,
            operation=event.operation,
            targets=list(event.targets),
            input=cast(JSON, event.input),
            outcome=event.outcome,
            source=event.source,
        )


@strawberry.type
class AuditEventEdge:
    cursor: str
    node: AuditEvent


@strawberry.type
class AuditEventConnection:
    edges: list[AuditEventEdge]
    page_info: PageInfo


@strawberry.input(description="Every field given must match.")
class AuditFilter:
    operations: list[str] | None = None
    actor: str | None = None
    target: str | None = strawberry.field(default=None, description="An object's id.")
    outcome: str | None = None
    since: datetime | None = None
    until: datetime | None = None

    def to_domain(self) -> model.AuditFilter:
        return model.AuditFilter(
            operations=tuple(self.operations or ()),
            actor=self.actor,
            target=self.target,
            outcome=self.outcome,
            since=self.since,
            until=self.until,
        )
