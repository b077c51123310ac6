"""Real PostgreSQL, SQLite and Redis for integration tests.

One fresh PostgreSQL database and one SQLite file per test session, both built by the Alembic
history; the `db` fixture runs a test on each and empties the tables before it (putting back the
priority classes the migration seeds). Redis tests use a key prefix of their own, so a shared
Redis is safe.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import pytest
import sqlalchemy as sa
from redis.asyncio import Redis

from adapters.db.engine import Database
from adapters.db.tables import metadata, workload_priority_classes
from adapters.simulated.store import metadata as simulated_metadata
from budcluster import migrate

DEFAULT_DATABASE_URL = "postgresql://postgres@127.0.0.1:5432/test"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"


def database_url() -> str:
    return os.environ.get("DATABASE_URL", DEFAULT_DATABASE_URL)


def redis_url() -> str:
    return os.environ.get("REDIS_URL", DEFAULT_REDIS_URL)


def _plain(url: str) -> str:
    return url.replace("postgresql+asyncpg://", "postgresql://")


def with_database(url: str, name: str) -> str:
    base, _, _ = _plain(url).rpartition("/")
    return f"{base}/{name}"


async def create_database(prefix: str = "budcluster_test") -> str:
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    conn = await asyncpg.connect(_plain(database_url()))
    try:
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()
    return with_database(database_url(), name)


async def drop_database(url: str) -> None:
    name = url.rpartition("/")[2]
    conn = await asyncpg.connect(_plain(database_url()))
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await conn.close()


@pytest.fixture(scope="session")
async def pg_url() -> AsyncIterator[str]:
    url = await create_database()
    yield url
    await drop_database(url)


@pytest.fixture(scope="session")
def sqlite_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    path: Path = tmp_path_factory.mktemp("sqlite") / "budcluster.db"
    return f"sqlite:///{path}"


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, sqlite_url: str, pg_url: str) -> str:
    """Each database's URL in turn: a test or fixture that takes it runs on both (unemptied: for
    a service made on it, which migrates it; `db` gives each emptied)."""
    return sqlite_url if request.param == "sqlite" else pg_url


@pytest.fixture(scope="session")
async def databases(pg_url: str, sqlite_url: str) -> AsyncIterator[dict[str, Database]]:
    made = {"sqlite": Database(sqlite_url), "postgresql": Database(pg_url)}
    for db in made.values():
        await migrate.upgrade(db.engine)
    yield made
    for db in made.values():
        await db.dispose()


TABLES = [t.name for t in reversed(metadata.sorted_tables)] + [
    t.name for t in simulated_metadata.sorted_tables
]


_SEEDED: dict[str, list[dict[str, object]]] = {}
"""Per database, the rows the migration seeded, read before the first emptying."""


async def empty(db: Database) -> None:
    async with db.engine.begin() as conn:
        seeded = _SEEDED.get(db.url)
        if seeded is None:
            rows = (await conn.execute(sa.select(workload_priority_classes))).mappings().all()
            seeded = _SEEDED.setdefault(db.url, [dict(row) for row in rows])
        if db.is_sqlite:
            for table in TABLES:
                await conn.execute(sa.text(f'DELETE FROM "{table}"'))
        else:
            await conn.execute(sa.text(f"TRUNCATE {', '.join(TABLES)} CASCADE"))
        if seeded:
            await conn.execute(workload_priority_classes.insert(), seeded)


@pytest.fixture(params=["sqlite", "postgresql"])
async def db(request: pytest.FixtureRequest, databases: dict[str, Database]) -> Database:
    database = databases[request.param]
    await empty(database)
    return database


@pytest.fixture
async def pg(databases: dict[str, Database]) -> Database:
    await empty(databases["postgresql"])
    return databases["postgresql"]


@pytest.fixture
async def redis() -> AsyncIterator[Redis]:
    client = Redis.from_url(redis_url())
    yield client
    await client.aclose()


@pytest.fixture
def prefix() -> str:
    return f"budcluster-test-{uuid.uuid4().hex[:10]}"
