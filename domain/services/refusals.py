"""Refusals in the audit trail: failed authentications, and operations refused before they ran.

A refusal costs its sender next to nothing and may come in floods, so it is recorded within
limits: at most `per_key` records a minute for one key (a token, or a client address when there
is none) and at most `overall` a minute in all, counted in each API process. What goes beyond is
counted, not lost: the key's next record says how many of its refusals were not recorded before
it (`input.unrecorded`). A record names the caller (its token and tenant when it was
authenticated, so that the tenant reads it; else the client address, and only the operator reads
it), the operation's name, the transport and the client address, and has the code it was
refused with as its outcome; never the document, its variables or a token.
"""

from __future__ import annotations

import re
import uuid
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime

from domain.model.audit import AuditEvent
from domain.model.ids import TenantId
from domain.ports.clock import Clock
from domain.ports.unit_of_work import TenantScope, UnitOfWorkFactory

WINDOW_SECONDS = 60.0
MAX_KEYS = 10_000
_NAME = re.compile(r"[_A-Za-z][_0-9A-Za-z]{0,99}")


@dataclass(frozen=True)
class Refusal:
    code: str
    operation: str | None
    """The operation's name as the client gave it (kept only if it is a GraphQL name)."""
    address: str
    transport: str
    """`http` or `websocket`."""
    tenant_id: TenantId | None = None
    token_id: uuid.UUID | None = None

    @property
    def actor(self) -> str:
        if self.token_id is not None:
            return f"token:{self.token_id}"
        if self.tenant_id is not None:
            return f"tenant:{self.tenant_id}"
        return f"address:{self.address[:64]}"


@dataclass
class _Window:
    start: float
    written: int = 0
    unrecorded: int = 0


class RefusalRecords:
    def __init__(
        self, *, uow: UnitOfWorkFactory, clock: Clock, per_key: int = 10, overall: int = 300
    ) -> None:
        self._uow = uow
        self._clock = clock
        self.per_key = per_key
        self.overall = overall
        self._keys: OrderedDict[str, _Window] = OrderedDict()
        self._all = _Window(float("-inf"))

    async def record(self, refusal: Refusal) -> bool:
        """Write the refusal's event if its key and the process are within their limits (else
        count it for the key's next record); whether it was written."""
        now = self._clock.now()
        seconds = now.timestamp()
        window = self._keys.pop(refusal.actor, None) or _Window(seconds)
        self._keys[refusal.actor] = window
        while len(self._keys) > MAX_KEYS:
            self._keys.popitem(last=False)
        for counted in (window, self._all):
            if seconds - counted.start >= WINDOW_SECONDS:
                counted.start, counted.written = seconds, 0
        if window.written >= self.per_key or self._all.written >= self.overall:
            window.unrecorded += 1
            return False
        unrecorded, window.unrecorded = window.unrecorded, 0
        window.written += 1
        self._all.written += 1
        try:
            async with self._uow(TenantScope.system()) as uow:
                await uow.audit.add(_event(refusal, now, unrecorded))
                await uow.commit()
        except BaseException:
            window.unrecorded += unrecorded + 1
            raise
        return True


def _event(refusal: Refusal, at: datetime, unrecorded: int) -> AuditEvent:
    given: dict[str, object] = {"address": refusal.address[:64], "transport": refusal.transport}
    if unrecorded:
        given["unrecorded"] = unrecorded
    name = refusal.operation or ""
    return AuditEvent(
        id=uuid.uuid4(),
        at=at,
        tenant_id=refusal.tenant_id,
        actor=refusal.actor,
        token_id=refusal.token_id,
        operation=name if _NAME.fullmatch(name) else "(unnamed)",
        targets=(),
        input=given,
        outcome=refusal.code,
        source="graphql",
    )
