"""A real cluster's connection in the domain's terms: its kubeconfig, nodes, health, and the
quota model put onto it; and the check a workload passes before it is handed to one."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from domain.model.cluster import HealthCheck, Node
from domain.model.ids import ClusterId
from domain.model.quota import QuotaSet, WorkloadPriorityClass
from domain.ports.gateways import Workload


class WatchExpired(Exception):
    """A watch can't go on from where it was (the cluster no longer keeps that point): list
    again."""


@dataclass(frozen=True)
class KubeconfigSummary:
    """What a kubeconfig says, without its secrets: the context it uses and its server."""

    context: str
    server_url: str


@dataclass(frozen=True)
class NodeChange:
    """One node added, changed or removed, as a watch of a real cluster reports it."""

    name: str
    node: Node | None
    """The node as it is now; None when it was removed."""


QUOTAS_CHECK = "kueue_quotas"
"""The health check that says whether a real cluster holds the quota model."""


@dataclass(frozen=True)
class MultiKueueWorker:
    """A member of a fleet as MultiKueue's manager reaches it: by the cluster's name, with its
    kubeconfig (opened from the sealed one budcluster holds: never logged)."""

    name: str
    kubeconfig: str = field(repr=False)
    context: str | None = None


@dataclass(frozen=True)
class MultiKueueFleet:
    """A fleet whose jobs MultiKueue's manager (the cluster this is applied to) dispatches to
    its workers, with budcluster as the external dispatcher: the manager's ClusterQueue
    `cluster_queue` holds the fleet's quota and carries the fleet's MultiKueue admission check."""

    name: str
    cluster_queue: str
    workers: tuple[MultiKueueWorker, ...]


@dataclass
class QuotasApplied:
    """What one pass of putting the quota model onto a real cluster found and did."""

    check: HealthCheck
    """QUOTAS_CHECK: ok when everything is in place, else why not."""
    applied: list[str] = field(default_factory=list)
    """Keys of every object in place after the pass (kept with the cluster, and given back as
    `applied_before`, to tell drift from a first creation)."""
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    """Found differing but not applied by us before: adopted, or the model changed."""
    restored: list[str] = field(default_factory=list)
    """Applied before, then changed or deleted in the cluster: put back, with the reason."""
    removed: list[str] = field(default_factory=list)


class ClusterApi(Protocol):
    """A live connection to one real cluster, in the domain's terms. Methods raise
    ClusterConnectionError (unreachable, unauthorized, forbidden, error)."""

    async def server_version(self) -> str: ...

    async def nodes(self) -> list[Node]:
        """The cluster's nodes now (one the cluster describes in a way that can't be read is
        left out, and logged). A later `watch_nodes` goes on from this listing."""

    def watch_nodes(self) -> AsyncIterator[NodeChange]:
        """The node changes after the last listing (or after the last change a watch reported),
        until the cluster ends the watch; raises WatchExpired (list again)."""

    async def health(self) -> list[HealthCheck]: ...

    async def apply_quotas(
        self,
        quotas: QuotaSet,
        *,
        priority_classes: Iterable[WorkloadPriorityClass] = (),
        applied_before: Iterable[str] = (),
        multikueue: Sequence[MultiKueueFleet] = (),
        hold: bool = False,
    ) -> QuotasApplied:
        """Put the quota model onto the cluster: create what is missing, restore what drifted,
        remove what the model no longer has; with `multikueue`, also what MultiKueue's manager
        needs for those fleets; with `hold` (the cluster is drained as a whole), every
        ClusterQueue with Kueue's `stopPolicy: Hold` (nothing new is admitted, what is admitted
        runs on), else with none. A write the cluster refuses fails the check; a model the
        cluster can't take (two tenants' queues in one namespace) is a ValueError."""

    async def close(self) -> None: ...


class ClusterConnector(Protocol):
    def inspect(self, kubeconfig: str, context: str | None) -> KubeconfigSummary:
        """Check a kubeconfig without connecting. Raises ClusterConnectionError
        (invalid_kubeconfig, with the field: kubeconfig or context)."""

    async def connect(
        self, kubeconfig: str, context: str | None, *, cluster_id: ClusterId
    ) -> ClusterApi:
        """A connection to the cluster `cluster_id` (its nodes' ids derive from it, its quota
        objects are labelled with it). Raises ClusterConnectionError; the caller closes what it
        gets."""


class WorkloadCheck(Protocol):
    """Whether a real cluster can be given a workload as it is: the check a submission to a
    real cluster passes before it is stored."""

    def __call__(self, workload: Workload, *, cluster_id: ClusterId) -> None:
        """Raise ValueError("<field>: <problem>", e.g. "spec.image: ...") when it can't."""
