"""Previewing a job: where and when it would start, and its cost, without submitting it."""

from __future__ import annotations

from typing import Annotated

import strawberry

from domain.errors import DomainError
from domain.model.ids import ClusterId
from domain.model.principal import Scope
from domain.services.dispatch import refusal
from domain.services.timeline import Preview
from resolvers.jobs import to_submission
from schema.access import requires
from schema.context import Info
from schema.fairness import heavy_work
from schema.refusals import typed_errors_as
from schema.types import errors
from schema.types.dispatch import FleetMemberPreview
from schema.types.inputs import SubmitJobInput
from schema.types.placement import Placement
from schema.types.timeline import JobPreview

PreviewJobResult = Annotated[
    JobPreview | errors.ValidationError | errors.NotFoundError | errors.ForbiddenError,
    strawberry.union("PreviewJobResult"),
]


def _nothing_stored(
    exc: DomainError,
) -> errors.ValidationError | errors.NotFoundError | errors.ForbiddenError:
    """A preview's refusal: as a command's, but nothing is stored, so nothing conflicts."""
    error = errors.from_domain(exc)
    if isinstance(error, errors.ConflictError):
        return errors.ValidationError(code=error.code, message=error.message, fields=[])
    return error


@requires(Scope.JOBS_READ)
@typed_errors_as(_nothing_stored)
async def preview_job(info: Info, input: SubmitJobInput) -> PreviewJobResult:
    principal = info.context.authenticated()
    submission = to_submission(input)
    wide = submission.resources.total_pods > 1
    if submission.fleet_id is not None:
        async with heavy_work(info.context):  # an estimate on each member
            offers = await info.context.services.dispatcher.offers(principal, submission)
        chosen = offers.chosen
        if chosen is None:
            raise refusal(offers)
        members = [
            FleetMemberPreview.from_offer(o, rank, wide=wide)
            for rank, o in enumerate(offers.ranked, start=1)
        ] + [FleetMemberPreview.from_offer(o, None, wide=wide) for o in offers.refused]
        return _preview(offers.previews[str(chosen.cluster_id)], chosen.cluster_id, wide, members)
    async with heavy_work(info.context):
        preview = await info.context.services.timeline.preview(principal, submission)
    return _preview(preview, submission.cluster_id, wide, [])


def _preview(
    preview: Preview, cluster_id: ClusterId, wide: bool, members: list[FleetMemberPreview]
) -> JobPreview:
    return JobPreview(
        estimated_start=preview.start,
        estimated_end=preview.end,
        placements=[Placement.from_domain(p) for p in preview.placements],
        reason=preview.reason,
        warnings=list(preview.warnings),
        estimated_cost=preview.estimated_cost,
        duration_source=preview.duration_source,
        cluster_id=strawberry.ID(str(cluster_id)),
        members=members,
        wide=wide,
    )
