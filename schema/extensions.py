"""Guards every operation passes: authentication, size limits, and masking of internal errors."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from graphql import (
    ExecutionResult,
    FieldNode,
    GraphQLError,
    OperationDefinitionNode,
    OperationType,
    get_operation_ast,
)
from strawberry.extensions import (
    MaskErrors,
    MaxAliasesLimiter,
    MaxTokensLimiter,
    ParserCache,
    QueryDepthLimiter,
    SchemaExtension,
)

from domain.errors import Unauthenticated
from schema.types.errors import UserInputError

MAX_DEPTH = 10
MAX_ALIASES = 20
MAX_TOKENS = 4000


def _introspection_only(operation: OperationDefinitionNode | None) -> bool:
    if operation is None:
        return False
    return all(
        isinstance(sel, FieldNode) and sel.name.value.startswith("__")
        for sel in operation.selection_set.selections
    )


class RequireAuthentication(SchemaExtension):
    """Operations other than pure introspection need a principal: an unauthenticated error and
    no data otherwise (and HTTP 401 where there is an HTTP response). Subscriptions must come
    over the WebSocket."""

    def on_execute(self) -> Iterator[None]:
        ctx = self.execution_context
        context = ctx.context
        document = ctx.graphql_document
        operation = (
            get_operation_ast(document, ctx.operation_name) if document is not None else None
        )
        if (
            operation is not None
            and operation.operation is OperationType.SUBSCRIPTION
            and getattr(context, "transport", "http") != "websocket"
        ):
            ctx.result = ExecutionResult(
                data=None,
                errors=[
                    GraphQLError(
                        "subscriptions are served over WebSocket (graphql-transport-ws) only",
                        extensions={"code": "BAD_REQUEST"},
                    )
                ],
            )
        elif getattr(context, "principal", None) is None and not _introspection_only(operation):
            message = getattr(context, "auth_error", None) or "a valid bearer token is required"
            ctx.result = ExecutionResult(
                data=None,
                errors=[GraphQLError(message, extensions={"code": "UNAUTHENTICATED"})],
            )
            response = getattr(context, "response", None)
            if response is not None and hasattr(response, "status_code"):
                response.status_code = 401
                response.headers["WWW-Authenticate"] = 'Bearer realm="budcluster"'
        yield


USER_ERROR_CODES = frozenset(
    {"UNAUTHENTICATED", "BAD_USER_INPUT", "FORBIDDEN", "NOT_FOUND", "BAD_REQUEST"}
)


def is_user_error(error: GraphQLError) -> bool:
    """A request error (malformed, unauthenticated, over a limit) rather than a server fault."""
    if isinstance(error.original_error, UserInputError | Unauthenticated):
        return True
    code = (error.extensions or {}).get("code")
    return code in USER_ERROR_CODES or error.path is None


def should_mask(error: GraphQLError) -> bool:
    """Mask what a resolver raised unexpectedly; keep request errors and user errors."""
    original = error.original_error
    if isinstance(original, UserInputError | Unauthenticated):
        return False
    return error.path is not None


def extensions() -> list[Any]:
    """Factories, so each operation gets fresh extension instances (limits read at that time)."""
    return [
        # One AST per distinct text: subscribers sending the same document share results.
        lambda: ParserCache(maxsize=256),
        RequireAuthentication,
        lambda: QueryDepthLimiter(max_depth=MAX_DEPTH),
        lambda: MaxAliasesLimiter(max_alias_count=MAX_ALIASES),
        lambda: MaxTokensLimiter(max_token_count=MAX_TOKENS),
        lambda: MaskErrors(should_mask_error=should_mask, error_message="Internal error."),
    ]
