"""A cluster as the domain drives it: workloads handed over, and what it reports.

One attempt of one job is a `Workload`; the cluster's whole word on it is a
`WorkloadObservation`. A `GatewayFactory` gives each cluster its gateway (simulated or Kueue).
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from domain.model.cluster import Cluster, Node
from domain.model.ids import JobId, TenantId
from domain.model.job import DeploymentType, Job, JobPriority, JobType, Placement, Resources
from domain.model.load import LoadRun
from domain.model.logs import MAX_LOG_LINES as MAX_LOG_LINES
from domain.model.logs import LogLine as LogLine
from domain.model.quota import tenant_namespace
from domain.model.tenant_secret import MountedSecret


class WorkloadPhase(enum.StrEnum):
    QUEUED = "QUEUED"
    ADMITTED = "ADMITTED"
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    PREEMPTED = "PREEMPTED"
    DELETED = "DELETED"


@dataclass(frozen=True)
class Workload:
    """What budcluster asks a cluster to run: one attempt of one job."""

    job_id: JobId
    attempt: int
    name: str
    tenant_id: TenantId
    job_type: JobType
    priority: JobPriority
    preemptible: bool
    resources: Resources
    created_at: datetime
    deployment_type: DeploymentType = DeploymentType.DOCKER
    estimated_duration_seconds: int | None = None
    max_duration_seconds: int | None = None
    spec: Mapping[str, Any] = field(default_factory=dict)
    namespace: str = ""
    """The tenant's namespace, where its LocalQueues live."""
    queue_name: str = "default"
    reservation_id: uuid.UUID | None = None
    run_on: str | None = None
    """Handed to a MultiKueue manager: the member cluster (by its name) Kueue is to run it on
    (budcluster, the external dispatcher, nominates it)."""
    termination_grace_seconds: int | None = None
    """The time its containers get between SIGTERM (a drain's checkpoint signal, a stop) and
    being killed: its pods' terminationGracePeriodSeconds; None: the cluster's default (30 s)."""
    secrets: tuple[MountedSecret, ...] = ()
    """The tenant's secrets the job names, opened for this hand-over (values never printed)."""

    @classmethod
    def of(
        cls, job: Job, *, run_on: str | None = None, secrets: tuple[MountedSecret, ...] = ()
    ) -> Workload:
        return cls(
            job_id=job.id,
            attempt=job.attempt,
            name=job.workload_name,
            tenant_id=job.tenant_id,
            job_type=job.job_type,
            deployment_type=job.deployment_type,
            priority=job.priority,
            preemptible=job.preemptible,
            resources=job.resources,
            created_at=job.created_at,
            estimated_duration_seconds=job.estimated_duration_seconds,
            max_duration_seconds=job.max_duration_seconds,
            spec=dict(job.spec),
            namespace=tenant_namespace(job.tenant_id),
            queue_name=job.queue_name,
            reservation_id=job.reservation_id,
            run_on=run_on,
            termination_grace_seconds=job.termination_grace_seconds,
            secrets=secrets,
        )


@dataclass(frozen=True)
class WorkloadObservation:
    """What the cluster reports about one workload: its whole current state, not a delta."""

    job_id: JobId
    attempt: int
    phase: WorkloadPhase
    reason: str
    observed_at: datetime
    admitted_at: datetime | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    placements: tuple[Placement, ...] = ()
    """Where its pods run (one per pod), when the cluster says."""
    workload: str | None = None
    """The workload's name: a report about an earlier hand-over of the attempt is stale."""
    restarts: int | None = None
    """Times its containers were restarted in place (its live pods' restart counts, summed);
    None when the cluster does not say."""
    last_restart_at: datetime | None = None
    """When a container of it last ended before being restarted."""
    admitted_on: str | None = None
    """On a MultiKueue manager: the member cluster (by its name) Kueue admitted it on."""


class GatewayUnavailable(Exception):
    """The cluster could not be reached; the caller retries with backoff. `attempt`, when
    known, counts the failures in a row (the stored retry_attempt of a real cluster), so the
    backoff restarts from its first step once the cluster has answered again."""

    def __init__(self, message: str = "", *, attempt: int | None = None) -> None:
        super().__init__(message)
        self.attempt = attempt


