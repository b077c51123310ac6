"""Clusters, their nodes, and their quota objects (Kueue's, and capacity reservations)."""

from __future__ import annotations

import uuid
from datetime import datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Annotated

import strawberry
from strawberry.scalars import JSON

from domain.model import cluster as model
from domain.model.ids import ClusterId
from domain.model.principal import Scope
from schema.context import Info
from schema.schedule import accuracy_for, cost_forecast_for, schedule_for
from schema.types.derive import derive
from schema.types.enums import ClusterStatus, NodeType, Platform
from schema.types.forecast import CostForecast
from schema.types.quota import (
    CapacityReservation,
    ClusterQueue,
    Cohort,
    LocalQueue,
    QuotaSettings,
    ResourceFlavor,
    quotas_of,
)
from schema.types.timeline import EstimateAccuracy, Schedule, ScheduleFilter

if TYPE_CHECKING:
    from schema.types.addons import ClusterAddon


def sees_servers(info: Info) -> bool:
    """Whether the caller may read the API server's address (operators, clusters:write)."""
    principal = info.context.principal
    return principal is not None and principal.has(Scope.CLUSTERS_WRITE)


def operator_text(info: Info, text: str | None) -> str | None:
    """A reason or detail as the caller may read it: tenants are not told where the API
    server is (see `serverUrl`)."""
    return text if sees_servers(info) else model.without_server(text)


def _visible_reason(root: strawberry.Parent[Cluster], info: Info) -> str | None:
    return operator_text(info, root.stored_reason)


@strawberry.type(description="A GPU type on a cluster and how many of it there are.")
class GpuCapacity:
    gpu_type: str
    total: int = strawberry.field(
        description="GPUs installed on the nodes that count (control-plane nodes only with "
        "enableMasterNode)."
    )
    largest_node: int
    usable: int = strawberry.field(
        description="Of `total`, the GPUs on nodes that are ready and not cordoned: what the "
        "schedule estimate places work on."
    )


@strawberry.type(description="A node taint: pods without a matching toleration stay off.")
class Taint:
    key: str
    value: str | None
    effect: str


@strawberry.type(
    description="A node condition as Kubernetes reports it (Ready, MemoryPressure...)."
)
class NodeCondition:
    type: str
    status: str
    reason: str | None
    message: str | None
    last_transition_time: str | None


@strawberry.type(
    description="A resource quantity as Kubernetes reports it, e.g. cpu 96, memory 1Ti."
)
class ResourceQuantity:
    resource: str
    quantity: str


@strawberry.type
class Node:
    id: strawberry.ID
    name: str
    node_type: NodeType
    gpu_type: str | None
    gpu_count: int
    cpu_cores: float = strawberry.field(description="Allocatable cores.")
    memory_gb: float = strawberry.field(description="Allocatable memory, GiB.")
    ready: bool
    schedulable: bool = strawberry.field(description="False when cordoned.")
    excluded: bool = strawberry.field(
        description="A control-plane node left out of the capacity (enableMasterNode is off)."
    )
    hardware_info: JSON = strawberry.field(
        description="Detected hardware, keys in snake_case: gpu {vendor product count "
        "memory_mb driver compute_capability family ...}, cpu {vendor model cores "
        "threads_per_core avx512 amx arch}, hpu {vendor product count ...}, kernel, os."
    )
    nfd_detected: bool = strawberry.field(
        description="Node Feature Discovery or GPU Feature Discovery labels were found."
    )
    detection_method: str = strawberry.field(
        description="gfd, nfd, allocatable (no labels: counts only) or simulated."
    )
    internal_ip: str | None
    taints: list[Taint]
    conditions: list[NodeCondition]
    allocatable: list[ResourceQuantity]
    capacity: list[ResourceQuantity]
    labels: JSON

    @classmethod
    def from_domain(cls, node: model.Node) -> Node:
        return derive(
            cls,
            node,
            taints=[
                Taint(key=t.get("key", ""), value=t.get("value"), effect=t.get("effect", ""))
                for t in node.taints
            ],
            conditions=[
                NodeCondition(
                    type=c.get("type", ""),
                    status=c.get("status", ""),
                    reason=c.get("reason"),
                    message=c.get("message"),
                    last_transition_time=c.get("lastTransitionTime"),
                )
                for c in node.conditions
            ],
            allocatable=_quantities(node.allocatable),
            capacity=_quantities(node.capacity),
        )


