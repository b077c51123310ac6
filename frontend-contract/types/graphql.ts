/* eslint-disable */
import type { DocumentTypeDecoration } from '@graphql-typed-document-node/core';
export type Maybe<T> = T | null;
export type InputMaybe<T> = Maybe<T>;
export type Exact<T extends { [key: string]: unknown }> = { [K in keyof T]: T[K] };
export type MakeOptional<T, K extends keyof T> = Omit<T, K> & { [SubKey in K]?: Maybe<T[SubKey]> };
export type MakeMaybe<T, K extends keyof T> = Omit<T, K> & { [SubKey in K]: Maybe<T[SubKey]> };
export type MakeEmpty<T extends { [key: string]: unknown }, K extends keyof T> = { [_ in K]?: never };
export type Incremental<T> = T | { [P in keyof T]?: P extends ' $fragmentName' | '__typename' ? T[P] : never };
/** All built-in and custom scalars, mapped to their actual values */
export type Scalars = {
  ID: { input: string; output: string; }
  String: { input: string; output: string; }
  Boolean: { input: boolean; output: boolean; }
  Int: { input: number; output: number; }
  Float: { input: number; output: number; }
  /** Date (isoformat) */
  Date: { input: string; output: string; }
  /** Date with time (isoformat) */
  DateTime: { input: string; output: string; }
  /** Decimal (fixed-point) */
  Decimal: { input: string; output: string; }
  /** The `JSON` scalar type represents JSON values as specified by [ECMA-404](https://ecma-international.org/wp-content/uploads/ECMA-404_2nd_edition_december_2017.pdf). */
  JSON: { input: unknown; output: unknown; }
};

/** What a GPU cluster needs beside Kubernetes. */
export type Addon =
  | 'GPU_OPERATOR'
  | 'KUEUE'
  | 'NODE_FEATURE_DISCOVERY';

/** The pinned chart budcluster installs an add-on from. */
export type AddonChart = {
  __typename?: 'AddonChart';
  appVersion: Scalars['String']['output'];
  chart: Scalars['String']['output'];
  /** The Kubernetes versions the pinned version supports, e.g. 1.29 to 1.36. */
  kubernetesVersions: Scalars['String']['output'];
  namespace: Scalars['String']['output'];
  /** The Helm release's name. */
  release: Scalars['String']['output'];
  /** The chart's public Helm repository (an https index or an oci:// path). */
  repository: Scalars['String']['output'];
  /** The pinned chart version. */
  version: Scalars['String']['output'];
};

/** HELM (budcluster installed the pinned chart), FOUND (there before: nothing installed) or BUILT_IN (a simulated cluster). */
export type AddonOrigin =
  | 'BUILT_IN'
  | 'FOUND'
  | 'HELM';

/** MISSING (not on the cluster, not asked for), REQUESTED, INSTALLING, INSTALLED or FAILED (with the reason). */
export type AddonState =
  | 'FAILED'
  | 'INSTALLED'
  | 'INSTALLING'
  | 'MISSING'
  | 'REMOVING'
  | 'REQUESTED';

/** One mutation (or command-line token or key operation): who, what, when, and how it ended. */
export type AuditEvent = {
  __typename?: 'AuditEvent';
  /** `token:<token id>` for an API token, `cli:<user>` for the command line, `address:<ip>` for a caller refused before it had a principal. */
  actor: Scalars['String']['output'];
  at: Scalars['DateTime']['output'];
  id: Scalars['ID']['output'];
  /** What was asked, secrets removed (kubeconfigs, tokens, keys: <removed>). */
  input: Scalars['JSON']['output'];
  /** The mutation (`submitJob`) or the command (`token create`). */
  operation: Scalars['String']['output'];
  /** OK, or the code it was refused with (VALIDATION_FAILED, NOT_FOUND, ...). */
  outcome: Scalars['String']['output'];
  /** graphql or cli. */
  source: Scalars['String']['output'];
  /** Ids of the objects it changed or named. */
  targets: Array<Scalars['String']['output']>;
  /** The tenant it acted for; null for the command line's operator. */
  tenantId?: Maybe<Scalars['ID']['output']>;
  tokenId?: Maybe<Scalars['ID']['output']>;
};

export type AuditEventConnection = {
  __typename?: 'AuditEventConnection';
  edges: Array<AuditEventEdge>;
  pageInfo: PageInfo;
};

export type AuditEventEdge = {
  __typename?: 'AuditEventEdge';
  cursor: Scalars['String']['output'];
  node: AuditEvent;
};

/** Every field given must match. */
export type AuditFilter = {
  actor?: InputMaybe<Scalars['String']['input']>;
  operations?: InputMaybe<Array<Scalars['String']['input']>>;
  outcome?: InputMaybe<Scalars['String']['input']>;
  since?: InputMaybe<Scalars['DateTime']['input']>;
  /** An object's id. */
  target?: InputMaybe<Scalars['String']['input']>;
  until?: InputMaybe<Scalars['DateTime']['input']>;
};

/** How a deployment scales itself. */
export type Autoscaling = {
  __typename?: 'Autoscaling';
  maxReplicas: Scalars['Int']['output'];
  metric: ScaleMetric;
  /** At least this many; 0: it goes to zero when idle and back on the first request (simulated clusters only). */
  minReplicas: Scalars['Int']['output'];
  /** Seconds every look must ask for fewer replicas before it scales down; it scales up at once. */
  scaleDownDelaySeconds: Scalars['Int']['output'];
  /** Seconds without a request before it goes to zero (minReplicas 0). */
  scaleToZeroAfterSeconds: Scalars['Int']['output'];
  /** The metric it keeps each replica at: requests, or seconds of queue time. */
  target: Scalars['Float']['output'];
};

/** How a deployment scales itself: the Horizontal Pod Autoscaler's rule (replicas = ceil(current x metric / target), 10 % tolerance, scale-down after a delay). */
export type AutoscalingInput = {
  /** 1 to 64, at least minReplicas. */
  maxReplicas: Scalars['Int']['input'];
  metric?: ScaleMetric;
  /** 0 to 64; 0 (simulated clusters only) scales to zero when idle. */
  minReplicas: Scalars['Int']['input'];
  scaleDownDelaySeconds?: Scalars['Int']['input'];
  scaleToZeroAfterSeconds?: Scalars['Int']['input'];
  /** Requests in flight per replica (IN_FLIGHT), or seconds (QUEUE_TIME). */
  target: Scalars['Float']['input'];
};

/** A load test of a model endpoint, run as a job without GPUs. */
export type Benchmark = {
  __typename?: 'Benchmark';
  clusterId: Scalars['ID']['output'];
  /** What was measured: the deployment's GPU type, GPUs per replica, replicas serving, engine and arguments when it started, and the load's shape. */
  configuration: Array<ConfigurationEntry>;
  createdAt: Scalars['DateTime']['output'];
  deploymentId?: Maybe<Scalars['ID']['output']>;
  finishedAt?: Maybe<Scalars['DateTime']['output']>;
  id: Scalars['ID']['output'];
  /** The job it runs as (queued, estimated and drawn like every job). */
  jobId: Scalars['ID']['output'];
  load: BenchmarkLoad;
  name: Scalars['String']['output'];
  progress?: Maybe<BenchmarkProgress>;
  projectId: Scalars['ID']['output'];
  result?: Maybe<BenchmarkResult>;
  /** Every request of the run (after it ended), in sending order; at most 1,000 a page. */
  samples: Array<RequestSample>;
  startedAt?: Maybe<Scalars['DateTime']['output']>;
  status: BenchmarkStatus;
  statusMessage?: Maybe<Scalars['String']['output']>;
};


/** A load test of a model endpoint, run as a job without GPUs. */
export type BenchmarkSamplesArgs = {
  first?: Scalars['Int']['input'];
  offset?: Scalars['Int']['input'];
};

/** CHAT: /chat/completions; COMPLETIONS: /completions. */
export type BenchmarkApi =
  | 'CHAT'
  | 'COMPLETIONS';

/** Benchmarks side by side. */
export type BenchmarkComparison = {
  __typename?: 'BenchmarkComparison';
  benchmarks: Array<Benchmark>;
  best: Array<BestBenchmark>;
  differences: Array<ConfigurationDifference>;
};

export type BenchmarkConnection = {
  __typename?: 'BenchmarkConnection';
  edges: Array<BenchmarkEdge>;
  pageInfo: PageInfo;
};

export type BenchmarkEdge = {
  __typename?: 'BenchmarkEdge';
  cursor: Scalars['String']['output'];
  node: Benchmark;
};

/** What a benchmark sends. */
export type BenchmarkLoad = {
  __typename?: 'BenchmarkLoad';
  api: BenchmarkApi;
  /** Users: requests in flight at most. */
  concurrency?: Maybe<Scalars['Int']['output']>;
  /** Prompts given (0: generated prompts). */
  datasetSize: Scalars['Int']['output'];
  durationSeconds?: Maybe<Scalars['Float']['output']>;
  /** Known once the run starts. */
  endpointUrl?: Maybe<Scalars['String']['output']>;
  model: Scalars['String']['output'];
  outputTokens: TokenLengths;
  promptTokens: TokenLengths;
  requestCount?: Maybe<Scalars['Int']['output']>;
  /** Requests per second (Poisson arrivals); null: as fast as the users go. */
  requestRate?: Maybe<Scalars['Float']['output']>;
  requestTimeoutSeconds: Scalars['Float']['output'];
  seed: Scalars['Int']['output'];
};

/** A running benchmark so far. */
export type BenchmarkProgress = {
  __typename?: 'BenchmarkProgress';
  elapsedSeconds: Scalars['Float']['output'];
  /** Output tokens per second so far. */
  outputThroughput: Scalars['Float']['output'];
  outputTokens: Scalars['Int']['output'];
  /** Requests ended (successful or not). */
  requestsDone: Scalars['Int']['output'];
  requestsFailed: Scalars['Int']['output'];
  ttftMeanMs?: Maybe<Scalars['Float']['output']>;
};

/** What a run measured (vLLM's serving-benchmark definitions). */
export type BenchmarkResult = {
  __typename?: 'BenchmarkResult';
  /** From the first request sent to the last one ended. */
  durationSeconds: Scalars['Float']['output'];
  /** End-to-end latency: from sending the request to the end of its stream. */
  e2el?: Maybe<LatencySummary>;
  failedRequests: Scalars['Int']['output'];
  /** Failed requests by reason. */
  failures: Array<FailureCount>;
  /** inputTokens / durationSeconds. */
  inputThroughput: Scalars['Float']['output'];
  /** Prompt tokens of successful requests. */
  inputTokens: Scalars['Int']['output'];
  /** Inter-token latency: every gap between consecutive streamed tokens (chunks), pooled over the requests. */
  itl?: Maybe<LatencySummary>;
  /** outputTokens / durationSeconds. */
  outputThroughput: Scalars['Float']['output'];
  /** Tokens generated by successful requests. */
  outputTokens: Scalars['Int']['output'];
  /** Successful requests per second of duration. */
  requestThroughput: Scalars['Float']['output'];
  successfulRequests: Scalars['Int']['output'];
  /** (inputTokens + outputTokens) / durationSeconds. */
  totalTokenThroughput: Scalars['Float']['output'];
  /** Time per output token, excluding the first: (E2EL - TTFT) / (output tokens - 1), per request with more than one output token. */
  tpot?: Maybe<LatencySummary>;
  /** Time to first token: from sending the request to the first streamed token. */
  ttft?: Maybe<LatencySummary>;
};

export type BenchmarkResultUnion = Benchmark | ConflictError | ForbiddenError | NotFoundError | ValidationError;

/** PENDING: its job waits to run; RUNNING: sending requests; COMPLETED: ended with at least one successful request; FAILED: unreachable endpoint, every request failed, or its job failed; CANCELLED: cancelled (what it measured so far is kept). */
export type BenchmarkStatus =
  | 'CANCELLED'
  | 'COMPLETED'
  | 'FAILED'
  | 'PENDING'
  | 'RUNNING';

/** The best of the benchmarks by one metric. */
export type BestBenchmark = {
  __typename?: 'BestBenchmark';
  benchmarkId: Scalars['ID']['output'];
  /** ttft, tpot, itl, e2el (lowest mean wins; value in ms) or requestThroughput, outputThroughput, totalTokenThroughput (highest wins; per second). */
  metric: Scalars['String']['output'];
  value: Scalars['Float']['output'];
};

/** Kueue's borrowWithinCohort: preemption in other queues of the cohort for a workload that has to borrow to fit (classical preemption only; Kueue ignores it with fair sharing). */
export type BorrowWithinCohort = {
  __typename?: 'BorrowWithinCohort';
  /** Only workloads of at most this priority value may be preempted; null: any the policy allows. */
  maxPriorityThreshold?: Maybe<Scalars['Int']['output']>;
  policy: BorrowWithinCohortPolicy;
};

export type BorrowWithinCohortInput = {
  /** Only workloads of at most this priority value may be preempted; null: any the policy allows. */
  maxPriorityThreshold?: InputMaybe<Scalars['Int']['input']>;
  /** Not NEVER only while reclaimWithinCohort is not NEVER (Kueue's rule). */
  policy?: BorrowWithinCohortPolicy;
};

/** Which workloads of other queues in the cohort a workload that must borrow may preempt: NEVER, or LOWER_PRIORITY ones. */
export type BorrowWithinCohortPolicy =
  | 'LOWER_PRIORITY'
  | 'NEVER';

/** A project's or tenant's budget in its current period: what it has spent (metered runs on the period's UTC days, and its running jobs so far), what is left, and when it is expected to run out. 80 % and 100 % are said once a period (the audit trail, BUDGET events on its running jobs). */
export type Budget = {
  __typename?: 'Budget';
  action: BudgetAction;
  /** The highest share said this period: 0, 80 or 100. */
  alerted: Scalars['Int']['output'];
  exhausted: Scalars['Boolean']['output'];
  left: Scalars['Decimal']['output'];
  limit: Scalars['Decimal']['output'];
  period: BudgetPeriod;
  /** The period's last UTC day. */
  periodEnd: Scalars['Date']['output'];
  /** The period's first UTC day. */
  periodStart: Scalars['Date']['output'];
  projectId?: Maybe<Scalars['ID']['output']>;
  /** When it is expected to be spent (see BudgetExhaustion). */
  projectedExhaustion: BudgetExhaustion;
  scope: BudgetScope;
  /** Of the limit spent, in whole percent. */
  share: Scalars['Int']['output'];
  spent: Scalars['Decimal']['output'];
  tenantId: Scalars['ID']['output'];
  updatedAt: Scalars['DateTime']['output'];
};

/** When a job's cost reaches its budget (its budgetLimit, or its project's or tenant's Budget this period): WARN says so (BUDGET events, the audit trail, a metric) and lets it run; PAUSE holds it PENDING at submission when it is expected to cost more, and once it has, takes it back from its cluster as a preemption does (not a failure, no retry used) and holds it until the budget allows (a raised limit, a new period); CANCEL refuses it at submission and cancels it once it has. Each is said at 80 % too. */
export type BudgetAction =
  | 'CANCEL'
  | 'PAUSE'
  | 'WARN';

/** When a budget is expected to be spent in its period, from the schedule: its scope's running and waiting work on every cluster, by hour, after what it has spent; at the earliest and latest its waiting jobs' start windows allow. Null: not in this period (held jobs do not spend); a budget already spent: now. */
export type BudgetExhaustion = {
  __typename?: 'BudgetExhaustion';
  earliest?: Maybe<Scalars['DateTime']['output']>;
  expected?: Maybe<Scalars['DateTime']['output']>;
  latest?: Maybe<Scalars['DateTime']['output']>;
};

/** A job's cost against its budget: `share` % of budgetLimit reached (80 or 100), or, `expected`, what it was expected to cost when submitted (over its budget). */
export type BudgetNotice = {
  __typename?: 'BudgetNotice';
  action: BudgetAction;
  cost: Scalars['Decimal']['output'];
  expected: Scalars['Boolean']['output'];
  limit: Scalars['Decimal']['output'];
  message: Scalars['String']['output'];
  /** Whose budget: the job's own, or its project's or tenant's (then `limit` is that budget's for its period, and `spent` what it had spent). */
  scope: BudgetScope;
  share: Scalars['Int']['output'];
  /** A project's or tenant's budget: what it had spent this period. */
  spent?: Maybe<Scalars['Decimal']['output']>;
};

/** A budget's period: MONTH is a calendar month in UTC. */
export type BudgetPeriod =
  | 'MONTH';

export type BudgetResult = Budget | ForbiddenError | NotFoundError | ValidationError;

/** Whose budget: a job's own (budgetLimit), its project's or its tenant's. */
export type BudgetScope =
  | 'JOB'
  | 'PROJECT'
  | 'TENANT';

/** GPUs of a flavor booked for a tenant from start to end. */
export type CapacityReservation = {
  __typename?: 'CapacityReservation';
  cancelledAt?: Maybe<Scalars['DateTime']['output']>;
  clusterId: Scalars['ID']['output'];
  clusterQueue: Scalars['String']['output'];
  createdAt: Scalars['DateTime']['output'];
  end: Scalars['DateTime']['output'];
  flavor: Scalars['String']['output'];
  gpuCount: Scalars['Int']['output'];
  id: Scalars['ID']['output'];
  name: Scalars['String']['output'];
  start: Scalars['DateTime']['output'];
  tenantId: Scalars['ID']['output'];
};

export type CapacityReservationInput = {
  clusterId: Scalars['ID']['input'];
  /** The ClusterQueue whose quota pays for it. */
  clusterQueue: Scalars['String']['input'];
  end: Scalars['DateTime']['input'];
  flavor: Scalars['String']['input'];
  gpuCount: Scalars['Int']['input'];
  name: Scalars['String']['input'];
  start: Scalars['DateTime']['input'];
};

export type CapacityReservationResult = CapacityReservation | ConflictError | ForbiddenError | NotFoundError | ValidationError;

export type Cluster = {
  __typename?: 'Cluster';
  /** Kueue, Node Feature Discovery and the NVIDIA GPU Operator on this cluster: each one's state, version and health (installAddons installs what is missing). */
  addons: Array<ClusterAddon>;
  capacity: Array<GpuCapacity>;
  clusterQueues: Array<ClusterQueue>;
  cohorts: Array<Cohort>;
  /** The kubeconfig context in use. */
  context?: Maybe<Scalars['String']['output']>;
  /** What running and waiting work is expected to cost over the next `hours` (1 to 336), by hour and by project, with the range the start windows allow. */
  costForecast: CostForecast;
  createdAt: Scalars['DateTime']['output'];
  enableMasterNode: Scalars['Boolean']['output'];
  /** How close estimates came to what happened, over jobs that ended since `since` (default: 30 days). */
  estimateAccuracy: EstimateAccuracy;
  /** Today's hourly price per GPU for the GPU types of its nodes and those a price was set for (setGpuPrice); estimated and actual costs use them. */
  gpuPrices: Array<GpuPrice>;
  /** The health checks of the last sync; `checks` picks some by name. */
  health: Array<HealthCheck>;
  healthCheckedAt?: Maybe<Scalars['DateTime']['output']>;
  id: Scalars['ID']['output'];
  ingressUrl?: Maybe<Scalars['String']['output']>;
  lastRetryTime?: Maybe<Scalars['DateTime']['output']>;
  /** When the nodes and health were last read from the cluster. */
  lastSyncAt?: Maybe<Scalars['DateTime']['output']>;
  /** Your tenant's LocalQueues (an admin sees every tenant's). */
  localQueues: Array<LocalQueue>;
  name: Scalars['String']['output'];
  nodes: Array<Node>;
  notAvailableSince?: Maybe<Scalars['DateTime']['output']>;
  platform: Platform;
  quotaSettings: QuotaSettings;
  reason?: Maybe<Scalars['String']['output']>;
  /** Your tenant's reservations that have not ended, cancelled ones included (an admin sees every tenant's). */
  reservations: Array<CapacityReservation>;
  resourceFlavors: Array<ResourceFlavor>;
  /** What runs on which GPU in [from, to), what will run when, the queue and the free-GPU forecast. Defaults: from an hour ago (rounded down to 5 minutes), to 24 hours after `from`. */
  schedule: Schedule;
  /** The Kubernetes API server's URL (needs clusters:write). */
  serverUrl?: Maybe<Scalars['String']['output']>;
  status: ClusterStatus;
  updatedAt: Scalars['DateTime']['output'];
};


export type ClusterCostForecastArgs = {
  hours?: Scalars['Int']['input'];
};


export type ClusterEstimateAccuracyArgs = {
  since?: InputMaybe<Scalars['DateTime']['input']>;
};


export type ClusterHealthArgs = {
  checks?: InputMaybe<Array<Scalars['String']['input']>>;
};


export type ClusterScheduleArgs = {
  filter?: InputMaybe<ScheduleFilter>;
  from?: InputMaybe<Scalars['DateTime']['input']>;
  to?: InputMaybe<Scalars['DateTime']['input']>;
};

/** An add-on as it stands on one cluster, with its health. */
export type ClusterAddon = {
  __typename?: 'ClusterAddon';
  chart: AddonChart;
  /** The cluster's health check for it (nfd, kueue, gpu_operator), as of the last sync. */
  health?: Maybe<HealthCheck>;
  name: Addon;
  origin?: Maybe<AddonOrigin>;
  /** Why it FAILED, or what was found. */
  reason?: Maybe<Scalars['String']['output']>;
  /** Where the chart was taken from: its repository or the operator's mirror (needs clusters:write). */
  repository?: Maybe<Scalars['String']['output']>;
  requestedAt?: Maybe<Scalars['DateTime']['output']>;
  state: AddonState;
  title: Scalars['String']['output'];
  updatedAt?: Maybe<Scalars['DateTime']['output']>;
  /** The pinned version installAddons would upgrade budcluster's release to (it runs another: an earlier budcluster's pin, or an upgrade that failed); null when there is none. A release budcluster did not install (FOUND) is never upgraded. */
  upgradeTo?: Maybe<Scalars['String']['output']>;
  /** While an upgrade is asked for, runs or has FAILED: the version that still runs. */
  upgradingFrom?: Maybe<Scalars['String']['output']>;
  /** The chart version of budcluster's release (HELM: the one that runs, the old one until an upgrade is done), or the version the cluster runs (FOUND, when the health check read it). */
  version?: Maybe<Scalars['String']['output']>;
};

/** The cluster after a change of its status (STATUS) or nodes (NODES). */
export type ClusterChange = {
  __typename?: 'ClusterChange';
  kind: Scalars['String']['output'];
  nodes: Array<Node>;
  reason?: Maybe<Scalars['String']['output']>;
  sequence: Scalars['Int']['output'];
  status: ClusterStatus;
};

/** Quotas, per flavor, that LocalQueues submit into. */
export type ClusterQueue = {
  __typename?: 'ClusterQueue';
  clusterId: Scalars['ID']['output'];
  cohort?: Maybe<Scalars['String']['output']>;
  createdAt: Scalars['DateTime']['output'];
  /** Kueue's fairSharing.weight: with fair sharing on (QuotaSettings.fairSharing), unused quota goes first to the queue or cohort with the lowest share (its usage above nominal quota divided by this weight), and preemption evens shares out; 0 puts it always last. Ignored while fair sharing is off. */
  fairSharingWeight: Scalars['Float']['output'];
  flavorFungibility: FlavorFungibility;
  name: Scalars['String']['output'];
  preemption: PreemptionPolicy;
  queueingStrategy: QueueingStrategy;
  resourceGroups: Array<ResourceGroup>;
  updatedAt: Scalars['DateTime']['output'];
  /** A row per flavor and resource of its quota. */
  usage: Array<FlavorUsage>;
};

/** A ClusterQueue whole: on update, its complete new state. */
export type ClusterQueueInput = {
  clusterId: Scalars['ID']['input'];
  cohort?: InputMaybe<Scalars['String']['input']>;
  /** Kueue's fairSharing.weight (see ClusterQueue.fairSharingWeight): 0, or more than 1e-9. */
  fairSharingWeight?: Scalars['Float']['input'];
  flavorFungibility?: FlavorFungibilityInput;
  name: Scalars['String']['input'];
  preemption?: PreemptionPolicyInput;
  queueingStrategy?: QueueingStrategy;
  resourceGroups?: Array<ResourceGroupInput>;
};

export type ClusterQueueResult = ClusterQueue | ConflictError | ForbiddenError | NotFoundError | ValidationError;

export type ClusterResult = Cluster | ConflictError | ForbiddenError | NotFoundError | ValidationError;

/** A cluster's status and nodes, as of `sequence`. */
export type ClusterSnapshot = {
  __typename?: 'ClusterSnapshot';
  nodes: Array<Node>;
  reason?: Maybe<Scalars['String']['output']>;
  sequence: Scalars['Int']['output'];
  /** subscribed, history-gone, unknown-since or resync (as for JobSnapshot). */
  snapshotReason: Scalars['String']['output'];
  status: ClusterStatus;
};

export type ClusterStatus =
  | 'AVAILABLE'
  | 'DELETING'
  | 'ERROR'
  | 'NOT_AVAILABLE'
  | 'REGISTERING';

export type ClusterUpdate = ClusterChange | ClusterSnapshot;

/** ClusterQueues that lend each other their unused quota; cohorts form a tree (Kueue's hierarchical cohorts), each sharing its own quotas with everything below it. */
export type Cohort = {
  __typename?: 'Cohort';
  clusterId: Scalars['ID']['output'];
  createdAt: Scalars['DateTime']['output'];
  description?: Maybe<Scalars['String']['output']>;
  /** Kueue's fairSharing.weight: with fair sharing on (QuotaSettings.fairSharing), unused quota goes first to the queue or cohort with the lowest share (its usage above nominal quota divided by this weight), and preemption evens shares out; 0 puts it always last. Ignored while fair sharing is off. */
  fairSharingWeight: Scalars['Float']['output'];
  name: Scalars['String']['output'];
  /** Kueue's parentName: the cohort this one borrows from and lends to. It may name a cohort with no Cohort object: Kueue takes that as an implicit cohort (no quotas, no parent). */
  parent?: Maybe<Scalars['String']['output']>;
  /** The cohort's own quotas, on top of its members': a pool shared by its subtree. borrowingLimit (what the subtree may borrow from the parent) and lendingLimit (what it may lend to it) only with a parent. */
  resourceGroups: Array<ResourceGroup>;
};

/** A Cohort whole: on update, its complete new state. */
export type CohortInput = {
  clusterId: Scalars['ID']['input'];
  description?: InputMaybe<Scalars['String']['input']>;
  /** Kueue's fairSharing.weight (see ClusterQueue.fairSharingWeight): 0, or more than 1e-9. */
  fairSharingWeight?: Scalars['Float']['input'];
  name: Scalars['String']['input'];
  /** Its parent cohort; one with no Cohort object is implicit, as in Kueue. It must not make the cohort its own ancestor. */
  parent?: InputMaybe<Scalars['String']['input']>;
  /** The cohort's own quotas; borrowingLimit and lendingLimit only with a parent (a cohort may lend more than its nominalQuota: its subtree's quota too). */
  resourceGroups?: Array<ResourceGroupInput>;
};

export type CohortResult = Cohort | ConflictError | ForbiddenError | NotFoundError | ValidationError;

/** A configuration key whose values differ between the benchmarks. */
export type ConfigurationDifference = {
  __typename?: 'ConfigurationDifference';
  key: Scalars['String']['output'];
  /** One per benchmark, in their order. */
  values: Array<Maybe<Scalars['String']['output']>>;
};

export type ConfigurationEntry = {
  __typename?: 'ConfigurationEntry';
  key: Scalars['String']['output'];
  value?: Maybe<Scalars['String']['output']>;
};

/** The request conflicts with the object's current state. */
export type ConflictError = UserError & {
  __typename?: 'ConflictError';
  code: Scalars['String']['output'];
  message: Scalars['String']['output'];
};

/** What a cluster's running and waiting work (yours; the operator: everyone's) is expected to cost, from its schedule at today's prices: by hour from the current hour, and by project. Work runs from its estimated start to its estimated end (a service until the forecast's end); GPU-less work is not forecast. */
export type CostForecast = {
  __typename?: 'CostForecast';
  end: Scalars['DateTime']['output'];
  hours: Array<CostHour>;
  projects: Array<ProjectCost>;
  start: Scalars['DateTime']['output'];
};

/** One hour of a cost forecast: what running and waiting work is expected to cost in it as scheduled, and the least and most it may, with each waiting job starting anywhere in its start window. */
export type CostHour = {
  __typename?: 'CostHour';
  cost: Scalars['Decimal']['output'];
  high: Scalars['Decimal']['output'];
  low: Scalars['Decimal']['output'];
  start: Scalars['DateTime']['output'];
};

