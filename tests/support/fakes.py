"""In-memory fakes of every port, for the domain's unit tests.

They keep the contracts the real adapters keep where the domain relies on them: the unit of work
scopes job reads to its tenant, writes nothing until `commit`, and numbers events per cluster; the
task queue refuses a key that is already queued; the hub hands events to subscribers in order with
a bounded buffer.
"""

from __future__ import annotations

import asyncio
import collections
import copy
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from types import TracebackType
from typing import Any, Self

from domain.errors import DuplicateIdempotencyKey
from domain.model.cluster import Cluster, ClusterStatus, Node, NodeType, Platform
from domain.model.ids import ClusterId, JobId, NodeId, TenantId, TokenId
from domain.model.job import Job, JobChanged, JobEvent, JobPriority
from domain.model.principal import ApiToken
from domain.ports import (
    JobCursor,
    JobFilter,
    JobPage,
    Overflowed,
    StoredEvent,
    TenantScope,
    Workload,
    WorkloadObservation,
)

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


class FakeClock:
    def __init__(self, start: datetime = T0) -> None:
        self.current = start
        self.slept: list[float] = []

    def now(self) -> datetime:
        return self.current

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.current += timedelta(seconds=seconds)
        await asyncio.sleep(0)

    def advance(self, seconds: float) -> None:
        self.current += timedelta(seconds=seconds)


@dataclass
class Store:
    """What the fake database holds."""

    jobs: dict[JobId, Job] = field(default_factory=dict)
    history: list[JobEvent] = field(default_factory=list)
    clusters: dict[ClusterId, Cluster] = field(default_factory=dict)
    tokens: dict[TokenId, ApiToken] = field(default_factory=dict)
    events: dict[ClusterId, list[StoredEvent]] = field(
        default_factory=lambda: collections.defaultdict(list)
    )
    sequences: dict[ClusterId, int] = field(default_factory=lambda: collections.defaultdict(int))
    retained_after: dict[ClusterId, int] = field(
        default_factory=lambda: collections.defaultdict(int)
    )
    commits: int = 0


class FakeJobRepository:
    def __init__(self, uow: FakeUnitOfWork) -> None:
        self._uow = uow

    def _visible(self, job: Job) -> bool:
        tenant = self._uow.scope.tenant_id
        return tenant is None or job.tenant_id == tenant

    def _load(self, job: Job) -> Job:
        return self._uow.track(copy.deepcopy(job))

    async def add(self, job: Job) -> None:
        if job.idempotency_key is not None and any(
            j.tenant_id == job.tenant_id and j.idempotency_key == job.idempotency_key
            for j in [*self._uow.store.jobs.values(), *self._uow.pending_new.values()]
        ):
            raise DuplicateIdempotencyKey(job.idempotency_key)
        self._uow.pending_new[job.id] = job
        self._uow.track(job)

    async def get(self, job_id: JobId, *, for_update: bool = False) -> Job | None:
        if job_id in self._uow.seen:
            return self._uow.seen[job_id]
        job = self._uow.store.jobs.get(job_id)
        return self._load(job) if job is not None and self._visible(job) else None

    async def get_by_idempotency_key(self, tenant_id: TenantId, key: str) -> Job | None:
        for job in self._uow.store.jobs.values():
            if job.tenant_id == tenant_id and job.idempotency_key == key and self._visible(job):
                return self._load(job)
        return None

    def _matching(self, job_filter: JobFilter) -> list[Job]:
        return [
            j for j in self._uow.store.jobs.values() if self._visible(j) and job_filter.matches(j)
        ]

    async def page(
        self, job_filter: JobFilter, *, first: int, after: JobCursor | None = None
    ) -> JobPage:
        jobs = sorted(self._matching(job_filter), key=lambda j: (j.created_at, j.id), reverse=True)
        if after is not None:
            jobs = [j for j in jobs if (j.created_at, j.id) < (after.created_at, after.job_id)]
        return JobPage([self._load(j) for j in jobs[:first]], len(jobs) > first)

    async def list_for_cluster(
        self, cluster_id: ClusterId, job_filter: JobFilter, *, limit: int
    ) -> list[Job]:
        jobs = [j for j in self._matching(job_filter) if j.cluster_id == cluster_id]
        jobs.sort(key=lambda j: (j.updated_at, j.id), reverse=True)
        return [self._load(j) for j in jobs[:limit]]

    async def active_on_cluster(self, cluster_id: ClusterId) -> list[Job]:
        return [
            self._load(j)
            for j in self._uow.store.jobs.values()
            if j.cluster_id == cluster_id and j.status.is_active and self._visible(j)
        ]

    async def due_for_submission(self, before: datetime, *, limit: int) -> list[Job]:
        due = [
            j
            for j in self._uow.store.jobs.values()
            if j.status.value == "PENDING"
            and ((j.next_attempt_at or j.updated_at) <= before)
            and self._visible(j)
        ]
        return [self._load(j) for j in due[:limit]]

    async def events(self, job_ids: Sequence[JobId]) -> dict[JobId, list[JobEvent]]:
        result: dict[JobId, list[JobEvent]] = {}
        for job_id in job_ids:
            job = self._uow.store.jobs.get(job_id)
            if job is None or not self._visible(job):
                result[job_id] = []
                continue
            result[job_id] = [e for e in self._uow.store.history if e.job_id == job_id]
        return result


