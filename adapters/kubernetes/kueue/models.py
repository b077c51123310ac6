"""One replica of a model deployment as a Helm release: budcluster's bud-vllm chart, or the
chart the deployment names, with the deployment's engine, model and resources as its values.

A replica job's spec carries the deployment (`spec.deployment`: its id, the replica's number,
the model, the name it is served under, the engine arguments and image) and, when the user
named one, `spec.chart`. The values are the chart's (vLLM's engine arguments, camel-cased),
one pod per release (`replicas: 1`: each replica is a job of its own, admitted by Kueue on its
own), cpu and memory as the job asks, GPUs as tensor x pipeline parallel size, and the job's
grace period, when it declares one, as `terminationGracePeriodSeconds`.

Every replica's pods carry the deployment's id (`bud.ai/deployment-id`), and every replica's
Service selects the pods by it: any live replica's Service fronts them all. A replica's Service
is named after its job (`replica_service`), not after the hand-over: its address survives a
retry, and the gateway removes a replica's earlier releases before installing the next, so two
never claim the name. A chart of the user's gets the same values and should honour
`serviceName` and `serviceSelector` as it honours `podLabels`. So a replica's own vLLM is
reached at its pod (`serving_pod`), not its Service.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from adapters.kubernetes.kueue.jobs import job_identity
from adapters.kubernetes.kueue.objects import JsonObject, quantity
from adapters.kubernetes.kueue.reading import metadata, true_condition
from adapters.kubernetes.kueue.secrets import chart_values
from domain.model.deployment import EngineArgs, engine_args_from_document
from domain.model.ids import JobId
from domain.model.quota import CPU, MEMORY, gpu_resource
from domain.ports.gateways import Workload
from domain.ports.helm import SHIPPED_VLLM_CHART, ReleaseSpec

DEPLOYMENT_LABEL = "bud.ai/deployment-id"
GRACE_VALUE = "terminationGracePeriodSeconds"
"""The chart value naming the pods' terminationGracePeriodSeconds (as Bitnami's charts name it)."""
SERVING_PORT = 8000
"""Where the bud-vllm chart's Service (and vLLM in its pods) listens."""


def is_model_replica(workload: Workload) -> bool:
    """A replica of a budcluster model deployment (its spec names the deployment)."""
    return isinstance(workload.spec.get("deployment"), Mapping)


def replica_service(job_id: JobId) -> str:
    """The name of the Service of a replica job's releases (a DNS label, like release names)."""
    return f"bud-{job_id.hex[:20]}"


def serving_pod(pods: Sequence[Mapping[str, Any]], job_id: JobId) -> Mapping[str, Any] | None:
    """The pod that serves a replica job now, of `pods`: one of the job's that is Ready and not
    being deleted, of its latest hand-over, the newest; None when it has none."""
    serving = [
        (identity[1], str(metadata(pod).get("creationTimestamp") or ""), index)
        for index, pod in enumerate(pods)
        if (identity := job_identity(pod)) is not None
        and identity[0] == job_id
        and not metadata(pod).get("deletionTimestamp")
        and true_condition(pod, "Ready") is not None
    ]
    return pods[max(serving)[2]] if serving else None


def model_release(
    workload: Workload,
    *,
    labels: Mapping[str, str],
    pod_labels: Mapping[str, str],
    chart: str | None,
    repo: str | None,
    version: str | None,
) -> ReleaseSpec:
    """The release of one hand-over of a replica. Raises ValueError naming the spec field that
    can't be used."""
    replica = workload.spec["deployment"]
    deployment_id = replica.get("id")
    if not isinstance(deployment_id, str) or not 0 < len(deployment_id) <= 63:
        raise ValueError("spec.deployment.id: expected the deployment's id")
    model = replica.get("model")
    if not isinstance(model, str) or not model:
        raise ValueError("spec.deployment.model: expected the model to serve")
    try:
        args = engine_args_from_document(replica.get("engine_args") or {})
    except (KeyError, TypeError, ValueError):
        raise ValueError("spec.deployment.engine_args: expected the engine's arguments") from None
    selector = {DEPLOYMENT_LABEL: deployment_id}
    values: JsonObject = {
        "model": model,
        "servedModelName": str(replica.get("served_model_name") or model),
        **engine_values(args),
        "replicas": 1,
        "cpu": quantity(CPU, workload.resources.cpu_cores),
        "memory": quantity(MEMORY, workload.resources.memory_gb),
        "labels": dict(labels),
        "podLabels": {**pod_labels, **selector},
        "serviceName": replica_service(workload.job_id),
        "serviceSelector": selector,
    }
    if workload.termination_grace_seconds is not None:
        values[GRACE_VALUE] = workload.termination_grace_seconds
    values.update(chart_values(workload))
    if workload.resources.gpu_type:
        values["gpuResource"] = gpu_resource(workload.resources.gpu_type)
    image = replica.get("image")
    if image is not None:
        if not isinstance(image, str) or not image:
            raise ValueError("spec.deployment.image: expected an image reference")
        values["image"] = image
    return ReleaseSpec(
        workload.name,
        workload.namespace,
        chart or SHIPPED_VLLM_CHART,
        values,
        repo=repo if chart else None,
        version=version if chart else None,
    )


def engine_values(args: EngineArgs) -> dict[str, Any]:
    """vLLM's engine arguments as the chart's values."""
    return {
        "tensorParallelSize": args.tensor_parallel_size,
        "pipelineParallelSize": args.pipeline_parallel_size,
        "maxModelLen": args.max_model_len,
        "maxNumSeqs": args.max_num_seqs,
        "dtype": args.dtype,
        "gpuMemoryUtilization": args.gpu_memory_utilization,
        "quantization": args.quantization,
        "extraArgs": list(args.extra_args),
    }