export type DeployModelInput = {
  /** Scale itself within these bounds; null: `replicas` stays. */
  autoscaling?: InputMaybe<AutoscalingInput>;
  /** A Helm chart of yours (real clusters, a later release). */
  chart?: InputMaybe<Scalars['String']['input']>;
  /** The cluster to run on; or give fleetId instead. */
  clusterId?: InputMaybe<Scalars['ID']['input']>;
  /** Requests each replica serves at once (maxNumSeqs). */
  concurrency?: InputMaybe<Scalars['Int']['input']>;
  cpuCores?: Scalars['Float']['input'];
  engine?: ServingEngine;
  engineArgs?: InputMaybe<EngineArgsInput>;
  /** A fleet: the deployment goes to the member where its first replica is estimated to start soonest (every replica runs there; replicas do not move). */
  fleetId?: InputMaybe<Scalars['ID']['input']>;
  gpuType?: InputMaybe<Scalars['String']['input']>;
  /** Optional check: must equal tensorParallelSize x pipelineParallelSize. */
  gpusPerReplica?: InputMaybe<Scalars['Int']['input']>;
  image?: InputMaybe<Scalars['String']['input']>;
  maxRetries?: Scalars['Int']['input'];
  memoryGb?: Scalars['Float']['input'];
  /** A Hugging Face repository (org/name), an absolute path on the nodes, or a URI (hf://, s3://, gs://, pvc://). */
  model: Scalars['String']['input'];
  /** A DNS-1123 label of at most 50 characters. */
  name: Scalars['String']['input'];
  priority?: JobPriority;
  projectId: Scalars['ID']['input'];
  /** Replicas to start with (within autoscaling's bounds, if given). */
  replicas?: Scalars['Int']['input'];
  /** Your tenant's secrets each replica gets, e.g. a gated model's token as the key HF_TOKEN (see setSecret). */
  secrets?: Array<SecretRefInput>;
  servedModelName?: InputMaybe<Scalars['String']['input']>;
};

/** A model served on a cluster by one or more replicas. */
export type Deployment = {
  __typename?: 'Deployment';
  /** How it scales itself (null: `replicas` is what you set). */
  autoscaling?: Maybe<Autoscaling>;
  clusterId: Scalars['ID']['output'];
  /** Requests each replica serves at once (engineArgs.maxNumSeqs). */
  concurrency: Scalars['Int']['output'];
  cpuCores: Scalars['Float']['output'];
  createdAt: Scalars['DateTime']['output'];
  /** The OpenAI-compatible base URL (ending in /v1), once it serves. */
  endpointUrl?: Maybe<Scalars['String']['output']>;
  endpoints: Array<ModelApi>;
  engine: ServingEngine;
  engineArgs: EngineArgs;
  gpuType?: Maybe<Scalars['String']['output']>;
  /** tensorParallelSize x pipelineParallelSize. */
  gpusPerReplica: Scalars['Int']['output'];
  id: Scalars['ID']['output'];
  image?: Maybe<Scalars['String']['output']>;
  memoryGb: Scalars['Float']['output'];
  model: Scalars['String']['output'];
  name: Scalars['String']['output'];
  projectId: Scalars['ID']['output'];
  /** The SERVICE jobs running its replicas, oldest first. */
  replicaJobs: Array<Job>;
  /** Replicas wanted. */
  replicas: Scalars['Int']['output'];
  /** The last steps its autoscaler took (at most 20), newest first. */
  scalingSteps: Array<ScalingStep>;
  /** The secrets of its tenant's each replica gets (names, never values). */
  secrets: Array<SecretRef>;
  /** The `model` to name in requests. */
  servedModelName: Scalars['String']['output'];
  status: DeploymentStatus;
  statusMessage?: Maybe<Scalars['String']['output']>;
  stoppedAt?: Maybe<Scalars['DateTime']['output']>;
  updatedAt: Scalars['DateTime']['output'];
  /** What it asks that its cluster, as it is now, can never give, though it was accepted: e.g. more replicas than the cluster's nodes hold at once (the others wait for ever). Empty when all is well; read it after deployModel and scaleDeployment. */
  warnings: Array<DeploymentWarning>;
  workers: Array<Worker>;
};

/** A deployment after one change (status, workers, endpoint, replicas). */
export type DeploymentChange = {
  __typename?: 'DeploymentChange';
  deployment: Deployment;
  /** The step its autoscaler took, when this change is one. */
  scalingStep?: Maybe<ScalingStep>;
  sequence: Scalars['Int']['output'];
};

export type DeploymentConnection = {
  __typename?: 'DeploymentConnection';
  edges: Array<DeploymentEdge>;
  pageInfo: PageInfo;
};

export type DeploymentEdge = {
  __typename?: 'DeploymentEdge';
  cursor: Scalars['String']['output'];
  node: Deployment;
};

export type DeploymentFilter = {
  clusterIds?: InputMaybe<Array<Scalars['ID']['input']>>;
  statuses?: InputMaybe<Array<DeploymentStatus>>;
};

export type DeploymentResult = ConflictError | Deployment | ForbiddenError | NotFoundError | ValidationError;

/** Your deployments on the cluster, as of `sequence`. */
export type DeploymentSnapshot = {
  __typename?: 'DeploymentSnapshot';
  deployments: Array<Deployment>;
  /** subscribed; history-gone (since was older than the retained history); unknown-since (since was ahead of it); or resync (this subscriber fell behind). */
  reason: Scalars['String']['output'];
  sequence: Scalars['Int']['output'];
};

/** DEPLOYING: replicas queued or starting; RUNNING: at least one replica serves and the endpoint answers; STOPPED: stopped, or scaled to zero; FAILED: every replica failed. */
export type DeploymentStatus =
  | 'DEPLOYING'
  | 'FAILED'
  | 'RUNNING'
  | 'STOPPED';

export type DeploymentType =
  | 'DOCKER'
  | 'HELM'
  | 'MODEL';

export type DeploymentUpdate = DeploymentChange | DeploymentSnapshot;

/** Something about a deployment that will not work as asked, though it was accepted and goes on: it says what, and which input to change. */
export type DeploymentWarning = {
  __typename?: 'DeploymentWarning';
  /** REPLICAS_EXCEED_CLUSTER: fewer than `replicas` can ever run at once on the cluster (counted by GPUs, cores and memory per node; quotas aside). */
  code: Scalars['String']['output'];
  /** In words, e.g. "only 16 of 20 replicas can ever run: cluster local-sim has 16 nvidia-a100-80gb GPUs". */
  message: Scalars['String']['output'];
  /** The input it is about, by its path as ValidationError names fields (e.g. `replicas`). */
  path: Scalars['String']['output'];
};

/** A node, or a whole cluster, taken out of service: nothing new is admitted there; its batch and training jobs get SIGTERM and their grace period, then are requeued (no retry used); a deployment's replicas start elsewhere before the old ones stop. */
export type Drain = {
  __typename?: 'Drain';
  /** Pods (namespace/name) a PodDisruptionBudget kept on the node at the last try (Kubernetes; the operator's only: empty for tenants). */
  blockedPods: Array<Scalars['String']['output']>;
  clusterId: Scalars['ID']['output'];
  /** When nothing of budcluster's held resources there any more. */
  drainedAt?: Maybe<Scalars['DateTime']['output']>;
  /** When it was undrained. */
  endedAt?: Maybe<Scalars['DateTime']['output']>;
  /** When it is expected to be DRAINED (when it was, once it is); null while a replacement replica has no estimated start. */
  estimatedEnd?: Maybe<Scalars['DateTime']['output']>;
  id: Scalars['ID']['output'];
  /** The node drained; null: the whole cluster. */
  node?: Maybe<Scalars['String']['output']>;
  reason: Scalars['String']['output'];
  /** budcluster's jobs still admitted or running where it covers (a replica waiting for its replacement to run). A requeued job's old copy is not counted: its grace period is in estimatedEnd. */
  remaining: Scalars['Int']['output'];
  /** Deployment replicas it had started elsewhere before stopping the old ones. */
  replacing: Scalars['Int']['output'];
  startedAt: Scalars['DateTime']['output'];
  state: DrainState;
};

export type DrainResult = ConflictError | Drain | ForbiddenError | NotFoundError | ValidationError;

/** Where a drain stands. */
export type DrainState =
  | 'DRAINED'
  | 'DRAINING'
  | 'ENDED';

/** The engine's arguments (vLLM's names). */
export type EngineArgs = {
  __typename?: 'EngineArgs';
  dtype: Scalars['String']['output'];
  extraArgs: Array<Scalars['String']['output']>;
  gpuMemoryUtilization: Scalars['Float']['output'];
  maxModelLen: Scalars['Int']['output'];
  /** Requests a replica serves at once (its concurrency); more wait. */
  maxNumSeqs: Scalars['Int']['output'];
  pipelineParallelSize: Scalars['Int']['output'];
  quantization?: Maybe<Scalars['String']['output']>;
  tensorParallelSize: Scalars['Int']['output'];
};

/** Engine arguments (vLLM's names); omitted ones take vLLM's defaults. */
export type EngineArgsInput = {
  dtype?: Scalars['String']['input'];
  extraArgs?: Array<Scalars['String']['input']>;
  gpuMemoryUtilization?: Scalars['Float']['input'];
  maxModelLen?: Scalars['Int']['input'];
  /** Defaults to the deployment's `concurrency`, else 256. */
  maxNumSeqs?: InputMaybe<Scalars['Int']['input']>;
  pipelineParallelSize?: Scalars['Int']['input'];
  quantization?: InputMaybe<Scalars['String']['input']>;
  tensorParallelSize?: Scalars['Int']['input'];
};

/** When the schedule estimator expects a job to start and end, and why. */
export type Estimate = {
  __typename?: 'Estimate';
  end?: Maybe<Scalars['DateTime']['output']>;
  reason: Scalars['String']['output'];
  /** Null while it cannot be known. */
  start?: Maybe<Scalars['DateTime']['output']>;
  /** While the job waits: the interval its start falls in with probability `confidence` (default 0.8), from how the cluster's estimates missed recently (split conformal). Null for a job that is not waiting, or while the cluster's record is too short. On submissionEstimate: the window shown at submission, kept with it (at 0.5, 0.8 and 0.95; null at another confidence, or if the record was too short then). */
  startWindow?: Maybe<StartWindow>;
  /** Problems found at once: NEVER_FITS, MISSES_DEADLINE, DEPENDENCY_FAILED. */
  warnings: Array<Scalars['String']['output']>;
};


/** When the schedule estimator expects a job to start and end, and why. */
export type EstimateStartWindowArgs = {
  confidence?: Scalars['Float']['input'];
};

/** How close estimates came to what happened (seconds). */
export type EstimateAccuracy = {
  __typename?: 'EstimateAccuracy';
  endP50Seconds?: Maybe<Scalars['Float']['output']>;
  endP95Seconds?: Maybe<Scalars['Float']['output']>;
  finished: Scalars['Int']['output'];
  jobs: Scalars['Int']['output'];
  startP50Seconds?: Maybe<Scalars['Float']['output']>;
  startP95Seconds?: Maybe<Scalars['Float']['output']>;
  /** For the start windows shown at submission (50, 80 and 95 %): how often the start fell inside. Calibrated windows cover about their confidence. */
  startWindowCoverage: Array<WindowCoverage>;
  /** Share (0 to 1) of starts estimated within ten minutes at submission. */
  startWithin10Minutes?: Maybe<Scalars['Float']['output']>;
};

export type FailureCount = {
  __typename?: 'FailureCount';
  count: Scalars['Int']['output'];
  reason: Scalars['String']['output'];
};

/** One problem with one input field. */
export type FieldError = {
  __typename?: 'FieldError';
  code: Scalars['String']['output'];
  message: Scalars['String']['output'];
  /** Dotted path of the field, e.g. resources.gpuCount. */
  path: Scalars['String']['output'];
};

/** Kueue's flavorFungibility: when a workload fits a flavor only by borrowing, or only by preempting, whether it takes that flavor or first tries the queue's next one. */
export type FlavorFungibility = {
  __typename?: 'FlavorFungibility';
  /** Which the workload prefers when every flavor it may take needs borrowing or preemption (Kueue's flavorFungibility.preference): BORROWING_OVER_PREEMPTION borrows where it fits, PREEMPTION_OVER_BORROWING preempts within the queue's nominal quota rather than borrow; null: none set, Kueue's default BORROWING_OVER_PREEMPTION. Set only while whenCanBorrow and whenCanPreempt are both TRY_NEXT_FLAVOR (Kueue's rule). */
  preference?: Maybe<FungibilityPreference>;
  whenCanBorrow: FungibilityPolicy;
  whenCanPreempt: FungibilityPolicy;
};

export type FlavorFungibilityInput = {
  /** Which the workload prefers when every flavor it may take needs borrowing or preemption (Kueue's flavorFungibility.preference); null: none set, Kueue's default BORROWING_OVER_PREEMPTION. Only while whenCanBorrow and whenCanPreempt are both TRY_NEXT_FLAVOR (Kueue's rule). */
  preference?: InputMaybe<FungibilityPreference>;
  whenCanBorrow?: FungibilityPolicy;
  whenCanPreempt?: FungibilityPolicy;
};

export type FlavorQuotas = {
  __typename?: 'FlavorQuotas';
  flavor: Scalars['String']['output'];
  resources: Array<ResourceQuota>;
};

export type FlavorQuotasInput = {
  flavor: Scalars['String']['input'];
  resources: Array<ResourceQuotaInput>;
};

/** One (flavor, resource) of a ClusterQueue: its quota and its use now. */
export type FlavorUsage = {
  __typename?: 'FlavorUsage';
  /** The queue's ADMITTED and RUNNING jobs. */
  admittedWorkloads: Scalars['Int']['output'];
  /** What `used` exceeds the nominal quota by. */
  borrowed: Scalars['Float']['output'];
  borrowingLimit?: Maybe<Scalars['Float']['output']>;
  flavor: Scalars['String']['output'];
  lendingLimit?: Maybe<Scalars['Float']['output']>;
  nominalQuota: Scalars['Float']['output'];
  /** The queue's PENDING and QUEUED jobs. */
  pendingWorkloads: Scalars['Int']['output'];
  /** GPUs held by reservations active now. */
  reserved: Scalars['Int']['output'];
  resource: Scalars['String']['output'];
  /** Requests of the queue's ADMITTED and RUNNING jobs: GPUs, cores or GB. */
  used: Scalars['Float']['output'];
};

/** Clusters grouped behind one queue name: a job submitted to the fleet goes to the member where it is estimated to start soonest (with a deadline: the cheapest that meets it), and moves before admission when another member would start it much sooner. */
export type Fleet = {
  __typename?: 'Fleet';
  /** The ClusterQueue every member has. */
  clusterQueue: Scalars['String']['output'];
  createdAt: Scalars['DateTime']['output'];
  id: Scalars['ID']['output'];
  /** The LocalQueue (in each tenant's namespace) fleet jobs are submitted to. */
  localQueue: Scalars['String']['output'];
  /** MultiKueue's manager cluster (Kubernetes), where the fleet's Workloads live; null: budcluster hands each job to its member itself. */
  managerCluster?: Maybe<Cluster>;
  /** The most times one job moves. */
  maxMoves: Scalars['Int']['output'];
  /** The member clusters, in the order they were given. */
  members: Array<Cluster>;
  /** A waiting job moves only to a member that starts it at least this much sooner, and before the earliest of its start window where it is. */
  moveThresholdSeconds: Scalars['Int']['output'];
  name: Scalars['String']['output'];
  /** When the fleet's waiting jobs were last weighed against every member. */
  plannedAt?: Maybe<Scalars['DateTime']['output']>;
  /** The fleet's waiting jobs across its members, soonest first (the first `first`, at most 1000): each with its member and start there, and the next-best member and its start (as of plannedAt; others' jobs shown but not named). */
  queue: Array<FleetQueueEntry>;
  updatedAt: Scalars['DateTime']['output'];
};


/** Clusters grouped behind one queue name: a job submitted to the fleet goes to the member where it is estimated to start soonest (with a deadline: the cheapest that meets it), and moves before admission when another member would start it much sooner. */
export type FleetQueueArgs = {
  first?: Scalars['Int']['input'];
};

/** A fleet: its name, members and shared queue names. */
export type FleetInput = {
  /** 1 to 16 clusters, each once, each holding clusterQueue. */
  clusterIds: Array<Scalars['ID']['input']>;
  clusterQueue?: Scalars['String']['input'];
  localQueue?: Scalars['String']['input'];
  /** A Kubernetes cluster running MultiKueue's manager, outside the members (null: budcluster dispatches to the members itself). */
  managerClusterId?: InputMaybe<Scalars['ID']['input']>;
  /** 0 to 20; 3 by default. */
  maxMoves?: Scalars['Int']['input'];
  /** 0 to 604800 (a week); 600 by default. */
  moveThresholdSeconds?: Scalars['Int']['input'];
  /** A DNS-1123 label of at most 53 characters. */
  name: Scalars['String']['input'];
};

/** What one member of a fleet offers a job previewed on the fleet. */
export type FleetMemberPreview = {
  __typename?: 'FleetMemberPreview';
  clusterId: Scalars['ID']['output'];
  clusterName: Scalars['String']['output'];
  estimatedCost?: Maybe<Scalars['Decimal']['output']>;
  estimatedEnd?: Maybe<Scalars['DateTime']['output']>;
  estimatedStart?: Maybe<Scalars['DateTime']['output']>;
  /** Jobs its start there would preempt, as the estimate has it. */
  evicts: Scalars['Int']['output'];
  /** The share of the member's GPUs of the job's type its active jobs hold or ask for (ties on the start and cost go to the less loaded). */
  load?: Maybe<Scalars['Float']['output']>;
  /** Why the member cannot take the job (empty when it can). */
  problems: Array<FieldError>;
  /** 1 for the member the job would go to, then the next best; null for a member that cannot take it. */
  rank?: Maybe<Scalars['Int']['output']>;
  /** Why it would wait there. */
  reason: Scalars['String']['output'];
  /** While the job waits: the interval its start falls in with probability `confidence` (default 0.8), from how the cluster's estimates missed recently (split conformal). Null for a job that is not waiting, or while the cluster's record is too short. */
  startWindow?: Maybe<StartWindow>;
  warnings: Array<Scalars['String']['output']>;
};


/** What one member of a fleet offers a job previewed on the fleet. */
export type FleetMemberPreviewStartWindowArgs = {
  confidence?: Scalars['Float']['input'];
};

/** A waiting job of the fleet, where it is and where it would start next best. */
export type FleetQueueEntry = {
  __typename?: 'FleetQueueEntry';
  /** The member it waits on. */
  clusterId: Scalars['ID']['output'];
  /** Its start there. */
  estimatedStart?: Maybe<Scalars['DateTime']['output']>;
  /** Null for other tenants' jobs. */
  jobId?: Maybe<Scalars['ID']['output']>;
  /** Yours to see (as the schedule's QueueEntry). */
  mine: Scalars['Boolean']['output'];
  /** Times it moved; 0 for other tenants' jobs. */
  moves: Scalars['Int']['output'];
  /** "another tenant" for other tenants' jobs. */
  name: Scalars['String']['output'];
  /** The member that would start it soonest after its own (null: none would). */
  nextBestClusterId?: Maybe<Scalars['ID']['output']>;
  nextBestStart?: Maybe<Scalars['DateTime']['output']>;
  position: Scalars['Int']['output'];
  /** Null for other tenants' jobs. */
  status?: Maybe<JobStatus>;
};

export type FleetResult = ConflictError | Fleet | ForbiddenError | NotFoundError | ValidationError;

/** The caller's token does not allow this. */
export type ForbiddenError = UserError & {
  __typename?: 'ForbiddenError';
  code: Scalars['String']['output'];
  message: Scalars['String']['output'];
};

export type ForecastPoint = {
  __typename?: 'ForecastPoint';
  at: Scalars['DateTime']['output'];
  freeGpus: Scalars['Int']['output'];
};

/** MAY_STOP_SEARCH: take the flavor being looked at; TRY_NEXT_FLAVOR: look at the queue's next flavor first (Kueue v1beta1 spells MAY_STOP_SEARCH Borrow or Preempt). */
export type FungibilityPolicy =
  | 'MAY_STOP_SEARCH'
  | 'TRY_NEXT_FLAVOR';

/** Kueue's flavorFungibility.preference: when every flavor a workload may take needs borrowing or preemption, BORROWING_OVER_PREEMPTION (Kueue's default) takes one where it borrows, PREEMPTION_OVER_BORROWING one where it preempts within the queue's nominal quota. */
export type FungibilityPreference =
  | 'BORROWING_OVER_PREEMPTION'
  | 'PREEMPTION_OVER_BORROWING';

/** A GPU type on a cluster and how many of it there are. */
export type GpuCapacity = {
  __typename?: 'GpuCapacity';
  gpuType: Scalars['String']['output'];
  largestNode: Scalars['Int']['output'];
  /** GPUs installed on the nodes that count (control-plane nodes only with enableMasterNode). */
  total: Scalars['Int']['output'];
  /** Of `total`, the GPUs on nodes that are ready and not cordoned: what the schedule estimate places work on. */
  usable: Scalars['Int']['output'];
};

/** Free GPUs of one type over time, as the estimate expects. */
export type GpuForecast = {
  __typename?: 'GpuForecast';
  gpuType: Scalars['String']['output'];
  points: Array<ForecastPoint>;
};

/** The price of one GPU of a type for an hour on a cluster: what runs from `since` on is metered at it, until the next price (null: the price at registration, from the cluster's gpu_hourly_prices setting or the list price of common cloud GPUs). */
export type GpuPrice = {
  __typename?: 'GpuPrice';
  gpuType: Scalars['String']['output'];
  hourlyPrice: Scalars['Decimal']['output'];
  since?: Maybe<Scalars['DateTime']['output']>;
};

export type GpuPriceResult = ForbiddenError | GpuPrice | NotFoundError | ValidationError;

/** One health check of a cluster, as of its last sync. */
export type HealthCheck = {
  __typename?: 'HealthCheck';
  detail: Scalars['String']['output'];
  /** api (reachable, and its version), nodes (ready of all), nfd (Node Feature Discovery present), kueue (present, and its version), gpu_operator, versions (Kubernetes and Kueue within the supported ranges), kueue_quotas. */
  name: Scalars['String']['output'];
  ok: Scalars['Boolean']['output'];
  /** The version found: Kubernetes' (api), Kueue's controller (kueue). */
  version?: Maybe<Scalars['String']['output']>;
  /** Not ok, but nothing stops because of it (a version outside the supported range): what needs it is refused. */
  warning: Scalars['Boolean']['output'];
};

export type Job = {
  __typename?: 'Job';
  /** What the job's ended runs cost, in the unit of estimatedCost: each run metered per second, from RUNNING to its end, its GPUs (cores without GPUs) times the price in force at each moment; preempted and failed runs count. Null until a run ends. */
  actualCost?: Maybe<Scalars['Decimal']['output']>;
  actualEnd?: Maybe<Scalars['DateTime']['output']>;
  actualStart?: Maybe<Scalars['DateTime']['output']>;
  /** The estimate when the job was admitted. */
  admissionEstimate?: Maybe<Estimate>;
  /** 0 for the first run, then one more per retry. */
  attempt: Scalars['Int']['output'];
  /** What happens when its cost reaches budgetLimit. */
  budgetAction: BudgetAction;
  /** The highest share of its budget (%) it has cost and was said: 0, 80 or 100. */
  budgetAlerted: Scalars['Int']['output'];
  /** The most the job may cost, in the unit of estimatedCost. */
  budgetLimit?: Maybe<Scalars['Decimal']['output']>;
  cluster?: Maybe<Cluster>;
  clusterId: Scalars['ID']['output'];
  /** What the job has cost by now: actualCost, and while it runs, its run so far at the price in force (worked out when read). */
  costSoFar?: Maybe<Scalars['Decimal']['output']>;
  createdAt: Scalars['DateTime']['output'];
  deadline?: Maybe<Scalars['DateTime']['output']>;
  /** Jobs that must complete before this one may start. */
  dependsOn: Array<Scalars['ID']['output']>;
  deploymentType: DeploymentType;
  /** Its fleet's MultiKueue manager cluster, where its Kubernetes objects are: Kueue runs it on clusterId, which budcluster nominated. */
  dispatchedVia?: Maybe<Scalars['ID']['output']>;
  /** The latest estimate (estimatedStart and estimatedEnd with the reason); null until the job was first estimated. */
  estimate?: Maybe<Estimate>;
  /** Expected GPU-hours (core-hours without GPUs) times the cluster's hourly price per GPU type: in US dollars at list prices, unless the cluster's gpu_hourly_prices set another currency. */
  estimatedCost?: Maybe<Scalars['Decimal']['output']>;
  estimatedDurationSeconds?: Maybe<Scalars['Int']['output']>;
  estimatedEnd?: Maybe<Scalars['DateTime']['output']>;
  estimatedStart?: Maybe<Scalars['DateTime']['output']>;
  /** The job's history: every transition of every attempt. */
  events: Array<JobEvent>;
  /** The fleet it was submitted to: it waits on one member (clusterId) and may move to another before it is admitted (moves). */
  fleetId?: Maybe<Scalars['ID']['output']>;
  /** A PENDING job a budget holds (PAUSE): whose budget. It is not handed to its cluster until released, and its estimate says when it may start (a project's or tenant's: the next period at the earliest; its own: not until raised). */
  heldBy?: Maybe<BudgetScope>;
  /** Why a budget holds it. */
  holdReason?: Maybe<Scalars['String']['output']>;
  id: Scalars['ID']['output'];
  idempotencyKey?: Maybe<Scalars['String']['output']>;
  jobType: JobType;
  /** Kueue's own position of the job while it is QUEUED on a real cluster that serves Kueue's visibility API, beside budcluster's estimate; null otherwise (not queued, a simulated cluster, no visibility API, or the cluster not answering). */
  kueuePosition?: Maybe<KueueQueuePosition>;
  maxDurationSeconds?: Maybe<Scalars['Int']['output']>;
  maxRetries: Scalars['Int']['output'];
  /** Its moves between members of its fleet, oldest first. */
  moves: Array<JobMove>;
  name: Scalars['String']['output'];
  /** When a retried job is next handed to its cluster. */
  nextAttemptAt?: Maybe<Scalars['DateTime']['output']>;
  outputs: Scalars['JSON']['output'];
  /** Where its first pod runs (see placements for every pod). */
  placement?: Maybe<Placement>;
  /** Where each of its pods runs, one per pod; empty while it holds nothing. */
  placements: Array<Placement>;
  preemptible: Scalars['Boolean']['output'];
  priority: JobPriority;
  projectId: Scalars['ID']['output'];
  /** The LocalQueue, in your namespace. */
  queueName: Scalars['String']['output'];
  reservationId?: Maybe<Scalars['ID']['output']>;
  resources: Resources;
  retryCount: Scalars['Int']['output'];
  /** The secrets of its tenant's its containers get (names, never values). */
  secrets: Array<SecretRef>;
  source: JobSource;
  spec: Scalars['JSON']['output'];
  status: JobStatus;
  statusMessage?: Maybe<Scalars['String']['output']>;
  /** The first estimate of this attempt, kept to measure accuracy. */
  submissionEstimate?: Maybe<Estimate>;
  tenantId: Scalars['ID']['output'];
  /** Seconds its containers get between SIGTERM and being killed (a drain's checkpoint signal): as submitted, else 30 (Kubernetes' default). */
  terminationGracePeriodSeconds: Scalars['Int']['output'];
  updatedAt: Scalars['DateTime']['output'];
  window?: Maybe<TimeWindow>;
};

/** One change to one job, in the cluster's event order. */
export type JobChange = {
  __typename?: 'JobChange';
  /** With BUDGET: the job's cost against its budget. */
  budget?: Maybe<BudgetNotice>;
  job: Job;
  kind: JobChangeKind;
  /** False when the change took the job out of the subscription's filter. */
  matchesFilter: Scalars['Boolean']['output'];
  /** With MOVED: the move, said on the stream of the cluster it left (the job then no longer matches that stream: matchesFilter false) and of the one it joined. */
  move?: Maybe<JobMove>;
  sequence: Scalars['Int']['output'];
  transition?: Maybe<JobEvent>;
};

export type JobChangeKind =
  | 'BUDGET'
  | 'MOVED'
  | 'PLACED'
  | 'PRIORITY_CHANGED'
  | 'SUBMITTED'
  | 'TRANSITION';

export type JobCommandResult = ConflictError | ForbiddenError | Job | NotFoundError | ValidationError;

export type JobConnection = {
  __typename?: 'JobConnection';
  edges: Array<JobEdge>;
  pageInfo: PageInfo;
};

export type JobEdge = {
  __typename?: 'JobEdge';
  cursor: Scalars['String']['output'];
  node: Job;
};

/** One status transition of one attempt of a job. */
export type JobEvent = {
  __typename?: 'JobEvent';
  at: Scalars['DateTime']['output'];
  attempt: Scalars['Int']['output'];
  fromStatus?: Maybe<JobStatus>;
  reason: Scalars['String']['output'];
  toStatus: JobStatus;
};

