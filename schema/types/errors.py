"""Errors a user can act on, as values: members of each mutation's result union.

Each carries a stable `code` and a human `message`; validation errors list every offending input
field by its path in the request (`resources.gpuCount`). Query and subscription arguments that are
malformed raise `UserInputError`, which reaches the client as a GraphQL error whose extensions
carry the code and the field; every other exception is masked before it leaves the server.
"""

from __future__ import annotations

import re

import strawberry
from strawberry.utils.str_converters import to_camel_case

from domain import errors as domain_errors


@strawberry.interface(description="Something the caller can fix or act on.")
class UserError:
    code: str
    message: str


@strawberry.type(description="One problem with one input field.")
class FieldError:
    path: str = strawberry.field(description="Dotted path of the field, e.g. resources.gpuCount.")
    message: str
    code: str


@strawberry.type(description="The input was not acceptable; nothing was stored.")
class ValidationError(UserError):
    fields: list[FieldError]


@strawberry.type(description="No such object, or not one the caller may see.")
class NotFoundError(UserError):
    entity: str
    id: str


@strawberry.type(description="The request conflicts with the object's current state.")
class ConflictError(UserError):
    pass


@strawberry.type(description="The caller's token does not allow this.")
class ForbiddenError(UserError):
    pass


FREE_FORM = frozenset({"spec"})
"""Inputs that hold the user's own JSON: the keys under them keep their names."""


def camel_path(path: str) -> str:
    """A domain path in the API's names: `resources.gpu_count` -> `resources.gpuCount`, but
    `spec.chart_version` stays (it is a key of the user's spec)."""
    parts = path.split(".")
    for i, part in enumerate(parts):
        parts[i] = to_camel_case(part)
        if part in FREE_FORM:
            break
    return ".".join(parts)


_FIELD_REFERENCE = re.compile(r"`([a-z][a-z0-9_.]*)`")


def api_message(message: str) -> str:
    """Field names a domain message refers to (in backticks) in the API's names."""
    return _FIELD_REFERENCE.sub(lambda m: camel_path(m.group(1)), message)


def from_domain(
    error: domain_errors.DomainError,
) -> ValidationError | NotFoundError | ConflictError | ForbiddenError:
    if isinstance(error, domain_errors.ValidationFailed):
        fields = [
            FieldError(path=camel_path(i.field), message=api_message(i.message), code=i.code)
            for i in error.issues
        ]
        message = "; ".join(f"{f.path}: {f.message}" for f in fields)
        return ValidationError(code=error.code, message=message, fields=fields)
    if isinstance(error, domain_errors.NotFound):
        return NotFoundError(
            code=error.code, message=error.message, entity=error.entity, id=error.entity_id
        )
    if isinstance(error, domain_errors.Conflict):
        return ConflictError(code=error.code, message=error.message)
    if isinstance(error, domain_errors.Forbidden):
        return ForbiddenError(code=error.code, message=error.message)
    # Anything else the caller can act on (e.g. SECRETS_UNAVAILABLE): a conflict with its code.
    return ConflictError(code=error.code, message=error.message)


class UserInputError(Exception):
    """A malformed argument to a query or subscription; shown to the client, never masked."""

    def __init__(self, message: str, *, code: str = "BAD_USER_INPUT", field: str | None = None):
        super().__init__(message)
        self.extensions: dict[str, object] = {"code": code}
        if field is not None:
            self.extensions["field"] = field
