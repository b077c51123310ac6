"""A model deployment: a model served on a cluster, its replicas, and the workers that run them.

A deployment runs `replicas` copies of an inference engine (vLLM first), each a SERVICE job of
its own (`replica_jobs[i]` runs replica i) holding `gpus_per_replica` GPUs (the engine's tensor
parallel size times its pipeline parallel size). So every replica is queued, admitted, estimated
and drawn on the schedule timeline like every job; this is also how Kueue admits the pods of a
Deployment (one workload per pod). A replica job's status, placement and attempts are what its
worker shows; the deployment's status follows from its workers and its endpoint:

  STOPPED    stopped by its user (final), or scaled to zero replicas
  RUNNING    at least one worker runs and the endpoint answers
  FAILED     every replica failed and none will be retried
  DEPLOYING  otherwise: replicas queued, starting or retrying

`derive` computes that from the replica jobs; a change raises `DeploymentChanged`, which the unit
of work writes to the outbox with the cluster's next sequence (what `deploymentUpdates` streams).
"""

from __future__ import annotations

import enum
import itertools
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from domain.model.autoscaling import MAX_STEPS, Autoscaling, ScalingState, ScalingStep
from domain.model.ids import ClusterId, DeploymentId, JobId, ProjectId, TenantId
from domain.model.job import Job, JobStatus
from domain.model.tenant_secret import SecretRef


class Engine(enum.StrEnum):
    VLLM = "VLLM"
    OPENAI_COMPATIBLE = "OPENAI_COMPATIBLE"
    """Any image that serves the OpenAI API (its own arguments in `engine_args.extra_args`)."""


class ModelApi(enum.StrEnum):
    CHAT_COMPLETIONS = "CHAT_COMPLETIONS"
    COMPLETIONS = "COMPLETIONS"
    EMBEDDINGS = "EMBEDDINGS"


class DeploymentStatus(enum.StrEnum):
    DEPLOYING = "DEPLOYING"
    RUNNING = "RUNNING"
    STOPPED = "STOPPED"
    FAILED = "FAILED"


class WorkerStatus(enum.StrEnum):
    PENDING = "PENDING"
    RUNNING = "RUNNING"
    ERROR = "ERROR"
    TERMINATED = "TERMINATED"


@dataclass(frozen=True)
class EngineArgs:
    """The engine's arguments budcluster understands (vLLM's names); `extra_args` are passed
    through to the engine's command line as given."""

    tensor_parallel_size: int = 1
    pipeline_parallel_size: int = 1
    max_model_len: int = 4096
    max_num_seqs: int = 256
    """Sequences a replica runs at once (vLLM's default 256); more requests wait."""
    dtype: str = "auto"
    gpu_memory_utilization: float = 0.9
    quantization: str | None = None
    extra_args: tuple[str, ...] = ()

    @property
    def gpus(self) -> int:
        return self.tensor_parallel_size * self.pipeline_parallel_size


@dataclass(frozen=True)
class Worker:
    """One replica's pod, as its deployment shows it."""

    replica: int
    job_id: JobId
    name: str
    status: WorkerStatus
    reason: str | None
    node: str | None
    devices: tuple[int, ...]
    """GPU indices on the node."""
    restarts: int
    """Its job's retries plus its current pod's container restarts."""
    last_restart_at: datetime | None
    started_at: datetime | None
    """When it last started running (its uptime counts from here)."""
    cpu_cores: float
    memory_gb: float
    utilisation: float | None = None
    """Share of its request slots in use (0..1), when the endpoint reports it."""


@dataclass(frozen=True)
class EndpointState:
    """What the cluster says of a deployment's endpoint."""

    url: str | None
    ready: bool
    utilisation: dict[JobId, float] = field(default_factory=dict)
    """Per replica job, when known."""


@dataclass(frozen=True)
class Replacement:
    """A replica started elsewhere before the old one stops (its node is drained): `old` is
    stopped once `new` runs, and `new` takes its place (its replica number)."""

    old: JobId
    new: JobId
    reason: str


