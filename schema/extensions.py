"""Guards every operation passes: limits of size, cost and rate, authentication, error codes,
masking.

In order: the document is parsed (at most MAX_TOKENS tokens; one AST per distinct text), then
admitted (schema/admission.py: measured, priced, paid for from the caller's buckets, the caller
authenticated; refused before graphql-core validates it, which is not linear in a document's
size) and only then validated (results cached per AST). Every error that leaves carries
`extensions.code`; what a resolver raised unexpectedly is masked as "Internal error."
(INTERNAL_SERVER_ERROR), after Schema.process_errors has logged it.
"""

from __future__ import annotations

import re
import time
from collections import OrderedDict
from collections.abc import Callable, Generator, Iterator
from inspect import isawaitable
from typing import Any

from graphql import (
    DocumentNode,
    GraphQLError,
    GraphQLResolveInfo,
    GraphQLSyntaxError,
    OperationType,
)
from opentelemetry.trace import SpanKind, Status, StatusCode
from strawberry.extensions import LifecycleStep, MaxTokensLimiter, SchemaExtension
from strawberry.extensions.tracing import OpenTelemetryExtension
from strawberry.types.execution import ExecutionContext

from domain.errors import Unauthenticated, Unavailable
from domain.model.audit import without_secrets
from schema.admission import Admission, CachedValidation, parse_error_code
from schema.fairness import HeavyOperations
from schema.types.errors import UserInputError

MAX_TOKENS = 4000
INTERNAL_ERROR = "Internal error."
CACHED_DOCUMENTS = 256
CACHED_TEXT = 64 * 1024


class CachedParse(SchemaExtension):
    """One AST per distinct document text up to CACHED_TEXT characters (subscribers sending
    the same document share results, and validation is cached per AST). Strawberry parses a
    text it has not seen (a document that does not parse is reported as the request's error:
    raised from this hook it would escape the WebSocket handler), and what it parsed is kept."""

    def on_parse(self) -> Iterator[None]:
        ctx = self.execution_context
        key = (ctx.query, ctx.parse_options.get("max_tokens"))
        parsing = ctx.graphql_document is None and isinstance(ctx.query, str)
        if parsing and key in _parsed:
            _parsed.move_to_end(key)
            ctx.graphql_document, parsing = _parsed[key], False
        yield
        document = ctx.graphql_document
        if parsing and document is not None and len(ctx.query or "") <= CACHED_TEXT:
            _parsed[key] = document
            while len(_parsed) > CACHED_DOCUMENTS:
                _parsed.popitem(last=False)


_parsed: OrderedDict[tuple[str | None, Any], DocumentNode] = OrderedDict()


LIMIT_CODES = ((re.compile(r"^Variable '\$"), "BAD_USER_INPUT"),)


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
        return parse_error_code(error)
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
        ShapeErrors,
        Admission,  # before CachedParse: it may refuse a document before it is parsed
        HeavyOperations,  # after Admission, which prices the operation
        CachedParse,
        lambda: CachedValidation(maxsize=256),
        lambda: MaxTokensLimiter(max_token_count=MAX_TOKENS),
    ]
