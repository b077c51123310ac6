"""The SQL unit of work: one connection, one transaction, and the transactional outbox.

What it committed is handed to the database's `after_commit` (the reactions: notify, hand over,
take back...) once the unit of work has given its connection back.

Jobs read through the repositories are tracked (one instance per id). On commit, each tracked job
whose row changed is written with an optimistic version check, its transitions are appended to
its history (`job_event`), and every domain event it raised is written to `outbox_event` with the
next sequence numbers of its cluster, all in the same transaction: no event without committed
state, no committed state without its event. Sequences come from `UPDATE ... RETURNING` on the
cluster's row in `cluster_event_sequence`; that row stays locked until commit, so sequence order
is commit order and a reader that sees sequence N has already seen every event before it.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections import defaultdict
from collections.abc import Sequence
from datetime import UTC, datetime
from types import TracebackType
from typing import Any, Self

import sqlalchemy as sa
from opentelemetry import trace
from sqlalchemy.ext.asyncio import AsyncConnection

from adapters.db import mapping
from adapters.db.addons import SqlAddonRepository
from adapters.db.audit import WROTE, SqlAuditRepository
from adapters.db.benchmarks import SqlBenchmarkRepository
from adapters.db.budgets import SqlBudgetRepository
from adapters.db.deployments import SqlDeploymentRepository
from adapters.db.drains import SqlDrainRepository
from adapters.db.eventlog import events_after
from adapters.db.fleets import SqlFleetRepository
from adapters.db.handle import DatabaseHandle
from adapters.db.quotas import SqlQuotaRepository
from adapters.db.repositories import SqlClusterRepository, SqlJobRepository, SqlTokenRepository
from adapters.db.reservations import SqlReservationRepository
from adapters.db.tables import (
    cluster_timelines,
    clusters,
    event_sequences,
    job_events,
    job_moves,
    job_usage,
    jobs,
    outbox,
)
from adapters.db.tenant_secrets import SqlTenantSecretRepository
from adapters.db.usage import SqlUsageRepository
from adapters.shapes.documents import change_to_document
from domain.errors import Conflict, Unavailable
from domain.model.audit import AuditedOperation, AuditEvent
from domain.model.audit import current as audited_operation
from domain.model.benchmark import Benchmark
from domain.model.deployment import Deployment, DeploymentChanged
from domain.model.events import Change, ClusterChanged, ServingChange
from domain.model.ids import ClusterId, JobId
from domain.model.job import Job, JobChanged
from domain.model.timeline import Timeline, timeline_from_document, timeline_to_document
from domain.ports.events import StoredEvent
from domain.ports.unit_of_work import TenantScope
from domain.scheduling.cost import PriceBook, ended_runs, meter

log = logging.getLogger(__name__)
_tracer = trace.get_tracer("budcluster.db")
SPAN_EVENTS = 20
"""At most this many events are named in a span (the count is always there)."""


class ChangeWithoutEvent(RuntimeError):
    """A bug: a job was changed other than through a method that records the change."""

    def __init__(self, job_id: JobId, columns: list[str]) -> None:
        super().__init__(f"job {job_id} changed ({', '.join(columns)}) without recording it")


# SQLSTATEs of a server that does not answer: connection exceptions (class 08), shutting down
# or starting up (57P01 admin_shutdown, 57P02 crash_shutdown, 57P03 cannot_connect_now: "the
# database system is not yet accepting connections", met in the fault suite while PostgreSQL
# recovered after a restart) and no connection slot left (53300 too_many_connections).
_NOT_ANSWERING = ("57P01", "57P02", "57P03", "53300")


def _sqlstate(error: BaseException | None) -> str:
    for candidate in (error, getattr(error, "__cause__", None)):
        code = getattr(candidate, "sqlstate", None) or getattr(candidate, "pgcode", None)
        if isinstance(code, str):
            return code
    return ""


def unanswered(exc: BaseException) -> bool:
    """Whether `exc` says the database does not answer (refused, gone, timed out, starting up,
    a pool with no connection to give), rather than that it refused what was asked."""
    if isinstance(exc, OSError | sa.exc.TimeoutError):
        return True
    if isinstance(exc, sa.exc.DBAPIError):
        if exc.connection_invalidated:
            return True
        if "sqlite" in type(exc.orig).__module__:  # its OperationalError is any failure
            return "database is locked" in str(exc.orig)
        state = _sqlstate(exc.orig)
        if state.startswith("08") or state in _NOT_ANSWERING:
            return True
        return isinstance(exc, sa.exc.OperationalError | sa.exc.InterfaceError)
    return False


class SqlUnitOfWork:
    jobs: SqlJobRepository
    clusters: SqlClusterRepository
    tokens: SqlTokenRepository
    quotas: SqlQuotaRepository
    reservations: SqlReservationRepository
    deployments: SqlDeploymentRepository
    benchmarks: SqlBenchmarkRepository
    audit: SqlAuditRepository
    usage: SqlUsageRepository
    budgets: SqlBudgetRepository
    fleets: SqlFleetRepository
    drains: SqlDrainRepository
    secrets: SqlTenantSecretRepository
    addons: SqlAddonRepository

    def __init__(
        self, db: DatabaseHandle, scope: TenantScope, *, consistent_read: bool = False
    ) -> None:
        self._db = db
        self._scope = scope
        self._consistent = consistent_read
        self._conn: AsyncConnection | None = None
        self._seen: dict[JobId, tuple[Job, dict[str, Any] | None]] = {}
        self._lock_held = False
        self._cluster_changes: list[ClusterChanged | ServingChange] = []
        self._committed: list[StoredEvent] = []

    async def __aenter__(self) -> Self:
        lock = self._db.write_lock
        if lock is not None:
            await lock.acquire()
            self._lock_held = True
        conn: AsyncConnection | None = None
        try:
            conn = await self._db.engine.connect()
            if self._consistent and not self._db.is_sqlite:
                await conn.execution_options(isolation_level="REPEATABLE READ")
            await conn.begin()
        except BaseException as exc:
            await asyncio.shield(self._finish(conn))
            if unanswered(exc):
                raise Unavailable("the database") from exc
            raise
        self._conn = conn
        self.jobs = SqlJobRepository(conn, self._scope, self)
        self.clusters = SqlClusterRepository(conn)
        self.tokens = SqlTokenRepository(conn)
        self.quotas = SqlQuotaRepository(conn)
        self.reservations = SqlReservationRepository(conn)
        self.deployments = SqlDeploymentRepository(conn, self._scope, self)
        self.benchmarks = SqlBenchmarkRepository(conn, self._scope, self)
        self.audit = SqlAuditRepository(conn)
        self.usage = SqlUsageRepository(conn)
        self.budgets = SqlBudgetRepository(conn)
        self.fleets = SqlFleetRepository(conn)
        self.drains = SqlDrainRepository(conn)
        self.secrets = SqlTenantSecretRepository(conn)
        self.addons = SqlAddonRepository(conn)
        if conn.sync_connection is not None:
            conn.sync_connection.info.pop(WROTE, None)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        conn, self._conn = self._conn, None
        await asyncio.shield(self._finish(conn))
        committed, self._committed = self._committed, []
        if committed and self._db.after_commit is not None:
            # with the connection given back: reacting never holds two of them
            with _tracer.start_as_current_span("react", attributes=_event_attributes(committed)):
                try:
                    await asyncio.shield(self._db.after_commit(committed))
                except Exception:  # the commit stands; what reacts has its own safety nets
                    log.exception("reacting to %d committed events failed", len(committed))
        if exc is not None and unanswered(exc):
            raise Unavailable("the database") from exc

    async def _finish(self, conn: AsyncConnection | None) -> None:
        """Roll back what was not committed, give the connection back, release the write lock:
        shielded from the caller's cancellation (a client gone, a failed sibling GraphQL field),
        which would otherwise leave the connection half returned, for the pool to reset in a
        garbage collection (logged as an error) and the lock to be released before it."""
        try:
            if conn is not None:
                try:
                    if conn.in_transaction():
                        await conn.rollback()
                except Exception as exc:
                    if not unanswered(exc):
                        raise
                    await conn.invalidate()  # the server went away: the pool drops it
                await conn.close()
        finally:
            self._release()

    def _release(self) -> None:
        if self._lock_held:
            self._lock_held = False
            lock = self._db.write_lock
            assert lock is not None
            lock.release()

    @property
    def connection(self) -> AsyncConnection:
        assert self._conn is not None, "unit of work used outside `async with`"
        return self._conn

    def track(self, job: Job, *, new: bool = False) -> Job:
        if job.id in self._seen:
            return self._seen[job.id][0]
        self._seen[job.id] = (job, mapping.job_to_row(job))
        return job

    async def current_sequence(self, cluster_id: ClusterId) -> int:
        value = (
            await self.connection.execute(
                sa.select(event_sequences.c.last_sequence).where(
                    event_sequences.c.cluster_id == cluster_id
                )
            )
        ).scalar_one_or_none()
        return int(value or 0)

    async def rollback(self) -> None:
        if self._conn is not None and self._conn.in_transaction():
            await self._conn.rollback()
        self._seen.clear()

    def record(self, change: ClusterChanged | ServingChange) -> None:
        self._cluster_changes.append(change)

    async def latest_timeline(self, cluster_id: ClusterId) -> tuple[int, Timeline] | None:
        row = (
            await self.connection.execute(
                sa.select(cluster_timelines.c.sequence, cluster_timelines.c.document).where(
                    cluster_timelines.c.cluster_id == cluster_id
                )
            )
        ).first()
        if row is None:
            return None
        return int(row[0]), timeline_from_document(row[1])

    async def events_after(
        self, cluster_id: ClusterId, after: int, *, limit: int
    ) -> list[StoredEvent]:
        return await events_after(self.connection, cluster_id, after, limit=limit)

    async def timeline_sequence(self, cluster_id: ClusterId) -> int | None:
        found = (
            await self.connection.execute(
                sa.select(cluster_timelines.c.sequence).where(
                    cluster_timelines.c.cluster_id == cluster_id
                )
            )
        ).scalar_one_or_none()
        return None if found is None else int(found)

    async def commit(self) -> list[StoredEvent]:
        """Write what changed, its history and its events (the outbox), in one transaction."""
        with _tracer.start_as_current_span("commit") as span:
            stored = await self._commit()
            if stored and span.is_recording():
                span.set_attributes(_event_attributes(stored))
            return stored

    async def _commit(self) -> list[StoredEvent]:
        conn = self.connection
        await self._meter(conn)
        job_changes: list[JobChanged] = []
        # written in id order: every transaction that locks several jobs takes them in one order
        for job, original in sorted(self._seen.values(), key=lambda seen: str(seen[0].id)):
            row = mapping.job_to_row(job)
            if original is not None and row != original:
                if not job.changes:  # no committed change without its event, by construction
                    raise ChangeWithoutEvent(
                        job.id, sorted(k for k in row if original.get(k) != row[k])
                    )
                # only what this unit of work changed: the estimator writes estimates beside it
                changed = {k: v for k, v in row.items() if original.get(k) != v}
                changed["version"] = job.version + 1
                result = await conn.execute(
                    jobs.update()
                    .where(jobs.c.id == job.id, jobs.c.version == job.version)
                    .values(changed)
                )
                if result.rowcount != 1:
                    raise Conflict(
                        f"job {job.id} was changed concurrently; try again", code="STALE_JOB"
                    )
                job.version += 1
            job_changes.extend(job.changes)
        job_changes.sort(key=lambda c: c.recorded)  # events in the order the changes were made
        history = [c.transition for c in job_changes if c.transition is not None]
        changes: list[Change] = [*job_changes, *self._cluster_changes]
        self._cluster_changes = []
        if history:
            await conn.execute(
                job_events.insert(),
                [
                    {
                        "job_id": e.job_id,
                        "attempt": e.attempt,
                        "from_status": e.from_status.value if e.from_status else None,
                        "to_status": e.to_status.value,
                        "reason": e.reason,
                        "at": e.at,
                    }
                    for e in history
                ],
            )
        moves = [m for c in job_changes if (m := c.move) is not None]
        if moves:
            await conn.execute(job_moves.insert(), [mapping.move_row(m) for m in moves])
        stored = await self._write_outbox(conn, changes)
        audited = await self._audited(conn, changes)
        await conn.commit()
        if audited is not None:
            audited[0].written = audited[1]
        for job, _ in self._seen.values():
            job.changes.clear()
        self._seen = {job.id: (job, mapping.job_to_row(job)) for job, _ in self._seen.values()}
        self._committed.extend(stored)
        return stored

    async def _meter(self, conn: AsyncConnection) -> None:
        """Price the runs this commit ends and keep them (`domain.scheduling.cost.meter`): the
        job's actual cost and the usage ledger are written with the end, or neither is."""
        seen = [job for job, _ in self._seen.values()]
        ended = ended_runs(seen)
        if not ended:
            return
        ids = sorted({u.cluster_id for u in ended}, key=str)
        stmt = sa.select(clusters.c.id, clusters.c.settings).where(clusters.c.id.in_(ids))
        settings = {ClusterId(r.id): r.settings or {} for r in await conn.execute(stmt)}
        changes = await self.clusters.prices(ids)
        books = {c: PriceBook.of(settings.get(c, {}), changes[c]) for c in ids}
        rows = [
            {
                "job_id": usage.job_id,
                "attempt": usage.attempt,
                "tenant_id": usage.tenant_id,
                "project_id": usage.project_id,
                "cluster_id": usage.cluster_id,
                "job_type": usage.job_type.value,
                "gpu_type": usage.gpu_type,
                "gpus": usage.gpus,
                "cpu_cores": usage.cpu_cores,
                "started_at": usage.started_at,
                "ended_at": usage.ended_at,
                "day": usage.day,
                "seconds": usage.seconds,
                "outcome": usage.outcome.value,
                "cost": cost,
            }
            for job in seen
            for usage, cost in meter(job, books)
        ]
        await conn.execute(job_usage.insert(), rows)

    async def _audited(
        self, conn: AsyncConnection, changes: list[Change]
    ) -> tuple[AuditedOperation, AuditEvent] | None:
        """The audited mutation's event, in the transaction of its first change (a commit
        that wrote nothing records nothing); marked recorded once that transaction commits.
        Whose objects every commit changed is noted (the event's tenant and project)."""
        operation = audited_operation.get()
        info = conn.sync_connection.info if conn.sync_connection is not None else {}
        if operation is None or operation.closed:
            return None
        for change in changes:
            if not isinstance(change, ClusterChanged):
                owned = change.job if isinstance(change, JobChanged) else _owned(change)
                operation.concerns(owned.tenant_id, owned.project_id)
        if operation.written is not None or not (changes or info.pop(WROTE, False)):
            return None
        for change in changes:
            operation.target(*_targets(change))
        event = operation.event(uuid.uuid4(), datetime.now(UTC))
        await self.audit.add(event)
        return operation, event

    async def _write_outbox(
        self, conn: AsyncConnection, changes: list[Change]
    ) -> list[StoredEvent]:
        if not changes:
            return []
        by_cluster: dict[ClusterId, list[Change]] = defaultdict(list)
        for change in changes:
            by_cluster[change.cluster_id].append(change)
        stored: list[StoredEvent] = []
        rows: list[dict[str, Any]] = []
        for cluster_id in sorted(by_cluster, key=str):  # one lock order: no deadlocks
            batch = by_cluster[cluster_id]
            last = (
                await conn.execute(
                    event_sequences.update()
                    .where(event_sequences.c.cluster_id == cluster_id)
                    .values(last_sequence=event_sequences.c.last_sequence + len(batch))
                    .returning(event_sequences.c.last_sequence)
                )
            ).scalar_one()
            first = int(last) - len(batch) + 1
            for offset, change in enumerate(batch):
                event = StoredEvent(cluster_id, first + offset, change, _occurred(change))
                stored.append(event)
                job = change.job if isinstance(change, JobChanged) else None
                tenant = None
                if isinstance(change, JobChanged):
                    tenant = change.job.tenant_id
                elif not isinstance(change, ClusterChanged):
                    tenant = change.tenant_id
                rows.append(
                    {
                        "cluster_id": cluster_id,
                        "sequence": event.sequence,
                        "kind": change.kind.value,
                        "tenant_id": tenant,
                        "job_id": job.id if job else None,
                        "payload": change_to_document(change),
                        "occurred_at": event.occurred_at,
                    }
                )
                if isinstance(change, ClusterChanged) and change.state is not None:
                    await self._store_timeline(conn, cluster_id, event.sequence, change.state)
        await conn.execute(outbox.insert(), rows)
        return stored

    async def _store_timeline(
        self, conn: AsyncConnection, cluster_id: ClusterId, sequence: int, state: Timeline
    ) -> None:
        values = {
            "sequence": sequence,
            "computed_at": state.computed_at,
            "document": timeline_to_document(state),
        }
        updated = await conn.execute(
            cluster_timelines.update()
            .where(cluster_timelines.c.cluster_id == cluster_id)
            .values(values)
        )
        if not updated.rowcount:
            await conn.execute(cluster_timelines.insert().values(cluster_id=cluster_id, **values))