export type JobFilter = {
  clusterIds?: InputMaybe<Array<Scalars['ID']['input']>>;
  jobTypes?: InputMaybe<Array<JobType>>;
  priorities?: InputMaybe<Array<JobPriority>>;
  projectIds?: InputMaybe<Array<Scalars['ID']['input']>>;
  statuses?: InputMaybe<Array<JobStatus>>;
};

/** Lines of one attempt of a job, oldest first (as its cluster keeps them, or as budcluster kept them when the attempt failed). */
export type JobLogs = {
  __typename?: 'JobLogs';
  attempt: Scalars['Int']['output'];
  jobId: Scalars['ID']['output'];
  /** These are the last lines kept when the attempt failed: its pods are gone. */
  kept: Scalars['Boolean']['output'];
  lines: Array<LogLine>;
  /** Why there may be fewer lines than asked for (its cluster did not answer). */
  note?: Maybe<Scalars['String']['output']>;
  /** The pods these lines are of. */
  pods: Array<Scalars['String']['output']>;
};

export type JobLogsResult = ForbiddenError | JobLogs | NotFoundError | ValidationError;

/** A fleet job taken from one member to another before admission. */
export type JobMove = {
  __typename?: 'JobMove';
  at: Scalars['DateTime']['output'];
  attempt: Scalars['Int']['output'];
  fromClusterId: Scalars['ID']['output'];
  reason: Scalars['String']['output'];
  toClusterId: Scalars['ID']['output'];
};

/** Where and when a job would start, and its cost, if submitted now. */
export type JobPreview = {
  __typename?: 'JobPreview';
  /** The cluster it would run on (on a fleet: the member it would go to). */
  clusterId: Scalars['ID']['output'];
  durationSource: Scalars['String']['output'];
  /** Expected GPU-hours (core-hours without GPUs) times the cluster's hourly price per GPU type: in US dollars at list prices, unless the cluster's gpu_hourly_prices set another currency. */
  estimatedCost?: Maybe<Scalars['Decimal']['output']>;
  estimatedEnd?: Maybe<Scalars['DateTime']['output']>;
  estimatedStart?: Maybe<Scalars['DateTime']['output']>;
  /** On a fleet: every member's offer, the one it would go to first (rank 1), then the others best first, then those that cannot take it; empty for a cluster. */
  members: Array<FleetMemberPreview>;
  placements: Array<Placement>;
  reason: Scalars['String']['output'];
  /** While the job waits: the interval its start falls in with probability `confidence` (default 0.8), from how the cluster's estimates missed recently (split conformal). Null for a job that is not waiting, or while the cluster's record is too short. */
  startWindow?: Maybe<StartWindow>;
  warnings: Array<Scalars['String']['output']>;
};


/** Where and when a job would start, and its cost, if submitted now. */
export type JobPreviewStartWindowArgs = {
  confidence?: Scalars['Float']['input'];
};

/** Admission order and preemption: CRITICAL is never preempted, SPOT is first to go. */
export type JobPriority =
  | 'CRITICAL'
  | 'HIGH'
  | 'LOW'
  | 'NORMAL'
  | 'SPOT';

/** The jobs you may see on the cluster, as of `sequence`. */
export type JobSnapshot = {
  __typename?: 'JobSnapshot';
  jobs: Array<Job>;
  /** subscribed; history-gone (since was older than the retained history); unknown-since (since was ahead of the cluster's history, e.g. after a restore); or resync (this subscriber fell behind and its backlog was dropped). */
  reason: Scalars['String']['output'];
  sequence: Scalars['Int']['output'];
  /** More jobs matched than a snapshot holds. */
  truncated: Scalars['Boolean']['output'];
};

export type JobSource = {
  __typename?: 'JobSource';
  kind: SourceKind;
  sourceId?: Maybe<Scalars['String']['output']>;
};

export type JobSourceInput = {
  kind?: SourceKind;
  sourceId?: InputMaybe<Scalars['String']['input']>;
};

/** Where a job is in its lifecycle. */
export type JobStatus =
  | 'ADMITTED'
  | 'CANCELLED'
  | 'COMPLETED'
  | 'FAILED'
  | 'PENDING'
  | 'PREEMPTED'
  | 'QUEUED'
  | 'RUNNING';

/** SERVICE runs until stopped; BATCH and TRAINING run to completion. */
export type JobType =
  | 'BATCH'
  | 'SERVICE'
  | 'TRAINING';

export type JobUpdate = JobChange | JobSnapshot;

/** Where Kueue holds a queued job: its own order of the job's LocalQueue and of the ClusterQueue behind it (Kueue's visibility API). Positions count from 0 (0 is considered next); Kueue gives positions, not times: the job's estimate gives times. */
export type KueueQueuePosition = {
  __typename?: 'KueueQueuePosition';
  localQueue: Scalars['String']['output'];
  /** When the cluster was asked (answers are reused for a few seconds). */
  observedAt: Scalars['DateTime']['output'];
  /** Workloads pending in that LocalQueue (Kueue lists at most 1000). */
  pendingInLocalQueue: Scalars['Int']['output'];
  positionInClusterQueue: Scalars['Int']['output'];
  positionInLocalQueue: Scalars['Int']['output'];
  /** The priority value Kueue orders it by. */
  priority: Scalars['Int']['output'];
};

/** One latency over a run's successful requests, in milliseconds (percentiles interpolated linearly, as numpy's default). */
export type LatencySummary = {
  __typename?: 'LatencySummary';
  /** Values it summarises. */
  count: Scalars['Int']['output'];
  maxMs: Scalars['Float']['output'];
  meanMs: Scalars['Float']['output'];
  p50Ms: Scalars['Float']['output'];
  p90Ms: Scalars['Float']['output'];
  p99Ms: Scalars['Float']['output'];
};

export type LengthDistribution =
  | 'FIXED'
  | 'NORMAL'
  | 'UNIFORM';

/** A tenant's queue (in its namespace) pointing at a ClusterQueue. */
export type LocalQueue = {
  __typename?: 'LocalQueue';
  clusterId: Scalars['ID']['output'];
  clusterQueue: Scalars['String']['output'];
  createdAt: Scalars['DateTime']['output'];
  name: Scalars['String']['output'];
  namespace: Scalars['String']['output'];
  tenantId: Scalars['ID']['output'];
};

export type LocalQueueInput = {
  clusterId: Scalars['ID']['input'];
  clusterQueue: Scalars['String']['input'];
  name: Scalars['String']['input'];
  /** Admins only: make it for another tenant. */
  tenantId?: InputMaybe<Scalars['ID']['input']>;
};

export type LocalQueueResult = ConflictError | ForbiddenError | LocalQueue | NotFoundError | ValidationError;

/** One line a job's container wrote. */
export type LogLine = {
  __typename?: 'LogLine';
  at: Scalars['DateTime']['output'];
  pod: Scalars['String']['output'];
  text: Scalars['String']['output'];
};

/** An OpenAI-compatible route the endpoint serves. */
export type ModelApi =
  | 'CHAT_COMPLETIONS'
  | 'COMPLETIONS'
  | 'EMBEDDINGS';

export type Mutation = {
  __typename?: 'Mutation';
  /** Stop a benchmark; what it measured so far is kept. */
  cancelBenchmark: BenchmarkResultUnion;
  cancelCapacityReservation: CapacityReservationResult;
  cancelJob: JobCommandResult;
  /** Book GPUs of a flavor for your tenant, paid from a ClusterQueue's quota. */
  createCapacityReservation: CapacityReservationResult;
  createClusterQueue: ClusterQueueResult;
  createCohort: CohortResult;
  /** Group clusters into a fleet that jobs may be submitted to (submitJob with fleetId): each goes where it is estimated to start soonest. Needs clusters:write. */
  createFleet: FleetResult;
  /** A LocalQueue in your tenant's namespace. */
  createLocalQueue: LocalQueueResult;
  createResourceFlavor: ResourceFlavorResult;
  /** DELETING, then gone, with its jobs. Refused while jobs are active unless `force`, or the cluster is drained whole (drainCluster) and nothing holds resources there. */
  deleteCluster: ClusterResult;
  /** Refused while a LocalQueue points at it. */
  deleteClusterQueue: ClusterQueueResult;
  /** Refused while ClusterQueues are in it; child cohorts then name an implicit cohort. */
  deleteCohort: CohortResult;
  /** Delete a fleet: its waiting jobs stay where they are, as jobs of that cluster. Needs clusters:write. */
  deleteFleet: FleetResult;
  /** Refused while it has PENDING, QUEUED, ADMITTED or RUNNING jobs. */
  deleteLocalQueue: LocalQueueResult;
  /** Refused while a ClusterQueue names the flavor. */
  deleteResourceFlavor: ResourceFlavorResult;
  /** Serve a model on a cluster: one SERVICE job per replica (each queued, estimated and drawn like every job). DEPLOYING, then RUNNING with an endpoint. */
  deployModel: DeploymentResult;
  /** Drain a whole cluster (before maintenance or removal): nothing new is admitted there, its running jobs leave as drainNode's do, and its fleets' waiting jobs move to the other members (others wait, with the reason). Needs clusters:write. */
  drainCluster: DrainResult;
  /** Drain a node before maintenance: it is cordoned; its batch and training jobs get SIGTERM and their grace period (terminationGracePeriodSeconds), then are requeued without using a retry; a deployment's replicas start elsewhere before the old ones stop. Needs clusters:write. */
  drainNode: DrainResult;
  /** Install what a GPU cluster needs and its health finds missing (Kueue, Node Feature Discovery, the NVIDIA GPU Operator, which brings Node Feature Discovery with it) as Helm releases of pinned charts, from their public repositories or `mirror` (an https or oci:// Helm repository holding them under the same names). What is there already, or asked for, is left as it is (Cluster.addons says where each stands). Refused, naming `addons.N`, for an add-on whose version does not support the cluster's Kubernetes, and for Kueue when the cluster runs one outside the supported range. A simulated cluster has everything built in. Needs clusters:write. */
  installAddons: ClusterResult;
  /** Reach the cluster now: its nodes and health checks are read again. */
  refreshCluster: ClusterResult;
  /** Register a Kubernetes or OpenShift cluster: REGISTERING at once, then AVAILABLE once reached (or NOT_AVAILABLE / ERROR with the reason). Needs clusters:write. */
  registerCluster: ClusterResult;
  /** Uninstall budcluster's own Helm releases of these add-ons (REMOVING, then MISSING). Refused, naming `addons.N`, for an add-on budcluster did not install (FOUND, BUILT_IN, MISSING: NOT_INSTALLED_BY_BUDCLUSTER), one still being installed (IN_PROGRESS), and Node Feature Discovery while budcluster's GPU Operator stays (NEEDED); a ConflictError IN_USE for Kueue or the GPU Operator while jobs are active on the cluster. Needs clusters:write. */
  removeAddons: ClusterResult;
  /** Remove a tenant's budget (the operator) or a project's; jobs it held are released. */
  removeBudget: BudgetResult;
  /** Remove a secret. Refused (ConflictError IN_USE, naming them) while jobs not ended or deployments not stopped name it, as each would fail at its next hand-over; force: true removes it anyway. Attempts handed over keep their copy until they end; a job naming it that is handed over later fails, saying so. Needs secrets:write. */
  removeSecret: SecretResult;
  /** Start the next attempt of a FAILED or PREEMPTED job, after backoff. */
  retryJob: JobCommandResult;
  /** Load-test a deployment or an endpoint URL, as a job without GPUs. */
  runBenchmark: BenchmarkResultUnion;
  /** Change the replicas (0 to 64): new replica jobs, or those still waiting cancelled first, then the newest. Refused (AUTOSCALED) while it scales itself. */
  scaleDeployment: DeploymentResult;
  /** Let a deployment scale itself between minReplicas and maxReplicas to keep its metric at the target (null: stop; its replicas stay as they are). Replicas outside the new bounds are brought within them at once. minReplicas 0 (simulated clusters): it goes to zero after scaleToZeroAfterSeconds without a request, and the first request starts a replica and waits for it. Each step is a SCALED change in deploymentUpdates and is on the cluster's schedule (scalingSteps). */
  setAutoscaling: DeploymentResult;
  /** A tenant's budget per period (the operator) or a project's (its tenant, within the tenant's): what it may spend in a calendar month (UTC) and what follows when it is spent (WARN, PAUSE or CANCEL, for its jobs). Jobs it held are released at once when it now has room for them. */
  setBudget: BudgetResult;
  /** The hourly price of one GPU of a type on a cluster, from now on: runs are metered at the price in force at each moment, so what ran before keeps its price. Needs clusters:write. */
  setGpuPrice: GpuPriceResult;
  /** Store a secret of your tenant's (the operator: tenantId's), sealed, or replace all the values of the one of that name; jobs (SubmitJobInput.secrets) and deployments (DeployModelInput.secrets) name it. Its values are never returned, logged or audited. Needs secrets:write. */
  setSecret: SecretResult;
  /** Stop every replica; the deployment stays, STOPPED. */
  stopDeployment: DeploymentResult;
  /** Submit a job to a cluster. With an idempotencyKey, a repeat in the same project returns the first job. */
  submitJob: SubmitJobResult;
  /** End a drain: the node or cluster takes new work again. Needs clusters:write. */
  undrain: DrainResult;
  /** Change a registered cluster; a new kubeconfig or context connects again. */
  updateCluster: ClusterResult;
  /** Replace a ClusterQueue's cohort, strategy, quotas, preemption, flavor fungibility and fair-sharing weight. */
  updateClusterQueue: ClusterQueueResult;
  /** Replace a cohort's description, parent, quotas and fair-sharing weight. */
  updateCohort: CohortResult;
  /** Change a fleet: its members, queue names, move threshold and most moves, manager. Needs clusters:write. */
  updateFleet: FleetResult;
  /** A job's new budget and action while it is not finished (a BUDGET change); its shares are said again as they are reached, from the next check (a running job already past the new budget is said so, or cancelled with CANCEL). */
  updateJobBudget: JobCommandResult;
  updateJobPriority: JobCommandResult;
  /** Record how the cluster's Kueue is configured (fair sharing on or off). budcluster does not change Kueue's controller configuration: set it on the cluster too. */
  updateQuotaSettings: QuotaSettingsResult;
  /** Replace a flavor's node labels. */
  updateResourceFlavor: ResourceFlavorResult;
  /** Values must keep CRITICAL > HIGH > NORMAL > LOW > SPOT. */
  updateWorkloadPriorityClass: WorkloadPriorityClassResult;
};


export type MutationCancelBenchmarkArgs = {
  id: Scalars['ID']['input'];
};


export type MutationCancelCapacityReservationArgs = {
  id: Scalars['ID']['input'];
};


export type MutationCancelJobArgs = {
  id: Scalars['ID']['input'];
  reason?: InputMaybe<Scalars['String']['input']>;
};


export type MutationCreateCapacityReservationArgs = {
  input: CapacityReservationInput;
};


export type MutationCreateClusterQueueArgs = {
  input: ClusterQueueInput;
};


export type MutationCreateCohortArgs = {
  input: CohortInput;
};


export type MutationCreateFleetArgs = {
  input: FleetInput;
};


export type MutationCreateLocalQueueArgs = {
  input: LocalQueueInput;
};


export type MutationCreateResourceFlavorArgs = {
  input: ResourceFlavorInput;
};


export type MutationDeleteClusterArgs = {
  force?: Scalars['Boolean']['input'];
  id: Scalars['ID']['input'];
};


export type MutationDeleteClusterQueueArgs = {
  clusterId: Scalars['ID']['input'];
  name: Scalars['String']['input'];
};


export type MutationDeleteCohortArgs = {
  clusterId: Scalars['ID']['input'];
  name: Scalars['String']['input'];
};


export type MutationDeleteFleetArgs = {
  id: Scalars['ID']['input'];
};


export type MutationDeleteLocalQueueArgs = {
  clusterId: Scalars['ID']['input'];
  name: Scalars['String']['input'];
  tenantId?: InputMaybe<Scalars['ID']['input']>;
};


export type MutationDeleteResourceFlavorArgs = {
  clusterId: Scalars['ID']['input'];
  name: Scalars['String']['input'];
};


export type MutationDeployModelArgs = {
  input: DeployModelInput;
};


export type MutationDrainClusterArgs = {
  clusterId: Scalars['ID']['input'];
  reason?: InputMaybe<Scalars['String']['input']>;
};


export type MutationDrainNodeArgs = {
  clusterId: Scalars['ID']['input'];
  node: Scalars['String']['input'];
  reason?: InputMaybe<Scalars['String']['input']>;
};


export type MutationInstallAddonsArgs = {
  addons: Array<Addon>;
  clusterId: Scalars['ID']['input'];
  mirror?: InputMaybe<Scalars['String']['input']>;
};


export type MutationRefreshClusterArgs = {
  id: Scalars['ID']['input'];
};


export type MutationRegisterClusterArgs = {
  input: RegisterClusterInput;
};


export type MutationRemoveAddonsArgs = {
  addons: Array<Addon>;
  clusterId: Scalars['ID']['input'];
};


export type MutationRemoveBudgetArgs = {
  projectId?: InputMaybe<Scalars['ID']['input']>;
  tenantId?: InputMaybe<Scalars['ID']['input']>;
};


export type MutationRemoveSecretArgs = {
  force?: Scalars['Boolean']['input'];
  name: Scalars['String']['input'];
  tenantId?: InputMaybe<Scalars['ID']['input']>;
};


export type MutationRetryJobArgs = {
  id: Scalars['ID']['input'];
};


export type MutationRunBenchmarkArgs = {
  input: RunBenchmarkInput;
};


export type MutationScaleDeploymentArgs = {
  id: Scalars['ID']['input'];
  replicas: Scalars['Int']['input'];
};


export type MutationSetAutoscalingArgs = {
  autoscaling?: InputMaybe<AutoscalingInput>;
  id: Scalars['ID']['input'];
};


export type MutationSetBudgetArgs = {
  input: SetBudgetInput;
};


export type MutationSetGpuPriceArgs = {
  input: SetGpuPriceInput;
};


export type MutationSetSecretArgs = {
  input: SetSecretInput;
};


export type MutationStopDeploymentArgs = {
  id: Scalars['ID']['input'];
};


export type MutationSubmitJobArgs = {
  input: SubmitJobInput;
};


export type MutationUndrainArgs = {
  id: Scalars['ID']['input'];
};


export type MutationUpdateClusterArgs = {
  id: Scalars['ID']['input'];
  input: UpdateClusterInput;
};


export type MutationUpdateClusterQueueArgs = {
  input: ClusterQueueInput;
};


export type MutationUpdateCohortArgs = {
  input: CohortInput;
};


export type MutationUpdateFleetArgs = {
  id: Scalars['ID']['input'];
  input: FleetInput;
};


export type MutationUpdateJobBudgetArgs = {
  budgetAction?: BudgetAction;
  budgetLimit?: InputMaybe<Scalars['Decimal']['input']>;
  id: Scalars['ID']['input'];
};


export type MutationUpdateJobPriorityArgs = {
  id: Scalars['ID']['input'];
  priority: JobPriority;
};


export type MutationUpdateQuotaSettingsArgs = {
  input: QuotaSettingsInput;
};


export type MutationUpdateResourceFlavorArgs = {
  input: ResourceFlavorInput;
};


export type MutationUpdateWorkloadPriorityClassArgs = {
  description?: InputMaybe<Scalars['String']['input']>;
  priority: JobPriority;
  value?: InputMaybe<Scalars['Int']['input']>;
};

export type Node = {
  __typename?: 'Node';
  allocatable: Array<ResourceQuantity>;
  capacity: Array<ResourceQuantity>;
  conditions: Array<NodeCondition>;
  /** Allocatable cores. */
  cpuCores: Scalars['Float']['output'];
  /** gfd, nfd, allocatable (no labels: counts only) or simulated. */
  detectionMethod: Scalars['String']['output'];
  /** A control-plane node left out of the capacity (enableMasterNode is off). */
  excluded: Scalars['Boolean']['output'];
  gpuCount: Scalars['Int']['output'];
  gpuType?: Maybe<Scalars['String']['output']>;
  /** Detected hardware, keys in snake_case: gpu {vendor product count memory_mb driver compute_capability family ...}, cpu {vendor model cores threads_per_core avx512 amx arch}, hpu {vendor product count ...}, kernel, os. */
  hardwareInfo: Scalars['JSON']['output'];
  id: Scalars['ID']['output'];
  internalIp?: Maybe<Scalars['String']['output']>;
  labels: Scalars['JSON']['output'];
  /** Allocatable memory, GiB. */
  memoryGb: Scalars['Float']['output'];
  name: Scalars['String']['output'];
  /** Node Feature Discovery or GPU Feature Discovery labels were found. */
  nfdDetected: Scalars['Boolean']['output'];
  nodeType: NodeType;
  ready: Scalars['Boolean']['output'];
  /** False when cordoned. */
  schedulable: Scalars['Boolean']['output'];
  taints: Array<Taint>;
};

/** A node condition as Kubernetes reports it (Ready, MemoryPressure...). */
export type NodeCondition = {
  __typename?: 'NodeCondition';
  lastTransitionTime?: Maybe<Scalars['String']['output']>;
  message?: Maybe<Scalars['String']['output']>;
  reason?: Maybe<Scalars['String']['output']>;
  status: Scalars['String']['output'];
  type: Scalars['String']['output'];
};

/** A Kubernetes node label. */
export type NodeLabel = {
  __typename?: 'NodeLabel';
  key: Scalars['String']['output'];
  value: Scalars['String']['output'];
};

export type NodeLabelInput = {
  key: Scalars['String']['input'];
  value: Scalars['String']['input'];
};

export type NodeType =
  | 'GPU'
  | 'HPU'
  | 'MASTER'
  | 'WORKER';

/** No such object, or not one the caller may see. */
export type NotFoundError = UserError & {
  __typename?: 'NotFoundError';
  code: Scalars['String']['output'];
  entity: Scalars['String']['output'];
  id: Scalars['String']['output'];
  message: Scalars['String']['output'];
};

export type PageInfo = {
  __typename?: 'PageInfo';
  endCursor?: Maybe<Scalars['String']['output']>;
  hasNextPage: Scalars['Boolean']['output'];
};

/** The node and GPU indices a job holds: its rows on the timeline. */
export type Placement = {
  __typename?: 'Placement';
  /** The ResourceFlavor whose quota the job was admitted against. */
  flavor?: Maybe<Scalars['String']['output']>;
  gpuIndices: Array<Scalars['Int']['output']>;
  node: Scalars['String']['output'];
};

export type Platform =
  | 'AKS'
  | 'EKS'
  | 'ON_PREM'
  | 'OPENSHIFT'
  | 'SIMULATED';

/** One pod set of a job: podCount pods of one shape. */
export type PodSet = {
  __typename?: 'PodSet';
  /** Cores per pod. */
  cpuCores: Scalars['Float']['output'];
  /** GPUs per pod, of the job's gpuType. */
  gpuCount: Scalars['Int']['output'];
  /** GB of memory per pod. */
  memoryGb: Scalars['Float']['output'];
  /** "main" for the job's own pod set. */
  name: Scalars['String']['output'];
  podCount: Scalars['Int']['output'];
};

/** A further pod set of a job: podCount pods of one shape, of the job's GPU type. */
export type PodSetInput = {
  /** Cores per pod. */
  cpuCores?: Scalars['Float']['input'];
  /** GPUs per pod, of the job's resources.gpuType. */
  gpuCount?: Scalars['Int']['input'];
  /** GB of memory per pod. */
  memoryGb?: Scalars['Float']['input'];
  /** A DNS-1123 label of at most 63 characters, unique in the job, not "main". */
  name: Scalars['String']['input'];
  /** Pods of the pod set (1 to 256). */
  podCount?: Scalars['Int']['input'];
};

export type PreemptionPolicy = {
  __typename?: 'PreemptionPolicy';
  /** Not NEVER only while reclaimWithinCohort is not NEVER (Kueue's rule). */
  borrowWithinCohort: BorrowWithinCohort;
  reclaimWithinCohort: ReclaimWithinCohort;
  withinClusterQueue: WithinClusterQueue;
};

export type PreemptionPolicyInput = {
  borrowWithinCohort?: BorrowWithinCohortInput;
  reclaimWithinCohort?: ReclaimWithinCohort;
  withinClusterQueue?: WithinClusterQueue;
};

export type PreviewJobResult = ForbiddenError | JobPreview | NotFoundError | ValidationError;

/** A project's expected cost over a cost forecast. */
export type ProjectCost = {
  __typename?: 'ProjectCost';
  cost: Scalars['Decimal']['output'];
  high: Scalars['Decimal']['output'];
  low: Scalars['Decimal']['output'];
  projectId: Scalars['ID']['output'];
};

export type Query = {
  __typename?: 'Query';
  /** The audit trail, newest first: an administrator sees every tenant's events, a tenant its own. */
  auditEvents: AuditEventConnection;
  /** A benchmark you may see. */
  benchmark?: Maybe<Benchmark>;
  /** Your benchmarks (of one deployment, if given), newest first. */
  benchmarks: BenchmarkConnection;
  /** Project and tenant budgets where they stand this period: your tenant's and its projects' (a token limited to projects: those and the tenant's); every tenant's for the operator, or tenantId's. */
  budgets: Array<Budget>;
  cluster?: Maybe<Cluster>;
  clusters: Array<Cluster>;
  /** 2 to 10 benchmarks side by side: their metrics, the configuration that differs, and the best by each metric. */
  compareBenchmarks: BenchmarkComparison;
  /** A model deployment you may see. */
  deployment?: Maybe<Deployment>;
  /** Your model deployments, newest first (at most 100 per page). */
  deployments: DeploymentConnection;
  /** A cluster's drains: those on, and those ended in the last day. */
  drains: Array<Drain>;
  fleet?: Maybe<Fleet>;
  /** Every fleet: clusters grouped behind one queue name, by name. */
  fleets: Array<Fleet>;
  /** A job you may see. */
  job?: Maybe<Job>;
  /** A job's history, oldest first. */
  jobEvents: Array<JobEvent>;
  /** What a job attempt's pods wrote, oldest first: its latest attempt unless `attempt` is given, of `pod` only, after `since`, the last `tail` (1 to 5000; 200 by default). A failed attempt's last lines are kept with it once its pods are gone. Needs jobs:logs. */
  jobLogs: JobLogsResult;
  /** Your jobs, newest first (at most 100 per page). */
  jobs: JobConnection;
  /** Where and when a job would start, and what it would cost, without submitting it. */
  previewJob: PreviewJobResult;
  /** The steps the autoscalers of your deployments on a cluster took, newest first (each deployment's last 20; at most 200): what the schedule draws beside the replicas they started or stopped. */
  scalingSteps: Array<ScalingStep>;
  /** Your tenant's secrets by name (the operator: tenantId's): names and keys, never values. */
  secrets: Array<Secret>;
  /** GPU-hours and metered cost over a range of UTC days, grouped (none: one total), paged (at most 1000 a page): your tenant's (a token limited to projects, theirs), every tenant's for the operator. The same as CSV: GET /spend.csv. */
  spend: SpendConnection;
  /** The value of each priority, highest first (global, as Kueue's are). */
  workloadPriorityClasses: Array<WorkloadPriorityClass>;
};


export type QueryAuditEventsArgs = {
  after?: InputMaybe<Scalars['String']['input']>;
  filter?: InputMaybe<AuditFilter>;
  first?: Scalars['Int']['input'];
};


export type QueryBenchmarkArgs = {
  id: Scalars['ID']['input'];
};


export type QueryBenchmarksArgs = {
  after?: InputMaybe<Scalars['String']['input']>;
  deploymentId?: InputMaybe<Scalars['ID']['input']>;
  first?: Scalars['Int']['input'];
};


export type QueryBudgetsArgs = {
  tenantId?: InputMaybe<Scalars['ID']['input']>;
};


export type QueryClusterArgs = {
  id: Scalars['ID']['input'];
};


export type QueryCompareBenchmarksArgs = {
  ids: Array<Scalars['ID']['input']>;
};


export type QueryDeploymentArgs = {
  id: Scalars['ID']['input'];
};


export type QueryDeploymentsArgs = {
  after?: InputMaybe<Scalars['String']['input']>;
  filter?: InputMaybe<DeploymentFilter>;
  first?: Scalars['Int']['input'];
};


export type QueryDrainsArgs = {
  clusterId: Scalars['ID']['input'];
};


export type QueryFleetArgs = {
  id: Scalars['ID']['input'];
};


export type QueryJobArgs = {
  id: Scalars['ID']['input'];
};


export type QueryJobEventsArgs = {
  jobId: Scalars['ID']['input'];
};


export type QueryJobLogsArgs = {
  attempt?: InputMaybe<Scalars['Int']['input']>;
  jobId: Scalars['ID']['input'];
  pod?: InputMaybe<Scalars['String']['input']>;
  since?: InputMaybe<Scalars['DateTime']['input']>;
  tail?: InputMaybe<Scalars['Int']['input']>;
};


export type QueryJobsArgs = {
  after?: InputMaybe<Scalars['String']['input']>;
  filter?: InputMaybe<JobFilter>;
  first?: Scalars['Int']['input'];
};


