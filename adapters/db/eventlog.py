"""The read side of the outbox: a cluster's retained events by sequence, and their pruning."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from adapters.db.handle import DatabaseHandle
from adapters.db.tables import event_sequences, outbox
from adapters.shapes.documents import change_from_document
from domain.model.ids import ClusterId
from domain.ports.events import StoredEvent


class SqlEventLog:
    def __init__(self, db: DatabaseHandle) -> None:
        self._db = db

    async def _sequences(self, cluster_id: ClusterId) -> tuple[int, int]:
        async with self._db.engine.connect() as conn:
            row = (
                await conn.execute(
                    sa.select(
                        event_sequences.c.last_sequence, event_sequences.c.retained_after
                    ).where(event_sequences.c.cluster_id == cluster_id)
                )
            ).first()
        return (0, 0) if row is None else (int(row[0]), int(row[1]))

    async def current_sequence(self, cluster_id: ClusterId) -> int:
        return (await self._sequences(cluster_id))[0]

    async def retained_after(self, cluster_id: ClusterId) -> int:
        return (await self._sequences(cluster_id))[1]

    async def read_after(
        self, cluster_id: ClusterId, after: int, *, limit: int
    ) -> list[StoredEvent]:
        async with self._db.engine.connect() as conn:
            return await events_after(conn, cluster_id, after, limit=limit)

    async def prune(self, cluster_id: ClusterId, *, keep: int) -> int:
        """Drop all but the latest `keep` events of a cluster; returns how many went."""
        async with self._db.serialised(), self._db.engine.begin() as conn:
            last = (
                await conn.execute(
                    sa.select(event_sequences.c.last_sequence).where(
                        event_sequences.c.cluster_id == cluster_id
                    )
                )
            ).scalar_one_or_none()
            if last is None or last <= keep:
                return 0
            floor = int(last) - keep
            await conn.execute(
                event_sequences.update()
                .where(
                    event_sequences.c.cluster_id == cluster_id,
                    event_sequences.c.retained_after < floor,
                )
                .values(retained_after=floor)
            )
            result = await conn.execute(
                outbox.delete().where(outbox.c.cluster_id == cluster_id, outbox.c.sequence <= floor)
            )
            return int(result.rowcount or 0)


async def events_after(
    conn: AsyncConnection, cluster_id: ClusterId, after: int, *, limit: int
) -> list[StoredEvent]:
    """The cluster's retained events after `after`, in order, on `conn` (its transaction)."""
    rows = (
        await conn.execute(
            sa.select(outbox.c.sequence, outbox.c.payload, outbox.c.occurred_at)
            .where(outbox.c.cluster_id == cluster_id, outbox.c.sequence > after)
            .order_by(outbox.c.sequence)
            .limit(limit)
        )
    ).all()
    return [
        StoredEvent(cluster_id, int(seq), change_from_document(payload), at)
        for seq, payload, at in rows
    ]
