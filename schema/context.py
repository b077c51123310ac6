"""What every resolver receives: the domain services, the caller, and per-request DataLoaders."""

from __future__ import annotations

import asyncio
import hashlib
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, TypeVar

from strawberry.dataloader import DataLoader
from strawberry.types import Info as StrawberryInfo

from domain.errors import Forbidden, Unauthenticated
from domain.model.addons import AddonInstall
from domain.model.cluster import Cluster
from domain.model.fleet import JobMove
from domain.model.ids import ClusterId, JobId
from domain.model.job import Job, JobEvent
from domain.model.principal import Principal
from domain.ports.clock import Clock
from domain.ports.limits import Bucket, RateLimiter
from domain.scheduling.cost import PriceNow
from domain.services.addons import AddonService
from domain.services.audit import AuditService
from domain.services.autoscaler import Autoscaler
from domain.services.benchmark_progress import BenchmarkProgressService
from domain.services.benchmarks import BenchmarkService
from domain.services.budgets import BudgetService
from domain.services.cluster_updates import ClusterUpdatesService
from domain.services.clusters import ClusterService
from domain.services.deployment_updates import DeploymentUpdatesService
from domain.services.deployments import DeploymentService
from domain.services.dispatch import Dispatcher
from domain.services.drains import DrainService
from domain.services.fleets import FleetService
from domain.services.jobs import JobService
from domain.services.logs import LogService
from domain.services.queue_positions import PositionQuery, QueuePosition, QueuePositionService
from domain.services.quotas import ClusterQuotas, QuotaService
from domain.services.refusals import RefusalRecords
from domain.services.registry import ClusterRegistry
from domain.services.reservations import ReservationService
from domain.services.schedule_updates import ScheduleUpdatesService
from domain.services.spend import SpendService
from domain.services.tenant_secrets import SecretService
from domain.services.timeline import TimelineService
from domain.services.tokens import TokenService
from domain.services.updates import UpdatesService
from schema.fairness import TenantShares
from schema.types.errors import UserInputError


@dataclass(frozen=True)
class Rate:
    capacity: float
    per_minute: float

    def bucket(self, key: str) -> Bucket:
        return Bucket(key, self.capacity, self.per_minute / 60)


class Waiting:
    """Callers told to wait (RATE_LIMITED), until when, in this process: refused again before
    their next document is even parsed. At most MAX_KEYS, the longest known first to go."""

    MAX_KEYS = 10_000

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._until: OrderedDict[str, tuple[float, Principal | None]] = OrderedDict()

    def tell(self, key: str, seconds: float, principal: Principal | None = None) -> None:
        """`key` (and `principal`, who it was, for the records of what is refused meanwhile)
        must wait `seconds`."""
        self._until.pop(key, None)
        self._until[key] = (self._clock.now().timestamp() + min(seconds, 3600.0), principal)
        while len(self._until) > self.MAX_KEYS:
            self._until.popitem(last=False)

    def remaining(self, key: str) -> float:
        """Seconds `key` still has to wait (0.0: none)."""
        found = self._until.get(key)
        if found is None:
            return 0.0
        left = found[0] - self._clock.now().timestamp()
        if left <= 0:
            del self._until[key]
            return 0.0
        return left

    def who(self, key: str) -> Principal | None:
        """The principal `key` was told to wait as, if it had one."""
        found = self._until.get(key)
        return found[1] if found is not None else None


def presented_key(bearer: str) -> str:
    """What a presented token is remembered by while its caller must wait (never the token)."""
    return "presented:" + hashlib.sha256(bearer.encode("utf-8", "replace")).hexdigest()[:32]


@dataclass(frozen=True)
class RequestLimits:
    """What one operation may cost (schema/cost.py), the buckets callers pay it from (their
    token's, or their address's without one, and their tenant's), and what is refused
    before it runs is recorded in (`refusals`)."""

    limiter: RateLimiter
    budget: int
    caller: Rate = Rate(50_000, 60_000)
    tenant: Rate = Rate(150_000, 180_000)
    anonymous_introspection: bool = True
    waiting: Waiting | None = None
    refusals: RefusalRecords | None = None


