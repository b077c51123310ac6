"""The one Alembic history builds PostgreSQL and SQLite from empty, matches the code's tables
(`alembic check`), and goes down and up again; readiness wants this release's migrations and
checks them at every probe without logging; upgrading a database that holds data seeds the
priority classes and labels the nodes already stored, indexes the audit trail's targets, and
makes idempotency keys and audit events a project's."""

from __future__ import annotations

import logging
import uuid
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa
from alembic.util.exc import CommandError

from adapters.db.engine import Database
from adapters.db.mapping import job_to_row
from adapters.db.tables import audit_events, jobs
from budcluster import migrate
from budcluster.http import create_app
from domain.errors import DuplicateIdempotencyKey
from domain.model.audit import AuditFilter
from domain.model.ids import ClusterId, ProjectId, TenantId
from domain.model.quota import DEFAULT_PRIORITY_VALUES, GPU_LABEL
from domain.ports.unit_of_work import TenantScope
from tests.integration.conftest import TABLES, create_database, drop_database
from tests.integration.test_app_flows import make_app
from tests.integration.test_repositories import job_on, save
from tests.support.fakes import make_cluster


async def _tables(db: Database) -> set[str]:
    async with db.engine.connect() as conn:
        names = await conn.run_sync(lambda sync: sa.inspect(sync).get_table_names())
    return set(names) - {"alembic_version"}


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
async def test_history_builds_from_empty_without_drift(backend: str, tmp_path: Path) -> None:
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


