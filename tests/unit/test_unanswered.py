"""Which database errors mean "the database does not answer" (answered UNAVAILABLE with
retryAfter) rather than "it refused what was asked". Errors are made the way SQLAlchemy's asyncpg
dialect makes them from asyncpg's, so the test sees what the unit of work sees.

Found by the fault suite: right after a PostgreSQL restart, connecting fails with 57P03 "the
database system is not yet accepting connections", which SQLAlchemy reports as a plain
DBAPIError; it reached clients as HTTP 500 "Internal error.".
"""

from __future__ import annotations

import asyncpg
import pytest
import sqlalchemy as sa
from sqlalchemy.dialects.postgresql.asyncpg import (
    AsyncAdapt_asyncpg_connection,
    AsyncAdapt_asyncpg_dbapi,
)

from adapters.db.uow import unanswered

DBAPI = AsyncAdapt_asyncpg_dbapi(asyncpg)  # type: ignore[no-untyped-call]


def as_sqlalchemy_raises(error: Exception) -> sa.exc.StatementError:
    try:
        AsyncAdapt_asyncpg_connection._handle_exception_no_connection(DBAPI, error)
    except Exception as translated:
        wrapped = sa.exc.DBAPIError.instance(None, None, translated, DBAPI.Error)
        assert isinstance(wrapped, sa.exc.DBAPIError)
        return wrapped
    raise AssertionError("not translated")


@pytest.mark.parametrize(
    "error",
    [
        asyncpg.exceptions.CannotConnectNowError(
            "the database system is not yet accepting connections"
        ),
        asyncpg.exceptions.AdminShutdownError("terminating connection due to administrator"),
        asyncpg.exceptions.CrashShutdownError("terminating connection because of crash"),
        asyncpg.exceptions.TooManyConnectionsError("sorry, too many clients already"),
        asyncpg.exceptions.ConnectionDoesNotExistError("connection was closed in the middle"),
        asyncpg.exceptions.ConnectionFailureError("connection failure"),
    ],
    ids=lambda e: type(e).__name__,
)
def test_a_database_that_does_not_answer(error: Exception) -> None:
    assert unanswered(as_sqlalchemy_raises(error))


@pytest.mark.parametrize(
    "error",
    [
        asyncpg.exceptions.UniqueViolationError("duplicate key value"),
        asyncpg.exceptions.SerializationError("could not serialize access"),
        asyncpg.exceptions.UndefinedTableError('relation "job" does not exist'),
    ],
    ids=lambda e: type(e).__name__,
)
def test_a_database_that_refused_what_was_asked(error: Exception) -> None:
    assert not unanswered(as_sqlalchemy_raises(error))


def test_refused_connections_and_pool_timeouts() -> None:
    assert unanswered(ConnectionRefusedError(111, "Connect call failed"))
    assert unanswered(sa.exc.TimeoutError("QueuePool limit reached"))
    assert not unanswered(ValueError("not a database error"))


def test_a_periodic_chore_meeting_an_outage_warns_without_a_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Found by the fault suite: event pruning logged tracebacks through a PostgreSQL restart."""
    from budcluster.runtime import log_failure

    log_failure("pruning events", ConnectionRefusedError(111, "Connect call failed"))
    log_failure(
        "pruning events", as_sqlalchemy_raises(asyncpg.exceptions.CannotConnectNowError("x"))
    )
    assert [(r.levelname, r.exc_info) for r in caplog.records] == [("WARNING", None)] * 2
    caplog.clear()
    try:
        raise ValueError("a bug")
    except ValueError as exc:
        log_failure("pruning events", exc)
    assert [r.levelname for r in caplog.records] == ["ERROR"] and caplog.records[0].exc_info
