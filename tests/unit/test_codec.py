"""Outbox documents: a job and its change survive the trip through JSON unchanged."""

from __future__ import annotations

import json
from datetime import timedelta
from decimal import Decimal

from adapters.shapes.documents import change_from_document, change_to_document
from domain.model.job import JobChanged, JobPriority, JobStatus, Placement, Resources
from tests.support.fakes import T0
from tests.unit.test_job_model import new_job


def test_round_trip_through_json() -> None:
    job = new_job()
    job.resources = Resources("nvidia-a100-80gb", 4, 8.0, 64.0, 100, pod_count=2)
    job.budget_limit = Decimal("12.5000")
    job.deadline = T0 + timedelta(hours=3)
    job.spec = {"image": "x", "nested": [1, 2, {"a": None}]}
    job.transition(JobStatus.QUEUED, "q", T0)
    job.place((Placement("node-1", (0, 1, 2, 3)),), job.updated_at)
    job.place((Placement("node-1", (0, 1, 2, 3)), Placement("node-2", (4, 5, 6, 7))), T0)
    job.change_priority(JobPriority.HIGH, T0 + timedelta(seconds=1))
    for change in job.changes:
        decoded = change_from_document(json.loads(json.dumps(change_to_document(change))))
        assert isinstance(decoded, JobChanged)
        assert decoded.kind == change.kind
        assert decoded.transition == change.transition
        assert decoded.previous_priority == change.previous_priority
        original, copy = change.job, decoded.job
        for name in (
            "id",
            "status",
            "resources",
            "budget_limit",
            "deadline",
            "spec",
            "priority",
            "placements",
            "created_at",
            "tenant_id",
        ):
            assert getattr(copy, name) == getattr(original, name), name
