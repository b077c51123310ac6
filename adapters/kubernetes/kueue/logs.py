"""An attempt's log lines, as its pods' logs read back: which container's, and each line's time.

A pod's log is read with timestamps=true: the API server puts the RFC 3339 time the kubelet
recorded before every line ("2026-11-22T12:00:00.123456789Z text"), which dates the line and
orders the lines of several pods into one. A line whose first word is not such a time (none
should be) keeps the time of the line before it, the first ones the pod's start. The container
read is "main", what budcluster names a workload's container (its Jobs', JobSets' and shipped
charts'); in a pod of a user's chart that has none so named, the one kubectl would read (the
pod's default-container annotation, else its first). `since` is honoured again here: the API
server takes sinceTime to the second.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from adapters.kubernetes.kueue.jobs import CONTAINER_NAME
from adapters.kubernetes.kueue.reading import metadata, rfc3339, status
from domain.model.logs import MAX_LOG_LINES, LogLine

DEFAULT_CONTAINER_ANNOTATION = "kubectl.kubernetes.io/default-container"


def log_container(pod: Mapping[str, Any]) -> str | None:
    """The container whose log is the pod's (module doc); None when its spec names none (the
    API server reads its only one)."""
    containers = ((pod.get("spec") or {}).get("containers")) or []
    names = [str(c["name"]) for c in containers if isinstance(c, Mapping) and c.get("name")]
    if not names:
        return None
    if CONTAINER_NAME in names:
        return CONTAINER_NAME
    chosen = (metadata(pod).get("annotations") or {}).get(DEFAULT_CONTAINER_ANNOTATION)
    return str(chosen) if chosen in names else names[0]


def tail_lines(tail: int | None) -> int:
    """The tailLines of one pod's read: `tail`, at most MAX_LOG_LINES (all of those by default)."""
    return MAX_LOG_LINES if tail is None else max(0, min(tail, MAX_LOG_LINES))


def pod_start(pod: Mapping[str, Any]) -> datetime | None:
    """When the pod started (its status.startTime), else when it was made."""
    for value in (status(pod).get("startTime"), metadata(pod).get("creationTimestamp")):
        try:
            started = rfc3339(value)
        except ValueError:
            continue
        if started is not None:
            return started
    return None


def log_lines(text: str, *, pod: str, start: datetime) -> list[LogLine]:
    """The lines of a log read with timestamps (module doc), in the order written."""
    pieces = text.split("\n")  # not splitlines: a \f or \u2028 in a line is the line's own
    if pieces[-1] == "":
        pieces.pop()
    lines = []
    at = start
    for piece in pieces:
        word, _, rest = piece.partition(" ")
        stamped = _time(word)
        at = stamped or at
        written = piece if stamped is None else rest
        lines.append(LogLine(at=at, pod=pod, text=written.removesuffix("\r")))  # \r\n ends it too
    return lines


def merged(per_pod: Iterable[list[LogLine]], *, since: datetime | None) -> list[LogLine]:
    """The pods' lines written after `since`, by time (a pod's own in the order written), the
    last MAX_LOG_LINES of them."""
    lines = [line for lines in per_pod for line in lines if since is None or line.at > since]
    lines.sort(key=lambda line: (line.at, line.pod))
    return lines[-MAX_LOG_LINES:]


def _time(word: str) -> datetime | None:
    if "T" not in word:
        return None
    try:
        parsed = datetime.fromisoformat(word)
    except ValueError:
        return None
    return parsed.astimezone(UTC) if parsed.tzinfo is not None else None
