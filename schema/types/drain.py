"""Drains: a node, or a whole cluster, taken out of service before maintenance or removal."""

from __future__ import annotations

import enum
from datetime import datetime

import strawberry

from domain.services.drains import DrainView


@strawberry.enum(description="Where a drain stands.")
class DrainState(enum.Enum):
    DRAINING = "DRAINING"
    DRAINED = "DRAINED"
    ENDED = "ENDED"


@strawberry.type(
    description="A node, or a whole cluster, taken out of service: nothing new is admitted "
    "there; its batch and training jobs get SIGTERM and their grace period, then are requeued "
    "(no retry used); a deployment's replicas start elsewhere before the old ones stop."
)
class Drain:
    id: strawberry.ID
    cluster_id: strawberry.ID
    node: str | None = strawberry.field(description="The node drained; null: the whole cluster.")
    reason: str
    state: DrainState
    started_at: datetime
    estimated_end: datetime | None = strawberry.field(
        description="When it is expected to be DRAINED (when it was, once it is); null while a "
        "replacement replica has no estimated start."
    )
    drained_at: datetime | None = strawberry.field(
        description="When nothing of budcluster's held resources there any more."
    )
    ended_at: datetime | None = strawberry.field(description="When it was undrained.")
    remaining: int = strawberry.field(
        description="budcluster's jobs still admitted or running where it covers (a replica "
        "waiting for its replacement to run). A requeued job's old copy is not counted: its "
        "grace period is in estimatedEnd."
    )
    replacing: int = strawberry.field(
        description="Deployment replicas it had started elsewhere before stopping the old ones."
    )
    blocked_pods: list[str] = strawberry.field(
        description="Pods (namespace/name) a PodDisruptionBudget kept on the node at the last "
        "try (Kubernetes; the operator's only: empty for tenants)."
    )

    @classmethod
    def from_domain(cls, v: DrainView, *, operator: bool) -> Drain:
        d = v.drain
        return cls(
            id=strawberry.ID(str(d.id)),
            cluster_id=strawberry.ID(str(d.cluster_id)),
            node=d.node,
            reason=d.reason,
            state=DrainState(v.state.value),
            started_at=d.started_at,
            estimated_end=v.estimated_end,
            drained_at=d.drained_at,
            ended_at=d.ended_at,
            remaining=v.remaining,
            replacing=d.replacing,
            blocked_pods=list(d.blocked) if operator else [],
        )