OperationObserver = Callable[[str | None, str, float, Sequence[str]], None]
"""(operation name, query or mutation, seconds, the error codes it answered with)."""


@dataclass(frozen=True)
class ApiServices:
    jobs: JobService
    clusters: ClusterService
    quotas: QuotaService
    reservations: ReservationService
    tokens: TokenService
    updates: UpdatesService
    timeline: TimelineService
    schedule_updates: ScheduleUpdatesService
    registry: ClusterRegistry
    cluster_updates: ClusterUpdatesService
    queue_positions: QueuePositionService
    deployments: DeploymentService
    autoscaler: Autoscaler
    benchmarks: BenchmarkService
    deployment_updates: DeploymentUpdatesService
    benchmark_progress: BenchmarkProgressService
    limits: RequestLimits
    audit: AuditService
    spend: SpendService
    budgets: BudgetService
    fleets: FleetService
    dispatcher: Dispatcher
    drains: DrainService
    logs: LogService
    addons: AddonService
    secrets: SecretService
    observe_operation: OperationObserver | None = None
    """Told of each query and mutation when it ends (the wiring records metrics)."""
    shares: TenantShares | None = None
    """Each tenant's share of this process: heavy operations at once, open subscriptions."""


K = TypeVar("K")
V = TypeVar("V")


class SharedLoader(DataLoader[K, V]):
    """A DataLoader whose answers outlive a cancelled caller. Fields asking for one key share
    one future; when a field fails, graphql-core cancels its siblings, and a sibling awaiting
    that future itself would cancel it for every other field waiting on the key (found by the
    fuzz test: a whole request ended in CancelledError). Each caller awaits a shield of it."""

    def load(self, key: K) -> Awaitable[V]:
        return asyncio.shield(super().load(key))


class Loaders:
    """Batch and cache lookups for one request (or one subscription message)."""

    def __init__(self, services: ApiServices, principal: Principal | None) -> None:
        lookups = _Lookups(services, principal)
        self.cluster: DataLoader[ClusterId, Cluster | None] = SharedLoader(lookups.clusters)
        self.job_events: DataLoader[JobId, list[JobEvent]] = SharedLoader(lookups.job_events)
        self.job_moves: DataLoader[JobId, list[JobMove]] = SharedLoader(lookups.job_moves)
        self.job: DataLoader[JobId, Job | None] = SharedLoader(lookups.jobs)
        self.quotas: DataLoader[ClusterId, ClusterQuotas] = SharedLoader(lookups.quotas)
        self.queue_position: DataLoader[PositionQuery, QueuePosition | None] = SharedLoader(
            lookups.queue_positions
        )
        self.prices: DataLoader[ClusterId, list[PriceNow]] = SharedLoader(lookups.prices)
        self.cost_so_far: DataLoader[Job, Decimal | None] = SharedLoader(lookups.costs_so_far)
        self.addons: DataLoader[ClusterId, list[AddonInstall]] = SharedLoader(lookups.addons)


