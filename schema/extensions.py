"""Guards every operation passes: authentication, limits of size and cost, error codes, masking.

In order: the document is parsed (at most MAX_TOKENS tokens; one AST per distinct text) and
validated (at most MAX_DEPTH deep, MAX_ALIASES aliases; results cached per AST); the caller is
authenticated (on a WebSocket the token is checked again for each operation, so a revoked token
stops working at once); the operation's cost (schema/cost.py) is taken from the caller's
rate-limit bucket (by token, or by client address for callers without one) and must fit the
per-operation budget (a refused one is charged the budget). Every error that leaves carries
`extensions.code`; what a resolver raised unexpectedly is masked as "Internal error."
(INTERNAL_SERVER_ERROR), after Schema.process_errors has logged it.
"""

from __future__ import annotations

import contextlib
import functools
import math
import re
import time
from collections.abc import AsyncIterator, Callable, Generator, Iterator
from inspect import isawaitable
from typing import Any

from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    GraphQLError,
    GraphQLResolveInfo,
    GraphQLSyntaxError,
    OperationDefinitionNode,
    OperationType,
    get_operation_ast,
)
from graphql.language.parser import parse
from graphql.validation import ASTValidationRule
from opentelemetry.trace import SpanKind, Status, StatusCode
from strawberry.extensions import (
    AddValidationRules,
    LifecycleStep,
    MaxTokensLimiter,
    SchemaExtension,
    ValidationCache,
)
from strawberry.extensions.max_aliases import create_validator as alias_limit
from strawberry.extensions.query_depth_limiter import create_validator as depth_limit
from strawberry.extensions.tracing import OpenTelemetryExtension
from strawberry.types.execution import ExecutionContext

from domain.errors import Unauthenticated, Unavailable
from domain.model.audit import without_secrets
from schema.cost import operation_cost
from schema.types.errors import UserInputError

MAX_DEPTH = 10
MAX_ALIASES = 20
MAX_TOKENS = 4000
INTERNAL_ERROR = "Internal error."


@functools.lru_cache(maxsize=256)
def _parsed(query: str, max_tokens: int) -> DocumentNode:
    return parse(query, max_tokens=max_tokens)


class CachedParse(SchemaExtension):
    """One AST per distinct document text (subscribers sending the same document share
    results, and validation is cached per AST). A document that does not parse is left to
    Strawberry, which reports it as the request's error: raised from this hook it would escape
    the WebSocket handler (Strawberry's ParserCache does that: the client got "complete" and
    the server logged a traceback)."""

    def on_parse(self) -> Iterator[None]:
        ctx = self.execution_context
        if isinstance(ctx.query, str) and ctx.query:
            with contextlib.suppress(GraphQLError):
                ctx.graphql_document = _parsed(ctx.query, MAX_TOKENS)
        yield


@functools.cache
def _limit_rules(max_depth: int, max_aliases: int) -> tuple[type[ASTValidationRule], ...]:
    """The same rule classes for the same limits, so ValidationCache can reuse results."""
    return (depth_limit(max_depth, None), alias_limit(max_aliases))


class Limits(AddValidationRules):
    """At most MAX_DEPTH deep and MAX_ALIASES aliases (read per operation)."""

    def __init__(self) -> None:
        super().__init__(list(_limit_rules(MAX_DEPTH, MAX_ALIASES)))


def _introspection_only(operation: OperationDefinitionNode | None) -> bool:
    if operation is None:
        return False
    return all(
        isinstance(sel, FieldNode) and sel.name.value.startswith("__")
        for sel in operation.selection_set.selections
    )


def _refuse(context: Any, message: str, code: str, status: int | None = None, **extra: Any) -> None:
    """Raise a request error; where there is an HTTP response, set its status (and headers)."""
    response = getattr(context, "response", None)
    if status is not None and response is not None and hasattr(response, "status_code"):
        response.status_code = status
        if status == 401:
            response.headers["WWW-Authenticate"] = 'Bearer realm="budcluster"'
        if "retryAfter" in extra:
            response.headers["Retry-After"] = str(extra["retryAfter"])
    raise GraphQLError(message, extensions={"code": code, **extra})


class RequireAuthentication(SchemaExtension):
    """Operations other than pure introspection need a principal; a WebSocket's token is checked
    again for every operation. Subscriptions must come over the WebSocket."""

    async def on_execute(self) -> AsyncIterator[None]:
        ctx = self.execution_context
        context = ctx.context
        document = ctx.graphql_document
        operation = (
            get_operation_ast(document, ctx.operation_name) if document is not None else None
        )
        websocket = getattr(context, "transport", "http") == "websocket"
        subscription = operation is not None and operation.operation is OperationType.SUBSCRIPTION
        if subscription and not websocket:
            _refuse(
                context,
                "subscriptions are served over WebSocket (graphql-transport-ws) only",
                "BAD_REQUEST",
            )
        if websocket and getattr(context, "principal", None) is not None:
            try:
                await context.recheck()
            except Unauthenticated as exc:
                _refuse(context, exc.message, "UNAUTHENTICATED")
        if getattr(context, "principal", None) is None and not _introspection_only(operation):
            message = getattr(context, "auth_error", None) or "a valid bearer token is required"
            _refuse(context, message, "UNAUTHENTICATED", 401)
        yield


