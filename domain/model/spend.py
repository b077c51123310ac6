"""Spend: what was used and what it cost, from the usage ledger (one row per metered run and UTC
day it ran on: `domain.model.job.Usage.by_day`), summed over a range of days and grouped.

Not `usage`, which the API already uses for quota use. Days are UTC days, a range's first and
last day both included."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import date
from decimal import Decimal

from domain.model.ids import ClusterId, ProjectId, TenantId
from domain.model.job import JobType


class SpendGroup(enum.StrEnum):
    TENANT = "TENANT"
    PROJECT = "PROJECT"
    CLUSTER = "CLUSTER"
    GPU_TYPE = "GPU_TYPE"
    JOB_TYPE = "JOB_TYPE"
    DAY = "DAY"


@dataclass(frozen=True)
class SpendQuery:
    first_day: date
    last_day: date
    group_by: tuple[SpendGroup, ...] = ()
    tenant_id: TenantId | None = None
    """None: every tenant's (the operator)."""
    project_ids: frozenset[ProjectId] | None = None
    """None: every project of the tenant."""


@dataclass(frozen=True)
class SpendRow:
    """One group: its keys (those not grouped by are None; so is the GPU type of GPU-less
    work), the GPU-hours used and what they cost."""

    gpu_hours: float
    cost: Decimal
    tenant_id: TenantId | None = None
    project_id: ProjectId | None = None
    cluster_id: ClusterId | None = None
    gpu_type: str | None = None
    job_type: JobType | None = None
    day: date | None = None


@dataclass(frozen=True)
class SpendPage:
    rows: list[SpendRow]
    total: SpendRow
    """Every row of the query (not only this page's), summed."""
    offset: int
    has_next: bool