export type QueryPreviewJobArgs = {
  input: SubmitJobInput;
};


export type QueryScalingStepsArgs = {
  clusterId: Scalars['ID']['input'];
};


export type QuerySecretsArgs = {
  tenantId?: InputMaybe<Scalars['ID']['input']>;
};


export type QuerySpendArgs = {
  after?: InputMaybe<Scalars['String']['input']>;
  first?: Scalars['Int']['input'];
  from: Scalars['Date']['input'];
  groupBy?: InputMaybe<Array<SpendGroup>>;
  to: Scalars['Date']['input'];
};

/** A waiting job, in the order the estimator expects them to start. */
export type QueueEntry = {
  __typename?: 'QueueEntry';
  /** Its start window at 80 % confidence, as on its estimated segment: the earliest start; null without a window (and for other tenants' jobs). */
  earliestStart?: Maybe<Scalars['DateTime']['output']>;
  estimatedStart?: Maybe<Scalars['DateTime']['output']>;
  /** GPUs per pod. */
  gpuCount: Scalars['Int']['output'];
  gpuType?: Maybe<Scalars['String']['output']>;
  jobId?: Maybe<Scalars['ID']['output']>;
  /** Null for other tenants' jobs. */
  jobType?: Maybe<JobType>;
  /** The window's latest start; null without a window or a later bound. */
  latestStart?: Maybe<Scalars['DateTime']['output']>;
  /** Yours to see: named with its job (your tenant's, within your token's projects; every tenant's for the operator). */
  mine: Scalars['Boolean']['output'];
  name: Scalars['String']['output'];
  podCount: Scalars['Int']['output'];
  position: Scalars['Int']['output'];
  priority?: Maybe<JobPriority>;
  /** Why it waits, e.g. needs 4 x A100 in cq; 3 ahead. */
  reason: Scalars['String']['output'];
  warnings: Array<Scalars['String']['output']>;
};

/** STRICT_FIFO: a head that does not fit blocks the queue; BEST_EFFORT_FIFO: later workloads that fit may go first. */
export type QueueingStrategy =
  | 'BEST_EFFORT_FIFO'
  | 'STRICT_FIFO';

/** How a cluster's Kueue is configured, as far as its quotas go. */
export type QuotaSettings = {
  __typename?: 'QuotaSettings';
  clusterId: Scalars['ID']['output'];
  /** Kueue's fairSharing.enable: queues and cohorts share unused quota by their fairSharingWeight, and preempt to even out shares. On a real cluster this is Kueue's controller configuration (its ConfigMap), which budcluster does not manage: this field records it, and the operator sets both alike. */
  fairSharing: Scalars['Boolean']['output'];
};

export type QuotaSettingsInput = {
  clusterId: Scalars['ID']['input'];
  /** Whether the cluster's Kueue runs fair sharing (its configuration's fairSharing.enable, which budcluster records but does not set on the cluster). */
  fairSharing: Scalars['Boolean']['input'];
};

export type QuotaSettingsResult = ConflictError | ForbiddenError | NotFoundError | QuotaSettings | ValidationError;

/** Which workloads of other queues in the cohort a queue may preempt to take back quota they borrowed from it. */
export type ReclaimWithinCohort =
  | 'ANY'
  | 'LOWER_PRIORITY'
  | 'NEVER';

/** A Kubernetes or OpenShift cluster to manage. */
export type RegisterClusterInput = {
  /** Add-ons to install once the cluster is reached, if missing (as installAddons). */
  addons?: InputMaybe<Array<Addon>>;
  /** The Helm repository to take them from (installAddons' mirror). */
  addonsMirror?: InputMaybe<Scalars['String']['input']>;
  /** The context to use (default: the kubeconfig's current one). */
  context?: InputMaybe<Scalars['String']['input']>;
  /** Count control-plane nodes in the capacity. */
  enableMasterNode?: Scalars['Boolean']['input'];
  ingressUrl?: InputMaybe<Scalars['String']['input']>;
  /** The kubeconfig, as YAML text (at most 1 MiB). Stored sealed; never returned or logged. */
  kubeconfig: Scalars['String']['input'];
  /** A DNS-1123 label, unique among clusters. */
  name: Scalars['String']['input'];
  /** ON_PREM, EKS, AKS or OPENSHIFT. */
  platform: Platform;
};

/** Why a request failed: HTTP_STATUS (an error status such as 429 or 500), CONNECTION (refused, or dropped mid-stream), TIMEOUT (stalled), MALFORMED (broken SSE or JSON, an error event, no [DONE]), EMPTY (no token), CANCELLED (the run was cancelled). */
export type RequestFailureKind =
  | 'CANCELLED'
  | 'CONNECTION'
  | 'EMPTY'
  | 'HTTP_STATUS'
  | 'MALFORMED'
  | 'TIMEOUT';

/** One request of a run, as the client timed it. */
export type RequestSample = {
  __typename?: 'RequestSample';
  e2elMs?: Maybe<Scalars['Float']['output']>;
  error?: Maybe<Scalars['String']['output']>;
  failure?: Maybe<RequestFailureKind>;
  index: Scalars['Int']['output'];
  /** Gaps between its streamed tokens. */
  itlMs: Array<Scalars['Float']['output']>;
  ok: Scalars['Boolean']['output'];
  outputTokens: Scalars['Int']['output'];
  promptTokens: Scalars['Int']['output'];
  /** From the run's start. */
  sentAtSeconds: Scalars['Float']['output'];
  ttftMs?: Maybe<Scalars['Float']['output']>;
};

/** A kind of node, chosen by node labels (e.g. the GPU product). */
export type ResourceFlavor = {
  __typename?: 'ResourceFlavor';
  clusterId: Scalars['ID']['output'];
  createdAt: Scalars['DateTime']['output'];
  name: Scalars['String']['output'];
  nodeLabels: Array<NodeLabel>;
  updatedAt: Scalars['DateTime']['output'];
};

export type ResourceFlavorInput = {
  clusterId: Scalars['ID']['input'];
  /** A DNS-1123 label of at most 63 characters. */
  name: Scalars['String']['input'];
  /** The labels a node must carry to be of this flavor. */
  nodeLabels?: Array<NodeLabelInput>;
};

export type ResourceFlavorResult = ConflictError | ForbiddenError | NotFoundError | ResourceFlavor | ValidationError;

/** Resources whose quotas are given together, per flavor in order. */
export type ResourceGroup = {
  __typename?: 'ResourceGroup';
  coveredResources: Array<Scalars['String']['output']>;
  flavors: Array<FlavorQuotas>;
};

export type ResourceGroupInput = {
  coveredResources: Array<Scalars['String']['input']>;
  /** In order of preference; each flavor in at most one group of the queue. */
  flavors: Array<FlavorQuotasInput>;
};

/** A resource quantity as Kubernetes reports it, e.g. cpu 96, memory 1Ti. */
export type ResourceQuantity = {
  __typename?: 'ResourceQuantity';
  quantity: Scalars['String']['output'];
  resource: Scalars['String']['output'];
};

/** A queue's quota of one resource in one flavor. */
export type ResourceQuota = {
  __typename?: 'ResourceQuota';
  /** How much more it may borrow from its cohort; null: whatever is unused. */
  borrowingLimit?: Maybe<Scalars['Float']['output']>;
  /** How much of its unused quota its cohort may borrow; null: all of it. */
  lendingLimit?: Maybe<Scalars['Float']['output']>;
  name: Scalars['String']['output'];
  nominalQuota: Scalars['Float']['output'];
};

export type ResourceQuotaInput = {
  /** Only for a queue in a cohort (a cohort: with a parent). */
  borrowingLimit?: InputMaybe<Scalars['Float']['input']>;
  /** Only for a queue in a cohort, at most nominalQuota (a cohort: with a parent). */
  lendingLimit?: InputMaybe<Scalars['Float']['input']>;
  /** A resource: nvidia.com/gpu, cpu, memory (GB), ... */
  name: Scalars['String']['input'];
  nominalQuota: Scalars['Float']['input'];
};

export type Resources = {
  __typename?: 'Resources';
  /** Cores per pod. */
  cpuCores: Scalars['Float']['output'];
  /** GPUs per pod. */
  gpuCount: Scalars['Int']['output'];
  gpuType?: Maybe<Scalars['String']['output']>;
  /** GB of memory per pod. */
  memoryGb: Scalars['Float']['output'];
  /** Pods of the job, each on one node, admitted all or nothing. */
  podCount: Scalars['Int']['output'];
  /** Every pod set of the job, its own ("main": podCount pods of the fields above) first, then its further ones; admitted together or not at all. */
  podSets: Array<PodSet>;
  storageGb?: Maybe<Scalars['Int']['output']>;
  /** GPUs of the whole job: gpuCount x podCount, plus those of its further pod sets. */
  totalGpus: Scalars['Int']['output'];
};

export type ResourcesInput = {
  /** Cores per pod. */
  cpuCores?: Scalars['Float']['input'];
  /** GPUs per pod. */
  gpuCount?: Scalars['Int']['input'];
  /** GPU product, e.g. nvidia-a100-80gb; required with gpuCount. */
  gpuType?: InputMaybe<Scalars['String']['input']>;
  /** GB of memory per pod. */
  memoryGb?: Scalars['Float']['input'];
  /** Pods of the job (1 to 256), each asking gpuCount GPUs, cpuCores and memoryGb, each on one node, admitted all or nothing (a Kueue pod set: a training job wider than one node is podCount pods of the node's GPUs). BATCH and TRAINING only. */
  podCount?: Scalars['Int']['input'];
  /** The job's further pod sets, after its own (named "main": podCount pods of the fields above): a leader and its workers, an MPI launcher and its workers. All are admitted together or not at all, each pod on one node; at most 7 (Kueue's Workload holds at most 8 pod sets). BATCH and TRAINING only. */
  podSets?: InputMaybe<Array<PodSetInput>>;
  storageGb?: InputMaybe<Scalars['Int']['input']>;
};

export type RunBenchmarkInput = {
  api?: BenchmarkApi;
  /** Where an endpointUrl's benchmark runs. */
  clusterId?: InputMaybe<Scalars['ID']['input']>;
  /** Users (1-1024). */
  concurrency?: InputMaybe<Scalars['Int']['input']>;
  /** The deployment to load (or give endpointUrl). */
  deploymentId?: InputMaybe<Scalars['ID']['input']>;
  durationSeconds?: InputMaybe<Scalars['Float']['input']>;
  /** An OpenAI-compatible base URL (ending in /v1): a public address, one the operator allows, or your own deployment's. */
  endpointUrl?: InputMaybe<Scalars['String']['input']>;
  /** Required with endpointUrl; a deployment's served name else. */
  model?: InputMaybe<Scalars['String']['input']>;
  name: Scalars['String']['input'];
  outputTokens?: InputMaybe<TokenLengthsInput>;
  projectId: Scalars['ID']['input'];
  promptTokens?: InputMaybe<TokenLengthsInput>;
  /** A dataset of prompts, used in turn instead of generated ones. */
  prompts?: InputMaybe<Array<Scalars['String']['input']>>;
  requestCount?: InputMaybe<Scalars['Int']['input']>;
  /** Requests per second, Poisson arrivals. */
  requestRate?: InputMaybe<Scalars['Float']['input']>;
  requestTimeoutSeconds?: Scalars['Float']['input'];
  seed?: Scalars['Int']['input'];
};

/** IN_FLIGHT: requests in flight per replica (waiting for a slot, prefilling or decoding); QUEUE_TIME: seconds a request waits for a slot of its replica. */
export type ScaleMetric =
  | 'IN_FLIGHT'
  | 'QUEUE_TIME';

/** A change of a deployment's replicas that its autoscaler made. */
export type ScalingStep = {
  __typename?: 'ScalingStep';
  at: Scalars['DateTime']['output'];
  deploymentId: Scalars['ID']['output'];
  deploymentName: Scalars['String']['output'];
  fromReplicas: Scalars['Int']['output'];
  /** The metric that asked for it, when one did. */
  metricValue?: Maybe<Scalars['Float']['output']>;
  /** Why, in words: e.g. "12.0 requests in flight per replica, target 4", "no request for 300 s", "a request came while no replica served". */
  reason: Scalars['String']['output'];
  toReplicas: Scalars['Int']['output'];
};

/** A cluster's schedule in a time window, as of `sequence`. */
export type Schedule = {
  __typename?: 'Schedule';
  computedAt: Scalars['DateTime']['output'];
  end: Scalars['DateTime']['output'];
  forecast: Array<GpuForecast>;
  queue: Array<QueueEntry>;
  /** For subscription snapshots: subscribed, or resync (history gone or behind). */
  reason: Scalars['String']['output'];
  /** One row per GPU and the CPU pool, each with its segments. */
  rows: Array<TimelineRow>;
  segments: Array<TimelineSegment>;
  sequence: Scalars['Int']['output'];
  start: Scalars['DateTime']['output'];
};

/** Changes to the schedule since the previous message. */
export type ScheduleDiff = {
  __typename?: 'ScheduleDiff';
  added: Array<TimelineSegment>;
  computedAt: Scalars['DateTime']['output'];
  /** The whole new forecast, if it changed. */
  forecastUpdate?: Maybe<Array<GpuForecast>>;
  /** Changed segments that overlap your window: upsert them by id. */
  moved: Array<TimelineSegment>;
  /** The whole new queue, if it changed (named apart from Schedule.queue so one selection can ask for both). */
  queueUpdate?: Maybe<Array<QueueEntry>>;
  /** Ids that left the timeline or your window (unknown ids can be ignored). */
  removed: Array<Scalars['String']['output']>;
  /** The whole new list of rows, if a node joined, left or changed its GPUs. Completed work may still name rows that are gone. */
  rowsUpdate?: Maybe<Array<ScheduleRow>>;
  sequence: Scalars['Int']['output'];
};

export type ScheduleFilter = {
  kinds?: InputMaybe<Array<SegmentKind>>;
  onlyMine?: Scalars['Boolean']['input'];
  priorities?: InputMaybe<Array<JobPriority>>;
};

/** A row of the schedule without its segments: a GPU of a node, or the CPU pool (id `cpu`). */
export type ScheduleRow = {
  __typename?: 'ScheduleRow';
  gpuIndex?: Maybe<Scalars['Int']['output']>;
  gpuType?: Maybe<Scalars['String']['output']>;
  id: Scalars['String']['output'];
  node?: Maybe<Scalars['String']['output']>;
};

export type ScheduleUpdate = Schedule | ScheduleDiff;

/** A secret of a tenant's: its name and keys. Its values are never returned. */
export type Secret = {
  __typename?: 'Secret';
  createdAt: Scalars['DateTime']['output'];
  id: Scalars['ID']['output'];
  keys: Array<Scalars['String']['output']>;
  /** When a job's attempt was last handed to its cluster with it (audited each time as secretUsed). */
  lastUsedAt?: Maybe<Scalars['DateTime']['output']>;
  name: Scalars['String']['output'];
  tenantId: Scalars['ID']['output'];
  updatedAt: Scalars['DateTime']['output'];
  /** 1, and one more each time its values were replaced. */
  version: Scalars['Int']['output'];
};

/** One key of a secret and its value (text). */
export type SecretEntryInput = {
  /** Letters, digits, '-', '_' or '.' (a Kubernetes Secret's key); as an environment variable it must also be a shell's variable name. */
  key: Scalars['String']['input'];
  /** Never returned, logged or audited. */
  value: Scalars['String']['input'];
};

/** A secret a job or deployment names. */
export type SecretRef = {
  __typename?: 'SecretRef';
  mountPath?: Maybe<Scalars['String']['output']>;
  name: Scalars['String']['output'];
};

/** A secret a job's containers get: each key as an environment variable (no mountPath; a variable the spec's env sets as well keeps the spec's value), or each key as a file in the directory mountPath. Opened when an attempt is handed to its cluster. */
export type SecretRefInput = {
  /** An absolute directory for its keys as files; null: env. */
  mountPath?: InputMaybe<Scalars['String']['input']>;
  /** One of your tenant's secrets. */
  name: Scalars['String']['input'];
};

export type SecretResult = ConflictError | ForbiddenError | NotFoundError | Secret | ValidationError;

/** COMPLETED ran; RUNNING runs now; ESTIMATED is expected; RESERVED is booked capacity. */
export type SegmentKind =
  | 'COMPLETED'
  | 'ESTIMATED'
  | 'RESERVED'
  | 'RUNNING';

/** The inference engine a deployment runs. */
export type ServingEngine =
  | 'OPENAI_COMPATIBLE'
  | 'VLLM';

/** A budget per period: a tenant's (projectId null; the operator sets it) or a project's (its tenant sets it, within the tenant's). Replaces the one it has. */
export type SetBudgetInput = {
  /** What happens when it is spent. */
  action?: BudgetAction;
  /** The most it may spend in a period (0 to 9999999999.9999), in the unit of Job.estimatedCost. */
  limit: Scalars['Decimal']['input'];
  /** The project; null: the whole tenant. */
  projectId?: InputMaybe<Scalars['ID']['input']>;
  /** The tenant (the operator); null: your own. */
  tenantId?: InputMaybe<Scalars['ID']['input']>;
};

/** A new price of one GPU of a type for an hour on a cluster, from now on (what ran before keeps its price). */
export type SetGpuPriceInput = {
  clusterId: Scalars['ID']['input'];
  /** As the cluster's nodes name it (Node.gpuType), e.g. nvidia-a100-80gb. */
  gpuType: Scalars['String']['input'];
  /** 0 to 100000, at most 4 decimals, in the unit of Job.estimatedCost. */
  hourlyPrice: Scalars['Decimal']['input'];
};

/** A secret of your tenant's, stored sealed; replaces all the values of one of that name. */
export type SetSecretInput = {
  /** 1 to 32 keys, at most 524288 bytes in all. */
  data: Array<SecretEntryInput>;
  /** A DNS-1123 label of at most 63 characters. */
  name: Scalars['String']['input'];
  /** The tenant (the operator); null: your own. */
  tenantId?: InputMaybe<Scalars['ID']['input']>;
};

/** What created the job. */
export type SourceKind =
  | 'BENCHMARK'
  | 'DEPLOYMENT'
  | 'DIRECT'
  | 'PIPELINE'
  | 'USECASE';

export type SpendConnection = {
  __typename?: 'SpendConnection';
  edges: Array<SpendEdge>;
  pageInfo: PageInfo;
  /** Every group of the query summed (not only this page's). */
  total: SpendRow;
};

export type SpendEdge = {
  __typename?: 'SpendEdge';
  cursor: Scalars['String']['output'];
  node: SpendRow;
};

/** What spend is summed by: DAY is the UTC day the GPUs were used on (a run over midnight counts on both days). */
export type SpendGroup =
  | 'CLUSTER'
  | 'DAY'
  | 'GPU_TYPE'
  | 'JOB_TYPE'
  | 'PROJECT'
  | 'TENANT';

/** One group of spend: the keys it was grouped by (the others are null; so is the GPU type of GPU-less work), the GPU-hours used and what they cost, in the unit of Job.estimatedCost. GPU-less work is priced per core-hour and counts no GPU-hours. */
export type SpendRow = {
  __typename?: 'SpendRow';
  clusterId?: Maybe<Scalars['ID']['output']>;
  cost: Scalars['Decimal']['output'];
  day?: Maybe<Scalars['Date']['output']>;
  gpuHours: Scalars['Float']['output'];
  gpuType?: Maybe<Scalars['String']['output']>;
  jobType?: Maybe<JobType>;
  projectId?: Maybe<Scalars['ID']['output']>;
  tenantId?: Maybe<Scalars['ID']['output']>;
};

/** An interval that holds a job's start with the stated probability, calibrated on the cluster's recent record of estimates against real starts. */
export type StartWindow = {
  __typename?: 'StartWindow';
  confidence: Scalars['Float']['output'];
  earliest: Scalars['DateTime']['output'];
  /** Null: the record is too short to bound the start at this confidence. */
  latest?: Maybe<Scalars['DateTime']['output']>;
};

export type SubmitJobInput = {
  /** What happens when the job's cost reaches budgetLimit. */
  budgetAction?: BudgetAction;
  /** The most the job may cost, in the unit of Job.estimatedCost (0 to 9999999999.9999): checked at submission against its estimatedDurationSeconds (at most maxDurationSeconds) at the cluster's prices, and while it runs against what it has cost (every few seconds); budgetAction says what follows. */
  budgetLimit?: InputMaybe<Scalars['Decimal']['input']>;
  /** The cluster to run on; or give fleetId instead. */
  clusterId?: InputMaybe<Scalars['ID']['input']>;
  deadline?: InputMaybe<Scalars['DateTime']['input']>;
  /** At most 32 of your jobs on the same cluster that must complete first. */
  dependsOn?: Array<Scalars['ID']['input']>;
  deploymentType: DeploymentType;
  estimatedDurationSeconds?: InputMaybe<Scalars['Int']['input']>;
  /** A fleet: the job goes to the member where it is estimated to start soonest (with a deadline: the cheapest member that meets it), in the fleet's LocalQueue, and may move to another member before it is admitted. */
  fleetId?: InputMaybe<Scalars['ID']['input']>;
  /** Submitting again with the same key in the same project returns the first job, never a second. */
  idempotencyKey?: InputMaybe<Scalars['String']['input']>;
  jobType: JobType;
  maxDurationSeconds?: InputMaybe<Scalars['Int']['input']>;
  maxRetries?: Scalars['Int']['input'];
  /** A DNS-1123 label of at most 53 characters. */
  name: Scalars['String']['input'];
  preemptible?: Scalars['Boolean']['input'];
  priority?: JobPriority;
  projectId: Scalars['ID']['input'];
  /** A LocalQueue in your namespace; "default" is made on first use. */
  queueName?: Scalars['String']['input'];
  /** One of your capacity reservations to run in. */
  reservationId?: InputMaybe<Scalars['ID']['input']>;
  resources?: ResourcesInput;
  /** At most 8 of your tenant's secrets its containers get (see setSecret). */
  secrets?: Array<SecretRefInput>;
  source?: JobSourceInput;
  /** What to run, as a JSON object (e.g. image, command, env; simulation.runtime_seconds on a simulated cluster). Null or absent: {}. */
  spec?: InputMaybe<Scalars['JSON']['input']>;
  /** Seconds its containers get between SIGTERM and being killed, to write a checkpoint when a drain takes it off its node (0 to 3600; its pods' terminationGracePeriodSeconds). Null: 30, Kubernetes' default. */
  terminationGracePeriodSeconds?: InputMaybe<Scalars['Int']['input']>;
  window?: InputMaybe<TimeWindowInput>;
};

export type SubmitJobResult = ConflictError | ForbiddenError | Job | NotFoundError | ValidationError;

export type Subscription = {
  __typename?: 'Subscription';
  /** A benchmark as it is, then about every second while it runs (progress), and once more when it ends (status, result, and its final progress: every request the run ended); then the stream ends. */
  benchmarkProgress: Benchmark;
  /** A cluster's status and nodes: a snapshot, then every change in order, each with its sequence. Reconnect with `since` to get exactly the changes you missed. */
  clusterUpdates: ClusterUpdate;
  /** Your deployments on a cluster: a snapshot, then each change (status, workers, endpoint, replicas) in order. Reconnect with `since` to get exactly what you missed. */
  deploymentUpdates: DeploymentUpdate;
  /** A job attempt's log as it is written: its last `tail` lines (200), then each batch of new ones, until the attempt has ended. Needs jobs:logs. */
  jobLogs: JobLogs;
  /** A snapshot of your jobs on a cluster, then every change in order. Reconnect with `since` (the last sequence you hold) to get exactly what you missed. */
  jobUpdates: JobUpdate;
  /** A cluster's schedule in a window: a snapshot, then diffs (segments added, moved, removed; queue and forecast changes), each with its sequence. Reconnect with `since` to get exactly the changes you missed. The window is fixed when you subscribe (defaults as for Cluster.schedule); subscribe again to move it. */
  scheduleTimeline: ScheduleUpdate;
};


export type SubscriptionBenchmarkProgressArgs = {
  id: Scalars['ID']['input'];
};


export type SubscriptionClusterUpdatesArgs = {
  clusterId: Scalars['ID']['input'];
  since?: InputMaybe<Scalars['Int']['input']>;
};


export type SubscriptionDeploymentUpdatesArgs = {
  clusterId: Scalars['ID']['input'];
  since?: InputMaybe<Scalars['Int']['input']>;
};


export type SubscriptionJobLogsArgs = {
  attempt?: InputMaybe<Scalars['Int']['input']>;
  jobId: Scalars['ID']['input'];
  pod?: InputMaybe<Scalars['String']['input']>;
  tail?: InputMaybe<Scalars['Int']['input']>;
};


export type SubscriptionJobUpdatesArgs = {
  clusterId: Scalars['ID']['input'];
  filter?: InputMaybe<JobFilter>;
  since?: InputMaybe<Scalars['Int']['input']>;
};


export type SubscriptionScheduleTimelineArgs = {
  clusterId: Scalars['ID']['input'];
  from?: InputMaybe<Scalars['DateTime']['input']>;
  since?: InputMaybe<Scalars['Int']['input']>;
  to?: InputMaybe<Scalars['DateTime']['input']>;
};

/** A node taint: pods without a matching toleration stay off. */
export type Taint = {
  __typename?: 'Taint';
  effect: Scalars['String']['output'];
  key: Scalars['String']['output'];
  value?: Maybe<Scalars['String']['output']>;
};

/** A daily window, in UTC, in which a job may start. */
export type TimeWindow = {
  __typename?: 'TimeWindow';
  /** HH:MM, UTC; before start means across midnight. */
  end: Scalars['String']['output'];
  /** HH:MM, UTC. */
  start: Scalars['String']['output'];
};

/** A daily window, in UTC, in which the job may start. */
export type TimeWindowInput = {
  /** HH:MM, UTC; before start means across midnight. */
  end: Scalars['String']['input'];
  /** HH:MM, UTC. */
  start: Scalars['String']['input'];
};

/** A GPU of a node, or the CPU pool (id `cpu`). */
export type TimelineRow = {
  __typename?: 'TimelineRow';
  gpuIndex?: Maybe<Scalars['Int']['output']>;
  gpuType?: Maybe<Scalars['String']['output']>;
  id: Scalars['String']['output'];
  node?: Maybe<Scalars['String']['output']>;
  segments: Array<TimelineSegment>;
};

/** One job attempt (or reservation) on the GPUs it holds. */
export type TimelineSegment = {
  __typename?: 'TimelineSegment';
  /** A waiting job's start window at 80 % confidence (the band around its estimated segment): its earliest start; null without a window. */
  earliestStart?: Maybe<Scalars['DateTime']['output']>;
  /** Null: runs until stopped. */
  end?: Maybe<Scalars['DateTime']['output']>;
  id: Scalars['String']['output'];
  /** Null for other tenants' work (shown, not named). */
  jobId?: Maybe<Scalars['ID']['output']>;
  /** Null for reservations and other tenants' work. */
  jobType?: Maybe<JobType>;
  kind: SegmentKind;
  /** The window's latest start; null without a window or a later bound. */
  latestStart?: Maybe<Scalars['DateTime']['output']>;
  /** Yours to see: named with its job (your tenant's, within your token's projects; every tenant's for the operator). */
  mine: Scalars['Boolean']['output'];
  name: Scalars['String']['output'];
  priority?: Maybe<JobPriority>;
  reservationId?: Maybe<Scalars['ID']['output']>;
  /** Ids of the rows (GPUs) it occupies. */
  rows: Array<Scalars['String']['output']>;
  /** Where the end comes from: actual, estimate, history, default, service, reservation. */
  source: Scalars['String']['output'];
  start?: Maybe<Scalars['DateTime']['output']>;
  status?: Maybe<JobStatus>;
};

/** Token counts: FIXED `mean`, UNIFORM in [low, high], NORMAL(mean, stddev) clamped to [low, high]. */
export type TokenLengths = {
  __typename?: 'TokenLengths';
  distribution: LengthDistribution;
  high: Scalars['Int']['output'];
  low: Scalars['Int']['output'];
  mean: Scalars['Int']['output'];
  stddev: Scalars['Float']['output'];
};

/** Token counts: FIXED `mean`; UNIFORM [low, high]; NORMAL(mean, stddev) clamped to [low, high]. */
export type TokenLengthsInput = {
  distribution?: LengthDistribution;
  high?: InputMaybe<Scalars['Int']['input']>;
  low?: InputMaybe<Scalars['Int']['input']>;
  mean?: Scalars['Int']['input'];
  stddev?: Scalars['Float']['input'];
};

/** What to change; fields left out stay as they are. */
export type UpdateClusterInput = {
  context?: InputMaybe<Scalars['String']['input']>;
  enableMasterNode?: InputMaybe<Scalars['Boolean']['input']>;
  /** An empty string clears it. */
  ingressUrl?: InputMaybe<Scalars['String']['input']>;
  /** A new kubeconfig: the cluster connects again. */
  kubeconfig?: InputMaybe<Scalars['String']['input']>;
  name?: InputMaybe<Scalars['String']['input']>;
};

