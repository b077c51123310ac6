"""What a job's containers wrote: its log lines, as its cluster keeps them (and as budcluster
keeps the last of a failed attempt's, once its pods are gone)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

MAX_LOG_LINES = 5000
"""The most lines one read returns (the last ones, when there are more)."""
KEPT_LINES = 200
"""The last lines of each pod of a failed attempt kept with it: what a reader needs to see why
it failed (a Python traceback with its context is rarely longer), small enough to keep every
failed attempt's."""


@dataclass(frozen=True)
class LogLine:
    """One line a workload's container wrote."""

    at: datetime
    pod: str
    text: str
