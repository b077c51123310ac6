"""Migration 0018 (a job's further pod sets) on a database that holds jobs.

Covers, on SQLite and PostgreSQL: a job stored by release 0017 reads back after the upgrade
with no further pod sets; a row written as 0017 writes it (without the new column) still goes in
after the upgrade, as an older release's would during a rolling upgrade; a job with pod sets
stored after it reads back with them; a downgrade to 0017 drops the column and keeps the rows,
and the upgrade after it gives the stored jobs no pod sets again.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
import sqlalchemy as sa

from adapters.db.engine import Database
from adapters.db.mapping import job_to_row
from adapters.db.tables import jobs
from budcluster import migrate
from domain.model.ids import ClusterId, JobId
from domain.model.job import PodSet, Resources
from domain.ports.unit_of_work import TenantScope
from tests.integration.conftest import create_database, drop_database
from tests.integration.test_migrations_kueue_settings import insert_as_0016_wrote
from tests.integration.test_repositories import job_on
from tests.support.fakes import make_cluster

SYSTEM = TenantScope.system()
WORKERS = (PodSet("workers", pod_count=2, gpu_count=4), PodSet("launcher", cpu_cores=2.0))


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
async def test_stored_jobs_have_no_further_pod_sets(backend: str, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'pods.db'}" if backend == "sqlite" else await create_database()
    db = Database(url)
    cluster = ClusterId(uuid.uuid4())
    old, during = job_on(cluster), job_on(cluster)
    new = job_on(cluster, resources=Resources("nvidia-a100-80gb", 8, pod_sets=WORKERS))
    try:
        await migrate.upgrade(db.engine, "0017")
        async with db.unit_of_work(SYSTEM) as uow:
            await uow.clusters.add(make_cluster(cluster, nodes=()))
            await uow.commit()
        await insert_as_0016_wrote(db, jobs, job_to_row(old))  # only the columns it has

        await migrate.upgrade(db.engine)
        await migrate.check(db.engine)
        as_0017_wrote = {k: v for k, v in job_to_row(during).items() if k != "pod_sets"}
        await insert_as_0016_wrote(db, jobs, as_0017_wrote)  # an older release, rolling upgrade
        async with db.unit_of_work(SYSTEM) as uow:
            await uow.jobs.add(new)
            await uow.commit()
        assert await _pod_sets(db, old.id, during.id, new.id) == [(), (), WORKERS]

        await migrate.downgrade(db.engine, "0017")
        async with db.engine.connect() as conn:
            columns = await conn.run_sync(
                lambda sync: {c["name"] for c in sa.inspect(sync).get_columns("job")}
            )
            kept = (await conn.execute(sa.text("SELECT count(*) FROM job"))).scalar()
        assert "pod_sets" not in columns and kept == 3
        await migrate.upgrade(db.engine)
        assert await _pod_sets(db, old.id, during.id, new.id) == [(), (), ()]
    finally:
        await db.dispose()
        if backend == "postgresql":
            await drop_database(url)


async def _pod_sets(db: Database, *ids: JobId) -> list[tuple[PodSet, ...]]:
    async with db.unit_of_work(SYSTEM) as uow:
        found = await uow.jobs.get_many(list(ids))
    return [found[i].resources.pod_sets for i in ids]
