"""What a user may submit, checked before anything is stored.

`validate_submission` returns every problem at once, each naming the input field by its dotted
domain path (`resources.gpu_count`); the GraphQL layer renders those paths in its own casing.
Checks that need the target cluster (GPU types it has, the largest node) run against the
cluster's current inventory. What a submission refers to (its LocalQueue, the jobs it depends on,
the reservation it runs in) is read in the unit of work that stores the job (`read_references`)
and checked by `reference_issues`: references resolve only to the submitting tenant's objects on
the same cluster.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

from domain.documents import Flaw, document_problem
from domain.errors import FieldIssue
from domain.model.addons import UNSUPPORTED_VERSION, unsupported_kueue_issue
from domain.model.cluster import Cluster, ClusterStatus
from domain.model.drain import MAX_GRACE_SECONDS
from domain.model.ids import ClusterId, FleetId, JobId, ProjectId, TenantId
from domain.model.job import (
    MANAGED_SOURCES,
    BudgetAction,
    DeploymentType,
    Job,
    JobPriority,
    JobType,
    Resources,
    SourceKind,
    TimeWindow,
)
from domain.model.quota import (
    DEFAULT_QUEUE,
    GPU_LABEL,
    LocalQueue,
    ResourceFlavor,
    tenant_namespace,
)
from domain.model.reservation import CapacityReservation, ReservationId
from domain.model.tenant_secret import (
    MAX_SECRET_REFS,
    SecretRef,
    TenantSecret,
    ref_issues,
    usable_issues,
)
from domain.names import MAX_OBJECT_NAME, name_problem, text_problem
from domain.ports.cluster_api import WorkloadCheck
from domain.ports.gateways import Workload
from domain.ports.unit_of_work import UnitOfWork
from domain.services.pod_set_rules import pod_set_issues

MAX_SPEC_BYTES = 64 * 1024
MAX_IDEMPOTENCY_KEY = 128
MAX_RETRIES_LIMIT = 10
MAX_DURATION_SECONDS = 366 * 24 * 3600
MAX_SOURCE_ID = 255
MAX_BUDGET = Decimal("9999999999.9999")
"""What a job's money columns hold: 14 digits, 4 after the point."""
MAX_DEPENDENCIES = 32
MAX_POD_COUNT = 256
"""Pods of one job's pod set: the widest trace job (128 GPUs) is 16 pods of 8."""
MAX_SPEC_DEPTH = 32
SIMULATION_OUTCOMES = ("COMPLETED", "FAILED")


def _simulation_issues(spec: Mapping[str, Any]) -> list[FieldIssue]:
    """`spec.simulation`, read by the simulated cluster: a run time and an outcome."""
    if "simulation" not in spec:
        return []
    simulation = spec["simulation"]
    if not isinstance(simulation, dict):
        return [FieldIssue("spec.simulation", "must be an object")]
    issues = [
        FieldIssue(
            f"spec.simulation.{key}", "is not a simulation setting (runtime_seconds, outcome)"
        )
        for key in simulation
        if key not in ("runtime_seconds", "outcome")
    ]
    runtime = simulation.get("runtime_seconds")
    if runtime is not None and (
        isinstance(runtime, bool)
        or not isinstance(runtime, int | float)
        or not 0 <= runtime <= MAX_DURATION_SECONDS
    ):
        issues.append(
            FieldIssue(
                "spec.simulation.runtime_seconds",
                f"must be a number of seconds from 0 to {MAX_DURATION_SECONDS}",
            )
        )
    outcome = simulation.get("outcome")
    if outcome is not None and outcome not in SIMULATION_OUTCOMES:
        issues.append(
            FieldIssue(
                "spec.simulation.outcome", f"must be one of {', '.join(SIMULATION_OUTCOMES)}"
            )
        )
    return issues


