"""The audit trail: `auditEvents` (an administrator sees every tenant's, a tenant its own)."""

from __future__ import annotations

import base64
import binascii
import uuid
from datetime import datetime

from domain.errors import DomainError
from domain.model.audit import AuditCursor
from domain.model.principal import Scope
from resolvers.common import query_caller
from schema.context import Info
from schema.types.audit import AuditEvent, AuditEventConnection, AuditEventEdge, AuditFilter
from schema.types.connection import PageInfo
from schema.types.errors import UserInputError


def _cursor(at: datetime, event_id: uuid.UUID) -> str:
    return base64.urlsafe_b64encode(f"{at.isoformat()}|{event_id}".encode()).decode().rstrip("=")


def _decode(cursor: str) -> AuditCursor:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        at, event_id = base64.urlsafe_b64decode(padded.encode()).decode().split("|")
        when = datetime.fromisoformat(at)
        if when.tzinfo is None:
            raise ValueError("naive")
        return AuditCursor(when, uuid.UUID(event_id))
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise UserInputError("after is not a cursor this API issued", field="after") from None


async def audit_events(
    info: Info, filter: AuditFilter | None = None, first: int = 50, after: str | None = None
) -> AuditEventConnection:
    principal = query_caller(info, Scope.JOBS_READ)
    cursor = _decode(after) if after else None
    wanted = (filter or AuditFilter()).to_domain()
    try:
        page = await info.context.services.audit.page(principal, wanted, first=first, after=cursor)
    except DomainError as exc:
        raise UserInputError(exc.message, field="first") from None
    edges = [
        AuditEventEdge(cursor=_cursor(e.at, e.id), node=AuditEvent.from_domain(e))
        for e in page.events
    ]
    return AuditEventConnection(
        edges=edges,
        page_info=PageInfo(
            has_next_page=page.has_next, end_cursor=edges[-1].cursor if edges else None
        ),
    )
