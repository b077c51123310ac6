"""A real cluster in the domain's terms (the ClusterApi port), over one Kubernetes connection.

The registry speaks of nodes, node changes, health and the quota model; this turns those into
what the API server understands. Nodes are read with `inventory.node_from_k8s` (a node that can't
be read is skipped and logged, so one odd node hides no other), and a node watch goes on from the
resourceVersion of the last listing or of the last event seen, so the caller never handles one:
an expired version raises WatchExpired (ResourceVersionGone) and the caller lists again. The quota
model is reconciled as Kueue objects by `kueue.sync`.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from typing import Any

from adapters.kubernetes.api import KubeApi
from adapters.kubernetes.inventory import node_from_k8s
from adapters.kubernetes.kueue import sync
from domain.model.cluster import HealthCheck, Node
from domain.model.ids import ClusterId
from domain.model.quota import QuotaSet, WorkloadPriorityClass
from domain.ports.cluster_api import MultiKueueFleet, NodeChange, QuotasApplied

log = logging.getLogger(__name__)


class KubeCluster:
    """One real cluster through `api` (which it closes)."""

    def __init__(self, api: KubeApi, *, cluster_id: ClusterId) -> None:
        self._api = api
        self._cluster_id = cluster_id
        self._resource_version = ""

    async def server_version(self) -> str:
        return await self._api.server_version()

    async def nodes(self) -> list[Node]:
        raw, self._resource_version = await self._api.list_nodes()
        return [node for obj in raw if (node := self._node(obj)) is not None]

    async def watch_nodes(self) -> AsyncIterator[NodeChange]:
        async for kind, obj in self._api.watch_nodes(self._resource_version):
            self._resource_version = _resource_version(obj) or self._resource_version
            name = str((obj.get("metadata") or {}).get("name") or "")
            if kind == "DELETED":
                yield NodeChange(name, None)
            elif (node := self._node(obj)) is not None:
                yield NodeChange(name, node)

    async def health(self) -> list[HealthCheck]:
        return await self._api.health()

    async def apply_quotas(
        self,
        quotas: QuotaSet,
        *,
        priority_classes: Iterable[WorkloadPriorityClass] = (),
        applied_before: Iterable[str] = (),
        multikueue: Sequence[MultiKueueFleet] = (),
        hold: bool = False,
    ) -> QuotasApplied:
        return await sync.reconcile(
            self._api,
            quotas,
            cluster_id=self._cluster_id,
            priority_classes=priority_classes,
            applied_before=applied_before,
            multikueue=multikueue,
            hold=hold,
        )

    async def close(self) -> None:
        await self._api.close()

    def _node(self, obj: Mapping[str, Any]) -> Node | None:
        try:
            return node_from_k8s(obj, self._cluster_id)
        except ValueError as exc:  # one odd node does not hide the others
            log.warning("cluster %s: skipping a node: %s", self._cluster_id, exc)
            return None


def _resource_version(obj: Mapping[str, Any]) -> str | None:
    version = (obj.get("metadata") or {}).get("resourceVersion")
    return str(version) if version else None
