"""Model deployments: deploy, scale, stop, and keep each deployment's view true to its replicas.

A deployment's replicas are SERVICE jobs made in the same unit of work as the deployment (all of
them or nothing), so they are queued, admitted, estimated and drawn like every job. When a replica
job changes, the reactions queue `refresh`, which derives the deployment's workers and status from
its replica jobs and the cluster's word on the endpoint (`ServingEndpoints`), and stores the
change with its event (what `deploymentUpdates` streams).

A deployment is read, scaled and stopped by whoever may see it (`Principal.may_see`): its
tenant's tokens of its project, and the operator, whose replicas made by scaling are the
deployment's tenant's.
"""

from __future__ import annotations

import contextlib
import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

from domain.errors import Conflict, FieldIssue, Forbidden, ValidationFailed
from domain.model.addons import UNSUPPORTED_VERSION, unsupported_kueue_issue
from domain.model.audit import concerning
from domain.model.autoscaling import Autoscaling, ScalingStep, autoscaling_issues
from domain.model.cluster import Cluster, ClusterStatus, Platform
from domain.model.deployment import (
    Deployment,
    DeploymentStatus,
    EndpointState,
    Engine,
    EngineArgs,
    WorkerStatus,
    engine_args_document,
)
from domain.model.ids import ClusterId, DeploymentId, JobId, ProjectId, new_deployment_id
from domain.model.job import (
    DeploymentType,
    Job,
    JobPriority,
    JobStatus,
    JobType,
    Resources,
    SourceKind,
)
from domain.model.principal import TENANT_DEFAULT_SCOPES, Principal
from domain.model.tenant_secret import SecretRef, ref_issues, usable_issues
from domain.names import name_problem, text_problem
from domain.ports.clock import Clock
from domain.ports.repositories import JobCursor, Page
from domain.ports.serving import ServingEndpoints
from domain.ports.unit_of_work import TenantScope, UnitOfWork, UnitOfWorkFactory
from domain.services.jobs import JobService
from domain.services.paging import check_first
from domain.services.submission import JobSubmission
from domain.services.visibility import seen
from domain.serving.models import fit_problem

MAX_REPLICAS = 64
MAX_DEPLOYMENT_NAME = 50
"""A replica's job is named `<name>-<replica>`: room for the suffix in a 53-character name."""
MAX_PAGE = 100
DTYPES = frozenset({"auto", "half", "float16", "bfloat16", "float", "float32"})
QUANTIZATIONS = frozenset({"awq", "gptq", "fp8", "bitsandbytes", "gguf", "marlin", "squeezellm"})

_HF_REPO = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")
_URI = re.compile(r"^(hf|s3|gs|pvc)://[A-Za-z0-9][A-Za-z0-9._/-]{0,500}$")
_PATH = re.compile(r"^/[A-Za-z0-9._/-]{1,500}$")
_IMAGE = re.compile(r"^[a-z0-9][a-z0-9._/:@-]{0,254}$")


@dataclass(frozen=True)
class DeploymentRequest:
    name: str
    project_id: ProjectId
    cluster_id: ClusterId
    model: str
    gpu_type: str | None
    engine: Engine = Engine.VLLM
    engine_args: EngineArgs = field(default_factory=EngineArgs)
    gpus_per_replica: int | None = None
    """When given, must be what the engine arguments use (tensor x pipeline parallel size)."""
    replicas: int = 1
    served_model_name: str | None = None
    cpu_cores: float = 4.0
    memory_gb: float = 16.0
    image: str | None = None
    chart: str | None = None
    priority: JobPriority = JobPriority.NORMAL
    max_retries: int = 3
    secrets: tuple[SecretRef, ...] = ()
    """The tenant's secrets each replica gets (a gated model's token: HF_TOKEN)."""
    autoscaling: Autoscaling | None = None
    """When given, it scales itself within these bounds (`replicas`: how many it starts with)."""


def model_problem(model: str) -> str | None:
    """Why `model` is not a model this service knows how to fetch, or None."""
    if _HF_REPO.match(model) or _URI.match(model):
        return None
    if _PATH.match(model) and ".." not in model.split("/"):
        return None
    return (
        "unknown model format: give a Hugging Face repository (org/name), an absolute path on "
        "the nodes (/models/llama), or a URI (hf://, s3://, gs://, pvc://)"
    )


