"""GET /spend.csv: `Query.spend` as CSV, every row of the range (no paging), for billing.

    curl -H "Authorization: Bearer $TOKEN" \
      "http://127.0.0.1:8000/spend.csv?from=2026-11-01&to=2026-11-30&groupBy=PROJECT,DAY"

The caller's token decides what it holds, as in GraphQL (jobs:read; a tenant its own spend, a
token limited to projects theirs, the operator every tenant's), and the export is paid from the
caller's and its tenant's rate buckets like an operation (`EXPORT_COST` points). A bad argument
is 400 naming it, as JSON with the shape of a GraphQL error."""

from __future__ import annotations

import csv
import io
from collections.abc import AsyncIterator, Callable, Sequence
from datetime import date

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from budcluster.http.guards import json_error
from domain.errors import Unauthenticated, ValidationFailed
from domain.model.principal import Scope
from domain.model.spend import SpendGroup, SpendRow
from schema.admission import pay, seconds_to_wait
from schema.context import ApiServices, Context

EXPORT_COST = 100
"""Points an export takes from the caller's buckets: as a previewJob (a GROUP BY over at most a
year of the ledger, then as many rows as it has)."""

_COLUMNS: dict[SpendGroup, tuple[str, Callable[[SpendRow], object]]] = {
    SpendGroup.TENANT: ("tenant_id", lambda r: r.tenant_id),
    SpendGroup.PROJECT: ("project_id", lambda r: r.project_id),
    SpendGroup.CLUSTER: ("cluster_id", lambda r: r.cluster_id),
    SpendGroup.GPU_TYPE: ("gpu_type", lambda r: r.gpu_type),
    SpendGroup.JOB_TYPE: ("job_type", lambda r: r.job_type),
    SpendGroup.DAY: ("day", lambda r: r.day),
}


def _bad(field: str, message: str) -> Response:
    return json_error(400, f"{field} {message}", code="BAD_USER_INPUT")


def _day(request: Request, field: str) -> date | Response:
    raw = request.query_params.get(field)
    if raw is None:
        return _bad(field, "is required (a UTC day, YYYY-MM-DD)")
    try:
        return date.fromisoformat(raw)
    except ValueError:
        return _bad(field, "is not a day (YYYY-MM-DD)")


def _groups(request: Request) -> list[SpendGroup] | Response:
    raw = request.query_params.get("groupBy", "")
    names = [n.strip() for n in raw.split(",") if n.strip()]
    try:
        return [SpendGroup(n) for n in names]
    except ValueError:
        return _bad("groupBy", f"names one of {', '.join(g.value for g in SpendGroup)}")


def spend_csv(services: ApiServices) -> Callable[[Request], object]:
    async def export(request: Request) -> Response:
        scheme, _, bearer = request.headers.get("authorization", "").partition(" ")
        try:
            if scheme.lower() != "bearer":
                raise Unauthenticated("a bearer token is required")
            principal = await services.tokens.authenticate(bearer)
        except Unauthenticated as exc:
            return json_error(401, exc.message, headers={"WWW-Authenticate": "Bearer"})
        if not principal.has(Scope.JOBS_READ):
            return json_error(403, "this token lacks the jobs:read scope", code="FORBIDDEN")
        first, last, groups = _day(request, "from"), _day(request, "to"), _groups(request)
        for parsed in (first, last, groups):
            if isinstance(parsed, Response):
                return parsed
        assert isinstance(first, date) and isinstance(last, date) and isinstance(groups, list)
        try:
            query = services.spend.query(principal, first, last, groups)
        except ValidationFailed as exc:
            issue = exc.issues[0]
            return _bad({"group_by": "groupBy"}.get(issue.field, issue.field), issue.message)
        wait = await pay(Context(services, principal, request=request), EXPORT_COST)
        if wait > 0:
            seconds = seconds_to_wait(wait)
            return json_error(
                429,
                f"rate limit reached: try again in {seconds} s",
                code="RATE_LIMITED",
                headers={"Retry-After": str(seconds)},
            )
        columns = [_COLUMNS[g] for g in groups]
        rows = services.spend.rows(query)
        name = f"spend-{first.isoformat()}-{last.isoformat()}.csv"
        return StreamingResponse(
            _lines([c[0] for c in columns], [c[1] for c in columns], rows),
            media_type="text/csv; charset=utf-8",
            headers={"Content-Disposition": f'attachment; filename="{name}"'},
        )

    return export


async def _lines(
    header: list[str], values: Sequence[Callable[[SpendRow], object]], rows: AsyncIterator[SpendRow]
) -> AsyncIterator[str]:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([*header, "gpu_hours", "cost"])
    async for row in rows:
        cells = ["" if (v := value(row)) is None else str(v) for value in values]
        writer.writerow([*cells, f"{row.gpu_hours:.6f}", str(row.cost)])
        if out.tell() > 65536:
            yield out.getvalue()
            out.seek(0)
            out.truncate()
    yield out.getvalue()
