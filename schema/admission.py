"""What an operation passes before graphql-core validates it, and what it pays for it.

Before its document is parsed, a caller this process told to wait (RATE_LIMITED) is refused
again until its Retry-After has passed. After parsing, the document is measured (schema/bounds.py)
and its cost worked out (schema/cost.py), a WebSocket's token is checked again, and then, whatever
the verdict, the operation is paid for from the caller's buckets (its token's and its tenant's;
its address's without a token): its cost, or the whole budget when it is refused for its size or
its cost, so a loop of refused documents runs out of points like any other. Then the verdict:
RATE_LIMITED (HTTP 429, Retry-After) when the buckets could not pay; FIELD_LIMIT_EXCEEDED,
ALIAS_LIMIT_EXCEEDED or DEPTH_LIMIT_EXCEEDED, each naming its `limit`; BAD_REQUEST for a
subscription over HTTP; UNAUTHENTICATED (HTTP 401) without a principal (introspection alone may go
without one, where `anonymous_introspection` allows it); COST_LIMIT_EXCEEDED over the budget.
graphql-core validates only what was admitted (its results cached per AST). A document that does
not parse pays what parsing it cost (the whole budget over the token limit). Refusals never raise
(an exception from a hook would escape the WebSocket handler): they become the operation's
pre-execution errors. Each refusal, and a token that failed to authenticate, is recorded in the
audit trail (domain/services/refusals.py: within limits).

The limits leave room above the largest real documents: GraphiQL's introspection query has 229
selections and is 14 deep, the contract's largest operation file 329 selections; no real
document selects one response name more than twice at one place, nor has more than 3
fragments.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import AsyncIterator, Iterator
from typing import Any

from graphql import (
    FieldNode,
    FragmentDefinitionNode,
    GraphQLError,
    OperationDefinitionNode,
    OperationType,
    get_operation_ast,
    parse,
)
from strawberry.extensions import SchemaExtension, ValidationCache

from domain.errors import Unauthenticated
from domain.services.refusals import Refusal
from schema import bounds
from schema.cost import BASE, operation_cost, text_cost
from schema.types.errors import UserInputError

log = logging.getLogger(__name__)

MAX_SELECTIONS = 1000
"""Fields, fragment spreads and inline fragments, as if every fragment were written out."""
MAX_REPEATS = 10
"""Selections of one response name at one place of the answer (schema/bounds.py)."""
MAX_FRAGMENTS = 50
MAX_ALIASES = 20
MAX_DEPTH = 10
"""The deepest field's level (a root field is at 0)."""
MAX_INTROSPECTION_DEPTH = 15
"""The same, counting introspection's fields (GraphiQL's query reaches 14)."""

SIZE_CODES = frozenset(
    {
        "FIELD_LIMIT_EXCEEDED",
        "ALIAS_LIMIT_EXCEEDED",
        "DEPTH_LIMIT_EXCEEDED",
        "TOKEN_LIMIT_EXCEEDED",
        "COST_LIMIT_EXCEEDED",
    }
)
"""Refusals for what a document would cost: they are charged the whole budget."""

_TOKEN_LIMIT = re.compile(r"more than \d+ tokens")
_REFUSED = {
    kind: parse(f"{kind.value} {{ __typename }}")
    for kind in (OperationType.QUERY, OperationType.MUTATION, OperationType.SUBSCRIPTION)
}
"""Documents that stand for one refused before it was parsed, one of each operation type (the
transport may allow only one: Strawberry checks the type before validation)."""


def parse_error_code(error: GraphQLError) -> str:
    return "TOKEN_LIMIT_EXCEEDED" if _TOKEN_LIMIT.search(error.message) else "GRAPHQL_PARSE_FAILED"


def _error(message: str, code: str, **extensions: Any) -> GraphQLError:
    return GraphQLError(message, extensions={"code": code, **extensions})


def measured(document: Any) -> GraphQLError | None:
    """The refusal of a document over a limit of size, or None."""
    fragments = sum(isinstance(d, FragmentDefinitionNode) for d in document.definitions)
    if fragments > MAX_FRAGMENTS:
        return _too_many(f"{fragments} fragments", MAX_FRAGMENTS, "fragments")
    try:
        size = bounds.size(document)
    except bounds.FragmentCycle as cycle:
        return _error(str(cycle), "GRAPHQL_VALIDATION_FAILED")
    if size.selections > MAX_SELECTIONS:
        found = "more than a trillion" if size.selections >= bounds.CAP else str(size.selections)
        return _too_many(
            f"{found} selections (fragments written out)", MAX_SELECTIONS, "selections"
        )
    if size.aliases > MAX_ALIASES:
        return _error(
            f"{size.aliases} aliases found; at most {MAX_ALIASES} are allowed",
            "ALIAS_LIMIT_EXCEEDED",
            limit=MAX_ALIASES,
        )
    if size.depth > MAX_DEPTH:
        return _too_deep(MAX_DEPTH)
    if size.introspection_depth > MAX_INTROSPECTION_DEPTH:
        return _too_deep(MAX_INTROSPECTION_DEPTH)
    repeated = bounds.most_repeated(document)
    if repeated.times > MAX_REPEATS:
        return _too_many(
            f"`{repeated.name}` selected {repeated.times} times in one selection set",
            MAX_REPEATS,
            "repeats",
        )
    return None


