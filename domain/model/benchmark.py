"""A benchmark: a load test of a model endpoint, run as a job that holds no GPU.

A benchmark targets a deployment (its endpoint, once it serves) or an endpoint URL. It is a job
of its own (`job_id`, a BATCH job of one CPU core, no GPU): it queues, gets an estimate and shows
on its cluster's schedule timeline like every job. While that job runs, a load generator sends
the planned requests (`domain.model.load.LoadPlan`), reports progress about every second, and
stores what it measured: the summary (`LoadResult`) and every request's sample.

  PENDING   stored; its job waits to run
  RUNNING   sending requests
  COMPLETED the run ended and at least one request succeeded
  FAILED    the endpoint was unreachable, every request failed, or its job failed
  CANCELLED cancelled by its user (the samples so far are kept)
"""

from __future__ import annotations

import enum
import itertools
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from domain.model.ids import BenchmarkId, ClusterId, DeploymentId, JobId, ProjectId, TenantId
from domain.model.load import LoadPlan, LoadProgress, LoadResult


class BenchmarkStatus(enum.StrEnum):
    PENDING = "PENDING"
    RUNNING = "RUNNING"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"

    @property
    def is_final(self) -> bool:
        return self in (
            BenchmarkStatus.COMPLETED,
            BenchmarkStatus.FAILED,
            BenchmarkStatus.CANCELLED,
        )


class BenchmarkChangeKind(enum.StrEnum):
    CREATED = "CREATED"
    STATUS = "STATUS"
    PROGRESS = "PROGRESS"


_RECORDED = itertools.count()


@dataclass(frozen=True)
class BenchmarkChanged:
    kind: BenchmarkChangeKind
    benchmark: Benchmark
    recorded: int = field(default_factory=lambda: next(_RECORDED), compare=False, repr=False)

    @property
    def cluster_id(self) -> ClusterId:
        return self.benchmark.cluster_id

    @property
    def tenant_id(self) -> TenantId:
        return self.benchmark.tenant_id

    @property
    def at(self) -> datetime:
        return self.benchmark.updated_at


@dataclass(eq=False)
class Benchmark:
    id: BenchmarkId
    tenant_id: TenantId
    project_id: ProjectId
    cluster_id: ClusterId
    name: str
    plan: LoadPlan
    """What to send; `plan.endpoint` is empty until a deployment's endpoint is known."""
    job_id: JobId
    created_at: datetime
    updated_at: datetime
    deployment_id: DeploymentId | None = None
    configuration: dict[str, Any] = field(default_factory=dict)
    """What was measured, for comparisons: the deployment's GPU type, GPUs per replica,
    replicas, engine and engine arguments when it started; the load's shape."""
    status: BenchmarkStatus = BenchmarkStatus.PENDING
    status_message: str | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    progress: LoadProgress | None = None
    result: LoadResult | None = None
    version: int = 0
    changes: list[BenchmarkChanged] = field(default_factory=list, repr=False, compare=False)

    def record_creation(self) -> None:
        self.changes.append(BenchmarkChanged(BenchmarkChangeKind.CREATED, self.snapshot()))

    def start(self, plan: LoadPlan, configuration: dict[str, Any], now: datetime) -> None:
        self.plan = plan
        self.configuration = configuration
        self.status = BenchmarkStatus.RUNNING
        self.status_message = f"sending requests to {plan.endpoint}"
        self.started_at = self.updated_at = now
        self.changes.append(BenchmarkChanged(BenchmarkChangeKind.STATUS, self.snapshot()))

    def report(self, progress: LoadProgress, now: datetime) -> None:
        self.progress = progress
        self.updated_at = now
        self.changes.append(BenchmarkChanged(BenchmarkChangeKind.PROGRESS, self.snapshot()))

    def finish(
        self,
        status: BenchmarkStatus,
        reason: str,
        now: datetime,
        result: LoadResult | None = None,
        progress: LoadProgress | None = None,
    ) -> bool:
        """End it (once: False if it had ended already), with its final progress when the run
        knows it (every request it sent, not the last report's)."""
        assert status.is_final
        if self.status.is_final:
            return False
        self.status, self.status_message = status, reason
        if result is not None:
            self.result = result
        if progress is not None:
            self.progress = progress
        self.finished_at = self.updated_at = now
        self.changes.append(BenchmarkChanged(BenchmarkChangeKind.STATUS, self.snapshot()))
        return True

    def attach(
        self, result: LoadResult | None, now: datetime, progress: LoadProgress | None = None
    ) -> None:
        """What a run measured, kept on a benchmark that ended meanwhile (cancelled)."""
        if result is None or self.result is not None:
            return
        self.result = result
        if progress is not None:
            self.progress = progress
        self.updated_at = now
        self.changes.append(BenchmarkChanged(BenchmarkChangeKind.STATUS, self.snapshot()))

    def snapshot(self) -> Benchmark:
        return replace(self, changes=[], configuration=dict(self.configuration))
