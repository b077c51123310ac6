"""Validating a submission: each bad input names its field; good input passes.

Covers the issue's list: negative gpu_count, more GPUs than any node has, unknown cluster, a GPU
type the cluster lacks, empty/overlong/non-DNS-1123 names, max_duration shorter than the estimate,
a deadline in the past; and the rest of what a user can send (spec size, source ids, retries,
budget, CRITICAL + preemptible, CPU and memory beyond the largest node, queue names, daily windows
in whole minutes that are not empty, at most 32 distinct dependencies); a real cluster's spec
checked by the injected WorkloadCheck, its problem named by field.
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import UTC, time, timedelta
from decimal import Decimal
from typing import Any

import pytest

from domain.model.cluster import ClusterStatus, HealthCheck, Platform
from domain.model.ids import ClusterId, JobId, ProjectId
from domain.model.job import (
    DeploymentType,
    JobPriority,
    JobType,
    Resources,
    SourceKind,
    TimeWindow,
)
from domain.ports.gateways import Workload
from domain.services.submission import JobSubmission, validate_submission
from tests.support.fakes import T0, make_cluster

CLUSTER = make_cluster(ClusterId(uuid.uuid4()))

GOOD = JobSubmission(
    name="train-llama",
    project_id=ProjectId(uuid.uuid4()),
    cluster_id=CLUSTER.id,
    job_type=JobType.TRAINING,
    deployment_type=DeploymentType.DOCKER,
    resources=Resources("nvidia-a100-80gb", 8, 16, 256),
    estimated_duration_seconds=3600,
    max_duration_seconds=7200,
    deadline=T0 + timedelta(days=1),
)


def res(**changes: Any) -> Resources:
    return replace(GOOD.resources, **changes)


CASES: list[tuple[str, dict[str, Any], str, str]] = [
    ("negative gpus", {"resources": res(gpu_count=-1)}, "resources.gpu_count", "INVALID"),
    ("more gpus than a node", {"resources": res(gpu_count=9)}, "resources.gpu_count",
     "EXCEEDS_NODE"),
    ("t4 node is smaller", {"resources": res(gpu_type="nvidia-tesla-t4", gpu_count=5)},
     "resources.gpu_count", "EXCEEDS_NODE"),
    ("unknown gpu type", {"resources": res(gpu_type="nvidia-h100-sxm")}, "resources.gpu_type",
     "UNKNOWN_GPU_TYPE"),
    ("gpus without type", {"resources": res(gpu_type=None)}, "resources.gpu_type", "REQUIRED"),
    ("zero cpu", {"resources": res(cpu_cores=0)}, "resources.cpu_cores", "INVALID"),
    ("cpu beyond node", {"resources": res(cpu_cores=65)}, "resources.cpu_cores", "EXCEEDS_NODE"),
    ("memory beyond node", {"resources": res(memory_gb=600)}, "resources.memory_gb",
     "EXCEEDS_NODE"),
    ("negative storage", {"resources": res(storage_gb=-5)}, "resources.storage_gb", "INVALID"),
    ("no pods", {"resources": res(pod_count=0)}, "resources.pod_count", "INVALID"),
    ("too many pods", {"resources": res(pod_count=257)}, "resources.pod_count", "INVALID"),
    ("more pods than the nodes hold", {"resources": res(pod_count=99)}, "resources.pod_count",
     "EXCEEDS_CLUSTER"),
    ("cpu pods beyond the nodes",
     {"resources": Resources(None, 0, 40, 8, pod_count=4)}, "resources.pod_count",
     "EXCEEDS_CLUSTER"),
    ("gpu pods short of cores", {"resources": res(gpu_count=4, cpu_cores=40, pod_count=3)},
     "resources.pod_count", "EXCEEDS_CLUSTER"),
    ("a service of several pods", {"job_type": JobType.SERVICE, "resources": res(pod_count=2)},
     "resources.pod_count", "UNSUPPORTED"),
    ("empty name", {"name": ""}, "name", "INVALID_NAME"),
    ("overlong name", {"name": "a" * 54}, "name", "INVALID_NAME"),
    ("uppercase name", {"name": "Train"}, "name", "INVALID_NAME"),
    ("underscore name", {"name": "train_1"}, "name", "INVALID_NAME"),
    ("name ends with dash", {"name": "train-"}, "name", "INVALID_NAME"),
    ("max shorter than estimate", {"max_duration_seconds": 60}, "max_duration_seconds",
     "SHORTER_THAN_ESTIMATE"),
    ("zero estimate", {"estimated_duration_seconds": 0}, "estimated_duration_seconds", "INVALID"),
    ("deadline in the past", {"deadline": T0 - timedelta(seconds=1)}, "deadline", "IN_THE_PAST"),
    ("naive deadline", {"deadline": T0.replace(tzinfo=None) + timedelta(days=1)}, "deadline",
     "INVALID"),
    ("retries out of range", {"max_retries": 11}, "max_retries", "INVALID"),
    ("negative retries", {"max_retries": -1}, "max_retries", "INVALID"),
    ("negative budget", {"budget_limit": Decimal("-1")}, "budget_limit", "INVALID"),
    ("infinite budget", {"budget_limit": Decimal("Infinity")}, "budget_limit", "INVALID"),
    ("critical and preemptible", {"priority": JobPriority.CRITICAL, "preemptible": True},
     "preemptible", "INVALID"),
    ("pipeline without id", {"source_kind": SourceKind.PIPELINE}, "source.source_id",
     "REQUIRED"),
    ("direct with id", {"source_id": "p-1"}, "source.source_id", "INVALID"),
    ("spec not an object", {"spec": ["x"]}, "spec", "INVALID"),
    ("spec too large", {"spec": {"blob": "x" * 70_000}}, "spec", "TOO_LARGE"),
    ("spec with NaN", {"spec": {"x": float("nan")}}, "spec", "INVALID"),
    ("budget beyond the column", {"budget_limit": Decimal("1e11")}, "budget_limit", "INVALID"),
    ("NUL inside spec", {"spec": {"argument": "a\u0000b"}}, "spec", "INVALID"),
    ("NUL in a spec key", {"spec": {"k\u0000": 1}}, "spec", "INVALID"),
    ("lone surrogate in spec", {"spec": {"x": ["\ud800"]}}, "spec", "INVALID"),
    ("long source id", {"source_kind": SourceKind.PIPELINE, "source_id": "p" * 256},
     "source.source_id", "INVALID"),
    ("surrogate source id", {"source_kind": SourceKind.PIPELINE, "source_id": "\ud800"},
     "source.source_id", "INVALID"),
    ("surrogate in name", {"name": "a\ud800"}, "name", "INVALID_NAME"),
    ("gpu type that is no name", {"resources": res(gpu_type="x" * 101)}, "resources.gpu_type",
     "INVALID"),
    ("empty idempotency key", {"idempotency_key": ""}, "idempotency_key", "INVALID"),
    ("long idempotency key", {"idempotency_key": "k" * 129}, "idempotency_key", "INVALID"),
    ("bad queue name", {"queue_name": "My Queue"}, "queue_name", "INVALID_NAME"),
    ("empty queue name", {"queue_name": ""}, "queue_name", "INVALID_NAME"),
    ("empty window", {"window": TimeWindow(time(22), time(22))}, "window.end", "EMPTY_WINDOW"),
    ("window start with seconds", {"window": TimeWindow(time(22, 0, 30), time(6))},
     "window.start", "INVALID"),
    ("window end with a zone", {"window": TimeWindow(time(22), time(6, tzinfo=UTC))},
     "window.end", "INVALID"),
    ("too many dependencies", {"depends_on": tuple(JobId(uuid.uuid4()) for _ in range(33))},
     "depends_on", "TOO_MANY"),
]  # fmt: skip


@pytest.mark.parametrize(("case", "changes", "field", "code"), CASES, ids=[c[0] for c in CASES])
def test_bad_input_names_its_field(
    case: str, changes: dict[str, Any], field: str, code: str
) -> None:
    issues = validate_submission(replace(GOOD, **changes), CLUSTER, T0)
    assert [(i.field, i.code) for i in issues] == [(field, code)], case


def test_good_input_passes() -> None:
    assert validate_submission(GOOD, CLUSTER, T0) == []
    one = JobId(uuid.uuid4())
    scheduled = replace(
        GOOD, window=TimeWindow(time(22), time(6)), depends_on=(one,) * 40, queue_name="team-a"
    )
    assert validate_submission(scheduled, CLUSTER, T0) == []
    assert scheduled.dependencies == (one,)
    cpu_only = replace(GOOD, resources=Resources(None, 0, 2, 8), max_duration_seconds=None)
    assert validate_submission(cpu_only, CLUSTER, T0) == []
    pipeline = replace(GOOD, source_kind=SourceKind.PIPELINE, source_id="pipe-7")
    assert validate_submission(pipeline, CLUSTER, T0) == []
    two_nodes = replace(GOOD, resources=res(pod_count=2))  # the cluster has two 8-GPU nodes
    assert validate_submission(two_nodes, CLUSTER, T0) == []
    assert [
        i.field for i in validate_submission(replace(GOOD, resources=res(pod_count=3)), CLUSTER, T0)
    ] == ["resources.pod_count"]


def test_unknown_cluster() -> None:
    issues = validate_submission(GOOD, None, T0)
    assert [(i.field, i.code) for i in issues] == [("cluster_id", "NOT_FOUND")]


@pytest.mark.parametrize(
    ("kueue", "platform", "codes"),
    [
        ("v0.12.4", Platform.ON_PREM, [("cluster_id", "UNSUPPORTED_VERSION")]),
        ("v0.21.0", Platform.ON_PREM, [("cluster_id", "UNSUPPORTED_VERSION")]),
        ("v0.13.0", Platform.ON_PREM, []),
        (None, Platform.ON_PREM, []),  # not known yet (or missing): the health check says so
        ("v0.12.4", Platform.SIMULATED, []),  # no Kueue to speak to
    ],
)
def test_a_cluster_whose_kueue_is_unsupported_takes_no_job(
    kueue: str | None, platform: Platform, codes: list[tuple[str, str]]
) -> None:
    check = HealthCheck("kueue", kueue is not None, "installed", version=kueue)
    cluster = replace(CLUSTER, platform=platform, health=(check,))
    issues = validate_submission(GOOD, cluster, T0)
    assert [(i.field, i.code) for i in issues] == codes
    assert all(f"Kueue {kueue} is installed, outside the supported" in i.message for i in issues)


def test_cluster_being_deleted() -> None:
    deleting = make_cluster(CLUSTER.id, status=ClusterStatus.DELETING)
    issues = validate_submission(GOOD, deleting, T0)
    assert [(i.field, i.code) for i in issues] == [("cluster_id", "CLUSTER_DELETING")]


def test_every_problem_is_reported_at_once() -> None:
    bad = replace(GOOD, name="Bad_Name", resources=res(gpu_count=-2), deadline=T0)
    assert {i.field for i in validate_submission(bad, CLUSTER, T0)} == {
        "name",
        "resources.gpu_count",
        "deadline",
    }


def test_a_real_clusters_spec_is_checked_by_the_injected_check() -> None:
    real = replace(CLUSTER, platform=Platform.ON_PREM)
    seen: list[tuple[JobType, dict[str, Any], ClusterId]] = []

    def check(workload: Workload, *, cluster_id: ClusterId) -> None:
        seen.append((workload.job_type, dict(workload.spec), cluster_id))
        if "image" not in workload.spec:
            raise ValueError("spec.image: a container image is needed")

    with_image = replace(GOOD, spec={"image": "busybox"})
    assert validate_submission(with_image, real, T0, check_workload=check) == []
    issues = validate_submission(GOOD, real, T0, check_workload=check)
    assert [(i.field, i.message) for i in issues] == [("spec.image", "a container image is needed")]
    assert seen == [
        (JobType.TRAINING, {"image": "busybox"}, real.id),
        (JobType.TRAINING, {}, real.id),
    ]
    assert validate_submission(GOOD, CLUSTER, T0, check_workload=check) == []  # simulated
    assert len(seen) == 2