class _Lookups:
    """What the loaders call, apart from them: a loader calling a method of the Loaders holding
    it made a reference cycle for every request and every subscription message, freed only by a
    full garbage collection (which the API process keeps rare: budcluster/collector.py)."""

    def __init__(self, services: ApiServices, principal: Principal | None) -> None:
        self._services = services
        self._principal = principal

    async def clusters(self, ids: list[ClusterId]) -> list[Cluster | None]:
        found = await self._services.clusters.get_many(ids)
        return [found.get(i) for i in ids]

    async def prices(self, ids: list[ClusterId]) -> list[list[PriceNow]]:
        return await self._services.clusters.prices_now(ids)

    async def addons(self, ids: list[ClusterId]) -> list[list[AddonInstall]]:
        found = await self._services.addons.installs(ids)
        return [found.get(i, []) for i in ids]

    async def costs_so_far(self, jobs: list[Job]) -> list[Decimal | None]:
        return await self._services.clusters.costs_so_far(jobs)

    async def quotas(self, ids: list[ClusterId]) -> list[ClusterQuotas]:
        if self._principal is None:
            raise Unauthenticated()
        try:
            found = await self._services.quotas.overview(self._principal, ids)
        except Forbidden as exc:
            raise UserInputError(exc.message, code="FORBIDDEN") from None
        return [found[i] for i in ids]

    async def queue_positions(self, queries: list[PositionQuery]) -> list[QueuePosition | None]:
        return await self._services.queue_positions.positions(queries)

    async def jobs(self, ids: list[JobId]) -> list[Job | None]:
        if self._principal is None:
            return [None for _ in ids]
        found = {j.id: j for j in await self._services.jobs.get_many(self._principal, ids)}
        return [found.get(i) for i in ids]

    async def job_moves(self, ids: list[JobId]) -> list[list[JobMove]]:
        if self._principal is None:
            return [[] for _ in ids]
        found = await self._services.jobs.moves(self._principal, ids)
        return [found.get(i, []) for i in ids]

    async def job_events(self, ids: list[JobId]) -> list[list[JobEvent]]:
        if self._principal is None:
            return [[] for _ in ids]
        found = await self._services.jobs.events(self._principal, ids)
        return [found.get(i, []) for i in ids]


@dataclass
class Context:
    services: ApiServices
    principal: Principal | None = None
    auth_error: str | None = None
    request: Any = None
    response: Any = None
    transport: str = "http"
    """`http` or `websocket`: subscriptions are served over graphql-transport-ws only."""
    connection_params: Any = None
    """What a WebSocket client sent in connection_init (set by Strawberry)."""
    bearer: str | None = field(default=None, repr=False)
    """The token the caller presented: a WebSocket's is checked again for every operation."""
    cost: int | None = None
    """What the operation under way costs (schema/cost.py), once Admission has priced it."""
    loaders: Loaders = field(init=False)

    def __post_init__(self) -> None:
        self.refresh_loaders()

    def refresh_loaders(self) -> None:
        """Fresh caches: a long-lived subscription must not serve yesterday's data."""
        self.loaders = Loaders(self.services, self.principal)

    async def recheck(self) -> None:
        """Authenticate the presented token again (raises Unauthenticated, and forgets the
        principal, once it is revoked or expired)."""
        try:
            self.principal = await self.services.tokens.authenticate(self.bearer)
        except Unauthenticated:
            self.principal = None
            raise

    def rate_key(self) -> str:
        """Whose bucket an operation is paid from: the token's, else the client address's."""
        if self.principal is not None and self.principal.token_id is not None:
            return f"token:{self.principal.token_id}"
        return f"address:{self.client_address()}"

    def rate_buckets(self) -> list[Bucket]:
        """Every bucket an operation is paid from: the caller's (`rate_key`) and, for an
        authenticated caller, its tenant's."""
        limits = self.services.limits
        buckets = [limits.caller.bucket(self.rate_key())]
        if self.principal is not None:
            buckets.append(limits.tenant.bucket(f"tenant:{self.principal.tenant_id}"))
        return buckets

    def waiting_keys(self) -> list[str]:
        """The keys a caller told to wait is remembered by: its bucket's, and the token it
        presented (hashed), which the transport can check before authenticating anyone."""
        keys = [self.rate_key()]
        if self.bearer:
            keys.append(presented_key(self.bearer))
        return keys

    def client_address(self) -> str:
        client = getattr(self.request, "client", None)
        return str(client.host) if client and client.host else "unknown"

    def authenticated(self) -> Principal:
        if self.principal is None:
            raise Unauthenticated(self.auth_error or "a valid bearer token is required")
        return self.principal


Info = StrawberryInfo[Context, None]
