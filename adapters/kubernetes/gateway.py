"""The ClusterGateway of a real cluster: work that Kueue admits.

`submit` creates a BATCH or TRAINING attempt as a suspended batch/v1 Job (kueue/jobs.py
renders it, with the queue and priority-class labels Kueue reads; a job of several pod sets is
a JobSet, kueue/jobsets.py, refused for good where the cluster serves no JobSet API; a
benchmark's attempt is a `vllm bench serve` Job, kueue/benchmarks.py, whose result
`benchmark_run` reads back from its pod's log), and a SERVICE attempt as a Helm release
(kueue/services.py says what to install; the HelmReleases port installs it).
Names are deterministic per attempt, so a retried hand-over finds its object there and changes
nothing; a later hand-over of a SERVICE job first uninstalls the job's earlier releases still
there (a model replica's Service is named after its job: one release holds it at a time).
A benchmark's Job comes with the NetworkPolicy that limits where its pod may connect
(kueue/benchmarks.py), made first and then owned by the Job. `cancel` deletes the attempt's
Jobs (their pods and Kueue Workload go with them) and NetworkPolicies, and uninstalls its
releases; `evict` does the same after deleting the attempt's pods with the grace period asked
(`_evict_pods` says why in that order); `drain_node` cordons a node and evicts, through the
Eviction API (PodDisruptionBudgets honoured), the pods there that budcluster does not run itself
(drains.py), `undrain_node` uncordons it; `set_priority` relabels the Jobs and pods and sets their
Workloads' priority; `logs` reads the attempt's pods' logs as lines (kueue/logs.py). What runs
is read back from the Jobs, budcluster's pods and Kueue's Workloads (kueue/observed.py merges
them): `list_workloads` lists them and reports each attempt's whole state (`observe` for a Job,
`observe_service` for a release's pods), `watch` follows the collections from the lists'
resourceVersions and reports an attempt again whenever one of its objects changes (it starts
with a list of its own, and reports that first: what changed since the caller's list is not
lost). `pending_in_queue`
reads Kueue's visibility API for a LocalQueue's order; `replica_metrics` reads what a model
deployment's replicas' pods serve at /metrics, through the API server's pod proxy.

A cluster that does not answer raises GatewayUnavailable (the caller backs off); an expired
watch ends it too, and the caller lists again; after RELIST_SECONDS the watch ends by itself,
for a fresh full list (lost jobs and orphans are found by one).

One connection per cluster (`KueueGateways` keeps them), opened on first use through the
registry, which opens the sealed kubeconfig only in memory; `close` closes them all.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, NamedTuple, TypeVar

from opentelemetry import trace
from opentelemetry.trace import Span

from adapters.kubernetes import drains
from adapters.kubernetes.api import WorkloadApi
from adapters.kubernetes.benchmark_job import BENCHMARK_IMAGE, samples_from_log
from adapters.kubernetes.errors import ObjectConflict
from adapters.kubernetes.inventory import node_from_k8s
from adapters.kubernetes.kueue.benchmarks import (
    JOB_NAME_LABEL,
    egress_policy,
    job_manifest,
    policies_path,
    result_pod,
)
from adapters.kubernetes.kueue.jobs import (
    CONTAINER_NAME,
    identity_labels,
    job_identity,
)
from adapters.kubernetes.kueue.jobsets import (
    JOBSET_API_VERSION,
    JOBSET_GROUP,
    job_set,
    pod_job_set_name,
)
from adapters.kubernetes.kueue.logs import log_container, log_lines, merged, pod_start, tail_lines
from adapters.kubernetes.kueue.models import DEPLOYMENT_LABEL, serving_pod
from adapters.kubernetes.kueue.multikueue import FIELD_MANAGER, RUN_ON, nomination, nomination_patch
from adapters.kubernetes.kueue.objects import (
    CLUSTER_ID_LABEL,
    KUEUE_GROUP,
    MANAGED_BY,
    MANAGER,
    NETWORKING_API,
    PRIORITY_CLASS_LABEL,
    choose_version,
    priority_class_name,
)
from adapters.kubernetes.kueue.observed import Key, Observed, workload_owner
from adapters.kubernetes.kueue.reading import labels, located
from adapters.kubernetes.kueue.secrets import (
    owned_by,
    secret_object_name,
    secret_objects,
    secrets_path,
)
from adapters.kubernetes.kueue.services import (
    RELEASE_LABEL,
    is_release_of,
    is_service_pod,
    release_prefix,
    service_release,
    superseded_by,
)
from adapters.kubernetes.kueue.visibility import (
    PAGE,
    VISIBILITY_GROUP,
    pending_path,
    pending_workloads,
    visibility_version,
)
from domain.aio import cancel_and_wait
from domain.errors import ClusterConnectionError
from domain.model.cluster import Cluster, Node
from domain.model.ids import ClusterId, JobId
from domain.model.job import JobPriority, JobType
from domain.model.load import LoadRun
from domain.model.logs import LogLine
from domain.ports.clock import Clock
from domain.ports.cluster_api import WatchExpired
from domain.ports.gateways import GatewayUnavailable, PendingWorkload, Workload, WorkloadObservation
from domain.ports.helm import HelmReleases, ReleaseRejected

log = logging.getLogger(__name__)
_tracer = trace.get_tracer("budcluster.kubernetes")

Json = dict[str, Any]
T = TypeVar("T")
JOBS = "/apis/batch/v1/jobs"
JOBSETS = f"/apis/{JOBSET_API_VERSION}/jobsets"
PODS = "/api/v1/pods"
POLICIES = f"/apis/{NETWORKING_API}/networkpolicies"
SECRETS = "/api/v1/secrets"
RELIST_SECONDS = 300.0
"""A watch ends after this long, and the caller lists again (the periodic full picture)."""
LOG_LIMIT_BYTES = 16 << 20
"""The most of a pod's log read back: more than the kubelet keeps of a container (10 MiB)."""
HEARTBEAT_SECONDS = 1.0
"""A quiet watch says it is alive this often (the supervisor renews its lease on signs of life)."""
Connect = Callable[[ClusterId], Awaitable[WorkloadApi]]
NodeParser = Callable[[Json, ClusterId], Node]
ReleasesOf = Callable[[ClusterId], HelmReleases]


