"""An OpenAI-compatible streaming server for tests: tokens on a real-time schedule, and faults.

`/v1/chat/completions` and `/v1/completions` stream `max_tokens` tokens, one word per chunk,
token k at start + ttft + k * itl on the loop's clock: the deadlines are absolute, so a late
wake-up delays one token and not the ones after it. Then a usage chunk (when the request asks for
it, as vLLM does; `usage=False` never sends one) and [DONE]. A fault is picked per request by its
arrival number (`faults={1: Fault.DROP}`), or for all of them (`fault=`); the stream-breaking
ones strike after `fault_after` tokens. The server counts requests, the most it had in flight at
once, and keeps every request body. Handlers are cancelled when their client leaves, so a stalled
stream ends with its client.
"""

from __future__ import annotations

import asyncio
import enum
import json
from collections.abc import Mapping
from types import TracebackType
from typing import Any, Self

from aiohttp import web


class Fault(enum.Enum):
    STALL = "stall"
    """Stops sending (the connection stays open)."""
    DROP = "drop"
    """Drops the connection mid-stream."""
    TOO_MANY_REQUESTS = "429"
    SERVER_ERROR = "500"
    NOT_JSON = "not-json"
    """A data line that is not JSON."""
    ERROR_EVENT = "error-event"
    """An OpenAI error object in the stream, then [DONE]."""
    NO_DONE = "no-done"
    """Every token and the usage, then the stream ends cleanly without [DONE]."""
    EMPTY = "empty"
    """A stream with no content: the role chunk, the usage and [DONE]."""


class FakeLLM:
    def __init__(
        self,
        *,
        ttft: float = 0.0,
        itl: float = 0.0,
        faults: Mapping[int, Fault] | None = None,
        fault: Fault | None = None,
        fault_after: int = 3,
        models_status: int = 200,
        line_end: str = "\n",
        data_space: bool = True,
        comments: bool = False,
        split_events: bool = False,
        usage: bool = True,
    ) -> None:
        self.ttft = ttft
        self.itl = itl
        self.faults = dict(faults or {})
        self.fault = fault
        self.fault_after = fault_after
        self.models_status = models_status
        self.line_end = line_end
        self.data_prefix = "data: " if data_space else "data:"
        self.comments = comments
        self.split_events = split_events
        self.usage = usage
        self.requests = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.tokens_sent = 0
        self.bodies: list[dict[str, Any]] = []
        self._token_written = asyncio.Condition()
        self._runner: web.AppRunner | None = None
        self.url = ""

    async def __aenter__(self) -> Self:
        app = web.Application()
        app.router.add_get("/v1/models", self._models)
        app.router.add_post("/v1/chat/completions", self._complete)
        app.router.add_post("/v1/completions", self._complete)
        self._runner = web.AppRunner(
            app, handler_cancellation=True, access_log=None, shutdown_timeout=1.0
        )
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = self._runner.addresses[0][1]
        self.url = f"http://127.0.0.1:{port}/v1"
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        assert self._runner is not None
        await self._runner.cleanup()

    async def until_tokens(self, count: int) -> None:
        """Waits until the server has streamed `count` tokens in all."""
        async with self._token_written:
            await self._token_written.wait_for(lambda: self.tokens_sent >= count)

    async def _models(self, request: web.Request) -> web.Response:
        if self.models_status != 200:
            return web.Response(status=self.models_status, text="no such route")
        return web.json_response({"object": "list", "data": [{"id": "fake", "object": "model"}]})

    async def _complete(self, request: web.Request) -> web.StreamResponse:
        number = self.requests
        self.requests += 1
        body = await request.json()
        self.bodies.append(body)
        fault = self.faults.get(number, self.fault)
        if fault is Fault.TOO_MANY_REQUESTS:
            error = {"message": "Too many requests, slow down", "type": "rate_limit", "code": 429}
            return web.json_response({"error": error}, status=429)
        if fault is Fault.SERVER_ERROR:
            return web.Response(status=500, text="Internal Server Error\nthe engine crashed")
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            return await self._stream(request, body, fault)
        finally:
            self.in_flight -= 1

    async def _stream(
        self, request: web.Request, body: dict[str, Any], fault: Fault | None
    ) -> web.StreamResponse:
        loop = asyncio.get_running_loop()
        start = loop.time()
        chat = request.path.endswith("/chat/completions")
        response = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
        )
        await response.prepare(request)
        if chat:
            await self._send(response, _chunk(chat, "", role=True))
        tokens = 0 if fault is Fault.EMPTY else int(body["max_tokens"])
        breaks = fault in (Fault.STALL, Fault.DROP, Fault.NOT_JSON, Fault.ERROR_EVENT)
        for k in range(tokens):
            if breaks and k == self.fault_after:
                return await self._break(request, response, fault)
            delay = start + self.ttft + k * self.itl - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            await self._send(response, _chunk(chat, "word "))
            async with self._token_written:
                self.tokens_sent += 1
                self._token_written.notify_all()
        if self.usage and (body.get("stream_options") or {}).get("include_usage"):
            usage = {
                "prompt_tokens": _prompt_tokens(body),
                "completion_tokens": tokens,
                "total_tokens": _prompt_tokens(body) + tokens,
            }
            await self._send(response, json.dumps({"choices": [], "usage": usage}))
        if fault is not Fault.NO_DONE:
            await self._send(response, "[DONE]")
        await response.write_eof()
        return response

    async def _break(
        self, request: web.Request, response: web.StreamResponse, fault: Fault | None
    ) -> web.StreamResponse:
        if fault is Fault.STALL:
            await asyncio.Event().wait()  # until the client leaves and the handler is cancelled
        if fault is Fault.DROP:
            assert request.transport is not None
            request.transport.abort()
            return response
        if fault is Fault.NOT_JSON:
            await self._send(response, "{this is not json")
        if fault is Fault.ERROR_EVENT:
            error = {"message": "CUDA out of memory", "type": "InternalServerError", "code": 500}
            await self._send(response, json.dumps({"error": error}))
        await self._send(response, "[DONE]")
        await response.write_eof()
        return response

    async def _send(self, response: web.StreamResponse, data: str) -> None:
        end = self.line_end
        event = f"{self.data_prefix}{data}{end}{end}"
        if self.comments:
            event = f": keep-alive{end}{event}"
        raw = event.encode()
        if self.split_events:
            middle = len(raw) // 2
            await response.write(raw[:middle])
            await response.write(raw[middle:])
        else:
            await response.write(raw)


def _chunk(chat: bool, text: str, *, role: bool = False) -> str:
    if chat:
        delta = {"role": "assistant", "content": text} if role else {"content": text}
        choice: dict[str, Any] = {"index": 0, "delta": delta, "finish_reason": None}
        kind = "chat.completion.chunk"
    else:
        choice = {"index": 0, "text": text, "finish_reason": None}
        kind = "text_completion"
    return json.dumps({"id": "cmpl-fake", "object": kind, "model": "fake", "choices": [choice]})


def _prompt_tokens(body: dict[str, Any]) -> int:
    if "messages" in body:
        return sum(len(str(m.get("content", "")).split()) for m in body["messages"])
    return len(str(body.get("prompt", "")).split())
