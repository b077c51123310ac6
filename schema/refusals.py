"""What the domain refuses, as the answer a resolver gives: written once, for every resolver.

A mutation (or a query whose result is a union of typed errors) answers a refusal with a value:
`@typed_errors` returns the union member `errors.from_domain` makes of any DomainError the
body raises, and `typed_errors_as(mapping)` does so with another mapping (`previewJob` stores
nothing, so nothing it is refused can be a conflict). A query or subscription argument the
domain refuses is a GraphQL error naming the argument: `argument_error` around the call.
`schema.access.requires` reads the mapping a resolver answers with, so a missing scope is
answered the same way as the body's refusals.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, ParamSpec, TypeVar, cast

from domain.errors import DomainError, NotFound
from schema.types import errors
from schema.types.errors import UserInputError

P = ParamSpec("P")
R = TypeVar("R")

ANSWERS = "answers_refusals_with"
"""The attribute of a resolver that answers refusals with values: its mapping."""


def typed_errors_as(
    mapping: Callable[[DomainError], Any],
) -> Callable[[Callable[P, Awaitable[R]]], Callable[P, Awaitable[R]]]:
    """A resolver whose body's DomainErrors are answered with `mapping(error)`, a member of its
    result union. Put `@requires` above it (the scope is checked first, and refused alike)."""

    def decorate(resolver: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
        if hasattr(resolver, "required_scopes"):  # schema.access.REQUIRED
            raise TypeError(f"{resolver.__name__}: put @requires above @typed_errors")

        @functools.wraps(resolver)
        async def run(*args: P.args, **kwargs: P.kwargs) -> R:
            try:
                return await resolver(*args, **kwargs)
            except DomainError as exc:
                return cast(R, mapping(exc))

        setattr(run, ANSWERS, mapping)
        return run

    return decorate


typed_errors = typed_errors_as(errors.from_domain)
"""The usual mapping: ValidationError, NotFoundError, ConflictError or ForbiddenError."""


def answers_of(resolver: object) -> Callable[[DomainError], Any] | None:
    """The mapping a resolver answers refusals with, if it answers them with values."""
    return cast(Callable[[DomainError], Any] | None, getattr(resolver, ANSWERS, None))


@contextlib.contextmanager
def argument_error(
    field: str,
    *,
    catching: type[DomainError] = DomainError,
    message: str | None = None,
) -> Iterator[None]:
    """A refusal (of the kind `catching`) raised inside, as the GraphQL error of the query or
    subscription argument `field`: NOT_FOUND for a NotFound, else BAD_USER_INPUT; with the
    domain's message, or `message`."""
    try:
        yield
    except catching as exc:
        code = "NOT_FOUND" if isinstance(exc, NotFound) else "BAD_USER_INPUT"
        raise UserInputError(message or exc.message, code=code, field=field) from None
