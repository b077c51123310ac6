"""Production mode, two API processes: PostgreSQL (a fresh database), events through Redis,
in-process tasks. A job submitted through one process is seen, change by change and in order, by a
subscriber of the other, whichever of the two holds the lease that drives the simulated cluster.
"""

from __future__ import annotations

import asyncio
import itertools
import re
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import asyncpg
import pytest

from tests.e2e.conftest import (
    TOKEN,
    Service,
    ServiceFactory,
    assert_stored_or_rejected,
    batch_job,
    clean_env,
    completed,
    http_client,
    redis_url,
    run_cli,
    same_budget,
    submit_ok,
    subscribed,
)

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("no_tracebacks")]

LIFECYCLE = [
    ("SUBMITTED", "PENDING"),
    ("TRANSITION", "QUEUED"),
    ("TRANSITION", "ADMITTED"),
    ("TRANSITION", "RUNNING"),
    ("TRANSITION", "COMPLETED"),
]
UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


@dataclass
class Production:
    a: Service
    b: Service
    token: str
    cluster_id: str
    prefix: str
    database_url: str


@pytest.fixture(scope="module")
async def production(
    services: ServiceFactory,
    postgres_database: str,
    redis_prefix: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> AsyncIterator[Production]:
    env = clean_env(
        DATABASE_URL=postgres_database,
        REDIS_URL=redis_url(),
        BUDCLUSTER_DATA_DIR=str(tmp_path_factory.mktemp("production-data")),
        BUDCLUSTER_TASKS="inprocess",
        BUDCLUSTER_EVENTS="redis",
        BUDCLUSTER_REDIS_PREFIX=redis_prefix,
        BUDCLUSTER_TOKEN_PEPPER=secrets.token_hex(32),
        BUDCLUSTER_CREATE_DEFAULTS="false",
        BUDCLUSTER_AUTO_MIGRATE="false",
        BUDCLUSTER_SIM_POLL_SECONDS="0.2",
        # The outbox poll is only a safety net; with it this slow, the events must come
        # through Redis for the test to pass in time.
        BUDCLUSTER_CATCH_UP_SECONDS="60",
    )
    await run_cli(env, "migrate")
    created = await run_cli(
        env,
        "cluster",
        "create-simulated",
        "--name",
        "e2e-sim",
        "--nodes",
        "2x8xnvidia-a100-80gb",
        "--startup-seconds",
        "0.5",
    )
    cluster_id = created.stdout.strip().splitlines()[-1]
    assert UUID.match(cluster_id), created
    issued = await run_cli(env, "token", "create", "--name", "e2e", "--new-tenant", "--operator")
    tokens = TOKEN.findall(issued.stdout)
    assert len(tokens) == 1, issued
    a, b = await asyncio.gather(services.start("api-a", env), services.start("api-b", env))
    # Neither process prints a token or makes a cluster of its own in production mode.
    assert TOKEN.findall(a.stdout() + b.stdout()) == []
    try:
        yield Production(a, b, tokens[0], cluster_id, redis_prefix, postgres_database)
    finally:
        await asyncio.gather(a.stop(), b.stop())


async def lease_holder(production: Production) -> str | None:
    dsn = production.database_url.replace("postgresql+asyncpg://", "postgresql://")
    conn = await asyncpg.connect(dsn)
    try:
        holder: str | None = await conn.fetchval(
            "select holder from lease where name = $1 and expires_at > clock_timestamp()",
            f"watch:{production.cluster_id}",
        )
        return holder
    finally:
        await conn.close()


@pytest.mark.parametrize("direction", ["submit-a-watch-b", "submit-b-watch-a"])
async def test_a_job_submitted_through_one_process_streams_to_a_subscriber_of_the_other(
    production: Production, direction: str
) -> None:
    submitter, watcher = (
        (production.a, production.b)
        if direction == "submit-a-watch-b"
        else (production.b, production.a)
    )
    token, cluster_id = production.token, production.cluster_id

    async with subscribed(watcher, token, cluster_id) as sub:
        await sub.wait_for(lambda u: len(u) >= 1)
        snapshot = sub.updates[0]
        assert snapshot["__typename"] == "JobSnapshot", snapshot
        async with http_client(submitter, token) as session:
            job = await submit_ok(session, batch_job(cluster_id, gpus=8, runtime=1))
        await sub.wait_for(completed([job["id"]]), timeout=30)

    changes: list[dict[str, Any]] = sub.changes
    assert len(sub.updates) == 1 + len(changes)  # one snapshot, then only changes
    # After the snapshot, in order, once each (the cluster's timeline changes share the
    # sequence and are skipped here) ...
    sequences = [c["sequence"] for c in changes]
    assert sequences[0] > snapshot["sequence"]
    assert all(a < b for a, b in itertools.pairwise(sequences))
    # ... and the job's own changes are its whole lifecycle.
    mine = [c for c in changes if c["job"]["id"] == job["id"]]
    assert [(c["kind"], c["job"]["status"]) for c in mine] == LIFECYCLE
    previous = None
    for change in mine:
        assert change["transition"]["fromStatus"] == previous, change
        assert change["transition"]["toStatus"] == change["job"]["status"], change
        previous = change["job"]["status"]

    # The cluster is driven under a lease kept in PostgreSQL, by exactly one of the processes.
    assert await lease_holder(production) is not None
    assert production.a.process is not None and production.a.process.poll() is None
    assert production.b.process is not None and production.b.process.poll() is None


async def test_a_budget_the_database_cannot_hold_is_rejected_not_an_internal_error(
    production: Production,
) -> None:
    for budget in ("12345.6789", "1e11"):
        job_input = batch_job(production.cluster_id, gpus=1, runtime=0.5)
        job_input["budgetLimit"] = budget
        await assert_stored_or_rejected(
            production.a,
            production.token,
            job_input,
            field="budgetLimit",
            read="budgetLimit",
            same=same_budget(budget),
        )


async def test_a_spec_with_a_nul_character_is_stored_or_rejected(production: Production) -> None:
    job_input = batch_job(production.cluster_id, gpus=1, runtime=0.5)
    spec = {"simulation": {"runtime_seconds": 0.5}, "argument": "a\u0000b"}
    job_input["spec"] = spec
    await assert_stored_or_rejected(
        production.a,
        production.token,
        job_input,
        field="spec",
        read="spec",
        same=lambda job: job["spec"] == spec,
    )


async def test_a_source_id_longer_than_the_column_is_stored_or_rejected(
    production: Production,
) -> None:
    source_id = "pipeline-" + "x" * 291
    job_input = batch_job(production.cluster_id, gpus=1, runtime=0.5)
    job_input["source"] = {"kind": "PIPELINE", "sourceId": source_id}
    await assert_stored_or_rejected(
        production.a,
        production.token,
        job_input,
        field="source.sourceId",
        read="source { sourceId }",
        same=lambda job: job["source"]["sourceId"] == source_id,
    )