class Served(NamedTuple):
    """What a pod answered, and which pod that was (its uid: another pod is another process)."""

    pod: str
    text: str


class KueueGateway:
    def __init__(
        self,
        cluster_id: ClusterId,
        *,
        connect: Connect,
        clock: Clock,
        parse_node: NodeParser = node_from_k8s,
        releases: HelmReleases | None = None,
        benchmark_image: str = BENCHMARK_IMAGE,
    ) -> None:
        self._cluster_id = cluster_id
        self._connect = connect
        self._clock = clock
        self._parse_node = parse_node
        self._releases = releases
        self._benchmark_image = benchmark_image
        self._api: WorkloadApi | None = None
        self._opening = asyncio.Lock()
        self.relist_seconds = RELIST_SECONDS

    # --- the connection -----------------------------------------------------------------------

    async def _client(self) -> WorkloadApi:
        async with self._opening:
            if self._api is None:
                try:
                    self._api = await self._connect(self._cluster_id)
                except ClusterConnectionError as exc:
                    raise GatewayUnavailable(exc.message) from None
            return self._api

    async def _call(self, work: Callable[[WorkloadApi], Awaitable[T]]) -> T:
        api = await self._client()
        try:
            return await work(api)
        except ClusterConnectionError as exc:
            if exc.kind in ("unreachable", "unauthorized"):
                await self.close()  # a new kubeconfig or server may answer next time
            raise GatewayUnavailable(exc.message) from None

    async def close(self) -> None:
        api, self._api = self._api, None
        if api is not None:
            with contextlib.suppress(Exception):
                await api.close()

    # --- commands -----------------------------------------------------------------------------

    def _helm(self) -> HelmReleases:
        if self._releases is None:
            raise ReleaseRejected("SERVICE jobs need Helm, and this service runs without it")
        return self._releases

    def _span(self, operation: str, job_id: JobId, attempt: int) -> AbstractContextManager[Span]:
        """A command's span: the cluster, the job and its attempt (its HTTP calls, and Helm's,
        are its children)."""
        return _tracer.start_as_current_span(
            f"cluster {operation}",
            attributes={
                "budcluster.cluster_id": str(self._cluster_id),
                "budcluster.job_id": str(job_id),
                "budcluster.attempt": attempt,
            },
        )

    async def submit(self, workload: Workload) -> None:
        with self._span("submit", workload.job_id, workload.attempt):
            await self._submit(workload)

    async def _submit(self, workload: Workload) -> None:
        if workload.secrets and workload.run_on is not None:
            raise ReleaseRejected(
                "a job naming secrets can't run through a MultiKueue manager: MultiKueue copies "
                "the Job to the worker cluster, not its Secrets"
            )
        if workload.job_type is JobType.SERVICE:
            try:
                release = service_release(workload, cluster_id=self._cluster_id)
            except ValueError as exc:
                raise ReleaseRejected(str(exc)) from None
            helm = self._helm()
            if workload.name != release_prefix(workload.job_id, 0):  # a later hand-over
                for earlier in await helm.releases():
                    if earlier.namespace == release.namespace and superseded_by(
                        earlier.name, workload
                    ):
                        await helm.uninstall(earlier.name, earlier.namespace)
            if workload.secrets:  # removed with the attempt (`cancel`): no one object owns them
                await self._call(lambda api: self._create_secrets(api, workload))
            await helm.install(release)
            return
        if workload.resources.pod_sets:

            async def create_set(api: WorkloadApi) -> None:
                await self._create_secrets(api, workload)
                uid = await _create_job_set(api, workload, self._cluster_id)
                if uid:
                    await self._own_secrets(
                        api, workload, owned_by("JobSet", JOBSET_API_VERSION, workload.name, uid)
                    )

            await self._call(create_set)
            return
        manifest = _run_on(
            workload,
            job_manifest(
                workload, cluster_id=self._cluster_id, benchmark_image=self._benchmark_image
            ),
        )
        policy = egress_policy(workload, cluster_id=self._cluster_id)
        path = f"/apis/batch/v1/namespaces/{workload.namespace}/jobs"

        async def create(api: WorkloadApi) -> None:
            if policy is not None:  # first: the Job's pod never runs without it
                with contextlib.suppress(ObjectConflict):
                    await api.create_object(policies_path(workload.namespace), policy)
            await self._create_secrets(api, workload)  # first too: its pods read them
            try:
                job = await api.create_object(path, manifest)
            except ObjectConflict:  # handed over before: nothing to change
                job = await api.get_object(f"{path}/{workload.name}") or {}
            uid = (job.get("metadata") or {}).get("uid")
            if not uid:
                return
            owner = owned_by("Job", "batch/v1", workload.name, uid)
            if policy is not None:  # it goes with the Job (its TTL too)
                await api.patch_object(
                    f"{policies_path(workload.namespace)}/{workload.name}", owner
                )
            await self._own_secrets(api, workload, owner)

        await self._call(create)

    async def _create_secrets(self, api: WorkloadApi, workload: Workload) -> None:
        """The attempt's Secrets (`kueue.secrets`); one there from an earlier try is replaced,
        so that the attempt reads the values of its own hand-over."""
        path = secrets_path(workload.namespace)
        for secret in secret_objects(workload, identity_labels(workload, self._cluster_id)):
            try:
                await api.create_object(path, secret)
            except ObjectConflict:
                name = secret["metadata"]["name"]
                await api.patch_object(f"{path}/{name}", {"data": secret["data"]})

    @staticmethod
    async def _own_secrets(api: WorkloadApi, workload: Workload, owner: Json) -> None:
        for secret in workload.secrets:
            name = secret_object_name(workload, secret)
            await api.patch_object(f"{secrets_path(workload.namespace)}/{name}", owner)

    async def _owned(self, api: WorkloadApi, path: str, job_id: JobId, attempt: int) -> list[Json]:
        selector = f"bud.ai/job-id={job_id},bud.ai/attempt={attempt}"
        listed, _ = await api.list_objects(path, label_selector=selector)
        return [
            j
            for j in listed
            if job_identity(j) == (job_id, attempt)
            and self._ours(j)
            and not (path == JOBS and pod_job_set_name(j))  # a JobSet's: it goes with it
        ]

    async def _owned_if_readable(
        self, api: WorkloadApi, path: str, job_id: JobId, attempt: int
    ) -> list[Json]:
        """`_owned`, or none where budcluster may not read them: it made none there either."""
        try:
            return await self._owned(api, path, job_id, attempt)
        except ClusterConnectionError as exc:
            if exc.kind != "forbidden":
                raise
            return []

    async def _owned_job_sets(self, api: WorkloadApi, job_id: JobId, attempt: int) -> list[Json]:
        """The attempt's JobSets; none where the cluster serves no JobSet API."""
        if JOBSET_API_VERSION.split("/")[1] not in await api.served_versions(JOBSET_GROUP):
            return []
        return await self._owned(api, JOBSETS, job_id, attempt)

    async def cancel(self, job_id: JobId, attempt: int) -> None:
        """Delete the attempt's batch Jobs, and uninstall its Helm releases (named by its pods;
        or, with no Job and no pod yet, by the releases Helm lists)."""
        with self._span("cancel", job_id, attempt):
            await self._cancel(job_id, attempt)

    async def evict(self, job_id: JobId, attempt: int, *, grace_seconds: int) -> None:
        """Delete the attempt's pods with `grace_seconds` as their grace period, then the rest
        of it as `cancel` does (see `_evict_pods`)."""
        with self._span("evict", job_id, attempt):
            await self._cancel(job_id, attempt, grace_seconds=grace_seconds)

    async def _evict_pods(
        self, api: WorkloadApi, job_id: JobId, attempt: int, grace_seconds: int
    ) -> list[Json]:
        """Delete the attempt's pods with DeleteOptions gracePeriodSeconds = `grace_seconds`
        (the kubelet sends SIGTERM and kills them that long after); the pods, as listed.

        First, because it is the only order Kubernetes honours: deleting a Job or JobSet
        (propagationPolicy Background) gives none of its DeleteOptions to its pods: the garbage
        collector deletes them with their own terminationGracePeriodSeconds, and a pod whose
        deletion has begun keeps its grace period (the collector skips it, and a later DELETE
        may only shorten it). Once they are terminating, the Job controller counts them failed
        (the Job reads Failed until it is deleted a moment later) and a ReplicaSet makes new
        pods, which Kueue's admission gate holds and the uninstall removes at once: both under
        the earlier hand-over's name, stale to budcluster. A pod not running yet (unscheduled)
        is deleted at once by the API server, whatever the grace; one terminating already is
        left as it is. A grace of 0 is sent as 1, as kubectl sends it without --force: 0 would
        remove the pod from the API before its kubelet has stopped it."""
        pods = await self._owned(api, PODS, job_id, attempt)
        for pod in pods:
            if not (pod.get("metadata") or {}).get("deletionTimestamp"):
                await api.delete_object(_pod_path(pod), grace_seconds=max(grace_seconds, 1))
        return pods

    async def drain_node(self, node: str) -> list[str]:
        """Cordon `node` and evict the pods there that budcluster does not run itself, as
        `drains.drain` says; the pods a PodDisruptionBudget keeps there ("namespace/name")."""
        with _tracer.start_as_current_span(
            "cluster drain node",
            attributes={"budcluster.cluster_id": str(self._cluster_id), "budcluster.node": node},
        ):
            return await self._call(lambda api: drains.drain(api, node, runs_itself=self._runs))

    async def undrain_node(self, node: str) -> None:
        """Uncordon `node`."""
        await self._call(lambda api: drains.uncordon(api, node))

    def _runs(self, pod: Json) -> bool:
        """One of budcluster's workload pods on this cluster (its identity labels)."""
        return self._ours(pod) and job_identity(pod) is not None

    async def _cancel(
        self, job_id: JobId, attempt: int, *, grace_seconds: int | None = None
    ) -> None:

        async def delete(api: WorkloadApi) -> tuple[int, set[tuple[str, str]]]:
            evicted = (
                None
                if grace_seconds is None
                else await self._evict_pods(api, job_id, attempt, grace_seconds)
            )
            job_sets = await self._owned_job_sets(api, job_id, attempt)
            for job_set_obj in job_sets:  # its Jobs, pods and Workload go with it
                await api.delete_object(_job_set_path(job_set_obj))
            jobs = await self._owned(api, JOBS, job_id, attempt)
            for job in jobs:
                await api.delete_object(_path(job))
            for policy in await self._owned_if_readable(api, POLICIES, job_id, attempt):
                namespace, name = located(policy)
                await api.delete_object(f"{policies_path(namespace)}/{name}")
            for secret in await self._owned_if_readable(api, SECRETS, job_id, attempt):
                namespace, name = located(secret)
                await api.delete_object(f"{secrets_path(namespace)}/{name}")
            pods = await self._owned(api, PODS, job_id, attempt) if evicted is None else evicted
            releases = {
                (located(p)[0], str(labels(p)[RELEASE_LABEL])) for p in pods if is_service_pod(p)
            }
            return len(job_sets) + len(jobs), releases

        deleted, releases = await self._call(delete)
        if not deleted and not releases and self._releases is not None:
            try:
                releases = {
                    (r.namespace, r.name)
                    for r in await self._releases.releases()
                    if is_release_of(r.name, job_id, attempt)
                }
            except GatewayUnavailable as exc:  # its pods, once made, are orphans: swept then
                log.warning("could not list Helm releases to cancel %s: %s", job_id, exc)
        for namespace, name in sorted(releases):
            await self._helm().uninstall(name, namespace)

    async def set_priority(self, job_id: JobId, attempt: int, priority: JobPriority) -> None:
        """Relabel the attempt's Jobs and pods (what Kueue reads when it makes a Workload) and
        set the priority of their Kueue Workloads, to the WorkloadPriorityClass's value."""
        with self._span("set priority", job_id, attempt):
            await self._set_priority(job_id, attempt, priority)

    async def _set_priority(self, job_id: JobId, attempt: int, priority: JobPriority) -> None:
        name = priority_class_name(priority)
        patch = {"metadata": {"labels": {PRIORITY_CLASS_LABEL: name}}}

        async def reprioritise(api: WorkloadApi) -> None:
            job_sets = await self._owned_job_sets(api, job_id, attempt)
            jobs = await self._owned(api, JOBS, job_id, attempt)
            pods = await self._owned(api, PODS, job_id, attempt)
            for job_set_obj in job_sets:
                await api.patch_object(_job_set_path(job_set_obj), patch)
            for job in jobs:
                await api.patch_object(_path(job), patch)
            for pod in pods:
                await api.patch_object(_pod_path(pod), patch)
            version = choose_version(await api.served_versions(KUEUE_GROUP))
            if version is None:
                return
            group = f"/apis/{version.api_version}"
            found = await api.get_object(f"{group}/workloadpriorityclasses/{name}")
            if found is None or not isinstance(found.get("value"), int):
                raise GatewayUnavailable(f"WorkloadPriorityClass {name} is not on the cluster yet")
            owners = {("Job", *located(j)) for j in jobs} | {("Pod", *located(p)) for p in pods}
            owners |= {("JobSet", *located(j)) for j in job_sets}
            workloads, _ = await api.list_objects(f"{group}/workloads")
            for workload in workloads:
                if workload_owner(workload) in owners:
                    namespace = located(workload)[0]
                    await api.patch_object(
                        f"{group}/namespaces/{namespace}/workloads/{located(workload)[1]}",
                        {"spec": {"priority": found["value"], "priorityClassName": name}},
                    )

        await self._call(reprioritise)

    async def workload_exited(
        self, job_id: JobId, attempt: int, *, succeeded: bool, reason: str
    ) -> bool:
        """Workloads here run their own processes: nothing to end."""
        return False

    async def benchmark_run(self, job_id: JobId, attempt: int) -> LoadRun | None:
        """What the attempt's `vllm bench serve` Job measured: the result its pod (found by the
        Job controller's job-name label) printed in its log."""

        async def read(api: WorkloadApi) -> str:
            jobs = await self._owned(api, JOBS, job_id, attempt)
            if not jobs:
                raise ValueError("its Job is gone from the cluster: no log to read the result from")
            namespace, name = located(jobs[0])
            pods, _ = await api.list_objects(
                f"/api/v1/namespaces/{namespace}/pods", label_selector=f"{JOB_NAME_LABEL}={name}"
            )
            pod = result_pod(pods)
            if pod is None:
                raise ValueError(f"Job {name} has no pod left to read the result from")
            pod_name = located(pod)[1]
            text = await api.pod_log(
                namespace=namespace,
                name=pod_name,
                container=CONTAINER_NAME,
                limit_bytes=LOG_LIMIT_BYTES,
            )
            if text is None:
                raise ValueError(f"pod {pod_name} is gone: no log to read the result from")
            return text

        return samples_from_log(await self._call(read))

    async def logs(
        self,
        job_id: JobId,
        attempt: int,
        *,
        pod: str | None = None,
        since: datetime | None = None,
        tail: int | None = None,
    ) -> list[LogLine]:
        """The log lines of the attempt's pods (found as `evict` finds them), or of `pod` among
        them, read one pod after another with timestamps (kueue/logs.py); a pod gone meanwhile,
        or whose container has not started, has none."""
        with self._span("logs", job_id, attempt):

            async def read(api: WorkloadApi) -> list[LogLine]:
                pods = await self._owned(api, PODS, job_id, attempt)
                per_pod = []
                for found in pods:
                    namespace, name = located(found)
                    if pod is not None and name != pod:
                        continue
                    text = await api.pod_log(
                        namespace=namespace,
                        name=name,
                        container=log_container(found),
                        since=since,
                        tail_lines=tail_lines(tail),
                        timestamps=True,
                    )
                    start = pod_start(found) or self._clock.now()
                    per_pod.append(log_lines(text or "", pod=name, start=start))
                return merged(per_pod, since=since)

            return await self._call(read)

    async def replica_metrics(
        self,
        *,
        namespace: str,
        deployment: str,
        jobs: Sequence[JobId],
        port: int,
        limit_bytes: int,
        timeout_seconds: float,
    ) -> list[Served | None]:
        """What the serving pod of each replica job (kueue/models.py `serving_pod`, among the
        pods labelled with the deployment's id) answers at /metrics on `port`, in `jobs` order,
        the pods read at once through the API server's pod proxy (api.py `proxy_get`): None for
        a replica without a serving pod, or whose pod answered nothing readable."""
        selector = f"{CLUSTER_ID_LABEL}={self._cluster_id},{DEPLOYMENT_LABEL}={deployment}"

        async def scrape(api: WorkloadApi, pod: Mapping[str, Any] | None) -> Served | None:
            if pod is None:
                return None
            meta = pod.get("metadata") or {}
            text = await api.proxy_get(
                namespace=namespace,
                kind="pods",
                name=str(meta.get("name")),
                port=port,
                path="metrics",
                limit_bytes=limit_bytes,
                timeout_seconds=timeout_seconds,
            )
            return None if text is None else Served(str(meta.get("uid") or meta.get("name")), text)

        async def read(api: WorkloadApi) -> list[Served | None]:
            pods, _ = await api.list_objects(
                f"/api/v1/namespaces/{namespace}/pods", label_selector=selector
            )
            ours = [pod for pod in pods if self._ours(pod)]
            chosen = [serving_pod(ours, job_id) for job_id in jobs]
            got = await asyncio.gather(
                *(scrape(api, pod) for pod in chosen), return_exceptions=True
            )
            for each in got:  # every read has ended (each is bounded): the first failure counts
                if isinstance(each, BaseException):
                    raise each
            return [each for each in got if not isinstance(each, BaseException)]

        with _tracer.start_as_current_span(
            "cluster read serving metrics",
            attributes={
                "budcluster.cluster_id": str(self._cluster_id),
                "budcluster.deployment_id": deployment,
            },
        ):
            return await self._call(read)

    async def pending_in_queue(self, namespace: str, queue: str) -> list[PendingWorkload] | None:
        """Kueue's order of the LocalQueue, from its visibility API; None when not served."""

        async def read(api: WorkloadApi) -> list[PendingWorkload] | None:
            version = visibility_version(await api.served_versions(VISIBILITY_GROUP))
            if version is None:
                return None
            summary = await api.get_object(
                pending_path(version, namespace, queue), query=[("limit", str(PAGE))]
            )
            return None if summary is None else pending_workloads(summary)

        return await self._call(read)

    async def nodes(self) -> list[Node]:
        async def read(api: WorkloadApi) -> list[Node]:
            raw, _ = await api.list_nodes()
            return [self._parse_node(obj, self._cluster_id) for obj in raw]

        return await self._call(read)

    # --- what runs ----------------------------------------------------------------------------

    def _ours(self, obj: Json) -> bool:
        found = labels(obj)
        return found.get(MANAGED_BY) == MANAGER and found.get(CLUSTER_ID_LABEL) == str(
            self._cluster_id
        )

    async def _workloads_path(self, api: WorkloadApi) -> str | None:
        version = choose_version(await api.served_versions(KUEUE_GROUP))
        return None if version is None else f"/apis/{version.api_version}/workloads"

    async def _state(self, api: WorkloadApi) -> tuple[Observed, dict[str, str], dict[str, str]]:
        """The whole picture, the resourceVersion each list was read at, and the paths."""
        state = Observed()
        mine = f"{CLUSTER_ID_LABEL}={self._cluster_id}"
        paths = {"job": JOBS, "pod": PODS}
        versions: dict[str, str] = {}
        jobs, versions["job"] = await api.list_objects(JOBS, label_selector=mine)
        pods, versions["pod"] = await api.list_objects(PODS, label_selector=mine)
        listed = [("job", jobs), ("pod", pods)]
        if JOBSET_API_VERSION.split("/")[1] in await api.served_versions(JOBSET_GROUP):
            paths["jobset"] = JOBSETS
            job_sets, versions["jobset"] = await api.list_objects(JOBSETS, label_selector=mine)
            listed.append(("jobset", job_sets))
        for kind, objs in listed:
            for obj in objs:
                if self._ours(obj):
                    state.put(kind, obj)
        workloads_path = await self._workloads_path(api)
        if workloads_path is not None:
            paths["workload"] = workloads_path
            workloads, versions["workload"] = await api.list_objects(workloads_path)
            for workload in workloads:
                state.put("workload", workload)
        return state, versions, paths

    async def list_workloads(self) -> list[WorkloadObservation]:
        state, *_ = await self._call(self._state)
        await self._dispatching(state, state.attempts())
        return state.observations(self._clock)

    async def _dispatching(self, state: Observed, keys: list[Key]) -> None:
        async def dispatch(api: WorkloadApi) -> None:
            await self._dispatch(api, state, keys)

        await self._call(dispatch)

    async def _dispatch(self, api: WorkloadApi, state: Observed, keys: list[Key]) -> None:
        """budcluster as MultiKueue's external dispatcher, on a manager (kueue/multikueue.py):
        nominate the member each of these attempts is to run on, once its Workload waits for
        a nomination. A conflict (the Workload changed meanwhile) is left to its next change;
        a refusal is logged, and the attempt waits on the manager until the next try."""
        for key in keys:
            owner = {"job": "Job", "jobset": "JobSet"}.get(key[0])
            if owner is None:
                continue
            obj = (state.jobs if owner == "Job" else state.job_sets).get((key[1], key[2]))
            workload = state.workloads.get((owner, key[1], key[2]))
            target = nomination(obj, workload)
            if target is None or workload is None:
                continue
            namespace, name = located(workload)
            path = f"/apis/{workload.get('apiVersion')}/namespaces/{namespace}/workloads/{name}"
            try:
                applied = await api.apply_status(
                    path, nomination_patch(workload, target), field_manager=FIELD_MANAGER
                )
            except ObjectConflict:
                continue
            except ClusterConnectionError as exc:
                if exc.kind in ("unreachable", "unauthorized"):
                    raise
                log.warning("could not nominate %s for workload %s: %s", target, name, exc.message)
                continue
            if applied is not None:
                state.put("workload", applied)

    async def watch(self) -> AsyncIterator[list[WorkloadObservation]]:
        state, versions, paths = await self._call(self._state)
        await self._dispatching(state, state.attempts())
        yield state.observations(self._clock)  # what changed since the caller's list
        api = await self._client()
        events: asyncio.Queue[tuple[str, str, Json] | BaseException] = asyncio.Queue()

        mine = f"{CLUSTER_ID_LABEL}={self._cluster_id}"  # Workloads carry no labels of ours

        async def pump(kind: str, path: str, version: str) -> None:
            selector = None if kind == "workload" else mine
            try:
                while True:
                    async for change, obj in api.watch_objects(
                        path, version, label_selector=selector
                    ):
                        version = str((obj.get("metadata") or {}).get("resourceVersion") or version)
                        await events.put((kind, change, obj))
            except BaseException as exc:  # ended: the consumer raises it
                await events.put(exc)
                raise

        pumps = [
            asyncio.create_task(pump(kind, path, versions[kind])) for kind, path in paths.items()
        ]
        ends = asyncio.get_running_loop().time() + self.relist_seconds
        try:
            while True:
                remaining = ends - asyncio.get_running_loop().time()
                try:
                    async with asyncio.timeout(max(min(remaining, HEARTBEAT_SECONDS), 0.0)):
                        item = await events.get()
                except TimeoutError:
                    if remaining > HEARTBEAT_SECONDS:
                        yield []  # quiet, and well
                        continue
                    return  # time to list again: lost jobs and orphans are found by a full list
                if isinstance(item, WatchExpired):
                    raise GatewayUnavailable("the watch expired: list again") from None
                if isinstance(item, ClusterConnectionError):
                    raise GatewayUnavailable(item.message) from None
                if isinstance(item, BaseException):
                    raise item
                kind, change, obj = item
                if kind != "workload" and not self._ours(obj):
                    continue
                changed = state.apply(kind, change, obj)
                await self._dispatching(state, changed)
                seen = [state.observation(key, self._clock) for key in changed]
                yield [o for o in seen if o is not None]
        finally:
            await cancel_and_wait(pumps)


