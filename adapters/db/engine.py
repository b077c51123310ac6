"""The database handle: an async engine plus what each dialect needs to behave.

SQLite (the embedded default) allows one writer at a time, and a transaction that reads and then
writes can fail outright rather than wait when another writes meanwhile. In one process the cure
is simple and cheap: every unit of work on SQLite holds one asyncio lock for its duration (WAL
mode keeps plain reads, such as the event log's, concurrent). PostgreSQL needs no such lock; its
row locks (`SELECT ... FOR UPDATE` on jobs, the per-cluster sequence row) order writers instead.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from adapters.db.audit import WROTE
from adapters.db.uow import SqlUnitOfWork
from domain.model import audit
from domain.ports.events import StoredEvent
from domain.ports.unit_of_work import TenantScope


def normalise_url(url: str) -> str:
    """Accept plain `postgresql://` and `sqlite:///` URLs and pick the async drivers."""
    if url.startswith("postgres://"):
        url = "postgresql://" + url.removeprefix("postgres://")
    if url.startswith("postgresql://"):
        return "postgresql+asyncpg://" + url.removeprefix("postgresql://")
    if url.startswith("sqlite://") and not url.startswith("sqlite+aiosqlite://"):
        return "sqlite+aiosqlite://" + url.removeprefix("sqlite://")
    return url


class Database:
    def __init__(self, url: str, *, pool_size: int = 10, **engine_options: Any) -> None:
        self.url = normalise_url(url)
        self.is_sqlite = self.url.startswith("sqlite")
        options: dict[str, Any] = dict(engine_options)
        if not self.is_sqlite:
            options.setdefault("pool_size", pool_size)
            options.setdefault("max_overflow", pool_size)
            options.setdefault("pool_pre_ping", True)
        self.engine: AsyncEngine = create_async_engine(self.url, **options)
        if self.is_sqlite:
            event.listen(self.engine.sync_engine, "connect", _sqlite_pragmas)
        event.listen(self.engine.sync_engine, "before_cursor_execute", _note_audited_writes)
        self._lock: asyncio.Lock | None = None
        self.after_commit: Callable[[Sequence[StoredEvent]], Awaitable[None]] | None = None
        """What every unit of work's committed events are handed to (the reactions), set by
        the wiring."""

    @property
    def write_lock(self) -> asyncio.Lock | None:
        if self.is_sqlite and self._lock is None:
            self._lock = asyncio.Lock()
        return self._lock

    @contextlib.asynccontextmanager
    async def serialised(self) -> AsyncIterator[None]:
        """Hold the SQLite writer lock (no-op on PostgreSQL)."""
        lock = self.write_lock
        if lock is None:
            yield
            return
        async with lock:
            yield

    def unit_of_work(self, scope: TenantScope, *, consistent_read: bool = False) -> SqlUnitOfWork:
        return SqlUnitOfWork(self, scope, consistent_read=consistent_read)

    async def dispose(self) -> None:
        await self.engine.dispose()


def _note_audited_writes(conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
    if audit.current.get() is not None and statement.lstrip()[:6].upper() in _WRITES:
        conn.info[WROTE] = True


_WRITES = frozenset({"INSERT", "UPDATE", "DELETE"})


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA busy_timeout=10000")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()
