"""What a user may submit, checked before anything is stored.

`validate_submission` returns every problem at once, each naming the input field by its dotted
domain path (`resources.gpu_count`); the GraphQL layer renders those paths in its own casing.
Checks that need the target cluster (GPU types it has, the largest node) run against the
cluster's current inventory.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

from domain.errors import FieldIssue
from domain.model.cluster import Cluster, ClusterStatus
from domain.model.ids import ClusterId, ProjectId
from domain.model.job import (
    DeploymentType,
    JobPriority,
    JobType,
    Resources,
    SourceKind,
)
from domain.names import name_problem

MAX_SPEC_BYTES = 64 * 1024
MAX_IDEMPOTENCY_KEY = 128
MAX_RETRIES_LIMIT = 10
MAX_DURATION_SECONDS = 366 * 24 * 3600
MAX_SOURCE_ID = 255
MAX_BUDGET = Decimal("9999999999.9999")
"""What a job's money columns hold: 14 digits, 4 after the point."""


def text_problem(value: str) -> str | None:
    """Text every store and every client can carry: no NUL, no lone UTF-16 surrogate."""
    if "\x00" in value:
        return "must not contain NUL characters"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "must be valid Unicode text (it holds a lone surrogate)"
    return None


def _json_text_problem(value: Any) -> str | None:
    if isinstance(value, str):
        return text_problem(value)
    if isinstance(value, dict):
        for key, item in value.items():
            problem = _json_text_problem(key) or _json_text_problem(item)
            if problem:
                return problem
    if isinstance(value, list):
        for item in value:
            problem = _json_text_problem(item)
            if problem:
                return problem
    return None


@dataclass(frozen=True)
class JobSubmission:
    name: str
    project_id: ProjectId
    cluster_id: ClusterId
    job_type: JobType
    deployment_type: DeploymentType
    spec: dict[str, Any] = field(default_factory=dict)
    resources: Resources = field(default_factory=Resources)
    source_kind: SourceKind = SourceKind.DIRECT
    source_id: str | None = None
    estimated_duration_seconds: int | None = None
    max_duration_seconds: int | None = None
    deadline: datetime | None = None
    priority: JobPriority = JobPriority.NORMAL
    preemptible: bool = False
    max_retries: int = 3
    budget_limit: Decimal | None = None
    idempotency_key: str | None = None


def validate_submission(
    sub: JobSubmission, cluster: Cluster | None, now: datetime
) -> list[FieldIssue]:
    issues: list[FieldIssue] = []

    def bad(path: str, message: str, code: str = "INVALID") -> None:
        issues.append(FieldIssue(path, message, code))

    problem = text_problem(sub.name) or name_problem(sub.name)
    if problem:
        bad("name", problem, "INVALID_NAME")

    if not isinstance(sub.spec, dict):
        bad("spec", "must be a JSON object")
    else:
        try:
            size = len(json.dumps(sub.spec, allow_nan=False).encode())
        except (TypeError, ValueError):
            bad("spec", "must be plain JSON (no NaN or Infinity)")
        else:
            if size > MAX_SPEC_BYTES:
                bad(
                    "spec",
                    f"must be at most {MAX_SPEC_BYTES} bytes of JSON (got {size})",
                    "TOO_LARGE",
                )
            elif problem := _json_text_problem(sub.spec):
                bad("spec", f"text in it {problem}")

    if sub.source_kind is SourceKind.DIRECT:
        if sub.source_id is not None:
            bad("source.source_id", "must be empty for DIRECT jobs")
    elif not sub.source_id:
        bad("source.source_id", f"is required for {sub.source_kind.value} jobs", "REQUIRED")
    elif len(sub.source_id) > MAX_SOURCE_ID:
        bad("source.source_id", f"must be at most {MAX_SOURCE_ID} characters")
    elif problem := text_problem(sub.source_id):
        bad("source.source_id", problem)

    if sub.idempotency_key is not None and not (
        0 < len(sub.idempotency_key) <= MAX_IDEMPOTENCY_KEY
        and sub.idempotency_key.isprintable()
        and text_problem(sub.idempotency_key) is None
    ):
        bad("idempotency_key", f"must be 1 to {MAX_IDEMPOTENCY_KEY} printable characters")

    if sub.estimated_duration_seconds is not None and not (
        0 < sub.estimated_duration_seconds <= MAX_DURATION_SECONDS
    ):
        bad("estimated_duration_seconds", f"must be between 1 and {MAX_DURATION_SECONDS}")
    if sub.max_duration_seconds is not None:
        if not 0 < sub.max_duration_seconds <= MAX_DURATION_SECONDS:
            bad("max_duration_seconds", f"must be between 1 and {MAX_DURATION_SECONDS}")
        elif (
            sub.estimated_duration_seconds is not None
            and sub.max_duration_seconds < sub.estimated_duration_seconds
        ):
            bad(
                "max_duration_seconds",
                "must not be shorter than estimated_duration_seconds",
                "SHORTER_THAN_ESTIMATE",
            )
    if sub.deadline is not None:
        if sub.deadline.tzinfo is None:
            bad("deadline", "must carry a timezone")
        elif sub.deadline <= now:
            bad("deadline", "is in the past", "IN_THE_PAST")

    if not 0 <= sub.max_retries <= MAX_RETRIES_LIMIT:
        bad("max_retries", f"must be between 0 and {MAX_RETRIES_LIMIT}")
    if sub.budget_limit is not None and (
        not sub.budget_limit.is_finite() or not 0 <= sub.budget_limit <= MAX_BUDGET
    ):
        bad("budget_limit", f"must be an amount from 0 to {MAX_BUDGET}")
    if sub.priority is JobPriority.CRITICAL and sub.preemptible:
        bad("preemptible", "CRITICAL jobs are never preempted")

    issues.extend(_resource_issues(sub.resources, cluster))
    if cluster is None:
        bad("cluster_id", "no such cluster", "NOT_FOUND")
    elif cluster.status is ClusterStatus.DELETING:
        bad("cluster_id", "the cluster is being deleted", "CLUSTER_DELETING")
    return issues