/** Something the caller can fix or act on. */
export type UserError = {
  code: Scalars['String']['output'];
  message: Scalars['String']['output'];
};

/** The input was not acceptable; nothing was stored. */
export type ValidationError = UserError & {
  __typename?: 'ValidationError';
  code: Scalars['String']['output'];
  fields: Array<FieldError>;
  message: Scalars['String']['output'];
};

/** How often starts fell in the windows shown at one confidence. */
export type WindowCoverage = {
  __typename?: 'WindowCoverage';
  confidence: Scalars['Float']['output'];
  /** Share (0 to 1) whose start fell inside. */
  inside: Scalars['Float']['output'];
  /** Jobs shown such a window at submission that started. */
  jobs: Scalars['Int']['output'];
  /** Null when most of the windows had no later bound. */
  medianWidthSeconds?: Maybe<Scalars['Float']['output']>;
};

/** Which workloads of its own queue a pending workload may preempt. */
export type WithinClusterQueue =
  | 'LOWER_OR_NEWER_EQUAL_PRIORITY'
  | 'LOWER_PRIORITY'
  | 'NEVER';

/** One replica's pod. */
export type Worker = {
  __typename?: 'Worker';
  cpuCores: Scalars['Float']['output'];
  /** GPU indices on its node. */
  devices: Array<Scalars['Int']['output']>;
  /** The SERVICE job that runs it. */
  jobId: Scalars['ID']['output'];
  lastRestartAt?: Maybe<Scalars['DateTime']['output']>;
  memoryGb: Scalars['Float']['output'];
  name: Scalars['String']['output'];
  node?: Maybe<Scalars['String']['output']>;
  reason?: Maybe<Scalars['String']['output']>;
  replica: Scalars['Int']['output'];
  /** Times it was started again after a failure. */
  restarts: Scalars['Int']['output'];
  /** When it last started running. */
  startedAt?: Maybe<Scalars['DateTime']['output']>;
  status: WorkerStatus;
  /** Seconds since startedAt, when it runs (as of the read). */
  uptimeSeconds?: Maybe<Scalars['Float']['output']>;
  /** Share of its request slots (maxNumSeqs) in use now, 0 to 1, when the endpoint reports it. */
  utilisation?: Maybe<Scalars['Float']['output']>;
};

/** PENDING: waiting for GPUs or starting; RUNNING: serving; ERROR: failed (it may be retried); TERMINATED: stopped, scaled away or preempted. */
export type WorkerStatus =
  | 'ERROR'
  | 'PENDING'
  | 'RUNNING'
  | 'TERMINATED';

/** The value a priority has for admission and preemption. */
export type WorkloadPriorityClass = {
  __typename?: 'WorkloadPriorityClass';
  description: Scalars['String']['output'];
  name: Scalars['String']['output'];
  priority: JobPriority;
  updatedAt: Scalars['DateTime']['output'];
  value: Scalars['Int']['output'];
};

export type WorkloadPriorityClassResult = ConflictError | ForbiddenError | NotFoundError | ValidationError | WorkloadPriorityClass;

export type AuditEventsQueryVariables = Exact<{
  filter?: InputMaybe<AuditFilter>;
  first?: Scalars['Int']['input'];
  after?: InputMaybe<Scalars['String']['input']>;
}>;


export type AuditEventsQuery = { __typename?: 'Query', auditEvents: { __typename?: 'AuditEventConnection', edges: Array<{ __typename?: 'AuditEventEdge', cursor: string, node: { __typename?: 'AuditEvent', id: string, at: string, actor: string, tokenId?: string | null, tenantId?: string | null, operation: string, targets: Array<string>, input: unknown, outcome: string, source: string } }>, pageInfo: { __typename?: 'PageInfo', hasNextPage: boolean, endCursor?: string | null } } };

export type LatencyFragment = { __typename?: 'LatencySummary', meanMs: number, p50Ms: number, p90Ms: number, p99Ms: number, maxMs: number };

export type BenchmarkViewFragment = { __typename?: 'Benchmark', id: string, name: string, deploymentId?: string | null, jobId: string, status: BenchmarkStatus, statusMessage?: string | null, createdAt: string, startedAt?: string | null, finishedAt?: string | null, configuration: Array<{ __typename?: 'ConfigurationEntry', key: string, value?: string | null }>, progress?: { __typename?: 'BenchmarkProgress', elapsedSeconds: number, requestsDone: number, requestsFailed: number, outputTokens: number, ttftMeanMs?: number | null, outputThroughput: number } | null, result?: { __typename?: 'BenchmarkResult', durationSeconds: number, successfulRequests: number, failedRequests: number, inputTokens: number, outputTokens: number, requestThroughput: number, inputThroughput: number, outputThroughput: number, totalTokenThroughput: number, ttft?: { __typename?: 'LatencySummary', meanMs: number, p50Ms: number, p90Ms: number, p99Ms: number, maxMs: number } | null, tpot?: { __typename?: 'LatencySummary', meanMs: number, p50Ms: number, p90Ms: number, p99Ms: number, maxMs: number } | null, itl?: { __typename?: 'LatencySummary', meanMs: number, p50Ms: number, p90Ms: number, p99Ms: number, maxMs: number } | null, e2el?: { __typename?: 'LatencySummary', meanMs: number, p50Ms: number, p90Ms: number, p99Ms: number, maxMs: number } | null, failures: Array<{ __typename?: 'FailureCount', reason: string, count: number }> } | null };

export type BenchmarkListQueryVariables = Exact<{
  deploymentId?: InputMaybe<Scalars['ID']['input']>;
  first?: Scalars['Int']['input'];
  after?: InputMaybe<Scalars['String']['input']>;
}>;


export type BenchmarkListQuery = { __typename?: 'Query', benchmarks: { __typename?: 'BenchmarkConnection', edges: Array<{ __typename?: 'BenchmarkEdge', cursor: string, node: { __typename?: 'Benchmark', id: string, name: string, deploymentId?: string | null, jobId: string, status: BenchmarkStatus, statusMessage?: string | null, createdAt: string, startedAt?: string | null, finishedAt?: string | null, configuration: Array<{ __typename?: 'ConfigurationEntry', key: string, value?: string | null }>, progress?: { __typename?: 'BenchmarkProgress', elapsedSeconds: number, requestsDone: number, requestsFailed: number, outputTokens: number, ttftMeanMs?: number | null, outputThroughput: number } | null, result?: { __typename?: 'BenchmarkResult', durationSeconds: number, successfulRequests: number, failedRequests: number, inputTokens: number, outputTokens: number, requestThroughput: number, inputThroughput: number, outputThroughput: number, totalTokenThroughput: number, ttft?: { __typename?: 'LatencySummary', meanMs: number, p50Ms: number, p90Ms: number, p99Ms: number, maxMs: number } | null, tpot?: { __typename?: 'LatencySummary', meanMs: number, p50Ms: number, p90Ms: number, p99Ms: number, maxMs: number } | null, itl?: { __typename?: 'LatencySummary', meanMs: number, p50Ms: number, p90Ms: number, p99Ms: number, maxMs: number } | null, e2el?: { __typename?: 'LatencySummary', meanMs: number, p50Ms: number, p90Ms: number, p99Ms: number, maxMs: number } | null, failures: Array<{ __typename?: 'FailureCount', reason: string, count: number }> } | null } }>, pageInfo: { __typename?: 'PageInfo', hasNextPage: boolean, endCursor?: string | null } } };

export type BenchmarkSamplesQueryVariables = Exact<{
  id: Scalars['ID']['input'];
  first?: Scalars['Int']['input'];
  offset?: Scalars['Int']['input'];
}>;


export type BenchmarkSamplesQuery = { __typename?: 'Query', benchmark?: { __typename?: 'Benchmark', id: string, samples: Array<{ __typename?: 'RequestSample', index: number, sentAtSeconds: number, ok: boolean, promptTokens: number, outputTokens: number, ttftMs?: number | null, e2elMs?: number | null, itlMs: Array<number>, failure?: RequestFailureKind | null, error?: string | null }> } | null };

export type RunBenchmarkMutationVariables = Exact<{
  input: RunBenchmarkInput;
}>;


export type RunBenchmarkMutation = { __typename?: 'Mutation', runBenchmark: { __typename: 'Benchmark', id: string, name: string, deploymentId?: string | null, jobId: string, status: BenchmarkStatus, statusMessage?: string | null, createdAt: string, startedAt?: string | null, finishedAt?: string | null, configuration: Array<{ __typename?: 'ConfigurationEntry', key: string, value?: string | null }>, progress?: { __typename?: 'BenchmarkProgress', elapsedSeconds: number, requestsDone: number, requestsFailed: number, outputTokens: number, ttftMeanMs?: number | null, outputThroughput: number } | null, result?: { __typename?: 'BenchmarkResult', durationSeconds: number, successfulRequests: number, failedRequests: number, inputTokens: number, outputTokens: number, requestThroughput: number, inputThroughput: number, outputThroughput: number, totalTokenThroughput: number, ttft?: { __typename?: 'LatencySummary', meanMs: number, p50Ms: number, p90Ms: number, p99Ms: number, maxMs: number } | null, tpot?: { __typename?: 'LatencySummary', meanMs: number, p50Ms: number, p90Ms: number, p99Ms: number, maxMs: number } | null, itl?: { __typename?: 'LatencySummary', meanMs: number, p50Ms: number, p90Ms: number, p99Ms: number, maxMs: number } | null, e2el?: { __typename?: 'LatencySummary', meanMs: number, p50Ms: number, p90Ms: number, p99Ms: number, maxMs: number } | null, failures: Array<{ __typename?: 'FailureCount', reason: string, count: number }> } | null } | { __typename: 'ConflictError', code: string, message: string } | { __typename: 'ForbiddenError', code: string, message: string } | { __typename: 'NotFoundError', code: string, message: string } | { __typename: 'ValidationError', code: string, message: string, fields: Array<{ __typename?: 'FieldError', path: string, message: string, code: string }> } };

export type CancelBenchmarkMutationVariables = Exact<{
  id: Scalars['ID']['input'];
}>;


export type CancelBenchmarkMutation = { __typename?: 'Mutation', cancelBenchmark: { __typename: 'Benchmark', id: string, name: string, deploymentId?: string | null, jobId: string, status: BenchmarkStatus, statusMessage?: string | null, createdAt: string, startedAt?: string | null, finishedAt?: string | null, configuration: Array<{ __typename?: 'ConfigurationEntry', key: string, value?: string | null }>, progress?: { __typename?: 'BenchmarkProgress', elapsedSeconds: number, requestsDone: number, requestsFailed: number, outputTokens: number, ttftMeanMs?: number | null, outputThroughput: number } | null, result?: { __typename?: 'BenchmarkResult', durationSeconds: number, successfulRequests: number, failedRequests: number, inputTokens: number, outputTokens: number, requestThroughput: number, inputThroughput: number, outputThroughput: number, totalTokenThroughput: number, ttft?: { __typename?: 'LatencySummary', meanMs: number, p50Ms: number, p90Ms: number, p99Ms: number, maxMs: number } | null, tpot?: { __typename?: 'LatencySummary', meanMs: number, p50Ms: number, p90Ms: number, p99Ms: number, maxMs: number } | null, itl?: { __typename?: 'LatencySummary', meanMs: number, p50Ms: number, p90Ms: number, p99Ms: number, maxMs: number } | null, e2el?: { __typename?: 'LatencySummary', meanMs: number, p50Ms: number, p90Ms: number, p99Ms: number, maxMs: number } | null, failures: Array<{ __typename?: 'FailureCount', reason: string, count: number }> } | null } | { __typename: 'ConflictError', code: string, message: string } | { __typename: 'ForbiddenError', code: string, message: string } | { __typename: 'NotFoundError', code: string, message: string } | { __typename: 'ValidationError', code: string, message: string } };

export type BenchmarkProgressSubscriptionVariables = Exact<{
  id: Scalars['ID']['input'];
}>;


export type BenchmarkProgressSubscription = { __typename?: 'Subscription', benchmarkProgress: { __typename?: 'Benchmark', id: string, name: string, deploymentId?: string | null, jobId: string, status: BenchmarkStatus, statusMessage?: string | null, createdAt: string, startedAt?: string | null, finishedAt?: string | null, configuration: Array<{ __typename?: 'ConfigurationEntry', key: string, value?: string | null }>, progress?: { __typename?: 'BenchmarkProgress', elapsedSeconds: number, requestsDone: number, requestsFailed: number, outputTokens: number, ttftMeanMs?: number | null, outputThroughput: number } | null, result?: { __typename?: 'BenchmarkResult', durationSeconds: number, successfulRequests: number, failedRequests: number, inputTokens: number, outputTokens: number, requestThroughput: number, inputThroughput: number, outputThroughput: number, totalTokenThroughput: number, ttft?: { __typename?: 'LatencySummary', meanMs: number, p50Ms: number, p90Ms: number, p99Ms: number, maxMs: number } | null, tpot?: { __typename?: 'LatencySummary', meanMs: number, p50Ms: number, p90Ms: number, p99Ms: number, maxMs: number } | null, itl?: { __typename?: 'LatencySummary', meanMs: number, p50Ms: number, p90Ms: number, p99Ms: number, maxMs: number } | null, e2el?: { __typename?: 'LatencySummary', meanMs: number, p50Ms: number, p90Ms: number, p99Ms: number, maxMs: number } | null, failures: Array<{ __typename?: 'FailureCount', reason: string, count: number }> } | null } };

export type CompareBenchmarksQueryVariables = Exact<{
  ids: Array<Scalars['ID']['input']> | Scalars['ID']['input'];
}>;


export type CompareBenchmarksQuery = { __typename?: 'Query', compareBenchmarks: { __typename?: 'BenchmarkComparison', benchmarks: Array<{ __typename?: 'Benchmark', id: string, name: string, deploymentId?: string | null, jobId: string, status: BenchmarkStatus, statusMessage?: string | null, createdAt: string, startedAt?: string | null, finishedAt?: string | null, configuration: Array<{ __typename?: 'ConfigurationEntry', key: string, value?: string | null }>, progress?: { __typename?: 'BenchmarkProgress', elapsedSeconds: number, requestsDone: number, requestsFailed: number, outputTokens: number, ttftMeanMs?: number | null, outputThroughput: number } | null, result?: { __typename?: 'BenchmarkResult', durationSeconds: number, successfulRequests: number, failedRequests: number, inputTokens: number, outputTokens: number, requestThroughput: number, inputThroughput: number, outputThroughput: number, totalTokenThroughput: number, ttft?: { __typename?: 'LatencySummary', meanMs: number, p50Ms: number, p90Ms: number, p99Ms: number, maxMs: number } | null, tpot?: { __typename?: 'LatencySummary', meanMs: number, p50Ms: number, p90Ms: number, p99Ms: number, maxMs: number } | null, itl?: { __typename?: 'LatencySummary', meanMs: number, p50Ms: number, p90Ms: number, p99Ms: number, maxMs: number } | null, e2el?: { __typename?: 'LatencySummary', meanMs: number, p50Ms: number, p90Ms: number, p99Ms: number, maxMs: number } | null, failures: Array<{ __typename?: 'FailureCount', reason: string, count: number }> } | null }>, differences: Array<{ __typename?: 'ConfigurationDifference', key: string, values: Array<string | null> }>, best: Array<{ __typename?: 'BestBenchmark', metric: string, benchmarkId: string, value: number }> } };

export type ClusterListQueryVariables = Exact<{ [key: string]: never; }>;


export type ClusterListQuery = { __typename?: 'Query', clusters: Array<{ __typename?: 'Cluster', id: string, name: string, platform: Platform, status: ClusterStatus, reason?: string | null, capacity: Array<{ __typename?: 'GpuCapacity', gpuType: string, total: number, usable: number, largestNode: number }> }> };

export type ClusterDetailQueryVariables = Exact<{
  id: Scalars['ID']['input'];
}>;


export type ClusterDetailQuery = { __typename?: 'Query', cluster?: { __typename?: 'Cluster', id: string, name: string, platform: Platform, status: ClusterStatus, reason?: string | null, notAvailableSince?: string | null, lastSyncAt?: string | null, ingressUrl?: string | null, capacity: Array<{ __typename?: 'GpuCapacity', gpuType: string, total: number, usable: number, largestNode: number }>, health: Array<{ __typename?: 'HealthCheck', name: string, ok: boolean, detail: string, warning: boolean, version?: string | null }>, addons: Array<{ __typename?: 'ClusterAddon', name: Addon, title: string, state: AddonState, origin?: AddonOrigin | null, version?: string | null, reason?: string | null, requestedAt?: string | null, updatedAt?: string | null, repository?: string | null, upgradeTo?: string | null, upgradingFrom?: string | null, health?: { __typename?: 'HealthCheck', name: string, ok: boolean, detail: string, warning: boolean, version?: string | null } | null, chart: { __typename?: 'AddonChart', repository: string, chart: string, version: string, appVersion: string, release: string, namespace: string, kubernetesVersions: string } }>, nodes: Array<{ __typename?: 'Node', id: string, name: string, nodeType: NodeType, gpuType?: string | null, gpuCount: number, cpuCores: number, memoryGb: number, ready: boolean, schedulable: boolean, excluded: boolean, detectionMethod: string, taints: Array<{ __typename?: 'Taint', key: string, value?: string | null, effect: string }> }>, estimateAccuracy: { __typename?: 'EstimateAccuracy', startP50Seconds?: number | null, startP95Seconds?: number | null, startWithin10Minutes?: number | null, endP50Seconds?: number | null } } | null };

export type DrainFieldsFragment = { __typename?: 'Drain', id: string, clusterId: string, node?: string | null, reason: string, state: DrainState, startedAt: string, estimatedEnd?: string | null, drainedAt?: string | null, endedAt?: string | null, remaining: number, replacing: number, blockedPods: Array<string> };

export type ClusterDrainsQueryVariables = Exact<{
  clusterId: Scalars['ID']['input'];
}>;


export type ClusterDrainsQuery = { __typename?: 'Query', drains: Array<{ __typename?: 'Drain', id: string, clusterId: string, node?: string | null, reason: string, state: DrainState, startedAt: string, estimatedEnd?: string | null, drainedAt?: string | null, endedAt?: string | null, remaining: number, replacing: number, blockedPods: Array<string> }> };

export type DrainNodeMutationVariables = Exact<{
  clusterId: Scalars['ID']['input'];
  node: Scalars['String']['input'];
  reason?: InputMaybe<Scalars['String']['input']>;
}>;


export type DrainNodeMutation = { __typename?: 'Mutation', drainNode: { __typename: 'ConflictError', code: string, message: string } | { __typename: 'Drain', id: string, clusterId: string, node?: string | null, reason: string, state: DrainState, startedAt: string, estimatedEnd?: string | null, drainedAt?: string | null, endedAt?: string | null, remaining: number, replacing: number, blockedPods: Array<string> } | { __typename: 'ForbiddenError', code: string, message: string } | { __typename: 'NotFoundError', code: string, message: string } | { __typename: 'ValidationError', message: string, code: string, fields: Array<{ __typename?: 'FieldError', path: string, code: string, message: string }> } };

export type DrainClusterMutationVariables = Exact<{
  clusterId: Scalars['ID']['input'];
  reason?: InputMaybe<Scalars['String']['input']>;
}>;


export type DrainClusterMutation = { __typename?: 'Mutation', drainCluster: { __typename: 'ConflictError', code: string, message: string } | { __typename: 'Drain', id: string, clusterId: string, node?: string | null, reason: string, state: DrainState, startedAt: string, estimatedEnd?: string | null, drainedAt?: string | null, endedAt?: string | null, remaining: number, replacing: number, blockedPods: Array<string> } | { __typename: 'ForbiddenError', code: string, message: string } | { __typename: 'NotFoundError', code: string, message: string } | { __typename: 'ValidationError', code: string, message: string } };

export type UndrainMutationVariables = Exact<{
  id: Scalars['ID']['input'];
}>;


export type UndrainMutation = { __typename?: 'Mutation', undrain: { __typename: 'ConflictError', code: string, message: string } | { __typename: 'Drain', id: string, clusterId: string, node?: string | null, reason: string, state: DrainState, startedAt: string, estimatedEnd?: string | null, drainedAt?: string | null, endedAt?: string | null, remaining: number, replacing: number, blockedPods: Array<string> } | { __typename: 'ForbiddenError', code: string, message: string } | { __typename: 'NotFoundError', code: string, message: string } | { __typename: 'ValidationError', code: string, message: string } };

export type AddonFieldsFragment = { __typename?: 'ClusterAddon', name: Addon, title: string, state: AddonState, origin?: AddonOrigin | null, version?: string | null, reason?: string | null, requestedAt?: string | null, updatedAt?: string | null, repository?: string | null, upgradeTo?: string | null, upgradingFrom?: string | null, health?: { __typename?: 'HealthCheck', name: string, ok: boolean, detail: string, warning: boolean, version?: string | null } | null, chart: { __typename?: 'AddonChart', repository: string, chart: string, version: string, appVersion: string, release: string, namespace: string, kubernetesVersions: string } };

export type InstallAddonsMutationVariables = Exact<{
  clusterId: Scalars['ID']['input'];
  addons: Array<Addon> | Addon;
  mirror?: InputMaybe<Scalars['String']['input']>;
}>;


export type InstallAddonsMutation = { __typename?: 'Mutation', installAddons: { __typename: 'Cluster', id: string, addons: Array<{ __typename?: 'ClusterAddon', name: Addon, title: string, state: AddonState, origin?: AddonOrigin | null, version?: string | null, reason?: string | null, requestedAt?: string | null, updatedAt?: string | null, repository?: string | null, upgradeTo?: string | null, upgradingFrom?: string | null, health?: { __typename?: 'HealthCheck', name: string, ok: boolean, detail: string, warning: boolean, version?: string | null } | null, chart: { __typename?: 'AddonChart', repository: string, chart: string, version: string, appVersion: string, release: string, namespace: string, kubernetesVersions: string } }> } | { __typename: 'ConflictError', code: string, message: string } | { __typename: 'ForbiddenError', code: string, message: string } | { __typename: 'NotFoundError', code: string, message: string } | { __typename: 'ValidationError', message: string, code: string, fields: Array<{ __typename?: 'FieldError', path: string, code: string, message: string }> } };

export type RemoveAddonsMutationVariables = Exact<{
  clusterId: Scalars['ID']['input'];
  addons: Array<Addon> | Addon;
}>;


export type RemoveAddonsMutation = { __typename?: 'Mutation', removeAddons: { __typename: 'Cluster', id: string, addons: Array<{ __typename?: 'ClusterAddon', name: Addon, title: string, state: AddonState, origin?: AddonOrigin | null, version?: string | null, reason?: string | null, requestedAt?: string | null, updatedAt?: string | null, repository?: string | null, upgradeTo?: string | null, upgradingFrom?: string | null, health?: { __typename?: 'HealthCheck', name: string, ok: boolean, detail: string, warning: boolean, version?: string | null } | null, chart: { __typename?: 'AddonChart', repository: string, chart: string, version: string, appVersion: string, release: string, namespace: string, kubernetesVersions: string } }> } | { __typename: 'ConflictError', code: string, message: string } | { __typename: 'ForbiddenError', code: string, message: string } | { __typename: 'NotFoundError', code: string, message: string } | { __typename: 'ValidationError', message: string, code: string, fields: Array<{ __typename?: 'FieldError', path: string, code: string, message: string }> } };

export type ClusterPricesQueryVariables = Exact<{
  id: Scalars['ID']['input'];
}>;


export type ClusterPricesQuery = { __typename?: 'Query', cluster?: { __typename?: 'Cluster', id: string, name: string, gpuPrices: Array<{ __typename?: 'GpuPrice', gpuType: string, hourlyPrice: string, since?: string | null }> } | null };

export type SetGpuPriceMutationVariables = Exact<{
  input: SetGpuPriceInput;
}>;


export type SetGpuPriceMutation = { __typename?: 'Mutation', setGpuPrice: { __typename: 'ForbiddenError', code: string, message: string } | { __typename: 'GpuPrice', gpuType: string, hourlyPrice: string, since?: string | null } | { __typename: 'NotFoundError', code: string, message: string } | { __typename: 'ValidationError', code: string, message: string, fields: Array<{ __typename?: 'FieldError', path: string, message: string, code: string }> } };

export type SpendQueryVariables = Exact<{
  from: Scalars['Date']['input'];
  to: Scalars['Date']['input'];
  groupBy?: InputMaybe<Array<SpendGroup> | SpendGroup>;
  first?: InputMaybe<Scalars['Int']['input']>;
  after?: InputMaybe<Scalars['String']['input']>;
}>;


export type SpendQuery = { __typename?: 'Query', spend: { __typename?: 'SpendConnection', edges: Array<{ __typename?: 'SpendEdge', cursor: string, node: { __typename?: 'SpendRow', tenantId?: string | null, projectId?: string | null, clusterId?: string | null, gpuType?: string | null, jobType?: JobType | null, day?: string | null, gpuHours: number, cost: string } }>, pageInfo: { __typename?: 'PageInfo', hasNextPage: boolean, endCursor?: string | null }, total: { __typename?: 'SpendRow', gpuHours: number, cost: string } } };

export type JobCostQueryVariables = Exact<{
  id: Scalars['ID']['input'];
}>;


export type JobCostQuery = { __typename?: 'Query', job?: { __typename?: 'Job', id: string, status: JobStatus, estimatedCost?: string | null, actualCost?: string | null, costSoFar?: string | null, budgetLimit?: string | null, budgetAction: BudgetAction, budgetAlerted: number, heldBy?: BudgetScope | null, holdReason?: string | null } | null };

export type UpdateJobBudgetMutationVariables = Exact<{
  id: Scalars['ID']['input'];
  budgetLimit?: InputMaybe<Scalars['Decimal']['input']>;
  budgetAction?: BudgetAction;
}>;


export type UpdateJobBudgetMutation = { __typename?: 'Mutation', updateJobBudget: { __typename: 'ConflictError', code: string, message: string } | { __typename: 'ForbiddenError', code: string, message: string } | { __typename: 'Job', id: string, budgetLimit?: string | null, budgetAction: BudgetAction, budgetAlerted: number, costSoFar?: string | null } | { __typename: 'NotFoundError', code: string, message: string } | { __typename: 'ValidationError', code: string, message: string, fields: Array<{ __typename?: 'FieldError', path: string, message: string, code: string }> } };

export type ClusterCostForecastQueryVariables = Exact<{
  id: Scalars['ID']['input'];
  hours?: Scalars['Int']['input'];
}>;


export type ClusterCostForecastQuery = { __typename?: 'Query', cluster?: { __typename?: 'Cluster', id: string, costForecast: { __typename?: 'CostForecast', start: string, end: string, hours: Array<{ __typename?: 'CostHour', start: string, cost: string, low: string, high: string }>, projects: Array<{ __typename?: 'ProjectCost', projectId: string, cost: string, low: string, high: string }> } } | null };

export type BudgetsQueryVariables = Exact<{
  tenantId?: InputMaybe<Scalars['ID']['input']>;
}>;


export type BudgetsQuery = { __typename?: 'Query', budgets: Array<{ __typename?: 'Budget', tenantId: string, projectId?: string | null, scope: BudgetScope, limit: string, action: BudgetAction, period: BudgetPeriod, periodStart: string, periodEnd: string, spent: string, left: string, share: number, exhausted: boolean, alerted: number, projectedExhaustion: { __typename?: 'BudgetExhaustion', expected?: string | null, earliest?: string | null, latest?: string | null } }> };

export type SetBudgetMutationVariables = Exact<{
  input: SetBudgetInput;
}>;


export type SetBudgetMutation = { __typename?: 'Mutation', setBudget: { __typename: 'Budget', tenantId: string, projectId?: string | null, scope: BudgetScope, limit: string, action: BudgetAction, spent: string, left: string, share: number, exhausted: boolean } | { __typename: 'ForbiddenError', code: string, message: string } | { __typename: 'NotFoundError', code: string, message: string } | { __typename: 'ValidationError', code: string, message: string, fields: Array<{ __typename?: 'FieldError', path: string, message: string, code: string }> } };

export type RemoveBudgetMutationVariables = Exact<{
  tenantId?: InputMaybe<Scalars['ID']['input']>;
  projectId?: InputMaybe<Scalars['ID']['input']>;
}>;


export type RemoveBudgetMutation = { __typename?: 'Mutation', removeBudget: { __typename: 'Budget', tenantId: string, projectId?: string | null, scope: BudgetScope, limit: string } | { __typename: 'ForbiddenError', code: string, message: string } | { __typename: 'NotFoundError', code: string, message: string } | { __typename: 'ValidationError', code: string, message: string } };

