"""Spend from the usage ledger, on both databases: for random runs of several tenants, projects,
clusters, GPU types and job types over several days (some over midnight, some across a price
change), every grouping adds up to the same total, which is the sum of the jobs' actual costs;
a day range counts the pieces of those days only; each tenant sees its own spend, a token
limited to projects sees theirs, the operator sees all."""

from __future__ import annotations

import itertools
import random
import uuid
from datetime import timedelta
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adapters.db.engine import Database
from domain.model.cluster import GpuPrice
from domain.model.ids import ProjectId, TenantId
from domain.model.job import Job, JobStatus, JobType, Resources
from domain.model.principal import Principal, Scope
from domain.model.spend import SpendGroup, SpendQuery, SpendRow
from domain.services.spend import SpendService
from tests.integration.conftest import empty
from tests.integration.test_repositories import SYSTEM, add_cluster, job_on, save
from tests.support.fakes import T0

TYPES = [("nvidia-a100-80gb", 2), ("nvidia-l40s", 1), (None, 0)]


async def ran(db: Database, seed: int) -> tuple[list[Job], list[TenantId], list[ProjectId]]:
    """Jobs that ran and ended (completed, failed, preempted, cancelled) between T0 and 4 days
    later, on two clusters, for three tenants of two projects each."""
    rng = random.Random(seed)
    clusters = [await add_cluster(db, f"c{seed}-{i}") for i in range(2)]
    async with db.unit_of_work(SYSTEM) as uow:  # a price change on the second day
        await uow.clusters.add_price(
            GpuPrice(clusters[0], "nvidia-a100-80gb", Decimal("3.3"), T0 + timedelta(days=1))
        )
        await uow.commit()
    tenants = [TenantId(uuid.uuid4()) for _ in range(3)]
    projects = [ProjectId(uuid.uuid4()) for _ in range(6)]
    jobs = []
    for _ in range(rng.randrange(5, 25)):
        which = rng.randrange(6)
        gpu_type, gpus = rng.choice(TYPES)
        job = job_on(
            rng.choice(clusters),
            tenants[which // 2],
            project_id=projects[which],
            job_type=rng.choice(list(JobType)),
            resources=Resources(gpu_type, gpus, rng.choice([1.0, 4.5]), 16),
        )
        await save(db, job)
        start = T0 + timedelta(minutes=rng.randrange(0, 3 * 24 * 60))
        end = start + timedelta(seconds=rng.randrange(1, 30 * 3600))
        async with db.unit_of_work(SYSTEM) as uow:
            loaded = await uow.jobs.get(job.id)
            assert loaded is not None
            loaded.transition(JobStatus.QUEUED, "queued", start)
            loaded.transition(JobStatus.ADMITTED, "admitted", start)
            loaded.transition(JobStatus.RUNNING, "running", start)
            outcome = rng.choice(
                [JobStatus.COMPLETED, JobStatus.FAILED, JobStatus.PREEMPTED, JobStatus.CANCELLED]
            )
            loaded.transition(outcome, "ended", end)
            await uow.commit()
            jobs.append(loaded)
    return jobs, tenants, projects


async def read(db: Database, query: SpendQuery) -> tuple[list[SpendRow], SpendRow]:
    """Every row and the total, read both ways: apart, and as one page with its total."""
    async with db.unit_of_work(SYSTEM) as uow:
        rows = await uow.usage.spend(query, offset=0, limit=10_000)
        total = await uow.usage.spend_total(query)
        assert await uow.usage.spend_page(query, offset=0, limit=10_000) == (rows, total)
        past_the_end = await uow.usage.spend_page(query, offset=len(rows), limit=5)
        assert past_the_end == ([], total)
    return rows, total


FIRST, LAST = T0.date() - timedelta(days=1), T0.date() + timedelta(days=5)


@pytest.mark.parametrize("seed", [1, 2])
async def test_every_grouping_adds_up_to_the_jobs_actual_costs(db: Database, seed: int) -> None:
    jobs, _, _ = await ran(db, seed)
    expected = sum((j.actual_cost or Decimal(0) for j in jobs), Decimal(0))
    assert expected > 0
    groupings = [()] + [
        combo for n in (1, 2, 3) for combo in itertools.combinations(list(SpendGroup), n)
    ]
    for groups in groupings:
        rows, total = await read(db, SpendQuery(FIRST, LAST, tuple(groups)))
        assert total.cost == expected, groups
        assert sum((r.cost for r in rows), Decimal(0)) == expected, groups
        assert sum(r.gpu_hours for r in rows) == pytest.approx(total.gpu_hours), groups
        keys = [tuple(getattr(r, _field(g)) for g in groups) for r in rows]
        assert len(set(keys)) == len(keys), groups  # one row per group


def _field(group: SpendGroup) -> str:
    return {"GPU_TYPE": "gpu_type", "JOB_TYPE": "job_type"}.get(
        group.value, group.value.lower()
    ) + ("_id" if group in (SpendGroup.TENANT, SpendGroup.PROJECT, SpendGroup.CLUSTER) else "")


async def test_a_day_range_counts_the_pieces_of_its_days(db: Database) -> None:
    jobs, _, _ = await ran(db, 3)
    by_day, total = await read(db, SpendQuery(FIRST, LAST, (SpendGroup.DAY,)))
    assert total.cost == sum((j.actual_cost or Decimal(0) for j in jobs), Decimal(0))
    for row in by_day:
        assert row.day is not None
        [one], alone = await read(db, SpendQuery(row.day, row.day, (SpendGroup.DAY,)))
        assert one == row and alone.cost == row.cost
    second, third = T0.date() + timedelta(days=1), T0.date() + timedelta(days=2)
    window, within = await read(db, SpendQuery(second, third))
    assert within.cost == sum(
        (r.cost for r in by_day if r.day is not None and second <= r.day <= third), Decimal(0)
    )
    assert window == [within]


async def test_a_tenant_sees_its_own_spend_and_a_project_token_its_projects(db: Database) -> None:
    jobs, tenants, projects = await ran(db, 4)
    service = SpendService(uow=db.unit_of_work)
    operator = Principal(TenantId(uuid.uuid4()), frozenset({Scope.ADMIN}))
    everything = service.query(operator, FIRST, LAST, [SpendGroup.TENANT])
    all_rows = (await service.page(everything, first=1000, offset=0)).rows
    assert {r.tenant_id for r in all_rows} <= set(tenants)
    for tenant in tenants:
        own = Principal(tenant, frozenset({Scope.JOBS_READ}))
        page = await service.page(
            service.query(own, FIRST, LAST, [SpendGroup.TENANT, SpendGroup.PROJECT]),
            first=1000,
            offset=0,
        )
        assert {r.tenant_id for r in page.rows} <= {tenant}
        mine = sum((j.actual_cost or Decimal(0) for j in jobs if j.tenant_id == tenant), Decimal(0))
        assert page.total.cost == mine
    limited = Principal(
        tenants[0], frozenset({Scope.JOBS_READ}), project_ids=frozenset({projects[1]})
    )
    page = await service.page(
        service.query(limited, FIRST, LAST, [SpendGroup.PROJECT]), first=1000, offset=0
    )
    assert {r.project_id for r in page.rows} <= {projects[1]}
    assert page.total.cost == sum(
        (j.actual_cost or Decimal(0) for j in jobs if j.project_id == projects[1]), Decimal(0)
    )


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    seed=st.integers(0, 10_000),
    size=st.integers(1, 7),
    groups=st.lists(st.sampled_from(list(SpendGroup)), unique=True, max_size=3),
)
async def test_pages_hold_every_row_once_in_order(
    pg: Database, seed: int, size: int, groups: list[SpendGroup]
) -> None:
    await empty(pg)
    await ran(pg, seed)
    service = SpendService(uow=pg.unit_of_work)
    query = SpendQuery(FIRST, LAST, tuple(groups))
    whole = (await service.page(query, first=1000, offset=0)).rows
    paged: list[SpendRow] = []
    offset = 0
    while True:
        page = await service.page(query, first=size, offset=offset)
        paged.extend(page.rows)
        offset += len(page.rows)
        if not page.has_next:
            break
    assert paged == whole
    assert not (await service.page(query, first=size, offset=offset)).rows
