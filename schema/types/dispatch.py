"""What a fleet job sees of its fleet: its moves between members, and each member's offer
when it is previewed on the fleet (apart from `schema.types.fleet`, which the schedule's types
cannot import: a fleet names clusters, whose schedule names these)."""

from __future__ import annotations

import uuid
from datetime import datetime
from decimal import Decimal

import strawberry

from domain.model import fleet as model
from domain.model.ids import ClusterId
from domain.scheduling.dispatch import Offer
from schema.context import Info
from schema.types.errors import FieldError, api_message, camel_path
from schema.types.windows import WINDOW_DESCRIPTION, StartWindow, start_window


@strawberry.type(description="A fleet job taken from one member to another before admission.")
class JobMove:
    attempt: int
    from_cluster_id: strawberry.ID
    to_cluster_id: strawberry.ID
    at: datetime
    reason: str

    @classmethod
    def from_domain(cls, move: model.JobMove) -> JobMove:
        return cls(
            attempt=move.attempt,
            from_cluster_id=strawberry.ID(str(move.from_cluster)),
            to_cluster_id=strawberry.ID(str(move.to_cluster)),
            at=move.at,
            reason=move.reason,
        )


@strawberry.type(description="What one member of a fleet offers a job previewed on the fleet.")
class FleetMemberPreview:
    cluster_id: strawberry.ID
    cluster_name: str
    rank: int | None = strawberry.field(
        description="1 for the member the job would go to, then the next best; null for a "
        "member that cannot take it."
    )
    estimated_start: datetime | None
    estimated_end: datetime | None
    estimated_cost: Decimal | None
    load: float | None = strawberry.field(
        description="The share of the member's GPUs of the job's type its active jobs hold or "
        "ask for (ties on the start and cost go to the less loaded)."
    )
    evicts: int = strawberry.field(
        description="Jobs its start there would preempt, as the estimate has it."
    )
    reason: str = strawberry.field(description="Why it would wait there.")
    warnings: list[str]
    problems: list[FieldError] = strawberry.field(
        description="Why the member cannot take the job (empty when it can)."
    )
    wide: strawberry.Private[bool] = False

    @strawberry.field(description=WINDOW_DESCRIPTION)  # type: ignore[untyped-decorator]
    async def start_window(self, info: Info, confidence: float = 0.8) -> StartWindow | None:
        cluster = ClusterId(uuid.UUID(self.cluster_id))
        return await start_window(info, cluster, self.estimated_start, confidence, wide=self.wide)

    @classmethod
    def from_offer(cls, offer: Offer, rank: int | None, *, wide: bool) -> FleetMemberPreview:
        return cls(
            cluster_id=strawberry.ID(str(offer.cluster_id)),
            cluster_name=offer.name,
            rank=rank,
            estimated_start=offer.start,
            estimated_end=offer.end,
            estimated_cost=offer.cost,
            load=None if offer.refused or offer.load == float("inf") else offer.load,
            evicts=offer.evicts,
            reason=offer.reason,
            warnings=list(offer.warnings),
            problems=[
                FieldError(path=camel_path(i.field), message=api_message(i.message), code=i.code)
                for i in offer.refused
            ],
            wide=wide,
        )