async def test_readiness_wants_this_releases_migrations(tmp_path: Path) -> None:
    """Empty or behind: not ready. At head, or ahead (a newer release migrated it during a
    rolling upgrade): ready, so old pods keep serving until the new ones are up."""
    db = Database(f"sqlite:///{tmp_path / 'ready.db'}")
    try:
        assert not await migrate.serves_this_code(db.engine)
        await migrate.upgrade(db.engine, "0001")
        assert not await migrate.serves_this_code(db.engine)
        await migrate.upgrade(db.engine)
        assert await migrate.serves_this_code(db.engine)
        async with db.engine.begin() as conn:
            await conn.execute(sa.text("UPDATE alembic_version SET version_num = 'f00dfacef00d'"))
        assert await migrate.serves_this_code(db.engine)
    finally:
        await db.dispose()


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
async def test_readiness_probes_check_the_migrations_without_logging_each_time(
    backend: str, sqlite_url: str, pg_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A probe every 10 s logged Alembic's two INFO lines each time (~17,000 lines a day)."""
    app = await make_app(sqlite_url if backend == "sqlite" else pg_url)
    transport = httpx.ASGITransport(app=create_app(app, manage_lifecycle=False))
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            caplog.clear()  # what building the app logged is not the probes'
            with caplog.at_level(logging.DEBUG):
                for _ in range(2):
                    ready = await client.get("/ready")
                    assert ready.status_code == 200, ready.text
                    assert ready.json()["checks"]["migrations"] == "ok"
        alembic = [r.getMessage() for r in caplog.records if r.name.startswith("alembic")]
        assert alembic == []
    finally:
        await app.close()


async def test_check_detects_drift(tmp_path: Path) -> None:
    db = Database(f"sqlite:///{tmp_path / 'drift.db'}")
    try:
        await migrate.upgrade(db.engine)
        async with db.engine.begin() as conn:
            await conn.execute(sa.text("DROP INDEX ix_job_cluster_id_status"))
        with pytest.raises(CommandError):
            await migrate.check(db.engine)
    finally:
        await db.dispose()


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
async def test_upgrading_a_database_with_data(backend: str, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'old.db'}" if backend == "sqlite" else await create_database()
    db = Database(url)
    cluster_id, now = uuid.uuid4(), datetime.now(UTC)

    # what a plain SQL parameter needs on each database
    def value(v: uuid.UUID | datetime) -> object:
        if backend == "postgresql":
            return v
        return v.hex if isinstance(v, uuid.UUID) else v.replace(tzinfo=None)

    try:
        await migrate.upgrade(db.engine, "0001")
        async with db.engine.begin() as conn:
            await conn.execute(
                sa.text(
                    "INSERT INTO cluster VALUES (:id, 'old', 'SIMULATED', 'AVAILABLE', NULL, "
                    "'{}', :now, :now)"
                ),
                {"id": value(cluster_id), "now": value(now)},
            )
            for name, gpu_type in (("gpu-0", "nvidia-tesla-t4"), ("cpu-0", None)):
                await conn.execute(
                    sa.text(
                        "INSERT INTO cluster_node_info (id, cluster_id, name, type, gpu_type, "
                        "gpu_count, cpu_cores, memory_gb, status, schedulable, hardware_info, "
                        "status_sync_at) VALUES (:id, :cluster, :name, 'GPU', :gpu, 4, 8, 64, "
                        "true, true, '{}', :now)"
                    ),
                    {
                        "id": value(uuid.uuid4()),
                        "cluster": value(cluster_id),
                        "name": name,
                        "gpu": gpu_type,
                        "now": value(now),
                    },
                )
        await migrate.upgrade(db.engine)
        await migrate.check(db.engine)
        if backend == "sqlite":  # off while the history ran (table copies), on again after
            async with db.engine.connect() as conn:
                assert (await conn.exec_driver_sql("PRAGMA foreign_keys")).scalar() == 1
        async with db.unit_of_work(TenantScope.system()) as uow:
            cluster = await uow.clusters.get_by_name("old")
            classes = await uow.quotas.priority_classes()
        assert cluster is not None
        assert {n.name: n.labels for n in cluster.nodes} == {
            "cpu-0": {"kubernetes.io/hostname": "cpu-0"},
            "gpu-0": {"kubernetes.io/hostname": "gpu-0", GPU_LABEL: "nvidia-tesla-t4"},
        }
        assert {pc.priority: pc.value for pc in classes} == DEFAULT_PRIORITY_VALUES
    finally:
        await db.dispose()
        if backend == "postgresql":
            await drop_database(url)


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
async def test_the_audit_trails_targets_are_indexed_when_upgrading(
    backend: str, tmp_path: Path
) -> None:
    """Events recorded before 0012 are found by target after it, as new ones are."""
    url = f"sqlite:///{tmp_path / 'audit.db'}" if backend == "sqlite" else await create_database()
    db = Database(url)
    job, cluster = str(uuid.uuid4()), str(uuid.uuid4())
    old = [uuid.uuid4(), uuid.uuid4()]
    try:
        await migrate.upgrade(db.engine, "0011")
        async with db.engine.begin() as conn:
            await conn.execute(
                audit_events.insert(),
                [
                    {
                        "id": event_id,
                        "at": datetime(2026, 11, 20, 12, n, tzinfo=UTC),
                        "actor": "token:1",
                        "operation": "submitJob",
                        "targets": targets,
                        "input": {},
                        "outcome": "OK",
                        "source": "graphql",
                    }
                    for n, (event_id, targets) in enumerate(
                        zip(old, [[job, cluster], [cluster, cluster]], strict=True)
                    )
                ],
            )
        await migrate.upgrade(db.engine)
        await migrate.check(db.engine)
        async with db.unit_of_work(TenantScope.system()) as uow:
            by_job = await uow.audit.page(AuditFilter(target=job), tenant_id=None, first=10)
            by_cluster = await uow.audit.page(AuditFilter(target=cluster), tenant_id=None, first=10)
        assert [e.id for e in by_job.events] == [old[0]]
        assert [e.id for e in by_cluster.events] == [old[1], old[0]]  # newest first
    finally:
        await db.dispose()
        if backend == "postgresql":
            await drop_database(url)


async def insert_as_stored_then(
    db: Database, row: dict[str, object], *, renamed: dict[str, str]
) -> None:
    """A job row as an older release wrote it: today's row, with the columns renamed since
    given their old names, and the columns that did not exist yet left out."""
    row = {renamed.get(k, k): v for k, v in row.items()}
    async with db.engine.begin() as conn:
        columns = await conn.run_sync(
            lambda sync: {c["name"] for c in sa.inspect(sync).get_columns("job")}
        )
        typed = [sa.Column(renamed.get(c.name, c.name), c.type) for c in jobs.columns]
        table = sa.Table("job", sa.MetaData(), *(c for c in typed if c.name in columns))
        await conn.execute(table.insert().values({k: v for k, v in row.items() if k in columns}))


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
async def test_keys_and_events_become_a_projects_when_upgrading(
    backend: str, tmp_path: Path
) -> None:
    """After 0013 an idempotency key is unique per (tenant, project), the keys already used
    kept; events recorded before have no project: a token limited to projects does not read
    them, its tenant does."""
    url = f"sqlite:///{tmp_path / 'walls.db'}" if backend == "sqlite" else await create_database()
    db = Database(url)
    tenant, p1, p2 = TenantId(uuid.uuid4()), ProjectId(uuid.uuid4()), ProjectId(uuid.uuid4())
    old_event = uuid.uuid4()
    try:
        await migrate.upgrade(db.engine, "0012")
        cluster = ClusterId(uuid.uuid4())  # no nodes: the node table is renamed after 0012
        async with db.unit_of_work(TenantScope.system()) as uow:
            await uow.clusters.add(make_cluster(cluster, nodes=()))
            await uow.commit()
        first = job_on(cluster, tenant, project_id=p1, idempotency_key="k")
        await insert_as_stored_then(db, job_to_row(first), renamed={"attempt": "retry_count"})
        async with db.engine.begin() as conn:
            await conn.execute(
                audit_events.insert().values(
                    id=old_event,
                    at=datetime(2026, 11, 27, tzinfo=UTC),
                    tenant_id=tenant,
                    actor="token:1",
                    operation="submitJob",
                    targets=[str(first.id)],
                    input={},
                    outcome="OK",
                    source="graphql",
                )
            )
        await migrate.upgrade(db.engine)
        await migrate.check(db.engine)
        await save(db, job_on(cluster, tenant, project_id=p2, idempotency_key="k"))
        with pytest.raises(DuplicateIdempotencyKey):
            await save(db, job_on(cluster, tenant, project_id=p1, idempotency_key="k"))
        async with db.unit_of_work(TenantScope.system()) as uow:
            kept = await uow.jobs.get_by_idempotency_key(tenant, p1, "k")
            whole = await uow.audit.page(AuditFilter(), tenant_id=tenant, first=10)
            limited = await uow.audit.page(
                AuditFilter(), tenant_id=tenant, first=10, project_ids=frozenset({p1})
            )
        assert kept is not None and kept.id == first.id
        assert [(e.id, e.project_id) for e in whole.events] == [(old_event, None)]
        assert limited.events == ()
    finally:
        await db.dispose()
        if backend == "postgresql":
            await drop_database(url)