class DeploymentChangeKind(enum.StrEnum):
    CREATED = "CREATED"
    UPDATED = "UPDATED"
    """Status, workers, endpoint or replicas changed."""
    SCALED = "SCALED"
    """Its autoscaler changed the replicas wanted (the step says from what to what, and why)."""


_RECORDED = itertools.count()


@dataclass(frozen=True)
class DeploymentChanged:
    kind: DeploymentChangeKind
    deployment: Deployment
    step: ScalingStep | None = None
    """The scaling step this change is (SCALED)."""
    recorded: int = field(default_factory=lambda: next(_RECORDED), compare=False, repr=False)

    @property
    def cluster_id(self) -> ClusterId:
        return self.deployment.cluster_id

    @property
    def tenant_id(self) -> TenantId:
        return self.deployment.tenant_id

    @property
    def at(self) -> datetime:
        return self.deployment.updated_at


@dataclass(eq=False)
class Deployment:
    id: DeploymentId
    tenant_id: TenantId
    project_id: ProjectId
    cluster_id: ClusterId
    name: str
    model: str
    """What to serve: a Hugging Face repository id (org/name), an absolute path on the nodes,
    or a URI (hf://, s3://, gs://, pvc://)."""
    served_model_name: str
    """The name clients put in requests (defaults to `model`)."""
    engine: Engine
    engine_args: EngineArgs
    gpu_type: str | None
    cpu_cores: float
    memory_gb: float
    replicas: int
    """Replicas wanted."""
    created_at: datetime
    updated_at: datetime
    image: str | None = None
    chart: str | None = None
    """A Helm chart of the user's to install instead of budcluster's (real clusters)."""
    secrets: tuple[SecretRef, ...] = ()
    """The tenant's secrets each replica gets (a gated model's token, as HF_TOKEN)."""
    status: DeploymentStatus = DeploymentStatus.DEPLOYING
    status_message: str | None = None
    endpoint_url: str | None = None
    endpoints: tuple[ModelApi, ...] = ()
    """What the endpoint serves, once it does."""
    replica_jobs: tuple[JobId, ...] = ()
    """The job running each replica (index = replica number), including stopped ones."""
    workers: tuple[Worker, ...] = ()
    replacements: tuple[Replacement, ...] = ()
    """Replicas being started elsewhere, each before its old one stops."""
    stopped_at: datetime | None = None
    autoscaling: Autoscaling | None = None
    """Bounds and target when it scales itself (None: `replicas` is what its user set)."""
    scaling_steps: tuple[ScalingStep, ...] = ()
    """Its autoscaler's last steps, newest first (at most MAX_STEPS)."""
    scaling_state: ScalingState = field(default_factory=ScalingState)
    version: int = 0
    changes: list[DeploymentChanged] = field(default_factory=list, repr=False, compare=False)

    @property
    def gpus_per_replica(self) -> int:
        return self.engine_args.gpus

    @property
    def stopped(self) -> bool:
        return self.stopped_at is not None

    @property
    def supported_apis(self) -> tuple[ModelApi, ...]:
        """A generative model's routes (an engine serving an embedding model would list
        EMBEDDINGS; the simulated engine serves generative models only)."""
        return (ModelApi.CHAT_COMPLETIONS, ModelApi.COMPLETIONS)

    def live_replicas(self, jobs: dict[JobId, Job]) -> list[JobId]:
        """The replica jobs not finished for good, in replica order."""
        return [
            j
            for j in self.replica_jobs
            if (job := jobs.get(j)) is not None and job.status not in _GONE
        ]

    def record_creation(self) -> None:
        self.changes.append(DeploymentChanged(DeploymentChangeKind.CREATED, self.snapshot()))

    def derive(self, jobs: dict[JobId, Job], endpoint: EndpointState, now: datetime) -> bool:
        """Workers and status from the replica jobs and the endpoint; True (and the change
        recorded) if anything a viewer sees changed."""
        workers = tuple(
            _worker(self, index, jobs[job_id])
            for index, job_id in enumerate(self.replica_jobs)
            if job_id in jobs
        )
        status, message = _status(self, workers, endpoint)
        serving = status is DeploymentStatus.RUNNING
        url = endpoint.url if serving and endpoint.url else self.endpoint_url
        if self.autoscaling is not None and self.autoscaling.min_replicas == 0 and endpoint.url:
            url = endpoint.url  # it answers at zero replicas too: a request wakes it
        endpoints = self.supported_apis if serving else self.endpoints
        if self.stopped:
            url, endpoints = None, ()
        seen = (self.status, self.status_message, self.workers, self.endpoint_url, self.endpoints)
        if seen == (status, message, workers, url, endpoints):
            return False
        self.status, self.status_message, self.workers = status, message, workers
        self.endpoint_url, self.endpoints = url, endpoints
        self.updated_at = now
        self.changes.append(DeploymentChanged(DeploymentChangeKind.UPDATED, self.snapshot()))
        return True

    def record_update(self) -> None:
        self.changes.append(DeploymentChanged(DeploymentChangeKind.UPDATED, self.snapshot()))

    def scaled(self, replicas: int, new_jobs: tuple[JobId, ...], now: datetime) -> None:
        self.replicas = replicas
        self.replica_jobs = (*self.replica_jobs, *new_jobs)
        self.updated_at = now

    def scaled_itself(self, step: ScalingStep, new_jobs: tuple[JobId, ...]) -> None:
        """Its autoscaler took `step` (replicas made for it: `new_jobs`); the change is
        recorded as SCALED once its view is derived (`record_step`)."""
        self.scaled(step.to_replicas, new_jobs, step.at)
        self.scaling_steps = (step, *self.scaling_steps)[:MAX_STEPS]
        self.scaling_state = ScalingState()

    def record_step(self, step: ScalingStep) -> None:
        self.changes.append(
            DeploymentChanged(DeploymentChangeKind.SCALED, self.snapshot(), step=step)
        )

    @property
    def quiet_since(self) -> datetime:
        """When it last scaled itself (or was made): its idle time counts from the later of
        this and its last request."""
        return self.scaling_steps[0].at if self.scaling_steps else self.created_at

    def replacing(self, old: JobId, new: JobId, reason: str, now: datetime) -> None:
        """`new` (a replica job just made) is to take `old`'s place once it runs."""
        self.replica_jobs = (*self.replica_jobs, new)
        self.replacements = (*self.replacements, Replacement(old, new, reason))
        self.updated_at = now

    @property
    def replaced(self) -> frozenset[JobId]:
        """The replicas whose replacements are on their way: not counted as wanted."""
        return frozenset(r.old for r in self.replacements)

    def retire(self, jobs: dict[JobId, Job], now: datetime) -> list[Replacement]:
        """The replacements done: the new replica runs (or one of the two is gone for good).
        Each new one takes its old one's place, and the old is to be stopped (the caller
        cancels it, if it still runs)."""
        done = [
            r
            for r in self.replacements
            if (new := jobs.get(r.new)) is None
            or new.status is JobStatus.RUNNING
            or new.status.is_finished
            or (old := jobs.get(r.old)) is None
            or not (old.status.is_active or old.status is JobStatus.PREEMPTED)
        ]
        if not done:
            return []
        order = list(self.replica_jobs)
        for r in done:
            new = jobs.get(r.new)
            if new is not None and new.status is JobStatus.RUNNING and r.old in order:
                # it takes the old one's replica number (and leaves its own, later, entry)
                order = [r.new if j == r.old else j for j in order if j != r.new]
        self.replica_jobs = tuple(order)
        self.replacements = tuple(r for r in self.replacements if r not in done)
        self.updated_at = now
        return done

    def stop(self, now: datetime) -> None:
        self.stopped_at = now
        self.replicas = 0
        self.updated_at = now

    def snapshot(self) -> Deployment:
        return replace(self, changes=[])