export type DeploymentViewFragment = { __typename?: 'Deployment', id: string, name: string, clusterId: string, model: string, servedModelName: string, engine: ServingEngine, gpuType?: string | null, gpusPerReplica: number, replicas: number, concurrency: number, status: DeploymentStatus, statusMessage?: string | null, endpointUrl?: string | null, endpoints: Array<ModelApi>, autoscaling?: { __typename?: 'Autoscaling', minReplicas: number, maxReplicas: number, metric: ScaleMetric, target: number, scaleToZeroAfterSeconds: number, scaleDownDelaySeconds: number } | null, warnings: Array<{ __typename?: 'DeploymentWarning', code: string, message: string, path: string }>, workers: Array<{ __typename?: 'Worker', name: string, replica: number, status: WorkerStatus, reason?: string | null, node?: string | null, devices: Array<number>, restarts: number, lastRestartAt?: string | null, uptimeSeconds?: number | null, utilisation?: number | null }> };

export type DeploymentListQueryVariables = Exact<{
  filter?: InputMaybe<DeploymentFilter>;
  first?: Scalars['Int']['input'];
  after?: InputMaybe<Scalars['String']['input']>;
}>;


export type DeploymentListQuery = { __typename?: 'Query', deployments: { __typename?: 'DeploymentConnection', edges: Array<{ __typename?: 'DeploymentEdge', cursor: string, node: { __typename?: 'Deployment', id: string, name: string, clusterId: string, model: string, servedModelName: string, engine: ServingEngine, gpuType?: string | null, gpusPerReplica: number, replicas: number, concurrency: number, status: DeploymentStatus, statusMessage?: string | null, endpointUrl?: string | null, endpoints: Array<ModelApi>, autoscaling?: { __typename?: 'Autoscaling', minReplicas: number, maxReplicas: number, metric: ScaleMetric, target: number, scaleToZeroAfterSeconds: number, scaleDownDelaySeconds: number } | null, warnings: Array<{ __typename?: 'DeploymentWarning', code: string, message: string, path: string }>, workers: Array<{ __typename?: 'Worker', name: string, replica: number, status: WorkerStatus, reason?: string | null, node?: string | null, devices: Array<number>, restarts: number, lastRestartAt?: string | null, uptimeSeconds?: number | null, utilisation?: number | null }> } }>, pageInfo: { __typename?: 'PageInfo', hasNextPage: boolean, endCursor?: string | null } } };

export type DeploymentDetailQueryVariables = Exact<{
  id: Scalars['ID']['input'];
}>;


export type DeploymentDetailQuery = { __typename?: 'Query', deployment?: { __typename?: 'Deployment', id: string, name: string, clusterId: string, model: string, servedModelName: string, engine: ServingEngine, gpuType?: string | null, gpusPerReplica: number, replicas: number, concurrency: number, status: DeploymentStatus, statusMessage?: string | null, endpointUrl?: string | null, endpoints: Array<ModelApi>, engineArgs: { __typename?: 'EngineArgs', tensorParallelSize: number, pipelineParallelSize: number, maxModelLen: number, maxNumSeqs: number, dtype: string, quantization?: string | null }, replicaJobs: Array<{ __typename?: 'Job', id: string, name: string, status: JobStatus, estimatedStart?: string | null }>, scalingSteps: Array<{ __typename?: 'ScalingStep', at: string, fromReplicas: number, toReplicas: number, reason: string, metricValue?: number | null }>, autoscaling?: { __typename?: 'Autoscaling', minReplicas: number, maxReplicas: number, metric: ScaleMetric, target: number, scaleToZeroAfterSeconds: number, scaleDownDelaySeconds: number } | null, warnings: Array<{ __typename?: 'DeploymentWarning', code: string, message: string, path: string }>, workers: Array<{ __typename?: 'Worker', name: string, replica: number, status: WorkerStatus, reason?: string | null, node?: string | null, devices: Array<number>, restarts: number, lastRestartAt?: string | null, uptimeSeconds?: number | null, utilisation?: number | null }> } | null };

export type DeployModelMutationVariables = Exact<{
  input: DeployModelInput;
}>;


export type DeployModelMutation = { __typename?: 'Mutation', deployModel: { __typename: 'ConflictError', code: string, message: string } | { __typename: 'Deployment', id: string, name: string, clusterId: string, model: string, servedModelName: string, engine: ServingEngine, gpuType?: string | null, gpusPerReplica: number, replicas: number, concurrency: number, status: DeploymentStatus, statusMessage?: string | null, endpointUrl?: string | null, endpoints: Array<ModelApi>, autoscaling?: { __typename?: 'Autoscaling', minReplicas: number, maxReplicas: number, metric: ScaleMetric, target: number, scaleToZeroAfterSeconds: number, scaleDownDelaySeconds: number } | null, warnings: Array<{ __typename?: 'DeploymentWarning', code: string, message: string, path: string }>, workers: Array<{ __typename?: 'Worker', name: string, replica: number, status: WorkerStatus, reason?: string | null, node?: string | null, devices: Array<number>, restarts: number, lastRestartAt?: string | null, uptimeSeconds?: number | null, utilisation?: number | null }> } | { __typename: 'ForbiddenError', code: string, message: string } | { __typename: 'NotFoundError', code: string, message: string } | { __typename: 'ValidationError', code: string, message: string, fields: Array<{ __typename?: 'FieldError', path: string, message: string, code: string }> } };

export type ScaleDeploymentMutationVariables = Exact<{
  id: Scalars['ID']['input'];
  replicas: Scalars['Int']['input'];
}>;


export type ScaleDeploymentMutation = { __typename?: 'Mutation', scaleDeployment: { __typename: 'ConflictError', code: string, message: string } | { __typename: 'Deployment', id: string, name: string, clusterId: string, model: string, servedModelName: string, engine: ServingEngine, gpuType?: string | null, gpusPerReplica: number, replicas: number, concurrency: number, status: DeploymentStatus, statusMessage?: string | null, endpointUrl?: string | null, endpoints: Array<ModelApi>, autoscaling?: { __typename?: 'Autoscaling', minReplicas: number, maxReplicas: number, metric: ScaleMetric, target: number, scaleToZeroAfterSeconds: number, scaleDownDelaySeconds: number } | null, warnings: Array<{ __typename?: 'DeploymentWarning', code: string, message: string, path: string }>, workers: Array<{ __typename?: 'Worker', name: string, replica: number, status: WorkerStatus, reason?: string | null, node?: string | null, devices: Array<number>, restarts: number, lastRestartAt?: string | null, uptimeSeconds?: number | null, utilisation?: number | null }> } | { __typename: 'ForbiddenError', code: string, message: string } | { __typename: 'NotFoundError', code: string, message: string } | { __typename: 'ValidationError', code: string, message: string } };

export type SetAutoscalingMutationVariables = Exact<{
  id: Scalars['ID']['input'];
  autoscaling?: InputMaybe<AutoscalingInput>;
}>;


export type SetAutoscalingMutation = { __typename?: 'Mutation', setAutoscaling: { __typename: 'ConflictError', code: string, message: string } | { __typename: 'Deployment', id: string, name: string, clusterId: string, model: string, servedModelName: string, engine: ServingEngine, gpuType?: string | null, gpusPerReplica: number, replicas: number, concurrency: number, status: DeploymentStatus, statusMessage?: string | null, endpointUrl?: string | null, endpoints: Array<ModelApi>, autoscaling?: { __typename?: 'Autoscaling', minReplicas: number, maxReplicas: number, metric: ScaleMetric, target: number, scaleToZeroAfterSeconds: number, scaleDownDelaySeconds: number } | null, warnings: Array<{ __typename?: 'DeploymentWarning', code: string, message: string, path: string }>, workers: Array<{ __typename?: 'Worker', name: string, replica: number, status: WorkerStatus, reason?: string | null, node?: string | null, devices: Array<number>, restarts: number, lastRestartAt?: string | null, uptimeSeconds?: number | null, utilisation?: number | null }> } | { __typename: 'ForbiddenError', code: string, message: string } | { __typename: 'NotFoundError', code: string, message: string } | { __typename: 'ValidationError', code: string, message: string, fields: Array<{ __typename?: 'FieldError', path: string, message: string, code: string }> } };

export type StopDeploymentMutationVariables = Exact<{
  id: Scalars['ID']['input'];
}>;


export type StopDeploymentMutation = { __typename?: 'Mutation', stopDeployment: { __typename: 'ConflictError', code: string, message: string } | { __typename: 'Deployment', id: string, name: string, clusterId: string, model: string, servedModelName: string, engine: ServingEngine, gpuType?: string | null, gpusPerReplica: number, replicas: number, concurrency: number, status: DeploymentStatus, statusMessage?: string | null, endpointUrl?: string | null, endpoints: Array<ModelApi>, autoscaling?: { __typename?: 'Autoscaling', minReplicas: number, maxReplicas: number, metric: ScaleMetric, target: number, scaleToZeroAfterSeconds: number, scaleDownDelaySeconds: number } | null, warnings: Array<{ __typename?: 'DeploymentWarning', code: string, message: string, path: string }>, workers: Array<{ __typename?: 'Worker', name: string, replica: number, status: WorkerStatus, reason?: string | null, node?: string | null, devices: Array<number>, restarts: number, lastRestartAt?: string | null, uptimeSeconds?: number | null, utilisation?: number | null }> } | { __typename: 'ForbiddenError', code: string, message: string } | { __typename: 'NotFoundError', code: string, message: string } | { __typename: 'ValidationError', code: string, message: string } };

export type DeploymentUpdatesSubscriptionVariables = Exact<{
  clusterId: Scalars['ID']['input'];
  since?: InputMaybe<Scalars['Int']['input']>;
}>;


export type DeploymentUpdatesSubscription = { __typename?: 'Subscription', deploymentUpdates: { __typename: 'DeploymentChange', sequence: number, deployment: { __typename?: 'Deployment', id: string, name: string, clusterId: string, model: string, servedModelName: string, engine: ServingEngine, gpuType?: string | null, gpusPerReplica: number, replicas: number, concurrency: number, status: DeploymentStatus, statusMessage?: string | null, endpointUrl?: string | null, endpoints: Array<ModelApi>, autoscaling?: { __typename?: 'Autoscaling', minReplicas: number, maxReplicas: number, metric: ScaleMetric, target: number, scaleToZeroAfterSeconds: number, scaleDownDelaySeconds: number } | null, warnings: Array<{ __typename?: 'DeploymentWarning', code: string, message: string, path: string }>, workers: Array<{ __typename?: 'Worker', name: string, replica: number, status: WorkerStatus, reason?: string | null, node?: string | null, devices: Array<number>, restarts: number, lastRestartAt?: string | null, uptimeSeconds?: number | null, utilisation?: number | null }> }, scalingStep?: { __typename?: 'ScalingStep', at: string, fromReplicas: number, toReplicas: number, reason: string } | null } | { __typename: 'DeploymentSnapshot', sequence: number, reason: string, deployments: Array<{ __typename?: 'Deployment', id: string, name: string, clusterId: string, model: string, servedModelName: string, engine: ServingEngine, gpuType?: string | null, gpusPerReplica: number, replicas: number, concurrency: number, status: DeploymentStatus, statusMessage?: string | null, endpointUrl?: string | null, endpoints: Array<ModelApi>, autoscaling?: { __typename?: 'Autoscaling', minReplicas: number, maxReplicas: number, metric: ScaleMetric, target: number, scaleToZeroAfterSeconds: number, scaleDownDelaySeconds: number } | null, warnings: Array<{ __typename?: 'DeploymentWarning', code: string, message: string, path: string }>, workers: Array<{ __typename?: 'Worker', name: string, replica: number, status: WorkerStatus, reason?: string | null, node?: string | null, devices: Array<number>, restarts: number, lastRestartAt?: string | null, uptimeSeconds?: number | null, utilisation?: number | null }> }> } };

export type FleetFieldsFragment = { __typename?: 'Fleet', id: string, name: string, clusterQueue: string, localQueue: string, moveThresholdSeconds: number, maxMoves: number, createdAt: string, updatedAt: string, members: Array<{ __typename?: 'Cluster', id: string, name: string, status: ClusterStatus }>, managerCluster?: { __typename?: 'Cluster', id: string, name: string } | null };

export type FleetListQueryVariables = Exact<{ [key: string]: never; }>;


export type FleetListQuery = { __typename?: 'Query', fleets: Array<{ __typename?: 'Fleet', id: string, name: string, clusterQueue: string, localQueue: string, moveThresholdSeconds: number, maxMoves: number, createdAt: string, updatedAt: string, members: Array<{ __typename?: 'Cluster', id: string, name: string, status: ClusterStatus }>, managerCluster?: { __typename?: 'Cluster', id: string, name: string } | null }> };

export type FleetViewQueryVariables = Exact<{
  id: Scalars['ID']['input'];
  first?: Scalars['Int']['input'];
}>;


export type FleetViewQuery = { __typename?: 'Query', fleet?: { __typename?: 'Fleet', plannedAt?: string | null, id: string, name: string, clusterQueue: string, localQueue: string, moveThresholdSeconds: number, maxMoves: number, createdAt: string, updatedAt: string, queue: Array<{ __typename?: 'FleetQueueEntry', position: number, jobId?: string | null, name: string, mine: boolean, status?: JobStatus | null, clusterId: string, estimatedStart?: string | null, nextBestClusterId?: string | null, nextBestStart?: string | null, moves: number }>, members: Array<{ __typename?: 'Cluster', id: string, name: string, status: ClusterStatus }>, managerCluster?: { __typename?: 'Cluster', id: string, name: string } | null } | null };

export type CreateFleetMutationVariables = Exact<{
  input: FleetInput;
}>;


export type CreateFleetMutation = { __typename?: 'Mutation', createFleet: { __typename: 'ConflictError', code: string, message: string } | { __typename: 'Fleet', id: string, name: string, clusterQueue: string, localQueue: string, moveThresholdSeconds: number, maxMoves: number, createdAt: string, updatedAt: string, members: Array<{ __typename?: 'Cluster', id: string, name: string, status: ClusterStatus }>, managerCluster?: { __typename?: 'Cluster', id: string, name: string } | null } | { __typename: 'ForbiddenError', code: string, message: string } | { __typename: 'NotFoundError', code: string, message: string } | { __typename: 'ValidationError', code: string, message: string, fields: Array<{ __typename?: 'FieldError', path: string, message: string, code: string }> } };

export type UpdateFleetMutationVariables = Exact<{
  id: Scalars['ID']['input'];
  input: FleetInput;
}>;


export type UpdateFleetMutation = { __typename?: 'Mutation', updateFleet: { __typename: 'ConflictError', code: string, message: string } | { __typename: 'Fleet', id: string, name: string, clusterQueue: string, localQueue: string, moveThresholdSeconds: number, maxMoves: number, createdAt: string, updatedAt: string, members: Array<{ __typename?: 'Cluster', id: string, name: string, status: ClusterStatus }>, managerCluster?: { __typename?: 'Cluster', id: string, name: string } | null } | { __typename: 'ForbiddenError', code: string, message: string } | { __typename: 'NotFoundError', code: string, message: string } | { __typename: 'ValidationError', code: string, message: string, fields: Array<{ __typename?: 'FieldError', path: string, message: string, code: string }> } };

export type DeleteFleetMutationVariables = Exact<{
  id: Scalars['ID']['input'];
}>;


export type DeleteFleetMutation = { __typename?: 'Mutation', deleteFleet: { __typename: 'ConflictError', code: string, message: string } | { __typename: 'Fleet', id: string, name: string } | { __typename: 'ForbiddenError', code: string, message: string } | { __typename: 'NotFoundError', code: string, message: string } | { __typename: 'ValidationError', code: string, message: string } };

export type PreviewOnFleetQueryVariables = Exact<{
  input: SubmitJobInput;
}>;


export type PreviewOnFleetQuery = { __typename?: 'Query', previewJob: { __typename: 'ForbiddenError', code: string, message: string } | { __typename: 'JobPreview', clusterId: string, estimatedStart?: string | null, estimatedEnd?: string | null, estimatedCost?: string | null, reason: string, members: Array<{ __typename?: 'FleetMemberPreview', clusterId: string, clusterName: string, rank?: number | null, estimatedStart?: string | null, estimatedEnd?: string | null, estimatedCost?: string | null, load?: number | null, evicts: number, reason: string, warnings: Array<string>, startWindow?: { __typename?: 'StartWindow', earliest: string, latest?: string | null, confidence: number } | null, problems: Array<{ __typename?: 'FieldError', path: string, message: string, code: string }> }> } | { __typename: 'NotFoundError', code: string, message: string } | { __typename: 'ValidationError', code: string, message: string, fields: Array<{ __typename?: 'FieldError', path: string, message: string, code: string }> } };

export type SubmitToFleetMutationVariables = Exact<{
  input: SubmitJobInput;
}>;


export type SubmitToFleetMutation = { __typename?: 'Mutation', submitJob: { __typename: 'ConflictError', code: string, message: string } | { __typename: 'ForbiddenError', code: string, message: string } | { __typename: 'Job', id: string, status: JobStatus, statusMessage?: string | null, clusterId: string, fleetId?: string | null } | { __typename: 'NotFoundError', code: string, message: string } | { __typename: 'ValidationError', code: string, message: string, fields: Array<{ __typename?: 'FieldError', path: string, message: string, code: string }> } };

export type FleetJobMovesQueryVariables = Exact<{
  id: Scalars['ID']['input'];
}>;


export type FleetJobMovesQuery = { __typename?: 'Query', job?: { __typename?: 'Job', id: string, clusterId: string, fleetId?: string | null, moves: Array<{ __typename?: 'JobMove', attempt: number, fromClusterId: string, toClusterId: string, at: string, reason: string }> } | null };

export type JobUpdatesSubscriptionVariables = Exact<{
  clusterId: Scalars['ID']['input'];
  filter?: InputMaybe<JobFilter>;
  since?: InputMaybe<Scalars['Int']['input']>;
}>;


export type JobUpdatesSubscription = { __typename?: 'Subscription', jobUpdates: { __typename: 'JobChange', sequence: number, kind: JobChangeKind, matchesFilter: boolean, job: { __typename?: 'Job', id: string, name: string, status: JobStatus, priority: JobPriority, attempt: number, estimatedStart?: string | null, estimatedEnd?: string | null }, transition?: { __typename?: 'JobEvent', attempt: number, fromStatus?: JobStatus | null, toStatus: JobStatus, reason: string, at: string } | null, budget?: { __typename?: 'BudgetNotice', share: number, cost: string, limit: string, action: BudgetAction, expected: boolean, message: string } | null, move?: { __typename?: 'JobMove', fromClusterId: string, toClusterId: string, at: string, reason: string } | null } | { __typename: 'JobSnapshot', sequence: number, reason: string, truncated: boolean, jobs: Array<{ __typename?: 'Job', id: string, name: string, status: JobStatus, priority: JobPriority }> } };

export type JobListQueryVariables = Exact<{
  filter?: InputMaybe<JobFilter>;
  first?: Scalars['Int']['input'];
  after?: InputMaybe<Scalars['String']['input']>;
}>;


export type JobListQuery = { __typename?: 'Query', jobs: { __typename?: 'JobConnection', edges: Array<{ __typename?: 'JobEdge', cursor: string, node: { __typename?: 'Job', id: string, name: string, clusterId: string, jobType: JobType, priority: JobPriority, status: JobStatus, statusMessage?: string | null, createdAt: string, estimatedStart?: string | null, estimatedEnd?: string | null, resources: { __typename?: 'Resources', gpuType?: string | null, gpuCount: number, podCount: number, totalGpus: number } } }>, pageInfo: { __typename?: 'PageInfo', hasNextPage: boolean, endCursor?: string | null } } };

export type JobDetailQueryVariables = Exact<{
  id: Scalars['ID']['input'];
}>;


export type JobDetailQuery = { __typename?: 'Query', job?: { __typename?: 'Job', id: string, name: string, projectId: string, clusterId: string, jobType: JobType, deploymentType: DeploymentType, priority: JobPriority, preemptible: boolean, status: JobStatus, statusMessage?: string | null, attempt: number, retryCount: number, maxRetries: number, queueName: string, createdAt: string, actualStart?: string | null, actualEnd?: string | null, estimatedCost?: string | null, actualCost?: string | null, costSoFar?: string | null, budgetLimit?: string | null, budgetAction: BudgetAction, budgetAlerted: number, secrets: Array<{ __typename?: 'SecretRef', name: string, mountPath?: string | null }>, resources: { __typename?: 'Resources', gpuType?: string | null, gpuCount: number, cpuCores: number, memoryGb: number, podCount: number, totalGpus: number }, placements: Array<{ __typename?: 'Placement', node: string, gpuIndices: Array<number>, flavor?: string | null }>, estimate?: { __typename?: 'Estimate', start?: string | null, end?: string | null, reason: string, warnings: Array<string>, startWindow?: { __typename?: 'StartWindow', earliest: string, latest?: string | null, confidence: number } | null } | null, submissionEstimate?: { __typename?: 'Estimate', start?: string | null, end?: string | null, reason: string } | null, kueuePosition?: { __typename?: 'KueueQueuePosition', localQueue: string, positionInLocalQueue: number, positionInClusterQueue: number, pendingInLocalQueue: number } | null, events: Array<{ __typename?: 'JobEvent', attempt: number, fromStatus?: JobStatus | null, toStatus: JobStatus, reason: string, at: string }> } | null };

export type SubmitJobMutationVariables = Exact<{
  input: SubmitJobInput;
}>;


export type SubmitJobMutation = { __typename?: 'Mutation', submitJob: { __typename: 'ConflictError', code: string, message: string } | { __typename: 'ForbiddenError', code: string, message: string } | { __typename: 'Job', id: string, status: JobStatus } | { __typename: 'NotFoundError', code: string, message: string } | { __typename: 'ValidationError', code: string, message: string, fields: Array<{ __typename?: 'FieldError', path: string, message: string, code: string }> } };

export type CancelJobMutationVariables = Exact<{
  id: Scalars['ID']['input'];
  reason?: InputMaybe<Scalars['String']['input']>;
}>;


export type CancelJobMutation = { __typename?: 'Mutation', cancelJob: { __typename: 'ConflictError', code: string, message: string } | { __typename: 'ForbiddenError', code: string, message: string } | { __typename: 'Job', id: string, status: JobStatus } | { __typename: 'NotFoundError', code: string, message: string } | { __typename: 'ValidationError', code: string, message: string } };

export type JobLogsQueryVariables = Exact<{
  id: Scalars['ID']['input'];
  attempt?: InputMaybe<Scalars['Int']['input']>;
  pod?: InputMaybe<Scalars['String']['input']>;
  since?: InputMaybe<Scalars['DateTime']['input']>;
  tail?: InputMaybe<Scalars['Int']['input']>;
}>;


export type JobLogsQuery = { __typename?: 'Query', jobLogs: { __typename: 'ForbiddenError', code: string, message: string } | { __typename: 'JobLogs', jobId: string, attempt: number, pods: Array<string>, kept: boolean, note?: string | null, lines: Array<{ __typename?: 'LogLine', at: string, pod: string, text: string }> } | { __typename: 'NotFoundError', code: string, message: string } | { __typename: 'ValidationError', message: string, code: string, fields: Array<{ __typename?: 'FieldError', path: string, code: string, message: string }> } };

export type FollowJobLogsSubscriptionVariables = Exact<{
  id: Scalars['ID']['input'];
  attempt?: InputMaybe<Scalars['Int']['input']>;
  pod?: InputMaybe<Scalars['String']['input']>;
  tail?: InputMaybe<Scalars['Int']['input']>;
}>;


export type FollowJobLogsSubscription = { __typename?: 'Subscription', jobLogs: { __typename?: 'JobLogs', jobId: string, attempt: number, kept: boolean, note?: string | null, lines: Array<{ __typename?: 'LogLine', at: string, pod: string, text: string }> } };

export type SecretsQueryVariables = Exact<{
  tenantId?: InputMaybe<Scalars['ID']['input']>;
}>;


export type SecretsQuery = { __typename?: 'Query', secrets: Array<{ __typename?: 'Secret', id: string, tenantId: string, name: string, keys: Array<string>, version: number, createdAt: string, updatedAt: string, lastUsedAt?: string | null }> };

export type SetSecretMutationVariables = Exact<{
  input: SetSecretInput;
}>;


export type SetSecretMutation = { __typename?: 'Mutation', setSecret: { __typename: 'ConflictError', code: string, message: string } | { __typename: 'ForbiddenError', code: string, message: string } | { __typename: 'NotFoundError', code: string, message: string } | { __typename: 'Secret', id: string, name: string, keys: Array<string>, version: number, updatedAt: string } | { __typename: 'ValidationError', message: string, code: string, fields: Array<{ __typename?: 'FieldError', path: string, code: string, message: string }> } };

export type RemoveSecretMutationVariables = Exact<{
  name: Scalars['String']['input'];
  tenantId?: InputMaybe<Scalars['ID']['input']>;
  force?: InputMaybe<Scalars['Boolean']['input']>;
}>;


export type RemoveSecretMutation = { __typename?: 'Mutation', removeSecret: { __typename: 'ConflictError', code: string, message: string } | { __typename: 'ForbiddenError', code: string, message: string } | { __typename: 'NotFoundError', code: string, message: string } | { __typename: 'Secret', id: string, name: string } | { __typename: 'ValidationError', code: string, message: string } };

export type GroupQuotasFragment = { __typename?: 'ResourceGroup', coveredResources: Array<string>, flavors: Array<{ __typename?: 'FlavorQuotas', flavor: string, resources: Array<{ __typename?: 'ResourceQuota', name: string, nominalQuota: number, borrowingLimit?: number | null, lendingLimit?: number | null }> }> };

export type ClusterQuotasQueryVariables = Exact<{
  id: Scalars['ID']['input'];
}>;


export type ClusterQuotasQuery = { __typename?: 'Query', cluster?: { __typename?: 'Cluster', id: string, quotaSettings: { __typename?: 'QuotaSettings', fairSharing: boolean }, resourceFlavors: Array<{ __typename?: 'ResourceFlavor', name: string, nodeLabels: Array<{ __typename?: 'NodeLabel', key: string, value: string }> }>, clusterQueues: Array<{ __typename?: 'ClusterQueue', name: string, cohort?: string | null, queueingStrategy: QueueingStrategy, fairSharingWeight: number, preemption: { __typename?: 'PreemptionPolicy', withinClusterQueue: WithinClusterQueue, reclaimWithinCohort: ReclaimWithinCohort, borrowWithinCohort: { __typename?: 'BorrowWithinCohort', policy: BorrowWithinCohortPolicy, maxPriorityThreshold?: number | null } }, flavorFungibility: { __typename?: 'FlavorFungibility', whenCanBorrow: FungibilityPolicy, whenCanPreempt: FungibilityPolicy, preference?: FungibilityPreference | null }, usage: Array<{ __typename?: 'FlavorUsage', flavor: string, resource: string, nominalQuota: number, borrowingLimit?: number | null, lendingLimit?: number | null, used: number, borrowed: number, reserved: number, pendingWorkloads: number, admittedWorkloads: number }> }>, cohorts: Array<{ __typename?: 'Cohort', name: string, description?: string | null, parent?: string | null, fairSharingWeight: number, resourceGroups: Array<{ __typename?: 'ResourceGroup', coveredResources: Array<string>, flavors: Array<{ __typename?: 'FlavorQuotas', flavor: string, resources: Array<{ __typename?: 'ResourceQuota', name: string, nominalQuota: number, borrowingLimit?: number | null, lendingLimit?: number | null }> }> }> }>, localQueues: Array<{ __typename?: 'LocalQueue', name: string, namespace: string, clusterQueue: string }> } | null };

export type SegmentFragment = { __typename?: 'TimelineSegment', id: string, rows: Array<string>, start?: string | null, end?: string | null, kind: SegmentKind, source: string, jobId?: string | null, name: string, status?: JobStatus | null, priority?: JobPriority | null, mine: boolean, earliestStart?: string | null, latestStart?: string | null, jobType?: JobType | null };

export type WaitingFragment = { __typename?: 'QueueEntry', position: number, jobId?: string | null, name: string, estimatedStart?: string | null, reason: string, warnings: Array<string>, priority?: JobPriority | null, gpuType?: string | null, gpuCount: number, podCount: number, mine: boolean, jobType?: JobType | null, earliestStart?: string | null, latestStart?: string | null };

export type ClusterScheduleQueryVariables = Exact<{
  id: Scalars['ID']['input'];
  from?: InputMaybe<Scalars['DateTime']['input']>;
  to?: InputMaybe<Scalars['DateTime']['input']>;
}>;


export type ClusterScheduleQuery = { __typename?: 'Query', cluster?: { __typename?: 'Cluster', id: string, schedule: { __typename?: 'Schedule', sequence: number, computedAt: string, start: string, end: string, rows: Array<{ __typename?: 'TimelineRow', id: string, node?: string | null, gpuIndex?: number | null, gpuType?: string | null }>, segments: Array<{ __typename?: 'TimelineSegment', id: string, rows: Array<string>, start?: string | null, end?: string | null, kind: SegmentKind, source: string, jobId?: string | null, name: string, status?: JobStatus | null, priority?: JobPriority | null, mine: boolean, earliestStart?: string | null, latestStart?: string | null, jobType?: JobType | null }>, queue: Array<{ __typename?: 'QueueEntry', position: number, jobId?: string | null, name: string, estimatedStart?: string | null, reason: string, warnings: Array<string>, priority?: JobPriority | null, gpuType?: string | null, gpuCount: number, podCount: number, mine: boolean, jobType?: JobType | null, earliestStart?: string | null, latestStart?: string | null }> } } | null };

