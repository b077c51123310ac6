"""Fair shares of one API process between tenants: heavy operations and open subscriptions.

Rate budgets bound what a tenant may spend over a minute, not what it runs at once: a tenant's
clients sending previews, long schedules or big pages back to back kept the event loop and the
compute pool busy with its work, and every other tenant's cheap query waited behind it. So an
operation whose cost (schema/cost.py) is at least `heavy_points` runs holding one of its tenant's
`heavy_per_tenant` slots (callers without a token share their address's), and waits for one
otherwise; cheap operations never wait. Inside them, the fields that cost CPU (a preview, a
schedule's cut, a subscription's first snapshot) run one at a time per tenant, whichever of its
operations asks: a document of 20 aliased previews runs them in turn. A tenant's heavy work is
then a bounded share of the loop, which interleaves everyone else's between its steps. Open
subscriptions are counted per tenant, at most `subscriptions_per_tenant` in this process; one
more is refused (SUBSCRIPTION_LIMIT_EXCEEDED) and the socket stays open. All of it is per
process: what one process can be made to do is what it protects, and several processes each
hold their own.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections import Counter
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterator
from typing import Any, TypeVar

from graphql import OperationType, get_operation_ast
from strawberry.extensions import SchemaExtension

from schema.types.errors import UserInputError

T = TypeVar("T")

HEAVY_POINTS = 100
"""An operation costing this much is heavy: a preview (100), a 45-hour schedule, a page of 50
jobs with their clusters. The UI's own queries cost less (test_ui_query_costs.py)."""


class TenantShares:
    def __init__(
        self,
        *,
        heavy_per_tenant: int,
        subscriptions_per_tenant: int,
        heavy_points: int = HEAVY_POINTS,
    ) -> None:
        if heavy_per_tenant < 1 or subscriptions_per_tenant < 1:
            raise ValueError("a tenant needs at least one heavy slot and one subscription")
        self.heavy_per_tenant = heavy_per_tenant
        self.subscriptions_per_tenant = subscriptions_per_tenant
        self.heavy_points = heavy_points
        self._gates: dict[tuple[str, str], asyncio.Semaphore] = {}
        self._waiting: Counter[tuple[str, str]] = Counter()
        self._subscriptions: Counter[str] = Counter()

    def heavy(self, key: str) -> contextlib.AbstractAsyncContextManager[None]:
        """Hold one of `key`'s heavy operation slots for the block (waiting if need be)."""
        return self._hold((key, "operation"), self.heavy_per_tenant)

    def heavy_field(self, key: str) -> contextlib.AbstractAsyncContextManager[None]:
        """Hold `key`'s one slot for a heavy field (a preview, a schedule's cut) for the block:
        one document asking for 20 previews runs them one after another, not 20 at once."""
        return self._hold((key, "field"), 1)

    @contextlib.asynccontextmanager
    async def _hold(self, gate_key: tuple[str, str], size: int) -> AsyncIterator[None]:
        gate = self._gates.get(gate_key)
        if gate is None:
            gate = self._gates[gate_key] = asyncio.Semaphore(size)
        self._waiting[gate_key] += 1
        try:
            async with gate:
                yield
        finally:
            self._waiting[gate_key] -= 1
            if not self._waiting[gate_key]:
                del self._waiting[gate_key]
                self._gates.pop(gate_key, None)

    @contextlib.contextmanager
    def subscription(self, key: str) -> Iterator[None]:
        """Count an open subscription of `key` for the block; refused over the cap."""
        if self._subscriptions[key] >= self.subscriptions_per_tenant:
            refused = UserInputError(
                f"your tenant has {self._subscriptions[key]} subscriptions open on this server, "
                "the most it may: close some first",
                code="SUBSCRIPTION_LIMIT_EXCEEDED",
            )
            refused.extensions["limit"] = self.subscriptions_per_tenant
            raise refused
        self._subscriptions[key] += 1
        try:
            yield
        finally:
            self._subscriptions[key] -= 1
            if not self._subscriptions[key]:
                del self._subscriptions[key]

    def open_subscriptions(self, key: str) -> int:
        return self._subscriptions[key]


def share_key(context: Any) -> str:
    """Whose share an operation counts against: its tenant's, else (no token) its address's."""
    principal = getattr(context, "principal", None)
    if principal is not None:
        return f"tenant:{principal.tenant_id}"
    client = getattr(getattr(context, "request", None), "client", None)
    return f"address:{client.host if client else 'unknown'}"


class HeavyOperations(SchemaExtension):
    """Queries and mutations costing at least `heavy_points` run in one of their tenant's
    heavy slots (after CostLimit has priced and charged them)."""

    async def on_execute(self) -> AsyncIterator[None]:
        ctx = self.execution_context
        context = ctx.context
        shares: TenantShares | None = getattr(getattr(context, "services", None), "shares", None)
        cost = getattr(context, "cost", None)
        document = ctx.graphql_document
        operation = (
            get_operation_ast(document, ctx.operation_name) if document is not None else None
        )
        if (
            shares is None
            or not isinstance(cost, int)
            or cost < shares.heavy_points
            or operation is None
            or operation.operation is OperationType.SUBSCRIPTION
        ):
            yield
            return
        async with shares.heavy(share_key(context)):
            yield


def capped(
    resolver: Callable[..., AsyncGenerator[T, None]],
) -> Callable[..., AsyncGenerator[T, None]]:
    """A subscription resolver whose streams count against their tenant's open subscriptions
    (refused at the start when there are too many, released when the stream ends)."""

    @functools.wraps(resolver)
    async def subscribe(*args: Any, **kwargs: Any) -> AsyncGenerator[T, None]:
        task = asyncio.current_task()
        if task is not None:
            task.add_done_callback(_drop_cancellation)
        context = kwargs["info"].context
        shares: TenantShares | None = getattr(context.services, "shares", None)
        with shares.subscription(share_key(context)) if shares else contextlib.nullcontext():
            stream = resolver(*args, **kwargs)
            try:
                async for item in stream:
                    yield item
            finally:
                await stream.aclose()

    return subscribe


def _drop_cancellation(task: asyncio.Task[Any]) -> None:
    """Take a cancelled subscription task's CancelledError out of it.

    A client that ends a subscription with `complete` (every graphql-ws client unsubscribing)
    has Strawberry cancel the operation's task, which nobody awaits after. The task keeps its
    CancelledError, whose traceback keeps every frame the error went through, which keep the
    task (through the operation), the WebSocket handler, its context, the streams and their hub
    subscription: a reference cycle holding the whole connection, freed only by a full garbage
    collection, and the API process freezes what survives one (budcluster/collector.py) for up
    to ten minutes. `result()` hands the stored error over (the task forgets it), so once
    it is dropped here reference counting frees the connection the moment it closes."""
    if task.cancelled():
        with contextlib.suppress(asyncio.CancelledError):
            task.result()


@contextlib.asynccontextmanager
async def heavy_work(context: Any) -> AsyncIterator[None]:
    """Hold the caller's heavy-field slot for the block: a preview, a schedule's cut, a
    subscription's first snapshot (one at a time per tenant, whichever operations ask)."""
    shares: TenantShares | None = getattr(getattr(context, "services", None), "shares", None)
    if shares is None:
        yield
        return
    async with shares.heavy_field(share_key(context)):
        yield