_GONE = frozenset({JobStatus.COMPLETED, JobStatus.CANCELLED})
_WAITING = frozenset({JobStatus.PENDING, JobStatus.QUEUED, JobStatus.ADMITTED})


def _worker(deployment: Deployment, index: int, job: Job) -> Worker:
    """Its utilisation is not derived (it changes with every request): the service fills it
    in when the deployment is read."""
    if job.status is JobStatus.RUNNING:
        status, reason = WorkerStatus.RUNNING, None
    elif job.status in _WAITING:
        status = WorkerStatus.PENDING
        reason = job.estimate_reason or job.status_message
    elif job.status is JobStatus.FAILED:
        status, reason = WorkerStatus.ERROR, job.status_message
    else:  # COMPLETED, CANCELLED, PREEMPTED (a preempted replica is retried as a new attempt)
        status, reason = WorkerStatus.TERMINATED, job.status_message
    placement = job.placement if status is WorkerStatus.RUNNING else None
    container_restarts, container_restarted_at = job.container_restarts
    return Worker(
        replica=index,
        job_id=job.id,
        name=f"{deployment.name}-{index}",
        status=status,
        reason=reason,
        node=placement.node if placement else None,
        devices=placement.gpu_indices if placement else (),
        restarts=job.attempt + container_restarts,
        last_restart_at=container_restarted_at or (_restarted_at(job) if job.attempt else None),
        started_at=job.actual_start if status is WorkerStatus.RUNNING else None,
        cpu_cores=job.resources.cpu_cores,
        memory_gb=job.resources.memory_gb,
    )