def _quantities(found: dict[str, str]) -> list[ResourceQuantity]:
    return [ResourceQuantity(resource=k, quantity=v) for k, v in sorted(found.items())]


@strawberry.type(description="One health check of a cluster, as of its last sync.")
class HealthCheck:
    name: str = strawberry.field(
        description="api (reachable, and its version), nodes (ready of all), nfd (Node Feature "
        "Discovery present), kueue (present, and its version), gpu_operator, versions "
        "(Kubernetes and Kueue within the supported ranges), kueue_quotas."
    )
    ok: bool
    detail: str
    warning: bool = strawberry.field(
        description="Not ok, but nothing stops because of it (a version outside the supported "
        "range): what needs it is refused."
    )
    version: str | None = strawberry.field(
        description="The version found: Kubernetes' (api), Kueue's controller (kueue)."
    )

    @classmethod
    def from_domain(cls, check: model.HealthCheck, info: Info) -> HealthCheck:
        return cls(
            name=check.name,
            ok=check.ok,
            detail=operator_text(info, check.detail) or "",
            warning=check.warning,
            version=check.version,
        )


@strawberry.type(
    description="The price of one GPU of a type for an hour on a cluster: what runs from "
    "`since` on is metered at it, until the next price (null: the price at registration, from "
    "the cluster's gpu_hourly_prices setting or the list price of common cloud GPUs)."
)
class GpuPrice:
    gpu_type: str
    hourly_price: Decimal
    since: datetime | None


