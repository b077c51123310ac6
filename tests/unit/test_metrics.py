"""The Prometheus metrics a process derives from committed events, and what a scrape reads.

Covers: one job's life (submitted with a cost, queued, admitted, running, failed out of memory,
retried, preempted by priority, completed) moves the transition counters by each (from, to),
the queue wait (submission to RUNNING, and the retry's from its backoff), the start estimate's
error against the submission estimate and whether the start fell in its window, the failure and
preemption counters under bounded reasons, retries, durations and costs; free-text reasons map
to a fixed set of categories; an operation name outside the contract is `other`; the cluster
gauges and the subscriber count are read at scrape; the exposition parses as Prometheus text; a
fleet job's move counts once, by the clusters it left and joined.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from prometheus_client.parser import text_string_to_metric_families

from adapters.metrics import ClusterGauges, PrometheusMetrics, reason_category
from domain.model.ids import ClusterId, FleetId, JobId, ProjectId, TenantId
from domain.model.job import (
    DeploymentType,
    Estimate,
    Job,
    JobStatus,
    JobType,
    Resources,
)
from domain.ports.events import StoredEvent
from domain.scheduling.cost import PriceBook, meter

T0 = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)
CLUSTER = ClusterId(uuid.uuid4())


def a_job() -> Job:
    job = Job(
        id=JobId(uuid.uuid4()),
        name="train",
        tenant_id=TenantId(uuid.uuid4()),
        project_id=ProjectId(uuid.uuid4()),
        cluster_id=CLUSTER,
        job_type=JobType.TRAINING,
        deployment_type=DeploymentType.DOCKER,
        created_at=T0,
        updated_at=T0,
        resources=Resources("nvidia-a100-80gb", 2, 8, 64),
        estimated_cost=Decimal("12.50"),
        queue_name="research",
    )
    job.record_submission()
    return job


def committed(job: Job, sequence: int) -> list[StoredEvent]:
    events = [
        StoredEvent(
            CLUSTER, sequence + i, change, change.transition.at if change.transition else T0
        )
        for i, change in enumerate(job.changes)
    ]
    job.changes.clear()
    return events


def value(metrics: PrometheusMetrics, name: str, **labels: str) -> float:
    found = metrics.registry.get_sample_value(name, labels)
    return 0.0 if found is None else found


def test_a_jobs_life_moves_each_lifecycle_metric() -> None:
    metrics = PrometheusMetrics()
    job = a_job()
    job.apply_estimate(
        Estimate(T0 + timedelta(minutes=10), T0 + timedelta(hours=2), "waits"),
        windows=((0.8, T0 + timedelta(minutes=5), T0 + timedelta(minutes=20)),),
    )
    job.transition(JobStatus.QUEUED, "queued", T0 + timedelta(seconds=5))
    job.transition(JobStatus.ADMITTED, "admitted", T0 + timedelta(minutes=12))
    job.transition(JobStatus.RUNNING, "started", T0 + timedelta(minutes=13))
    job.transition(JobStatus.FAILED, "OOMKilled: exit code 137", T0 + timedelta(minutes=43))
    meter(job, {CLUSTER: PriceBook()})  # as the unit of work does: 2 A100s for half an hour
    metrics.record(committed(job, 1), now=T0 + timedelta(minutes=43, seconds=1))

    kind = {"job_type": "TRAINING"}
    where = {"cluster": str(CLUSTER), "gpu_type": "nvidia-a100-80gb", **kind}
    assert value(metrics, "job_estimated_cost_dollars_total", **where) == 12.5
    assert value(metrics, "job_actual_cost_dollars_total", **where) == 2.5
    for before, after in (("PENDING", "QUEUED"), ("QUEUED", "ADMITTED"), ("RUNNING", "FAILED")):
        assert (
            value(metrics, "job_state_transitions_total", from_state=before, to_state=after, **kind)
            == 1
        )
    wait = {"priority": "NORMAL", "cluster_queue": "research", **kind}
    assert value(metrics, "job_queue_wait_seconds_count", **wait) == 1
    assert value(metrics, "job_queue_wait_seconds_sum", **wait) == 13 * 60
    assert value(metrics, "schedule_start_estimate_error_seconds_sum", direction="late") == 180
    assert value(metrics, "schedule_start_window_total", confidence="0.8", outcome="inside") == 1
    assert value(metrics, "job_failures_total", failure_reason="oom", **kind) == 1
    assert (
        value(metrics, "job_duration_seconds_sum", status="FAILED", source_type="DIRECT", **kind)
        == 30 * 60
    )
    assert value(metrics, "event_publish_lag_seconds_count") == 5  # submitted + 4 moves

    # The retry: waits from its backoff, and its start is not measured against the first
    # attempt's estimate.
    job.begin_retry(T0 + timedelta(minutes=44), T0 + timedelta(minutes=50), "retry 1 of 3")
    job.transition(JobStatus.QUEUED, "queued", T0 + timedelta(minutes=50))
    job.transition(JobStatus.ADMITTED, "admitted", T0 + timedelta(minutes=51))
    job.transition(JobStatus.RUNNING, "started", T0 + timedelta(minutes=52))
    job.transition(
        JobStatus.PREEMPTED, "preempted by a higher priority workload", T0 + timedelta(hours=1)
    )
    metrics.record(committed(job, 10))
    assert value(metrics, "job_retries_total", **kind) == 1
    assert value(metrics, "job_queue_wait_seconds_count", **wait) == 2
    assert value(metrics, "job_queue_wait_seconds_sum", **wait) == 13 * 60 + 2 * 60
    assert value(metrics, "schedule_start_estimate_error_seconds_count", direction="late") == 1
    assert value(metrics, "job_preemptions_total", preemption_reason="priority", **kind) == 1
    assert (
        value(
            metrics, "job_state_transitions_total", from_state="FAILED", to_state="PENDING", **kind
        )
        == 1
    )


def test_a_fleet_jobs_move_is_counted_once_by_the_clusters_it_left_and_joined() -> None:
    metrics = PrometheusMetrics()
    job = a_job()
    job.fleet_id = FleetId(uuid.uuid4())
    job.changes.clear()
    job.transition(JobStatus.QUEUED, "queued", T0)
    there = ClusterId(uuid.uuid4())
    job.move(there, "starts sooner there", T0 + timedelta(minutes=1))
    metrics.record(committed(job, 1))  # its MOVED change on both clusters' streams
    assert value(metrics, "job_moves_total", from_cluster=str(CLUSTER), to_cluster=str(there)) == 1
    assert (
        value(
            metrics,
            "job_state_transitions_total",
            job_type="TRAINING",
            from_state="QUEUED",
            to_state="PENDING",
        )
        == 1
    )


def test_reasons_fall_into_a_fixed_set_of_labels() -> None:
    assert reason_category("Container OOMKilled") == "oom"
    assert reason_category("missed its deadline") == "deadline"
    assert reason_category("workload lost: node gone") == "lost"
    assert reason_category("Evicted by the kubelet") == "evicted"
    assert reason_category("exit code 1") == "exit_code"
    assert reason_category(f"job {uuid.uuid4()} did something new") == "other"


def test_operations_outside_the_contract_are_other_and_errors_counted_by_code() -> None:
    metrics = PrometheusMetrics(known_operations={"SubmitJob"})
    metrics.operation("SubmitJob", "mutation", 0.02, [])
    metrics.operation(f"Probe{uuid.uuid4().hex}", "query", 0.01, ["BAD_USER_INPUT"])
    metrics.operation(None, "query", 0.01, ["UNAUTHENTICATED", "UNAUTHENTICATED"])
    count = "graphql_request_duration_seconds_count"
    assert value(metrics, count, operation="SubmitJob", type="mutation") == 1
    assert value(metrics, count, operation="other", type="query") == 1
    assert value(metrics, "graphql_errors_total", operation="other", code="BAD_USER_INPUT") == 1
    assert (
        value(metrics, "graphql_errors_total", operation="anonymous", code="UNAUTHENTICATED") == 2
    )


def test_gauges_are_read_at_scrape_and_the_text_parses() -> None:
    open_subscriptions = [3]
    metrics = PrometheusMetrics(subscriber_count=lambda: open_subscriptions[0])
    metrics.clusters = ClusterGauges(
        gpus={("prod", "nvidia-a100-80gb", "total"): 16, ("prod", "nvidia-a100-80gb", "used"): 6},
        status={"prod": "AVAILABLE"},
        quota={("prod", "cq", "a100", "nvidia.com/gpu", "nominal"): 16},
        jobs={("DIRECT", "BATCH", "RUNNING"): 2},
    )
    assert value(metrics, "schedule_subscribers") == 3
    open_subscriptions[0] = 5
    body, content_type = metrics.exposition()
    assert content_type.startswith("text/plain")
    families = {f.name: f for f in text_string_to_metric_families(body.decode())}
    [subscribers] = families["schedule_subscribers"].samples
    assert subscribers.value == 5
    gpus = {(s.labels["state"], s.value) for s in families["cluster_gpus"].samples}
    assert gpus == {("total", 16), ("used", 6)}
    assert families["cluster_status"].samples[0].labels == {
        "cluster": "prod",
        "status": "AVAILABLE",
    }
    assert families["jobs_total"].samples[0].value == 2
    assert "job_state_transitions" in families  # declared before anything happened
