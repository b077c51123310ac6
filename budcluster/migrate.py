"""Run the Alembic history from code, on the service's own engine and event loop."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncEngine

import migrations

SCRIPT_LOCATION = str(Path(migrations.__file__).resolve().parent)


def alembic_config(url: str | None = None, connection: Connection | None = None) -> Config:
    config = Config()
    config.set_main_option("script_location", SCRIPT_LOCATION)
    if url:
        config.set_main_option("sqlalchemy.url", url)
    if connection is not None:
        config.attributes["connection"] = connection
    return config


async def upgrade(engine: AsyncEngine, revision: str = "head") -> None:
    async with engine.begin() as conn:
        await conn.run_sync(lambda sync: command.upgrade(alembic_config(connection=sync), revision))


async def downgrade(engine: AsyncEngine, revision: str = "base") -> None:
    async with engine.begin() as conn:
        await conn.run_sync(
            lambda sync: command.downgrade(alembic_config(connection=sync), revision)
        )


async def check(engine: AsyncEngine) -> None:
    """Raise if the tables in the code and the migrated database differ (`alembic check`)."""
    async with engine.connect() as conn:
        await conn.run_sync(lambda sync: command.check(alembic_config(connection=sync)))