def _restarted_at(job: Job) -> datetime | None:
    """The start of the current attempt (a retry restarts the replica); a container restarted
    in place since is later, and shown instead."""
    return job.actual_start or job.updated_at


def _status(
    deployment: Deployment, workers: tuple[Worker, ...], endpoint: EndpointState
) -> tuple[DeploymentStatus, str | None]:
    if deployment.stopped:
        return DeploymentStatus.STOPPED, "stopped by its user"
    if deployment.replicas == 0 and deployment.autoscaling is not None:
        return DeploymentStatus.STOPPED, "scaled to zero: the first request starts a replica"
    if deployment.replicas == 0:
        return DeploymentStatus.STOPPED, "scaled to zero replicas"
    live = [w for w in workers if w.status is not WorkerStatus.TERMINATED]
    running = [w for w in live if w.status is WorkerStatus.RUNNING]
    if running and endpoint.ready:
        return DeploymentStatus.RUNNING, f"{len(running)} of {deployment.replicas} replicas serving"
    if running:
        return DeploymentStatus.DEPLOYING, "replicas running; waiting for the endpoint to answer"
    errors = [w for w in live if w.status is WorkerStatus.ERROR]
    if live and len(errors) == len(live):
        return DeploymentStatus.FAILED, errors[-1].reason or "every replica failed"
    pending = [w for w in live if w.status is WorkerStatus.PENDING]
    if pending:
        return DeploymentStatus.DEPLOYING, pending[0].reason or "replicas waiting to start"
    return DeploymentStatus.DEPLOYING, "replicas starting"


def engine_args_document(args: EngineArgs) -> dict[str, Any]:
    return {
        "tensor_parallel_size": args.tensor_parallel_size,
        "pipeline_parallel_size": args.pipeline_parallel_size,
        "max_model_len": args.max_model_len,
        "max_num_seqs": args.max_num_seqs,
        "dtype": args.dtype,
        "gpu_memory_utilization": args.gpu_memory_utilization,
        "quantization": args.quantization,
        "extra_args": list(args.extra_args),
    }


def engine_args_from_document(doc: dict[str, Any]) -> EngineArgs:
    return EngineArgs(
        tensor_parallel_size=int(doc["tensor_parallel_size"]),
        pipeline_parallel_size=int(doc["pipeline_parallel_size"]),
        max_model_len=int(doc["max_model_len"]),
        max_num_seqs=int(doc["max_num_seqs"]),
        dtype=str(doc["dtype"]),
        gpu_memory_utilization=float(doc["gpu_memory_utilization"]),
        quantization=doc.get("quantization"),
        extra_args=tuple(doc.get("extra_args") or ()),
    )
