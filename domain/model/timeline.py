"""The cluster schedule timeline as data: rows (one per GPU, and a CPU pool row), segments on
them, the waiting queue and the free-GPU forecast; and a change between two timelines.

Built by `domain.scheduling.timeline`; stored and sent as plain JSON documents.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

CPU_ROW = "cpu"


class SegmentKind(enum.StrEnum):
    COMPLETED = "COMPLETED"
    RUNNING = "RUNNING"
    ESTIMATED = "ESTIMATED"
    RESERVED = "RESERVED"


@dataclass(frozen=True)
class Row:
    id: str
    node: str | None
    gpu_index: int | None
    gpu_type: str | None


@dataclass(frozen=True)
class Segment:
    id: str
    rows: tuple[str, ...]
    start: datetime | None
    end: datetime | None
    """None: open-ended (a service, or not yet estimated)."""
    kind: SegmentKind
    source: str
    """Where the end comes from: actual, estimate, history, default, service, reservation."""
    job_id: str | None = None
    tenant_id: str | None = None
    name: str = ""
    status: str | None = None
    priority: str | None = None
    reservation_id: str | None = None
    earliest_start: datetime | None = None
    latest_start: datetime | None = None
    """A waiting job's start window at the default confidence (the band drawn around an
    estimated segment); None without one (or no later bound)."""
    job_type: str | None = None
    project_id: str | None = None
    """A job's project (a reservation is of its whole tenant)."""

    def overlaps(self, start: datetime, end: datetime) -> bool:
        if self.start is None:
            return False
        return self.start < end and (self.end is None or self.end > start)


@dataclass(frozen=True)
class QueueEntry:
    job_id: str
    tenant_id: str
    name: str
    position: int
    estimated_start: datetime | None
    reason: str
    warnings: tuple[str, ...] = ()
    priority: str = ""
    gpu_type: str | None = None
    gpu_count: int = 0
    """GPUs per pod."""
    pod_count: int = 1
    job_type: str = ""
    earliest_start: datetime | None = None
    latest_start: datetime | None = None
    """The start window at the default confidence, as on the job's estimated segment."""
    project_id: str | None = None