class CostLimit(SchemaExtension):
    """Refuse an operation over the budget; take its cost from the caller's bucket."""

    def __init__(self) -> None:
        self.cost: int | None = None
        self.budget: int | None = None

    async def on_execute(self) -> AsyncIterator[None]:
        ctx = self.execution_context
        context = ctx.context
        document = ctx.graphql_document
        limits = context.services.limits
        operation = (
            get_operation_ast(document, ctx.operation_name) if document is not None else None
        )
        if operation is not None and document is not None:
            fragments = {
                d.name.value: d
                for d in document.definitions
                if isinstance(d, FragmentDefinitionNode)
            }
            self.budget = limits.budget
            self.cost = operation_cost(ctx.schema._schema, operation, fragments, ctx.variables)
            # A refused operation is charged the whole budget: refusing is not free, and a
            # client sending them in a loop must run out of points like any other.
            wait = await limits.limiter.take(context.rate_key(), min(self.cost, limits.budget))
            if wait > 0:
                _refuse(
                    context,
                    f"rate limit reached: try again in {math.ceil(wait)} s",
                    "RATE_LIMITED",
                    429,
                    retryAfter=math.ceil(wait),
                )
            if self.cost > limits.budget:
                _refuse(
                    context,
                    f"the operation costs {self.cost} points; at most {limits.budget} are "
                    "allowed per operation (ask for fewer items, or a shorter window)",
                    "COST_LIMIT_EXCEEDED",
                    cost=self.cost,
                    budget=limits.budget,
                )
        yield

    def get_results(self) -> dict[str, Any]:
        if self.cost is None:
            return {}
        return {"cost": {"requested": self.cost, "budget": self.budget}}


LIMIT_CODES = (
    (re.compile(r"exceeds maximum operation depth"), "DEPTH_LIMIT_EXCEEDED"),
    (re.compile(r"aliases found\. Allowed"), "ALIAS_LIMIT_EXCEEDED"),
    (re.compile(r"more than \d+ tokens"), "TOKEN_LIMIT_EXCEEDED"),
    (re.compile(r"^Variable '\$"), "BAD_USER_INPUT"),
)


def code_of(error: GraphQLError) -> str:
    """The code an error leaves with: its own, else one for what kind of error it is."""
    own = (error.extensions or {}).get("code")
    if isinstance(own, str):
        return own
    if isinstance(error.original_error, UserInputError):
        return str(error.original_error.extensions["code"])
    if isinstance(error.original_error, Unauthenticated):
        return "UNAUTHENTICATED"
    if isinstance(error.original_error, Unavailable):
        return "UNAVAILABLE"
    if isinstance(error, GraphQLSyntaxError):
        for pattern, code in LIMIT_CODES:
            if pattern.search(error.message):
                return code
        return "GRAPHQL_PARSE_FAILED"
    if error.message == INTERNAL_ERROR:
        return "INTERNAL_SERVER_ERROR"
    if error.path is None:
        for pattern, code in LIMIT_CODES:
            if pattern.search(error.message):
                return code
        return "GRAPHQL_VALIDATION_FAILED"
    return "INTERNAL_SERVER_ERROR"


class Observed(SchemaExtension):
    """Each query and mutation, when it ends: its name, how long it took and its error codes
    (after ShapeErrors gave every error one), to `ApiServices.observe_operation`."""

    def on_operation(self) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            ctx = self.execution_context
            services = getattr(ctx.context, "services", None)
            observe = getattr(services, "observe_operation", None)
            kind = ctx.operation_type.value if _has_operation(ctx) else "invalid"
            if observe is not None and kind != "subscription":
                errors = getattr(ctx.result, "errors", None) or ()
                codes = [
                    str((e.extensions or {}).get("code", "INTERNAL_SERVER_ERROR")) for e in errors
                ]
                observe(ctx.operation_name, kind, time.perf_counter() - started, codes)


def _has_operation(ctx: Any) -> bool:
    try:
        return ctx.graphql_document is not None and ctx.operation_type is not None
    except Exception:  # no operation to name (a syntax error, an unknown operationName)
        return False


class ShapeErrors(SchemaExtension):
    """Every error leaves masked if it is a fault (is_fault) and with an `extensions.code`:
    at the end of an operation, and for each result a subscription (or an operation on the
    WebSocket) streams, before it is sent (its operation ends after the client has it)."""

    def on_operation(self) -> Iterator[None]:
        try:
            yield
        except GraphQLError as raised:  # by a hook (the parser cache's syntax errors)
            _coded(raised)
            raise
        _shape(self.execution_context.result)

    def on_stream_result(self, result: Any) -> Iterator[None]:
        _shape(result)
        yield


