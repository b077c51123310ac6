"""Rows to entities and back, written out explicitly: the domain knows nothing of the tables."""

from __future__ import annotations

import uuid
from datetime import datetime
from decimal import Decimal
from typing import Any

import sqlalchemy as sa

from domain.model.cluster import Cluster, ClusterStatus, HealthCheck, Node, NodeType, Platform
from domain.model.codec import (
    estimate_from_document,
    estimate_to_document,
    placements_from_document,
    placements_to_document,
    window_from_document,
    window_to_document,
)
from domain.model.ids import ClusterId, JobId, NodeId, ProjectId, TenantId, TokenId
from domain.model.job import (
    DeploymentType,
    Job,
    JobEvent,
    JobPriority,
    JobSource,
    JobStatus,
    JobType,
    Resources,
    SourceKind,
)
from domain.model.principal import ApiToken, Scope
from domain.model.quota import (
    ClusterQueue,
    Cohort,
    FlavorQuotas,
    LocalQueue,
    PreemptionPolicy,
    QueueingStrategy,
    ReclaimWithinCohort,
    ResourceFlavor,
    ResourceGroup,
    ResourceQuota,
    WithinClusterQueue,
    WorkloadPriorityClass,
)
from domain.model.reservation import CapacityReservation, ReservationId
from domain.model.secrets import Envelope


def _decimal(value: Any) -> Decimal | None:
    return None if value is None else Decimal(str(value))


def job_from_row(row: sa.RowMapping) -> Job:
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
            pod_count=row["pod_count"],
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
        placements=placements_from_document(row["placement"]),
        next_attempt_at=row["next_attempt_at"],
        queue_name=row["queue_name"],
        generation=row["generation"],
        window=window_from_document(row["window"]),
        depends_on=tuple(JobId(uuid.UUID(d)) for d in row["depends_on"]),
        reservation_id=row["reservation_id"],
        estimate_reason=row["estimate_reason"],
        estimate_warnings=tuple(row["estimate_warnings"]),
        submission_estimate=estimate_from_document(row["submission_estimate"]),
        admission_estimate=estimate_from_document(row["admission_estimate"]),
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
        "pod_count": r.pod_count,
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
        "placement": placements_to_document(job.placements),
        "next_attempt_at": job.next_attempt_at,
        "queue_name": job.queue_name,
        "generation": job.generation,
        "window": window_to_document(job.window),
        "depends_on": [str(d) for d in job.depends_on],
        "reservation_id": job.reservation_id,
        "estimate_reason": job.estimate_reason,
        "estimate_warnings": list(job.estimate_warnings),
        "submission_estimate": estimate_to_document(job.submission_estimate),
        "admission_estimate": estimate_to_document(job.admission_estimate),
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
        labels=row["labels"],
        internal_ip=row["internal_ip"],
        taints=row["taints"] or [],
        conditions=row["conditions"] or [],
        allocatable=row["allocatable"] or {},
        capacity=row["capacity"] or {},
        nfd_detected=row["nfd_detected"],
        detection_method=row["detection_method"],
        excluded=row["excluded"],
    )


def node_row(node: Node, at: datetime) -> dict[str, Any]:
    return {
        "id": node.id,
        "cluster_id": node.cluster_id,
        "name": node.name,
        "type": node.node_type.value,
        "gpu_type": node.gpu_type,
        "gpu_count": node.gpu_count,
        "cpu_cores": node.cpu_cores,
        "memory_gb": node.memory_gb,
        "status": node.ready,
        "schedulable": node.schedulable,
        "hardware_info": node.hardware_info,
        "labels": node.labels,
        "status_sync_at": at,
        "internal_ip": node.internal_ip,
        "taints": node.taints,
        "conditions": node.conditions,
        "allocatable": node.allocatable,
        "capacity": node.capacity,
        "nfd_detected": node.nfd_detected,
        "detection_method": node.detection_method,
        "excluded": node.excluded,
    }


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
        configuration=(Envelope.from_json(row["configuration"]) if row["configuration"] else None),
        context=row["context"],
        server_url=row["server_url"],
        ingress_url=row["ingress_url"],
        enable_master_node=row["enable_master_node"],
        not_available_since=row["not_available_since"],
        last_retry_time=row["last_retry_time"],
        retry_attempt=row["retry_attempt"],
        last_sync_at=row["last_sync_at"],
        health=tuple(
            HealthCheck(str(h["name"]), bool(h["ok"]), str(h["detail"]))
            for h in row["health"] or ()
        ),
        health_checked_at=row["health_checked_at"],
    )


def cluster_row(cluster: Cluster) -> dict[str, Any]:
    """Every column but the id (nodes are rows of their own)."""
    return {
        "name": cluster.name,
        "platform": cluster.platform.value,
        "status": cluster.status.value,
        "reason": cluster.reason,
        "settings": cluster.settings,
        "created_at": cluster.created_at,
        "updated_at": cluster.updated_at,
        "configuration": cluster.configuration.to_json() if cluster.configuration else None,
        "context": cluster.context,
        "server_url": cluster.server_url,
        "ingress_url": cluster.ingress_url,
        "enable_master_node": cluster.enable_master_node,
        "not_available_since": cluster.not_available_since,
        "last_retry_time": cluster.last_retry_time,
        "retry_attempt": cluster.retry_attempt,
        "last_sync_at": cluster.last_sync_at,
        "health": [{"name": h.name, "ok": h.ok, "detail": h.detail} for h in cluster.health],
        "health_checked_at": cluster.health_checked_at,
    }


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
        expires_at=row["expires_at"],
    )


