"""Every subscription's loop, written once: `relay` opens the domain's stream and sends each of
its updates as a GraphQL message.

The domain's stream holds the contract (domain/services/replay.py): it is open, and its
snapshot or the changes missed since `since` are read, before it is returned, so an unknown
cluster or benchmark is refused (NOT_FOUND, naming the argument) before anything is sent, and
that first read can run as the tenant's heavy work. Falling behind and catching up are the
domain stream's; here each update becomes its message (fresh DataLoaders first, where the
message's fields load more), and the domain's stream is closed however the subscription ends:
by its end, an error, or the client's `complete` cancelling it.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import TypeVar

import strawberry

from domain.errors import NotFound
from domain.model.ids import ClusterId
from resolvers.common import query_uuid
from schema.context import Info
from schema.fairness import heavy_work
from schema.refusals import argument_error
from schema.types.errors import UserInputError

U = TypeVar("U")
M = TypeVar("M")


def resumable(cluster_id: strawberry.ID, since: int | None) -> ClusterId:
    """A cluster stream's arguments: the cluster, and `since` (the last sequence the client
    holds, to resume after)."""
    key = ClusterId(query_uuid(cluster_id, "clusterId"))
    if since is not None and since < 0:
        raise UserInputError("since must not be negative", field="since")
    return key


async def relay(
    info: Info,
    open_stream: Callable[[], Awaitable[AsyncGenerator[U, None]]],
    message: Callable[[U], M],
    *,
    heavy: bool = False,
    fresh_loaders: bool = False,
    missing: str = "no such cluster",
    field: str = "clusterId",
) -> AsyncGenerator[M, None]:
    """`open_stream()`'s updates as `message` makes them. `heavy`: the first read (a snapshot,
    or what was missed) holds the tenant's heavy-work slot. `fresh_loaders`: each message is
    made with fresh DataLoaders. A NotFound from `open_stream` is the error `missing` naming
    `field`."""
    with argument_error(field, catching=NotFound, message=missing):
        async with heavy_work(info.context) if heavy else contextlib.nullcontext():
            stream = await open_stream()
    try:
        async for update in stream:
            if fresh_loaders:
                info.context.refresh_loaders()
            yield message(update)
    finally:
        await stream.aclose()
