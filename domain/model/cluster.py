"""Clusters and their nodes, as far as scheduling needs them.

A cluster is shared platform infrastructure registered by an operator; the jobs on it belong to
tenants. The node inventory gives the cluster's GPU flavors and capacity, which decide what may be
submitted (no job may ask for more GPUs of a type than one node has) and feed admission.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

from domain.model.ids import ClusterId, NodeId
from domain.model.secrets import Envelope


class Platform(enum.StrEnum):
    ON_PREM = "ON_PREM"
    EKS = "EKS"
    AKS = "AKS"
    OPENSHIFT = "OPENSHIFT"
    SIMULATED = "SIMULATED"


class ClusterStatus(enum.StrEnum):
    REGISTERING = "REGISTERING"
    AVAILABLE = "AVAILABLE"
    NOT_AVAILABLE = "NOT_AVAILABLE"
    ERROR = "ERROR"
    DELETING = "DELETING"


class NodeType(enum.StrEnum):
    MASTER = "MASTER"
    WORKER = "WORKER"
    GPU = "GPU"
    HPU = "HPU"


@dataclass
class Node:
    id: NodeId
    cluster_id: ClusterId
    name: str
    node_type: NodeType
    gpu_type: str | None
    gpu_count: int
    cpu_cores: float
    memory_gb: float
    ready: bool = True
    schedulable: bool = True
    hardware_info: dict[str, Any] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    """Kubernetes node labels (NFD/GFD ones included): what ResourceFlavors select on."""
    internal_ip: str | None = None
    taints: list[dict[str, str]] = field(default_factory=list)
    """As Kubernetes reports them: key, value (may be absent) and effect."""
    conditions: list[dict[str, str]] = field(default_factory=list)
    """type, status, reason, message, lastTransitionTime (strings, as reported)."""
    allocatable: dict[str, str] = field(default_factory=dict)
    """Kubernetes quantities as reported (cpu, memory, nvidia.com/gpu, amd.com/gpu, ...)."""
    capacity: dict[str, str] = field(default_factory=dict)
    nfd_detected: bool = False
    """Node Feature Discovery (or GPU Feature Discovery) labels were found on the node."""
    detection_method: str = "allocatable"
    """How the hardware was found: nfd, gfd, allocatable (no labels), simulated."""
    excluded: bool = False
    """A control-plane node kept out of the capacity (the cluster's enable_master_node is off)."""

    @property
    def usable(self) -> bool:
        return self.ready and self.schedulable and not self.excluded


@dataclass(frozen=True)
class HealthCheck:
    """One check of a cluster's health: api, nodes, nfd, kueue, gpu_operator, versions."""

    name: str
    ok: bool
    detail: str
    warning: bool = False
    """A failed check that stops nothing by itself (a version outside the supported range):
    what needs it is refused, the rest goes on."""
    version: str | None = None
    """The version the check found: Kubernetes' (`api`), Kueue's controller (`kueue`)."""


@dataclass
class Cluster:
    id: ClusterId
    name: str
    platform: Platform
    status: ClusterStatus
    created_at: datetime
    updated_at: datetime
    reason: str | None = None
    nodes: list[Node] = field(default_factory=list)
    settings: dict[str, Any] = field(default_factory=dict)
    """Adapter settings that are not secret, e.g. a simulated cluster's time scale."""
    configuration: Envelope | None = field(default=None, repr=False)
    """The sealed kubeconfig of a real cluster (never returned, never logged)."""
    context: str | None = None
    server_url: str | None = None
    ingress_url: str | None = None
    enable_master_node: bool = False
    not_available_since: datetime | None = None
    last_retry_time: datetime | None = None
    retry_attempt: int = 0
    """Failed connection attempts in a row (the backoff grows with it)."""
    last_sync_at: datetime | None = None
    health: tuple[HealthCheck, ...] = ()
    health_checked_at: datetime | None = None

    @property
    def is_real(self) -> bool:
        return self.platform is not Platform.SIMULATED

    @property
    def time_scale(self) -> float:
        """Simulated seconds per real second: a simulated cluster may run faster than time."""
        value = self.settings.get("time_scale", 1.0)
        return float(value) if isinstance(value, int | float) and value > 0 else 1.0

    @property
    def workers(self) -> list[Node]:
        """The nodes whose capacity counts (all but excluded control-plane nodes)."""
        return [n for n in self.nodes if not n.excluded]

    @property
    def gpu_types(self) -> frozenset[str]:
        return frozenset(n.gpu_type for n in self.workers if n.gpu_type and n.gpu_count > 0)

    def largest_node_gpus(self, gpu_type: str) -> int:
        return max((n.gpu_count for n in self.workers if n.gpu_type == gpu_type), default=0)

    def pods_that_fit(
        self, gpu_type: str | None, gpus: int, cpu_cores: float, memory_gb: float
    ) -> int:
        """How many pods of `gpus` GPUs of `gpu_type` (none: any node), `cpu_cores` and
        `memory_gb` each the nodes hold when empty."""
        if cpu_cores <= 0 or memory_gb <= 0 or gpus < 0:
            return 0
        room = 0
        for n in self.workers:
            if gpus and n.gpu_type != gpu_type:
                continue
            fits = min(int(n.cpu_cores // cpu_cores), int(n.memory_gb // memory_gb))
            room += min(fits, n.gpu_count // gpus) if gpus else fits
        return room

    def gpu_capacity(self, *, usable_only: bool = False) -> dict[str, int]:
        """GPUs per type on the nodes that count; with `usable_only`, on those ready and not
        cordoned only."""
        capacity: dict[str, int] = {}
        for node in self.workers:
            if node.gpu_type and node.gpu_count and (node.usable or not usable_only):
                capacity[node.gpu_type] = capacity.get(node.gpu_type, 0) + node.gpu_count
        return capacity

    @property
    def largest_node_cpu(self) -> float:
        return max((n.cpu_cores for n in self.workers), default=0.0)

    @property
    def largest_node_memory(self) -> float:
        return max((n.memory_gb for n in self.workers), default=0.0)


_ADDRESS = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s()<>\"',;]+")
API_SERVER = "the API server"


def without_server(text: str | None) -> str | None:
    """A cluster's `reason` or a health check's detail as a tenant reads it: the API server's
    address (what `serverUrl` shows only to operators, and the messages of a failed connection
    name) said as "the API server"."""
    return None if text is None else _ADDRESS.sub(API_SERVER, text)


@dataclass(frozen=True)
class GpuPrice:
    """A cluster's hourly price per GPU of one type from `since` on, until the next one: set by
    the operator, never changed after (a new price is a new row, so the past keeps its price)."""

    cluster_id: ClusterId
    gpu_type: str
    hourly: Decimal
    since: datetime
