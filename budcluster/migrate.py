"""Run the Alembic history from code, on the service's own engine and event loop."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncEngine

import migrations

SCRIPT_LOCATION = str(Path(migrations.__file__).resolve().parent)
VERSION_TABLE = "alembic_version"
"""Where Alembic keeps the revisions a database is at (its default; env.py keeps it)."""


def alembic_config(url: str | None = None, connection: Connection | None = None) -> Config:
    config = Config()
    config.set_main_option("script_location", SCRIPT_LOCATION)
    if url:
        config.set_main_option("sqlalchemy.url", url)
    if connection is not None:
        config.attributes["connection"] = connection
    return config


async def upgrade(engine: AsyncEngine, revision: str = "head") -> None:
    await _run(engine, lambda sync: command.upgrade(alembic_config(connection=sync), revision))


async def downgrade(engine: AsyncEngine, revision: str = "base") -> None:
    await _run(engine, lambda sync: command.downgrade(alembic_config(connection=sync), revision))


async def _run(engine: AsyncEngine, step: Callable[[Connection], None]) -> None:
    """SQLite alters a table by copying it and dropping the old one, and dropping a table
    deletes the rows that refer to it when foreign keys are enforced: so they are not, while
    the history runs, and are checked when it is done."""
    async with engine.connect() as conn:
        sqlite = conn.dialect.name == "sqlite"
        if sqlite:
            await conn.exec_driver_sql("PRAGMA foreign_keys=OFF")
            await conn.commit()
        try:
            async with conn.begin():
                await conn.run_sync(step)
                if sqlite:
                    broken = (await conn.exec_driver_sql("PRAGMA foreign_key_check")).all()
                    if broken:
                        raise RuntimeError(f"the migration broke foreign keys: {broken[:5]}")
        finally:
            if sqlite:
                await conn.rollback()
                await conn.exec_driver_sql("PRAGMA foreign_keys=ON")
                await conn.commit()


@functools.cache
def _history() -> tuple[frozenset[str], frozenset[str]]:
    """This code's heads and every revision it knows, read from its scripts once a process."""
    from alembic.script import ScriptDirectory

    script = ScriptDirectory.from_config(alembic_config())
    known = frozenset(rev.revision for rev in script.walk_revisions())
    return frozenset(script.get_heads()), known


async def _current(engine: AsyncEngine) -> set[str]:
    """The revisions the database is at (none when it was never migrated), read from Alembic's
    version table directly: a MigrationContext logs two INFO lines each time it is made, and
    readiness asks this at every probe (every 10 s, ~17,000 lines a day a pod)."""

    def read(sync: Connection) -> set[str]:
        if not sa.inspect(sync).has_table(VERSION_TABLE):
            return set()
        versions = sync.execute(sa.text(f"SELECT version_num FROM {VERSION_TABLE}")).scalars()
        return {str(v) for v in versions}

    async with engine.connect() as conn:
        return await conn.run_sync(read)


async def is_current(engine: AsyncEngine) -> bool:
    """Whether the database is at the latest revision of the history."""
    heads, _ = _history()
    return await _current(engine) == heads


async def serves_this_code(engine: AsyncEngine) -> bool:
    """Whether the database has this code's migrations: at its head, or ahead of it (a newer
    release migrated it during a rolling upgrade: revisions this code does not know). Behind
    (or empty) is False."""
    heads, known = _history()
    current = await _current(engine)
    return bool(current) and (current == heads or not current <= known)


async def check(engine: AsyncEngine) -> None:
    """Raise if the tables in the code and the migrated database differ (`alembic check`)."""
    async with engine.connect() as conn:
        await conn.run_sync(lambda sync: command.check(alembic_config(connection=sync)))
