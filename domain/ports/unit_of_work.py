"""One transaction over every repository, and whose data it may see.

Tenant isolation lives here: a unit of work is opened for a `TenantScope`, and every job read
through it is limited to that tenant by the repository itself, so a resolver cannot forget it.
The events the changed entities recorded are written with the same commit (the outbox).
"""

from __future__ import annotations

from dataclasses import dataclass
from types import TracebackType
from typing import Protocol, Self

from domain.model.events import ClusterChanged, ServingChange
from domain.model.ids import ClusterId, TenantId
from domain.model.principal import Principal
from domain.model.timeline import Timeline
from domain.ports.events import StoredEvent
from domain.ports.repositories import (
    AddonRepository,
    AuditRepository,
    BenchmarkRepository,
    BudgetRepository,
    ClusterRepository,
    DeploymentRepository,
    DrainRepository,
    FleetRepository,
    JobRepository,
    QuotaRepository,
    ReservationRepository,
    TenantSecretRepository,
    TokenRepository,
    UsageRepository,
)


@dataclass(frozen=True)
class TenantScope:
    """Whose data a unit of work may see. `tenant_id=None` is the system (workers, watchers)."""

    tenant_id: TenantId | None

    @classmethod
    def system(cls) -> TenantScope:
        return cls(None)

    @classmethod
    def of(cls, principal: Principal) -> TenantScope:
        """What `principal` may read: its tenant's data, or, for the operator, every tenant's
        (a read still checks the projects: `Principal.may_see`)."""
        return cls.system() if principal.sees_every_tenant else cls(principal.tenant_id)


class UnitOfWork(Protocol):
    """One transaction. Domain events of the jobs it touched are stored with the same commit."""

    @property
    def jobs(self) -> JobRepository: ...

    @property
    def clusters(self) -> ClusterRepository: ...

    @property
    def tokens(self) -> TokenRepository: ...

    @property
    def quotas(self) -> QuotaRepository: ...

    @property
    def reservations(self) -> ReservationRepository: ...

    @property
    def deployments(self) -> DeploymentRepository: ...

    @property
    def benchmarks(self) -> BenchmarkRepository: ...

    @property
    def audit(self) -> AuditRepository: ...

    @property
    def usage(self) -> UsageRepository: ...

    @property
    def budgets(self) -> BudgetRepository: ...

    @property
    def fleets(self) -> FleetRepository: ...

    @property
    def drains(self) -> DrainRepository: ...

    @property
    def addons(self) -> AddonRepository: ...

    @property
    def secrets(self) -> TenantSecretRepository: ...

    async def __aenter__(self) -> Self: ...

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...

    async def commit(self) -> list[StoredEvent]:
        """Commit; returns the events written, stamped with their sequences."""

    async def rollback(self) -> None: ...

    async def current_sequence(self, cluster_id: ClusterId) -> int:
        """The cluster's latest event sequence as this transaction sees it."""

    def record(self, change: ClusterChanged | ServingChange) -> None:
        """Write a cluster, deployment or benchmark event with the commit (a TIMELINE one also
        stores its timeline)."""

    async def latest_timeline(self, cluster_id: ClusterId) -> tuple[int, Timeline] | None:
        """The stored timeline and the event sequence it reflects."""

    async def timeline_sequence(self, cluster_id: ClusterId) -> int | None:
        """The event sequence the stored timeline reflects (without reading the timeline)."""

    async def events_after(
        self, cluster_id: ClusterId, after: int, *, limit: int
    ) -> list[StoredEvent]:
        """The cluster's retained events after `after`, in order, as this transaction sees
        them (at most `limit`)."""


class UnitOfWorkFactory(Protocol):
    def __call__(self, scope: TenantScope, *, consistent_read: bool = False) -> UnitOfWork:
        """`consistent_read` asks for one snapshot across statements (a stamped snapshot)."""
