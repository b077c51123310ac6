"""Typed identifiers, so a job id can never be passed where a cluster id is expected."""

from __future__ import annotations

import uuid
from typing import NewType

JobId = NewType("JobId", uuid.UUID)
ClusterId = NewType("ClusterId", uuid.UUID)
NodeId = NewType("NodeId", uuid.UUID)
TenantId = NewType("TenantId", uuid.UUID)
ProjectId = NewType("ProjectId", uuid.UUID)
TokenId = NewType("TokenId", uuid.UUID)
EventId = NewType("EventId", uuid.UUID)


def new_job_id() -> JobId:
    return JobId(uuid.uuid4())


def new_cluster_id() -> ClusterId:
    return ClusterId(uuid.uuid4())


def new_node_id() -> NodeId:
    return NodeId(uuid.uuid4())


def new_token_id() -> TokenId:
    return TokenId(uuid.uuid4())


def new_event_id() -> EventId:
    return EventId(uuid.uuid4())


DeploymentId = NewType("DeploymentId", uuid.UUID)
BenchmarkId = NewType("BenchmarkId", uuid.UUID)


def new_deployment_id() -> DeploymentId:
    return DeploymentId(uuid.uuid4())


def new_benchmark_id() -> BenchmarkId:
    return BenchmarkId(uuid.uuid4())


FleetId = NewType("FleetId", uuid.UUID)


def new_fleet_id() -> FleetId:
    return FleetId(uuid.uuid4())
