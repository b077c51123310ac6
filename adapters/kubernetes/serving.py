"""Where a Kubernetes cluster serves a deployment, and how busy it is (the ServingEndpoints port).

Each replica's release has a Service named after the replica's job that selects every replica's
pods (kueue/models.py), so the endpoint is the Service of the lowest-numbered running replica,
by its in-cluster DNS name, worked out without asking the cluster. A replica job is RUNNING only
once its pod is Ready, that is, once vLLM answered the chart's /health readiness probe: the
endpoint is ready while one is.

The load is read from each running replica's own vLLM: its pod's /metrics, through the API
server's pod proxy (a Service would answer from any replica's pod). A replica's requests in
flight are its running and waiting ones; the queue time is the mean over the requests counted
since this process last read the same pods (vllm_metrics.py). Every read is bounded in time
and size; when one replica can't be read (no serving pod, no answer, not vLLM's metrics) or the
cluster does not answer, the load is not known now (None), and the autoscaler holds. Nothing a
replica serves is logged.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from adapters.kubernetes.gateway import KueueGateways
from adapters.kubernetes.kueue.models import SERVING_PORT, replica_service
from adapters.kubernetes.vllm_metrics import QueueTotals, mean_wait, parse
from domain.model.autoscaling import ServingLoad
from domain.model.cluster import Cluster
from domain.model.deployment import Deployment, EndpointState
from domain.model.ids import ClusterId, DeploymentId, JobId
from domain.model.quota import tenant_namespace
from domain.ports.gateways import GatewayUnavailable

log = logging.getLogger(__name__)

METRICS_TIMEOUT_SECONDS = 2.0
"""The longest one load read waits for the replicas' metrics (read at once)."""
METRICS_LIMIT_BYTES = 1 << 20
"""The most of one replica's metrics read: vLLM's are tens of KiB."""
REMEMBERED_DEPLOYMENTS = 10_000
"""Deployments whose last queue totals are kept (the least recently read are forgotten)."""

Totals = dict[JobId, tuple[str, QueueTotals]]
"""Per replica job: the pod read (its uid) and its queue totals then."""


def service_url(deployment: Deployment, job_id: JobId) -> str:
    namespace = tenant_namespace(deployment.tenant_id)
    return f"http://{replica_service(job_id)}.{namespace}.svc.cluster.local:{SERVING_PORT}/v1"


class KubeEndpoints:
    """The ServingEndpoints port for Kubernetes clusters; without `gateways` (no connection to
    clusters) no load is known."""

    def __init__(
        self,
        gateways: KueueGateways | None = None,
        *,
        timeout_seconds: float = METRICS_TIMEOUT_SECONDS,
        limit_bytes: int = METRICS_LIMIT_BYTES,
    ) -> None:
        self._gateways = gateways
        self._timeout_seconds = timeout_seconds
        self._limit_bytes = limit_bytes
        self._totals: dict[tuple[ClusterId, DeploymentId], Totals] = {}

    async def endpoint(
        self, cluster: Cluster, deployment: Deployment, running: Sequence[JobId]
    ) -> EndpointState:
        if not running:
            return EndpointState(None, False)
        return EndpointState(service_url(deployment, running[0]), True)

    async def load(
        self, cluster: Cluster, deployment: Deployment, running: Sequence[JobId]
    ) -> ServingLoad | None:
        """None also while no replica runs: there is no request path to count then."""
        if self._gateways is None or not running:
            return None
        try:
            served = await self._gateways.for_cluster(cluster).replica_metrics(
                namespace=tenant_namespace(deployment.tenant_id),
                deployment=str(deployment.id),
                jobs=running,
                port=SERVING_PORT,
                limit_bytes=self._limit_bytes,
                timeout_seconds=self._timeout_seconds,
            )
        except GatewayUnavailable as exc:
            log.info("no load of deployment %s: %s", deployment.id, exc)
            return None
        read: list[tuple[JobId, str, int, QueueTotals | None]] = []
        for job_id, got in zip(running, served, strict=True):
            if got is None:
                log.info(
                    "no load of deployment %s: replica %s did not answer", deployment.id, job_id
                )
                return None
            try:
                replica = parse(got.text)
            except ValueError:
                log.info(
                    "no load of deployment %s: replica %s served no vLLM metrics",
                    deployment.id,
                    job_id,
                )
                return None
            read.append((job_id, got.pod, replica.in_flight, replica.queue))
        key = (cluster.id, deployment.id)
        earlier = self._totals.pop(key, {})
        wait = mean_wait((_same_pod(earlier.get(job_id), pod), now) for job_id, pod, _, now in read)
        self._totals[key] = {job_id: (pod, now) for job_id, pod, _, now in read if now is not None}
        while len(self._totals) > REMEMBERED_DEPLOYMENTS:
            del self._totals[next(iter(self._totals))]
        return ServingLoad(
            in_flight=tuple(in_flight for _, _, in_flight, _ in read), queue_seconds=wait
        )


def _same_pod(earlier: tuple[str, QueueTotals] | None, pod: str) -> QueueTotals | None:
    """The totals read before from this pod; none from another (another process)."""
    return earlier[1] if earlier is not None and earlier[0] == pod else None