@dataclass(frozen=True)
class PendingWorkload:
    """One pending workload in Kueue's own order of a LocalQueue (its visibility API)."""

    owner_kind: str
    """What the Workload was made for: "Job" (a batch Job) or "Pod" (a service's pod)."""
    owner_name: str
    local_queue: str
    position_in_local_queue: int
    """From 0: 0 is the next to be considered."""
    position_in_cluster_queue: int
    priority: int


class ClusterGateway(Protocol):
    async def submit(self, workload: Workload) -> None:
        """Create the workload; a second call with the same name changes nothing."""

    async def cancel(self, job_id: JobId, attempt: int) -> None: ...

    async def evict(self, job_id: JobId, attempt: int, *, grace_seconds: int) -> None:
        """Stop a workload as a drain does: its running containers get SIGTERM (the checkpoint
        signal) and `grace_seconds` before they are killed, holding what they hold till then;
        one that is not running yet is removed at once. Like `cancel`, every hand-over of the
        attempt, and a second call changes nothing."""
        await self.cancel(job_id, attempt)

    async def logs(
        self,
        job_id: JobId,
        attempt: int,
        *,
        pod: str | None = None,
        since: datetime | None = None,
        tail: int | None = None,
    ) -> list[LogLine]:
        """The log lines of the attempt's pods (every hand-over of it), oldest first: of `pod`
        only when given, written after `since`, the last `tail` (at most MAX_LOG_LINES) of
        each pod. [] where the cluster keeps none (its pods are gone); GatewayUnavailable when
        it does not answer."""
        return []

    async def drain_node(self, node: str) -> list[str]:
        """Cordon `node` (nothing new is placed there) and evict the pods on it that budcluster
        does not run itself (DaemonSets' and mirror pods stay), honouring their
        PodDisruptionBudgets: returns the pods (`namespace/name`) a budget keeps there for now,
        to be tried again. budcluster's own workloads there are left alone (their jobs are
        requeued or replaced: `domain.services.drains`). A simulated cluster reads its drains
        from budcluster's record: nothing to do."""
        return []

    async def undrain_node(self, node: str) -> None:
        """Uncordon `node`: it takes new pods again (nothing to do on a simulated cluster)."""
        return

    async def set_priority(self, job_id: JobId, attempt: int, priority: JobPriority) -> None: ...

    async def nodes(self) -> list[Node]: ...

    async def list_workloads(self) -> list[WorkloadObservation]: ...

    def watch(self) -> AsyncIterator[list[WorkloadObservation]]:
        """What changes, as it happens; the caller lists first, then watches. Each item holds
        the observations that happened together (an admission cycle: the releases with the
        admissions they made room for), to be applied in one commit; an empty one is a sign of
        life, sent at least every few seconds while the watch is healthy."""

    async def pending_in_queue(self, namespace: str, queue: str) -> list[PendingWorkload] | None:
        """Kueue's own order of a LocalQueue's pending workloads; None where the cluster offers
        no such view (no Kueue visibility API, or not a Kueue cluster)."""
        return None

    async def workload_exited(
        self, job_id: JobId, attempt: int, *, succeeded: bool, reason: str
    ) -> bool:
        """The process of a workload that budcluster runs itself ended (a benchmark's load
        generator on a simulated cluster, whose pods run nothing): end the workload as its pod
        would have. False where workloads run their own processes (real clusters), or the
        workload is not live."""
        return False

    async def benchmark_run(self, job_id: JobId, attempt: int) -> LoadRun | None:
        """What a benchmark's job measured where the cluster ran its load itself (a real
        cluster's `vllm bench serve` Job, read back from its pod's log); None where budcluster
        runs the load (a simulated cluster). Raises ValueError saying why when the cluster's
        record of the run can't be read (no pod, no result), GatewayUnavailable when the cluster
        does not answer."""
        return None


class Superseded(Exception):
    """Another process has taken over this cluster's loop since this one claimed it (a newer
    fencing generation): this one wrote nothing and must stop."""

    def __init__(self, cluster_id: uuid.UUID) -> None:
        super().__init__(f"the loop of cluster {cluster_id} runs elsewhere now")


class GatewayFactory(Protocol):
    def for_cluster(self, cluster: Cluster) -> ClusterGateway: ...