def _resource_issues(res: Resources, cluster: Cluster | None) -> list[FieldIssue]:
    issues: list[FieldIssue] = []
    if res.gpu_count < 0:
        issues.append(FieldIssue("resources.gpu_count", "must not be negative"))
    if not res.cpu_cores > 0:
        issues.append(FieldIssue("resources.cpu_cores", "must be greater than 0"))
    if not res.memory_gb > 0:
        issues.append(FieldIssue("resources.memory_gb", "must be greater than 0"))
    if res.storage_gb is not None and res.storage_gb < 0:
        issues.append(FieldIssue("resources.storage_gb", "must not be negative"))
    if res.gpu_type is not None and (len(res.gpu_type) > 100 or text_problem(res.gpu_type)):
        issues.append(FieldIssue("resources.gpu_type", "is not a GPU type name"))
        return issues
    if res.gpu_count > 0 and not res.gpu_type:
        issues.append(
            FieldIssue("resources.gpu_type", "is required when gpu_count is above 0", "REQUIRED")
        )
    if cluster is None or issues:
        return issues

    if res.gpu_count > 0 and res.gpu_type:
        if res.gpu_type not in cluster.gpu_types:
            have = ", ".join(sorted(cluster.gpu_types)) or "none"
            issues.append(
                FieldIssue(
                    "resources.gpu_type",
                    f"cluster {cluster.name} has no {res.gpu_type} GPUs (it has: {have})",
                    "UNKNOWN_GPU_TYPE",
                )
            )
        elif res.gpu_count > (most := cluster.largest_node_gpus(res.gpu_type)):
            issues.append(
                FieldIssue(
                    "resources.gpu_count",
                    f"asks for {res.gpu_count} x {res.gpu_type} but the largest node of "
                    f"cluster {cluster.name} has {most}",
                    "EXCEEDS_NODE",
                )
            )
    if cluster.nodes and res.cpu_cores > cluster.largest_node_cpu:
        issues.append(
            FieldIssue(
                "resources.cpu_cores",
                f"exceeds the largest node's {cluster.largest_node_cpu:g} cores",
                "EXCEEDS_NODE",
            )
        )
    if cluster.nodes and res.memory_gb > cluster.largest_node_memory:
        issues.append(
            FieldIssue(
                "resources.memory_gb",
                f"exceeds the largest node's {cluster.largest_node_memory:g} GB",
                "EXCEEDS_NODE",
            )
        )
    return issues
