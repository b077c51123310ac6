"""Which adapter answers for a cluster, by its platform: the simulated one or Kubernetes."""

from __future__ import annotations

from collections.abc import Sequence

from adapters.kubernetes.gateway import KueueGateways
from adapters.kubernetes.serving import KubeEndpoints
from adapters.simulated.endpoints import SimulatedEndpoints
from adapters.simulated.gateway import SimulatedClusters
from domain.model.autoscaling import ServingLoad
from domain.model.cluster import Cluster, Platform
from domain.model.deployment import Deployment, EndpointState
from domain.model.ids import JobId
from domain.ports.gateways import ClusterGateway


class GatewayRouter:
    """Chooses the gateway adapter for a cluster by its platform."""

    def __init__(self, simulated: SimulatedClusters, real: KueueGateways) -> None:
        self.simulated = simulated
        self.real = real

    def for_cluster(self, cluster: Cluster) -> ClusterGateway:
        if cluster.platform is Platform.SIMULATED:
            return self.simulated.for_cluster(cluster)
        return self.real.for_cluster(cluster)


class ServingRouter:
    """Chooses where a cluster serves models by its platform (ServingEndpoints)."""

    def __init__(self, simulated: SimulatedEndpoints, real: KubeEndpoints | None = None) -> None:
        self.simulated = simulated
        self.real = real or KubeEndpoints()

    async def endpoint(
        self, cluster: Cluster, deployment: Deployment, running: Sequence[JobId]
    ) -> EndpointState:
        if cluster.platform is Platform.SIMULATED:
            return await self.simulated.endpoint(cluster, deployment, running)
        return await self.real.endpoint(cluster, deployment, running)

    async def load(
        self, cluster: Cluster, deployment: Deployment, running: Sequence[JobId]
    ) -> ServingLoad | None:
        if cluster.platform is Platform.SIMULATED:
            return await self.simulated.load(cluster, deployment, running)
        return await self.real.load(cluster, deployment, running)
