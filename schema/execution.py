"""How subscription events are executed: once per distinct (payload, operation), not per subscriber.

A change to a cluster's schedule reaches every subscriber watching it. Subscribers of one tenant
with one window get the same payload object (the resolver memoises it), and usually send the same
document (the parser cache hands them the same AST). Executing the selection for each of them
again produced the same result a thousand times, so the first execution's result is kept and
reused for payloads marked `shared` (pure data, resolved without the caller's context).

It also gives each event its own memo tables: graphql-core 3.3 copies the subscription's executor
for each event but shares the per-execution caches, which then grow with every event for as long
as the subscription lives.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from graphql import ExecutionResult
from graphql.pyutils import RefMap
from strawberry.schema.schema import StrawberryGraphQLCoreExecutionContext

SHARED_RESULTS = 512


class _SharedResults:
    def __init__(self, size: int) -> None:
        self._size = size
        # key -> (payload, operation, result); holding the objects keeps their ids unique.
        self._entries: OrderedDict[tuple[int, int, str], tuple[Any, Any, ExecutionResult]] = (
            OrderedDict()
        )

    def get(self, payload: Any, operation: Any, variables: str) -> ExecutionResult | None:
        key = (id(payload), id(operation), variables)
        entry = self._entries.get(key)
        if entry is None or entry[0] is not payload or entry[1] is not operation:
            return None
        self._entries.move_to_end(key)
        return entry[2]

    def put(self, payload: Any, operation: Any, variables: str, result: ExecutionResult) -> None:
        self._entries[(id(payload), id(operation), variables)] = (payload, operation, result)
        while len(self._entries) > self._size:
            self._entries.popitem(last=False)


_shared = _SharedResults(SHARED_RESULTS)


def is_shared(payload: Any) -> bool:
    """Payloads opt in with a truthy `shared` attribute (a strawberry.Private field)."""
    return bool(getattr(payload, "shared", False))


class ExecutionContext(StrawberryGraphQLCoreExecutionContext):
    def build_per_event_executor(self, payload: Any) -> Any:
        executor = super().build_per_event_executor(payload)
        executor._relevant_sub_fields = {}
        executor._stream_usages = RefMap()
        return executor

    def execute_operation(self, serially: bool | None = None) -> Any:
        payload = self.root_value
        if not is_shared(payload):
            return super().execute_operation(serially)
        variables = repr(sorted(self.variable_values.coerced.items()))
        found = _shared.get(payload, self.operation, variables)
        if found is not None:
            return found
        result = super().execute_operation(serially)
        if isinstance(result, ExecutionResult):
            _remember(payload, self.operation, variables, result)
            return result
        return _remember_later(payload, self.operation, variables, result)


def _remember(payload: Any, operation: Any, variables: str, result: ExecutionResult) -> None:
    if not result.errors:
        _shared.put(payload, operation, variables, result)


async def _remember_later(payload: Any, operation: Any, variables: str, pending: Any) -> Any:
    result = await pending
    if isinstance(result, ExecutionResult):
        _remember(payload, operation, variables, result)
    return result
