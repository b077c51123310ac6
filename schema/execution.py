"""How subscription events are executed: once per distinct (payload, operation), not per subscriber.

A change to a cluster's schedule reaches every subscriber watching it. Subscribers of one tenant
with one window get the same payload object (the resolver memoises it), and usually send the same
document (the parser cache hands them the same AST). Executing the selection for each of them
again produced the same result a thousand times, so the first execution's result is kept and
reused for payloads marked `shared` (pure data, resolved without the caller's context).

It also gives each event its own memo tables: graphql-core 3.3 copies the subscription's executor
for each event but shares the per-execution caches, which then grow with every event for as long
as the subscription lives. And it binds the resolvers' async helpers to the executor weakly:
graphql-core binds them to it strongly, a reference cycle through the operation's context (for
a subscription, its WebSocket and all it holds) that only a full garbage collection freed, and
the API process freezes what survives one (budcluster/collector.py).
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from collections.abc import Awaitable, Sequence
from typing import Any

from graphql import ExecutionResult, GraphQLResolveInfoHelpers
from graphql.pyutils import RefMap, gather_with_cancel
from strawberry.schema.schema import StrawberryGraphQLCoreExecutionContext

SHARED_RESULTS = 512
SHARED_LARGE_RESULTS = 4
"""Payloads marked `large` (a snapshot of up to 1,000 jobs: megabytes) are kept apart, a few."""


class _SharedResults:
    def __init__(self, size: int) -> None:
        self._size = size
        # key -> (payload, operation, result); holding the objects keeps their ids unique.
        self._entries: OrderedDict[tuple[int, int, str], tuple[Any, Any, ExecutionResult]] = (
            OrderedDict()
        )
        self._data: dict[int, Any] = {}
        """id(result.data) -> result.data for the results held (see `holds`)."""

    def get(self, payload: Any, operation: Any, variables: str) -> ExecutionResult | None:
        key = (id(payload), id(operation), variables)
        entry = self._entries.get(key)
        if entry is None or entry[0] is not payload or entry[1] is not operation:
            return None
        self._entries.move_to_end(key)
        return entry[2]

    def put(self, payload: Any, operation: Any, variables: str, result: ExecutionResult) -> None:
        key = (id(payload), id(operation), variables)
        if key in self._entries:
            self._forget(self._entries[key][2])
        self._entries[key] = (payload, operation, result)
        self._data[id(result.data)] = result.data
        while len(self._entries) > self._size:
            self._forget(self._entries.popitem(last=False)[1][2])

    def _forget(self, result: ExecutionResult) -> None:
        if self._data.get(id(result.data)) is result.data:
            del self._data[id(result.data)]

    def holds(self, data: Any) -> bool:
        return self._data.get(id(data)) is data


_shared = _SharedResults(SHARED_RESULTS)
_shared_large = _SharedResults(SHARED_LARGE_RESULTS)


def _results_for(payload: Any) -> _SharedResults:
    return _shared_large if getattr(payload, "large", False) else _shared


def is_shared_data(data: Any) -> bool:
    """Whether `data` is a shared result's (the transport serialises those once, by identity;
    anything else is serialised and forgotten)."""
    return _shared.holds(data) or _shared_large.holds(data)


def is_shared(payload: Any) -> bool:
    """Payloads opt in with a truthy `shared` attribute (a strawberry.Private field)."""
    return bool(getattr(payload, "shared", False))


class ExecutionContext(StrawberryGraphQLCoreExecutionContext):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.async_helpers = _helpers(weakref.ref(self))

    def build_per_event_executor(self, payload: Any) -> Any:
        if is_shared(payload):
            found = _results_for(payload).get(payload, self.operation, self._variables())
            if found is not None:  # another watcher of the view ran it: no executor to copy
                return _Executed(found)
        executor = super().build_per_event_executor(payload)
        executor._relevant_sub_fields = {}
        executor._stream_usages = RefMap()
        return executor

    def execute_operation(self, serially: bool | None = None) -> Any:
        payload = self.root_value
        if not is_shared(payload):
            return super().execute_operation(serially)
        variables = self._variables()
        found = _results_for(payload).get(payload, self.operation, variables)
        if found is not None:
            return found
        result = super().execute_operation(serially)
        if isinstance(result, ExecutionResult):
            _remember(payload, self.operation, variables, result)
            return result
        return _remember_later(payload, self.operation, variables, result)

    def _variables(self) -> str:
        return repr(sorted(self.variable_values.coerced.items()))


class _Executed:
    """A per-event executor whose result is already known (a shared payload's)."""

    __slots__ = ("_result",)

    def __init__(self, result: ExecutionResult) -> None:
        self._result = result

    def execute_operation(self, serially: bool | None = None) -> ExecutionResult:
        return self._result


def _remember(payload: Any, operation: Any, variables: str, result: ExecutionResult) -> None:
    if not result.errors:
        _results_for(payload).put(payload, operation, variables, result)


async def _remember_later(payload: Any, operation: Any, variables: str, pending: Any) -> Any:
    result = await pending
    if isinstance(result, ExecutionResult):
        _remember(payload, operation, variables, result)
    return result


def _helpers(executor: weakref.ref[ExecutionContext]) -> GraphQLResolveInfoHelpers:
    """The executor's gather and track, as graphql-core makes them, without holding it."""

    def gather(values: Sequence[Awaitable[Any]]) -> Awaitable[list[Any]]:
        alive = executor()
        return gather_with_cancel(*values) if alive is None else alive.gather_async_work(values)

    def track(values: Sequence[Any]) -> None:
        alive = executor()
        if alive is not None:
            alive.track_async_work(values)

    return GraphQLResolveInfoHelpers(gather=gather, track=track)
