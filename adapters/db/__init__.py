"""Persistence with SQLAlchemy 2 (Core, async): PostgreSQL via asyncpg, or SQLite via aiosqlite."""
