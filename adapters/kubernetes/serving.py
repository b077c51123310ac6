"""Where a Kubernetes cluster serves a deployment (the ServingEndpoints port), worked out from
what budcluster installed, without asking the cluster.

Each replica's release has a Service named after the replica's job that selects every replica's
pods (kueue/models.py), so the endpoint is the Service of the lowest-numbered running replica,
by its in-cluster DNS name. A replica job is RUNNING only once its pod is Ready, that is, once
vLLM answered the chart's /health readiness probe: the endpoint is ready while one is. How busy
each replica is, is not known here (no utilisation).
"""

from __future__ import annotations

from collections.abc import Sequence

from adapters.kubernetes.kueue.models import SERVING_PORT, replica_service
from domain.model.cluster import Cluster
from domain.model.deployment import Deployment, EndpointState
from domain.model.ids import JobId
from domain.model.quota import tenant_namespace


def service_url(deployment: Deployment, job_id: JobId) -> str:
    namespace = tenant_namespace(deployment.tenant_id)
    return f"http://{replica_service(job_id)}.{namespace}.svc.cluster.local:{SERVING_PORT}/v1"


class KubeEndpoints:
    """The ServingEndpoints port for Kubernetes clusters."""

    async def endpoint(
        self, cluster: Cluster, deployment: Deployment, running: Sequence[JobId]
    ) -> EndpointState:
        if not running:
            return EndpointState(None, False)
        return EndpointState(service_url(deployment, running[0]), True)
