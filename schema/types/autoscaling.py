"""Deployments that scale themselves: their bounds and target, and the steps they take."""

from __future__ import annotations

from datetime import datetime

import strawberry

from domain.model import autoscaling as model
from domain.model.deployment import Deployment
from schema.types.derive import derive

strawberry.enum(
    model.ScaleMetric,
    description="IN_FLIGHT: requests in flight per replica (waiting for a slot, prefilling or "
    "decoding); QUEUE_TIME: seconds a request waits for a slot of its replica.",
)


@strawberry.type(description="How a deployment scales itself.")
class Autoscaling:
    min_replicas: int = strawberry.field(
        description="At least this many; 0: it goes to zero when idle and back on the first "
        "request (simulated clusters only)."
    )
    max_replicas: int
    metric: model.ScaleMetric
    target: float = strawberry.field(
        description="The metric it keeps each replica at: requests, or seconds of queue time."
    )
    scale_to_zero_after_seconds: int = strawberry.field(
        description="Seconds without a request before it goes to zero (minReplicas 0)."
    )
    scale_down_delay_seconds: int = strawberry.field(
        description="Seconds every look must ask for fewer replicas before it scales down; "
        "it scales up at once."
    )

    @classmethod
    def from_domain(cls, a: model.Autoscaling) -> Autoscaling:
        return derive(cls, a)


@strawberry.input(
    description="How a deployment scales itself: the Horizontal Pod Autoscaler's rule "
    "(replicas = ceil(current x metric / target), 10 % tolerance, scale-down after a delay)."
)
class AutoscalingInput:
    min_replicas: int = strawberry.field(
        description="0 to 64; 0 (simulated clusters only) scales to zero when idle."
    )
    max_replicas: int = strawberry.field(description="1 to 64, at least minReplicas.")
    metric: model.ScaleMetric = model.ScaleMetric.IN_FLIGHT
    target: float = strawberry.field(
        description="Requests in flight per replica (IN_FLIGHT), or seconds (QUEUE_TIME)."
    )
    scale_to_zero_after_seconds: int = model.DEFAULT_SCALE_TO_ZERO_AFTER_SECONDS
    scale_down_delay_seconds: int = model.DEFAULT_SCALE_DOWN_DELAY_SECONDS

    def to_domain(self) -> model.Autoscaling:
        return model.Autoscaling(
            min_replicas=self.min_replicas,
            max_replicas=self.max_replicas,
            metric=self.metric,
            target=self.target,
            scale_to_zero_after_seconds=self.scale_to_zero_after_seconds,
            scale_down_delay_seconds=self.scale_down_delay_seconds,
        )


@strawberry.type(description="A change of a deployment's replicas that its autoscaler made.")
class ScalingStep:
    deployment_id: strawberry.ID
    deployment_name: str
    at: datetime
    from_replicas: int
    to_replicas: int
    reason: str = strawberry.field(
        description='Why, in words: e.g. "12.0 requests in flight per replica, target 4", '
        '"no request for 300 s", "a request came while no replica served".'
    )
    metric_value: float | None = strawberry.field(
        description="The metric that asked for it, when one did."
    )

    @classmethod
    def from_domain(cls, step: model.ScalingStep, d: Deployment) -> ScalingStep:
        return derive(cls, step, deployment_id=strawberry.ID(str(d.id)), deployment_name=d.name)
