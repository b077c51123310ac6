"""Prometheus metrics for one process, as seed 001 §12.4.3-4 names them.

Where each comes from:
- Job lifecycle, from the events a commit wrote (`record`, called by the reactions in the
  committing process, so each event is counted once across all processes; sum over
  instances): `job_state_transitions_total{job_type, from_state, to_state}`,
  `job_queue_wait_seconds{job_type, priority, cluster_queue}` (submission or retry to RUNNING),
  `job_duration_seconds{job_type, status, source_type}`, `job_failures_total{job_type,
  failure_reason}`, `job_retries_total{job_type}`, `job_preemptions_total{job_type,
  preemption_reason}`, `job_estimated_cost_dollars_total{cluster, gpu_type, job_type}` (when
  a job first starts to run: its estimate is the schedule's, made after submission),
  `job_actual_cost_dollars_total{cluster, gpu_type, job_type}` (each run's metered cost when
  it ends: `JobChanged.metered`; `cluster` is the cluster's id, `gpu_type` empty for GPU-less
  work), `job_budget_notices_total{scope="JOB|PROJECT|TENANT", share="80|100|expected",
  budget_action}` (a job's cost, or its project's or tenant's spend this period, reached that
  share of the budget, or the job was expected over it at submission).
- Schedule: `schedule_start_estimate_error_seconds{direction}` (|actual start - the start
  estimated at submission|, early or late), `schedule_start_window_total{confidence, outcome}`
  (starts inside or outside the window shown at submission: coverage = inside / all),
  `schedule_reestimate_seconds` (one timeline recompute), `event_publish_lag_seconds` (commit to
  publish), `schedule_subscribers` (open event subscriptions of this process, read at scrape),
  `event_subscriber_overflows_total` (a subscriber fell behind: caught up or resynchronised).
- Clusters, from a read the scrape itself triggers when the last is older than 10 s
  (`ClusterGauges`, `App.metrics_text`):
  `cluster_gpus{cluster, gpu_type, state="total|usable|used"}`, `cluster_status{cluster,
  status}` (1 for the current status), `cluster_queue_quota{cluster, cluster_queue, flavor,
  resource, kind="nominal|used|borrowed|borrowing_limit"}`, `jobs_total{source_type, job_type,
  status}` (active jobs now). Every API process reports them: aggregate with max().
- GraphQL: `graphql_request_duration_seconds{operation, type}` and
  `graphql_errors_total{operation, code}`; an operation name outside the contract's documents
  is `other`, so labels stay bounded. No label holds a job id or a tenant.

Several processes behind one scrape target (PROMETHEUS_MULTIPROC_DIR set before start): the
counters and histograms go through prometheus-client's multiprocess files and `exposition`
aggregates them; the gauges read at scrape are this process's.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
    multiprocess,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from domain.model.job import ChangeKind, Job, JobChanged, JobStatus
from domain.ports.events import StoredEvent

WAIT_BUCKETS = (1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600, 86400)
DURATION_BUCKETS = (10, 60, 300, 900, 1800, 3600, 7200, 14400, 43200, 86400, 259200)
ERROR_BUCKETS = (10, 30, 60, 120, 300, 600, 1800, 3600, 7200, 14400)
FAST_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)

_REASONS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), category)
    for pattern, category in (
        (r"oom|out of memory", "oom"),
        (r"deadline", "deadline"),
        (r"max(imum)?[ _-]?duration|ran longer|time ?limit", "max_duration"),
        (r"lost|vanished|node (was )?(removed|gone|not ready)|orphan", "lost"),
        (r"image|pull", "image"),
        (r"evict", "evicted"),
        (r"reclaim", "reclaimed"),
        (r"priority|preempt", "priority"),
        (r"exit|exited|crash|error", "exit_code"),
        (r"cancel", "cancelled"),
    )
)


def reason_category(reason: str) -> str:
    """A bounded label for a free-text transition reason."""
    for pattern, category in _REASONS:
        if pattern.search(reason):
            return category
    return "other"


@dataclass(frozen=True)
class ClusterGauges:
    """What the cluster gauges show, as of one refresh."""

    gpus: Mapping[tuple[str, str, str], float] = field(default_factory=dict)
    """(cluster, gpu_type, state) -> GPUs."""
    status: Mapping[str, str] = field(default_factory=dict)
    """cluster -> status."""
    quota: Mapping[tuple[str, str, str, str, str], float] = field(default_factory=dict)
    """(cluster, cluster_queue, flavor, resource, kind) -> amount."""
    jobs: Mapping[tuple[str, str, str], int] = field(default_factory=dict)
    """(source_type, job_type, status) -> active jobs."""


class _Live(Collector):
    """The gauges read at scrape: clusters from the last refresh, subscribers from the hub."""

    def __init__(self, metrics: PrometheusMetrics) -> None:
        self._metrics = metrics

    def collect(self) -> Iterator[GaugeMetricFamily]:
        state = self._metrics.clusters
        gpus = GaugeMetricFamily(
            "cluster_gpus", "GPUs per cluster and type: total, usable, used.",
            labels=["cluster", "gpu_type", "state"],
        )  # fmt: skip
        for (cluster, gpu_type, kind), count in sorted(state.gpus.items()):
            gpus.add_metric([cluster, gpu_type, kind], count)
        yield gpus
        status = GaugeMetricFamily(
            "cluster_status", "1 for each cluster's current status.", labels=["cluster", "status"]
        )
        for cluster, current in sorted(state.status.items()):
            status.add_metric([cluster, current], 1)
        yield status
        quota = GaugeMetricFamily(
            "cluster_queue_quota",
            "Each ClusterQueue's quota and what holds it: nominal, used, borrowed, "
            "borrowing_limit (GPUs, cores or GB by `resource`).",
            labels=["cluster", "cluster_queue", "flavor", "resource", "kind"],
        )
        for row, amount in sorted(state.quota.items()):
            quota.add_metric(list(row), amount)
        yield quota
        jobs = GaugeMetricFamily(
            "jobs_total", "Active jobs now, by source, type and status.",
            labels=["source_type", "job_type", "status"],
        )  # fmt: skip
        for labels, active in sorted(state.jobs.items()):
            jobs.add_metric(list(labels), active)
        yield jobs
        subscribers = GaugeMetricFamily(
            "schedule_subscribers", "Open event subscriptions (all streams) of this process."
        )
        subscribers.add_metric([], self._metrics.subscriber_count())
        yield subscribers


class PrometheusMetrics:
    def __init__(
        self,
        *,
        known_operations: Iterable[str] = (),
        subscriber_count: Callable[[], int] = lambda: 0,
    ) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self._operations = frozenset(known_operations)
        self.subscriber_count = subscriber_count
        self.clusters = ClusterGauges()
        r = self.registry
        self.transitions = Counter(
            "job_state_transitions", "Job state transitions.",
            ["job_type", "from_state", "to_state"], registry=r,
        )  # fmt: skip
        self.queue_wait = Histogram(
            "job_queue_wait_seconds", "Submission (or retry) to RUNNING.",
            ["job_type", "priority", "cluster_queue"], buckets=WAIT_BUCKETS, registry=r,
        )  # fmt: skip
        self.duration = Histogram(
            "job_duration_seconds", "RUNNING to the end of a run.",
            ["job_type", "status", "source_type"], buckets=DURATION_BUCKETS, registry=r,
        )  # fmt: skip
        self.failures = Counter(
            "job_failures", "Failed runs by reason.", ["job_type", "failure_reason"], registry=r
        )
        self.retries = Counter("job_retries", "Runs tried again.", ["job_type"], registry=r)
        self.moves = Counter(
            "job_moves", "Fleet jobs moved to another member before admission, by the member "
            "left and the one joined.", ["from_cluster", "to_cluster"], registry=r,
        )  # fmt: skip
        self.preemptions = Counter(
            "job_preemptions", "Preempted runs by reason.",
            ["job_type", "preemption_reason"], registry=r,
        )  # fmt: skip
        self.estimated_cost = Counter(
            "job_estimated_cost_dollars",
            "What jobs were estimated to cost, counted when each first starts to run.",
            ["cluster", "gpu_type", "job_type"], registry=r,
        )  # fmt: skip
        self.actual_cost = Counter(
            "job_actual_cost_dollars",
            "Metered cost of ended runs (preempted and failed ones too), when each ended.",
            ["cluster", "gpu_type", "job_type"], registry=r,
        )  # fmt: skip
        self.budget_notices = Counter(
            "job_budget_notices", "Budget notices said on jobs: a job's own cost, or its "
            "project's or tenant's spend this period (scope), reached a share of the budget "
            "(80, 100) or the job was expected over it at submission (expected).",
            ["scope", "share", "budget_action"], registry=r,
        )  # fmt: skip
        self.start_error = Histogram(
            "schedule_start_estimate_error_seconds",
            "|actual start - the start estimated at submission|.",
            ["direction"], buckets=ERROR_BUCKETS, registry=r,
        )  # fmt: skip
        self.window = Counter(
            "schedule_start_window", "Starts inside or outside the window shown at submission.",
            ["confidence", "outcome"], registry=r,
        )  # fmt: skip
        self.reestimate = Histogram(
            "schedule_reestimate_seconds", "One recompute of a cluster's timeline.",
            buckets=FAST_BUCKETS, registry=r,
        )  # fmt: skip
        self.publish_lag = Histogram(
            "event_publish_lag_seconds", "An event's commit to its publishing.",
            buckets=FAST_BUCKETS, registry=r,
        )  # fmt: skip
        self.overflows = Counter(
            "event_subscriber_overflows", "Subscribers that fell behind their buffer.", registry=r
        )
        sent = Counter(
            "subscription_messages", "Subscription results sent, by how their data was encoded: "
            "once for every watcher of a view (shared) or for this subscriber alone (own).",
            ["encoding"], registry=r,
        )  # fmt: skip
        self.shared_message, self.own_message = sent.labels("shared"), sent.labels("own")
        self.request_duration = Histogram(
            "graphql_request_duration_seconds", "GraphQL queries and mutations.",
            ["operation", "type"], buckets=FAST_BUCKETS, registry=r,
        )  # fmt: skip
        self.errors = Counter(
            "graphql_errors", "GraphQL errors by code.", ["operation", "code"], registry=r
        )
        r.register(_Live(self))

    # --- events ---------------------------------------------------------------------------

    def record(self, events: Sequence[StoredEvent], now: datetime | None = None) -> None:
        """The metrics that follow from events just committed (and published)."""
        at = now or datetime.now(UTC)
        for event in events:
            self.publish_lag.observe(max(0.0, (at - event.occurred_at).total_seconds()))
            change = event.job_change
            if change is not None:
                self._job(change)

    def _job(self, change: JobChanged) -> None:
        job, step = change.job, change.transition
        kind, source = job.job_type.value, job.source.kind.value
        where = (str(job.cluster_id), job.resources.gpu_type or "", kind)
        if change.kind is ChangeKind.SUBMITTED:
            return
        if (moved := change.move) is not None:  # (once a move: as the cluster joined says it)
            self.moves.labels(str(moved.from_cluster), str(moved.to_cluster)).inc()
            return
        if change.metered is not None:
            self.actual_cost.labels(*where).inc(float(change.metered))
        if change.budget is not None:
            notice = change.budget
            share = "expected" if notice.expected else str(notice.share)
            self.budget_notices.labels(notice.scope.value, share, notice.action.value).inc()
            return
        if step is None or step.from_status is None:
            return
        to = step.to_status
        self.transitions.labels(kind, step.from_status.value, to.value).inc()
        if to is JobStatus.RUNNING:
            self._started(job, step.at)
            if job.attempt == 0 and job.estimated_cost is not None:  # (once a job: the first)
                self.estimated_cost.labels(*where).inc(float(job.estimated_cost))
        elif to is JobStatus.FAILED:
            self.failures.labels(kind, reason_category(step.reason)).inc()
        elif to is JobStatus.PREEMPTED:
            self.preemptions.labels(kind, reason_category(step.reason)).inc()
        elif to is JobStatus.PENDING and step.from_status in (
            JobStatus.FAILED,
            JobStatus.PREEMPTED,
        ):
            self.retries.labels(kind).inc()
        if (
            (to.is_finished or to is JobStatus.PREEMPTED)
            and job.actual_start is not None
            and step.from_status is JobStatus.RUNNING
        ):
            seconds = (step.at - job.actual_start).total_seconds()
            self.duration.labels(kind, to.value, source).observe(max(0.0, seconds))

    def _started(self, job: Job, at: datetime) -> None:
        since = job.created_at if job.attempt == 0 else (job.next_attempt_at or job.created_at)
        wait = max(0.0, (at - since).total_seconds())
        self.queue_wait.labels(job.job_type.value, job.priority.value, job.queue_name).observe(wait)
        estimate = job.submission_estimate
        if job.attempt > 0 or estimate is None or estimate.start is None:
            return
        error = (at - estimate.start).total_seconds()
        self.start_error.labels("late" if error > 0 else "early").observe(abs(error))
        for confidence, earliest, latest in estimate.windows:
            inside = earliest <= at and (latest is None or at <= latest)
            self.window.labels(f"{confidence:g}", "inside" if inside else "outside").inc()

    # --- the rest -------------------------------------------------------------------------

    def reestimated(self, seconds: float) -> None:
        self.reestimate.observe(seconds)

    def subscriber_overflowed(self) -> None:
        self.overflows.inc()

    def operation(self, name: str | None, kind: str, seconds: float, codes: Sequence[str]) -> None:
        """A GraphQL operation ended: how long it took and the codes of its errors."""
        label = name if name in self._operations else ("anonymous" if not name else "other")
        self.request_duration.labels(label, kind).observe(seconds)
        for code in codes:
            self.errors.labels(label, code).inc()

    def exposition(self) -> tuple[bytes, str]:
        """The text a scrape gets, and its content type."""
        if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
            registry = CollectorRegistry()
            multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
            registry.register(_Live(self))
            return generate_latest(registry), CONTENT_TYPE_LATEST
        return generate_latest(self.registry), CONTENT_TYPE_LATEST
