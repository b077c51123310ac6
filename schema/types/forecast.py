"""A cluster's cost forecast from its schedule (`Cluster.costForecast`)."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

import strawberry

from domain.scheduling import cost


@strawberry.type(
    description="One hour of a cost forecast: what running and waiting work is expected to "
    "cost in it as scheduled, and the least and most it may, with each waiting job starting "
    "anywhere in its start window."
)
class CostHour:
    start: datetime
    cost: Decimal
    low: Decimal
    high: Decimal


@strawberry.type(description="A project's expected cost over a cost forecast.")
class ProjectCost:
    project_id: strawberry.ID
    cost: Decimal
    low: Decimal
    high: Decimal


@strawberry.type(
    description="What a cluster's running and waiting work (yours; the operator: everyone's) "
    "is expected to cost, from its schedule at today's prices: by hour from the current hour, "
    "and by project. Work runs from its estimated start to its estimated end (a service until "
    "the forecast's end); GPU-less work is not forecast."
)
class CostForecast:
    start: datetime
    end: datetime
    hours: list[CostHour]
    projects: list[ProjectCost]

    @classmethod
    def from_domain(cls, forecast: cost.CostForecast) -> CostForecast:
        return cls(
            start=forecast.start,
            end=forecast.end,
            hours=[
                CostHour(start=h.start, cost=h.cost, low=h.low, high=h.high) for h in forecast.hours
            ],
            projects=[
                ProjectCost(
                    project_id=strawberry.ID(p.project_id), cost=p.cost, low=p.low, high=p.high
                )
                for p in forecast.projects
            ],
        )
