"""Alembic migrations: one history that builds PostgreSQL and SQLite alike from empty."""