class FakeClusterRepository:
    def __init__(self, store: Store) -> None:
        self._store = store

    async def add(self, cluster: Cluster) -> None:
        self._store.clusters[cluster.id] = cluster

    async def get(self, cluster_id: ClusterId) -> Cluster | None:
        return self._store.clusters.get(cluster_id)

    async def get_many(self, cluster_ids: Sequence[ClusterId]) -> dict[ClusterId, Cluster]:
        return {c: self._store.clusters[c] for c in cluster_ids if c in self._store.clusters}

    async def get_by_name(self, name: str) -> Cluster | None:
        return next((c for c in self._store.clusters.values() if c.name == name), None)

    async def all(self) -> list[Cluster]:
        return sorted(self._store.clusters.values(), key=lambda c: c.name)

    async def replace_nodes(self, cluster_id: ClusterId, nodes: Sequence[Node]) -> None:
        self._store.clusters[cluster_id].nodes = list(nodes)


class FakeTokenRepository:
    def __init__(self, store: Store) -> None:
        self._store = store

    async def add(self, token: ApiToken) -> None:
        self._store.tokens[token.id] = token

    async def get(self, token_id: TokenId) -> ApiToken | None:
        return self._store.tokens.get(token_id)

    async def revoke(self, token_id: TokenId, at: datetime) -> bool:
        token = self._store.tokens.get(token_id)
        if token is None or token.revoked:
            return False
        token.revoked_at = at
        return True

    async def count(self) -> int:
        return len(self._store.tokens)


class FakeUnitOfWork:
    def __init__(self, store: Store, scope: TenantScope) -> None:
        self.store = store
        self.scope = scope
        self.seen: dict[JobId, Job] = {}
        self.pending_new: dict[JobId, Job] = {}
        self.committed = False
        self.jobs = FakeJobRepository(self)
        self.clusters = FakeClusterRepository(store)
        self.tokens = FakeTokenRepository(store)

    def track(self, job: Job) -> Job:
        return self.seen.setdefault(job.id, job)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.rollback()

    async def current_sequence(self, cluster_id: ClusterId) -> int:
        return self.store.sequences[cluster_id]

    async def rollback(self) -> None:
        self.seen.clear()
        self.pending_new.clear()

    async def commit(self) -> list[StoredEvent]:
        changes: list[JobChanged] = []
        for job in self.seen.values():
            changes.extend(job.changes)
            job.changes = []
            self.store.jobs[job.id] = copy.deepcopy(job)
        stored: list[StoredEvent] = []
        for change in changes:
            cluster = change.job.cluster_id
            self.store.sequences[cluster] += 1
            at = change.transition.at if change.transition else change.job.updated_at
            event = StoredEvent(cluster, self.store.sequences[cluster], change, at)
            self.store.events[cluster].append(event)
            stored.append(event)
            if change.transition is not None:
                self.store.history.append(change.transition)
        self.pending_new.clear()
        self.committed = True
        self.store.commits += 1
        return stored


class FakeUnitOfWorkFactory:
    def __init__(self, store: Store | None = None) -> None:
        self.store = store or Store()
        self.opened: list[FakeUnitOfWork] = []

    def __call__(self, scope: TenantScope, *, consistent_read: bool = False) -> FakeUnitOfWork:
        uow = FakeUnitOfWork(self.store, scope)
        self.opened.append(uow)
        return uow


@dataclass
class Enqueued:
    task: str
    key: str
    defer_until: datetime | None
    kwargs: dict[str, Any]


class FakeTaskQueue:
    def __init__(self) -> None:
        self.enqueued: list[Enqueued] = []

    async def enqueue(
        self, task: str, *, key: str, defer_until: datetime | None = None, **kwargs: Any
    ) -> bool:
        if any(e.key == key for e in self.enqueued):
            return False
        self.enqueued.append(Enqueued(task, key, defer_until, kwargs))
        return True

    def names(self) -> list[str]:
        return [e.task for e in self.enqueued]


class FakePublisher:
    def __init__(self) -> None:
        self.published: list[StoredEvent] = []

    async def publish(self, events: Sequence[StoredEvent]) -> None:
        self.published.extend(events)


