"""Migration 0017 (Kueue's remaining quota settings) on a database that holds quotas.

Covers, on SQLite and PostgreSQL: ClusterQueues and cohorts stored by release 0016 read back
after the upgrade with Kueue's defaults (borrowWithinCohort Never, flavor fungibility
MayStopSearch / TryNextFlavor, weight 1; no parent, no quotas of a cohort's own) and the cluster
with fair sharing off; a row written as 0016 writes it (without the new columns) still goes in
after the upgrade, as an older release's would during a rolling upgrade; the settings stored
after it go away on a downgrade to 0016, and the rows stay.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from adapters.db.engine import Database
from adapters.db.mapping import cluster_queue_to_row, cohort_to_row
from adapters.db.tables import cluster_queues, cohorts
from budcluster import migrate
from domain.model.ids import ClusterId
from domain.model.quota import (
    ClusterQueue,
    Cohort,
    FlavorQuotas,
    PreemptionPolicy,
    QuotaSettings,
    ReclaimWithinCohort,
    ResourceGroup,
    ResourceQuota,
    WithinClusterQueue,
)
from domain.ports.unit_of_work import TenantScope
from tests.integration.conftest import create_database, drop_database
from tests.support.fakes import T0, make_cluster

SYSTEM = TenantScope.system()


async def insert_as_0016_wrote(db: Database, table: sa.Table, row: dict[str, Any]) -> None:
    """Today's row with only the columns the database has (as release 0016 wrote it)."""
    async with db.engine.begin() as conn:
        columns = await conn.run_sync(
            lambda sync: {c["name"] for c in sa.inspect(sync).get_columns(table.name)}
        )
        old = sa.Table(
            table.name, sa.MetaData(), *(sa.Column(c.name, c.type) for c in table.columns)
        )
        await conn.execute(old.insert().values({k: v for k, v in row.items() if k in columns}))


def queue(cluster: ClusterId, name: str) -> ClusterQueue:
    groups = (ResourceGroup(("cpu",), (FlavorQuotas("cpu", (ResourceQuota("cpu", 8, 2),)),)),)
    preemption = PreemptionPolicy(WithinClusterQueue.NEVER, ReclaimWithinCohort.ANY)
    return ClusterQueue(cluster, name, T0, T0, "lab", resource_groups=groups, preemption=preemption)


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
async def test_stored_quotas_get_kueues_defaults(backend: str, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'kueue.db'}" if backend == "sqlite" else await create_database()
    db = Database(url)
    cluster = ClusterId(uuid.uuid4())
    try:
        await migrate.upgrade(db.engine, "0016")
        async with db.unit_of_work(SYSTEM) as uow:
            await uow.clusters.add(make_cluster(cluster, nodes=()))
            await uow.commit()
        await insert_as_0016_wrote(db, cohorts, cohort_to_row(Cohort(cluster, "lab", T0, "x")))
        await insert_as_0016_wrote(db, cluster_queues, cluster_queue_to_row(queue(cluster, "a")))

        await migrate.upgrade(db.engine)
        await migrate.check(db.engine)
        # an older release, during a rolling upgrade, still writes rows without the new columns
        await insert_as_0016_wrote(db, cluster_queues, cluster_queue_to_row(queue(cluster, "b")))
        async with db.unit_of_work(SYSTEM) as uow:
            quotas = await uow.quotas.quota_set(cluster)
        assert quotas.cluster_queues == (queue(cluster, "a"), queue(cluster, "b"))
        assert quotas.cohorts == (Cohort(cluster, "lab", T0, "x"),)
        lab = quotas.cohort("lab")
        assert lab is not None
        assert (lab.parent, lab.resource_groups, lab.fair_sharing_weight) == (None, (), 1.0)
        assert not quotas.fair_sharing

        async with db.unit_of_work(SYSTEM) as uow:
            await uow.quotas.save_quota_settings(QuotaSettings(cluster, fair_sharing=True))
            await uow.commit()
        await migrate.downgrade(db.engine, "0016")
        async with db.engine.connect() as conn:
            names = await conn.run_sync(lambda sync: set(sa.inspect(sync).get_table_names()))
            kept = (await conn.execute(sa.text("SELECT count(*) FROM cluster_queue"))).scalar()
        assert "quota_settings" not in names and kept == 2
        await migrate.upgrade(db.engine)
        async with db.unit_of_work(SYSTEM) as uow:
            assert (await uow.quotas.quota_set(cluster)).cluster_queues == quotas.cluster_queues
    finally:
        await db.dispose()
        if backend == "postgresql":
            await drop_database(url)
