"""Repositories over one open connection; the unit of work owns the transaction.

Tenant isolation is enforced here: a job repository opened for a tenant adds `tenant_id = :t` to
every statement that reads or lists jobs or their events, so no caller can forget it.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import UTC, datetime
from typing import Any, Protocol

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from adapters.db import mapping
from adapters.db.tables import (
    api_tokens,
    cluster_nodes,
    clusters,
    event_sequences,
    gpu_prices,
    job_events,
    job_log_tails,
    job_moves,
    jobs,
)
from domain.errors import DuplicateIdempotencyKey
from domain.model.cluster import Cluster, GpuPrice, Node
from domain.model.fleet import JobMove
from domain.model.ids import ClusterId, FleetId, JobId, NodeId, ProjectId, TenantId, TokenId
from domain.model.job import Job, JobEvent, JobStatus, JobType, RunRecord
from domain.model.logs import LogLine
from domain.model.principal import ApiToken
from domain.model.secrets import Envelope
from domain.ports.repositories import JobCursor, JobFilter, JobPage
from domain.ports.unit_of_work import TenantScope


class JobTracker(Protocol):
    """What the job repository needs of its unit of work (`adapters.db.uow`): it keeps one
    instance of each job read or added, and writes what changed in it at commit."""

    def track(self, job: Job, *, new: bool = False) -> Job: ...


def _apply_filter(
    stmt: sa.Select[tuple[object, ...]], f: JobFilter
) -> sa.Select[tuple[object, ...]]:
    if f.statuses:
        stmt = stmt.where(jobs.c.status.in_([s.value for s in f.statuses]))
    if f.priorities:
        stmt = stmt.where(jobs.c.priority.in_([p.value for p in f.priorities]))
    if f.job_types:
        stmt = stmt.where(jobs.c.job_type.in_([t.value for t in f.job_types]))
    if f.cluster_ids:
        stmt = stmt.where(jobs.c.cluster_id.in_(list(f.cluster_ids)))
    if f.project_ids:
        stmt = stmt.where(jobs.c.project_id.in_(list(f.project_ids)))
    return stmt


class SqlJobRepository:
    def __init__(self, conn: AsyncConnection, scope: TenantScope, uow: JobTracker) -> None:
        self._conn = conn
        self._scope = scope
        self._uow = uow

    def _scoped(self, stmt: sa.Select[tuple[object, ...]]) -> sa.Select[tuple[object, ...]]:
        if self._scope.tenant_id is not None:
            stmt = stmt.where(jobs.c.tenant_id == self._scope.tenant_id)
        return stmt

    def _track(self, rows: Sequence[sa.RowMapping]) -> list[Job]:
        return [self._uow.track(mapping.job_from_row(row)) for row in rows]

    async def add(self, job: Job) -> None:
        try:
            await self._conn.execute(jobs.insert().values(mapping.job_to_row(job)))
        except IntegrityError as exc:
            if job.idempotency_key is not None and "idempotency_key" in str(exc.orig).lower():
                raise DuplicateIdempotencyKey(job.idempotency_key) from exc
            raise
        self._uow.track(job, new=True)

    async def get(self, job_id: JobId, *, for_update: bool = False) -> Job | None:
        stmt = self._scoped(sa.select(jobs).where(jobs.c.id == job_id))
        if for_update and self._conn.dialect.name == "postgresql":
            stmt = stmt.with_for_update()
        row = (await self._conn.execute(stmt)).mappings().first()
        return None if row is None else self._track([row])[0]

    async def get_many(
        self, job_ids: Sequence[JobId], *, for_update: bool = False
    ) -> dict[JobId, Job]:
        if not job_ids:
            return {}
        stmt = self._scoped(sa.select(jobs).where(jobs.c.id.in_(list(job_ids))))
        if for_update and self._conn.dialect.name == "postgresql":
            stmt = stmt.order_by(jobs.c.id).with_for_update()
        rows = (await self._conn.execute(stmt)).mappings().all()
        return {job.id: job for job in self._track(rows)}

    async def get_by_idempotency_key(
        self, tenant_id: TenantId, project_id: ProjectId, key: str
    ) -> Job | None:
        stmt = self._scoped(
            sa.select(jobs).where(
                jobs.c.tenant_id == tenant_id,
                jobs.c.project_id == project_id,
                jobs.c.idempotency_key == key,
            )
        )
        row = (await self._conn.execute(stmt)).mappings().first()
        return None if row is None else self._track([row])[0]

    async def page(
        self, job_filter: JobFilter, *, first: int, after: JobCursor | None = None
    ) -> JobPage:
        stmt = _apply_filter(self._scoped(sa.select(jobs)), job_filter)
        if after is not None:
            stmt = stmt.where(
                sa.or_(
                    jobs.c.created_at < after.created_at,
                    sa.and_(jobs.c.created_at == after.created_at, jobs.c.id < after.job_id),
                )
            )
        stmt = stmt.order_by(jobs.c.created_at.desc(), jobs.c.id.desc()).limit(first + 1)
        rows = (await self._conn.execute(stmt)).mappings().all()
        return JobPage(self._track(rows[:first]), has_next=len(rows) > first)

    async def list_for_cluster(
        self, cluster_id: ClusterId, job_filter: JobFilter, *, limit: int
    ) -> list[Job]:
        stmt = (
            _apply_filter(
                self._scoped(sa.select(jobs).where(jobs.c.cluster_id == cluster_id)), job_filter
            )
            .order_by(jobs.c.updated_at.desc(), jobs.c.id.desc())
            .limit(limit)
        )
        return self._track((await self._conn.execute(stmt)).mappings().all())

    async def active_on_cluster(self, cluster_id: ClusterId) -> list[Job]:
        return await self.active_on_clusters([cluster_id])

    async def active_on_clusters(self, cluster_ids: Sequence[ClusterId]) -> list[Job]:
        if not cluster_ids:
            return []
        active = [s.value for s in JobStatus if s.is_active]
        stmt = self._scoped(
            sa.select(jobs).where(
                jobs.c.cluster_id.in_(list(cluster_ids)), jobs.c.status.in_(active)
            )
        ).order_by(jobs.c.created_at)
        return self._track((await self._conn.execute(stmt)).mappings().all())

    async def active_via(self, cluster_id: ClusterId) -> list[Job]:
        active = [s.value for s in JobStatus if s.is_active]
        here = sa.and_(jobs.c.cluster_id == cluster_id, jobs.c.dispatched_via.is_(None))
        stmt = self._scoped(
            sa.select(jobs).where(
                sa.or_(here, jobs.c.dispatched_via == cluster_id), jobs.c.status.in_(active)
            )
        ).order_by(jobs.c.created_at)
        return self._track((await self._conn.execute(stmt)).mappings().all())

    async def waiting_in_fleet(self, fleet_id: FleetId) -> list[Job]:
        waiting = [JobStatus.PENDING.value, JobStatus.QUEUED.value]
        stmt = self._scoped(
            sa.select(jobs).where(jobs.c.fleet_id == fleet_id, jobs.c.status.in_(waiting))
        ).order_by(jobs.c.created_at, jobs.c.id)
        return self._track((await self._conn.execute(stmt)).mappings().all())

    async def keep_log_tail(
        self, job_id: JobId, attempt: int, lines: Sequence[LogLine], at: datetime
    ) -> None:
        document = [_log_to_document(line) for line in lines]
        key = (job_log_tails.c.job_id == job_id, job_log_tails.c.attempt == attempt)
        done = await self._conn.execute(
            job_log_tails.update().where(*key).values(lines=document, kept_at=at)
        )
        if not done.rowcount:
            await self._conn.execute(
                job_log_tails.insert().values(
                    job_id=job_id, attempt=attempt, lines=document, kept_at=at
                )
            )

    async def log_tail(self, job_id: JobId, attempt: int) -> list[LogLine] | None:
        stmt = (
            sa.select(job_log_tails.c.lines)
            .join(jobs, jobs.c.id == job_log_tails.c.job_id)
            .where(job_log_tails.c.job_id == job_id, job_log_tails.c.attempt == attempt)
        )
        if self._scope.tenant_id is not None:
            stmt = stmt.where(jobs.c.tenant_id == self._scope.tenant_id)
        document = (await self._conn.execute(stmt)).scalar_one_or_none()
        return None if document is None else [_log_from_document(d) for d in document]

    async def moves(self, job_ids: Sequence[JobId]) -> dict[JobId, list[JobMove]]:
        result: dict[JobId, list[JobMove]] = {job_id: [] for job_id in job_ids}
        if not job_ids:
            return result
        stmt = (
            sa.select(job_moves)
            .join(jobs, jobs.c.id == job_moves.c.job_id)
            .where(job_moves.c.job_id.in_(list(job_ids)))
            .order_by(job_moves.c.job_id, job_moves.c.id)
        )
        if self._scope.tenant_id is not None:
            stmt = stmt.where(jobs.c.tenant_id == self._scope.tenant_id)
        for row in (await self._conn.execute(stmt)).mappings():
            move = mapping.move_from_row(row)
            result[move.job_id].append(move)
        return result

    async def running_over(self, share: int, *, after: Job | None = None, limit: int) -> list[Job]:
        where = [
            jobs.c.status == JobStatus.RUNNING.value,
            jobs.c.budget_limit.is_not(None),
            jobs.c.budget_alerted < share,
        ]
        if after is not None:
            where.append(sa.tuple_(jobs.c.created_at, jobs.c.id) > (after.created_at, after.id))
        stmt = (
            self._scoped(sa.select(jobs).where(*where))
            .order_by(jobs.c.created_at, jobs.c.id)
            .limit(limit)
        )
        return self._track((await self._conn.execute(stmt)).mappings().all())

    async def of_tenants(
        self,
        tenant_ids: Sequence[TenantId],
        statuses: Collection[JobStatus],
        *,
        held: bool | None = None,
        limit: int,
    ) -> list[Job]:
        if not tenant_ids or not statuses:
            return []
        where = [
            jobs.c.tenant_id.in_(sorted(tenant_ids, key=str)),
            jobs.c.status.in_(sorted(s.value for s in statuses)),
        ]
        if held is not None:
            where.append(jobs.c.held_by.is_not(None) if held else jobs.c.held_by.is_(None))
        stmt = (
            self._scoped(sa.select(jobs).where(*where))
            .order_by(jobs.c.created_at, jobs.c.id)
            .limit(limit)
        )
        return self._track((await self._conn.execute(stmt)).mappings().all())

    async def naming_secret(self, tenant_id: TenantId, name: str) -> list[Job]:
        statuses = sorted(s.value for s in JobStatus if s.is_active or s is JobStatus.PREEMPTED)
        where = (jobs.c.tenant_id == tenant_id, jobs.c.status.in_(statuses))
        stmt = self._scoped(sa.select(jobs.c.id, jobs.c.secrets).where(*where))
        naming = [r.id for r in (await self._conn.execute(stmt)).all() if r.secrets]
        found = await self.get_many(naming)  # only those naming some secret are read whole
        return sorted(
            (j for j in found.values() if any(ref.name == name for ref in j.secrets)),
            key=lambda j: (j.created_at, str(j.id)),
        )

    async def queued_in_windows(self, cluster_ids: Sequence[ClusterId]) -> list[Job]:
        if not cluster_ids:
            return []
        where = (jobs.c.cluster_id.in_(list(cluster_ids)), jobs.c.status == JobStatus.QUEUED.value)
        stmt = self._scoped(sa.select(jobs.c.id, jobs.c.window).where(*where))
        windowed = [r.id for r in (await self._conn.execute(stmt)).all() if r.window is not None]
        found = await self.get_many(windowed)  # only these are read whole
        return sorted(found.values(), key=lambda j: (j.created_at, str(j.id)))

    async def finished_on_cluster(
        self, cluster_id: ClusterId, *, ended_after: datetime, limit: int
    ) -> list[Job]:
        stmt = (
            self._scoped(
                sa.select(jobs).where(
                    jobs.c.cluster_id == cluster_id,
                    jobs.c.status.in_([s.value for s in JobStatus if not s.is_active]),
                    jobs.c.actual_start.is_not(None),
                    jobs.c.actual_end > ended_after,
                )
            )
            .order_by(jobs.c.actual_end.desc())
            .limit(limit)
        )
        return [mapping.job_from_row(r) for r in (await self._conn.execute(stmt)).mappings()]

    async def run_times(
        self, cluster_id: ClusterId, *, limit: int, time_scale: float = 1.0
    ) -> list[RunRecord]:
        stmt = (
            self._scoped(
                sa.select(
                    *_RUN_SHAPE,
                    jobs.c.estimated_duration_seconds,
                    jobs.c.actual_start,
                    jobs.c.actual_end,
                ).where(
                    jobs.c.cluster_id == cluster_id,
                    jobs.c.status == JobStatus.COMPLETED.value,
                    jobs.c.actual_start.is_not(None),
                    jobs.c.actual_end.is_not(None),
                )
            )
            .order_by(jobs.c.actual_end.desc())
            .limit(limit)
        )
        return [
            _run_record(
                row,
                (row["actual_end"] - row["actual_start"]).total_seconds() * time_scale,
                estimated=None
                if row["estimated_duration_seconds"] is None
                else float(row["estimated_duration_seconds"]),
            )
            for row in (await self._conn.execute(stmt)).mappings()
        ]

    async def failed_runs(
        self, cluster_id: ClusterId, *, limit: int, time_scale: float = 1.0
    ) -> list[RunRecord]:
        # The latest jobs that were retried or failed for good (a job's own row, indexed by
        # cluster), then their events by job id (indexed), as startup_times reads.
        latest = (
            self._scoped(
                sa.select(jobs.c.id, *_RUN_SHAPE).where(
                    jobs.c.cluster_id == cluster_id,
                    sa.or_(jobs.c.attempt > 0, jobs.c.status == JobStatus.FAILED.value),
                )
            )
            .order_by(jobs.c.updated_at.desc())
            .limit(limit)
            .subquery()
        )
        ran, failed = job_events.alias("ran"), job_events.alias("failed")
        stmt = (
            sa.select(latest, ran.c.at.label("ran"), failed.c.at.label("failed"))
            .join(failed, failed.c.job_id == latest.c.id)
            .join(
                ran,
                sa.and_(
                    ran.c.job_id == failed.c.job_id,
                    ran.c.attempt == failed.c.attempt,
                    ran.c.to_status == JobStatus.RUNNING.value,
                ),
            )
            .where(
                failed.c.from_status == JobStatus.RUNNING.value,
                failed.c.to_status == JobStatus.FAILED.value,
            )
            .order_by(failed.c.at.desc())
            .limit(limit)
        )
        return [
            _run_record(
                row,
                max(0.0, (row["failed"] - row["ran"]).total_seconds()) * time_scale,
                failed=True,
            )
            for row in (await self._conn.execute(stmt)).mappings()
        ]

    async def startup_times(
        self, cluster_id: ClusterId, *, limit: int
    ) -> list[tuple[JobType, float]]:
        # The latest jobs that ran first (as cheap as run_times' read), then their events by
        # job id (indexed): not a scan of the cluster's whole event history on every recompute.
        latest = (
            self._scoped(
                sa.select(jobs.c.id, jobs.c.job_type).where(
                    jobs.c.cluster_id == cluster_id, jobs.c.actual_start.is_not(None)
                )
            )
            .order_by(jobs.c.actual_start.desc())
            .limit(limit)
            .subquery()
        )
        admitted, running = job_events.alias("admitted"), job_events.alias("running")
        stmt = (
            sa.select(latest.c.job_type, admitted.c.at.label("admitted"), running.c.at)
            .join(admitted, admitted.c.job_id == latest.c.id)
            .join(
                running,
                sa.and_(
                    running.c.job_id == admitted.c.job_id,
                    running.c.attempt == admitted.c.attempt,
                    running.c.from_status == JobStatus.ADMITTED.value,
                    running.c.to_status == JobStatus.RUNNING.value,
                ),
            )
            .where(admitted.c.to_status == JobStatus.ADMITTED.value)
            .order_by(running.c.at.desc())
            .limit(limit)
        )
        return [
            (JobType(row["job_type"]), max(0.0, (row["at"] - row["admitted"]).total_seconds()))
            for row in (await self._conn.execute(stmt)).mappings()
        ]

    async def store_estimates(self, estimates: Sequence[tuple[Job, bool]]) -> None:
        """Write the estimates: the rows are locked first, all of them in id order, as every
        transaction that locks several jobs takes them (written in estimate order, one row at
        a time, they deadlocked with the cluster's loop locking `ORDER BY id`: 8 in a 100-way
        burst, issue 27)."""
        if not estimates:
            return
        ordered = sorted(estimates, key=lambda e: str(e[0].id))
        if self._conn.dialect.name == "postgresql":
            await self._conn.execute(
                sa.select(jobs.c.id)
                .where(jobs.c.id.in_([job.id for job, _ in ordered]))
                .order_by(jobs.c.id)
                .with_for_update(key_share=True)
            )
        short = [mapping.estimate_row(job, kept=False) for job, kept in ordered if not kept]
        full = [mapping.estimate_row(job, kept=True) for job, kept in ordered if kept]
        for rows in (short, full):
            if rows:
                columns: dict[str, Any] = {k: sa.bindparam(f"v_{k}") for k in rows[0] if k != "id"}
                await self._conn.execute(
                    jobs.update().where(jobs.c.id == sa.bindparam("v_id")).values(columns),
                    [{f"v_{k}": v for k, v in row.items()} for row in rows],
                )

    async def due_for_submission(self, before: datetime, *, limit: int) -> list[Job]:
        stmt = (
            self._scoped(
                sa.select(jobs).where(
                    jobs.c.status == JobStatus.PENDING.value,
                    jobs.c.held_by.is_(None),
                    sa.or_(
                        jobs.c.next_attempt_at <= before,
                        sa.and_(jobs.c.next_attempt_at.is_(None), jobs.c.updated_at <= before),
                    ),
                )
            )
            .order_by(jobs.c.created_at)
            .limit(limit)
        )
        return self._track((await self._conn.execute(stmt)).mappings().all())

    async def events(self, job_ids: Sequence[JobId]) -> dict[JobId, list[JobEvent]]:
        if not job_ids:
            return {}
        stmt = (
            sa.select(job_events)
            .join(jobs, jobs.c.id == job_events.c.job_id)
            .where(job_events.c.job_id.in_(list(job_ids)))
            .order_by(job_events.c.job_id, job_events.c.id)
        )
        if self._scope.tenant_id is not None:
            stmt = stmt.where(jobs.c.tenant_id == self._scope.tenant_id)
        result: dict[JobId, list[JobEvent]] = {job_id: [] for job_id in job_ids}
        for row in (await self._conn.execute(stmt)).mappings():
            event = mapping.job_event_from_row(row)
            result[event.job_id].append(event)
        return result


class SqlClusterRepository:
    def __init__(self, conn: AsyncConnection) -> None:
        self._conn = conn

    async def _with_nodes(self, rows: Sequence[sa.RowMapping]) -> list[Cluster]:
        if not rows:
            return []
        ids = [row["id"] for row in rows]
        nodes: dict[ClusterId, list[Node]] = {ClusterId(i): [] for i in ids}
        stmt = (
            sa.select(cluster_nodes)
            .where(cluster_nodes.c.cluster_id.in_(ids))
            .order_by(cluster_nodes.c.name)
        )
        for node_row in (await self._conn.execute(stmt)).mappings():
            node = mapping.node_from_row(node_row)
            nodes[node.cluster_id].append(node)
        return [mapping.cluster_from_row(row, nodes[ClusterId(row["id"])]) for row in rows]

    async def add(self, cluster: Cluster) -> None:
        await self._conn.execute(
            clusters.insert().values(id=cluster.id, **mapping.cluster_row(cluster))
        )
        await self._conn.execute(
            event_sequences.insert().values(
                cluster_id=cluster.id, last_sequence=0, retained_after=0
            )
        )
        await self._insert_nodes(cluster.created_at, cluster.nodes)

    async def save(self, cluster: Cluster) -> None:
        """Store the cluster's own columns (not its nodes, not its configuration)."""
        row = mapping.cluster_row(cluster)
        del row["configuration"]
        await self._conn.execute(clusters.update().where(clusters.c.id == cluster.id).values(**row))

    async def swap_configuration(
        self, cluster_id: ClusterId, expected: Envelope | None, new: Envelope
    ) -> bool:
        stored = clusters.c.configuration
        result = await self._conn.execute(
            clusters.update()
            .where(
                clusters.c.id == cluster_id,
                stored.is_(None) if expected is None else stored == expected.to_json(),
            )
            .values(configuration=new.to_json())
        )
        return bool(result.rowcount)

    async def delete(self, cluster_id: ClusterId) -> None:
        """The cluster and everything of it: jobs and their history, nodes, quotas, timeline,
        events."""
        await self._conn.execute(jobs.delete().where(jobs.c.cluster_id == cluster_id))
        await self._conn.execute(clusters.delete().where(clusters.c.id == cluster_id))

    async def prices(self, cluster_ids: Sequence[ClusterId]) -> dict[ClusterId, list[GpuPrice]]:
        """Every price change set on the clusters, oldest first (`GpuPrice`)."""
        found: dict[ClusterId, list[GpuPrice]] = {c: [] for c in cluster_ids}
        if not cluster_ids:
            return found
        stmt = (
            sa.select(gpu_prices)
            .where(gpu_prices.c.cluster_id.in_(list(cluster_ids)))
            .order_by(gpu_prices.c.since, gpu_prices.c.id)
        )
        for row in (await self._conn.execute(stmt)).mappings():
            cluster_id = ClusterId(row["cluster_id"])
            price = GpuPrice(cluster_id, row["gpu_type"], row["hourly"], row["since"])
            found[price.cluster_id].append(price)
        return found

    async def add_price(self, price: GpuPrice) -> None:
        await self._conn.execute(
            gpu_prices.insert().values(
                cluster_id=price.cluster_id,
                gpu_type=price.gpu_type,
                hourly=price.hourly,
                since=price.since,
            )
        )

    async def _insert_nodes(self, at: datetime, nodes: Sequence[Node]) -> None:
        if not nodes:
            return
        await self._conn.execute(cluster_nodes.insert(), [mapping.node_row(n, at) for n in nodes])

    async def get(self, cluster_id: ClusterId) -> Cluster | None:
        found = await self.get_many([cluster_id])
        return found.get(cluster_id)

    async def get_many(self, cluster_ids: Sequence[ClusterId]) -> dict[ClusterId, Cluster]:
        if not cluster_ids:
            return {}
        rows = (
            (
                await self._conn.execute(
                    sa.select(clusters).where(clusters.c.id.in_(list(cluster_ids)))
                )
            )
            .mappings()
            .all()
        )
        return {c.id: c for c in await self._with_nodes(rows)}

    async def get_by_name(self, name: str) -> Cluster | None:
        rows = (
            (await self._conn.execute(sa.select(clusters).where(clusters.c.name == name)))
            .mappings()
            .all()
        )
        found = await self._with_nodes(rows)
        return found[0] if found else None

    async def all(self) -> list[Cluster]:
        rows = (
            (await self._conn.execute(sa.select(clusters).order_by(clusters.c.name)))
            .mappings()
            .all()
        )
        return await self._with_nodes(rows)

    async def replace_nodes(self, cluster_id: ClusterId, nodes: Sequence[Node]) -> None:
        """A node keeps its id while its name stays (the inventory is unique per name).
        Writers of one cluster's nodes take turns (the cluster row is locked on PostgreSQL;
        SQLite has one writer anyway): a sync and a watch event may store at the same time."""
        if self._conn.dialect.name == "postgresql":
            await self._conn.execute(
                sa.select(clusters.c.id).where(clusters.c.id == cluster_id).with_for_update()
            )
        known = {
            row.name: row.id
            for row in await self._conn.execute(
                sa.select(cluster_nodes.c.name, cluster_nodes.c.id).where(
                    cluster_nodes.c.cluster_id == cluster_id
                )
            )
        }
        for node in nodes:
            if node.name in known:
                node.id = NodeId(known[node.name])
        await self._conn.execute(
            cluster_nodes.delete().where(cluster_nodes.c.cluster_id == cluster_id)
        )
        await self._insert_nodes(datetime.now(UTC), nodes)