def _too_many(found: str, limit: int, of: str) -> GraphQLError:
    return _error(
        f"the document has {found}; at most {limit} are allowed", "FIELD_LIMIT_EXCEEDED",
        limit=limit, of=of,
    )  # fmt: skip


def _too_deep(limit: int) -> GraphQLError:
    return _error(
        f"the document exceeds maximum operation depth of {limit}",
        "DEPTH_LIMIT_EXCEEDED",
        limit=limit,
    )


def seconds_to_wait(wait: float) -> int:
    return math.ceil(wait) if math.isfinite(wait) and wait < 3600 else 3600


def _rate_limited(context: Any, wait: float) -> GraphQLError:
    seconds = seconds_to_wait(wait)
    _status(context, 429, {"Retry-After": str(seconds)})
    return _error(
        f"rate limit reached: try again in {seconds} s", "RATE_LIMITED", retryAfter=seconds
    )


def _status(context: Any, status: int, headers: dict[str, str] | None = None) -> None:
    """The HTTP status (and headers) of a refusal, where there is an HTTP response."""
    response = getattr(context, "response", None)
    if response is not None and hasattr(response, "status_code"):
        response.status_code = status
        for name, value in (headers or {}).items():
            response.headers[name] = value


def _introspection_only(operation: OperationDefinitionNode | None) -> bool:
    if operation is None:
        return False
    return all(
        isinstance(sel, FieldNode) and sel.name.value.startswith("__")
        for sel in operation.selection_set.selections
    )


async def pay(context: Any, amount: float) -> float:
    """Take `amount` from the caller's buckets: 0.0, or the seconds it must wait (it is then
    refused before parsing until they have passed)."""
    limits = context.services.limits
    wait = float(await limits.limiter.take_each(context.rate_buckets(), amount))
    if wait > 0 and limits.waiting is not None:
        for key in context.waiting_keys():
            limits.waiting.tell(key, wait, context.principal)
    return wait


async def charge(context: Any, points: int, field: str) -> None:
    """Work a field found while it ran, which its document could not tell (a schedule's
    segments, queue and rows): added to the operation's cost and taken from the caller's
    buckets; past the operation budget the field is refused (COST_LIMIT_EXCEEDED, its path
    named) before its objects are built, so a document repeating it stops paying with CPU."""
    limits = context.services.limits
    context.cost = (context.cost or 0) + points
    await pay(context, points)
    if context.cost > limits.budget:
        refused = UserInputError(
            f"with its {field} the operation costs {context.cost} points; at most "
            f"{limits.budget} are allowed per operation (ask for fewer, or a shorter window)",
            code="COST_LIMIT_EXCEEDED",
        )
        refused.extensions.update(cost=context.cost, budget=limits.budget)
        raise refused


async def pay_for_connection(context: Any) -> float:
    """A WebSocket's connection_init, from its address's bucket, before its token is checked
    (checking it reads the database): BASE points; 0.0, or the seconds to wait."""
    limits = context.services.limits
    key = f"address:{context.client_address()}"
    wait = limits.waiting.remaining(key) if limits.waiting is not None else 0.0
    if wait <= 0:
        wait = float(await limits.limiter.take_each([limits.caller.bucket(key)], BASE))
        if wait > 0 and limits.waiting is not None:
            limits.waiting.tell(key, wait)
    return wait


async def record(context: Any, code: str, operation: str | None) -> None:
    """An audit record of a refusal (or of a failed authentication); never fails the request."""
    records = getattr(context.services.limits, "refusals", None)
    if records is None:
        return
    principal = context.principal
    refusal = Refusal(
        code=code,
        operation=operation,
        address=context.client_address(),
        transport=context.transport,
        tenant_id=principal.tenant_id if principal is not None else None,
        token_id=principal.token_id if principal is not None else None,
    )
    try:
        await records.record(refusal)
    except Exception as exc:  # the database is down: the refusal stands, unrecorded
        log.warning("a refusal (%s) could not be recorded: %s", code, type(exc).__name__)


