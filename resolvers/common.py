"""Small helpers every resolver uses: parsing ids and cursors, building connections. (The scopes
a resolver needs are declared with `schema.access.requires`.)"""

from __future__ import annotations

import base64
import binascii
import uuid
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any, Protocol, TypeVar

from domain.errors import ValidationFailed
from domain.model.ids import ClusterId, FleetId, JobId
from domain.ports.repositories import JobCursor
from schema.types.connection import PageInfo
from schema.types.errors import UserInputError

T = TypeVar("T", bound=uuid.UUID)
C = TypeVar("C")
Item = TypeVar("Item")


def parse_uuid(value: str, field: str) -> uuid.UUID:
    """For mutation inputs: a malformed id is a validation error naming the field."""
    try:
        return uuid.UUID(str(value))
    except ValueError:
        raise ValidationFailed.single(field, "is not a valid id", "MALFORMED_ID") from None


NO_CLUSTER = ClusterId(uuid.UUID(int=0))
"""A fleet submission's cluster until its fleet chooses one (`Dispatcher`)."""


def target(cluster_id: str | None, fleet_id: str | None) -> tuple[ClusterId, FleetId | None]:
    """Where a submission goes: a cluster, or a fleet (which chooses the cluster); exactly one
    must be given."""
    if cluster_id is not None and fleet_id is not None:
        raise ValidationFailed.single(
            "fleet_id", "give `cluster_id` or `fleet_id`, not both", "CONFLICTING"
        )
    if fleet_id is not None:
        return NO_CLUSTER, FleetId(parse_uuid(fleet_id, "fleet_id"))
    if cluster_id is None:
        raise ValidationFailed.single(
            "cluster_id", "is required (or `fleet_id`, to let a fleet choose)", "REQUIRED"
        )
    return ClusterId(parse_uuid(cluster_id, "cluster_id")), None


def query_uuid(value: str, field: str) -> uuid.UUID:
    """For query and subscription arguments: a malformed id is a GraphQL error naming it."""
    try:
        return uuid.UUID(str(value))
    except ValueError:
        raise UserInputError(f"{field} is not a valid id", field=field) from None


def encode_cursor(created_at: datetime, job_id: uuid.UUID) -> str:
    raw = f"{created_at.isoformat()}|{job_id}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


class Listed(Protocol):
    @property
    def created_at(self) -> datetime: ...

    @property
    def id(self) -> uuid.UUID: ...


def created_cursor(item: Listed) -> str:
    """The cursor of an item listed newest first: its creation time and id."""
    return encode_cursor(item.created_at, item.id)


def connection(
    of: Callable[..., C],
    edge: Callable[..., Any],
    items: Iterable[Item],
    node: Callable[[Item], Any],
    has_next: bool,
    cursor: Callable[[Any], str] = created_cursor,
) -> C:
    """A page as a connection `of`: an `edge` per item, with its `node` and its cursor, and the
    PageInfo (whether more follow, and the cursor to ask for them with)."""
    edges = [edge(cursor=cursor(item), node=node(item)) for item in items]
    return of(
        edges=edges,
        page_info=PageInfo(has_next_page=has_next, end_cursor=edges[-1].cursor if edges else None),
    )


def decode_cursor(cursor: str) -> JobCursor:
    when, key = decode_time_cursor(cursor)
    return JobCursor(when, JobId(key))


def decode_time_cursor(cursor: str) -> tuple[datetime, uuid.UUID]:
    """A cursor of `encode_cursor`: the time and the id it was made of."""
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        created, key = base64.urlsafe_b64decode(padded.encode()).decode().split("|")
        when = datetime.fromisoformat(created)
        if when.tzinfo is None:
            raise ValueError("naive")
        return when, uuid.UUID(key)
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise UserInputError("after is not a cursor this API issued", field="after") from None
