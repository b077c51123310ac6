"""The live stream of deployments: `deploymentUpdates`.

It keeps the contract of every cluster stream (ARCHITECTURE.md, events): a snapshot of the
deployments on the cluster the caller may see (`Principal.may_see`: the operator, every tenant's)
stamped with the sequence it reflects, then each later change of one of them in order; `since: N`
replays exactly the changes after N from the retained history, or sends a fresh snapshot when that
history is gone; a subscriber that fell behind is sent what it missed, or a fresh snapshot.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from dataclasses import dataclass

from domain.errors import NotFound
from domain.model.autoscaling import ScalingStep
from domain.model.deployment import Deployment
from domain.model.ids import ClusterId
from domain.model.principal import Principal
from domain.ports.events import StoredEvent
from domain.ports.unit_of_work import TenantScope, UnitOfWorkFactory
from domain.services.replay import ClusterStreams

SNAPSHOT_LIMIT = 1000


@dataclass(frozen=True)
class DeploymentSnapshot:
    sequence: int
    deployments: list[Deployment]
    reason: str
    """`subscribed`, `history-gone`, `unknown-since` or `resync`."""


@dataclass(frozen=True)
class DeploymentUpdate:
    sequence: int
    deployment: Deployment
    step: ScalingStep | None = None
    """The step its autoscaler took, when this change is one."""


@dataclass(kw_only=True, eq=False)
class DeploymentUpdatesService(ClusterStreams):
    uow: UnitOfWorkFactory

    async def deployment_updates(
        self, principal: Principal, cluster_id: ClusterId, since: int | None = None
    ) -> AsyncGenerator[DeploymentSnapshot | DeploymentUpdate, None]:
        """Raises NotFound (before anything is sent) for an unknown cluster."""
        async with self.uow(TenantScope.system()) as uow:
            if await uow.clusters.get(cluster_id) is None:
                raise NotFound("cluster", cluster_id)
        return self._deployments(principal, cluster_id, since)

    async def _deployments(
        self, principal: Principal, cluster_id: ClusterId, since: int | None
    ) -> AsyncGenerator[DeploymentSnapshot | DeploymentUpdate, None]:
        updates = await self._snapshot_then_changes(
            cluster_id,
            since,
            snapshot=lambda reason: self._snapshot(principal, cluster_id, reason),
            change=lambda event: _visible(principal, event),
        )
        try:
            async for item in updates:
                yield item
        finally:
            await updates.aclose()

    async def _snapshot(
        self, principal: Principal, cluster_id: ClusterId, reason: str
    ) -> DeploymentSnapshot:
        async with self.uow(TenantScope.of(principal), consistent_read=True) as uow:
            sequence = await uow.current_sequence(cluster_id)
            found = await uow.deployments.on_cluster(cluster_id, limit=SNAPSHOT_LIMIT)
        visible = [d for d in found if principal.may_see(d.tenant_id, d.project_id)]
        return DeploymentSnapshot(sequence, visible, reason)


def _visible(principal: Principal, event: StoredEvent) -> DeploymentUpdate | None:
    change = event.deployment_change
    if change is None:
        return None
    d = change.deployment
    if not principal.may_see(d.tenant_id, d.project_id):
        return None
    return DeploymentUpdate(event.sequence, d, change.step)