class SqlTokenRepository:
    def __init__(self, conn: AsyncConnection) -> None:
        self._conn = conn

    async def add(self, token: ApiToken) -> None:
        await self._conn.execute(
            api_tokens.insert().values(
                id=token.id,
                tenant_id=token.tenant_id,
                name=token.name,
                secret_hash=token.secret_hash,
                scopes=sorted(s.value for s in token.scopes),
                project_ids=(
                    None if token.project_ids is None else sorted(str(p) for p in token.project_ids)
                ),
                created_at=token.created_at,
                revoked_at=token.revoked_at,
                expires_at=token.expires_at,
            )
        )

    async def get(self, token_id: TokenId) -> ApiToken | None:
        row = (
            (await self._conn.execute(sa.select(api_tokens).where(api_tokens.c.id == token_id)))
            .mappings()
            .first()
        )
        return None if row is None else mapping.token_from_row(row)

    async def revoke(self, token_id: TokenId, at: datetime) -> bool:
        result = await self._conn.execute(
            api_tokens.update()
            .where(api_tokens.c.id == token_id, api_tokens.c.revoked_at.is_(None))
            .values(revoked_at=at)
        )
        return bool(result.rowcount)

    async def count(self) -> int:
        return int(
            (
                await self._conn.execute(sa.select(sa.func.count()).select_from(api_tokens))
            ).scalar_one()
        )

    async def unusable(self, token_ids: Collection[TokenId], now: datetime) -> set[TokenId]:
        wanted = set(token_ids)
        usable = await self._conn.execute(
            sa.select(api_tokens.c.id).where(
                api_tokens.c.id.in_(sorted(wanted, key=str)),
                api_tokens.c.revoked_at.is_(None),
                sa.or_(api_tokens.c.expires_at.is_(None), api_tokens.c.expires_at > now),
            )
        )
        return wanted - {TokenId(row[0]) for row in usable}