class FakeGateway:
    def __init__(self) -> None:
        self.submitted: list[Workload] = []
        self.cancelled: list[tuple[JobId, int]] = []
        self.priorities: list[tuple[JobId, int, JobPriority]] = []
        self.workloads: list[WorkloadObservation] = []
        self.stream: asyncio.Queue[WorkloadObservation] = asyncio.Queue()
        self.node_list: list[Node] = []
        self.fail_with: Exception | None = None

    async def submit(self, workload: Workload) -> None:
        if self.fail_with:
            raise self.fail_with
        if all(w.name != workload.name for w in self.submitted):
            self.submitted.append(workload)

    async def cancel(self, job_id: JobId, attempt: int) -> None:
        if self.fail_with:
            raise self.fail_with
        self.cancelled.append((job_id, attempt))

    async def set_priority(self, job_id: JobId, attempt: int, priority: JobPriority) -> None:
        self.priorities.append((job_id, attempt, priority))

    async def nodes(self) -> list[Node]:
        return list(self.node_list)

    async def list_workloads(self) -> list[WorkloadObservation]:
        return list(self.workloads)

    async def watch(self) -> AsyncIterator[WorkloadObservation]:
        while True:
            yield await self.stream.get()


class FakeGatewayFactory:
    def __init__(self, gateway: FakeGateway | None = None) -> None:
        self.gateway = gateway or FakeGateway()

    def for_cluster(self, cluster: Cluster) -> FakeGateway:
        return self.gateway


class FakeHasher:
    def hash(self, secret: str) -> str:
        return "fake$" + secret[::-1]

    def verify(self, secret: str, hashed: str) -> bool:
        return self.hash(secret) == hashed


class FakeLease:
    def __init__(self, grant: bool = True) -> None:
        self.grant = grant
        self.held: set[str] = set()

    async def acquire(self, name: str, *, ttl_seconds: float) -> bool:
        if self.grant:
            self.held.add(name)
        return self.grant

    async def renew(self, name: str, *, ttl_seconds: float) -> bool:
        return name in self.held

    async def release(self, name: str) -> None:
        self.held.discard(name)


class FakeEventLog:
    def __init__(self, store: Store) -> None:
        self.store = store

    async def current_sequence(self, cluster_id: ClusterId) -> int:
        return self.store.sequences[cluster_id]

    async def retained_after(self, cluster_id: ClusterId) -> int:
        return self.store.retained_after[cluster_id]

    async def read_after(
        self, cluster_id: ClusterId, after: int, *, limit: int
    ) -> list[StoredEvent]:
        floor = self.store.retained_after[cluster_id]
        events = [e for e in self.store.events[cluster_id] if e.sequence > max(after, floor)]
        return events[:limit]


class FakeSubscription:
    def __init__(self, hub: FakeHub, buffer: int) -> None:
        self.hub = hub
        self.buffer = buffer
        self.queue: collections.deque[StoredEvent | Overflowed] = collections.deque()
        self.ready = asyncio.Event()
        self.closed = False

    def push(self, event: StoredEvent) -> None:
        if len(self.queue) >= self.buffer:
            self.queue.clear()
            self.queue.append(Overflowed())
        else:
            self.queue.append(event)
        self.ready.set()

    def __aiter__(self) -> AsyncIterator[StoredEvent | Overflowed]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[StoredEvent | Overflowed]:
        while not self.closed:
            if self.queue:
                yield self.queue.popleft()
            else:
                self.ready.clear()
                await self.ready.wait()

    async def close(self) -> None:
        self.closed = True
        self.hub.subscriptions.remove(self)


class FakeHub:
    def __init__(self) -> None:
        self.subscriptions: list[FakeSubscription] = []

    async def subscribe(self, cluster_id: ClusterId, *, buffer: int) -> FakeSubscription:
        sub = FakeSubscription(self, buffer)
        self.subscriptions.append(sub)
        return sub

    def deliver(self, events: Sequence[StoredEvent]) -> None:
        for sub in self.subscriptions:
            for event in events:
                sub.push(event)


def make_cluster(
    cluster_id: ClusterId,
    *,
    name: str = "sim",
    nodes: Sequence[tuple[str, int]] = (
        ("nvidia-a100-80gb", 8),
        ("nvidia-a100-80gb", 8),
        ("nvidia-tesla-t4", 4),
    ),
    status: ClusterStatus = ClusterStatus.AVAILABLE,
) -> Cluster:
    import uuid

    cluster = Cluster(
        id=cluster_id,
        name=name,
        platform=Platform.SIMULATED,
        status=status,
        created_at=T0,
        updated_at=T0,
    )
    cluster.nodes = [
        Node(
            id=NodeId(uuid.uuid4()),
            cluster_id=cluster_id,
            name=f"node-{i}",
            node_type=NodeType.GPU,
            gpu_type=gpu_type,
            gpu_count=count,
            cpu_cores=64,
            memory_gb=512,
        )
        for i, (gpu_type, count) in enumerate(nodes)
    ]
    return cluster
