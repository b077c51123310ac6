"""The `clusterUpdates` stream: a cluster's status and nodes, a stamped snapshot then changes.

The same contract as `jobUpdates`: the live subscription is opened before the snapshot is read;
the snapshot is stamped with the cluster event sequence it reflects; then every STATUS and NODES
event follows in sequence order (other events of the cluster are skipped, so sequences may skip
numbers), each carrying the cluster's state after it; `since: N` replays exactly the changes
after N, or sends a fresh snapshot when that history is gone; a subscriber that fell behind is
resynchronised with a snapshot. Clusters are shared infrastructure: every caller allowed to read
clusters sees the same stream.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from dataclasses import dataclass

from domain.errors import NotFound
from domain.model.events import ClusterChangeKind, ClusterState
from domain.model.ids import ClusterId
from domain.ports.events import StoredEvent
from domain.ports.unit_of_work import TenantScope, UnitOfWorkFactory
from domain.services.replay import ClusterStreams

KINDS = (ClusterChangeKind.STATUS, ClusterChangeKind.NODES)


@dataclass(frozen=True)
class ClusterUpdate:
    sequence: int
    state: ClusterState
    kind: ClusterChangeKind | None
    """None for a snapshot."""
    reason: str | None = None
    """For a snapshot: subscribed, resync, history-gone, unknown-since."""


@dataclass(kw_only=True, eq=False)
class ClusterUpdatesService(ClusterStreams):
    uow: UnitOfWorkFactory
    buffer: int = 256

    async def updates(
        self, cluster_id: ClusterId, since: int | None = None
    ) -> AsyncGenerator[ClusterUpdate, None]:
        """Raises NotFound (before anything is sent) for an unknown cluster. The live
        subscription is open, and the snapshot or the missed changes read, before this
        returns."""
        return await self._snapshot_then_changes(
            cluster_id,
            since,
            snapshot=lambda reason: self._snapshot(cluster_id, reason),
            change=_update,
            check=lambda: self._snapshot(cluster_id, "check"),  # NotFound: an unknown cluster
        )

    async def _snapshot(self, cluster_id: ClusterId, reason: str) -> ClusterUpdate:
        async with self.uow(TenantScope.system(), consistent_read=True) as uow:
            cluster = await uow.clusters.get(cluster_id)
            if cluster is None:
                raise NotFound("cluster", cluster_id)
            sequence = await uow.current_sequence(cluster_id)
        return ClusterUpdate(sequence, ClusterState.of(cluster), None, reason)


def _update(event: StoredEvent) -> ClusterUpdate | None:
    change = event.cluster_change
    if change is None or change.kind not in KINDS or change.cluster is None:
        return None
    return ClusterUpdate(event.sequence, change.cluster, change.kind)
