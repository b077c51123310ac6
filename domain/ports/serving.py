"""Model serving: where a cluster serves a deployment, and a benchmark's load against it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Protocol

from domain.model.autoscaling import ServingLoad
from domain.model.cluster import Cluster
from domain.model.deployment import Deployment, EndpointState
from domain.model.ids import JobId
from domain.model.load import LoadPlan, LoadRun, RequestSample


class ServingEndpoints(Protocol):
    """Where a cluster serves a deployment's model, and whether it answers."""

    async def endpoint(
        self, cluster: Cluster, deployment: Deployment, running: Sequence[JobId]
    ) -> EndpointState:
        """`running`: the replica jobs that run now, in replica order. Called inside a unit
        of work: must not open another."""
        ...

    async def load(
        self, cluster: Cluster, deployment: Deployment, running: Sequence[JobId]
    ) -> ServingLoad | None:
        """How busy the endpoint is now (what the autoscaler reads), `running` as above; None
        when that is not known now (the autoscaler then leaves the deployment as it is).
        Called outside a unit of work; may ask the cluster."""
        ...


class LoadGenerator(Protocol):
    """Sends a benchmark's requests and times them (an async streaming client)."""

    async def run(
        self,
        plan: LoadPlan,
        *,
        on_sample: Callable[[RequestSample], None] | None = None,
        stop: asyncio.Event | None = None,
        own_endpoint: bool = False,
    ) -> LoadRun:
        """Raises `domain.model.load.EndpointUnreachable` when the endpoint does not answer at
        all; a request that fails is a failed sample, never an exception. Connections go only
        to addresses the outbound rules allow, unless `own_endpoint`: the plan's endpoint is a
        deployment's that this service serves."""
        ...
