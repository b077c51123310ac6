"""The bud-vllm chart (a model served by vLLM), rendered by a real Helm engine (helm-python-sdk).

Covers: what it makes (a Deployment and a Service named after the release, an Ingress only with
a host), every YAML document parsing; the server's arguments as the values say, from a domain
`EngineArgs` (whole numbers never in exponent form); GPUs per replica = tensor x pipeline
parallel size; Kueue's labels on the pods; the probes on vLLM's /health; shared memory and the
model cache; the Hugging Face token from a Secret; values its schema refuses; lint.
"""

from __future__ import annotations

from typing import Any

import helm_python
import pytest
import yaml

from adapters.helm.releases import CHARTS
from domain.model.deployment import EngineArgs

CHART = CHARTS / "bud-vllm"
NAME, NAMESPACE = "llama-3-8b-r1", "tenant-a"
KUEUE_LABELS = {
    "kueue.x-k8s.io/queue-name": "default",
    "kueue.x-k8s.io/priority-class": "bud-normal",
    "bud.ai/job-id": "job-1",
}


def values_for(args: EngineArgs, **more: Any) -> dict[str, Any]:
    """Chart values for a deployment's engine arguments (the names are vLLM's, camel-cased)."""
    return {
        "model": "meta-llama/Meta-Llama-3-8B-Instruct",
        "tensorParallelSize": args.tensor_parallel_size,
        "pipelineParallelSize": args.pipeline_parallel_size,
        "maxModelLen": args.max_model_len,
        "maxNumSeqs": args.max_num_seqs,
        "dtype": args.dtype,
        "gpuMemoryUtilization": args.gpu_memory_utilization,
        "quantization": args.quantization,
        "extraArgs": list(args.extra_args),
        "podLabels": KUEUE_LABELS,
        **more,
    }


def rendered(values: dict[str, Any]) -> dict[str, dict[str, Any]]:
    chart = helm_python.Chart.load(CHART)
    out = chart.render(values, name=NAME, namespace=NAMESPACE, is_install=True)
    docs = [d for text in out.values() for d in yaml.safe_load_all(text) if d]
    return {d["kind"]: d for d in docs}


def main_container(objects: dict[str, dict[str, Any]]) -> dict[str, Any]:
    (main,) = objects["Deployment"]["spec"]["template"]["spec"]["containers"]
    assert isinstance(main, dict)
    return main


def test_a_model_is_a_deployment_and_a_service_named_after_the_release() -> None:
    objects = rendered(values_for(EngineArgs(), replicas=2))
    assert set(objects) == {"Deployment", "Service"}
    deployment, service = objects["Deployment"], objects["Service"]
    assert (deployment["metadata"]["name"], deployment["metadata"]["namespace"]) == (
        NAME,
        NAMESPACE,
    )
    assert deployment["spec"]["replicas"] == 2
    main = main_container(objects)
    assert main["image"] == "vllm/vllm-openai:v0.12.0" and "command" not in main
    assert main["ports"] == [{"name": "http", "containerPort": 8000, "protocol": "TCP"}]
    assert (service["metadata"]["name"], service["spec"]["type"]) == (NAME, "ClusterIP")
    assert service["spec"]["ports"] == [
        {"name": "http", "port": 8000, "targetPort": "http", "protocol": "TCP"}
    ]
    assert service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]


def test_the_server_arguments_are_what_the_values_say() -> None:
    args = EngineArgs(
        tensor_parallel_size=4,
        pipeline_parallel_size=2,
        max_model_len=1_048_576,  # 1.048576e+06 if printed as Helm prints a JSON number
        max_num_seqs=512,
        dtype="bfloat16",
        gpu_memory_utilization=0.95,
        quantization="fp8",
        extra_args=("--enable-prefix-caching", "--max-num-batched-tokens", "8192"),
    )
    main = main_container(rendered(values_for(args, servedModelName="llama-3-8b")))
    assert main["args"] == [
        *("--model", "meta-llama/Meta-Llama-3-8B-Instruct", "--served-model-name", "llama-3-8b"),
        *("--tensor-parallel-size", "4", "--pipeline-parallel-size", "2"),
        *("--max-model-len", "1048576", "--max-num-seqs", "512", "--dtype", "bfloat16"),
        *("--gpu-memory-utilization", "0.95", "--quantization", "fp8"),
        *("--enable-prefix-caching", "--max-num-batched-tokens", "8192", "--port", "8000"),
    ]


def test_without_quantization_or_a_served_name_the_model_serves_under_its_own_name() -> None:
    main = main_container(rendered(values_for(EngineArgs())))
    assert main["args"] == [
        *("--model", "meta-llama/Meta-Llama-3-8B-Instruct"),
        *("--served-model-name", "meta-llama/Meta-Llama-3-8B-Instruct"),
        *("--tensor-parallel-size", "1", "--pipeline-parallel-size", "1"),
        *("--max-model-len", "4096", "--max-num-seqs", "256", "--dtype", "auto"),
        *("--gpu-memory-utilization", "0.9", "--port", "8000"),
    ]


