"""What a subscription leaves behind is freed by reference counting, not only by the collector.

The API process freezes the survivors of each full garbage collection (budcluster/collector.py),
so a reference cycle that held a subscription's connection stayed in memory up to ten minutes
after the connection closed (`benchmarks.faults --only memory`: RSS grew each round of 100
subscribers). Each test runs with the collector off and checks that an object the subscription
held is gone once the last outside reference is dropped.
"""

from __future__ import annotations

import asyncio
import gc
import weakref
from collections.abc import AsyncGenerator, Iterator
from types import SimpleNamespace
from typing import Any

import pytest
import strawberry
from graphql import parse

from schema.context import Loaders
from schema.execution import ExecutionContext
from schema.fairness import TenantShares, capped


class Held:
    """Something a connection holds (its WebSocket, its context)."""


@pytest.fixture
def no_collector() -> Iterator[None]:
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


async def test_a_subscription_cancelled_and_never_awaited_is_freed(no_collector: None) -> None:
    """As Strawberry does on `complete`: the operation's task is cancelled, and an object that
    the task's frames hold also holds the task (the operation). Nobody awaits the task."""
    shares = TenantShares(heavy_per_tenant=1, subscriptions_per_tenant=10)
    info: Any = SimpleNamespace(
        context=SimpleNamespace(
            services=SimpleNamespace(shares=shares), principal=SimpleNamespace(tenant_id="a")
        )
    )
    started = asyncio.Event()

    async def resolver(info: Any) -> AsyncGenerator[int, None]:
        started.set()
        await asyncio.Event().wait()
        yield 1

    async def operation(held: SimpleNamespace) -> None:
        async for _ in capped(resolver)(info=info):
            pass

    holder = SimpleNamespace(task=None, connection=Held())
    connection = weakref.ref(holder.connection)
    holder.task = asyncio.create_task(operation(holder))
    await started.wait()
    holder.task.cancel()
    for _ in range(3):  # the task ends, then its done callbacks run
        await asyncio.sleep(0)
    assert holder.task.cancelled()
    assert shares.open_subscriptions("tenant:a") == 0
    del holder
    assert connection() is None


@strawberry.type
class Query:
    name: str = "x"


def test_an_executor_is_freed_with_its_last_reference(no_collector: None) -> None:
    held = Held()
    executor = ExecutionContext.build(
        strawberry.Schema(query=Query)._schema,
        parse("{ name }"),
        root_value=Query(),
        context_value=held,
    )
    assert isinstance(executor, ExecutionContext)
    gone = weakref.ref(executor)
    result = executor.execute_operation()
    assert getattr(result, "data", None) == {"name": "x"}
    del executor, result
    assert gone() is None


async def test_an_executors_helpers_still_gather_and_track() -> None:
    executor = ExecutionContext.build(strawberry.Schema(query=Query)._schema, parse("{ name }"))
    assert isinstance(executor, ExecutionContext)

    async def one(n: int) -> int:
        await asyncio.sleep(0)
        return n

    assert await executor.async_helpers.gather([one(1), one(2)]) == [1, 2]
    tracked = asyncio.ensure_future(one(3))
    executor.async_helpers.track([tracked])
    assert await tracked == 3


def test_loaders_are_freed_with_their_last_reference(no_collector: None) -> None:
    loaders = Loaders(SimpleNamespace(), None)  # type: ignore[arg-type]
    gone = weakref.ref(loaders)
    del loaders
    assert gone() is None
