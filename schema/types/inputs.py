"""Inputs of queries and mutations."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

import strawberry
from strawberry.scalars import JSON

from schema.types.enums import (
    BudgetAction,
    DeploymentType,
    JobPriority,
    JobStatus,
    JobType,
    SourceKind,
)
from schema.types.secrets import SecretRefInput


@strawberry.input(
    description="A further pod set of a job: podCount pods of one shape, of the job's GPU type."
)
class PodSetInput:
    name: str = strawberry.field(
        description='A DNS-1123 label of at most 63 characters, unique in the job, not "main".'
    )
    pod_count: int = strawberry.field(default=1, description="Pods of the pod set (1 to 256).")
    gpu_count: int = strawberry.field(
        default=0, description="GPUs per pod, of the job's resources.gpuType."
    )
    cpu_cores: float = strawberry.field(default=1.0, description="Cores per pod.")
    memory_gb: float = strawberry.field(default=4.0, description="GB of memory per pod.")


@strawberry.input
class ResourcesInput:
    gpu_type: str | None = strawberry.field(
        default=None, description="GPU product, e.g. nvidia-a100-80gb; required with gpuCount."
    )
    gpu_count: int = strawberry.field(default=0, description="GPUs per pod.")
    cpu_cores: float = strawberry.field(default=1.0, description="Cores per pod.")
    memory_gb: float = strawberry.field(default=4.0, description="GB of memory per pod.")
    storage_gb: int | None = None
    pod_count: int = strawberry.field(
        default=1,
        description="Pods of the job (1 to 256), each asking gpuCount GPUs, cpuCores and "
        "memoryGb, each on one node, admitted all or nothing (a Kueue pod set: a training job "
        "wider than one node is podCount pods of the node's GPUs). BATCH and TRAINING only.",
    )
    pod_sets: list[PodSetInput] | None = strawberry.field(
        default=None,
        description='The job\'s further pod sets, after its own (named "main": podCount pods of '
        "the fields above): a leader and its workers, an MPI launcher and its workers. All are "
        "admitted together or not at all, each pod on one node; at most 7 (Kueue's Workload "
        "holds at most 8 pod sets). BATCH and TRAINING only.",
    )


@strawberry.input
class JobSourceInput:
    kind: SourceKind = SourceKind.DIRECT
    source_id: str | None = None


@strawberry.input(description="A daily window, in UTC, in which the job may start.")
class TimeWindowInput:
    start: str = strawberry.field(description="HH:MM, UTC.")
    end: str = strawberry.field(description="HH:MM, UTC; before start means across midnight.")


@strawberry.input
class SubmitJobInput:
    name: str = strawberry.field(description="A DNS-1123 label of at most 53 characters.")
    project_id: strawberry.ID
    cluster_id: strawberry.ID | None = strawberry.field(
        default=None, description="The cluster to run on; or give fleetId instead."
    )
    fleet_id: strawberry.ID | None = strawberry.field(
        default=None,
        description="A fleet: the job goes to the member where it is estimated to start "
        "soonest (with a deadline: the cheapest member that meets it), in the fleet's "
        "LocalQueue, and may move to another member before it is admitted.",
    )
    job_type: JobType
    deployment_type: DeploymentType
    spec: JSON | None = strawberry.field(
        default=None,
        description="What to run, as a JSON object (e.g. image, command, env; "
        "simulation.runtime_seconds on a simulated cluster). Null or absent: {}.",
    )
    resources: ResourcesInput = strawberry.field(default_factory=ResourcesInput)
    source: JobSourceInput = strawberry.field(default_factory=JobSourceInput)
    estimated_duration_seconds: int | None = None
    max_duration_seconds: int | None = None
    termination_grace_period_seconds: int | None = strawberry.field(
        default=None,
        description="Seconds its containers get between SIGTERM and being killed, to write a "
        "checkpoint when a drain takes it off its node (0 to 3600; its pods' "
        "terminationGracePeriodSeconds). Null: 30, Kubernetes' default.",
    )
    secrets: list[SecretRefInput] = strawberry.field(
        default_factory=list,
        description="At most 8 of your tenant's secrets its containers get (see setSecret).",
    )
    deadline: datetime | None = None
    priority: JobPriority = JobPriority.NORMAL
    preemptible: bool = False
    max_retries: int = 3
    budget_limit: Decimal | None = strawberry.field(
        default=None,
        description="The most the job may cost, in the unit of Job.estimatedCost (0 to "
        "9999999999.9999): checked at submission against its estimatedDurationSeconds (at most "
        "maxDurationSeconds) at the cluster's prices, and while it runs against what it has "
        "cost (every few seconds); budgetAction says what follows.",
    )
    budget_action: BudgetAction = strawberry.field(
        default=BudgetAction.WARN,
        description="What happens when the job's cost reaches budgetLimit.",
    )
    idempotency_key: str | None = strawberry.field(
        default=None,
        description="Submitting again with the same key in the same project returns the first "
        "job, never a second.",
    )
    queue_name: str = strawberry.field(
        default="default",
        description='A LocalQueue in your namespace; "default" is made on first use.',
    )
    window: TimeWindowInput | None = None
    depends_on: list[strawberry.ID] = strawberry.field(
        default_factory=list,
        description="At most 32 of your jobs on the same cluster that must complete first.",
    )
    reservation_id: strawberry.ID | None = strawberry.field(
        default=None, description="One of your capacity reservations to run in."
    )


@strawberry.input
class JobFilter:
    statuses: list[JobStatus] | None = None
    priorities: list[JobPriority] | None = None
    job_types: list[JobType] | None = None
    cluster_ids: list[strawberry.ID] | None = None
    project_ids: list[strawberry.ID] | None = None
