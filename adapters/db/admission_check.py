"""The simulated cluster's admission check, on budcluster's own job table.

Kueue admits a workload only once every admission check on its ClusterQueue says Ready; a
simulated cluster, whose admission loop runs in budcluster's own database, asks the job table in
the transaction that admits: a workload whose job is final (cancelled, say), or has moved on to a
later attempt, is not admitted (found under load: 16 of 120 cancelled jobs' workloads admitted
after their CANCELLED had committed, each holding its GPUs up to 0.6 s; issue 27).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from adapters.db.tables import jobs
from domain.model.job import JobStatus


async def unwanted_attempts(
    conn: AsyncConnection, attempts: Sequence[tuple[uuid.UUID, int]]
) -> set[tuple[uuid.UUID, int]]:
    """Of these (job, attempt) pairs, those their job no longer wants run. On PostgreSQL the
    jobs' rows are share-locked, in id order, until the caller commits: a cancel committing
    meanwhile either waits for the admission or is seen by it, never slips in between. (On
    SQLite the caller holds the process's one writer lock, which every commit takes.) A job
    not in the table is not refused here: an orphan is the reconciler's business."""
    if not attempts:
        return set()
    ids = sorted({job_id for job_id, _ in attempts}, key=str)
    stmt = sa.select(jobs.c.id, jobs.c.status, jobs.c.attempt).where(jobs.c.id.in_(ids))
    if conn.dialect.name == "postgresql":
        stmt = stmt.order_by(jobs.c.id).with_for_update(read=True)
    found = {row.id: row for row in (await conn.execute(stmt)).all()}
    unwanted = set()
    for job_id, attempt in attempts:
        row = found.get(job_id)
        if row is None:
            continue
        if not JobStatus(row.status).is_active or row.attempt != attempt:
            unwanted.add((job_id, attempt))
    return unwanted
