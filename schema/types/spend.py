"""GPU-hours and cost over UTC days, grouped (`Query.spend`)."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import strawberry

from domain.model import spend as model
from schema.types.connection import PageInfo
from schema.types.enums import JobType


@strawberry.type(
    description="One group of spend: the keys it was grouped by (the others are null; so is "
    "the GPU type of GPU-less work), the GPU-hours used and what they cost, in the unit of "
    "Job.estimatedCost. GPU-less work is priced per core-hour and counts no GPU-hours."
)
class SpendRow:
    tenant_id: strawberry.ID | None
    project_id: strawberry.ID | None
    cluster_id: strawberry.ID | None
    gpu_type: str | None
    job_type: JobType | None
    day: date | None
    gpu_hours: float
    cost: Decimal

    @classmethod
    def from_domain(cls, row: model.SpendRow) -> SpendRow:
        def text(value: object) -> strawberry.ID | None:
            return None if value is None else strawberry.ID(str(value))

        return cls(
            tenant_id=text(row.tenant_id),
            project_id=text(row.project_id),
            cluster_id=text(row.cluster_id),
            gpu_type=row.gpu_type,
            job_type=row.job_type,
            day=row.day,
            gpu_hours=round(row.gpu_hours, 6),
            cost=row.cost,
        )


@strawberry.type
class SpendEdge:
    cursor: str
    node: SpendRow


@strawberry.type
class SpendConnection:
    edges: list[SpendEdge]
    page_info: PageInfo
    total: SpendRow = strawberry.field(
        description="Every group of the query summed (not only this page's)."
    )
