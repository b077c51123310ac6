"""The one Alembic history builds PostgreSQL and SQLite from empty, matches the code's tables
(`alembic check`), and goes down and up again."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from alembic.util.exc import CommandError

from adapters.db.engine import Database
from budcluster import migrate
from tests.integration.conftest import TABLES, create_database, drop_database


async def _tables(db: Database) -> set[str]:
    async with db.engine.connect() as conn:
        names = await conn.run_sync(lambda sync: sa.inspect(sync).get_table_names())
    return set(names) - {"alembic_version"}


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
async def test_history_builds_from_empty_without_drift(backend: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    url = f"sqlite:///{tmp_path / 'fresh.db'}" if backend == "sqlite" else await create_database()
    db = Database(url)
    try:
        assert await _tables(db) == set()
        await migrate.upgrade(db.engine)
        assert await _tables(db) == set(TABLES)
        await migrate.check(db.engine)  # raises on any difference between code and database

        await migrate.downgrade(db.engine)
        assert await _tables(db) == set()
        await migrate.upgrade(db.engine)
        await migrate.check(db.engine)
    finally:
        await db.dispose()
        if backend == "postgresql":
            await drop_database(url)


async def test_check_detects_drift(tmp_path) -> None:  # type: ignore[no-untyped-def]
    db = Database(f"sqlite:///{tmp_path / 'drift.db'}")
    try:
        await migrate.upgrade(db.engine)
        async with db.engine.begin() as conn:
            await conn.execute(sa.text("DROP INDEX ix_job_cluster_id_status"))
        with pytest.raises(CommandError):
            await migrate.check(db.engine)
    finally:
        await db.dispose()
