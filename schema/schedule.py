"""Reading a cluster's schedule for the caller: the window, the filter, and visibility."""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from domain.errors import NotFound, ValidationFailed
from domain.model.ids import ClusterId
from domain.model.principal import Scope
from domain.model.timeline import Timeline
from schema.access import requires
from schema.admission import charge
from schema.context import Info
from schema.fairness import heavy_work
from schema.refusals import argument_error
from schema.types.errors import UserInputError
from schema.types.forecast import CostForecast
from schema.types.timeline import EstimateAccuracy, Schedule, ScheduleFilter, schedule_of

DEFAULT_BEFORE = timedelta(hours=1)
DEFAULT_SPAN = timedelta(hours=24)
MAX_SPAN = timedelta(days=31)
ROUNDING = timedelta(minutes=5)
EARLIEST = datetime(2000, 1, 1, tzinfo=UTC)
HORIZON = timedelta(days=3660)
"""How far ahead of now a window may start: estimates reach no further."""


def _floor(at: datetime, step: timedelta) -> datetime:
    return at - (at - datetime.min.replace(tzinfo=at.tzinfo)) % step


def moment(value: datetime, field: str, now: datetime) -> datetime:
    """A time argument: with a timezone, from 2000 to ten years ahead."""
    if value.tzinfo is None:
        raise UserInputError(f"{field} needs a timezone (e.g. 2026-11-23T10:00:00Z)", field=field)
    if not EARLIEST <= value <= now + HORIZON:
        raise UserInputError(
            f"{field} must be between {EARLIEST.year} and ten years from now", field=field
        )
    return value


def window(
    now: datetime, start: datetime | None, end: datetime | None
) -> tuple[datetime, datetime]:
    # The default start is rounded down to the 5 minutes, so watchers share one cut of a change.
    start = _floor(now, ROUNDING) - DEFAULT_BEFORE if start is None else moment(start, "from", now)
    end = start + DEFAULT_SPAN if end is None else moment(end, "to", now + MAX_SPAN)
    if end <= start:
        raise UserInputError("to must be after from", field="to")
    if end - start > MAX_SPAN:
        raise UserInputError(f"the window may span at most {MAX_SPAN.days} days", field="to")
    return start, end


def filtered(timeline: Timeline, flt: ScheduleFilter | None) -> Timeline:
    if flt is None:
        return timeline
    kinds = set(flt.kinds or ())
    priorities = {p.value for p in flt.priorities or ()}
    segments = {
        k: s
        for k, s in timeline.segments.items()
        if (not kinds or s.kind in kinds) and (not priorities or s.priority in priorities)
    }
    queue = tuple(e for e in timeline.queue if not priorities or e.priority in priorities)
    return replace(timeline, segments=segments, queue=queue)


@requires(Scope.JOBS_READ)
async def schedule_for(
    info: Info,
    cluster_id: str,
    start: datetime | None,
    end: datetime | None,
    flt: ScheduleFilter | None,
) -> Schedule:
    principal = info.context.authenticated()
    services = info.context.services
    start, end = window(services.timeline.now(), start, end)
    async with heavy_work(info.context):
        with argument_error("id", catching=NotFound, message="no such cluster"):
            view = await services.timeline.view(
                principal,
                ClusterId(uuid.UUID(cluster_id)),
                start,
                end,
                only_mine=bool(flt and flt.only_mine),
            )
        shown = filtered(view.timeline, flt)
        await charge(info.context, objects_in(shown), "schedule")
        return schedule_of(view.sequence, shown, principal, start, end)


def objects_in(timeline: Timeline) -> int:
    """What a schedule answers with, one point an object: its segments (once for each row
    they cover, as `rows { segments }` lists them), queue entries, rows and forecast points."""
    return (
        sum(1 + len(s.rows) for s in timeline.segments.values())
        + len(timeline.queue)
        + len(timeline.rows)
        + sum(len(points) for points in timeline.forecast.values())
    )


@requires(Scope.CLUSTERS_READ)
async def accuracy_for(info: Info, cluster_id: str, since: datetime | None) -> EstimateAccuracy:
    if since is not None:
        since = moment(since, "since", info.context.services.timeline.now())
    async with heavy_work(info.context):
        accuracy = await info.context.services.timeline.accuracy(
            ClusterId(uuid.UUID(cluster_id)), since=since
        )
    return EstimateAccuracy.from_domain(accuracy)


async def cost_forecast_for(info: Info, cluster_id: str, hours: int) -> CostForecast:
    principal = info.context.authenticated()
    async with heavy_work(info.context):
        with argument_error("hours", catching=ValidationFailed):
            forecast = await info.context.services.timeline.cost_forecast(
                principal, ClusterId(uuid.UUID(cluster_id)), hours
            )
    return CostForecast.from_domain(forecast)