SPEC_FLAWS = {
    Flaw.TOO_DEEP: (f"must nest at most {MAX_SPEC_DEPTH} levels deep", "TOO_DEEP"),
    Flaw.KEY_NOT_TEXT: ("keys in it must be text", "INVALID"),
    Flaw.SURROGATE: ("text in it must be valid Unicode (it holds a lone surrogate)", "INVALID"),
    Flaw.NUL: ("text in it must not contain NUL characters", "INVALID"),
}


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
    termination_grace_seconds: int | None = None
    secrets: tuple[SecretRef, ...] = ()
    deadline: datetime | None = None
    priority: JobPriority = JobPriority.NORMAL
    preemptible: bool = False
    max_retries: int = 3
    budget_limit: Decimal | None = None
    budget_action: BudgetAction = BudgetAction.WARN
    idempotency_key: str | None = None
    queue_name: str = DEFAULT_QUEUE
    window: TimeWindow | None = None
    depends_on: tuple[JobId, ...] = ()
    reservation_id: uuid.UUID | None = None
    fleet_id: FleetId | None = None
    """Submitted to a fleet: `cluster_id` is the member it was dispatched to."""
    dispatched_via: ClusterId | None = None
    """Its fleet's MultiKueue manager, which its objects are handed to."""
    status_message: str = "submitted"
    """The job's status message at submission (a fleet's says where it was dispatched, why)."""

    @property
    def dependencies(self) -> tuple[JobId, ...]:
        """`depends_on` without repeats, in the order given."""
        return tuple(dict.fromkeys(self.depends_on))


def _queue_name_problem(name: str) -> str | None:
    return text_problem(name) or name_problem(name, max_length=MAX_OBJECT_NAME)


def _window_issues(window: TimeWindow) -> list[FieldIssue]:
    issues = [
        FieldIssue(f"window.{part}", "must be a UTC time of day in whole minutes (HH:MM)")
        for part, moment in (("start", window.start), ("end", window.end))
        if moment.tzinfo is not None or moment.second or moment.microsecond
    ]
    if window.start == window.end:
        issues.append(FieldIssue("window.end", "must differ from window.start", "EMPTY_WINDOW"))
    return issues


RESERVED_SPEC_KEYS = frozenset({"deployment", "benchmark"})
"""Keys of a job's spec that budcluster writes for its own jobs (a replica, a benchmark's run)."""