def validate_deployment(req: DeploymentRequest, cluster: Cluster | None) -> list[FieldIssue]:
    issues: list[FieldIssue] = []

    def bad(path: str, message: str, code: str = "INVALID") -> None:
        issues.append(FieldIssue(path, message, code))

    if problem := text_problem(req.name) or name_problem(req.name, max_length=MAX_DEPLOYMENT_NAME):
        bad("name", problem, "INVALID_NAME")
    if problem := text_problem(req.model) or model_problem(req.model):
        bad("model", problem, "UNKNOWN_MODEL_FORMAT")
    if req.served_model_name is not None and (
        not 0 < len(req.served_model_name) <= 200
        or text_problem(req.served_model_name)
        or not req.served_model_name.isprintable()
    ):
        bad("served_model_name", "must be 1 to 200 printable characters")
    if not 0 <= req.replicas <= MAX_REPLICAS:
        bad("replicas", f"must be between 0 and {MAX_REPLICAS}")
    args = req.engine_args
    if args.tensor_parallel_size not in (1, 2, 4, 8, 16):
        bad("engine_args.tensor_parallel_size", "must be 1, 2, 4, 8 or 16")
    if not 1 <= args.pipeline_parallel_size <= 8:
        bad("engine_args.pipeline_parallel_size", "must be between 1 and 8")
    if not 16 <= args.max_model_len <= 1_048_576:
        bad("engine_args.max_model_len", "must be between 16 and 1048576 tokens")
    if not 1 <= args.max_num_seqs <= 4096:
        bad("engine_args.max_num_seqs", "must be between 1 and 4096")
    if args.dtype not in DTYPES:
        bad("engine_args.dtype", f"must be one of {', '.join(sorted(DTYPES))}")
    if not 0.05 <= args.gpu_memory_utilization <= 1.0:
        bad("engine_args.gpu_memory_utilization", "must be between 0.05 and 1")
    if args.quantization is not None and args.quantization not in QUANTIZATIONS:
        bad("engine_args.quantization", f"must be one of {', '.join(sorted(QUANTIZATIONS))}")
    if len(args.extra_args) > 50 or any(
        not 0 < len(a) <= 200 or text_problem(a) or not a.isprintable() for a in args.extra_args
    ):
        bad("engine_args.extra_args", "must be at most 50 printable arguments of 1-200 characters")
    gpus = args.gpus
    if req.gpus_per_replica is not None and req.gpus_per_replica != gpus:
        bad(
            "gpus_per_replica",
            f"tensor parallel size {args.tensor_parallel_size} x pipeline parallel size "
            f"{args.pipeline_parallel_size} uses {gpus} GPUs per replica, not "
            f"{req.gpus_per_replica}",
            "TENSOR_PARALLEL_MISMATCH",
        )
    if not req.cpu_cores > 0 or req.cpu_cores > 512:
        bad("cpu_cores", "must be greater than 0 and at most 512")
    if not req.memory_gb > 0 or req.memory_gb > 8192:
        bad("memory_gb", "must be greater than 0 and at most 8192")
    if req.image is not None and not _IMAGE.match(req.image):
        bad("image", "is not an image reference (registry/name:tag)")
    if req.engine is Engine.OPENAI_COMPATIBLE and req.image is None:
        bad("image", "is required for an OPENAI_COMPATIBLE engine", "REQUIRED")
    if not 0 <= req.max_retries <= 10:
        bad("max_retries", "must be between 0 and 10")
    if req.gpu_type is None:
        bad("gpu_type", "is required: a model replica runs on GPUs", "REQUIRED")
    elif len(req.gpu_type) > 100 or text_problem(req.gpu_type):
        bad("gpu_type", "is not a GPU type name")
    if req.autoscaling is not None:
        a = req.autoscaling
        issues.extend(
            autoscaling_field_issues(a, real_cluster=cluster is not None and cluster.is_real)
        )
        if not a.min_replicas <= req.replicas <= a.max_replicas:
            bad(
                "replicas",
                "must be within `autoscaling.min_replicas` and `autoscaling.max_replicas`",
            )
    if cluster is None:
        bad("cluster_id", "no such cluster", "NOT_FOUND")
        return issues
    if cluster.status is ClusterStatus.DELETING:
        bad("cluster_id", "the cluster is being deleted", "CLUSTER_DELETING")
    elif cluster.is_real and (unsupported := unsupported_kueue_issue(cluster.health)):
        bad("cluster_id", unsupported, UNSUPPORTED_VERSION)
    if req.chart is not None and not cluster.is_real:
        bad("chart", "a simulated cluster installs no charts", "UNSUPPORTED")
    elif req.chart is not None and (
        not req.chart.strip() or len(req.chart) > 1024 or text_problem(req.chart)
    ):
        bad("chart", "is not a Helm chart reference")
    elif cluster.is_real and req.chart is None and req.engine is not Engine.VLLM:
        bad(
            "engine",
            "budcluster's chart runs vLLM; name a chart (`chart`) that runs this engine",
            "UNSUPPORTED",
        )
    if req.gpu_type is not None and not issues:
        if req.gpu_type not in cluster.gpu_capacity():
            bad("gpu_type", f"cluster {cluster.name} has no {req.gpu_type} GPUs", "NOT_ON_CLUSTER")
        elif cluster.pods_that_fit(req.gpu_type, gpus, req.cpu_cores, req.memory_gb) < 1:
            bad(
                "engine_args.tensor_parallel_size",
                f"no node of cluster {cluster.name} holds one replica ({gpus} x "
                f"{req.gpu_type}, {req.cpu_cores:g} cores, {req.memory_gb:g} GB)",
                "EXCEEDS_CLUSTER",
            )
        elif problem := fit_problem(
            req.model,
            req.gpu_type,
            gpus,
            dtype=args.dtype,
            quantization=args.quantization,
            gpu_memory_utilization=args.gpu_memory_utilization,
        ):
            bad("engine_args.tensor_parallel_size", problem, "MODEL_TOO_LARGE")
    return issues