export type ScheduleTimelineSubscriptionVariables = Exact<{
  clusterId: Scalars['ID']['input'];
  from?: InputMaybe<Scalars['DateTime']['input']>;
  to?: InputMaybe<Scalars['DateTime']['input']>;
  since?: InputMaybe<Scalars['Int']['input']>;
}>;


export type ScheduleTimelineSubscription = { __typename?: 'Subscription', scheduleTimeline: { __typename: 'Schedule', sequence: number, reason: string, computedAt: string, start: string, end: string, rows: Array<{ __typename?: 'TimelineRow', id: string, node?: string | null, gpuIndex?: number | null, gpuType?: string | null }>, segments: Array<{ __typename?: 'TimelineSegment', id: string, rows: Array<string>, start?: string | null, end?: string | null, kind: SegmentKind, source: string, jobId?: string | null, name: string, status?: JobStatus | null, priority?: JobPriority | null, mine: boolean, earliestStart?: string | null, latestStart?: string | null, jobType?: JobType | null }>, queue: Array<{ __typename?: 'QueueEntry', position: number, jobId?: string | null, name: string, estimatedStart?: string | null, reason: string, warnings: Array<string>, priority?: JobPriority | null, gpuType?: string | null, gpuCount: number, podCount: number, mine: boolean, jobType?: JobType | null, earliestStart?: string | null, latestStart?: string | null }> } | { __typename: 'ScheduleDiff', sequence: number, computedAt: string, removed: Array<string>, added: Array<{ __typename?: 'TimelineSegment', id: string, rows: Array<string>, start?: string | null, end?: string | null, kind: SegmentKind, source: string, jobId?: string | null, name: string, status?: JobStatus | null, priority?: JobPriority | null, mine: boolean, earliestStart?: string | null, latestStart?: string | null, jobType?: JobType | null }>, moved: Array<{ __typename?: 'TimelineSegment', id: string, rows: Array<string>, start?: string | null, end?: string | null, kind: SegmentKind, source: string, jobId?: string | null, name: string, status?: JobStatus | null, priority?: JobPriority | null, mine: boolean, earliestStart?: string | null, latestStart?: string | null, jobType?: JobType | null }>, queueUpdate?: Array<{ __typename?: 'QueueEntry', position: number, jobId?: string | null, name: string, estimatedStart?: string | null, reason: string, warnings: Array<string>, priority?: JobPriority | null, gpuType?: string | null, gpuCount: number, podCount: number, mine: boolean, jobType?: JobType | null, earliestStart?: string | null, latestStart?: string | null }> | null, rowsUpdate?: Array<{ __typename?: 'ScheduleRow', id: string, node?: string | null, gpuIndex?: number | null, gpuType?: string | null }> | null } };

export type ScheduleFleetsQueryVariables = Exact<{ [key: string]: never; }>;


export type ScheduleFleetsQuery = { __typename?: 'Query', fleets: Array<{ __typename?: 'Fleet', id: string, name: string, plannedAt?: string | null, members: Array<{ __typename?: 'Cluster', id: string, name: string }>, queue: Array<{ __typename?: 'FleetQueueEntry', position: number, jobId?: string | null, name: string, mine: boolean, status?: JobStatus | null, clusterId: string, estimatedStart?: string | null, nextBestClusterId?: string | null, nextBestStart?: string | null, moves: number }> }> };

export type ScheduleDrainsQueryVariables = Exact<{
  clusterId: Scalars['ID']['input'];
}>;


export type ScheduleDrainsQuery = { __typename?: 'Query', drains: Array<{ __typename?: 'Drain', id: string, node?: string | null, reason: string, state: DrainState, startedAt: string, estimatedEnd?: string | null, drainedAt?: string | null, endedAt?: string | null, remaining: number }> };

export type ScheduleJobLogsQueryVariables = Exact<{
  id: Scalars['ID']['input'];
}>;


export type ScheduleJobLogsQuery = { __typename?: 'Query', jobLogs: { __typename: 'ForbiddenError', code: string, message: string } | { __typename: 'JobLogs', attempt: number, kept: boolean, note?: string | null, lines: Array<{ __typename?: 'LogLine', at: string, pod: string, text: string }> } | { __typename: 'NotFoundError', code: string, message: string } | { __typename: 'ValidationError', code: string, message: string } };

export type ScheduleScalingStepsQueryVariables = Exact<{
  clusterId: Scalars['ID']['input'];
}>;


export type ScheduleScalingStepsQuery = { __typename?: 'Query', scalingSteps: Array<{ __typename?: 'ScalingStep', deploymentId: string, deploymentName: string, at: string, fromReplicas: number, toReplicas: number, reason: string }> };

export class TypedDocumentString<TResult, TVariables>
  extends String
  implements DocumentTypeDecoration<TResult, TVariables>
{
  __apiType?: NonNullable<DocumentTypeDecoration<TResult, TVariables>['__apiType']>;
  private value: string;
  public __meta__?: Record<string, any> | undefined;

  constructor(value: string, __meta__?: Record<string, any> | undefined) {
    super(value);
    this.value = value;
    this.__meta__ = __meta__;
  }

  override toString(): string & DocumentTypeDecoration<TResult, TVariables> {
    return this.value;
  }
}
export const LatencyFragmentDoc = new TypedDocumentString(`
    fragment Latency on LatencySummary {
  meanMs
  p50Ms
  p90Ms
  p99Ms
  maxMs
}
    `, {"fragmentName":"Latency"}) as unknown as TypedDocumentString<LatencyFragment, unknown>;
export const BenchmarkViewFragmentDoc = new TypedDocumentString(`
    fragment BenchmarkView on Benchmark {
  id
  name
  deploymentId
  jobId
  status
  statusMessage
  createdAt
  startedAt
  finishedAt
  configuration {
    key
    value
  }
  progress {
    elapsedSeconds
    requestsDone
    requestsFailed
    outputTokens
    ttftMeanMs
    outputThroughput
  }
  result {
    durationSeconds
    successfulRequests
    failedRequests
    inputTokens
    outputTokens
    requestThroughput
    inputThroughput
    outputThroughput
    totalTokenThroughput
    ttft {
      ...Latency
    }
    tpot {
      ...Latency
    }
    itl {
      ...Latency
    }
    e2el {
      ...Latency
    }
    failures {
      reason
      count
    }
  }
}
    fragment Latency on LatencySummary {
  meanMs
  p50Ms
  p90Ms
  p99Ms
  maxMs
}`, {"fragmentName":"BenchmarkView"}) as unknown as TypedDocumentString<BenchmarkViewFragment, unknown>;
export const DrainFieldsFragmentDoc = new TypedDocumentString(`
    fragment DrainFields on Drain {
  id
  clusterId
  node
  reason
  state
  startedAt
  estimatedEnd
  drainedAt
  endedAt
  remaining
  replacing
  blockedPods
}
    `, {"fragmentName":"DrainFields"}) as unknown as TypedDocumentString<DrainFieldsFragment, unknown>;
export const AddonFieldsFragmentDoc = new TypedDocumentString(`
    fragment AddonFields on ClusterAddon {
  name
  title
  state
  origin
  version
  reason
  requestedAt
  updatedAt
  repository
  upgradeTo
  upgradingFrom
  health {
    name
    ok
    detail
    warning
    version
  }
  chart {
    repository
    chart
    version
    appVersion
    release
    namespace
    kubernetesVersions
  }
}
    `, {"fragmentName":"AddonFields"}) as unknown as TypedDocumentString<AddonFieldsFragment, unknown>;
export const DeploymentViewFragmentDoc = new TypedDocumentString(`
    fragment DeploymentView on Deployment {
  id
  name
  clusterId
  model
  servedModelName
  engine
  gpuType
  gpusPerReplica
  replicas
  autoscaling {
    minReplicas
    maxReplicas
    metric
    target
    scaleToZeroAfterSeconds
    scaleDownDelaySeconds
  }
  concurrency
  status
  statusMessage
  endpointUrl
  endpoints
  warnings {
    code
    message
    path
  }
  workers {
    name
    replica
    status
    reason
    node
    devices
    restarts
    lastRestartAt
    uptimeSeconds
    utilisation
  }
}
    `, {"fragmentName":"DeploymentView"}) as unknown as TypedDocumentString<DeploymentViewFragment, unknown>;
export const FleetFieldsFragmentDoc = new TypedDocumentString(`
    fragment FleetFields on Fleet {
  id
  name
  clusterQueue
  localQueue
  moveThresholdSeconds
  maxMoves
  members {
    id
    name
    status
  }
  managerCluster {
    id
    name
  }
  createdAt
  updatedAt
}
    `, {"fragmentName":"FleetFields"}) as unknown as TypedDocumentString<FleetFieldsFragment, unknown>;
export const GroupQuotasFragmentDoc = new TypedDocumentString(`
    fragment GroupQuotas on ResourceGroup {
  coveredResources
  flavors {
    flavor
    resources {
      name
      nominalQuota
      borrowingLimit
      lendingLimit
    }
  }
}
    `, {"fragmentName":"GroupQuotas"}) as unknown as TypedDocumentString<GroupQuotasFragment, unknown>;
export const SegmentFragmentDoc = new TypedDocumentString(`
    fragment Segment on TimelineSegment {
  id
  rows
  start
  end
  kind
  source
  jobId
  name
  status
  priority
  mine
  earliestStart
  latestStart
  jobType
}
    `, {"fragmentName":"Segment"}) as unknown as TypedDocumentString<SegmentFragment, unknown>;
export const WaitingFragmentDoc = new TypedDocumentString(`
    fragment Waiting on QueueEntry {
  position
  jobId
  name
  estimatedStart
  reason
  warnings
  priority
  gpuType
  gpuCount
  podCount
  mine
  jobType
  earliestStart
  latestStart
}
    `, {"fragmentName":"Waiting"}) as unknown as TypedDocumentString<WaitingFragment, unknown>;
export const AuditEventsDocument = new TypedDocumentString(`
    query AuditEvents($filter: AuditFilter, $first: Int! = 50, $after: String) {
  auditEvents(filter: $filter, first: $first, after: $after) {
    edges {
      cursor
      node {
        id
        at
        actor
        tokenId
        tenantId
        operation
        targets
        input
        outcome
        source
      }
    }
    pageInfo {
      hasNextPage
      endCursor
    }
  }
}
    `, {"hash":"530c13772485c198fa4e2cbcc8a53ee6cfa3519ab60794134f835153b7b27387"}) as unknown as TypedDocumentString<AuditEventsQuery, AuditEventsQueryVariables>;
export const BenchmarkListDocument = new TypedDocumentString(`
    query BenchmarkList($deploymentId: ID, $first: Int! = 50, $after: String) {
  benchmarks(deploymentId: $deploymentId, first: $first, after: $after) {
    edges {
      cursor
      node {
        ...BenchmarkView
      }
    }
    pageInfo {
      hasNextPage
      endCursor
    }
  }
}
    fragment Latency on LatencySummary {
  meanMs
  p50Ms
  p90Ms
  p99Ms
  maxMs
}
fragment BenchmarkView on Benchmark {
  id
  name
  deploymentId
  jobId
  status
  statusMessage
  createdAt
  startedAt
  finishedAt
  configuration {
    key
    value
  }
  progress {
    elapsedSeconds
    requestsDone
    requestsFailed
    outputTokens
    ttftMeanMs
    outputThroughput
  }
  result {
    durationSeconds
    successfulRequests
    failedRequests
    inputTokens
    outputTokens
    requestThroughput
    inputThroughput
    outputThroughput
    totalTokenThroughput
    ttft {
      ...Latency
    }
    tpot {
      ...Latency
    }
    itl {
      ...Latency
    }
    e2el {
      ...Latency
    }
    failures {
      reason
      count
    }
  }
}`, {"hash":"592bee73cad3f523bb1a9dd19be5354956e56c06ea92efcd858dd0b039388f8d"}) as unknown as TypedDocumentString<BenchmarkListQuery, BenchmarkListQueryVariables>;
export const BenchmarkSamplesDocument = new TypedDocumentString(`
    query BenchmarkSamples($id: ID!, $first: Int! = 1000, $offset: Int! = 0) {
  benchmark(id: $id) {
    id
    samples(first: $first, offset: $offset) {
      index
      sentAtSeconds
      ok
      promptTokens
      outputTokens
      ttftMs
      e2elMs
      itlMs
      failure
      error
    }
  }
}
    `, {"hash":"ceda9d9489259f423d11f5f752da17d291fd8b37633eba00d0fb2b6569dc918b"}) as unknown as TypedDocumentString<BenchmarkSamplesQuery, BenchmarkSamplesQueryVariables>;
export const RunBenchmarkDocument = new TypedDocumentString(`
    mutation RunBenchmark($input: RunBenchmarkInput!) {
  runBenchmark(input: $input) {
    __typename
    ... on Benchmark {
      ...BenchmarkView
    }
    ... on ValidationError {
      code
      message
      fields {
        path
        message
        code
      }
    }
    ... on UserError {
      code
      message
    }
  }
}
    fragment Latency on LatencySummary {
  meanMs
  p50Ms
  p90Ms
  p99Ms
  maxMs
}
fragment BenchmarkView on Benchmark {
  id
  name
  deploymentId
  jobId
  status
  statusMessage
  createdAt
  startedAt
  finishedAt
  configuration {
    key
    value
  }
  progress {
    elapsedSeconds
    requestsDone
    requestsFailed
    outputTokens
    ttftMeanMs
    outputThroughput
  }
  result {
    durationSeconds
    successfulRequests
    failedRequests
    inputTokens
    outputTokens
    requestThroughput
    inputThroughput
    outputThroughput
    totalTokenThroughput
    ttft {
      ...Latency
    }
    tpot {
      ...Latency
    }
    itl {
      ...Latency
    }
    e2el {
      ...Latency
    }
    failures {
      reason
      count
    }
  }
}`, {"hash":"f01376bd83037a3906983e30317d2e5ca35a953fdf0ae6b65a7491840aa2daab"}) as unknown as TypedDocumentString<RunBenchmarkMutation, RunBenchmarkMutationVariables>;
export const CancelBenchmarkDocument = new TypedDocumentString(`
    mutation CancelBenchmark($id: ID!) {
  cancelBenchmark(id: $id) {
    __typename
    ... on Benchmark {
      ...BenchmarkView
    }
    ... on UserError {
      code
      message
    }
  }
}
    fragment Latency on LatencySummary {
  meanMs
  p50Ms
  p90Ms
  p99Ms
  maxMs
}
fragment BenchmarkView on Benchmark {
  id
  name
  deploymentId
  jobId
  status
  statusMessage
  createdAt
  startedAt
  finishedAt
  configuration {
    key
    value
  }
  progress {
    elapsedSeconds
    requestsDone
    requestsFailed
    outputTokens
    ttftMeanMs
    outputThroughput
  }
  result {
    durationSeconds
    successfulRequests
    failedRequests
    inputTokens
    outputTokens
    requestThroughput
    inputThroughput
    outputThroughput
    totalTokenThroughput
    ttft {
      ...Latency
    }
    tpot {
      ...Latency
    }
    itl {
      ...Latency
    }
    e2el {
      ...Latency
    }
    failures {
      reason
      count
    }
  }
}`, {"hash":"58bfff400d1598aa8d7da3e24fd11d6c80344d0a9f71301c0c8d4e148b68dc28"}) as unknown as TypedDocumentString<CancelBenchmarkMutation, CancelBenchmarkMutationVariables>;
export const BenchmarkProgressDocument = new TypedDocumentString(`
    subscription BenchmarkProgress($id: ID!) {
  benchmarkProgress(id: $id) {
    ...BenchmarkView
  }
}
    fragment Latency on LatencySummary {
  meanMs
  p50Ms
  p90Ms
  p99Ms
  maxMs
}
fragment BenchmarkView on Benchmark {
  id
  name
  deploymentId
  jobId
  status
  statusMessage
  createdAt
  startedAt
  finishedAt
  configuration {
    key
    value
  }
  progress {
    elapsedSeconds
    requestsDone
    requestsFailed
    outputTokens
    ttftMeanMs
    outputThroughput
  }
  result {
    durationSeconds
    successfulRequests
    failedRequests
    inputTokens
    outputTokens
    requestThroughput
    inputThroughput
    outputThroughput
    totalTokenThroughput
    ttft {
      ...Latency
    }
    tpot {
      ...Latency
    }
    itl {
      ...Latency
    }
    e2el {
      ...Latency
    }
    failures {
      reason
      count
    }
  }
}`, {"hash":"917abf6b3eada0cf72a635af214ad08667ab7cd640e2f23e9b2a811f950908e5"}) as unknown as TypedDocumentString<BenchmarkProgressSubscription, BenchmarkProgressSubscriptionVariables>;
export const CompareBenchmarksDocument = new TypedDocumentString(`
    query CompareBenchmarks($ids: [ID!]!) {
  compareBenchmarks(ids: $ids) {
    benchmarks {
      ...BenchmarkView
    }
    differences {
      key
      values
    }
    best {
      metric
      benchmarkId
      value
    }
  }
}
    fragment Latency on LatencySummary {
  meanMs
  p50Ms
  p90Ms
  p99Ms
  maxMs
}
fragment BenchmarkView on Benchmark {
  id
  name
  deploymentId
  jobId
  status
  statusMessage
  createdAt
  startedAt
  finishedAt
  configuration {
    key
    value
  }
  progress {
    elapsedSeconds
    requestsDone
    requestsFailed
    outputTokens
    ttftMeanMs
    outputThroughput
  }
  result {
    durationSeconds
    successfulRequests
    failedRequests
    inputTokens
    outputTokens
    requestThroughput
    inputThroughput
    outputThroughput
    totalTokenThroughput
    ttft {
      ...Latency
    }
    tpot {
      ...Latency
    }
    itl {
      ...Latency
    }
    e2el {
      ...Latency
    }
    failures {
      reason
      count
    }
  }
}`, {"hash":"b2b785fbc45d251e5a28f77091f908212348b4b8e4ef4ff356754cbf67fab421"}) as unknown as TypedDocumentString<CompareBenchmarksQuery, CompareBenchmarksQueryVariables>;
export const ClusterListDocument = new TypedDocumentString(`
    query ClusterList {
  clusters {
    id
    name
    platform
    status
    reason
    capacity {
      gpuType
      total
      usable
      largestNode
    }
  }
}
    `, {"hash":"41be55dbd16de5e87f18d2fe91e957d51a2c2c2eba21dd3dff63016844efaae1"}) as unknown as TypedDocumentString<ClusterListQuery, ClusterListQueryVariables>;
export const ClusterDetailDocument = new TypedDocumentString(`
    query ClusterDetail($id: ID!) {
  cluster(id: $id) {
    id
    name
    platform
    status
    reason
    notAvailableSince
    lastSyncAt
    ingressUrl
    capacity {
      gpuType
      total
      usable
      largestNode
    }
    health {
      name
      ok
      detail
      warning
      version
    }
    addons {
      ...AddonFields
    }
    nodes {
      id
      name
      nodeType
      gpuType
      gpuCount
      cpuCores
      memoryGb
      ready
      schedulable
      excluded
      detectionMethod
      taints {
        key
        value
        effect
      }
    }
    estimateAccuracy {
      startP50Seconds
      startP95Seconds
      startWithin10Minutes
      endP50Seconds
    }
  }
}
    fragment AddonFields on ClusterAddon {
  name
  title
  state
  origin
  version
  reason
  requestedAt
  updatedAt
  repository
  upgradeTo
  upgradingFrom
  health {
    name
    ok
    detail
    warning
    version
  }
  chart {
    repository
    chart
    version
    appVersion
    release
    namespace
    kubernetesVersions
  }
}`, {"hash":"79173d99945e8386268562bcd86c1f943b3ee8457c28c5cdfa9f2ea84fa73890"}) as unknown as TypedDocumentString<ClusterDetailQuery, ClusterDetailQueryVariables>;
export const ClusterDrainsDocument = new TypedDocumentString(`
    query ClusterDrains($clusterId: ID!) {
  drains(clusterId: $clusterId) {
    ...DrainFields
  }
}
    fragment DrainFields on Drain {
  id
  clusterId
  node
  reason
  state
  startedAt
  estimatedEnd
  drainedAt
  endedAt
  remaining
  replacing
  blockedPods
}`, {"hash":"b44640eec0bf74076b79f78aedda60b5bfd1a8494a00805394bc8098560540c8"}) as unknown as TypedDocumentString<ClusterDrainsQuery, ClusterDrainsQueryVariables>;
export const DrainNodeDocument = new TypedDocumentString(`
    mutation DrainNode($clusterId: ID!, $node: String!, $reason: String) {
  drainNode(clusterId: $clusterId, node: $node, reason: $reason) {
    __typename
    ... on Drain {
      ...DrainFields
    }
    ... on ValidationError {
      message
      fields {
        path
        code
        message
      }
    }
    ... on UserError {
      code
      message
    }
  }
}
    fragment DrainFields on Drain {
  id
  clusterId
  node
  reason
  state
  startedAt
  estimatedEnd
  drainedAt
  endedAt
  remaining
  replacing
  blockedPods
}`, {"hash":"1e2d6cf16292324ea8b3bdff0e187b7b86740a56ae01b4c84bb17e239e60a28c"}) as unknown as TypedDocumentString<DrainNodeMutation, DrainNodeMutationVariables>;
export const DrainClusterDocument = new TypedDocumentString(`
    mutation DrainCluster($clusterId: ID!, $reason: String) {
  drainCluster(clusterId: $clusterId, reason: $reason) {
    __typename
    ... on Drain {
      ...DrainFields
    }
    ... on UserError {
      code
      message
    }
  }
}
    fragment DrainFields on Drain {
  id
  clusterId
  node
  reason
  state
  startedAt
  estimatedEnd
  drainedAt
  endedAt
  remaining
  replacing
  blockedPods
}`, {"hash":"2576bb8119051cd5a5320eb305b701969f43153741e9cb8b91924a2f70f30e96"}) as unknown as TypedDocumentString<DrainClusterMutation, DrainClusterMutationVariables>;
export const UndrainDocument = new TypedDocumentString(`
    mutation Undrain($id: ID!) {
  undrain(id: $id) {
    __typename
    ... on Drain {
      ...DrainFields
    }
    ... on UserError {
      code
      message
    }
  }
}
    fragment DrainFields on Drain {
  id
  clusterId
  node
  reason
  state
  startedAt
  estimatedEnd
  drainedAt
  endedAt
  remaining
  replacing
  blockedPods
}`, {"hash":"fdea447d0754f9056bf6a597bb0934c1edb0025addc2614eca2166034db2cf73"}) as unknown as TypedDocumentString<UndrainMutation, UndrainMutationVariables>;
export const InstallAddonsDocument = new TypedDocumentString(`
    mutation InstallAddons($clusterId: ID!, $addons: [Addon!]!, $mirror: String) {
  installAddons(clusterId: $clusterId, addons: $addons, mirror: $mirror) {
    __typename
    ... on Cluster {
      id
      addons {
        ...AddonFields
      }
    }
    ... on ValidationError {
      message
      fields {
        path
        code
        message
      }
    }
    ... on UserError {
      code
      message
    }
  }
}
    fragment AddonFields on ClusterAddon {
  name
  title
  state
  origin
  version
  reason
  requestedAt
  updatedAt
  repository
  upgradeTo
  upgradingFrom
  health {
    name
    ok
    detail
    warning
    version
  }
  chart {
    repository
    chart
    version
    appVersion
    release
    namespace
    kubernetesVersions
  }
}`, {"hash":"fe3159ac2bf425555d4925cd5bdfe7a54b34ea8d9941314b95a8195435c784fd"}) as unknown as TypedDocumentString<InstallAddonsMutation, InstallAddonsMutationVariables>;
export const RemoveAddonsDocument = new TypedDocumentString(`
    mutation RemoveAddons($clusterId: ID!, $addons: [Addon!]!) {
  removeAddons(clusterId: $clusterId, addons: $addons) {
    __typename
    ... on Cluster {
      id
      addons {
        ...AddonFields
      }
    }
    ... on ValidationError {
      message
      fields {
        path
        code
        message
      }
    }
    ... on UserError {
      code
      message
    }
  }
}
    fragment AddonFields on ClusterAddon {
  name
  title
  state
  origin
  version
  reason
  requestedAt
  updatedAt
  repository
  upgradeTo
  upgradingFrom
  health {
    name
    ok
    detail
    warning
    version
  }
  chart {
    repository
    chart
    version
    appVersion
    release
    namespace
    kubernetesVersions
  }
}`, {"hash":"b9589210bb7671357e20968710eabb513bb71086f8aec017ddfae292f4644d5a"}) as unknown as TypedDocumentString<RemoveAddonsMutation, RemoveAddonsMutationVariables>;
export const ClusterPricesDocument = new TypedDocumentString(`
    query ClusterPrices($id: ID!) {
  cluster(id: $id) {
    id
    name
    gpuPrices {
      gpuType
      hourlyPrice
      since
    }
  }
}
    `, {"hash":"21177b5bf102d642bf0222333f9a57e4f10f098a1e1f8fb2b947de471d3f3899"}) as unknown as TypedDocumentString<ClusterPricesQuery, ClusterPricesQueryVariables>;
export const SetGpuPriceDocument = new TypedDocumentString(`
    mutation SetGpuPrice($input: SetGpuPriceInput!) {
  setGpuPrice(input: $input) {
    __typename
    ... on GpuPrice {
      gpuType
      hourlyPrice
      since
    }
    ... on ValidationError {
      code
      message
      fields {
        path
        message
        code
      }
    }
    ... on UserError {
      code
      message
    }
  }
}
    `, {"hash":"5b6cdf021fa8a9ebe12687a9f9c7aec41d46272f6734e1bef35eda1d163c10ee"}) as unknown as TypedDocumentString<SetGpuPriceMutation, SetGpuPriceMutationVariables>;
export const SpendDocument = new TypedDocumentString(`
    query Spend($from: Date!, $to: Date!, $groupBy: [SpendGroup!], $first: Int, $after: String) {
  spend(from: $from, to: $to, groupBy: $groupBy, first: $first, after: $after) {
    edges {
      cursor
      node {
        tenantId
        projectId
        clusterId
        gpuType
        jobType
        day
        gpuHours
        cost
      }
    }
    pageInfo {
      hasNextPage
      endCursor
    }
    total {
      gpuHours
      cost
    }
  }
}
    `, {"hash":"2a92d8e304de025942cb89c6b4a0799d31e343ea14f06c0244037ab1f5940a40"}) as unknown as TypedDocumentString<SpendQuery, SpendQueryVariables>;
export const JobCostDocument = new TypedDocumentString(`
    query JobCost($id: ID!) {
  job(id: $id) {
    id
    status
    estimatedCost
    actualCost
    costSoFar
    budgetLimit
    budgetAction
    budgetAlerted
    heldBy
    holdReason
  }
}
    `, {"hash":"0f679e644e2313ae7273d6c9b32d12ac68fe0854cf9e2cde3dc8f816c52ebf72"}) as unknown as TypedDocumentString<JobCostQuery, JobCostQueryVariables>;
export const UpdateJobBudgetDocument = new TypedDocumentString(`
    mutation UpdateJobBudget($id: ID!, $budgetLimit: Decimal, $budgetAction: BudgetAction! = WARN) {
  updateJobBudget(id: $id, budgetLimit: $budgetLimit, budgetAction: $budgetAction) {
    __typename
    ... on Job {
      id
      budgetLimit
      budgetAction
      budgetAlerted
      costSoFar
    }
    ... on ValidationError {
      code
      message
      fields {
        path
        message
        code
      }
    }
    ... on UserError {
      code
      message
    }
  }
}
    `, {"hash":"647dd677dd13acd6fff0986812fdd3c75b045c45bb7e3ca107dfea82e0d45fa9"}) as unknown as TypedDocumentString<UpdateJobBudgetMutation, UpdateJobBudgetMutationVariables>;
export const ClusterCostForecastDocument = new TypedDocumentString(`
    query ClusterCostForecast($id: ID!, $hours: Int! = 24) {
  cluster(id: $id) {
    id
    costForecast(hours: $hours) {
      start
      end
      hours {
        start
        cost
        low
        high
      }
      projects {
        projectId
        cost
        low
        high
      }
    }
  }
}
    `, {"hash":"771d64e73bb4873ad899414343141c46c30f5fa096211814b0a3ab25f49973fe"}) as unknown as TypedDocumentString<ClusterCostForecastQuery, ClusterCostForecastQueryVariables>;
