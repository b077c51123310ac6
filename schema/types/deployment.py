"""Model deployments and their workers (types, inputs and stream messages)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import strawberry

from domain.model import deployment as dm
from domain.model.ids import JobId
from domain.model.job import JobPriority
from domain.serving import capacity
from schema.context import Info
from schema.types.autoscaling import Autoscaling, AutoscalingInput, ScalingStep
from schema.types.connection import PageInfo
from schema.types.derive import derive
from schema.types.job import Job
from schema.types.secrets import SecretRef, SecretRefInput

strawberry.enum(
    dm.Engine, name="ServingEngine", description="The inference engine a deployment runs."
)
strawberry.enum(
    dm.DeploymentStatus,
    description="DEPLOYING: replicas queued or starting; RUNNING: at least one replica serves and "
    "the endpoint answers; STOPPED: stopped, or scaled to zero; FAILED: every replica failed.",
)
strawberry.enum(
    dm.WorkerStatus,
    description="PENDING: waiting for GPUs or starting; RUNNING: serving; ERROR: failed (it may "
    "be retried); TERMINATED: stopped, scaled away or preempted.",
)
strawberry.enum(dm.ModelApi, description="An OpenAI-compatible route the endpoint serves.")


@strawberry.type(description="The engine's arguments (vLLM's names).")
class EngineArgs:
    tensor_parallel_size: int
    pipeline_parallel_size: int
    max_model_len: int
    max_num_seqs: int = strawberry.field(
        description="Requests a replica serves at once (its concurrency); more wait."
    )
    dtype: str
    gpu_memory_utilization: float
    quantization: str | None
    extra_args: list[str]

    @classmethod
    def from_domain(cls, a: dm.EngineArgs) -> EngineArgs:
        return derive(cls, a)


@strawberry.type(description="One replica's pod.")
class Worker:
    name: str
    replica: int
    job_id: strawberry.ID = strawberry.field(description="The SERVICE job that runs it.")
    status: dm.WorkerStatus
    reason: str | None
    node: str | None
    devices: list[int] = strawberry.field(description="GPU indices on its node.")
    restarts: int = strawberry.field(description="Times it was started again after a failure.")
    last_restart_at: datetime | None
    started_at: datetime | None = strawberry.field(description="When it last started running.")
    uptime_seconds: float | None = strawberry.field(
        description="Seconds since startedAt, when it runs (as of the read)."
    )
    cpu_cores: float
    memory_gb: float
    utilisation: float | None = strawberry.field(
        description="Share of its request slots (maxNumSeqs) in use now, 0 to 1, when the "
        "endpoint reports it."
    )

    @classmethod
    def from_domain(cls, w: dm.Worker, now: datetime) -> Worker:
        return derive(
            cls,
            w,
            uptime_seconds=(now - w.started_at).total_seconds() if w.started_at else None,
        )


@strawberry.type(description="A model served on a cluster by one or more replicas.")
class Deployment:
    id: strawberry.ID
    name: str
    project_id: strawberry.ID
    cluster_id: strawberry.ID
    model: str
    served_model_name: str = strawberry.field(description="The `model` to name in requests.")
    engine: dm.Engine
    engine_args: EngineArgs
    image: str | None
    gpu_type: str | None
    gpus_per_replica: int = strawberry.field(
        description="tensorParallelSize x pipelineParallelSize."
    )
    cpu_cores: float
    memory_gb: float
    secrets: list[SecretRef] = strawberry.field(
        description="The secrets of its tenant's each replica gets (names, never values)."
    )
    replicas: int = strawberry.field(description="Replicas wanted.")
    autoscaling: Autoscaling | None = strawberry.field(
        description="How it scales itself (null: `replicas` is what you set)."
    )
    scaling_steps: list[ScalingStep] = strawberry.field(
        description="The last steps its autoscaler took (at most 20), newest first."
    )
    concurrency: int = strawberry.field(
        description="Requests each replica serves at once (engineArgs.maxNumSeqs)."
    )
    status: dm.DeploymentStatus
    status_message: str | None
    endpoint_url: str | None = strawberry.field(
        description="The OpenAI-compatible base URL (ending in /v1), once it serves."
    )
    endpoints: list[dm.ModelApi]
    workers: list[Worker]
    created_at: datetime
    updated_at: datetime
    stopped_at: datetime | None
    replica_job_ids: strawberry.Private[list[JobId]]
    deployment: strawberry.Private[dm.Deployment]

    @strawberry.field(description="The SERVICE jobs running its replicas, oldest first.")  # type: ignore[untyped-decorator]
    async def replica_jobs(self, info: Info) -> list[Job]:
        found = await info.context.loaders.job.load_many(self.replica_job_ids)
        return [Job.from_domain(j) for j in found if j is not None]

    @strawberry.field(  # type: ignore[untyped-decorator]
        description="What it asks that its cluster, as it is now, can never give, though it "
        "was accepted: e.g. more replicas than the cluster's nodes hold at once (the others "
        "wait for ever). Empty when all is well; read it after deployModel and scaleDeployment."
    )
    async def warnings(self, info: Info) -> list[DeploymentWarning]:
        cluster = await info.context.loaders.cluster.load(self.deployment.cluster_id)
        return [
            DeploymentWarning(code=w.code, message=w.message, path=w.path)
            for w in capacity.warnings(self.deployment, cluster)
        ]

    @classmethod
    def from_domain(cls, d: dm.Deployment, now: datetime) -> Deployment:
        return derive(
            cls,
            d,
            concurrency=d.engine_args.max_num_seqs,
            autoscaling=Autoscaling.from_domain(d.autoscaling) if d.autoscaling else None,
            scaling_steps=[ScalingStep.from_domain(step, d) for step in d.scaling_steps],
            workers=[Worker.from_domain(w, now) for w in d.workers],
            replica_job_ids=list(d.replica_jobs),
            deployment=d,
        )


@strawberry.type(
    description="Something about a deployment that will not work as asked, though it was "
    "accepted and goes on: it says what, and which input to change."
)
class DeploymentWarning:
    code: str = strawberry.field(
        description="REPLICAS_EXCEED_CLUSTER: fewer than `replicas` can ever run at once on the "
        "cluster (counted by GPUs, cores and memory per node; quotas aside)."
    )
    message: str = strawberry.field(
        description='In words, e.g. "only 16 of 20 replicas can ever run: cluster local-sim has '
        '16 nvidia-a100-80gb GPUs".'
    )
    path: str = strawberry.field(
        description="The input it is about, by its path as ValidationError names fields "
        "(e.g. `replicas`)."
    )


@strawberry.type
class DeploymentEdge:
    cursor: str
    node: Deployment


@strawberry.type
class DeploymentConnection:
    edges: list[DeploymentEdge]
    page_info: PageInfo


@strawberry.type(description="Your deployments on the cluster, as of `sequence`.")
class DeploymentSnapshot:
    sequence: int
    deployments: list[Deployment]
    reason: str = strawberry.field(
        description="subscribed; history-gone (since was older than the retained history); "
        "unknown-since (since was ahead of it); or resync (this subscriber fell behind)."
    )


@strawberry.type(description="A deployment after one change (status, workers, endpoint, replicas).")
class DeploymentChange:
    sequence: int
    deployment: Deployment
    scaling_step: ScalingStep | None = strawberry.field(
        default=None, description="The step its autoscaler took, when this change is one."
    )


DeploymentUpdate = Annotated[
    DeploymentSnapshot | DeploymentChange, strawberry.union("DeploymentUpdate")
]


@strawberry.input(description="Engine arguments (vLLM's names); omitted ones take vLLM's defaults.")
class EngineArgsInput:
    tensor_parallel_size: int = 1
    pipeline_parallel_size: int = 1
    max_model_len: int = 4096
    max_num_seqs: int | None = strawberry.field(
        default=None, description="Defaults to the deployment's `concurrency`, else 256."
    )
    dtype: str = "auto"
    gpu_memory_utilization: float = 0.9
    quantization: str | None = None
    extra_args: list[str] = strawberry.field(default_factory=list)


@strawberry.input
class DeployModelInput:
    name: str = strawberry.field(description="A DNS-1123 label of at most 50 characters.")
    project_id: strawberry.ID
    cluster_id: strawberry.ID | None = strawberry.field(
        default=None, description="The cluster to run on; or give fleetId instead."
    )
    fleet_id: strawberry.ID | None = strawberry.field(
        default=None,
        description="A fleet: the deployment goes to the member where its first replica is "
        "estimated to start soonest (every replica runs there; replicas do not move).",
    )
    model: str = strawberry.field(
        description="A Hugging Face repository (org/name), an absolute path on the nodes, or a "
        "URI (hf://, s3://, gs://, pvc://)."
    )
    gpu_type: str | None = None
    engine: dm.Engine = dm.Engine.VLLM
    engine_args: EngineArgsInput | None = None
    gpus_per_replica: int | None = strawberry.field(
        default=None,
        description="Optional check: must equal tensorParallelSize x pipelineParallelSize.",
    )
    replicas: int = strawberry.field(
        default=1, description="Replicas to start with (within autoscaling's bounds, if given)."
    )
    autoscaling: AutoscalingInput | None = strawberry.field(
        default=None, description="Scale itself within these bounds; null: `replicas` stays."
    )
    concurrency: int | None = strawberry.field(
        default=None, description="Requests each replica serves at once (maxNumSeqs)."
    )
    served_model_name: str | None = None
    cpu_cores: float = 4.0
    memory_gb: float = 16.0
    image: str | None = None
    chart: str | None = strawberry.field(
        default=None, description="A Helm chart of yours (real clusters, a later release)."
    )
    priority: JobPriority = JobPriority.NORMAL
    max_retries: int = 3
    secrets: list[SecretRefInput] = strawberry.field(
        default_factory=list,
        description="Your tenant's secrets each replica gets, e.g. a gated model's token as "
        "the key HF_TOKEN (see setSecret).",
    )


@strawberry.input
class DeploymentFilter:
    cluster_ids: list[strawberry.ID] | None = None
    statuses: list[dm.DeploymentStatus] | None = None
