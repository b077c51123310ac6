"""Alembic environment, async, for PostgreSQL (asyncpg) and SQLite (aiosqlite).

When the caller passes an open connection in `config.attributes["connection"]` (tests, and
`budcluster.migrate` running inside the service's event loop), migrations run on it; otherwise
an engine is made from the configured URL and the migrations run in a fresh event loop.
"""

from __future__ import annotations

import asyncio

from alembic import context
from sqlalchemy import pool
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import create_async_engine

from adapters.db.tables import metadata as core_metadata
from adapters.simulated.store import metadata as simulated_metadata

config = context.config
target_metadata = [core_metadata, simulated_metadata]


def run_on(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


async def run_async() -> None:
    engine = create_async_engine(
        config.get_main_option("sqlalchemy.url") or "", poolclass=pool.NullPool
    )
    async with engine.connect() as connection:
        await connection.run_sync(run_on)
        await connection.commit()
    await engine.dispose()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        run_on(connection)
    else:
        asyncio.run(run_async())


if context.is_offline_mode():
    context.configure(
        url=config.get_main_option("sqlalchemy.url"),
        target_metadata=target_metadata,
        literal_binds=True,
    )
    with context.begin_transaction():
        context.run_migrations()
else:
    run_migrations_online()
