"""Reading Kubernetes objects as the API server returns them (JSON): metadata, status,
conditions and RFC 3339 times, each tolerant of what is missing."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any


def metadata(obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return (obj or {}).get("metadata") or {}


def labels(obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return metadata(obj).get("labels") or {}


def located(obj: Mapping[str, Any] | None) -> tuple[str, str]:
    """Its namespace ("" for a cluster-wide object) and name."""
    found = metadata(obj)
    return str(found.get("namespace") or ""), str(found.get("name") or "")


def status(obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return (obj or {}).get("status") or {}


def condition(obj: Mapping[str, Any] | None, kind: str) -> Mapping[str, Any] | None:
    conditions = status(obj).get("conditions") or []
    return next((c for c in conditions if c.get("type") == kind), None)


def true_condition(obj: Mapping[str, Any] | None, kind: str) -> Mapping[str, Any] | None:
    cond = condition(obj, kind)
    return cond if cond is not None and cond.get("status") == "True" else None


def rfc3339(value: object) -> datetime | None:
    """An RFC 3339 time from the API server ("2024-06-03T09:12:44Z") as aware UTC."""
    if value is None or value == "":
        return None
    parsed = datetime.fromisoformat(str(value))
    if parsed.tzinfo is None:
        raise ValueError(f"{value!r} is not an RFC 3339 time (no offset)")
    return parsed.astimezone(UTC)


def because(cond: Mapping[str, Any]) -> str:
    parts = [str(cond[key]) for key in ("reason", "message") if cond.get(key)]
    return ": ".join(parts) or "no reason given"