_RUN_SHAPE = (
    jobs.c.name,
    jobs.c.tenant_id,
    jobs.c.job_type,
    jobs.c.gpu_type,
    jobs.c.gpu_count,
    jobs.c.pod_count,
    jobs.c.pod_sets,
)
"""The columns a run record is made of (`_run_record`)."""


def _run_record(
    row: sa.RowMapping, seconds: float, *, estimated: float | None = None, failed: bool = False
) -> RunRecord:
    """One run of the job of `row` (`_RUN_SHAPE`) that ran `seconds` (job time)."""
    gpus = _total_gpus(row)
    return RunRecord(
        TenantId(row["tenant_id"]),
        row["name"],
        JobType(row["job_type"]),
        row["gpu_type"] if gpus else None,
        gpus,
        seconds,
        estimated,
        failed=failed,
    )


def _total_gpus(row: sa.RowMapping) -> int:
    """GPUs of a job's every pod set, from its row."""
    further = mapping.pod_sets_from_column(row["pod_sets"])
    return int(
        row["gpu_count"] * row["pod_count"] + sum(p.gpu_count * p.pod_count for p in further)
    )


def _log_to_document(line: LogLine) -> dict[str, str]:
    return {"at": line.at.isoformat(), "pod": line.pod, "text": line.text}


def _log_from_document(document: dict[str, str]) -> LogLine:
    return LogLine(datetime.fromisoformat(document["at"]), document["pod"], document["text"])
