"""What the unit of work and the event log need of the database: `engine.Database` as a Protocol.

`engine.Database` makes units of work, so the unit of work (and the event log it reads with)
take the database by this description instead of importing it: the modules of this package
import downwards only, from the handle to the repositories to the tables.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Protocol

from sqlalchemy.ext.asyncio import AsyncEngine

from domain.ports.events import StoredEvent


class DatabaseHandle(Protocol):
    engine: AsyncEngine
    is_sqlite: bool
    after_commit: Callable[[Sequence[StoredEvent]], Awaitable[None]] | None
    """What every unit of work's committed events are handed to (the reactions)."""

    @property
    def write_lock(self) -> asyncio.Lock | None:
        """The SQLite writer lock (None on PostgreSQL)."""

    def serialised(self) -> AbstractAsyncContextManager[None]:
        """Hold the SQLite writer lock (no-op on PostgreSQL)."""