export const BudgetsDocument = new TypedDocumentString(`
    query Budgets($tenantId: ID) {
  budgets(tenantId: $tenantId) {
    tenantId
    projectId
    scope
    limit
    action
    period
    periodStart
    periodEnd
    spent
    left
    share
    exhausted
    alerted
    projectedExhaustion {
      expected
      earliest
      latest
    }
  }
}
    `, {"hash":"c28e797b18bd6f3e5eebc023552cc13e166d88eaf644e50c08630526197e0e17"}) as unknown as TypedDocumentString<BudgetsQuery, BudgetsQueryVariables>;
export const SetBudgetDocument = new TypedDocumentString(`
    mutation SetBudget($input: SetBudgetInput!) {
  setBudget(input: $input) {
    __typename
    ... on Budget {
      tenantId
      projectId
      scope
      limit
      action
      spent
      left
      share
      exhausted
    }
    ... on ValidationError {
      code
      message
      fields {
        path
        message
        code
      }
    }
    ... on UserError {
      code
      message
    }
  }
}
    `, {"hash":"c87c59328751b459ab64721e502c827f033b0f230f03307232724c95c4150f87"}) as unknown as TypedDocumentString<SetBudgetMutation, SetBudgetMutationVariables>;
export const RemoveBudgetDocument = new TypedDocumentString(`
    mutation RemoveBudget($tenantId: ID, $projectId: ID) {
  removeBudget(tenantId: $tenantId, projectId: $projectId) {
    __typename
    ... on Budget {
      tenantId
      projectId
      scope
      limit
    }
    ... on UserError {
      code
      message
    }
  }
}
    `, {"hash":"ba2d575bcf1c28ab210dd55aaf4b675d3026bdfc179792e8f548b8eab3b0fec5"}) as unknown as TypedDocumentString<RemoveBudgetMutation, RemoveBudgetMutationVariables>;
export const DeploymentListDocument = new TypedDocumentString(`
    query DeploymentList($filter: DeploymentFilter, $first: Int! = 50, $after: String) {
  deployments(filter: $filter, first: $first, after: $after) {
    edges {
      cursor
      node {
        ...DeploymentView
      }
    }
    pageInfo {
      hasNextPage
      endCursor
    }
  }
}
    fragment DeploymentView on Deployment {
  id
  name
  clusterId
  model
  servedModelName
  engine
  gpuType
  gpusPerReplica
  replicas
  autoscaling {
    minReplicas
    maxReplicas
    metric
    target
    scaleToZeroAfterSeconds
    scaleDownDelaySeconds
  }
  concurrency
  status
  statusMessage
  endpointUrl
  endpoints
  warnings {
    code
    message
    path
  }
  workers {
    name
    replica
    status
    reason
    node
    devices
    restarts
    lastRestartAt
    uptimeSeconds
    utilisation
  }
}`, {"hash":"58b26b24a8e0889d877cb11273fae55d4a26b9ad69d1e5e714499f6c37ef49bc"}) as unknown as TypedDocumentString<DeploymentListQuery, DeploymentListQueryVariables>;
export const DeploymentDetailDocument = new TypedDocumentString(`
    query DeploymentDetail($id: ID!) {
  deployment(id: $id) {
    ...DeploymentView
    engineArgs {
      tensorParallelSize
      pipelineParallelSize
      maxModelLen
      maxNumSeqs
      dtype
      quantization
    }
    replicaJobs {
      id
      name
      status
      estimatedStart
    }
    scalingSteps {
      at
      fromReplicas
      toReplicas
      reason
      metricValue
    }
  }
}
    fragment DeploymentView on Deployment {
  id
  name
  clusterId
  model
  servedModelName
  engine
  gpuType
  gpusPerReplica
  replicas
  autoscaling {
    minReplicas
    maxReplicas
    metric
    target
    scaleToZeroAfterSeconds
    scaleDownDelaySeconds
  }
  concurrency
  status
  statusMessage
  endpointUrl
  endpoints
  warnings {
    code
    message
    path
  }
  workers {
    name
    replica
    status
    reason
    node
    devices
    restarts
    lastRestartAt
    uptimeSeconds
    utilisation
  }
}`, {"hash":"d2670abfb7142681d31a3d272bee308401f9d11e2b79751f691062873668ec54"}) as unknown as TypedDocumentString<DeploymentDetailQuery, DeploymentDetailQueryVariables>;
export const DeployModelDocument = new TypedDocumentString(`
    mutation DeployModel($input: DeployModelInput!) {
  deployModel(input: $input) {
    __typename
    ... on Deployment {
      ...DeploymentView
    }
    ... on ValidationError {
      code
      message
      fields {
        path
        message
        code
      }
    }
    ... on UserError {
      code
      message
    }
  }
}
    fragment DeploymentView on Deployment {
  id
  name
  clusterId
  model
  servedModelName
  engine
  gpuType
  gpusPerReplica
  replicas
  autoscaling {
    minReplicas
    maxReplicas
    metric
    target
    scaleToZeroAfterSeconds
    scaleDownDelaySeconds
  }
  concurrency
  status
  statusMessage
  endpointUrl
  endpoints
  warnings {
    code
    message
    path
  }
  workers {
    name
    replica
    status
    reason
    node
    devices
    restarts
    lastRestartAt
    uptimeSeconds
    utilisation
  }
}`, {"hash":"fe4278eb3a40e0e01b751e37486605f61d6053b98025512c71cfc1d71ba4d8c9"}) as unknown as TypedDocumentString<DeployModelMutation, DeployModelMutationVariables>;
export const ScaleDeploymentDocument = new TypedDocumentString(`
    mutation ScaleDeployment($id: ID!, $replicas: Int!) {
  scaleDeployment(id: $id, replicas: $replicas) {
    __typename
    ... on Deployment {
      ...DeploymentView
    }
    ... on UserError {
      code
      message
    }
  }
}
    fragment DeploymentView on Deployment {
  id
  name
  clusterId
  model
  servedModelName
  engine
  gpuType
  gpusPerReplica
  replicas
  autoscaling {
    minReplicas
    maxReplicas
    metric
    target
    scaleToZeroAfterSeconds
    scaleDownDelaySeconds
  }
  concurrency
  status
  statusMessage
  endpointUrl
  endpoints
  warnings {
    code
    message
    path
  }
  workers {
    name
    replica
    status
    reason
    node
    devices
    restarts
    lastRestartAt
    uptimeSeconds
    utilisation
  }
}`, {"hash":"209fb80ef24f05cf317a52c0c6ed97ac2b78cb7094b38b44e37fc9aaa08754e9"}) as unknown as TypedDocumentString<ScaleDeploymentMutation, ScaleDeploymentMutationVariables>;
export const SetAutoscalingDocument = new TypedDocumentString(`
    mutation SetAutoscaling($id: ID!, $autoscaling: AutoscalingInput) {
  setAutoscaling(id: $id, autoscaling: $autoscaling) {
    __typename
    ... on Deployment {
      ...DeploymentView
    }
    ... on ValidationError {
      code
      message
      fields {
        path
        message
        code
      }
    }
    ... on UserError {
      code
      message
    }
  }
}
    fragment DeploymentView on Deployment {
  id
  name
  clusterId
  model
  servedModelName
  engine
  gpuType
  gpusPerReplica
  replicas
  autoscaling {
    minReplicas
    maxReplicas
    metric
    target
    scaleToZeroAfterSeconds
    scaleDownDelaySeconds
  }
  concurrency
  status
  statusMessage
  endpointUrl
  endpoints
  warnings {
    code
    message
    path
  }
  workers {
    name
    replica
    status
    reason
    node
    devices
    restarts
    lastRestartAt
    uptimeSeconds
    utilisation
  }
}`, {"hash":"6f32efb4e65207225a3da3e047a7f5f4667361b75501c0b8a3cc43e53552638e"}) as unknown as TypedDocumentString<SetAutoscalingMutation, SetAutoscalingMutationVariables>;
export const StopDeploymentDocument = new TypedDocumentString(`
    mutation StopDeployment($id: ID!) {
  stopDeployment(id: $id) {
    __typename
    ... on Deployment {
      ...DeploymentView
    }
    ... on UserError {
      code
      message
    }
  }
}
    fragment DeploymentView on Deployment {
  id
  name
  clusterId
  model
  servedModelName
  engine
  gpuType
  gpusPerReplica
  replicas
  autoscaling {
    minReplicas
    maxReplicas
    metric
    target
    scaleToZeroAfterSeconds
    scaleDownDelaySeconds
  }
  concurrency
  status
  statusMessage
  endpointUrl
  endpoints
  warnings {
    code
    message
    path
  }
  workers {
    name
    replica
    status
    reason
    node
    devices
    restarts
    lastRestartAt
    uptimeSeconds
    utilisation
  }
}`, {"hash":"c82825e2f7da2022d1491b29c29f7ef89757a9d85224db4112c0a9e001d95ef2"}) as unknown as TypedDocumentString<StopDeploymentMutation, StopDeploymentMutationVariables>;
export const DeploymentUpdatesDocument = new TypedDocumentString(`
    subscription DeploymentUpdates($clusterId: ID!, $since: Int) {
  deploymentUpdates(clusterId: $clusterId, since: $since) {
    __typename
    ... on DeploymentSnapshot {
      sequence
      reason
      deployments {
        ...DeploymentView
      }
    }
    ... on DeploymentChange {
      sequence
      deployment {
        ...DeploymentView
      }
      scalingStep {
        at
        fromReplicas
        toReplicas
        reason
      }
    }
  }
}
    fragment DeploymentView on Deployment {
  id
  name
  clusterId
  model
  servedModelName
  engine
  gpuType
  gpusPerReplica
  replicas
  autoscaling {
    minReplicas
    maxReplicas
    metric
    target
    scaleToZeroAfterSeconds
    scaleDownDelaySeconds
  }
  concurrency
  status
  statusMessage
  endpointUrl
  endpoints
  warnings {
    code
    message
    path
  }
  workers {
    name
    replica
    status
    reason
    node
    devices
    restarts
    lastRestartAt
    uptimeSeconds
    utilisation
  }
}`, {"hash":"bc17594ea198754b2e31f1ab7fb371f9865d57c587657094bbf1783ae72ea2b0"}) as unknown as TypedDocumentString<DeploymentUpdatesSubscription, DeploymentUpdatesSubscriptionVariables>;
export const FleetListDocument = new TypedDocumentString(`
    query FleetList {
  fleets {
    ...FleetFields
  }
}
    fragment FleetFields on Fleet {
  id
  name
  clusterQueue
  localQueue
  moveThresholdSeconds
  maxMoves
  members {
    id
    name
    status
  }
  managerCluster {
    id
    name
  }
  createdAt
  updatedAt
}`, {"hash":"eb1717efbc2d31e0b538863c35674bd09f009606276768f9b7239d042f0521f9"}) as unknown as TypedDocumentString<FleetListQuery, FleetListQueryVariables>;
export const FleetViewDocument = new TypedDocumentString(`
    query FleetView($id: ID!, $first: Int! = 100) {
  fleet(id: $id) {
    ...FleetFields
    plannedAt
    queue(first: $first) {
      position
      jobId
      name
      mine
      status
      clusterId
      estimatedStart
      nextBestClusterId
      nextBestStart
      moves
    }
  }
}
    fragment FleetFields on Fleet {
  id
  name
  clusterQueue
  localQueue
  moveThresholdSeconds
  maxMoves
  members {
    id
    name
    status
  }
  managerCluster {
    id
    name
  }
  createdAt
  updatedAt
}`, {"hash":"de39300d411acb7b58dde53cf35aabc595f79f781ed212e7be8fb5ac4e684d3d"}) as unknown as TypedDocumentString<FleetViewQuery, FleetViewQueryVariables>;
export const CreateFleetDocument = new TypedDocumentString(`
    mutation CreateFleet($input: FleetInput!) {
  createFleet(input: $input) {
    __typename
    ... on Fleet {
      ...FleetFields
    }
    ... on ValidationError {
      code
      message
      fields {
        path
        message
        code
      }
    }
    ... on UserError {
      code
      message
    }
  }
}
    fragment FleetFields on Fleet {
  id
  name
  clusterQueue
  localQueue
  moveThresholdSeconds
  maxMoves
  members {
    id
    name
    status
  }
  managerCluster {
    id
    name
  }
  createdAt
  updatedAt
}`, {"hash":"cb7aa6b4002ac9142414d64d07850c1e6314ffd645a970b52e1998dc8ff6cd61"}) as unknown as TypedDocumentString<CreateFleetMutation, CreateFleetMutationVariables>;
export const UpdateFleetDocument = new TypedDocumentString(`
    mutation UpdateFleet($id: ID!, $input: FleetInput!) {
  updateFleet(id: $id, input: $input) {
    __typename
    ... on Fleet {
      ...FleetFields
    }
    ... on ValidationError {
      code
      message
      fields {
        path
        message
        code
      }
    }
    ... on UserError {
      code
      message
    }
  }
}
    fragment FleetFields on Fleet {
  id
  name
  clusterQueue
  localQueue
  moveThresholdSeconds
  maxMoves
  members {
    id
    name
    status
  }
  managerCluster {
    id
    name
  }
  createdAt
  updatedAt
}`, {"hash":"40e28734f8a4582cc50b71e605bcc5661804413e8ed302adcdce58809ab02ebb"}) as unknown as TypedDocumentString<UpdateFleetMutation, UpdateFleetMutationVariables>;
export const DeleteFleetDocument = new TypedDocumentString(`
    mutation DeleteFleet($id: ID!) {
  deleteFleet(id: $id) {
    __typename
    ... on Fleet {
      id
      name
    }
    ... on UserError {
      code
      message
    }
  }
}
    `, {"hash":"3551735a2b494c0ee9a628eb1efab2b7a2684406f68efadea1a3026692fb5a7f"}) as unknown as TypedDocumentString<DeleteFleetMutation, DeleteFleetMutationVariables>;
export const PreviewOnFleetDocument = new TypedDocumentString(`
    query PreviewOnFleet($input: SubmitJobInput!) {
  previewJob(input: $input) {
    __typename
    ... on JobPreview {
      clusterId
      estimatedStart
      estimatedEnd
      estimatedCost
      reason
      members {
        clusterId
        clusterName
        rank
        estimatedStart
        estimatedEnd
        estimatedCost
        load
        evicts
        reason
        warnings
        startWindow(confidence: 0.8) {
          earliest
          latest
          confidence
        }
        problems {
          path
          message
          code
        }
      }
    }
    ... on ValidationError {
      code
      message
      fields {
        path
        message
        code
      }
    }
    ... on UserError {
      code
      message
    }
  }
}
    `, {"hash":"9400ce33be2ecd34c8a59b95686248a57defb8295bea3b5787641dc9e6e57e42"}) as unknown as TypedDocumentString<PreviewOnFleetQuery, PreviewOnFleetQueryVariables>;
export const SubmitToFleetDocument = new TypedDocumentString(`
    mutation SubmitToFleet($input: SubmitJobInput!) {
  submitJob(input: $input) {
    __typename
    ... on Job {
      id
      status
      statusMessage
      clusterId
      fleetId
    }
    ... on ValidationError {
      code
      message
      fields {
        path
        message
        code
      }
    }
    ... on UserError {
      code
      message
    }
  }
}
    `, {"hash":"297b8e103c136dd4608b889bb2da6b5afd3c952216c915a50c604ff9e594ee71"}) as unknown as TypedDocumentString<SubmitToFleetMutation, SubmitToFleetMutationVariables>;
export const FleetJobMovesDocument = new TypedDocumentString(`
    query FleetJobMoves($id: ID!) {
  job(id: $id) {
    id
    clusterId
    fleetId
    moves {
      attempt
      fromClusterId
      toClusterId
      at
      reason
    }
  }
}
    `, {"hash":"22c8c8ca03703808c730449a441d9fe51d22fa3f6e60b907ee95c35d161484ba"}) as unknown as TypedDocumentString<FleetJobMovesQuery, FleetJobMovesQueryVariables>;
export const JobUpdatesDocument = new TypedDocumentString(`
    subscription JobUpdates($clusterId: ID!, $filter: JobFilter, $since: Int) {
  jobUpdates(clusterId: $clusterId, filter: $filter, since: $since) {
    __typename
    ... on JobSnapshot {
      sequence
      reason
      truncated
      jobs {
        id
        name
        status
        priority
      }
    }
    ... on JobChange {
      sequence
      kind
      matchesFilter
      job {
        id
        name
        status
        priority
        attempt
        estimatedStart
        estimatedEnd
      }
      transition {
        attempt
        fromStatus
        toStatus
        reason
        at
      }
      budget {
        share
        cost
        limit
        action
        expected
        message
      }
      move {
        fromClusterId
        toClusterId
        at
        reason
      }
    }
  }
}
    `, {"hash":"93f2a04a3a2b895819e0daae033aee36b63ad56b62a433872b454370ff8e28d0"}) as unknown as TypedDocumentString<JobUpdatesSubscription, JobUpdatesSubscriptionVariables>;
export const JobListDocument = new TypedDocumentString(`
    query JobList($filter: JobFilter, $first: Int! = 50, $after: String) {
  jobs(filter: $filter, first: $first, after: $after) {
    edges {
      cursor
      node {
        id
        name
        clusterId
        jobType
        priority
        status
        statusMessage
        createdAt
        estimatedStart
        estimatedEnd
        resources {
          gpuType
          gpuCount
          podCount
          totalGpus
        }
      }
    }
    pageInfo {
      hasNextPage
      endCursor
    }
  }
}
    `, {"hash":"b51bbb0152cdb21c7e4ec5cb99bd816c2430d0d645c3312931c291b4d67157ae"}) as unknown as TypedDocumentString<JobListQuery, JobListQueryVariables>;
export const JobDetailDocument = new TypedDocumentString(`
    query JobDetail($id: ID!) {
  job(id: $id) {
    id
    name
    secrets {
      name
      mountPath
    }
    projectId
    clusterId
    jobType
    deploymentType
    priority
    preemptible
    status
    statusMessage
    attempt
    retryCount
    maxRetries
    queueName
    createdAt
    actualStart
    actualEnd
    estimatedCost
    actualCost
    costSoFar
    budgetLimit
    budgetAction
    budgetAlerted
    resources {
      gpuType
      gpuCount
      cpuCores
      memoryGb
      podCount
      totalGpus
    }
    placements {
      node
      gpuIndices
      flavor
    }
    estimate {
      start
      end
      reason
      warnings
      startWindow(confidence: 0.8) {
        earliest
        latest
        confidence
      }
    }
    submissionEstimate {
      start
      end
      reason
    }
    kueuePosition {
      localQueue
      positionInLocalQueue
      positionInClusterQueue
      pendingInLocalQueue
    }
    events {
      attempt
      fromStatus
      toStatus
      reason
      at
    }
  }
}
    `, {"hash":"890534404e739bf50b103d49eee8abb34c2165b37ae824fa3207f3997724caed"}) as unknown as TypedDocumentString<JobDetailQuery, JobDetailQueryVariables>;
export const SubmitJobDocument = new TypedDocumentString(`
    mutation SubmitJob($input: SubmitJobInput!) {
  submitJob(input: $input) {
    __typename
    ... on Job {
      id
      status
    }
    ... on ValidationError {
      code
      message
      fields {
        path
        message
        code
      }
    }
    ... on UserError {
      code
      message
    }
  }
}
    `, {"hash":"07184caa680aa644e6c8c5f25d542bbb5645c023e15be7c89cfa1f57ce5eabbd"}) as unknown as TypedDocumentString<SubmitJobMutation, SubmitJobMutationVariables>;
export const CancelJobDocument = new TypedDocumentString(`
    mutation CancelJob($id: ID!, $reason: String) {
  cancelJob(id: $id, reason: $reason) {
    __typename
    ... on Job {
      id
      status
    }
    ... on UserError {
      code
      message
    }
  }
}
    `, {"hash":"406ffa22e697bc27ccc7994cb507d7a3978dad146082715c6a30d516b6df58c9"}) as unknown as TypedDocumentString<CancelJobMutation, CancelJobMutationVariables>;
export const JobLogsDocument = new TypedDocumentString(`
    query JobLogs($id: ID!, $attempt: Int, $pod: String, $since: DateTime, $tail: Int = 200) {
  jobLogs(jobId: $id, attempt: $attempt, pod: $pod, since: $since, tail: $tail) {
    __typename
    ... on JobLogs {
      jobId
      attempt
      pods
      kept
      note
      lines {
        at
        pod
        text
      }
    }
    ... on ValidationError {
      message
      fields {
        path
        code
        message
      }
    }
    ... on UserError {
      code
      message
    }
  }
}
    `, {"hash":"0b8a93592360bdd0e5ebad5847fbe8d6263ea5d5bd605f687e6b9346558bfd18"}) as unknown as TypedDocumentString<JobLogsQuery, JobLogsQueryVariables>;
export const FollowJobLogsDocument = new TypedDocumentString(`
    subscription FollowJobLogs($id: ID!, $attempt: Int, $pod: String, $tail: Int = 200) {
  jobLogs(jobId: $id, attempt: $attempt, pod: $pod, tail: $tail) {
    jobId
    attempt
    kept
    note
    lines {
      at
      pod
      text
    }
  }
}
    `, {"hash":"7dd2dc7a8608d6769fc84bc92c04251b79413b213d293700ae688a00c96e3b17"}) as unknown as TypedDocumentString<FollowJobLogsSubscription, FollowJobLogsSubscriptionVariables>;
export const SecretsDocument = new TypedDocumentString(`
    query Secrets($tenantId: ID) {
  secrets(tenantId: $tenantId) {
    id
    tenantId
    name
    keys
    version
    createdAt
    updatedAt
    lastUsedAt
  }
}
    `, {"hash":"0fcda6a4b0d28d3f3d1a10aa45d08c3fbec39d7a6ddf487fda4dcdec7045a364"}) as unknown as TypedDocumentString<SecretsQuery, SecretsQueryVariables>;
export const SetSecretDocument = new TypedDocumentString(`
    mutation SetSecret($input: SetSecretInput!) {
  setSecret(input: $input) {
    __typename
    ... on Secret {
      id
      name
      keys
      version
      updatedAt
    }
    ... on ValidationError {
      message
      fields {
        path
        code
        message
      }
    }
    ... on UserError {
      code
      message
    }
  }
}
    `, {"hash":"275bffdc3caff8376861a59c5909d20ad3359c476b666b83b12a83a6c002e7de"}) as unknown as TypedDocumentString<SetSecretMutation, SetSecretMutationVariables>;
export const RemoveSecretDocument = new TypedDocumentString(`
    mutation RemoveSecret($name: String!, $tenantId: ID, $force: Boolean = false) {
  removeSecret(name: $name, tenantId: $tenantId, force: $force) {
    __typename
    ... on Secret {
      id
      name
    }
    ... on UserError {
      code
      message
    }
  }
}
    `, {"hash":"b39c9f248a036eed1a0e28eeeefe9bca82b82230f5ba3b72cce931b5f3130e4a"}) as unknown as TypedDocumentString<RemoveSecretMutation, RemoveSecretMutationVariables>;
export const ClusterQuotasDocument = new TypedDocumentString(`
    query ClusterQuotas($id: ID!) {
  cluster(id: $id) {
    id
    quotaSettings {
      fairSharing
    }
    resourceFlavors {
      name
      nodeLabels {
        key
        value
      }
    }
    clusterQueues {
      name
      cohort
      queueingStrategy
      preemption {
        withinClusterQueue
        reclaimWithinCohort
        borrowWithinCohort {
          policy
          maxPriorityThreshold
        }
      }
      flavorFungibility {
        whenCanBorrow
        whenCanPreempt
        preference
      }
      fairSharingWeight
      usage {
        flavor
        resource
        nominalQuota
        borrowingLimit
        lendingLimit
        used
        borrowed
        reserved
        pendingWorkloads
        admittedWorkloads
      }
    }
    cohorts {
      name
      description
      parent
      fairSharingWeight
      resourceGroups {
        ...GroupQuotas
      }
    }
    localQueues {
      name
      namespace
      clusterQueue
    }
  }
}
    fragment GroupQuotas on ResourceGroup {
  coveredResources
  flavors {
    flavor
    resources {
      name
      nominalQuota
      borrowingLimit
      lendingLimit
    }
  }
}`, {"hash":"845373bdcf42eed3ff1491566d3c77d4197013fe36ff9980ecccee584ca6ea1a"}) as unknown as TypedDocumentString<ClusterQuotasQuery, ClusterQuotasQueryVariables>;
export const ClusterScheduleDocument = new TypedDocumentString(`
    query ClusterSchedule($id: ID!, $from: DateTime, $to: DateTime) {
  cluster(id: $id) {
    id
    schedule(from: $from, to: $to) {
      sequence
      computedAt
      start
      end
      rows {
        id
        node
        gpuIndex
        gpuType
      }
      segments {
        ...Segment
      }
      queue {
        ...Waiting
      }
    }
  }
}
    fragment Segment on TimelineSegment {
  id
  rows
  start
  end
  kind
  source
  jobId
  name
  status
  priority
  mine
  earliestStart
  latestStart
  jobType
}
fragment Waiting on QueueEntry {
  position
  jobId
  name
  estimatedStart
  reason
  warnings
  priority
  gpuType
  gpuCount
  podCount
  mine
  jobType
  earliestStart
  latestStart
}`, {"hash":"5cbaf29b71f3c975a3f5b72653569739e66494359dedd14ba85800be19228471"}) as unknown as TypedDocumentString<ClusterScheduleQuery, ClusterScheduleQueryVariables>;
export const ScheduleTimelineDocument = new TypedDocumentString(`
    subscription ScheduleTimeline($clusterId: ID!, $from: DateTime, $to: DateTime, $since: Int) {
  scheduleTimeline(clusterId: $clusterId, from: $from, to: $to, since: $since) {
    __typename
    ... on Schedule {
      sequence
      reason
      computedAt
      start
      end
      rows {
        id
        node
        gpuIndex
        gpuType
      }
      segments {
        ...Segment
      }
      queue {
        ...Waiting
      }
    }
    ... on ScheduleDiff {
      sequence
      computedAt
      added {
        ...Segment
      }
      moved {
        ...Segment
      }
      removed
      queueUpdate {
        ...Waiting
      }
      rowsUpdate {
        id
        node
        gpuIndex
        gpuType
      }
    }
  }
}
    fragment Segment on TimelineSegment {
  id
  rows
  start
  end
  kind
  source
  jobId
  name
  status
  priority
  mine
  earliestStart
  latestStart
  jobType
}
fragment Waiting on QueueEntry {
  position
  jobId
  name
  estimatedStart
  reason
  warnings
  priority
  gpuType
  gpuCount
  podCount
  mine
  jobType
  earliestStart
  latestStart
}`, {"hash":"6bcf83a8badc0aa4888fc1db52b18dc8e4a43f68d40dbeb43fae9b12e079d268"}) as unknown as TypedDocumentString<ScheduleTimelineSubscription, ScheduleTimelineSubscriptionVariables>;
export const ScheduleFleetsDocument = new TypedDocumentString(`
    query ScheduleFleets {
  fleets {
    id
    name
    members {
      id
      name
    }
    plannedAt
    queue(first: 20) {
      position
      jobId
      name
      mine
      status
      clusterId
      estimatedStart
      nextBestClusterId
      nextBestStart
      moves
    }
  }
}
    `, {"hash":"47a229a2ac27da88031eec49bc5fba9e7c5101a9cbb643ca14f4a6a06e611433"}) as unknown as TypedDocumentString<ScheduleFleetsQuery, ScheduleFleetsQueryVariables>;
export const ScheduleDrainsDocument = new TypedDocumentString(`
    query ScheduleDrains($clusterId: ID!) {
  drains(clusterId: $clusterId) {
    id
    node
    reason
    state
    startedAt
    estimatedEnd
    drainedAt
    endedAt
    remaining
  }
}
    `, {"hash":"463a94b11d3bef1bcb5f827a06483dc25cc41d44020ac89d358e4e0e3bdb80f0"}) as unknown as TypedDocumentString<ScheduleDrainsQuery, ScheduleDrainsQueryVariables>;
export const ScheduleJobLogsDocument = new TypedDocumentString(`
    query ScheduleJobLogs($id: ID!) {
  jobLogs(jobId: $id, tail: 20) {
    __typename
    ... on JobLogs {
      attempt
      kept
      note
      lines {
        at
        pod
        text
      }
    }
    ... on UserError {
      code
      message
    }
  }
}
    `, {"hash":"9d9fbfa7c7b2459ab6f38b6063b1a07c7ef660209608ffbe42d72049a11cac32"}) as unknown as TypedDocumentString<ScheduleJobLogsQuery, ScheduleJobLogsQueryVariables>;
export const ScheduleScalingStepsDocument = new TypedDocumentString(`
    query ScheduleScalingSteps($clusterId: ID!) {
  scalingSteps(clusterId: $clusterId) {
    deploymentId
    deploymentName
    at
    fromReplicas
    toReplicas
    reason
  }
}
    `, {"hash":"a25f031db9635b3c972a246329d71a09ec6dacedb9883d0db7e66513aa63ead2"}) as unknown as TypedDocumentString<ScheduleScalingStepsQuery, ScheduleScalingStepsQueryVariables>;