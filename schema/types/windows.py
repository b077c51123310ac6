"""Start windows: where a waiting job's start falls with a stated probability."""

from __future__ import annotations

from datetime import datetime

import strawberry

from domain.model.ids import ClusterId
from schema.context import Info
from schema.types.errors import UserInputError


@strawberry.type(
    description="An interval that holds a job's start with the stated probability, calibrated "
    "on the cluster's recent record of estimates against real starts."
)
class StartWindow:
    earliest: datetime
    latest: datetime | None = strawberry.field(
        description="Null: the record is too short to bound the start at this confidence."
    )
    confidence: float


def _checked(confidence: float) -> None:
    if not 0.0 < confidence < 1.0:
        raise UserInputError(
            "confidence must be between 0 and 1, exclusive", code="INVALID", field="confidence"
        )


def kept_window(
    windows: tuple[tuple[float, datetime, datetime | None], ...], confidence: float
) -> StartWindow | None:
    """The window kept with a submission estimate at `confidence` (None: none was shown at
    that confidence)."""
    _checked(confidence)
    for shown, earliest, latest in windows:
        if abs(shown - confidence) < 1e-9:
            return StartWindow(earliest=earliest, latest=latest, confidence=shown)
    return None


async def start_window(
    info: Info,
    cluster_id: ClusterId | None,
    start: datetime | None,
    confidence: float,
    *,
    wide: bool = False,
) -> StartWindow | None:
    """The window of a waiting job's start (None for a job that is not waiting); `wide`: the
    job asks more than one node (wide jobs are calibrated apart)."""
    _checked(confidence)
    if cluster_id is None:
        return None
    window = await info.context.services.timeline.start_window(
        cluster_id, start, confidence, wide=wide
    )
    if window is None:
        return None
    return StartWindow(earliest=window.earliest, latest=window.latest, confidence=confidence)


WINDOW_DESCRIPTION = (
    "While the job waits: the interval its start falls in with probability `confidence` "
    "(default 0.8), from how the cluster's estimates missed recently (split conformal). Null "
    "for a job that is not waiting, or while the cluster's record is too short."
)