@dataclass(frozen=True)
class Timeline:
    computed_at: datetime
    rows: tuple[Row, ...]
    segments: Mapping[str, Segment]
    queue: tuple[QueueEntry, ...] = ()
    forecast: Mapping[str, tuple[tuple[datetime, int], ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class TimelineDiff:
    computed_at: datetime
    added: tuple[Segment, ...] = ()
    moved: tuple[Segment, ...] = ()
    removed: tuple[str, ...] = ()
    queue: tuple[QueueEntry, ...] | None = None
    forecast: Mapping[str, tuple[tuple[datetime, int], ...]] | None = None
    rows: tuple[Row, ...] | None = None

    @property
    def empty(self) -> bool:
        return not (self.added or self.moved or self.removed) and (
            self.queue is None and self.forecast is None and self.rows is None
        )


# --- documents --------------------------------------------------------------------------------


def _dt(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _parse(value: Any) -> datetime | None:
    return datetime.fromisoformat(value) if value is not None else None


def segment_to_document(s: Segment) -> dict[str, Any]:
    return {
        "id": s.id,
        "rows": list(s.rows),
        "start": _dt(s.start),
        "end": _dt(s.end),
        "kind": s.kind.value,
        "source": s.source,
        "job_id": s.job_id,
        "tenant_id": s.tenant_id,
        "name": s.name,
        "status": s.status,
        "priority": s.priority,
        "reservation_id": s.reservation_id,
        "earliest_start": _dt(s.earliest_start),
        "latest_start": _dt(s.latest_start),
        "job_type": s.job_type,
        "project_id": s.project_id,
    }


def segment_from_document(d: Mapping[str, Any]) -> Segment:
    return Segment(
        id=d["id"],
        rows=tuple(d["rows"]),
        start=_parse(d["start"]),
        end=_parse(d["end"]),
        kind=SegmentKind(d["kind"]),
        source=d["source"],
        job_id=d["job_id"],
        tenant_id=d["tenant_id"],
        name=d["name"],
        status=d["status"],
        priority=d["priority"],
        reservation_id=d["reservation_id"],
        earliest_start=_parse(d.get("earliest_start")),
        latest_start=_parse(d.get("latest_start")),
        job_type=d.get("job_type"),
        project_id=d.get("project_id"),
    )


def _queue_doc(q: Iterable[QueueEntry]) -> list[dict[str, Any]]:
    return [
        {
            "job_id": e.job_id,
            "tenant_id": e.tenant_id,
            "name": e.name,
            "position": e.position,
            "estimated_start": _dt(e.estimated_start),
            "reason": e.reason,
            "warnings": list(e.warnings),
            "priority": e.priority,
            "gpu_type": e.gpu_type,
            "gpu_count": e.gpu_count,
            "pod_count": e.pod_count,
            "job_type": e.job_type,
            "earliest_start": _dt(e.earliest_start),
            "latest_start": _dt(e.latest_start),
            "project_id": e.project_id,
        }
        for e in q
    ]


def _queue_from(doc: Iterable[Mapping[str, Any]]) -> tuple[QueueEntry, ...]:
    return tuple(
        QueueEntry(
            d["job_id"],
            d["tenant_id"],
            d["name"],
            d["position"],
            _parse(d["estimated_start"]),
            d["reason"],
            tuple(d["warnings"]),
            d["priority"],
            d["gpu_type"],
            d["gpu_count"],
            d.get("pod_count", 1),
            d.get("job_type", ""),
            _parse(d.get("earliest_start")),
            _parse(d.get("latest_start")),
            d.get("project_id"),
        )
        for d in doc
    )


def _forecast_doc(f: Mapping[str, Iterable[tuple[datetime, int]]]) -> dict[str, Any]:
    return {k: [[at.isoformat(), free] for at, free in v] for k, v in f.items()}


def _forecast_from(doc: Mapping[str, Any]) -> dict[str, tuple[tuple[datetime, int], ...]]:
    return {k: tuple((datetime.fromisoformat(at), free) for at, free in v) for k, v in doc.items()}


def _rows_doc(rows: Iterable[Row]) -> list[list[Any]]:
    return [[r.id, r.node, r.gpu_index, r.gpu_type] for r in rows]


def _rows_from(doc: Iterable[Sequence[Any]]) -> tuple[Row, ...]:
    return tuple(Row(r[0], r[1], r[2], r[3]) for r in doc)


def timeline_to_document(t: Timeline) -> dict[str, Any]:
    return {
        "computed_at": t.computed_at.isoformat(),
        "rows": _rows_doc(t.rows),
        "segments": [segment_to_document(s) for s in t.segments.values()],
        "queue": _queue_doc(t.queue),
        "forecast": _forecast_doc(t.forecast),
    }


def timeline_from_document(d: Mapping[str, Any]) -> Timeline:
    segments = [segment_from_document(s) for s in d["segments"]]
    return Timeline(
        datetime.fromisoformat(d["computed_at"]),
        _rows_from(d["rows"]),
        {s.id: s for s in segments},
        _queue_from(d["queue"]),
        _forecast_from(d["forecast"]),
    )


def diff_to_document(c: TimelineDiff) -> dict[str, Any]:
    return {
        "computed_at": c.computed_at.isoformat(),
        "added": [segment_to_document(s) for s in c.added],
        "moved": [segment_to_document(s) for s in c.moved],
        "removed": list(c.removed),
        "queue": None if c.queue is None else _queue_doc(c.queue),
        "forecast": None if c.forecast is None else _forecast_doc(c.forecast),
        "rows": None if c.rows is None else _rows_doc(c.rows),
    }


def diff_from_document(d: Mapping[str, Any]) -> TimelineDiff:
    return TimelineDiff(
        datetime.fromisoformat(d["computed_at"]),
        tuple(segment_from_document(s) for s in d["added"]),
        tuple(segment_from_document(s) for s in d["moved"]),
        tuple(d["removed"]),
        None if d["queue"] is None else _queue_from(d["queue"]),
        None if d["forecast"] is None else _forecast_from(d["forecast"]),
        None if d.get("rows") is None else _rows_from(d["rows"]),
    )