@strawberry.type
class Cluster:
    id: strawberry.ID
    name: str
    platform: Platform
    status: ClusterStatus
    reason: str | None = strawberry.field(resolver=_visible_reason)
    created_at: datetime
    updated_at: datetime
    nodes: list[Node]
    capacity: list[GpuCapacity]
    ingress_url: str | None
    enable_master_node: bool
    not_available_since: datetime | None
    last_retry_time: datetime | None
    last_sync_at: datetime | None = strawberry.field(
        description="When the nodes and health were last read from the cluster."
    )
    health_checked_at: datetime | None
    context: str | None = strawberry.field(description="The kubeconfig context in use.")
    checks: strawberry.Private[tuple[model.HealthCheck, ...]]
    api_server: strawberry.Private[str | None]
    stored_reason: strawberry.Private[str | None]

    @strawberry.field(  # type: ignore[untyped-decorator]
        description="Today's hourly price per GPU for the GPU types of its nodes and those a "
        "price was set for (setGpuPrice); estimated and actual costs use them."
    )
    async def gpu_prices(self, info: Info) -> list[GpuPrice]:
        found = await info.context.loaders.prices.load(ClusterId(uuid.UUID(self.id)))
        return [GpuPrice(gpu_type=p.gpu_type, hourly_price=p.hourly, since=p.since) for p in found]

    @strawberry.field(  # type: ignore[untyped-decorator]
        description="The Kubernetes API server's URL (needs clusters:write)."
    )
    def server_url(self, info: Info) -> str | None:
        return self.api_server if sees_servers(info) else None

    @strawberry.field(  # type: ignore[untyped-decorator]
        description="The health checks of the last sync; `checks` picks some by name."
    )
    def health(self, info: Info, checks: list[str] | None = None) -> list[HealthCheck]:
        wanted = set(checks or ())
        return [
            HealthCheck.from_domain(c, info) for c in self.checks if not wanted or c.name in wanted
        ]

    @strawberry.field(  # type: ignore[untyped-decorator]
        description="Kueue, Node Feature Discovery and the NVIDIA GPU Operator on this cluster: "
        "each one's state, version and health (installAddons installs what is missing)."
    )
    async def addons(
        self, info: Info
    ) -> list[Annotated[ClusterAddon, strawberry.lazy("schema.types.addons")]]:
        from schema.types.addons import addons_of  # it imports this module

        return await addons_of(
            info, self.id, self.checks, real=self.platform is not model.Platform.SIMULATED
        )

    @strawberry.field
    async def resource_flavors(self, info: Info) -> list[ResourceFlavor]:
        return [ResourceFlavor.from_domain(f) for f in (await quotas_of(info, self.id)).flavors]

    @strawberry.field
    async def cluster_queues(self, info: Info) -> list[ClusterQueue]:
        queues = (await quotas_of(info, self.id)).cluster_queues
        return [ClusterQueue.from_domain(q) for q in queues]

    @strawberry.field
    async def cohorts(self, info: Info) -> list[Cohort]:
        return [Cohort.from_domain(c) for c in (await quotas_of(info, self.id)).cohorts]

    @strawberry.field
    async def quota_settings(self, info: Info) -> QuotaSettings:
        return QuotaSettings.from_domain((await quotas_of(info, self.id)).settings)

    @strawberry.field(description="Your tenant's LocalQueues (an admin sees every tenant's).")  # type: ignore[untyped-decorator]
    async def local_queues(self, info: Info) -> list[LocalQueue]:
        queues = (await quotas_of(info, self.id)).local_queues
        return [LocalQueue.from_domain(q) for q in queues]

    @strawberry.field(  # type: ignore[untyped-decorator]
        description="Your tenant's reservations that have not ended, cancelled ones included "
        "(an admin sees every tenant's)."
    )
    async def reservations(self, info: Info) -> list[CapacityReservation]:
        booked = (await quotas_of(info, self.id)).reservations
        return [CapacityReservation.from_domain(r) for r in booked]

    @strawberry.field(  # type: ignore[untyped-decorator]
        description="What runs on which GPU in [from, to), what will run when, the queue and "
        "the free-GPU forecast. Defaults: from an hour ago (rounded down to 5 minutes), to 24 "
        "hours after `from`."
    )
    async def schedule(
        self,
        info: Info,
        from_: Annotated[datetime | None, strawberry.argument(name="from")] = None,
        to: datetime | None = None,
        filter: ScheduleFilter | None = None,
    ) -> Schedule:
        return await schedule_for(info, self.id, from_, to, filter)

    @strawberry.field(  # type: ignore[untyped-decorator]
        description="How close estimates came to what happened, over jobs that ended since "
        "`since` (default: 30 days)."
    )
    async def estimate_accuracy(
        self, info: Info, since: datetime | None = None
    ) -> EstimateAccuracy:
        return await accuracy_for(info, self.id, since)

    @strawberry.field(  # type: ignore[untyped-decorator]
        description="What running and waiting work is expected to cost over the next `hours` "
        "(1 to 336), by hour and by project, with the range the start windows allow."
    )
    async def cost_forecast(self, info: Info, hours: int = 24) -> CostForecast:
        return await cost_forecast_for(info, self.id, hours)

    @classmethod
    def from_domain(cls, cluster: model.Cluster) -> Cluster:
        return derive(
            cls,
            cluster,
            stored_reason=cluster.reason,
            capacity=[
                GpuCapacity(
                    gpu_type=t,
                    total=n,
                    largest_node=cluster.largest_node_gpus(t),
                    usable=cluster.gpu_capacity(usable_only=True).get(t, 0),
                )
                for t, n in sorted(cluster.gpu_capacity().items())
            ],
            checks=cluster.health,
            api_server=cluster.server_url,
        )