def autoscaling_field_issues(a: Autoscaling, *, real_cluster: bool) -> list[FieldIssue]:
    return [
        FieldIssue(f"autoscaling.{path}", message, code)
        for path, message, code in autoscaling_issues(
            a, real_cluster=real_cluster, max_replicas=MAX_REPLICAS
        )
    ]


def _replica_submission(
    d: Deployment, index: int, req_priority: JobPriority, retries: int
) -> JobSubmission:
    return JobSubmission(
        name=f"{d.name}-{index}",
        project_id=d.project_id,
        cluster_id=d.cluster_id,
        job_type=JobType.SERVICE,
        deployment_type=DeploymentType.MODEL,
        spec={
            "deployment": {
                "id": str(d.id),
                "replica": index,
                "model": d.model,
                "served_model_name": d.served_model_name,
                "engine": d.engine.value,
                "engine_args": engine_args_document(d.engine_args),
                "image": d.image,
            },
            **({"chart": d.chart} if d.chart else {}),
        },
        resources=Resources(
            gpu_type=d.gpu_type,
            gpu_count=d.gpus_per_replica,
            cpu_cores=d.cpu_cores,
            memory_gb=d.memory_gb,
        ),
        source_kind=SourceKind.DEPLOYMENT,
        source_id=str(d.id),
        priority=req_priority,
        max_retries=retries,
        secrets=d.secrets,
    )


def _running(d: Deployment, jobs: dict[JobId, Job]) -> list[JobId]:
    return [j for j in d.replica_jobs if j in jobs and jobs[j].status is JobStatus.RUNNING]


def _still_serving(job: Job) -> bool:
    """A replica job that holds, waits for, or will retry for its replica's place."""
    if job.status.is_active:
        return True
    return job.status is JobStatus.PREEMPTED


