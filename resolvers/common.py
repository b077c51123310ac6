"""Small helpers every resolver uses: parsing ids and cursors, and checking scopes."""

from __future__ import annotations

import base64
import binascii
import uuid
from datetime import datetime
from typing import TypeVar

from domain.errors import Forbidden, ValidationFailed
from domain.model.ids import JobId
from domain.model.principal import Principal, Scope
from domain.ports.repositories import JobCursor
from schema.context import Info
from schema.types.errors import UserInputError

T = TypeVar("T", bound=uuid.UUID)


def parse_uuid(value: str, field: str) -> uuid.UUID:
    """For mutation inputs: a malformed id is a validation error naming the field."""
    try:
        return uuid.UUID(str(value))
    except ValueError:
        raise ValidationFailed.single(field, "is not a valid id", "MALFORMED_ID") from None


def query_uuid(value: str, field: str) -> uuid.UUID:
    """For query and subscription arguments: a malformed id is a GraphQL error naming it."""
    try:
        return uuid.UUID(str(value))
    except ValueError:
        raise UserInputError(f"{field} is not a valid id", field=field) from None


def caller(info: Info, *scopes: Scope) -> Principal:
    """The authenticated principal, if it holds every one of `scopes`; raises Forbidden
    otherwise."""
    principal = info.context.authenticated()
    for scope in scopes:
        if not principal.has(scope):
            raise Forbidden(f"this token lacks the {scope.value} scope")
    return principal


def query_caller(info: Info, *scopes: Scope) -> Principal:
    try:
        return caller(info, *scopes)
    except Forbidden as exc:
        raise UserInputError(exc.message, code="FORBIDDEN") from None


def encode_cursor(created_at: datetime, job_id: uuid.UUID) -> str:
    raw = f"{created_at.isoformat()}|{job_id}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


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
