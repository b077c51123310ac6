"""The assembled Schema: root Query, Mutation and Subscription bound to the resolvers."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any

import strawberry
from graphql import GraphQLError
from strawberry.schema.config import StrawberryConfig
from strawberry.types import ExecutionContext

from domain.errors import Unavailable
from resolvers import addons as addon_resolvers
from resolvers import audit as audit_resolvers
from resolvers import benchmarks as benchmark_resolvers
from resolvers import budgets as budget_resolvers
from resolvers import clusters as cluster_resolvers
from resolvers import deployments as deployment_resolvers
from resolvers import drains as drain_resolvers
from resolvers import fleets as fleet_resolvers
from resolvers import jobs as job_resolvers
from resolvers import logs as log_resolvers
from resolvers import quotas as quota_resolvers
from resolvers import reservations as reservation_resolvers
from resolvers import secrets as secret_resolvers
from resolvers import spend as spend_resolvers
from resolvers import subscriptions as subscription_resolvers
from resolvers import timeline as timeline_resolvers
from resolvers.audit import audited
from schema.execution import ExecutionContext as SharingExecutionContext
from schema.extensions import extensions, is_fault
from schema.fairness import capped
from schema.types.audit import AuditEventConnection
from schema.types.autoscaling import ScalingStep
from schema.types.benchmark import Benchmark, BenchmarkComparison, BenchmarkConnection
from schema.types.budget import Budget
from schema.types.cluster import Cluster
from schema.types.connection import JobConnection
from schema.types.deployment import Deployment, DeploymentConnection
from schema.types.drain import Drain
from schema.types.fleet import Fleet
from schema.types.job import Job, JobEvent
from schema.types.quota import WorkloadPriorityClass
from schema.types.secrets import Secret
from schema.types.spend import SpendConnection

log = logging.getLogger(__name__)


def _audited(resolver: Callable[..., Awaitable[Any]], description: str | None = None) -> Any:
    """A mutation field whose resolver runs `audited`."""
    return strawberry.mutation(resolver=audited(resolver), description=description)


def _capped(resolver: Callable[..., AsyncGenerator[Any, None]], description: str) -> Any:
    """A subscription field whose streams are `capped` per tenant."""
    return strawberry.subscription(resolver=capped(resolver), description=description)


@strawberry.type
class Query:
    audit_events: AuditEventConnection = strawberry.field(
        resolver=audit_resolvers.audit_events,
        description="The audit trail, newest first: an administrator sees every tenant's "
        "events, a tenant its own.",
    )
    job: Job | None = strawberry.field(resolver=job_resolvers.job, description="A job you may see.")
    jobs: JobConnection = strawberry.field(
        resolver=job_resolvers.jobs, description="Your jobs, newest first (at most 100 per page)."
    )
    job_events: list[JobEvent] = strawberry.field(
        resolver=job_resolvers.job_events, description="A job's history, oldest first."
    )
    cluster: Cluster | None = strawberry.field(resolver=cluster_resolvers.cluster)
    preview_job = strawberry.field(
        resolver=timeline_resolvers.preview_job,
        description="Where and when a job would start, and what it would cost, without "
        "submitting it.",
    )
    clusters: list[Cluster] = strawberry.field(resolver=cluster_resolvers.clusters)
    job_logs = strawberry.field(
        resolver=log_resolvers.job_logs,
        description="What a job attempt's pods wrote, oldest first: its latest attempt unless "
        "`attempt` is given, of `pod` only, after `since`, the last `tail` (1 to 5000; 200 by "
        "default). A failed attempt's last lines are kept with it once its pods are gone. "
        "Needs jobs:logs.",
    )
    drains: list[Drain] = strawberry.field(
        resolver=drain_resolvers.drains,
        description="A cluster's drains: those on, and those ended in the last day.",
    )
    fleets: list[Fleet] = strawberry.field(
        resolver=fleet_resolvers.fleets,
        description="Every fleet: clusters grouped behind one queue name, by name.",
    )
    fleet: Fleet | None = strawberry.field(resolver=fleet_resolvers.fleet)
    spend: SpendConnection = strawberry.field(
        resolver=spend_resolvers.spend,
        description="GPU-hours and metered cost over a range of UTC days, grouped (none: one "
        "total), paged (at most 1000 a page): your tenant's (a token limited to projects, "
        "theirs), every tenant's for the operator. The same as CSV: GET /spend.csv.",
    )
    budgets: list[Budget] = strawberry.field(
        resolver=budget_resolvers.budgets,
        description="Project and tenant budgets where they stand this period: your tenant's "
        "and its projects' (a token limited to projects: those and the tenant's); every "
        "tenant's for the operator, or tenantId's.",
    )
    secrets: list[Secret] = strawberry.field(
        resolver=secret_resolvers.secrets,
        description="Your tenant's secrets by name (the operator: tenantId's): names and keys, "
        "never values.",
    )
    workload_priority_classes: list[WorkloadPriorityClass] = strawberry.field(
        resolver=quota_resolvers.workload_priority_classes,
        description="The value of each priority, highest first (global, as Kueue's are).",
    )
    deployment: Deployment | None = strawberry.field(
        resolver=deployment_resolvers.deployment, description="A model deployment you may see."
    )
    deployments: DeploymentConnection = strawberry.field(
        resolver=deployment_resolvers.deployments,
        description="Your model deployments, newest first (at most 100 per page).",
    )
    scaling_steps: list[ScalingStep] = strawberry.field(
        resolver=deployment_resolvers.scaling_steps,
        description="The steps the autoscalers of your deployments on a cluster took, newest "
        "first (each deployment's last 20; at most 200): what the schedule draws beside the "
        "replicas they started or stopped.",
    )
    benchmark: Benchmark | None = strawberry.field(
        resolver=benchmark_resolvers.benchmark, description="A benchmark you may see."
    )
    benchmarks: BenchmarkConnection = strawberry.field(
        resolver=benchmark_resolvers.benchmarks,
        description="Your benchmarks (of one deployment, if given), newest first.",
    )
    compare_benchmarks: BenchmarkComparison = strawberry.field(
        resolver=benchmark_resolvers.compare_benchmarks,
        description="2 to 10 benchmarks side by side: their metrics, the configuration that "
        "differs, and the best by each metric.",
    )


@strawberry.type
class Mutation:
    submit_job = _audited(
        job_resolvers.submit_job,
        "Submit a job to a cluster. With an idempotencyKey, a repeat in the same "
        "project returns the first job.",
    )
    cancel_job = _audited(job_resolvers.cancel_job)
    retry_job = _audited(
        job_resolvers.retry_job,
        "Start the next attempt of a FAILED or PREEMPTED job, after backoff.",
    )
    update_job_priority = _audited(job_resolvers.update_job_priority)
    update_job_budget = _audited(
        job_resolvers.update_job_budget,
        "A job's new budget and action while it is not finished (a BUDGET change); its shares "
        "are said again as they are reached, from the next check (a running job already past "
        "the new budget is said so, or cancelled with CANCEL).",
    )

    set_budget = _audited(
        budget_resolvers.set_budget,
        "A tenant's budget per period (the operator) or a project's (its tenant, within the "
        "tenant's): what it may spend in a calendar month (UTC) and what follows when it is "
        "spent (WARN, PAUSE or CANCEL, for its jobs). Jobs it held are released at once when "
        "it now has room for them.",
    )
    remove_budget = _audited(
        budget_resolvers.remove_budget,
        "Remove a tenant's budget (the operator) or a project's; jobs it held are released.",
    )

    set_secret = _audited(
        secret_resolvers.set_secret,
        "Store a secret of your tenant's (the operator: tenantId's), sealed, or replace all "
        "the values of the one of that name; jobs (SubmitJobInput.secrets) and deployments "
        "(DeployModelInput.secrets) name it. Its values are never returned, logged or audited. "
        "Needs secrets:write.",
    )
    remove_secret = _audited(
        secret_resolvers.remove_secret,
        "Remove a secret. Refused (ConflictError IN_USE, naming them) while jobs not ended or "
        "deployments not stopped name it, as each would fail at its next hand-over; force: true "
        "removes it anyway. Attempts handed over keep their copy until they end; a job naming "
        "it that is handed over later fails, saying so. Needs secrets:write.",
    )

    create_resource_flavor = _audited(quota_resolvers.create_resource_flavor)
    update_resource_flavor = _audited(
        quota_resolvers.update_resource_flavor, "Replace a flavor's node labels."
    )
    delete_resource_flavor = _audited(
        quota_resolvers.delete_resource_flavor, "Refused while a ClusterQueue names the flavor."
    )
    create_cluster_queue = _audited(quota_resolvers.create_cluster_queue)
    update_cluster_queue = _audited(
        quota_resolvers.update_cluster_queue,
        "Replace a ClusterQueue's cohort, strategy, quotas, preemption, flavor fungibility and "
        "fair-sharing weight.",
    )
    delete_cluster_queue = _audited(
        quota_resolvers.delete_cluster_queue, "Refused while a LocalQueue points at it."
    )
    create_local_queue = _audited(
        quota_resolvers.create_local_queue, "A LocalQueue in your tenant's namespace."
    )
    delete_local_queue = _audited(
        quota_resolvers.delete_local_queue,
        "Refused while it has PENDING, QUEUED, ADMITTED or RUNNING jobs.",
    )
    create_cohort = _audited(quota_resolvers.create_cohort)
    update_cohort = _audited(
        quota_resolvers.update_cohort,
        "Replace a cohort's description, parent, quotas and fair-sharing weight.",
    )
    delete_cohort = _audited(
        quota_resolvers.delete_cohort,
        "Refused while ClusterQueues are in it; child cohorts then name an implicit cohort.",
    )
    update_quota_settings = _audited(
        quota_resolvers.update_quota_settings,
        "Record how the cluster's Kueue is configured (fair sharing on or off). budcluster does "
        "not change Kueue's controller configuration: set it on the cluster too.",
    )
    update_workload_priority_class = _audited(
        quota_resolvers.update_workload_priority_class,
        "Values must keep CRITICAL > HIGH > NORMAL > LOW > SPOT.",
    )
    create_capacity_reservation = _audited(
        reservation_resolvers.create_capacity_reservation,
        "Book GPUs of a flavor for your tenant, paid from a ClusterQueue's quota.",
    )
    cancel_capacity_reservation = _audited(reservation_resolvers.cancel_capacity_reservation)
    register_cluster = _audited(
        cluster_resolvers.register_cluster,
        "Register a Kubernetes or OpenShift cluster: REGISTERING at once, then "
        "AVAILABLE once reached (or NOT_AVAILABLE / ERROR with the reason). Needs "
        "clusters:write.",
    )
    update_cluster = _audited(
        cluster_resolvers.update_cluster,
        "Change a registered cluster; a new kubeconfig or context connects again.",
    )
    delete_cluster = _audited(
        cluster_resolvers.delete_cluster,
        "DELETING, then gone, with its jobs. Refused while jobs are active unless `force`, "
        "or the cluster is drained whole (drainCluster) and nothing holds resources there.",
    )
    drain_node = _audited(
        drain_resolvers.drain_node,
        "Drain a node before maintenance: it is cordoned; its batch and training jobs get "
        "SIGTERM and their grace period (terminationGracePeriodSeconds), then are requeued "
        "without using a retry; a deployment's replicas start elsewhere before the old ones "
        "stop. Needs clusters:write.",
    )
    drain_cluster = _audited(
        drain_resolvers.drain_cluster,
        "Drain a whole cluster (before maintenance or removal): nothing new is admitted "
        "there, its running jobs leave as drainNode's do, and its fleets' waiting jobs move "
        "to the other members (others wait, with the reason). Needs clusters:write.",
    )
    undrain = _audited(
        drain_resolvers.undrain,
        "End a drain: the node or cluster takes new work again. Needs clusters:write.",
    )
    create_fleet = _audited(
        fleet_resolvers.create_fleet,
        "Group clusters into a fleet that jobs may be submitted to (submitJob with fleetId): "
        "each goes where it is estimated to start soonest. Needs clusters:write.",
    )
    update_fleet = _audited(
        fleet_resolvers.update_fleet,
        "Change a fleet: its members, queue names, move threshold and most moves, manager. "
        "Needs clusters:write.",
    )
    delete_fleet = _audited(
        fleet_resolvers.delete_fleet,
        "Delete a fleet: its waiting jobs stay where they are, as jobs of that cluster. Needs "
        "clusters:write.",
    )
    set_gpu_price = _audited(
        cluster_resolvers.set_gpu_price,
        "The hourly price of one GPU of a type on a cluster, from now on: runs are metered at "
        "the price in force at each moment, so what ran before keeps its price. Needs "
        "clusters:write.",
    )
    refresh_cluster = _audited(
        cluster_resolvers.refresh_cluster,
        "Reach the cluster now: its nodes and health checks are read again.",
    )
    install_addons = _audited(
        addon_resolvers.install_addons,
        "Install what a GPU cluster needs and its health finds missing (Kueue, Node Feature "
        "Discovery, the NVIDIA GPU Operator, which brings Node Feature Discovery with it) as "
        "Helm releases of pinned charts, from their public repositories or `mirror` (an https "
        "or oci:// Helm repository holding them under the same names). What is there already, "
        "or asked for, is left as it is (Cluster.addons says where each stands). Refused, "
        "naming `addons.N`, for an add-on whose version does not support the cluster's "
        "Kubernetes, and for Kueue when the cluster runs one outside the supported range. A "
        "simulated cluster has everything built in. Needs clusters:write.",
    )
    remove_addons = _audited(
        addon_resolvers.remove_addons,
        "Uninstall budcluster's own Helm releases of these add-ons (REMOVING, then MISSING). "
        "Refused, naming `addons.N`, for an add-on budcluster did not install (FOUND, "
        "BUILT_IN, MISSING: NOT_INSTALLED_BY_BUDCLUSTER), one still being installed "
        "(IN_PROGRESS), and Node Feature Discovery while budcluster's GPU Operator stays "
        "(NEEDED); a ConflictError IN_USE for Kueue or the GPU Operator while jobs are active "
        "on the cluster. Needs clusters:write.",
    )
    deploy_model = _audited(
        deployment_resolvers.deploy_model,
        "Serve a model on a cluster: one SERVICE job per replica (each queued, "
        "estimated and drawn like every job). DEPLOYING, then RUNNING with an endpoint.",
    )
    scale_deployment = _audited(
        deployment_resolvers.scale_deployment,
        "Change the replicas (0 to 64): new replica jobs, or those still waiting cancelled "
        "first, then the newest. Refused (AUTOSCALED) while it scales itself.",
    )
    set_autoscaling = _audited(
        deployment_resolvers.set_autoscaling,
        "Let a deployment scale itself between minReplicas and maxReplicas to keep its metric "
        "at the target (null: stop; its replicas stay as they are). Replicas outside the new "
        "bounds are brought within them at once. minReplicas 0 (simulated clusters): it goes "
        "to zero after scaleToZeroAfterSeconds without a request, and the first request starts "
        "a replica and waits for it. Each step is a SCALED change in deploymentUpdates and is "
        "on the cluster's schedule (scalingSteps).",
    )
    stop_deployment = _audited(
        deployment_resolvers.stop_deployment, "Stop every replica; the deployment stays, STOPPED."
    )
    run_benchmark = _audited(
        benchmark_resolvers.run_benchmark,
        "Load-test a deployment or an endpoint URL, as a job without GPUs.",
    )
    cancel_benchmark = _audited(
        benchmark_resolvers.cancel_benchmark, "Stop a benchmark; what it measured so far is kept."
    )


@strawberry.type
class Subscription:
    job_logs = _capped(
        log_resolvers.follow_job_logs,
        "A job attempt's log as it is written: its last `tail` lines (200), then each batch "
        "of new ones, until the attempt has ended. Needs jobs:logs.",
    )
    job_updates = _capped(
        subscription_resolvers.job_updates,
        "A snapshot of your jobs on a cluster, then every change in order. "
        "Reconnect with `since` (the last sequence you hold) to get exactly what you missed.",
    )
    schedule_timeline = _capped(
        subscription_resolvers.schedule_timeline,
        "A cluster's schedule in a window: a snapshot, then diffs (segments added, "
        "moved, removed; queue and forecast changes), each with its sequence. Reconnect with "
        "`since` to get exactly the changes you missed. The window is fixed when you subscribe "
        "(defaults as for Cluster.schedule); subscribe again to move it.",
    )
    deployment_updates = _capped(
        deployment_resolvers.deployment_updates,
        "Your deployments on a cluster: a snapshot, then each change (status, "
        "workers, endpoint, replicas) in order. Reconnect with `since` to get exactly what "
        "you missed.",
    )
    benchmark_progress = _capped(
        benchmark_resolvers.benchmark_progress,
        "A benchmark as it is, then about every second while it runs (progress), "
        "and once more when it ends (status, result, and its final progress: every request the "
        "run ended); then the stream ends.",
    )
    cluster_updates = _capped(
        subscription_resolvers.cluster_updates,
        "A cluster's status and nodes: a snapshot, then every change in order, each "
        "with its sequence. Reconnect with `since` to get exactly the changes you missed.",
    )


class Schema(strawberry.Schema):
    def process_errors(
        self, errors: list[GraphQLError], execution_context: ExecutionContext | None = None
    ) -> None:
        """Log server faults with their traceback; a user's mistakes are not server errors.
        The operation is named by its name and a hash of its text, never by the text: its
        literals may hold secrets (an inline kubeconfig)."""
        for error in errors:
            if isinstance(error.original_error, Unavailable):
                log.warning("unavailable: %s", error.original_error)
                continue
            if not is_fault(error):
                log.debug("request error: %s", error.message)
                continue
            query = (execution_context.query if execution_context else None) or ""
            log.error(
                "internal error in operation %s (document sha256:%s) at %s",
                (execution_context.operation_name if execution_context else None) or "anonymous",
                hashlib.sha256(query.encode("utf-8", "replace")).hexdigest()[:16],
                ".".join(map(str, error.path or ())) or "the operation",
                exc_info=error.original_error,
            )


schema = Schema(
    query=Query,
    mutation=Mutation,
    subscription=Subscription,
    extensions=extensions(),
    config=StrawberryConfig(auto_camel_case=True),
    execution_context_class=SharingExecutionContext,
)


def sdl() -> str:
    """The schema as SDL, exactly as exported to frontend-contract/schema.graphql."""
    return schema.as_str() + "\n"
