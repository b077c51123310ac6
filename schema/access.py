"""The scopes an operation needs, declared on its resolver: `@requires(Scope.JOBS_WRITE)`.

The token's scopes are checked before the body runs, and a missing one is answered as each kind
of field has always answered it: a resolver that answers refusals with values (`@typed_errors`
below it) returns its ForbiddenError; any other returns nothing and raises the GraphQL error
FORBIDDEN at its field. Which objects the caller may see (a tenant's, a project's) is the
domain's to check, object by object. Every root field declares its scopes (or is listed as
public): tests/unit/test_declared_scopes.py walks the schema.

A resolver is a coroutine function, or (a subscription's) a plain function that returns its
stream, checked when the stream is asked for (under `capped`, before anything is sent).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar, cast

from domain.errors import DomainError, Forbidden
from domain.model.principal import Scope
from schema.context import Info
from schema.refusals import answers_of
from schema.types.errors import UserInputError

F = TypeVar("F", bound=Callable[..., Any])

REQUIRED = "required_scopes"
"""The attribute of a resolver that holds the scopes it requires (kept by functools.wraps)."""


def requires(*scopes: Scope) -> Callable[[F], F]:
    """A resolver that runs only for a principal holding every one of `scopes`."""

    def declare(resolver: F) -> F:
        answers = answers_of(resolver)
        if inspect.isasyncgenfunction(resolver):
            raise TypeError(f"{resolver.__name__}: a subscription's resolver returns its stream")
        if inspect.iscoroutinefunction(resolver):

            @functools.wraps(resolver)
            async def run(*args: Any, **kwargs: Any) -> Any:
                refusal = _refusal(_info(args, kwargs), scopes, answers)
                if refusal is not None:
                    return refusal
                return await resolver(*args, **kwargs)

            checked: Callable[..., Any] = run
        else:
            if answers is not None:
                raise TypeError(f"{resolver.__name__}: typed errors need a coroutine function")

            @functools.wraps(resolver)
            def stream(*args: Any, **kwargs: Any) -> Any:
                _refusal(_info(args, kwargs), scopes, None)
                return resolver(*args, **kwargs)

            checked = stream
        setattr(checked, REQUIRED, scopes)
        return cast(F, checked)

    return declare


def required_scopes(resolver: object) -> tuple[Scope, ...] | None:
    """The scopes a resolver (or a wrapper of it) declares it requires; None if undeclared."""
    return cast(tuple[Scope, ...] | None, getattr(resolver, REQUIRED, None))


def _info(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Info:
    return cast(Info, kwargs["info"] if "info" in kwargs else args[0])


def _refusal(
    info: Info, scopes: tuple[Scope, ...], answers: Callable[[DomainError], Any] | None
) -> Any:
    """None when the caller holds every scope; else the refusal as the resolver answers it
    (a value it returns, or UserInputError FORBIDDEN raised). Unauthenticated, which the
    admission of the operation rules out before this, is a refusal like any other."""
    try:
        principal = info.context.authenticated()
        for scope in scopes:
            if not principal.has(scope):
                raise Forbidden(f"this token lacks the {scope.value} scope")
    except DomainError as exc:
        if answers is not None:
            return answers(exc)
        if isinstance(exc, Forbidden):
            raise UserInputError(exc.message, code="FORBIDDEN") from None
        raise
    return None
