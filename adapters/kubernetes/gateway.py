"""The ClusterGateway of a real cluster: jobs as suspended batch/v1 Jobs that Kueue admits.

`submit` creates the Job (domain/kueue/jobs.py renders it: suspended, with the queue and
priority-class labels Kueue reads); its name is deterministic per attempt, so a retried hand-over
finds it there and changes nothing. `cancel` deletes the attempt's Jobs (their pods and Kueue
Workload go with them); `set_priority` relabels them. What runs is read back from the Jobs and
their Kueue Workloads: `list_workloads` lists both and reports each attempt's whole state
(`observe`), `watch` follows both collections from the lists' resourceVersions and reports an
attempt again whenever its Job or Workload changes (it starts with a list of its own, and
reports that first: what changed since the caller's list is not lost). A cluster that does not
answer raises GatewayUnavailable (the caller backs off); an expired watch ends it too, and the
caller lists again; after RELIST_SECONDS the watch ends by itself, for a fresh full list (lost
jobs and orphans are found by one).

One connection per cluster (`KueueGateways` keeps them), opened on first use through the
registry, which opens the sealed kubeconfig only in memory; `close` closes them all.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

from domain.errors import ClusterConnectionError
from domain.kueue.jobs import batch_job, job_identity, observe, owner_job_name
from domain.kueue.objects import (
    CLUSTER_ID_LABEL,
    KUEUE_GROUP,
    MANAGED_BY,
    MANAGER,
    PRIORITY_CLASS_LABEL,
    choose_version,
    priority_class_name,
)
from domain.model.cluster import Cluster, Node
from domain.model.ids import ClusterId, JobId
from domain.model.job import JobPriority
from domain.ports import (
    Clock,
    ClusterApi,
    GatewayUnavailable,
    ObjectConflict,
    WatchExpired,
    Workload,
    WorkloadObservation,
)

log = logging.getLogger(__name__)

Json = dict[str, Any]
T = TypeVar("T")
JOBS = "/apis/batch/v1/jobs"
RELIST_SECONDS = 300.0
"""A watch ends after this long, and the caller lists again (the periodic full picture)."""
Connect = Callable[[ClusterId], Awaitable[ClusterApi]]
NodeParser = Callable[[Json, ClusterId], Node]


class KueueGateway:
    def __init__(
        self, cluster_id: ClusterId, *, connect: Connect, clock: Clock, parse_node: NodeParser
    ) -> None:
        self._cluster_id = cluster_id
        self._connect = connect
        self._clock = clock
        self._parse_node = parse_node
        self._api: ClusterApi | None = None
        self._opening = asyncio.Lock()
        self.relist_seconds = RELIST_SECONDS

    # --- the connection -----------------------------------------------------------------------

    async def _client(self) -> ClusterApi:
        async with self._opening:
            if self._api is None:
                try:
                    self._api = await self._connect(self._cluster_id)
                except ClusterConnectionError as exc:
                    raise GatewayUnavailable(exc.message) from None
            return self._api

    async def _call(self, work: Callable[[ClusterApi], Awaitable[T]]) -> T:
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

    async def submit(self, workload: Workload) -> None:
        manifest = batch_job(workload, cluster_id=self._cluster_id)
        path = f"/apis/batch/v1/namespaces/{workload.namespace}/jobs"

        async def create(api: ClusterApi) -> None:
            with contextlib.suppress(ObjectConflict):  # handed over before: nothing to change
                await api.create_object(path, manifest)

        await self._call(create)

    async def _jobs_of(self, api: ClusterApi, job_id: JobId, attempt: int) -> list[Json]:
        selector = f"bud.ai/job-id={job_id},bud.ai/attempt={attempt}"
        listed, _ = await api.list_objects(JOBS, label_selector=selector)
        return [j for j in listed if job_identity(j) == (job_id, attempt) and self._ours(j)]

    async def cancel(self, job_id: JobId, attempt: int) -> None:
        async def delete(api: ClusterApi) -> None:
            for job in await self._jobs_of(api, job_id, attempt):
                await api.delete_object(_path(job))

        await self._call(delete)

    async def set_priority(self, job_id: JobId, attempt: int, priority: JobPriority) -> None:
        patch = {"metadata": {"labels": {PRIORITY_CLASS_LABEL: priority_class_name(priority)}}}

        async def relabel(api: ClusterApi) -> None:
            for job in await self._jobs_of(api, job_id, attempt):
                await api.patch_object(_path(job), patch)

        await self._call(relabel)

    async def nodes(self) -> list[Node]:
        async def read(api: ClusterApi) -> list[Node]:
            raw, _ = await api.list_nodes()
            return [self._parse_node(obj, self._cluster_id) for obj in raw]

        return await self._call(read)

    # --- what runs ----------------------------------------------------------------------------

    def _ours(self, obj: Json) -> bool:
        labels = (obj.get("metadata") or {}).get("labels") or {}
        return labels.get(MANAGED_BY) == MANAGER and labels.get(CLUSTER_ID_LABEL) == str(
            self._cluster_id
        )

    async def _workloads_path(self, api: ClusterApi) -> str | None:
        version = choose_version(await api.served_versions(KUEUE_GROUP))
        return None if version is None else f"/apis/{version.api_version}/workloads"

    async def _state(self, api: ClusterApi) -> tuple[_State, str, str, str | None]:
        state = _State()
        jobs, jobs_version = await api.list_objects(
            JOBS, label_selector=f"{CLUSTER_ID_LABEL}={self._cluster_id}"
        )
        for job in jobs:
            if self._ours(job):
                state.jobs[_key(job)] = job
        workloads_path = await self._workloads_path(api)
        workloads_version = ""
        if workloads_path is not None:
            workloads, workloads_version = await api.list_objects(workloads_path)
            for workload in workloads:
                state.put_workload(workload)
        return state, jobs_version, workloads_version, workloads_path

    async def list_workloads(self) -> list[WorkloadObservation]:
        state, *_ = await self._call(self._state)
        return state.observations(self._clock)

    async def watch(self) -> AsyncIterator[WorkloadObservation]:
        state, jobs_version, workloads_version, workloads_path = await self._call(self._state)
        for listed in state.observations(self._clock):  # what changed since the caller's list
            yield listed
        api = await self._client()
        events: asyncio.Queue[tuple[str, str, Json] | BaseException] = asyncio.Queue()

        async def pump(kind: str, path: str, version: str) -> None:
            try:
                while True:
                    async for change, obj in api.watch_objects(path, version):
                        version = str((obj.get("metadata") or {}).get("resourceVersion") or version)
                        await events.put((kind, change, obj))
            except BaseException as exc:  # ended: the consumer raises it
                await events.put(exc)
                raise

        pumps = [asyncio.create_task(pump("job", JOBS, jobs_version))]
        if workloads_path is not None:
            pumps.append(asyncio.create_task(pump("workload", workloads_path, workloads_version)))
        ends = asyncio.get_running_loop().time() + self.relist_seconds
        try:
            while True:
                remaining = ends - asyncio.get_running_loop().time()
                try:
                    item = await asyncio.wait_for(events.get(), max(remaining, 0.0))
                except TimeoutError:
                    return  # time to list again: lost jobs and orphans are found by a full list
                if isinstance(item, WatchExpired):
                    raise GatewayUnavailable("the watch expired: list again") from None
                if isinstance(item, ClusterConnectionError):
                    raise GatewayUnavailable(item.message) from None
                if isinstance(item, BaseException):
                    raise item
                kind, change, obj = item
                key = state.apply(kind, change, obj, ours=self._ours)
                if key is not None:
                    seen = state.observation(key, self._clock)
                    if seen is not None:
                        yield seen
        finally:
            for task in pumps:
                task.cancel()
            for task in pumps:
                with contextlib.suppress(BaseException):
                    await task


class _State:
    """The Jobs (by namespace and name) and the Kueue Workloads owned by them."""

    def __init__(self) -> None:
        self.jobs: dict[tuple[str, str], Json] = {}
        self.workloads: dict[tuple[str, str], Json] = {}
        self.gone: dict[tuple[str, str], Json] = {}
        """Jobs deleted since they were seen: reported once as DELETED."""

    def put_workload(self, workload: Json) -> tuple[str, str] | None:
        owner = owner_job_name(workload)
        if owner is None:
            return None
        key = (str((workload.get("metadata") or {}).get("namespace") or ""), owner)
        self.workloads[key] = workload
        return key

    def apply(
        self, kind: str, change: str, obj: Json, *, ours: Callable[[Json], bool]
    ) -> tuple[str, str] | None:
        if kind == "workload":
            key = self.put_workload(obj) if change != "DELETED" else None
            if change == "DELETED" and (owner := owner_job_name(obj)) is not None:
                key = (str((obj.get("metadata") or {}).get("namespace") or ""), owner)
                self.workloads.pop(key, None)
            return key if key in self.jobs else None
        if not ours(obj):
            return None
        key = _key(obj)
        if change == "DELETED":
            self.gone[key] = self.jobs.pop(key, obj)
        else:
            self.jobs[key] = obj
        return key

    def observation(self, key: tuple[str, str], clock: Clock) -> WorkloadObservation | None:
        if key in self.gone:  # its last state, as being deleted (a finished one stays finished)
            job = self.gone.pop(key)
            metadata = {"deletionTimestamp": clock.now().isoformat(), **(job.get("metadata") or {})}
            workload = self.workloads.pop(key, None)
            return observe({**job, "metadata": metadata}, workload, observed_at=clock.now())
        return observe(self.jobs.get(key), self.workloads.get(key), observed_at=clock.now())

    def observations(self, clock: Clock) -> list[WorkloadObservation]:
        found = (self.observation(key, clock) for key in sorted(self.jobs))
        return [seen for seen in found if seen is not None]


def _key(obj: Json) -> tuple[str, str]:
    metadata = obj.get("metadata") or {}
    return str(metadata.get("namespace") or ""), str(metadata.get("name") or "")


def _path(job: Json) -> str:
    namespace, name = _key(job)
    return f"/apis/batch/v1/namespaces/{namespace}/jobs/{name}"


class KueueGateways:
    """One KueueGateway (one connection) per real cluster."""

    def __init__(self, *, connect: Connect, clock: Clock, parse_node: NodeParser) -> None:
        self._connect = connect
        self._clock = clock
        self._parse_node = parse_node
        self._gateways: dict[ClusterId, KueueGateway] = {}

    def for_cluster(self, cluster: Cluster) -> KueueGateway:
        gateway = self._gateways.get(cluster.id)
        if gateway is None:
            gateway = self._gateways[cluster.id] = KueueGateway(
                cluster.id, connect=self._connect, clock=self._clock, parse_node=self._parse_node
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
