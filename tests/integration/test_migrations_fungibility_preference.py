"""Migration 0019 (a ClusterQueue's flavor fungibility preference) on a database that holds quotas.

Covers, on SQLite and PostgreSQL: a ClusterQueue stored by release 0018 reads back after the
upgrade with no preference (Kueue's default); a row written as 0018 writes it (without the new
column) still goes in after the upgrade, as an older release's would during a rolling upgrade; a
queue with a preference stored after it reads back with it; a downgrade to 0018 drops the column
and keeps the rows, and the upgrade after it gives every stored queue no preference again.
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from pathlib import Path

import pytest
import sqlalchemy as sa

from adapters.db.engine import Database
from adapters.db.mapping import cluster_queue_to_row
from adapters.db.tables import cluster_queues
from budcluster import migrate
from domain.model.ids import ClusterId
from domain.model.quota import FlavorFungibility, FungibilityPolicy, FungibilityPreference
from domain.ports.unit_of_work import TenantScope
from tests.integration.conftest import create_database, drop_database
from tests.integration.test_migrations_kueue_settings import insert_as_0016_wrote, queue
from tests.support.fakes import make_cluster

SYSTEM = TenantScope.system()
TRY = FungibilityPolicy.TRY_NEXT_FLAVOR
PREEMPT_FIRST = FlavorFungibility(TRY, TRY, FungibilityPreference.PREEMPTION_OVER_BORROWING)


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
async def test_stored_queues_have_no_preference(backend: str, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'pref.db'}" if backend == "sqlite" else await create_database()
    db = Database(url)
    cluster = ClusterId(uuid.uuid4())
    old, during = queue(cluster, "a"), queue(cluster, "b")
    new = replace(queue(cluster, "c"), flavor_fungibility=PREEMPT_FIRST)
    try:
        await migrate.upgrade(db.engine, "0018")
        async with db.unit_of_work(SYSTEM) as uow:
            await uow.clusters.add(make_cluster(cluster, nodes=()))
            await uow.commit()
        await insert_as_0016_wrote(db, cluster_queues, cluster_queue_to_row(old))

        await migrate.upgrade(db.engine)
        await migrate.check(db.engine)
        as_0018_wrote = {
            k: v for k, v in cluster_queue_to_row(during).items() if k != "fungibility_preference"
        }
        await insert_as_0016_wrote(db, cluster_queues, as_0018_wrote)  # an older release
        async with db.unit_of_work(SYSTEM) as uow:
            await uow.quotas.add_cluster_queue(new)
            await uow.commit()
        assert await _fungibility(db, cluster) == [
            FlavorFungibility(),
            FlavorFungibility(),
            PREEMPT_FIRST,
        ]

        await migrate.downgrade(db.engine, "0018")
        async with db.engine.connect() as conn:
            columns = await conn.run_sync(
                lambda sync: {c["name"] for c in sa.inspect(sync).get_columns("cluster_queue")}
            )
            kept = (await conn.execute(sa.text("SELECT count(*) FROM cluster_queue"))).scalar()
        assert "fungibility_preference" not in columns and kept == 3
        await migrate.upgrade(db.engine)
        assert await _fungibility(db, cluster) == [
            FlavorFungibility(),
            FlavorFungibility(),
            FlavorFungibility(TRY, TRY),
        ]
    finally:
        await db.dispose()
        if backend == "postgresql":
            await drop_database(url)


async def _fungibility(db: Database, cluster: ClusterId) -> list[FlavorFungibility]:
    async with db.unit_of_work(SYSTEM) as uow:
        quotas = await uow.quotas.quota_set(cluster)
    return [q.flavor_fungibility for q in sorted(quotas.cluster_queues, key=lambda q: q.name)]
