"""Kueue's objects and the priority classes, over the unit of work's connection.

Every read takes many clusters at once (`WHERE cluster_id IN ...`): a cluster's whole quota set is
six statements whatever the number of clusters, which keeps GraphQL listings at a constant
statement count. Names are primary keys, so a second object of a taken name is refused by the
database as well as by the service's own check; that refusal becomes `Conflict` (ALREADY_EXISTS).
A tenant's default LocalQueue is created on its first submission, possibly by two submissions at
once: `add_local_queue(..., if_absent=True)` inserts with ON CONFLICT DO NOTHING on both dialects;
a cluster's quota settings are one row, upserted (ON CONFLICT DO UPDATE) the same way.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from adapters.db import mapping
from adapters.db.tables import (
    cluster_queues,
    cohorts,
    local_queues,
    quota_settings,
    resource_flavors,
    workload_priority_classes,
)
from domain.errors import Conflict
from domain.model.ids import ClusterId
from domain.model.job import JobPriority
from domain.model.quota import (
    ClusterQueue,
    Cohort,
    LocalQueue,
    QuotaSet,
    QuotaSettings,
    ResourceFlavor,
    WorkloadPriorityClass,
)


class SqlQuotaRepository:
    def __init__(self, conn: AsyncConnection) -> None:
        self._conn = conn

    async def _rows(self, stmt: sa.Select[Any]) -> Sequence[sa.RowMapping]:
        rows: Sequence[sa.RowMapping] = (await self._conn.execute(stmt)).mappings().all()
        return rows

    def _dialect(self) -> Any:
        return postgresql if self._conn.dialect.name == "postgresql" else sqlite

    async def _insert(self, table: sa.Table, row: dict[str, Any], what: str) -> None:
        try:
            await self._conn.execute(table.insert().values(row))
        except IntegrityError as exc:
            raise Conflict(f"{what} {row['name']} already exists", code="ALREADY_EXISTS") from exc

    # --- read side: admission, the estimator, listings -------------------------------------

    async def quota_set(self, cluster_id: ClusterId) -> QuotaSet:
        return (await self.quota_sets([cluster_id]))[cluster_id]

    async def quota_sets(self, cluster_ids: Sequence[ClusterId]) -> dict[ClusterId, QuotaSet]:
        if not cluster_ids:
            return {}
        ids = list(cluster_ids)
        parts: dict[str, dict[ClusterId, list[Any]]] = {
            kind: defaultdict(list) for kind in ("flavors", "queues", "local", "cohorts")
        }
        reads = [
            ("flavors", resource_flavors, mapping.flavor_from_row, [resource_flavors.c.name]),
            ("queues", cluster_queues, mapping.cluster_queue_from_row, [cluster_queues.c.name]),
            (
                "local",
                local_queues,
                mapping.local_queue_from_row,
                [local_queues.c.namespace, local_queues.c.name],
            ),
            ("cohorts", cohorts, mapping.cohort_from_row, [cohorts.c.name]),
        ]
        for kind, table, convert, order in reads:
            stmt = sa.select(table).where(table.c.cluster_id.in_(ids)).order_by(*order)
            for row in await self._rows(stmt):
                parts[kind][ClusterId(row["cluster_id"])].append(convert(row))
        settings = await self.quota_settings_of(ids)
        values = {pc.priority: pc.value for pc in await self.priority_classes()}
        return {
            cluster_id: QuotaSet(
                flavors=tuple(parts["flavors"][cluster_id]),
                cluster_queues=tuple(parts["queues"][cluster_id]),
                local_queues=tuple(parts["local"][cluster_id]),
                cohorts=tuple(parts["cohorts"][cluster_id]),
                priority_values=dict(values),
                fair_sharing=settings[cluster_id].fair_sharing,
            )
            for cluster_id in ids
        }

    # --- a cluster's settings --------------------------------------------------------------

    async def quota_settings_of(
        self, cluster_ids: Sequence[ClusterId]
    ) -> dict[ClusterId, QuotaSettings]:
        t = quota_settings
        rows = await self._rows(sa.select(t).where(t.c.cluster_id.in_(list(cluster_ids))))
        found = {ClusterId(row["cluster_id"]): mapping.quota_settings_from_row(row) for row in rows}
        return {c: found.get(c) or QuotaSettings(c) for c in cluster_ids}

    async def save_quota_settings(self, settings: QuotaSettings) -> None:
        row = mapping.quota_settings_to_row(settings)
        changed = {k: v for k, v in row.items() if k != "cluster_id"}
        insert = self._dialect().insert(quota_settings).values(row)
        await self._conn.execute(
            insert.on_conflict_do_update(index_elements=["cluster_id"], set_=changed)
        )

    # --- flavors ---------------------------------------------------------------------------

    async def get_flavor(self, *, cluster_id: ClusterId, name: str) -> ResourceFlavor | None:
        t = resource_flavors
        rows = await self._rows(sa.select(t).where(t.c.cluster_id == cluster_id, t.c.name == name))
        return mapping.flavor_from_row(rows[0]) if rows else None

    async def add_flavor(self, flavor: ResourceFlavor) -> None:
        await self._insert(resource_flavors, mapping.flavor_to_row(flavor), "resource flavor")

    async def update_flavor(self, flavor: ResourceFlavor) -> None:
        t = resource_flavors
        await self._conn.execute(
            t.update()
            .where(t.c.cluster_id == flavor.cluster_id, t.c.name == flavor.name)
            .values(node_labels=dict(flavor.node_labels), updated_at=flavor.updated_at)
        )

    async def delete_flavor(self, *, cluster_id: ClusterId, name: str) -> None:
        t = resource_flavors
        await self._conn.execute(t.delete().where(t.c.cluster_id == cluster_id, t.c.name == name))

    # --- cluster queues --------------------------------------------------------------------

    async def get_cluster_queue(self, *, cluster_id: ClusterId, name: str) -> ClusterQueue | None:
        t = cluster_queues
        rows = await self._rows(sa.select(t).where(t.c.cluster_id == cluster_id, t.c.name == name))
        return mapping.cluster_queue_from_row(rows[0]) if rows else None

    async def add_cluster_queue(self, queue: ClusterQueue) -> None:
        await self._insert(cluster_queues, mapping.cluster_queue_to_row(queue), "cluster queue")

    async def update_cluster_queue(self, queue: ClusterQueue) -> None:
        t = cluster_queues
        row = mapping.cluster_queue_to_row(queue)
        for key in ("cluster_id", "name", "created_at"):
            row.pop(key)
        await self._conn.execute(
            t.update().where(t.c.cluster_id == queue.cluster_id, t.c.name == queue.name).values(row)
        )

    async def delete_cluster_queue(self, *, cluster_id: ClusterId, name: str) -> None:
        t = cluster_queues
        await self._conn.execute(t.delete().where(t.c.cluster_id == cluster_id, t.c.name == name))

    # --- local queues ----------------------------------------------------------------------

    async def get_local_queue(
        self, *, cluster_id: ClusterId, namespace: str, name: str
    ) -> LocalQueue | None:
        t = local_queues
        rows = await self._rows(
            sa.select(t).where(
                t.c.cluster_id == cluster_id, t.c.namespace == namespace, t.c.name == name
            )
        )
        return mapping.local_queue_from_row(rows[0]) if rows else None

    async def add_local_queue(self, queue: LocalQueue, *, if_absent: bool = False) -> None:
        row = mapping.local_queue_to_row(queue)
        if not if_absent:
            await self._insert(local_queues, row, "local queue")
            return
        insert = self._dialect().insert(local_queues).values(row)
        await self._conn.execute(insert.on_conflict_do_nothing())

    async def delete_local_queue(self, *, cluster_id: ClusterId, namespace: str, name: str) -> None:
        t = local_queues
        await self._conn.execute(
            t.delete().where(
                t.c.cluster_id == cluster_id, t.c.namespace == namespace, t.c.name == name
            )
        )

    # --- cohorts ---------------------------------------------------------------------------

    async def get_cohort(self, *, cluster_id: ClusterId, name: str) -> Cohort | None:
        t = cohorts
        rows = await self._rows(sa.select(t).where(t.c.cluster_id == cluster_id, t.c.name == name))
        return mapping.cohort_from_row(rows[0]) if rows else None

    async def add_cohort(self, cohort: Cohort) -> None:
        await self._insert(cohorts, mapping.cohort_to_row(cohort), "cohort")

    async def update_cohort(self, cohort: Cohort) -> None:
        t = cohorts
        row = mapping.cohort_to_row(cohort)
        for key in ("cluster_id", "name", "created_at"):
            row.pop(key)
        where = (t.c.cluster_id == cohort.cluster_id, t.c.name == cohort.name)
        await self._conn.execute(t.update().where(*where).values(row))

    async def delete_cohort(self, *, cluster_id: ClusterId, name: str) -> None:
        t = cohorts
        await self._conn.execute(t.delete().where(t.c.cluster_id == cluster_id, t.c.name == name))

    # --- priority classes ------------------------------------------------------------------

    async def priority_classes(self, *, for_update: bool = False) -> list[WorkloadPriorityClass]:
        t = workload_priority_classes
        stmt = sa.select(t)
        if for_update and self._conn.dialect.name == "postgresql":
            stmt = stmt.with_for_update()
        rows = await self._rows(stmt)
        found = [mapping.priority_class_from_row(row) for row in rows]
        order = list(JobPriority)
        return sorted(found, key=lambda pc: order.index(pc.priority))

    async def update_priority_class(self, priority_class: WorkloadPriorityClass) -> None:
        t = workload_priority_classes
        values = {
            "value": priority_class.value,
            "description": priority_class.description,
            "updated_at": priority_class.updated_at,
        }
        result = await self._conn.execute(
            t.update().where(t.c.priority == priority_class.priority.value).values(values)
        )
        if not result.rowcount:
            await self._conn.execute(
                t.insert().values(priority=priority_class.priority.value, **values)
            )