class Admission(SchemaExtension):
    """See the module's docstring. Also leaves the cost on the context (`context.cost`)."""

    def __init__(self) -> None:
        self.cost: int | None = None
        self.budget: int | None = None

    async def on_parse(self) -> AsyncIterator[None]:
        ctx = self.execution_context
        context = ctx.context
        waiting = context.services.limits.waiting
        wait = waiting.remaining(context.rate_key()) if waiting is not None else 0.0
        if wait > 0:
            name = ctx.operation_name
            allowed = {str(getattr(k, "value", k)) for k in ctx.allowed_operations}
            kind = next((k for k in _REFUSED if k.value in allowed), OperationType.QUERY)
            ctx.graphql_document = _REFUSED[kind]  # Strawberry skips its parse
            ctx._provided_operation_name = None  # the stand-in's operation has no name
            ctx.pre_execution_errors = [_rate_limited(context, wait)]
            await record(context, "RATE_LIMITED", name)
            yield
            return
        yield
        if ctx.graphql_document is None and ctx.pre_execution_errors:
            code = parse_error_code(ctx.pre_execution_errors[0])
            budget = context.services.limits.budget
            await pay(context, budget if code in SIZE_CODES else BASE + text_cost(ctx.query))
            await record(context, code, ctx.operation_name)

    async def on_validate(self) -> AsyncIterator[None]:
        ctx = self.execution_context
        if ctx.pre_execution_errors is not None:  # refused before it was parsed
            yield
            return
        context = ctx.context
        assert ctx.graphql_document is not None  # parsed, or Strawberry stops before this
        operation = get_operation_ast(ctx.graphql_document, ctx.operation_name)
        name = ctx.operation_name or (
            operation.name.value if operation and operation.name else None
        )
        refusal = await self._admit(operation)
        if refusal is not None:
            ctx.pre_execution_errors = [refusal]
        yield
        if refusal is None and ctx.pre_execution_errors:
            await record(context, "GRAPHQL_VALIDATION_FAILED", name)
        elif refusal is not None:
            await record(context, str((refusal.extensions or {})["code"]), name)
        elif context.principal is None and context.bearer is not None:
            await record(context, "UNAUTHENTICATED", name)  # served anonymously

    async def _admit(self, operation: OperationDefinitionNode | None) -> GraphQLError | None:
        ctx = self.execution_context
        context = ctx.context
        limits = context.services.limits
        document = ctx.graphql_document
        assert document is not None
        self.budget = limits.budget
        refusal = measured(document)
        if refusal is None and operation is not None:
            fragments = {
                d.name.value: d
                for d in document.definitions
                if isinstance(d, FragmentDefinitionNode)
            }
            self.cost = operation_cost(
                ctx.schema._schema, operation, fragments, ctx.variables, ctx.query
            )
            context.cost = self.cost
        unauthenticated = await self._unauthenticated(operation)
        over_budget = self.cost is not None and self.cost > limits.budget
        oversized = refusal is not None or over_budget
        wait = await pay(context, limits.budget if oversized else (self.cost or BASE))
        if wait > 0:
            return _rate_limited(context, wait)
        if refusal is not None:
            return refusal
        if unauthenticated is not None:
            if context.principal is None:
                _status(context, 401, {"WWW-Authenticate": 'Bearer realm="budcluster"'})
            return unauthenticated
        if over_budget:
            return _error(
                f"the operation costs {self.cost} points; at most {limits.budget} are allowed "
                "per operation (ask for fewer items, or a shorter window)",
                "COST_LIMIT_EXCEEDED",
                cost=self.cost,
                budget=limits.budget,
            )
        return None

    async def _unauthenticated(
        self, operation: OperationDefinitionNode | None
    ) -> GraphQLError | None:
        """Why the caller may not run the operation, if it may not: subscriptions come over
        the WebSocket, whose token is checked again for each operation; operations other than
        introspection (where allowed) need a principal."""
        context = self.execution_context.context
        websocket = context.transport == "websocket"
        subscription = operation is not None and operation.operation is OperationType.SUBSCRIPTION
        if subscription and not websocket:
            return _error(
                "subscriptions are served over WebSocket (graphql-transport-ws) only",
                "BAD_REQUEST",
            )
        if websocket and context.principal is not None:
            try:
                await context.recheck()
            except Unauthenticated as exc:
                return _error(exc.message, "UNAUTHENTICATED")
        anonymous = context.services.limits.anonymous_introspection
        if context.principal is None and not (anonymous and _introspection_only(operation)):
            message = context.auth_error or "a valid bearer token is required"
            return _error(message, "UNAUTHENTICATED")
        return None

    def get_results(self) -> dict[str, Any]:
        if self.cost is None:
            return {}
        return {"cost": {"requested": self.cost, "budget": self.budget}}


class CachedValidation(ValidationCache):
    """graphql-core's validation, cached per AST, of a document Admission let through."""

    def on_validate(self) -> Iterator[None]:
        if self.execution_context.pre_execution_errors is not None:
            yield
            return
        yield from super().on_validate()
