"""Where a simulated cluster serves a deployment: the local OpenAI-compatible endpoint
(`SimulatedServing`), and how busy each replica is."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Sequence

from adapters.simulated.serving import ServedModel, SimulatedServing
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


def served_model(deployment: Deployment, running: int) -> ServedModel:
    """What the endpoint of `deployment` serves with `running` replicas."""
    return ServedModel(
        model=deployment.served_model_name,
        gpu_type=deployment.gpu_type,
        gpus_per_replica=max(1, deployment.engine_args.tensor_parallel_size),
        replicas=running,
        max_concurrency=deployment.engine_args.max_num_seqs,
        max_model_len=deployment.engine_args.max_model_len,
    )


def parse_key(key: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(key)
    except ValueError:
        return None


Lookup = Callable[[str], Awaitable[ServedModel | None]]
