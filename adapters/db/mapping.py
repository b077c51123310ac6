"""Rows to entities and back, derived from the entities' fields (`adapters.shapes`): a column
per field of the same name; the exceptions (a column named otherwise, parts spread over columns,
what is not stored) are declared in `adapters.shapes.entities`. The domain knows nothing of the
tables."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from adapters.shapes.entities import SHAPES
from domain.model.cluster import Cluster, Node
from domain.model.fleet import Fleet, JobMove
from domain.model.job import Job, JobEvent, PodSet
from domain.model.principal import ApiToken
from domain.model.quota import (
    ClusterQueue,
    Cohort,
    LocalQueue,
    QuotaSettings,
    ResourceFlavor,
    WorkloadPriorityClass,
)
from domain.model.reservation import CapacityReservation

job_from_row = SHAPES.row_decoder(Job)
job_event_from_row = SHAPES.row_decoder(JobEvent)
node_from_row = SHAPES.row_decoder(Node)
token_from_row = SHAPES.row_decoder(ApiToken)
flavor_from_row = SHAPES.row_decoder(ResourceFlavor)
cluster_queue_from_row = SHAPES.row_decoder(ClusterQueue)
local_queue_from_row = SHAPES.row_decoder(LocalQueue)
cohort_from_row = SHAPES.row_decoder(Cohort)
quota_settings_from_row = SHAPES.row_decoder(QuotaSettings)
priority_class_from_row = SHAPES.row_decoder(WorkloadPriorityClass)
reservation_from_row = SHAPES.row_decoder(CapacityReservation)
pod_sets_from_column: Callable[[Any], tuple[PodSet, ...]] = SHAPES.decoder(tuple[PodSet, ...])

job_to_row: Callable[[Job], dict[str, Any]] = SHAPES.to_row
flavor_to_row: Callable[[ResourceFlavor], dict[str, Any]] = SHAPES.to_row
cluster_queue_to_row: Callable[[ClusterQueue], dict[str, Any]] = SHAPES.to_row
local_queue_to_row: Callable[[LocalQueue], dict[str, Any]] = SHAPES.to_row
cohort_to_row: Callable[[Cohort], dict[str, Any]] = SHAPES.to_row
quota_settings_to_row: Callable[[QuotaSettings], dict[str, Any]] = SHAPES.to_row
reservation_to_row: Callable[[CapacityReservation], dict[str, Any]] = SHAPES.to_row


def node_row(node: Node, at: datetime) -> dict[str, Any]:
    return {**SHAPES.to_row(node), "status_sync_at": at}


def cluster_from_row(row: sa.RowMapping, nodes: list[Node]) -> Cluster:
    return SHAPES.from_row(Cluster, row, nodes=nodes)  # type: ignore[no-any-return]


def cluster_row(cluster: Cluster) -> dict[str, Any]:
    """Every column but the id (nodes are rows of their own)."""
    row = SHAPES.to_row(cluster)
    del row["id"]
    return row


def estimate_row(job: Job, *, kept: bool) -> dict[str, Any]:
    """The estimate columns of a job (with `kept`, also its submission/admission estimates)."""
    full = job_to_row(job)
    names = [
        "estimated_start",
        "estimated_end",
        "estimate_reason",
        "estimate_warnings",
        "estimated_cost",
    ]
    if kept:
        names += ["submission_estimate", "admission_estimate"]
    return {"id": job.id, **{name: full[name] for name in names}}


def move_row(move: JobMove) -> dict[str, Any]:
    return SHAPES.to_row(move)


move_from_row = SHAPES.row_decoder(JobMove)
fleet_from_row = SHAPES.row_decoder(Fleet)
fleet_to_row: Callable[[Fleet], dict[str, Any]] = SHAPES.to_row