def _path(job: Json) -> str:
    namespace, name = located(job)
    return f"/apis/batch/v1/namespaces/{namespace}/jobs/{name}"


def _job_set_path(job_set_obj: Json) -> str:
    namespace, name = located(job_set_obj)
    return f"/apis/{JOBSET_API_VERSION}/namespaces/{namespace}/jobsets/{name}"


def _pod_path(pod: Json) -> str:
    namespace, name = located(pod)
    return f"/api/v1/namespaces/{namespace}/pods/{name}"


def _run_on(workload: Workload, manifest: Json) -> Json:
    """A manifest for MultiKueue's manager says the member it is to run on (the nomination
    `_dispatch` writes once its Workload waits for one)."""
    if workload.run_on is not None:
        annotations = manifest["metadata"].setdefault("annotations", {})
        annotations[RUN_ON] = workload.run_on
    return manifest


async def _create_job_set(
    api: WorkloadApi, workload: Workload, cluster_id: ClusterId
) -> str | None:
    """Create the attempt's JobSet (a repeated hand-over finds it there and changes nothing);
    its uid. A cluster without the JobSet API refuses it for good."""
    try:
        manifest = _run_on(workload, job_set(workload, cluster_id=cluster_id))
    except ValueError as exc:
        raise ReleaseRejected(str(exc)) from None
    if JOBSET_API_VERSION.split("/")[1] not in await api.served_versions(JOBSET_GROUP):
        raise ReleaseRejected(
            f"a job of several pod sets runs as a JobSet, and the cluster serves no "
            f"{JOBSET_API_VERSION} (install JobSet, and enable Kueue's jobset integration)"
        )
    path = f"/apis/{JOBSET_API_VERSION}/namespaces/{workload.namespace}/jobsets"
    try:
        made = await api.create_object(path, manifest)
    except ObjectConflict:  # handed over before: nothing to change
        made = await api.get_object(f"{path}/{workload.name}") or {}
    uid = (made.get("metadata") or {}).get("uid")
    return str(uid) if uid else None


