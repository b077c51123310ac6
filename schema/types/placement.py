"""Where a workload sits: a node, GPU indices, and the flavor it was admitted against."""

from __future__ import annotations

import strawberry

from domain.model import job as model
from schema.types.derive import derive


@strawberry.type(description="The node and GPU indices a job holds: its rows on the timeline.")
class Placement:
    node: str
    gpu_indices: list[int]
    flavor: str | None = strawberry.field(
        description="The ResourceFlavor whose quota the job was admitted against."
    )

    @classmethod
    def from_domain(cls, placement: model.Placement) -> Placement:
        return derive(cls, placement)
