"""A benchmark's attempt on a real cluster: vLLM's load generator as a batch Job Kueue admits.

A benchmark's job carries its plan in its spec (`{"benchmark": {"id", "plan", "tokenizer"}}`,
written by BenchmarkService with the endpoint known at submission). `job_manifest` renders such
a BATCH attempt with `benchmark_job` (the `vllm bench serve` container, its driver and its
result markers) and everything else with `batch_job`; either way the Job carries the labels,
suspension, queue and priority class every Job of budcluster's has, and pod requests equal the
job's resources (what budcluster and Kueue both account for), so Kueue admits it and the
gateway's watch follows it like any batch Job. `result_pod` picks the pod whose log holds the run's
result; the gateway reads that log and `samples_from_log` turns it into samples.

No one checks the connections of the Job's pod as the load generator's connector does here, so
`egress_policy` gives it a networking.k8s.io/v1 NetworkPolicy (named as the Job, made before
it and owned by it) that lets it reach only its target, as the spec's `egress` says: a
deployment's pods (`{"deployment_id"}`, by their label, at the port vLLM listens on) or the
addresses the operator allowed (`{"networks", "port"}`); besides, kube-dns on port 53, and public
addresses on 443, for vLLM's client fetches the model's tokenizer from the Hugging Face Hub
(every private, reserved, metadata and IPv4-carrying range left out). A spec without `egress`
(none is made so any more) reaches only those two.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from ipaddress import ip_network

from adapters.kubernetes.benchmark_job import BENCHMARK_IMAGE, benchmark_job
from adapters.kubernetes.kueue.jobs import (
    ATTEMPT_LABEL,
    JOB_ID_LABEL,
    batch_job,
    grace_period,
    identity_labels,
    job_labels,
    pod_resources,
)
from adapters.kubernetes.kueue.models import DEPLOYMENT_LABEL, SERVING_PORT
from adapters.kubernetes.kueue.objects import NETWORKING_API, JsonObject
from adapters.shapes.documents import plan_from_document
from domain.model.ids import ClusterId
from domain.model.load import LoadPlan
from domain.model.outbound import unreachable_networks
from domain.ports.gateways import Workload

BENCHMARK_KEY = "benchmark"
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
"""Set by the Job controller on the pods it makes."""
KUBE_DNS: JsonObject = {
    "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
    "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}},
}
HUB_PORT = 443


def job_manifest(
    workload: Workload, *, cluster_id: ClusterId, benchmark_image: str = BENCHMARK_IMAGE
) -> JsonObject:
    """The batch/v1 Job of a BATCH or TRAINING attempt: a benchmark's `vllm bench serve` Job,
    or the spec's container. Raises ValueError("<field>: <problem>")."""
    plan = benchmark_plan(workload)
    if plan is None:
        return batch_job(workload, cluster_id=cluster_id)
    tokenizer = workload.spec[BENCHMARK_KEY].get("tokenizer")
    manifest = benchmark_job(
        name=workload.name,
        namespace=workload.namespace,
        plan=plan,
        image=benchmark_image,
        labels=job_labels(workload, cluster_id),
        tokenizer=tokenizer if isinstance(tokenizer, str) and tokenizer else None,
    )
    spec = manifest["spec"]
    spec["template"]["spec"]["containers"][0]["resources"] = pod_resources(workload)
    spec["template"]["spec"].update(grace_period(workload))
    if workload.max_duration_seconds is not None:
        spec["activeDeadlineSeconds"] = workload.max_duration_seconds
    return manifest


def policies_path(namespace: str) -> str:
    return f"/apis/{NETWORKING_API}/namespaces/{namespace}/networkpolicies"


def egress_policy(workload: Workload, *, cluster_id: ClusterId) -> JsonObject | None:
    """The NetworkPolicy of a benchmark's attempt (see the module docstring); None for any
    other workload. Raises ValueError("spec.benchmark.egress: ...")."""
    benchmark = workload.spec.get(BENCHMARK_KEY)
    if not isinstance(benchmark, Mapping):
        return None
    dns = [{"protocol": protocol, "port": 53} for protocol in ("UDP", "TCP")]
    public = [
        {"ipBlock": {"cidr": everything, "except": [str(n) for n in unreachable_networks(v)]}}
        for v, everything in ((4, "0.0.0.0/0"), (6, "::/0"))
    ]
    rules: list[JsonObject] = [{"to": [KUBE_DNS], "ports": dns}]
    if (target := _target(benchmark.get("egress"))) is not None:
        rules.append(target)
    rules.append({"to": public, "ports": [{"protocol": "TCP", "port": HUB_PORT}]})
    return {
        "apiVersion": NETWORKING_API,
        "kind": "NetworkPolicy",
        "metadata": {
            "name": workload.name,
            "namespace": workload.namespace,
            "labels": identity_labels(workload, cluster_id),
        },
        "spec": {
            "podSelector": {
                "matchLabels": {
                    JOB_ID_LABEL: str(workload.job_id),
                    ATTEMPT_LABEL: str(workload.attempt),
                }
            },
            "policyTypes": ["Egress"],
            "egress": rules,
        },
    }


def _target(egress: object) -> JsonObject | None:
    if egress is None:
        return None
    problem = "spec.benchmark.egress: expected a deployment_id, or networks and a port"
    if not isinstance(egress, Mapping):
        raise ValueError(problem)
    if isinstance(deployment := egress.get("deployment_id"), str) and deployment:
        pods = {"podSelector": {"matchLabels": {DEPLOYMENT_LABEL: deployment}}}
        return {"to": [pods], "ports": [{"protocol": "TCP", "port": SERVING_PORT}]}
    networks, port = egress.get("networks"), egress.get("port")
    if (
        not isinstance(networks, list)
        or not networks
        or not all(isinstance(n, str) for n in networks)
        or isinstance(port, bool)
        or not isinstance(port, int)
        or not 0 < port < 65536
    ):
        raise ValueError(problem)
    blocks = [{"ipBlock": {"cidr": n}} for n in _networks(networks, problem)]
    return {"to": blocks, "ports": [{"protocol": "TCP", "port": port}]}


def _networks(networks: list[str], problem: str) -> list[str]:
    try:
        return [str(ip_network(n)) for n in networks]
    except ValueError:
        raise ValueError(problem) from None


def benchmark_plan(workload: Workload) -> LoadPlan | None:
    """The plan of a benchmark's attempt; None for any other workload. Raises ValueError when
    a benchmark's spec has no readable plan."""
    benchmark = workload.spec.get(BENCHMARK_KEY)
    if benchmark is None:
        return None
    document = benchmark.get("plan") if isinstance(benchmark, Mapping) else None
    if not isinstance(document, dict):
        raise ValueError("spec.benchmark.plan: a benchmark on a Kubernetes cluster needs its plan")
    try:
        return plan_from_document(document)
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"spec.benchmark.plan: not a load plan ({exc})") from None


def result_pod(pods: Sequence[JsonObject]) -> JsonObject | None:
    """The pod that ran the benchmark to its end: one that succeeded, else the last made (the
    Job allows one pod; a pod deleted and made again by the Job controller is the later)."""
    if not pods:
        return None

    def made(pod: JsonObject) -> tuple[bool, str, str]:
        meta = pod.get("metadata") or {}
        phase = (pod.get("status") or {}).get("phase")
        created = str(meta.get("creationTimestamp") or "")
        return phase == "Succeeded", created, str(meta.get("name") or "")

    return max(pods, key=made)
