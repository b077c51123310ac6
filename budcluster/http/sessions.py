"""Open WebSockets, by the token they were opened with: a revoked or expired token's sockets close.

A WebSocket is authenticated once, by connection_init, and may then live for days; every
operation sent on it checks its token again (schema/extensions.py), but a subscription already
streaming sends no operation. So each API process keeps its open sockets by token id and, every
`interval`, asks the database in one query which of those tokens were revoked or have expired,
and closes their sockets with 4403. A token revoked by any process or by the CLI is seen by every
API process within `interval`, with no broker between them.
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict

from starlette.websockets import WebSocket, WebSocketState

from domain.model.ids import TokenId
from domain.ports.clock import Clock
from domain.services.tokens import TokenService

log = logging.getLogger(__name__)

CLOSE_REVOKED = 4403


class Sessions:
    def __init__(self, tokens: TokenService, clock: Clock, *, interval: float) -> None:
        self._tokens = tokens
        self._clock = clock
        self._interval = interval
        self._open: dict[TokenId, set[WebSocket]] = defaultdict(set)
        self._task: asyncio.Task[None] | None = None

    def add(self, token_id: TokenId, socket: WebSocket) -> asyncio.Task[None] | None:
        """Track `socket`; returns the checking task when this call started it."""
        self._open[token_id].add(socket)
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self.run(), name="token-sessions")
            return self._task
        return None

    def discard(self, socket: WebSocket) -> None:
        for token_id in [t for t, sockets in self._open.items() if socket in sockets]:
            self._open[token_id].discard(socket)
            if not self._open[token_id]:
                del self._open[token_id]

    def count(self) -> int:
        return sum(len(sockets) for sockets in self._open.values())

    async def sweep(self) -> int:
        """Close the sockets of tokens no longer usable; returns how many were closed."""
        gone = await self._tokens.unusable(list(self._open))
        closed = 0
        for token_id in gone:
            for socket in self._open.pop(token_id, set()):
                closed += await self._close(socket)
        return closed

    @staticmethod
    async def _close(socket: WebSocket) -> int:
        if socket.application_state is WebSocketState.DISCONNECTED:
            return 0
        try:
            await socket.close(code=CLOSE_REVOKED, reason="token revoked or expired")
        except Exception:  # already going away
            return 0
        return 1

    async def run(self) -> None:
        while True:
            await self._clock.sleep(self._interval)
            if not self._open:
                continue
            try:
                await self.sweep()
            except Exception:
                log.exception("checking the tokens of open WebSockets failed")
