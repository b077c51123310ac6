"""The submission check of a real cluster (the WorkloadCheck port): render the workload as the
gateway will hand it over (a batch Job, a JobSet for a job of several pod sets, a benchmark's
`vllm bench serve` Job, or a Helm release's values; the benchmark image does not change what
renders), so what can't be rendered is refused at submission, naming its field, instead of
failing on the cluster later."""

from __future__ import annotations

from adapters.kubernetes.kueue.benchmarks import egress_policy, job_manifest
from adapters.kubernetes.kueue.jobsets import job_set
from adapters.kubernetes.kueue.services import service_release
from domain.model.ids import ClusterId
from domain.model.job import JobType
from domain.ports.gateways import Workload


def check_workload(workload: Workload, *, cluster_id: ClusterId) -> None:
    """Raises ValueError("<field>: <problem>") when the workload does not render."""
    if workload.job_type is JobType.SERVICE:
        service_release(workload, cluster_id=cluster_id)
    elif workload.resources.pod_sets:
        job_set(workload, cluster_id=cluster_id)
    else:
        job_manifest(workload, cluster_id=cluster_id)
        egress_policy(workload, cluster_id=cluster_id)
