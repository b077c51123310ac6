"""When a store does not answer: typed answers, and nothing committed is undone.

Covers: with the database unreachable, a request answers HTTP 503 JSON with UNAVAILABLE and
Retry-After (it cannot even authenticate), and /readyz says which store is down (the database,
Redis); an outage met while an operation runs is a GraphQL error UNAVAILABLE with `retryAfter`,
logged as a warning, never masked as "Internal error."; arq refusing to queue (Redis down) is an
Unavailable from the adapter, and a submission already committed answers with its job all the
same (the supervisor's sweep queues it later).
"""

from __future__ import annotations

import logging
import socket
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from arq.connections import ArqRedis

from adapters.tasks.arq import ArqTaskQueue
from budcluster import bootstrap
from budcluster.http import create_app
from budcluster.settings import Settings
from domain.errors import Unavailable
from tests.integration.test_graphql_api import SUBMIT
from tests.integration.test_request_limits import serving


@pytest.fixture
def closed_port() -> Iterator[int]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


async def test_without_a_database_requests_answer_503_and_readiness_says_why(
    closed_port: int, tmp_path: Any
) -> None:
    app = await bootstrap.api(
        Settings(
            database_url=f"postgresql://postgres@127.0.0.1:{closed_port}/nothing",
            redis_url=f"redis://127.0.0.1:{closed_port}/0",
            events="inprocess",
            tasks="inprocess",
            token_pepper=b"p" * 32,
            data_dir=tmp_path,
        )
    )
    transport = httpx.ASGITransport(app=create_app(app, manage_lifecycle=False))
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            token = "bud_" + uuid.uuid4().hex + "_" + "x" * 43
            answer = await client.post(
                "/graphql",
                json={"query": "{ clusters { id } }"},
                headers={"Authorization": f"Bearer {token}"},
            )
            assert answer.status_code == 503, answer.text
            assert answer.headers["Retry-After"] == "5"
            [error] = answer.json()["errors"]
            assert error["extensions"]["code"] == "UNAVAILABLE"
            assert "the database does not answer" in error["message"]
            ready = await client.get("/ready")
            assert ready.status_code == 503 and ready.headers["Retry-After"] == "5"
            assert ready.json() == {
                "status": "unavailable",
                "checks": {
                    "database": "unavailable",
                    "migrations": "unavailable",
                    "redis": "unavailable",
                },
            }
    finally:
        await app.close()


async def test_an_outage_during_an_operation_is_unavailable_not_internal(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async with serving(sqlite_url) as api:
        token = await api.token()

        async def down(*_: object, **__: object) -> None:
            raise Unavailable("the database")

        monkeypatch.setattr(api.app.clusters, "all", down)
        with caplog.at_level(logging.WARNING):
            body = (await api.call("{ clusters { id } }", token=token)).json()
        [error] = body["errors"]
        assert error["extensions"] == {"code": "UNAVAILABLE", "retryAfter": 5}
        assert "try again in 5 s" in error["message"]
        assert not any(r.exc_info for r in caplog.records)
        ready = await api.client.get("/readyz")
        assert ready.status_code == 503 and ready.json()["checks"]["database"] == "unavailable"


async def test_a_broker_that_does_not_answer_is_unavailable(closed_port: int) -> None:
    pool = ArqRedis.from_url(f"redis://127.0.0.1:{closed_port}/0", socket_connect_timeout=1)
    try:
        with pytest.raises(Unavailable, match="task queue"):
            await ArqTaskQueue(pool, queue_name="x:queue").enqueue("t", key="k")
    finally:
        await pool.aclose()


async def test_a_committed_submission_answers_its_job_when_tasks_cannot_be_queued(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Found in production mode: with Redis down, submitJob answered "Internal error." after
    the job was committed, and a client retrying without an idempotency key made duplicates."""
    async with serving(sqlite_url) as api:

        async def no_broker(*_: object, **__: object) -> bool:
            raise Unavailable("the task queue")

        monkeypatch.setattr(api.app.tasks, "enqueue", no_broker)
        with caplog.at_level(logging.WARNING):
            data = await api.ok(SUBMIT, {"input": api.job_input()}, token=await api.token())
        assert data["submitJob"]["__typename"] == "Job"
        assert await api.count_jobs() == 1
        assert any("will be queued again" in r.getMessage() for r in caplog.records)