class KueueGateways:
    """One KueueGateway (one connection) per real cluster."""

    def __init__(
        self,
        *,
        connect: Connect,
        clock: Clock,
        parse_node: NodeParser = node_from_k8s,
        releases: ReleasesOf | None = None,
        benchmark_image: str = BENCHMARK_IMAGE,
    ) -> None:
        self._connect = connect
        self._clock = clock
        self._parse_node = parse_node
        self._releases = releases
        self._benchmark_image = benchmark_image
        self._gateways: dict[ClusterId, KueueGateway] = {}

    def for_cluster(self, cluster: Cluster) -> KueueGateway:
        gateway = self._gateways.get(cluster.id)
        if gateway is None:
            gateway = self._gateways[cluster.id] = KueueGateway(
                cluster.id,
                connect=self._connect,
                clock=self._clock,
                parse_node=self._parse_node,
                releases=self._releases(cluster.id) if self._releases else None,
                benchmark_image=self._benchmark_image,
            )
        return gateway

    async def forget(self, cluster_id: ClusterId) -> None:
        """The cluster is gone (or has a new kubeconfig): close its connection."""
        gateway = self._gateways.pop(cluster_id, None)
        if gateway is not None:
            await gateway.close()

    async def close(self) -> None:
        for cluster_id in list(self._gateways):
            await self.forget(cluster_id)