def _event_attributes(events: Sequence[StoredEvent]) -> dict[str, int | list[str]]:
    """A span's account of committed events: how many, and which (cluster#sequence kind), the
    first few (what subscribers and the event log know them by)."""
    return {
        "budcluster.outbox.events": len(events),
        "budcluster.outbox.written": [
            f"{e.cluster_id}#{e.sequence} {e.change.kind.value}" for e in events[:SPAN_EVENTS]
        ],
    }


def _occurred(change: Change) -> datetime:
    if isinstance(change, ClusterChanged):
        return change.timeline.computed_at if change.timeline else datetime.now(UTC)
    if not isinstance(change, JobChanged):
        return change.at
    return change.transition.at if change.transition else change.job.updated_at


def _owned(change: ServingChange) -> Deployment | Benchmark:
    return change.deployment if isinstance(change, DeploymentChanged) else change.benchmark


def _targets(change: Change) -> tuple[object, ...]:
    """The ids an event names: its job, deployment or benchmark, and its cluster."""
    if isinstance(change, JobChanged):
        return (change.job.id, change.job.cluster_id, *filter(None, [change.moved_from]))
    found = [getattr(change, "cluster_id", None)]
    for attribute in ("deployment", "benchmark"):
        thing = getattr(change, attribute, None)
        if thing is not None:
            found.insert(0, thing.id)
    return tuple(f for f in found if f is not None)