def validate_submission(
    sub: JobSubmission,
    cluster: Cluster | None,
    now: datetime,
    *,
    managed: bool = False,
    check_workload: WorkloadCheck | None = None,
) -> list[FieldIssue]:
    """Every problem with a submission, by field. `managed`: budcluster's own job for a
    deployment's replica or a benchmark (only such jobs may name those sources).
    `check_workload`: whether a real cluster can be given the job's spec (the Kubernetes
    adapter renders it); without it, a real cluster's spec is checked only for being an object."""
    issues: list[FieldIssue] = []

    def bad(path: str, message: str, code: str = "INVALID") -> None:
        issues.append(FieldIssue(path, message, code))

    problem = text_problem(sub.name) or name_problem(sub.name)
    if problem:
        bad("name", problem, "INVALID_NAME")

    flawed = document_problem(sub.spec, max_depth=MAX_SPEC_DEPTH, allow_nul=False)
    if not isinstance(sub.spec, dict):
        bad("spec", "must be a JSON object")
    elif flawed is not None and flawed.flaw in SPEC_FLAWS:
        bad("spec", *SPEC_FLAWS[flawed.flaw])
    else:
        issues.extend(_simulation_issues(sub.spec))
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

    reserved = sorted(RESERVED_SPEC_KEYS & set(sub.spec)) if isinstance(sub.spec, dict) else []
    if reserved and not managed:
        bad(
            f"spec.{reserved[0]}",
            "is set by budcluster for a deployment's replicas and a benchmark's run",
            "RESERVED",
        )
    if sub.source_kind in MANAGED_SOURCES and not managed:
        bad(
            "source.kind",
            f"{sub.source_kind.value} jobs are made by deployModel and runBenchmark",
            "UNSUPPORTED",
        )
    elif sub.source_kind is SourceKind.DIRECT:
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
    if sub.termination_grace_seconds is not None and not (
        0 <= sub.termination_grace_seconds <= MAX_GRACE_SECONDS
    ):
        bad("termination_grace_period_seconds", f"must be between 0 and {MAX_GRACE_SECONDS}")
    if sub.max_duration_seconds is not None:
        if not 0 < sub.max_duration_seconds <= MAX_DURATION_SECONDS:
            bad("max_duration_seconds", f"must be between 1 and {MAX_DURATION_SECONDS}")
        elif (
            sub.estimated_duration_seconds is not None
            and sub.max_duration_seconds < sub.estimated_duration_seconds
        ):
            bad(
                "max_duration_seconds",
                "must not be shorter than `estimated_duration_seconds`",
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
    if problem := _queue_name_problem(sub.queue_name):
        bad("queue_name", problem, "INVALID_NAME")
    if sub.window is not None:
        issues.extend(_window_issues(sub.window))
    issues.extend(ref_issues(sub.secrets))
    if len(sub.dependencies) > MAX_DEPENDENCIES:
        bad("depends_on", f"must name at most {MAX_DEPENDENCIES} jobs", "TOO_MANY")

    issues.extend(_resource_issues(sub.resources, cluster))
    issues.extend(pod_set_issues(sub.resources, cluster, max_pods=MAX_POD_COUNT))
    if sub.resources.pod_sets and sub.job_type is JobType.SERVICE:
        bad(
            "resources.pod_sets",
            "a SERVICE runs one pod per release here; pod sets are for BATCH and TRAINING jobs",
            "UNSUPPORTED",
        )
    if sub.resources.pod_sets and sub.reservation_id is not None:
        bad("resources.pod_sets", "a job in a reservation runs one pod", "UNSUPPORTED")
    if sub.resources.pod_count > 1 and sub.job_type is JobType.SERVICE:
        bad(
            "resources.pod_count",
            "a SERVICE runs one pod per release here; pod sets are for BATCH and TRAINING jobs",
            "UNSUPPORTED",
        )
    if sub.resources.pod_count > 1 and sub.reservation_id is not None:
        bad("resources.pod_count", "a job in a reservation runs one pod", "UNSUPPORTED")
    if cluster is None:
        bad("cluster_id", "no such cluster", "NOT_FOUND")
    elif cluster.status is ClusterStatus.DELETING:
        bad("cluster_id", "the cluster is being deleted", "CLUSTER_DELETING")
    elif cluster.is_real and (unsupported := unsupported_kueue_issue(cluster.health)):
        bad("cluster_id", unsupported, UNSUPPORTED_VERSION)
    elif cluster.is_real:
        issues.extend(_kubernetes_issues(sub, cluster, check_workload))
    return issues


def _kubernetes_issues(
    sub: JobSubmission, cluster: Cluster, check_workload: WorkloadCheck | None
) -> list[FieldIssue]:
    """What a real cluster can't be given: `check_workload` renders the spec as the gateway
    renders it (a batch Job, or a Helm release's values), and the first problem is named by its
    field."""
    if not isinstance(sub.spec, dict):
        return [FieldIssue("spec", "expected an object")]
    if check_workload is None:
        return []
    probe = Workload(
        job_id=JobId(uuid.UUID(int=0)),
        attempt=0,
        name="bud-check",
        tenant_id=TenantId(uuid.UUID(int=0)),
        job_type=sub.job_type,
        deployment_type=sub.deployment_type,
        priority=sub.priority,
        preemptible=sub.preemptible,
        resources=sub.resources,
        created_at=datetime.min,
        max_duration_seconds=sub.max_duration_seconds,
        termination_grace_seconds=sub.termination_grace_seconds,
        spec=sub.spec,
        namespace="bud-check",
        queue_name=sub.queue_name,
    )
    try:
        check_workload(probe, cluster_id=cluster.id)
    except ValueError as exc:
        field_name, _, message = str(exc).partition(": ")
        return [FieldIssue(field_name, message or str(exc))]
    return []


def _resource_issues(res: Resources, cluster: Cluster | None) -> list[FieldIssue]:
    issues: list[FieldIssue] = []
    if res.gpu_count < 0:
        issues.append(FieldIssue("resources.gpu_count", "must not be negative"))
    if not 1 <= res.pod_count <= MAX_POD_COUNT:
        issues.append(FieldIssue("resources.pod_count", f"must be between 1 and {MAX_POD_COUNT}"))
        return issues
    if not res.cpu_cores > 0:
        issues.append(FieldIssue("resources.cpu_cores", "must be greater than 0"))
    if not res.memory_gb > 0:
        issues.append(FieldIssue("resources.memory_gb", "must be greater than 0"))
    if res.storage_gb is not None and res.storage_gb < 0:
        issues.append(FieldIssue("resources.storage_gb", "must not be negative"))
    if res.gpu_type is not None and (len(res.gpu_type) > 100 or text_problem(res.gpu_type)):
        issues.append(FieldIssue("resources.gpu_type", "is not a GPU type name"))
        return issues
    further_gpus = any(p.gpu_count > 0 for p in res.pod_sets)
    if (res.gpu_count > 0 or further_gpus) and not res.gpu_type:
        issues.append(
            FieldIssue(
                "resources.gpu_type",
                "is required when `gpu_count` is above 0"
                if res.gpu_count > 0
                else "is required when a pod set's `gpu_count` is above 0",
                "REQUIRED",
            )
        )
    if res.gpu_count == 0 and res.gpu_type and not further_gpus:
        issues.append(
            FieldIssue(
                "resources.gpu_count",
                "must be at least 1 when `gpu_type` is given (leave `gpu_type` out for a job "
                "without GPUs)",
                "REQUIRED",
            )
        )
    if cluster is None or issues:
        return issues

    if (res.gpu_count > 0 or further_gpus) and res.gpu_type:
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
    if not issues and cluster.nodes and res.pod_count > 1:
        gpu_type = res.gpu_type if res.gpu_count else None
        room = cluster.pods_that_fit(gpu_type, res.gpu_count, res.cpu_cores, res.memory_gb)
        if res.pod_count > room:
            one = f"{res.gpu_count} x {gpu_type}, " if gpu_type else ""
            issues.append(
                FieldIssue(
                    "resources.pod_count",
                    f"asks for {res.pod_count} pods of {one}{res.cpu_cores:g} CPU and "
                    f"{res.memory_gb:g} GB but the nodes of cluster {cluster.name} hold at most "
                    f"{room} such pods",
                    "EXCEEDS_CLUSTER",
                )
            )
    return issues


# --- what a submission refers to -------------------------------------------------------------


@dataclass(frozen=True)
class References:
    """The objects a submission names, as the unit of work that stores the job reads them."""

    local_queue: LocalQueue | None
    default_cluster_queue: bool
    """The cluster has the ClusterQueue "default" (a tenant's "default" LocalQueue is made on
    its first submission)."""
    dependencies: Mapping[JobId, Job]
    """The submitting tenant's jobs among `depends_on`."""
    reservation: CapacityReservation | None
    reservation_flavor: ResourceFlavor | None
    secrets: Mapping[str, TenantSecret] = field(default_factory=dict)
    """The submitting tenant's secrets among those the job names."""


async def read_references(uow: UnitOfWork, tenant_id: TenantId, sub: JobSubmission) -> References:
    """Read through a unit of work scoped to `tenant_id`, so other tenants' jobs are not found."""
    local = await uow.quotas.get_local_queue(
        cluster_id=sub.cluster_id, namespace=tenant_namespace(tenant_id), name=sub.queue_name
    )
    default = (
        local is None
        and sub.queue_name == DEFAULT_QUEUE
        and await uow.quotas.get_cluster_queue(cluster_id=sub.cluster_id, name=DEFAULT_QUEUE)
        is not None
    )
    wanted = sub.dependencies
    dependencies = await uow.jobs.get_many(wanted) if 0 < len(wanted) <= MAX_DEPENDENCIES else {}
    reservation = (
        await uow.reservations.get(ReservationId(sub.reservation_id))
        if sub.reservation_id is not None
        else None
    )
    flavor = (
        await uow.quotas.get_flavor(cluster_id=reservation.cluster_id, name=reservation.flavor)
        if reservation is not None
        else None
    )
    names = {r.name for r in sub.secrets}
    secrets = await uow.secrets.named(tenant_id, names) if len(names) <= MAX_SECRET_REFS else {}
    return References(local, default, dependencies, reservation, flavor, secrets)


def reference_issues(
    sub: JobSubmission, tenant_id: TenantId, refs: References, now: datetime
) -> list[FieldIssue]:
    issues: list[FieldIssue] = []
    namespace = tenant_namespace(tenant_id)
    if (
        _queue_name_problem(sub.queue_name) is None
        and refs.local_queue is None
        and not (sub.queue_name == DEFAULT_QUEUE and refs.default_cluster_queue)
    ):
        issues.append(
            FieldIssue(
                "queue_name",
                f"no local queue {sub.queue_name} in your namespace {namespace} on this cluster",
                "NOT_FOUND",
            )
        )
    too_many = len(sub.dependencies) > MAX_DEPENDENCIES  # refused already, and not looked up
    if not too_many and (
        missing := [str(d) for d in sub.dependencies if d not in refs.dependencies]
    ):
        issues.append(
            FieldIssue("depends_on", f"no job of yours with id {', '.join(missing)}", "NOT_FOUND")
        )
    elsewhere = [str(d) for d, job in refs.dependencies.items() if job.cluster_id != sub.cluster_id]
    if elsewhere:
        issues.append(
            FieldIssue(
                "depends_on",
                f"job {', '.join(elsewhere)} runs on another cluster",
                "OTHER_CLUSTER",
            )
        )
    if sub.reservation_id is not None:
        issues.extend(_reservation_issues(sub, tenant_id, refs, now))
    if len(sub.secrets) <= MAX_SECRET_REFS:  # more: refused already, and not looked up
        issues.extend(usable_issues(sub.secrets, refs.secrets))
    return issues


def _reservation_issues(
    sub: JobSubmission, tenant_id: TenantId, refs: References, now: datetime
) -> list[FieldIssue]:
    r = refs.reservation
    if r is None or r.tenant_id != tenant_id or r.cluster_id != sub.cluster_id:
        message = f"no reservation {sub.reservation_id} of yours on this cluster"
        return [FieldIssue("reservation_id", message, "NOT_FOUND")]
    if r.cancelled_at is not None:
        return [FieldIssue("reservation_id", f"reservation {r.name} is cancelled", "CANCELLED")]
    if r.end <= now:
        return [FieldIssue("reservation_id", f"reservation {r.name} has ended", "ENDED")]
    gpu_type = (
        refs.reservation_flavor.node_labels.get(GPU_LABEL) if refs.reservation_flavor else None
    )
    res = sub.resources
    if res.gpu_count < 1 or gpu_type is None or res.gpu_type != gpu_type:
        return [
            FieldIssue(
                "reservation_id",
                f"reservation {r.name} holds {r.flavor} GPUs ({gpu_type or 'no GPU product'}); "
                f"the job asks for {res.gpu_count} x {res.gpu_type or 'no GPU'}",
                "FLAVOR_MISMATCH",
            )
        ]
    if res.gpu_count > r.gpu_count:
        return [
            FieldIssue(
                "reservation_id",
                f"reservation {r.name} holds {r.gpu_count} GPUs; the job asks for {res.gpu_count}",
                "EXCEEDS_RESERVATION",
            )
        ]
    return []
