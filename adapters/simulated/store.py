"""Where simulated clusters keep their workloads: a table of their own, like a cluster's etcd.

The simulated cluster is an outside system from budcluster's point of view, so its state is not
budcluster's job table: budcluster learns of it only through the gateway, as it would from
Kubernetes. Keeping it in the database (its own table, same migrations) lets any process submit
to it, survives restarts, and lets one leader process at a time run its admission loop. Times are
stored as UTC epoch seconds.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from adapters.shapes.documents import (
    placements_from_document,
    placements_to_document,
    pod_sets_from_document,
    pod_sets_to_document,
)
from adapters.simulated.engine import SimWorkload
from domain.ports.gateways import Superseded, WorkloadPhase

metadata = sa.MetaData()

simulated_workloads = sa.Table(
    "simulated_workload",
    metadata,
    sa.Column("cluster_id", sa.Uuid, primary_key=True),
    sa.Column("name", sa.String(63), primary_key=True),
    sa.Column("job_id", sa.Uuid, nullable=False),
    sa.Column("attempt", sa.Integer, nullable=False),
    sa.Column("priority", sa.Integer, nullable=False),
    sa.Column("gpu_type", sa.String(100)),
    sa.Column("gpu_count", sa.Integer, nullable=False),
    sa.Column("cpu_cores", sa.Float, nullable=False),
    sa.Column("memory_gb", sa.Float, nullable=False),
    sa.Column("runtime_seconds", sa.Float),
    sa.Column("max_duration_seconds", sa.Float),
    sa.Column("outcome", sa.String(20), nullable=False),
    sa.Column("phase", sa.String(20), nullable=False),
    sa.Column("reason", sa.Text, nullable=False),
    sa.Column("node", sa.String(253)),
    sa.Column("gpu_indices", sa.JSON, nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("admitted_at", sa.Float),
    sa.Column("started_at", sa.Float),
    sa.Column("finished_at", sa.Float),
    sa.Column("request", sa.String(20)),
    sa.Column("request_reason", sa.Text),
    sa.Column("request_due", sa.Float),
    sa.Column("namespace", sa.String(63), nullable=False, server_default=""),
    sa.Column("queue_name", sa.String(63), nullable=False, server_default="default"),
    sa.Column("preemptible", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("critical", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("reservation_id", sa.String(36)),
    sa.Column("kind", sa.String(20), nullable=False, server_default="workload"),
    sa.Column("flavor", sa.String(100)),
    sa.Column("pod_count", sa.Integer, nullable=False, server_default="1"),
    sa.Column("other_pods", sa.JSON),
    sa.Column("pod_sets", sa.JSON),
    sa.Column("mounts", sa.JSON),
    sa.Index("ix_simulated_workload_cluster_id_phase", "cluster_id", "phase"),
    sa.Index("ix_simulated_workload_job_id", "job_id"),
)

simulated_fences = sa.Table(
    "simulated_fence",
    metadata,
    sa.Column("cluster_id", sa.Uuid, primary_key=True),
    sa.Column("generation", sa.BigInteger, nullable=False),
)
"""The generation of whoever runs a cluster's admission loop: a step commits only under the
newest (the fencing token that makes a stale holder's writes fail)."""


_LIVE = [p.value for p in (WorkloadPhase.QUEUED, WorkloadPhase.ADMITTED, WorkloadPhase.RUNNING)]


def _ts(value: datetime | None) -> float | None:
    return None if value is None else value.timestamp()


def _dt(value: float | None) -> datetime | None:
    return None if value is None else datetime.fromtimestamp(value, UTC)


def _from_row(row: sa.RowMapping) -> SimWorkload:
    created = _dt(row["created_at"])
    assert created is not None
    return SimWorkload(
        name=row["name"],
        job_id=str(row["job_id"]),
        attempt=row["attempt"],
        priority=row["priority"],
        gpu_type=row["gpu_type"],
        gpu_count=row["gpu_count"],
        cpu_cores=row["cpu_cores"],
        memory_gb=row["memory_gb"],
        runtime_seconds=row["runtime_seconds"],
        max_duration_seconds=row["max_duration_seconds"],
        outcome=WorkloadPhase(row["outcome"]),
        created_at=created,
        phase=WorkloadPhase(row["phase"]),
        reason=row["reason"],
        node=row["node"],
        gpu_indices=tuple(row["gpu_indices"]),
        admitted_at=_dt(row["admitted_at"]),
        started_at=_dt(row["started_at"]),
        finished_at=_dt(row["finished_at"]),
        request=row["request"],
        request_reason=row["request_reason"],
        request_due=_dt(row["request_due"]),
        namespace=row["namespace"],
        queue_name=row["queue_name"],
        preemptible=row["preemptible"],
        critical=row["critical"],
        reservation=row["reservation_id"],
        kind=row["kind"],
        flavor=row["flavor"],
        pod_count=row["pod_count"],
        other_pods=placements_from_document(row["other_pods"]),
        pod_sets=pod_sets_from_document(row["pod_sets"]),
        mounts=tuple(row["mounts"] or ()),
    )


def _row(cluster_id: uuid.UUID, w: SimWorkload) -> dict[str, Any]:
    return {"cluster_id": cluster_id, **_identity(w), **_state(w)}


def _identity(w: SimWorkload) -> dict[str, Any]:
    return {
        "name": w.name,
        "job_id": uuid.UUID(w.job_id),
        "attempt": w.attempt,
        "gpu_type": w.gpu_type,
        "gpu_count": w.gpu_count,
        "cpu_cores": w.cpu_cores,
        "memory_gb": w.memory_gb,
        "runtime_seconds": w.runtime_seconds,
        "max_duration_seconds": w.max_duration_seconds,
        "outcome": w.outcome.value,
        "created_at": _ts(w.created_at),
        "namespace": w.namespace,
        "queue_name": w.queue_name,
        "preemptible": w.preemptible,
        "critical": w.critical,
        "reservation_id": w.reservation,
        "kind": w.kind,
        "pod_count": w.pod_count,
        "pod_sets": pod_sets_to_document(w.pod_sets) if w.pod_sets else None,
        "mounts": list(w.mounts) if w.mounts else None,
    }


def _state(w: SimWorkload) -> dict[str, Any]:
    return {
        "phase": w.phase.value,
        "reason": w.reason,
        "node": w.node,
        "gpu_indices": list(w.gpu_indices),
        "admitted_at": _ts(w.admitted_at),
        "started_at": _ts(w.started_at),
        "finished_at": _ts(w.finished_at),
        "request": w.request,
        "request_reason": w.request_reason,
        "request_due": _ts(w.request_due),
        "priority": w.priority,
        "flavor": w.flavor,
        "other_pods": placements_to_document(w.other_pods) if w.other_pods else None,
    }


class SimulatedStore:
    def __init__(
        self,
        engine: AsyncEngine,
        serialised: Callable[[], AbstractAsyncContextManager[None]] | None = None,
    ) -> None:
        self._engine = engine
        self._serialised = serialised or contextlib.nullcontext

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[AsyncConnection]:
        async with self._serialised(), self._engine.begin() as conn:
            yield conn

    async def insert(self, cluster_id: uuid.UUID, w: SimWorkload) -> bool:
        """Create the workload unless one of that name exists; True if created."""
        async with self.transaction() as conn:
            exists = (
                await conn.execute(
                    sa.select(simulated_workloads.c.name).where(
                        simulated_workloads.c.cluster_id == cluster_id,
                        simulated_workloads.c.name == w.name,
                    )
                )
            ).first()
            if exists is not None:
                return False
            await conn.execute(simulated_workloads.insert().values(_row(cluster_id, w)))
            return True

    async def request(
        self,
        cluster_id: uuid.UUID,
        job_id: uuid.UUID,
        attempt: int,
        action: str,
        reason: str,
        *,
        due: datetime | None = None,
    ) -> bool:
        """Ask the running loop to end a live workload; True if there was one. With `due`, a
        running one ends then (its grace period after SIGTERM), unless an earlier request is
        due sooner; one not yet running ends at once."""
        table = simulated_workloads.c
        where = (
            table.cluster_id == cluster_id,
            table.job_id == job_id,
            table.attempt == attempt,
            table.phase.in_(_LIVE),
        )
        async with self.transaction() as conn:
            if due is None:
                result = await conn.execute(
                    simulated_workloads.update()
                    .where(*where)
                    .values(request=action, request_reason=reason, request_due=None)
                )
                return bool(result.rowcount)
            later = sa.or_(table.request.is_(None), table.request_due > _ts(due))
            result = await conn.execute(
                simulated_workloads.update()
                .where(*where, later)
                .values(request=action, request_reason=reason, request_due=_ts(due))
            )
            found = await conn.execute(sa.select(sa.func.count()).where(*where))
            return bool(result.rowcount) or bool(found.scalar_one())

    async def set_priority(
        self, cluster_id: uuid.UUID, job_id: uuid.UUID, attempt: int, priority: int
    ) -> None:
        async with self.transaction() as conn:
            await conn.execute(
                simulated_workloads.update()
                .where(
                    simulated_workloads.c.cluster_id == cluster_id,
                    simulated_workloads.c.job_id == job_id,
                    simulated_workloads.c.attempt == attempt,
                )
                .values(priority=priority)
            )

    async def claim(self, cluster_id: uuid.UUID) -> int:
        """Take over a cluster's admission loop: the next generation, which makes every earlier
        holder's next step fail (`Superseded`)."""
        async with self.transaction() as conn:
            fence = simulated_fences.c
            current = (
                await conn.execute(
                    sa.select(fence.generation)
                    .where(fence.cluster_id == cluster_id)
                    .with_for_update()
                )
            ).scalar()
            if current is None:
                await conn.execute(
                    simulated_fences.insert().values(cluster_id=cluster_id, generation=1)
                )
                return 1
            await conn.execute(
                simulated_fences.update()
                .where(fence.cluster_id == cluster_id)
                .values(generation=current + 1)
            )
            return int(current) + 1

    async def live(
        self, conn: AsyncConnection, cluster_id: uuid.UUID, *, generation: int | None = None
    ) -> list[SimWorkload]:
        """The live workloads, locked until the step's commit: a cancel or re-prioritisation
        asked for meanwhile waits for it, and is not written over (found under load: 1 in 60
        cancels left the job running). With `generation`, only while it is the newest."""
        if generation is not None:
            newest = (
                await conn.execute(
                    sa.select(simulated_fences.c.generation)
                    .where(simulated_fences.c.cluster_id == cluster_id)
                    .with_for_update()
                )
            ).scalar()
            if newest != generation:
                raise Superseded(cluster_id)
        rows = (
            (
                await conn.execute(
                    sa.select(simulated_workloads)
                    .where(
                        simulated_workloads.c.cluster_id == cluster_id,
                        simulated_workloads.c.phase.in_(_LIVE),
                    )
                    .with_for_update()
                )
            )
            .mappings()
            .all()
        )
        return [_from_row(r) for r in rows]

    async def save(
        self, conn: AsyncConnection, cluster_id: uuid.UUID, workloads: Sequence[SimWorkload]
    ) -> None:
        for w in workloads:
            if w.new:
                await conn.execute(simulated_workloads.insert().values(_row(cluster_id, w)))
                w.new = False
                continue
            await conn.execute(
                simulated_workloads.update()
                .where(
                    simulated_workloads.c.cluster_id == cluster_id,
                    simulated_workloads.c.name == w.name,
                )
                .values(_state(w))
            )

    async def of_attempt(
        self, cluster_id: uuid.UUID, job_id: uuid.UUID, attempt: int
    ) -> list[SimWorkload]:
        """Every hand-over of one attempt, live or ended, oldest first."""
        async with self._engine.connect() as conn:
            rows = (
                (
                    await conn.execute(
                        sa.select(simulated_workloads)
                        .where(
                            simulated_workloads.c.cluster_id == cluster_id,
                            simulated_workloads.c.job_id == job_id,
                            simulated_workloads.c.attempt == attempt,
                            simulated_workloads.c.kind == "workload",
                        )
                        .order_by(simulated_workloads.c.created_at, simulated_workloads.c.name)
                    )
                )
                .mappings()
                .all()
            )
        return [_from_row(r) for r in rows]

    async def all(self, cluster_id: uuid.UUID, *, finished_since: datetime) -> list[SimWorkload]:
        """Live workloads and those that ended after `finished_since`."""
        async with self._engine.connect() as conn:
            rows = (
                (
                    await conn.execute(
                        sa.select(simulated_workloads).where(
                            simulated_workloads.c.cluster_id == cluster_id,
                            simulated_workloads.c.kind == "workload",
                            sa.or_(
                                simulated_workloads.c.phase.in_(_LIVE),
                                simulated_workloads.c.finished_at >= finished_since.timestamp(),
                            ),
                        )
                    )
                )
                .mappings()
                .all()
            )
        return [_from_row(r) for r in rows]