class DeploymentService:
    def __init__(
        self,
        *,
        uow: UnitOfWorkFactory,
        clock: Clock,
        jobs: JobService,
        endpoints: ServingEndpoints,
    ) -> None:
        self._uow = uow
        self._clock = clock
        self._jobs = jobs
        self._endpoints = endpoints

    def now(self) -> datetime:
        """The clock's time (a worker's uptime is shown as of a read)."""
        return self._clock.now()

    # --- commands ---------------------------------------------------------------------------

    async def deploy(self, principal: Principal, req: DeploymentRequest) -> Deployment:
        if not principal.may_use_project(req.project_id):
            raise Forbidden(f"this token may not deploy to project {req.project_id}")
        fetched = {"chart": req.chart.strip()} if req.chart and "://" in req.chart else {}
        if issues := await self._jobs.url_issues(fetched):  # Helm fetches a chart's URL
            raise ValidationFailed(issues)
        concerning(principal.tenant_id, req.project_id)
        now = self._clock.now()
        async with self._uow(TenantScope(principal.tenant_id)) as uow:
            cluster = await uow.clusters.get(req.cluster_id)
            issues = validate_deployment(req, cluster) + ref_issues(req.secrets)
            if not issues and req.secrets:
                found = await uow.secrets.named(principal.tenant_id, [r.name for r in req.secrets])
                issues = usable_issues(req.secrets, found)
            if issues:
                raise ValidationFailed(issues)
            deployment = Deployment(
                id=new_deployment_id(),
                tenant_id=principal.tenant_id,
                project_id=req.project_id,
                cluster_id=req.cluster_id,
                name=req.name,
                model=req.model,
                served_model_name=req.served_model_name or req.model,
                engine=req.engine,
                engine_args=req.engine_args,
                gpu_type=req.gpu_type,
                cpu_cores=req.cpu_cores,
                memory_gb=req.memory_gb,
                replicas=req.replicas,
                created_at=now,
                updated_at=now,
                image=req.image,
                chart=req.chart,
                secrets=req.secrets,
                autoscaling=req.autoscaling,
                status_message="replicas submitted",
            )
            jobs = await self._add_replicas(uow, principal, deployment, req.replicas, now, req)
            deployment.replica_jobs = tuple(j.id for j in jobs)
            made = {j.id: j for j in jobs}
            deployment.derive(made, await self.endpoint_state(uow, deployment, made), now)
            deployment.changes.clear()
            deployment.record_creation()
            await uow.deployments.add(deployment)
            await uow.commit()
        return deployment

    async def _add_replicas(
        self,
        uow: UnitOfWork,
        principal: Principal,
        deployment: Deployment,
        count: int,
        now: datetime,
        req: DeploymentRequest | None = None,
    ) -> list[Job]:
        priority = req.priority if req else JobPriority.NORMAL
        retries = req.max_retries if req else 3
        if req is None and deployment.replica_jobs:  # scaling: as the first replica was made
            first = await uow.jobs.get(deployment.replica_jobs[0])
            if first is not None:
                priority, retries = first.priority, first.max_retries
        made: list[Job] = []
        start = len(deployment.replica_jobs)
        for index in range(start, start + count):
            sub = _replica_submission(deployment, index, priority, retries)
            job, default_queue = await self._jobs.prepare(uow, principal, sub, now, managed=True)
            if default_queue is not None and not made:
                await uow.quotas.add_local_queue(default_queue, if_absent=True)
            job.record_submission()
            await uow.jobs.add(job)
            made.append(job)
        return made

    async def scale(
        self, principal: Principal, deployment_id: DeploymentId, replicas: int
    ) -> Deployment:
        if not 0 <= replicas <= MAX_REPLICAS:
            raise ValidationFailed.single("replicas", f"must be between 0 and {MAX_REPLICAS}")
        now = self._clock.now()
        async with self._uow(TenantScope.of(principal)) as uow:
            d, jobs = await self.held(uow, principal, deployment_id, "is stopped")
            if d.autoscaling is not None:
                raise Conflict(
                    f"deployment {d.name} scales itself: change its bounds with setAutoscaling, "
                    "or turn that off (autoscaling: null) to set its replicas",
                    code="AUTOSCALED",
                )
            added = await self.resize(uow, principal.acting_for(d.tenant_id), d, jobs, replicas)
            d.scaled(replicas, added, now)
            await self.settle(uow, d, jobs, await self.endpoint_state(uow, d, jobs), now)
        return await self._with_utilisation(d)

    async def resize(
        self,
        uow: UnitOfWork,
        owner: Principal,
        d: Deployment,
        jobs: dict[JobId, Job],
        replicas: int,
        reason: str = "deployment scaled down",
    ) -> tuple[JobId, ...]:
        """Make or cancel replica jobs (in `uow`, held in `jobs`) so that `replicas` hold,
        wait for or will retry for a place; the jobs made, for `Deployment.scaled`. Raises
        Conflict when more are wanted and the cluster is gone."""
        now = self._clock.now()
        replaced = d.replaced
        serving = [j for j in d.replica_jobs if j in jobs and _still_serving(jobs[j])]
        serving = [j for j in serving if j not in replaced]
        if replicas <= len(serving):
            # the ones still waiting go first, then the newest
            serving.sort(key=lambda j: jobs[j].status is not JobStatus.RUNNING)
            for job_id in serving[replicas:]:
                jobs[job_id].transition(JobStatus.CANCELLED, reason, now)
            return ()
        cluster = await uow.clusters.get(d.cluster_id)
        if cluster is None or cluster.status is ClusterStatus.DELETING:
            raise Conflict("the deployment's cluster is gone", code="CLUSTER_GONE")
        added = await self._add_replicas(uow, owner, d, replicas - len(serving), now)
        jobs.update({j.id: j for j in added})
        return tuple(j.id for j in added)

    async def replace_replicas(
        self, uow: UnitOfWork, olds: Sequence[Job], reason: str
    ) -> list[Job]:
        """Start each of `olds` (replica jobs that run where a drain covers) again elsewhere
        before it stops: a new replica job each, in `uow` (the caller commits), that takes the
        old one's place once it runs (`refresh`: the old one is cancelled then). So a
        deployment of two or more replicas never serves from none. Returns the new jobs."""
        now = self._clock.now()
        made: list[Job] = []
        by_deployment: dict[DeploymentId, list[Job]] = {}
        for job in olds:
            if (owner := replica_of(job)) is not None:
                by_deployment.setdefault(owner, []).append(job)
        for deployment_id, replicas in by_deployment.items():
            d = await uow.deployments.get(deployment_id, for_update=True)
            if d is None or d.stopped:
                continue
            actor = Principal(d.tenant_id, TENANT_DEFAULT_SCOPES)  # the tenant's own replicas
            for old in replicas:
                if old.id in d.replaced:
                    continue
                (new,) = await self._add_replicas(uow, actor, d, 1, now)
                d.replacing(old.id, new.id, reason, now)
                made.append(new)
            d.record_update()
            await uow.deployments.save(d)
        return made

    async def stop(self, principal: Principal, deployment_id: DeploymentId) -> Deployment:
        now = self._clock.now()
        async with self._uow(TenantScope.of(principal)) as uow:
            d, jobs = await self.held(uow, principal, deployment_id, "is already stopped")
            for job in jobs.values():
                if job.status.is_active or job.status is JobStatus.PREEMPTED:
                    job.transition(JobStatus.CANCELLED, "deployment stopped", now)
            d.stop(now)
            await self.settle(uow, d, jobs, EndpointState(None, False), now)
        return d

    async def refresh(self, deployment_id: DeploymentId) -> bool:
        """Derive a deployment's workers and status again (after a replica job changed);
        True if its view changed. Raises Conflict when another refresh wrote first."""
        async with self._uow(TenantScope.system()) as uow:
            d = await uow.deployments.get(deployment_id, for_update=True)
            if d is None:
                return False
            jobs = await uow.jobs.get_many(list(d.replica_jobs))
            now = self._clock.now()
            retired = d.retire(jobs, now)
            for done in retired:  # its replacement runs: the old one stops now
                old = jobs.get(done.old)
                if old is not None and (old.status.is_active or old.status is JobStatus.PREEMPTED):
                    old.transition(JobStatus.CANCELLED, f"replaced: {done.reason}", now)
            endpoint = await self.endpoint_state(uow, d, jobs)
            if not d.derive(jobs, endpoint, now):
                if not retired:
                    return False
                d.record_update()
            await uow.deployments.save(d)
            await uow.commit()
        return True

    async def refresh_all(self) -> int:
        """Refresh every deployment that is not stopped (a process started: endpoints of a
        simulated cluster may have moved)."""
        async with self._uow(TenantScope.system()) as uow:
            ids = []
            for cluster in await uow.clusters.all():
                for d in await uow.deployments.on_cluster(cluster.id, limit=10_000):
                    if not d.stopped:
                        ids.append(d.id)
        changed = 0
        for deployment_id in ids:
            with contextlib.suppress(Conflict):  # refreshed by someone else meanwhile
                changed += await self.refresh(deployment_id)
        return changed

    async def with_endpoints(self, platform: Platform) -> list[Deployment]:
        """The deployments not stopped that were given an endpoint URL, on clusters of
        `platform` (a restarted process serves simulated ones where their URLs say, if it can)."""
        async with self._uow(TenantScope.system()) as uow:
            on = {c.id for c in await uow.clusters.all() if c.platform is platform}
            return [d for d in await uow.deployments.with_endpoints() if d.cluster_id in on]

    async def endpoint_state(
        self, uow: UnitOfWork, d: Deployment, jobs: dict[JobId, Job]
    ) -> EndpointState:
        cluster = await uow.clusters.get(d.cluster_id)
        if cluster is None or d.stopped:
            return EndpointState(None, False)
        return await self._endpoints.endpoint(cluster, d, _running(d, jobs))

    # --- queries ----------------------------------------------------------------------------

    async def get(self, principal: Principal, deployment_id: DeploymentId) -> Deployment | None:
        async with self._uow(TenantScope.of(principal)) as uow:
            d = await uow.deployments.get(deployment_id)
            if d is None or not principal.may_see(d.tenant_id, d.project_id):
                return None
        return await self._with_utilisation(d)

    async def page(
        self,
        principal: Principal,
        *,
        cluster_ids: frozenset[ClusterId] = frozenset(),
        statuses: frozenset[DeploymentStatus] = frozenset(),
        first: int = 50,
        after: JobCursor | None = None,
    ) -> Page[Deployment]:
        check_first(first, MAX_PAGE)
        async with self._uow(TenantScope.of(principal)) as uow:
            return await uow.deployments.page(
                cluster_ids=cluster_ids,
                project_ids=principal.project_ids,
                statuses=frozenset(s.value for s in statuses),
                first=first,
                after=after,
            )

    async def _with_utilisation(self, d: Deployment) -> Deployment:
        """The deployment with its running workers' utilisation as the endpoint says now (not
        stored: it changes with every request)."""
        if d.status is not DeploymentStatus.RUNNING:
            return d
        async with self._uow(TenantScope.system()) as uow:
            cluster = await uow.clusters.get(d.cluster_id)
        if cluster is None:
            return d
        running = [w.job_id for w in d.workers if w.status is WorkerStatus.RUNNING]
        state = await self._endpoints.endpoint(cluster, d, running)
        if not state.utilisation:
            return d
        d.workers = tuple(
            replace(w, utilisation=state.utilisation.get(w.job_id))
            if w.status is WorkerStatus.RUNNING
            else w
            for w in d.workers
        )
        return d

    @staticmethod
    async def _get(
        uow: UnitOfWork, principal: Principal, deployment_id: DeploymentId, *, for_update: bool
    ) -> Deployment:
        found = await uow.deployments.get(deployment_id, for_update=for_update)
        return seen(principal, found, "deployment", deployment_id)

    @classmethod
    async def held(
        cls, uow: UnitOfWork, principal: Principal, deployment_id: DeploymentId, stopped: str
    ) -> tuple[Deployment, dict[JobId, Job]]:
        """A deployment that is not stopped (else Conflict: "deployment <name> <stopped>") and
        its replica jobs, both held for update."""
        d = await cls._get(uow, principal, deployment_id, for_update=True)
        if d.stopped:
            raise Conflict(f"deployment {d.name} {stopped}", code="ALREADY_STOPPED")
        return d, await uow.jobs.get_many(list(d.replica_jobs), for_update=True)

    @staticmethod
    async def settle(
        uow: UnitOfWork,
        d: Deployment,
        jobs: dict[JobId, Job],
        endpoint: EndpointState,
        now: datetime,
        step: ScalingStep | None = None,
    ) -> None:
        """Derive the deployment's view from its replica jobs and commit it with them; a
        deployment whose view did not change is saved all the same (what was wanted changed).
        A step its autoscaler took is the one change recorded (SCALED, with the view after)."""
        changed = d.derive(jobs, endpoint, now)
        if step is not None:
            if changed:
                d.changes.pop()  # the SCALED change carries the same view
            d.record_step(step)
        elif not changed:
            d.record_update()
        await uow.deployments.save(d)
        await uow.commit()


def replica_of(job: Job) -> DeploymentId | None:
    """The deployment a job is a replica of."""
    if job.source.kind is SourceKind.DEPLOYMENT and job.source.source_id:
        try:
            return DeploymentId(uuid.UUID(job.source.source_id))
        except ValueError:
            return None
    return None
