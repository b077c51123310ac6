"""Spend over UTC days (`Query.spend`); the CSV export over HTTP shares its service."""

from __future__ import annotations

import base64
import binascii
from datetime import date
from typing import Annotated

import strawberry

from domain.errors import ValidationFailed
from domain.model.principal import Scope
from domain.model.spend import SpendGroup
from domain.services.spend import SpendService
from schema.access import requires
from schema.context import Info
from schema.types.connection import PageInfo
from schema.types.errors import UserInputError
from schema.types.spend import SpendConnection, SpendEdge, SpendRow

DEFAULT_PAGE = 100
_FIELDS = {"from": "from", "to": "to", "group_by": "groupBy", "first": "first", "after": "after"}


def _cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(f"spend|{offset}".encode()).decode().rstrip("=")


def _offset(cursor: str) -> int:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        kind, offset = base64.urlsafe_b64decode(padded.encode()).decode().split("|")
        if kind != "spend" or not offset.isdigit():
            raise ValueError(cursor)
        return int(offset) + 1
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise UserInputError("after is not a cursor this API issued", field="after") from None


@requires(Scope.JOBS_READ)
async def spend(
    info: Info,
    from_: Annotated[date, strawberry.argument(name="from", description="The first UTC day.")],
    to: Annotated[date, strawberry.argument(description="The last UTC day (at most 366 days).")],
    group_by: list[SpendGroup] | None = None,
    first: int = DEFAULT_PAGE,
    after: str | None = None,
) -> SpendConnection:
    principal = info.context.authenticated()
    service: SpendService = info.context.services.spend
    offset = _offset(after) if after else 0
    try:
        query = service.query(principal, from_, to, group_by or [])
        page = await service.page(query, first=first, offset=offset)
    except ValidationFailed as exc:
        issue = exc.issues[0]
        field = _FIELDS.get(issue.field, issue.field)
        raise UserInputError(f"{field} {issue.message}", field=field) from None
    edges = [
        SpendEdge(cursor=_cursor(page.offset + i), node=SpendRow.from_domain(row))
        for i, row in enumerate(page.rows)
    ]
    return SpendConnection(
        edges=edges,
        page_info=PageInfo(
            has_next_page=page.has_next, end_cursor=edges[-1].cursor if edges else None
        ),
        total=SpendRow.from_domain(page.total),
    )
