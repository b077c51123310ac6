"""Jobs as plain JSON documents, for the outbox: what a subscriber in any process decodes.

Only JSON types appear in a document (strings, numbers, booleans, lists, objects, null), so the
same payload travels through the database and through Redis without pickling.
"""

from __future__ import annotations

from datetime import datetime, time
from decimal import Decimal
from typing import Any
from uuid import UUID

from domain.model.cluster import ClusterStatus, Node, NodeType
from domain.model.events import Change, ClusterChanged, ClusterChangeKind, ClusterState
from domain.model.ids import ClusterId, JobId, NodeId, ProjectId, TenantId
from domain.model.job import (
    ChangeKind,
    DeploymentType,
    Estimate,
    Job,
    JobChanged,
    JobEvent,
    JobPriority,
    JobSource,
    JobStatus,
    JobType,
    Placement,
    Resources,
    SourceKind,
    TimeWindow,
)
from domain.model.serving_codec import serving_change_from_document, serving_change_to_document
from domain.model.timeline import diff_from_document, diff_to_document


def _dt(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _parse_dt(value: Any) -> datetime | None:
    return datetime.fromisoformat(value) if value is not None else None


def _dec(value: Decimal | None) -> str | None:
    return str(value) if value is not None else None


def _parse_dec(value: Any) -> Decimal | None:
    return Decimal(value) if value is not None else None


def window_to_document(window: TimeWindow | None) -> dict[str, str] | None:
    if window is None:
        return None
    return {"start": window.start.strftime("%H:%M"), "end": window.end.strftime("%H:%M")}


def window_from_document(doc: Any) -> TimeWindow | None:
    if not doc:
        return None
    return TimeWindow(time.fromisoformat(doc["start"]), time.fromisoformat(doc["end"]))


def estimate_to_document(estimate: Estimate | None) -> dict[str, Any] | None:
    if estimate is None:
        return None
    return {
        "start": _dt(estimate.start),
        "end": _dt(estimate.end),
        "reason": estimate.reason,
        "warnings": list(estimate.warnings),
        "windows": [[c, _dt(earliest), _dt(latest)] for c, earliest, latest in estimate.windows],
    }


def estimate_from_document(doc: Any) -> Estimate | None:
    if not doc:
        return None
    windows: list[tuple[float, datetime, datetime | None]] = []
    for confidence, earliest, latest in doc.get("windows", ()):
        found = _parse_dt(earliest)
        if found is not None:
            windows.append((float(confidence), found, _parse_dt(latest)))
    return Estimate(
        _parse_dt(doc["start"]),
        _parse_dt(doc["end"]),
        doc["reason"],
        tuple(doc["warnings"]),
        tuple(windows),
    )


def job_to_document(job: Job) -> dict[str, Any]:
    r = job.resources
    return {
        "id": str(job.id),
        "name": job.name,
        "tenant_id": str(job.tenant_id),
        "project_id": str(job.project_id),
        "cluster_id": str(job.cluster_id),
        "source": {"kind": job.source.kind.value, "source_id": job.source.source_id},
        "job_type": job.job_type.value,
        "deployment_type": job.deployment_type.value,
        "spec": job.spec,
        "resources": {
            "gpu_type": r.gpu_type,
            "gpu_count": r.gpu_count,
            "cpu_cores": r.cpu_cores,
            "memory_gb": r.memory_gb,
            "storage_gb": r.storage_gb,
            "pod_count": r.pod_count,
        },
        "estimated_duration_seconds": job.estimated_duration_seconds,
        "max_duration_seconds": job.max_duration_seconds,
        "deadline": _dt(job.deadline),
        "priority": job.priority.value,
        "preemptible": job.preemptible,
        "status": job.status.value,
        "status_message": job.status_message,
        "retry_count": job.retry_count,
        "max_retries": job.max_retries,
        "estimated_start": _dt(job.estimated_start),
        "estimated_end": _dt(job.estimated_end),
        "actual_start": _dt(job.actual_start),
        "actual_end": _dt(job.actual_end),
        "estimated_cost": _dec(job.estimated_cost),
        "actual_cost": _dec(job.actual_cost),
        "budget_limit": _dec(job.budget_limit),
        "outputs": job.outputs,
        "idempotency_key": job.idempotency_key,
        "placement": placements_to_document(job.placements),
        "next_attempt_at": _dt(job.next_attempt_at),
        "queue_name": job.queue_name,
        "generation": job.generation,
        "reservation_id": str(job.reservation_id) if job.reservation_id else None,
        "window": window_to_document(job.window),
        "depends_on": [str(d) for d in job.depends_on],
        "estimate_reason": job.estimate_reason,
        "estimate_warnings": list(job.estimate_warnings),
        "submission_estimate": estimate_to_document(job.submission_estimate),
        "admission_estimate": estimate_to_document(job.admission_estimate),
        "created_at": _dt(job.created_at),
        "updated_at": _dt(job.updated_at),
        "version": job.version,
    }


def placements_to_document(placements: tuple[Placement, ...]) -> Any:
    """None without placements, one object for one pod (the form stored before pod sets), a
    list of them for several."""
    docs = [
        {"node": p.node, "gpu_indices": list(p.gpu_indices), "flavor": p.flavor} for p in placements
    ]
    if not docs:
        return None
    return docs[0] if len(docs) == 1 else docs


def placements_from_document(doc: Any) -> tuple[Placement, ...]:
    if not doc:
        return ()
    docs = doc if isinstance(doc, list) else [doc]
    return tuple(Placement(d["node"], tuple(d["gpu_indices"]), d.get("flavor")) for d in docs)


def job_from_document(doc: dict[str, Any]) -> Job:
    res = doc["resources"]
    created_at = _parse_dt(doc["created_at"])
    updated_at = _parse_dt(doc["updated_at"])
    assert created_at is not None and updated_at is not None
    return Job(
        id=JobId(UUID(doc["id"])),
        name=doc["name"],
        tenant_id=TenantId(UUID(doc["tenant_id"])),
        project_id=ProjectId(UUID(doc["project_id"])),
        cluster_id=ClusterId(UUID(doc["cluster_id"])),
        source=JobSource(SourceKind(doc["source"]["kind"]), doc["source"]["source_id"]),
        job_type=JobType(doc["job_type"]),
        deployment_type=DeploymentType(doc["deployment_type"]),
        spec=doc["spec"],
        resources=Resources(
            gpu_type=res["gpu_type"],
            gpu_count=res["gpu_count"],
            cpu_cores=res["cpu_cores"],
            memory_gb=res["memory_gb"],
            storage_gb=res["storage_gb"],
            pod_count=res.get("pod_count", 1),
        ),
        estimated_duration_seconds=doc["estimated_duration_seconds"],
        max_duration_seconds=doc["max_duration_seconds"],
        deadline=_parse_dt(doc["deadline"]),
        priority=JobPriority(doc["priority"]),
        preemptible=doc["preemptible"],
        status=JobStatus(doc["status"]),
        status_message=doc["status_message"],
        retry_count=doc["retry_count"],
        max_retries=doc["max_retries"],
        estimated_start=_parse_dt(doc["estimated_start"]),
        estimated_end=_parse_dt(doc["estimated_end"]),
        actual_start=_parse_dt(doc["actual_start"]),
        actual_end=_parse_dt(doc["actual_end"]),
        estimated_cost=_parse_dec(doc["estimated_cost"]),
        actual_cost=_parse_dec(doc["actual_cost"]),
        budget_limit=_parse_dec(doc["budget_limit"]),
        outputs=doc["outputs"],
        idempotency_key=doc["idempotency_key"],
        placements=placements_from_document(doc.get("placement")),
        next_attempt_at=_parse_dt(doc.get("next_attempt_at")),
        queue_name=doc.get("queue_name", "default"),
        generation=doc.get("generation", 0),
        reservation_id=UUID(doc["reservation_id"]) if doc.get("reservation_id") else None,
        window=window_from_document(doc.get("window")),
        depends_on=tuple(JobId(UUID(d)) for d in doc.get("depends_on", ())),
        estimate_reason=doc.get("estimate_reason"),
        estimate_warnings=tuple(doc.get("estimate_warnings", ())),
        submission_estimate=estimate_from_document(doc.get("submission_estimate")),
        admission_estimate=estimate_from_document(doc.get("admission_estimate")),
        created_at=created_at,
        updated_at=updated_at,
        version=doc.get("version", 0),
    )


def event_to_document(event: JobEvent) -> dict[str, Any]:
    return {
        "job_id": str(event.job_id),
        "attempt": event.attempt,
        "from_status": event.from_status.value if event.from_status else None,
        "to_status": event.to_status.value,
        "reason": event.reason,
        "at": event.at.isoformat(),
    }


def event_from_document(doc: dict[str, Any]) -> JobEvent:
    at = _parse_dt(doc["at"])
    assert at is not None
    return JobEvent(
        job_id=JobId(UUID(doc["job_id"])),
        attempt=doc["attempt"],
        from_status=JobStatus(doc["from_status"]) if doc["from_status"] else None,
        to_status=JobStatus(doc["to_status"]),
        reason=doc["reason"],
        at=at,
    )


def change_to_document(change: Change) -> dict[str, Any]:
    if not isinstance(change, JobChanged | ClusterChanged):
        return serving_change_to_document(change)
    if isinstance(change, ClusterChanged):
        return {
            "type": "cluster",
            "kind": change.kind.value,
            "cluster_id": str(change.cluster_id),
            "timeline": diff_to_document(change.timeline) if change.timeline else None,
            "cluster": state_to_document(change.cluster) if change.cluster else None,
        }
    return {
        "kind": change.kind.value,
        "job": job_to_document(change.job),
        "transition": event_to_document(change.transition) if change.transition else None,
        "previous_priority": change.previous_priority.value if change.previous_priority else None,
    }


def change_from_document(doc: dict[str, Any]) -> Change:
    if doc.get("type") in ("deployment", "benchmark"):
        return serving_change_from_document(doc)
    if doc.get("type") == "cluster":
        return ClusterChanged(
            kind=ClusterChangeKind(doc["kind"]),
            cluster_id=ClusterId(UUID(doc["cluster_id"])),
            timeline=diff_from_document(doc["timeline"]) if doc.get("timeline") else None,
            cluster=state_from_document(doc["cluster"]) if doc.get("cluster") else None,
        )
    transition = doc.get("transition")
    return JobChanged(
        kind=ChangeKind(doc["kind"]),
        job=job_from_document(doc["job"]),
        transition=event_from_document(transition) if transition else None,
        previous_priority=(
            JobPriority(doc["previous_priority"]) if doc.get("previous_priority") else None
        ),
    )


def node_to_document(node: Node) -> dict[str, Any]:
    return {
        "id": str(node.id),
        "cluster_id": str(node.cluster_id),
        "name": node.name,
        "node_type": node.node_type.value,
        "gpu_type": node.gpu_type,
        "gpu_count": node.gpu_count,
        "cpu_cores": node.cpu_cores,
        "memory_gb": node.memory_gb,
        "ready": node.ready,
        "schedulable": node.schedulable,
        "hardware_info": node.hardware_info,
        "labels": node.labels,
        "internal_ip": node.internal_ip,
        "taints": node.taints,
        "conditions": node.conditions,
        "allocatable": node.allocatable,
        "capacity": node.capacity,
        "nfd_detected": node.nfd_detected,
        "detection_method": node.detection_method,
        "excluded": node.excluded,
    }


def node_from_document(doc: dict[str, Any]) -> Node:
    return Node(
        id=NodeId(UUID(doc["id"])),
        cluster_id=ClusterId(UUID(doc["cluster_id"])),
        name=doc["name"],
        node_type=NodeType(doc["node_type"]),
        gpu_type=doc["gpu_type"],
        gpu_count=int(doc["gpu_count"]),
        cpu_cores=float(doc["cpu_cores"]),
        memory_gb=float(doc["memory_gb"]),
        ready=bool(doc["ready"]),
        schedulable=bool(doc["schedulable"]),
        hardware_info=dict(doc.get("hardware_info") or {}),
        labels=dict(doc.get("labels") or {}),
        internal_ip=doc.get("internal_ip"),
        taints=list(doc.get("taints") or []),
        conditions=list(doc.get("conditions") or []),
        allocatable=dict(doc.get("allocatable") or {}),
        capacity=dict(doc.get("capacity") or {}),
        nfd_detected=bool(doc.get("nfd_detected", False)),
        detection_method=str(doc.get("detection_method", "allocatable")),
        excluded=bool(doc.get("excluded", False)),
    )


def state_to_document(state: ClusterState) -> dict[str, Any]:
    return {
        "status": state.status.value,
        "reason": state.reason,
        "not_available_since": _dt(state.not_available_since),
        "nodes": [node_to_document(n) for n in state.nodes],
    }


def state_from_document(doc: dict[str, Any]) -> ClusterState:
    return ClusterState(
        status=ClusterStatus(doc["status"]),
        reason=doc.get("reason"),
        not_available_since=_parse_dt(doc.get("not_available_since")),
        nodes=tuple(node_from_document(n) for n in doc.get("nodes") or ()),
    )
