"""Rows to entities and back, written out explicitly: the domain knows nothing of the tables."""

from __future__ import annotations

import uuid
from decimal import Decimal
from typing import Any

import sqlalchemy as sa

from domain.model.cluster import Cluster, ClusterStatus, Node, NodeType, Platform
from domain.model.ids import ClusterId, JobId, NodeId, ProjectId, TenantId, TokenId
from domain.model.job import (
    DeploymentType,
    Job,
    JobEvent,
    JobPriority,
    JobSource,
    JobStatus,
    JobType,
    Placement,
    Resources,
    SourceKind,
)
from domain.model.principal import ApiToken, Scope


def _decimal(value: Any) -> Decimal | None:
    return None if value is None else Decimal(str(value))


def job_from_row(row: sa.RowMapping) -> Job:
    placement = row["placement"]
    return Job(
        id=JobId(row["id"]),
        name=row["name"],
        tenant_id=TenantId(row["tenant_id"]),
        project_id=ProjectId(row["project_id"]),
        cluster_id=ClusterId(row["cluster_id"]),
        source=JobSource(SourceKind(row["source_kind"]), row["source_id"]),
        job_type=JobType(row["job_type"]),
        deployment_type=DeploymentType(row["deployment_type"]),
        spec=row["spec"],
        resources=Resources(
            gpu_type=row["gpu_type"],
            gpu_count=row["gpu_count"],
            cpu_cores=row["cpu_cores"],
            memory_gb=row["memory_gb"],
            storage_gb=row["storage_gb"],
        ),
        estimated_duration_seconds=row["estimated_duration_seconds"],
        max_duration_seconds=row["max_duration_seconds"],
        deadline=row["deadline"],
        priority=JobPriority(row["priority"]),
        preemptible=row["preemptible"],
        status=JobStatus(row["status"]),
        status_message=row["status_message"],
        retry_count=row["retry_count"],
        max_retries=row["max_retries"],
        estimated_start=row["estimated_start"],
        estimated_end=row["estimated_end"],
        actual_start=row["actual_start"],
        actual_end=row["actual_end"],
        estimated_cost=_decimal(row["estimated_cost"]),
        actual_cost=_decimal(row["actual_cost"]),
        budget_limit=_decimal(row["budget_limit"]),
        outputs=row["outputs"],
        idempotency_key=row["idempotency_key"],
        placement=(
            Placement(placement["node"], tuple(placement["gpu_indices"]), placement.get("flavor"))
            if placement
            else None
        ),
        next_attempt_at=row["next_attempt_at"],
        version=row["version"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
    )


def job_to_row(job: Job) -> dict[str, Any]:
    r = job.resources
    return {
        "id": job.id,
        "name": job.name,
        "tenant_id": job.tenant_id,
        "project_id": job.project_id,
        "cluster_id": job.cluster_id,
        "source_kind": job.source.kind.value,
        "source_id": job.source.source_id,
        "job_type": job.job_type.value,
        "deployment_type": job.deployment_type.value,
        "spec": job.spec,
        "gpu_type": r.gpu_type,
        "gpu_count": r.gpu_count,
        "cpu_cores": r.cpu_cores,
        "memory_gb": r.memory_gb,
        "storage_gb": r.storage_gb,
        "estimated_duration_seconds": job.estimated_duration_seconds,
        "max_duration_seconds": job.max_duration_seconds,
        "deadline": job.deadline,
        "priority": job.priority.value,
        "preemptible": job.preemptible,
        "status": job.status.value,
        "status_message": job.status_message,
        "retry_count": job.retry_count,
        "max_retries": job.max_retries,
        "estimated_start": job.estimated_start,
        "estimated_end": job.estimated_end,
        "actual_start": job.actual_start,
        "actual_end": job.actual_end,
        "estimated_cost": job.estimated_cost,
        "actual_cost": job.actual_cost,
        "budget_limit": job.budget_limit,
        "outputs": job.outputs,
        "idempotency_key": job.idempotency_key,
        "placement": (
            {
                "node": job.placement.node,
                "gpu_indices": list(job.placement.gpu_indices),
                "flavor": job.placement.flavor,
            }
            if job.placement
            else None
        ),
        "next_attempt_at": job.next_attempt_at,
        "version": job.version,
        "created_at": job.created_at,
        "updated_at": job.updated_at,
    }


def job_event_from_row(row: sa.RowMapping) -> JobEvent:
    return JobEvent(
        job_id=JobId(row["job_id"]),
        attempt=row["attempt"],
        from_status=JobStatus(row["from_status"]) if row["from_status"] else None,
        to_status=JobStatus(row["to_status"]),
        reason=row["reason"],
        at=row["at"],
    )


def node_from_row(row: sa.RowMapping) -> Node:
    return Node(
        id=NodeId(row["id"]),
        cluster_id=ClusterId(row["cluster_id"]),
        name=row["name"],
        node_type=NodeType(row["type"]),
        gpu_type=row["gpu_type"],
        gpu_count=row["gpu_count"],
        cpu_cores=row["cpu_cores"],
        memory_gb=row["memory_gb"],
        ready=row["status"],
        schedulable=row["schedulable"],
        hardware_info=row["hardware_info"],
    )


def cluster_from_row(row: sa.RowMapping, nodes: list[Node]) -> Cluster:
    return Cluster(
        id=ClusterId(row["id"]),
        name=row["name"],
        platform=Platform(row["platform"]),
        status=ClusterStatus(row["status"]),
        reason=row["reason"],
        settings=row["settings"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        nodes=nodes,
    )


def token_from_row(row: sa.RowMapping) -> ApiToken:
    projects = row["project_ids"]
    return ApiToken(
        id=TokenId(row["id"]),
        tenant_id=TenantId(row["tenant_id"]),
        name=row["name"],
        secret_hash=row["secret_hash"],
        scopes=frozenset(Scope(s) for s in row["scopes"]),
        project_ids=(
            None if projects is None else frozenset(ProjectId(uuid.UUID(p)) for p in projects)
        ),
        created_at=row["created_at"],
        revoked_at=row["revoked_at"],
    )