@pytest.mark.parametrize(("tp", "pp"), [(1, 1), (2, 1), (1, 4), (4, 2)])
def test_a_replica_holds_tensor_times_pipeline_parallel_gpus(tp: int, pp: int) -> None:
    args = EngineArgs(tensor_parallel_size=tp, pipeline_parallel_size=pp)
    main = main_container(rendered(values_for(args, cpu=8, memory="64Gi")))
    assert main["resources"] == {
        "requests": {"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": args.gpus},
        "limits": {"nvidia.com/gpu": args.gpus},
    }


def test_kueue_labels_reach_the_pods_and_the_deployment_but_not_the_selector() -> None:
    deployment = rendered(values_for(EngineArgs(), labels={"bud.ai/cluster-id": "c1"}))[
        "Deployment"
    ]
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert KUEUE_LABELS.items() <= pod_labels.items()
    assert pod_labels["bud.ai/cluster-id"] == "c1"
    assert KUEUE_LABELS.items() <= deployment["metadata"]["labels"].items()
    assert deployment["spec"]["selector"]["matchLabels"] == {
        "app.kubernetes.io/name": "bud-vllm",
        "app.kubernetes.io/instance": NAME,
    }


def test_the_probes_ask_vllms_health_route_and_leave_time_to_load_weights() -> None:
    main = main_container(rendered(values_for(EngineArgs())))
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert main[probe]["httpGet"] == {"path": "/health", "port": "http"}, probe
    startup = main["startupProbe"]
    assert startup["periodSeconds"] * startup["failureThreshold"] >= 30 * 60
    assert main["readinessProbe"]["timeoutSeconds"] >= 5  # a busy server answers slowly
    longer = main_container(
        rendered(
            values_for(EngineArgs(), startupProbe={"periodSeconds": 20, "failureThreshold": 360})
        )
    )
    assert (
        longer["startupProbe"]["periodSeconds"],
        longer["startupProbe"]["failureThreshold"],
    ) == (
        20,
        360,
    )


def test_shared_memory_is_in_memory_and_the_model_cache_a_claim_when_given() -> None:
    objects = rendered(values_for(EngineArgs(tensor_parallel_size=2), shmSize="8Gi"))
    pod = objects["Deployment"]["spec"]["template"]["spec"]
    assert pod["volumes"] == [
        {"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "8Gi"}},
        {"name": "cache", "emptyDir": {}},
    ]
    assert main_container(objects)["volumeMounts"] == [
        {"name": "shm", "mountPath": "/dev/shm"},
        {"name": "cache", "mountPath": "/root/.cache/huggingface"},
    ]
    cached = rendered(values_for(EngineArgs(), cacheClaim="hf-cache"))
    volumes = cached["Deployment"]["spec"]["template"]["spec"]["volumes"]
    assert volumes[1] == {"name": "cache", "persistentVolumeClaim": {"claimName": "hf-cache"}}


def test_the_hugging_face_token_comes_from_a_secret_when_named() -> None:
    assert "env" not in main_container(rendered(values_for(EngineArgs())))
    main = main_container(
        rendered(
            values_for(
                EngineArgs(),
                hfTokenSecret="hf",
                env=[{"name": "VLLM_LOGGING_LEVEL", "value": "DEBUG"}],
            )
        )
    )
    from_secret = {"secretKeyRef": {"name": "hf", "key": "token"}}
    assert main["env"] == [
        {"name": "HF_TOKEN", "valueFrom": from_secret},
        {"name": "HUGGING_FACE_HUB_TOKEN", "valueFrom": from_secret},
        {"name": "VLLM_LOGGING_LEVEL", "value": "DEBUG"},
    ]


def test_an_ingress_routes_its_host_to_the_service() -> None:
    ingress = {
        "host": "llama.example.com",
        "className": "nginx",
        "tlsSecret": "llama-tls",
        "annotations": {"nginx.ingress.kubernetes.io/proxy-read-timeout": "3600"},
    }
    objects = rendered(values_for(EngineArgs(), ingress=ingress))
    assert set(objects) == {"Deployment", "Service", "Ingress"}
    made = objects["Ingress"]
    assert made["metadata"]["name"] == NAME
    assert made["metadata"]["annotations"] == ingress["annotations"]
    assert made["spec"] == {
        "ingressClassName": "nginx",
        "tls": [{"hosts": ["llama.example.com"], "secretName": "llama-tls"}],
        "rules": [
            {
                "host": "llama.example.com",
                "http": {
                    "paths": [
                        {
                            "path": "/",
                            "pathType": "Prefix",
                            "backend": {"service": {"name": NAME, "port": {"name": "http"}}},
                        }
                    ]
                },
            }
        ],
    }


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"model": ""}, "model"),
        ({"tensorParallelSize": 0}, "tensorParallelSize"),
        ({"pipelineParallelSize": 1.5}, "pipelineParallelSize"),
        ({"gpuMemoryUtilization": 1.5}, "gpuMemoryUtilization"),
        ({"extraArgs": ["--max-num-batched-tokens", 8192]}, "extraArgs"),
        ({"image": ""}, "image"),
    ],
)
def test_the_schema_refuses_values_vllm_would_not_start_with(
    change: dict[str, Any], field: str
) -> None:
    with pytest.raises(helm_python.HelmValuesError, match=field):
        rendered({**values_for(EngineArgs()), **change})


def test_the_chart_lints_clean() -> None:
    result = helm_python.lint(CHART, values=values_for(EngineArgs(tensor_parallel_size=2)))
    assert result["errors"] == []