# --- Kueue's objects and reservations --------------------------------------------------------


def flavor_from_row(row: sa.RowMapping) -> ResourceFlavor:
    return ResourceFlavor(
        cluster_id=ClusterId(row["cluster_id"]),
        name=row["name"],
        node_labels=dict(row["node_labels"]),
        created_at=row["created_at"],
        updated_at=row["updated_at"],
    )


def flavor_to_row(flavor: ResourceFlavor) -> dict[str, Any]:
    return {
        "cluster_id": flavor.cluster_id,
        "name": flavor.name,
        "node_labels": dict(flavor.node_labels),
        "created_at": flavor.created_at,
        "updated_at": flavor.updated_at,
    }


def resource_groups_to_document(groups: tuple[ResourceGroup, ...]) -> list[dict[str, Any]]:
    return [
        {
            "covered_resources": list(group.covered_resources),
            "flavors": [
                {
                    "flavor": fq.flavor,
                    "resources": [
                        {
                            "name": q.name,
                            "nominal_quota": q.nominal_quota,
                            "borrowing_limit": q.borrowing_limit,
                            "lending_limit": q.lending_limit,
                        }
                        for q in fq.resources
                    ],
                }
                for fq in group.flavors
            ],
        }
        for group in groups
    ]


def resource_groups_from_document(doc: list[dict[str, Any]]) -> tuple[ResourceGroup, ...]:
    return tuple(
        ResourceGroup(
            covered_resources=tuple(group["covered_resources"]),
            flavors=tuple(
                FlavorQuotas(
                    flavor=fq["flavor"],
                    resources=tuple(
                        ResourceQuota(
                            name=q["name"],
                            nominal_quota=q["nominal_quota"],
                            borrowing_limit=q["borrowing_limit"],
                            lending_limit=q["lending_limit"],
                        )
                        for q in fq["resources"]
                    ),
                )
                for fq in group["flavors"]
            ),
        )
        for group in doc
    )


def cluster_queue_from_row(row: sa.RowMapping) -> ClusterQueue:
    return ClusterQueue(
        cluster_id=ClusterId(row["cluster_id"]),
        name=row["name"],
        cohort=row["cohort"],
        queueing_strategy=QueueingStrategy(row["queueing_strategy"]),
        resource_groups=resource_groups_from_document(row["resource_groups"]),
        preemption=PreemptionPolicy(
            WithinClusterQueue(row["within_cluster_queue"]),
            ReclaimWithinCohort(row["reclaim_within_cohort"]),
        ),
        created_at=row["created_at"],
        updated_at=row["updated_at"],
    )


def cluster_queue_to_row(queue: ClusterQueue) -> dict[str, Any]:
    return {
        "cluster_id": queue.cluster_id,
        "name": queue.name,
        "cohort": queue.cohort,
        "queueing_strategy": queue.queueing_strategy.value,
        "resource_groups": resource_groups_to_document(queue.resource_groups),
        "within_cluster_queue": queue.preemption.within_cluster_queue.value,
        "reclaim_within_cohort": queue.preemption.reclaim_within_cohort.value,
        "created_at": queue.created_at,
        "updated_at": queue.updated_at,
    }


def local_queue_from_row(row: sa.RowMapping) -> LocalQueue:
    return LocalQueue(
        cluster_id=ClusterId(row["cluster_id"]),
        name=row["name"],
        namespace=row["namespace"],
        tenant_id=TenantId(row["tenant_id"]),
        cluster_queue=row["cluster_queue"],
        created_at=row["created_at"],
    )


def local_queue_to_row(queue: LocalQueue) -> dict[str, Any]:
    return {
        "cluster_id": queue.cluster_id,
        "namespace": queue.namespace,
        "name": queue.name,
        "tenant_id": queue.tenant_id,
        "cluster_queue": queue.cluster_queue,
        "created_at": queue.created_at,
    }


def cohort_from_row(row: sa.RowMapping) -> Cohort:
    return Cohort(
        cluster_id=ClusterId(row["cluster_id"]),
        name=row["name"],
        description=row["description"],
        created_at=row["created_at"],
    )


def priority_class_from_row(row: sa.RowMapping) -> WorkloadPriorityClass:
    return WorkloadPriorityClass(
        priority=JobPriority(row["priority"]),
        value=row["value"],
        description=row["description"],
        updated_at=row["updated_at"],
    )


def reservation_from_row(row: sa.RowMapping) -> CapacityReservation:
    return CapacityReservation(
        id=ReservationId(row["id"]),
        cluster_id=ClusterId(row["cluster_id"]),
        tenant_id=TenantId(row["tenant_id"]),
        name=row["name"],
        cluster_queue=row["cluster_queue"],
        flavor=row["flavor"],
        gpu_count=row["gpu_count"],
        start=row["start"],
        end=row["end"],
        created_at=row["created_at"],
        cancelled_at=row["cancelled_at"],
    )


def reservation_to_row(reservation: CapacityReservation) -> dict[str, Any]:
    return {
        "id": reservation.id,
        "cluster_id": reservation.cluster_id,
        "tenant_id": reservation.tenant_id,
        "name": reservation.name,
        "cluster_queue": reservation.cluster_queue,
        "flavor": reservation.flavor,
        "gpu_count": reservation.gpu_count,
        "start": reservation.start,
        "end": reservation.end,
        "created_at": reservation.created_at,
        "cancelled_at": reservation.cancelled_at,
    }


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