def _shape(result: Any) -> None:
    errors = getattr(result, "errors", None)
    if errors:
        result.errors = [_coded(_masked(_outage(error))) for error in errors]


def _outage(error: GraphQLError) -> GraphQLError:
    """A store that does not answer: UNAVAILABLE, with when to try again."""
    original = error.original_error
    if not isinstance(original, Unavailable):
        return error
    return GraphQLError(
        f"the service is unavailable for now ({original}): try again in "
        f"{original.retry_after_seconds} s",
        nodes=error.nodes,
        source=error.source,
        positions=error.positions,
        path=error.path,
        original_error=original,
        extensions={"code": "UNAVAILABLE", "retryAfter": original.retry_after_seconds},
    )


def _masked(error: GraphQLError) -> GraphQLError:
    if not is_fault(error):
        return error
    return GraphQLError(
        INTERNAL_ERROR,
        nodes=error.nodes,
        source=error.source,
        positions=error.positions,
        path=error.path,
        extensions={"code": "INTERNAL_SERVER_ERROR"},
    )


def _coded(error: GraphQLError) -> GraphQLError:
    if not isinstance((error.extensions or {}).get("code"), str):
        error.extensions = {**(error.extensions or {}), "code": code_of(error)}
    return error


def is_fault(error: GraphQLError) -> bool:
    """A server fault (masked, logged with its traceback), not a request error: an exception a
    resolver raised unexpectedly, or one raised outside any resolver (a store that is down)."""
    original = error.original_error
    if isinstance(original, UserInputError | Unauthenticated | Unavailable | GraphQLError):
        return False
    return error.path is not None or original is not None


class TracingSwitch:
    """Whether operations are traced: on while a traced App's ASGI app exists (made by
    `budcluster.http.create_app`, released when the App closes); off, an operation has no
    tracing extension at all (its `resolve` hook would otherwise run as middleware for every
    field of every result)."""

    def __init__(self) -> None:
        self._holders = 0

    @property
    def on(self) -> bool:
        return self._holders > 0

    def hold(self) -> None:
        self._holders += 1

    def release(self) -> None:
        self._holders = max(0, self._holders - 1)


tracing = TracingSwitch()


class Traced(OpenTelemetryExtension):
    """Strawberry's OpenTelemetry extension as budcluster runs it: the operation's span is named
    `<type> <name>` (OpenTelemetry's GraphQL conventions) and carries its type, name and error
    codes, never the document's text (a client may write a kubeconfig into it); resolvers'
    arguments are kept without secrets (as the audit trail keeps inputs); the fields of results
    a subscription streams get no spans of their own (one per subscriber per event would be
    the whole of the traffic), the subscription one span for its life."""

    def __init__(self, *, execution_context: ExecutionContext | None = None) -> None:
        super().__init__(execution_context=execution_context, arg_filter=_arguments_for_spans)

    def on_operation(self) -> Generator[None, None, None]:
        span = self._tracer.start_span("GraphQL operation", kind=SpanKind.INTERNAL)
        self._span_holder[LifecycleStep.OPERATION] = span
        try:
            yield
        finally:
            ctx = self.execution_context
            if _has_operation(ctx):
                kind, name = ctx.operation_type.value, ctx.operation_name
                span.update_name(f"{kind} {name}" if name else kind)
                span.set_attribute("graphql.operation.type", kind)
                if name:
                    span.set_attribute("graphql.operation.name", name)
            errors = getattr(ctx.result, "errors", None) or ()
            if errors:
                codes = sorted({str((e.extensions or {}).get("code", "")) for e in errors})
                span.set_attribute("graphql.error.codes", codes)
                span.set_status(Status(StatusCode.ERROR, ", ".join(codes)))
            span.end()

    async def resolve(
        self,
        _next: Callable[..., Any],
        root: Any,
        info: GraphQLResolveInfo[Any],
        *args: Any,
        **kwargs: Any,
    ) -> Any:
        if info.operation.operation is OperationType.SUBSCRIPTION:
            result = _next(root, info, *args, **kwargs)
            return await result if isawaitable(result) else result
        return await super().resolve(_next, root, info, *args, **kwargs)


def _arguments_for_spans(arguments: dict[str, Any], _: GraphQLResolveInfo[Any]) -> dict[str, Any]:
    cleaned: dict[str, Any] = without_secrets(arguments)
    return cleaned


def _traced() -> SchemaExtension:
    return Traced() if tracing.on else SchemaExtension()


def extensions() -> list[Any]:
    """Factories, so each operation gets fresh extension instances (limits read at that time)."""
    return [
        _traced,
        Observed,
        CachedParse,
        ShapeErrors,
        RequireAuthentication,
        CostLimit,
        Limits,
        lambda: ValidationCache(maxsize=256),
        lambda: MaxTokensLimiter(max_token_count=MAX_TOKENS),
    ]
