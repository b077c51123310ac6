"""Model deployments, their workers, and LLM benchmarks (types, inputs and stream messages).

Latencies are reported in milliseconds, throughputs per second, with the serving community's
definitions (vLLM's serving benchmark), written on each field.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import strawberry

from domain.model import benchmark as bm
from domain.model import deployment as dm
from domain.model import load as lm
from domain.model.ids import BenchmarkId, JobId
from domain.model.job import JobPriority
from domain.services import benchmarks as bs
from domain.serving import capacity
from schema.context import Info
from schema.cost import SAMPLES_PAGE
from schema.types.connection import PageInfo
from schema.types.derive import derive
from schema.types.errors import UserInputError
from schema.types.job import Job

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
strawberry.enum(
    bm.BenchmarkStatus,
    description="PENDING: its job waits to run; RUNNING: sending requests; COMPLETED: ended with "
    "at least one successful request; FAILED: unreachable endpoint, every request failed, or its "
    "job failed; CANCELLED: cancelled (what it measured so far is kept).",
)
strawberry.enum(
    lm.Api, name="BenchmarkApi", description="CHAT: /chat/completions; COMPLETIONS: /completions."
)
strawberry.enum(lm.LengthKind, name="LengthDistribution")
strawberry.enum(
    lm.FailureKind,
    name="RequestFailureKind",
    description="Why a request failed: HTTP_STATUS (an error status such as 429 or 500), "
    "CONNECTION (refused, or dropped mid-stream), TIMEOUT (stalled), MALFORMED (broken SSE or "
    "JSON, an error event, no [DONE]), EMPTY (no token), CANCELLED (the run was cancelled).",
)

MS = 1000.0


# --- deployments ----------------------------------------------------------------------------


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
    replicas: int = strawberry.field(description="Replicas wanted.")
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


DeploymentUpdate = Annotated[
    DeploymentSnapshot | DeploymentChange, strawberry.union("DeploymentUpdate")
]


# --- benchmarks -----------------------------------------------------------------------------


@strawberry.type(
    description="Token counts: FIXED `mean`, UNIFORM in [low, high], NORMAL(mean, "
    "stddev) clamped to [low, high]."
)
class TokenLengths:
    distribution: lm.LengthKind
    mean: int
    low: int
    high: int
    stddev: float

    @classmethod
    def from_domain(cls, x: lm.Lengths) -> TokenLengths:
        return derive(cls, x, distribution=x.kind)


@strawberry.type(description="What a benchmark sends.")
class BenchmarkLoad:
    endpoint_url: str | None = strawberry.field(description="Known once the run starts.")
    model: str
    api: lm.Api
    concurrency: int | None = strawberry.field(description="Users: requests in flight at most.")
    request_rate: float | None = strawberry.field(
        description="Requests per second (Poisson arrivals); null: as fast as the users go."
    )
    request_count: int | None
    duration_seconds: float | None
    prompt_tokens: TokenLengths
    output_tokens: TokenLengths
    dataset_size: int = strawberry.field(description="Prompts given (0: generated prompts).")
    seed: int
    request_timeout_seconds: float

    @classmethod
    def from_domain(cls, p: lm.LoadPlan) -> BenchmarkLoad:
        return derive(cls, p, endpoint_url=p.endpoint or None, dataset_size=len(p.prompts))


@strawberry.type(
    description="One latency over a run's successful requests, in milliseconds "
    "(percentiles interpolated linearly, as numpy's default)."
)
class LatencySummary:
    mean_ms: float
    p50_ms: float
    p90_ms: float
    p99_ms: float
    max_ms: float
    count: int = strawberry.field(description="Values it summarises.")

    @classmethod
    def from_domain(cls, s: lm.Summary | None) -> LatencySummary | None:
        if s is None:
            return None
        return cls(
            mean_ms=s.mean * MS,
            p50_ms=s.p50 * MS,
            p90_ms=s.p90 * MS,
            p99_ms=s.p99 * MS,
            max_ms=s.max * MS,
            count=s.count,
        )


@strawberry.type
class FailureCount:
    reason: str
    count: int


@strawberry.type(description="What a run measured (vLLM's serving-benchmark definitions).")
class BenchmarkResult:
    duration_seconds: float = strawberry.field(
        description="From the first request sent to the last one ended."
    )
    successful_requests: int
    failed_requests: int
    input_tokens: int = strawberry.field(description="Prompt tokens of successful requests.")
    output_tokens: int = strawberry.field(description="Tokens generated by successful requests.")
    request_throughput: float = strawberry.field(
        description="Successful requests per second of duration."
    )
    input_throughput: float = strawberry.field(description="inputTokens / durationSeconds.")
    output_throughput: float = strawberry.field(description="outputTokens / durationSeconds.")
    total_token_throughput: float = strawberry.field(
        description="(inputTokens + outputTokens) / durationSeconds."
    )
    ttft: LatencySummary | None = strawberry.field(
        description="Time to first token: from sending the request to the first streamed token."
    )
    tpot: LatencySummary | None = strawberry.field(
        description="Time per output token, excluding the first: (E2EL - TTFT) / (output tokens "
        "- 1), per request with more than one output token."
    )
    itl: LatencySummary | None = strawberry.field(
        description="Inter-token latency: every gap between consecutive streamed tokens (chunks), "
        "pooled over the requests."
    )
    e2el: LatencySummary | None = strawberry.field(
        description="End-to-end latency: from sending the request to the end of its stream."
    )
    failures: list[FailureCount] = strawberry.field(description="Failed requests by reason.")

    @classmethod
    def from_domain(cls, r: lm.LoadResult | None) -> BenchmarkResult | None:
        if r is None:
            return None
        return derive(cls, r, failures=[FailureCount(reason=k, count=n) for k, n in r.failures])


@strawberry.type(description="A running benchmark so far.")
class BenchmarkProgress:
    elapsed_seconds: float
    requests_done: int = strawberry.field(description="Requests ended (successful or not).")
    requests_failed: int
    output_tokens: int
    ttft_mean_ms: float | None
    output_throughput: float = strawberry.field(description="Output tokens per second so far.")

    @classmethod
    def from_domain(cls, p: lm.LoadProgress | None) -> BenchmarkProgress | None:
        if p is None:
            return None
        return derive(cls, p, ttft_mean_ms=None if p.ttft_mean is None else p.ttft_mean * MS)


@strawberry.type(description="One request of a run, as the client timed it.")
class RequestSample:
    index: int
    sent_at_seconds: float = strawberry.field(description="From the run's start.")
    ok: bool
    prompt_tokens: int
    output_tokens: int
    ttft_ms: float | None
    e2el_ms: float | None
    itl_ms: list[float] = strawberry.field(description="Gaps between its streamed tokens.")
    failure: lm.FailureKind | None
    error: str | None

    @classmethod
    def from_domain(cls, s: lm.RequestSample) -> RequestSample:
        return derive(
            cls,
            s,
            sent_at_seconds=s.sent_at,
            ttft_ms=None if s.ttft is None else s.ttft * MS,
            e2el_ms=None if s.e2el is None else s.e2el * MS,
            itl_ms=[g * MS for g in s.itl],
        )


@strawberry.type
class ConfigurationEntry:
    key: str
    value: str | None


@strawberry.type(description="A load test of a model endpoint, run as a job without GPUs.")
class Benchmark:
    id: strawberry.ID
    name: str
    project_id: strawberry.ID
    cluster_id: strawberry.ID
    deployment_id: strawberry.ID | None
    job_id: strawberry.ID = strawberry.field(
        description="The job it runs as (queued, estimated and drawn like every job)."
    )
    status: bm.BenchmarkStatus
    status_message: str | None
    load: BenchmarkLoad
    configuration: list[ConfigurationEntry] = strawberry.field(
        description="What was measured: the deployment's GPU type, GPUs per replica, replicas "
        "serving, engine and arguments when it started, and the load's shape."
    )
    progress: BenchmarkProgress | None
    result: BenchmarkResult | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    benchmark_id: strawberry.Private[BenchmarkId]

    @strawberry.field(  # type: ignore[untyped-decorator]
        description="Every request of the run (after it ended), in sending order; at most "
        "1,000 a page."
    )
    async def samples(self, info: Info, first: int = 1000, offset: int = 0) -> list[RequestSample]:
        principal = info.context.authenticated()
        if not 0 < first <= SAMPLES_PAGE:
            raise UserInputError(f"first must be 1 to {SAMPLES_PAGE}", field="first")
        if offset < 0:
            raise UserInputError("offset must be at least 0", field="offset")
        found = await info.context.services.benchmarks.samples(principal, self.benchmark_id)
        return [RequestSample.from_domain(s) for s in (found or [])[offset : offset + first]]

    @classmethod
    def from_domain(cls, b: bm.Benchmark) -> Benchmark:
        return derive(
            cls,
            b,
            load=BenchmarkLoad.from_domain(b.plan),
            configuration=[
                ConfigurationEntry(key=k, value=bs._text(v))
                for k, v in sorted(b.configuration.items())
            ],
            benchmark_id=b.id,
        )


@strawberry.type
class BenchmarkEdge:
    cursor: str
    node: Benchmark


@strawberry.type
class BenchmarkConnection:
    edges: list[BenchmarkEdge]
    page_info: PageInfo


@strawberry.type(description="A configuration key whose values differ between the benchmarks.")
class ConfigurationDifference:
    key: str
    values: list[str | None] = strawberry.field(description="One per benchmark, in their order.")


@strawberry.type(description="The best of the benchmarks by one metric.")
class BestBenchmark:
    metric: str = strawberry.field(
        description="ttft, tpot, itl, e2el (lowest mean wins; value in ms) or "
        "requestThroughput, outputThroughput, totalTokenThroughput (highest wins; per second)."
    )
    benchmark_id: strawberry.ID
    value: float


@strawberry.type(description="Benchmarks side by side.")
class BenchmarkComparison:
    benchmarks: list[Benchmark]
    differences: list[ConfigurationDifference]
    best: list[BestBenchmark]

    @classmethod
    def from_domain(cls, c: bs.Comparison) -> BenchmarkComparison:
        names = {
            "request_throughput": "requestThroughput",
            "output_throughput": "outputThroughput",
            "total_token_throughput": "totalTokenThroughput",
        }
        return cls(
            benchmarks=[Benchmark.from_domain(b) for b in c.benchmarks],
            differences=[
                ConfigurationDifference(key=d.key, values=list(d.values)) for d in c.differences
            ],
            best=[
                BestBenchmark(
                    metric=names.get(b.metric, b.metric),
                    benchmark_id=strawberry.ID(str(b.benchmark_id)),
                    value=b.value * MS if b.metric in bs.LOWER_IS_BETTER else b.value,
                )
                for b in c.best
            ],
        )


# --- inputs ---------------------------------------------------------------------------------


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
    cluster_id: strawberry.ID
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
    replicas: int = 1
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


@strawberry.input(
    description="Token counts: FIXED `mean`; UNIFORM [low, high]; NORMAL(mean, "
    "stddev) clamped to [low, high]."
)
class TokenLengthsInput:
    distribution: lm.LengthKind = lm.LengthKind.FIXED
    mean: int = 128
    low: int | None = None
    high: int | None = None
    stddev: float = 0.0

    def to_domain(self) -> lm.Lengths:
        if self.distribution is lm.LengthKind.FIXED:
            return lm.Lengths.fixed(self.mean)
        low = self.low if self.low is not None else 1
        high = self.high if self.high is not None else self.mean
        return lm.Lengths(self.distribution, self.mean, low, high, self.stddev)


@strawberry.input
class RunBenchmarkInput:
    name: str
    project_id: strawberry.ID
    deployment_id: strawberry.ID | None = strawberry.field(
        default=None, description="The deployment to load (or give endpointUrl)."
    )
    endpoint_url: str | None = strawberry.field(
        default=None,
        description="An OpenAI-compatible base URL (ending in /v1): a public address, one the "
        "operator allows, or your own deployment's.",
    )
    cluster_id: strawberry.ID | None = strawberry.field(
        default=None, description="Where an endpointUrl's benchmark runs."
    )
    model: str | None = strawberry.field(
        default=None, description="Required with endpointUrl; a deployment's served name else."
    )
    api: lm.Api = lm.Api.CHAT
    concurrency: int | None = strawberry.field(default=None, description="Users (1-1024).")
    request_rate: float | None = strawberry.field(
        default=None, description="Requests per second, Poisson arrivals."
    )
    request_count: int | None = None
    duration_seconds: float | None = None
    prompt_tokens: TokenLengthsInput | None = None
    output_tokens: TokenLengthsInput | None = None
    prompts: list[str] | None = strawberry.field(
        default=None, description="A dataset of prompts, used in turn instead of generated ones."
    )
    seed: int = 0
    request_timeout_seconds: float = 120.0


@strawberry.input
class DeploymentFilter:
    cluster_ids: list[strawberry.ID] | None = None
    statuses: list[dm.DeploymentStatus] | None = None
