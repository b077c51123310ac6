"""Where a simulated cluster serves a deployment: the local OpenAI-compatible endpoint
(`SimulatedServing`), and how busy each replica is."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from datetime import datetime

from adapters.simulated.serving import ServedModel, SimulatedServing
from domain.model.autoscaling import ServingLoad
from domain.model.cluster import Cluster
from domain.model.deployment import Deployment, EndpointState
from domain.model.ids import JobId


class SimulatedEndpoints:
    """The ServingEndpoints port for simulated clusters: one local server for all of them."""

    def __init__(self, serving: SimulatedServing) -> None:
        self.serving = serving

    async def endpoint(
        self, cluster: Cluster, deployment: Deployment, running: Sequence[JobId]
    ) -> EndpointState:
        try:
            url = self.serving.endpoint(str(deployment.id))
        except RuntimeError:  # not started: this process serves no endpoints
            return EndpointState(None, False)
        if not running:
            return EndpointState(url, False)
        load = self.serving.load(str(deployment.id))
        slots = deployment.engine_args.max_num_seqs
        utilisation = {
            job: min(1.0, (load[i] if i < len(load) else 0) / slots)
            for i, job in enumerate(running)
        }
        return EndpointState(url, True, utilisation)

    async def load(
        self, cluster: Cluster, deployment: Deployment, running: Sequence[JobId]
    ) -> ServingLoad:
        """As this process's server saw it: per running replica in replica order (requests on
        replicas it still counted beyond those are counted as held)."""
        seen = self.serving.serving_load(str(deployment.id))
        per_replica = tuple(seen.in_flight[: len(running)])
        per_replica += (0,) * (len(running) - len(per_replica))
        beyond = sum(seen.in_flight[len(running) :])
        return replace(seen, in_flight=per_replica, held=seen.held + beyond)


def served_model(
    deployment: Deployment, running: int, starting: datetime | None = None
) -> ServedModel:
    """What the endpoint of `deployment` serves with `running` replicas (the first of those
    waiting to start estimated to start at `starting`)."""
    scaling = deployment.autoscaling
    return ServedModel(
        model=deployment.served_model_name,
        gpu_type=deployment.gpu_type,
        gpus_per_replica=max(1, deployment.engine_args.tensor_parallel_size),
        replicas=running,
        max_concurrency=deployment.engine_args.max_num_seqs,
        max_model_len=deployment.engine_args.max_model_len,
        wakes=scaling is not None and scaling.min_replicas == 0,
        starting=starting,
    )


def parse_key(key: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(key)
    except ValueError:
        return None


Lookup = Callable[[str], Awaitable[ServedModel | None]]
