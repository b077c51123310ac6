"""The audit trail: every mutation resolver is `audited`, and `auditEvents` reads the trail (an
administrator sees every tenant's events, a tenant its own, a token limited to projects those of
its projects and its own).

`audited` wraps the resolver rather than hooking every field (a schema extension's `resolve`
would run for each field of every result: graphql-core middleware)."""

from __future__ import annotations

import dataclasses
import enum
import functools
import logging
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any, ParamSpec, TypeVar, cast

from strawberry.types.unset import UNSET

from domain.model.audit import OK, AuditCursor, AuditedOperation, current, without_secrets
from domain.model.principal import Scope
from resolvers.common import connection, decode_time_cursor, encode_cursor
from schema.access import requires
from schema.context import Info
from schema.refusals import argument_error
from schema.types.audit import AuditEvent, AuditEventConnection, AuditEventEdge, AuditFilter
from schema.types.errors import UserError, UserInputError

P = ParamSpec("P")
R = TypeVar("R")
log = logging.getLogger(__name__)


def audited(resolver: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
    """A mutation as an audited operation (domain.model.audit): current while it runs, so the
    unit of work that commits its first change writes its event in that transaction; ended
    with its outcome (OK, or the code of the typed error or refusal it answered with) and the
    id of what it returned."""

    @functools.wraps(resolver)
    async def run(*args: P.args, **kwargs: P.kwargs) -> R:
        info = cast(Info, kwargs.get("info", args[0] if args else None))
        principal = info.context.authenticated()
        given = {k: _plain(v) for k, v in kwargs.items() if k != "info"}
        operation = AuditedOperation(
            tenant_id=principal.tenant_id,
            actor=f"token:{principal.token_id}"
            if principal.token_id
            else f"tenant:{principal.tenant_id}",
            token_id=principal.token_id,
            operation=info.field_name,
            input=without_secrets(given),
            operator=principal.sees_every_tenant,
        )
        operation.target(*_ids_in(given))
        token = current.set(operation)
        outcome = "ERROR"
        try:
            result = await resolver(*args, **kwargs)
            outcome = str(result.code) if isinstance(result, UserError) else OK
            operation.target(getattr(result, "id", None))
            return result
        except UserInputError as exc:
            outcome = str(exc.extensions.get("code", "BAD_USER_INPUT"))
            raise
        except Exception as exc:
            outcome = str(getattr(exc, "code", "ERROR"))
            raise
        finally:
            current.reset(token)
            try:
                await info.context.services.audit.finish(operation, outcome)
            except Exception:
                log.exception("the audit event of %s could not be written", info.field_name)

    return run


def _plain(value: Any) -> Any:
    """An argument as JSON-like data (Strawberry's inputs are dataclasses)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: _plain(getattr(value, f.name))
            for f in dataclasses.fields(value)
            if getattr(value, f.name) is not UNSET
        }
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items() if v is not UNSET}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, datetime):
        return value.isoformat()
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


def _ids_in(value: Any, key: str = "") -> list[str]:
    """The ids an input names: fields called id, ids, or ending in _id / _ids."""
    named = key in ("id", "ids") or key.endswith(("_id", "_ids"))
    if isinstance(value, dict):
        return [i for k, v in value.items() for i in _ids_in(v, k)]
    if isinstance(value, list):
        return [i for v in value for i in _ids_in(v, key)] if named else []
    return [str(value)] if named and isinstance(value, str) else []


@requires(Scope.JOBS_READ)
async def audit_events(
    info: Info, filter: AuditFilter | None = None, first: int = 50, after: str | None = None
) -> AuditEventConnection:
    principal = info.context.authenticated()
    cursor = AuditCursor(*decode_time_cursor(after)) if after else None
    wanted = (filter or AuditFilter()).to_domain()
    with argument_error("first"):
        page = await info.context.services.audit.page(principal, wanted, first=first, after=cursor)
    return connection(
        AuditEventConnection,
        AuditEventEdge,
        page.events,
        AuditEvent.from_domain,
        page.has_next,
        cursor=lambda e: encode_cursor(e.at, e.id),
    )
