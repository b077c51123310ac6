"""Simulated model-serving endpoints: a local OpenAI-compatible server paced by a performance model.

Each deployment key gets `/d/{key}/v1/...` (models, completions, chat completions) plus `/health`
and `/metrics`, answering as vLLM does (its validation messages and error shapes), so that LLM
benchmarks can run against model deployments on the simulated cluster. What a key serves comes
from `lookup`, at most once per `cache_seconds`, never per token. A request goes to the replica
with the fewest requests in flight, waits for one of its `max_concurrency` slots, then for the
prefills queued ahead of it on that replica (they run one at a time), and gets its first token
after its own prefill; each next token comes one decode step later, the step priced by
`performance.ServingProfile` at the number of sequences decoding on the replica at that moment.
Deadlines are absolute (event-loop time) and each follows from the one before, so late wake-ups
do not add up. There is no tokenizer: a prompt has one token per whitespace-separated word, and
the output is always `max_tokens` words (finish_reason "length"). A client that goes away is
cancelled (aiohttp's handler cancellation) and its slot freed. Streamed chunks are written from
per-request byte templates, so a token costs one write and no JSON encoding.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
import uuid
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlsplit

from aiohttp import web

from adapters.simulated.performance import PerformanceModel, ServingProfile

log = logging.getLogger(__name__)

DEFAULT_MAX_TOKENS = 16
"""OpenAI's default for completions; used for chat too (vLLM fills the context instead)."""
CLOSE_GRACE_SECONDS = 0.2
"""How long close() lets requests in flight go on before it drops them."""
_WORDS = ("the", "quick", "brown", "fox", "jumps", "over", "a", "lazy", "dog", "again")
_FIRST_WORD = tuple(json.dumps(w).encode() for w in _WORDS)
_NEXT_WORD = tuple(json.dumps(" " + w).encode() for w in _WORDS)
_HOLE = "\x00"
_HOLE_JSON = json.dumps(_HOLE)
_ERROR_TYPES = {400: "BadRequestError", 404: "NotFoundError", 503: "ServiceUnavailableError"}


@dataclass(frozen=True)
class ServedModel:
    model: str
    """The served model name: what /v1/models lists and requests must name."""
    gpu_type: str | None
    gpus_per_replica: int
    """Tensor-parallel size."""
    replicas: int
    """Replicas serving now (0: not serving)."""
    max_concurrency: int
    """Sequences per replica at once (vLLM's max_num_seqs); more wait."""
    max_model_len: int
    parameters_billion: float | None = None
    """None: from the model's name (see performance.parameters_from_name)."""

    def __post_init__(self) -> None:
        if self.gpus_per_replica < 1 or self.max_concurrency < 1 or self.max_model_len < 1:
            raise ValueError("gpus_per_replica, max_concurrency and max_model_len must be >= 1")
        if self.replicas < 0:
            raise ValueError("replicas must not be negative")


@dataclass(frozen=True)
class _Ask:
    """A validated request."""

    model: str
    prompt_tokens: int
    max_tokens: int
    stream: bool
    include_usage: bool
    chat: bool


@dataclass(frozen=True)
class _Problem:
    status: int
    message: str
    param: str | None = None


class _Replica:
    """One replica's queue, slots, prefill lane and decoding batch."""

    def __init__(self, max_concurrency: int) -> None:
        self.limit = max_concurrency
        self.assigned = 0
        """Requests routed here and not finished: waiting, prefilling or decoding."""
        self.running = 0
        self.decoding = 0
        self.context_tokens = 0
        """The decoding sequences' contexts, added up."""
        self.prefill_free_at = 0.0
        self._waiters: deque[asyncio.Future[None]] = deque()

    async def acquire(self) -> None:
        if self.running < self.limit and not self._waiters:
            self.running += 1
            return
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self.release()  # handed a slot in the same step: pass it on
            elif waiter in self._waiters:  # a release may have dropped it already
                self._waiters.remove(waiter)
            raise

    def release(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)  # the slot passes on; `running` stays
                return
        self.running -= 1


@dataclass(frozen=True)
class _Serving:
    """What a deployment key serves now, and the replicas serving it."""

    served: ServedModel
    profile: ServingProfile
    replicas: tuple[_Replica, ...]

    def least_loaded(self) -> _Replica:
        return min(self.replicas, key=lambda replica: replica.assigned)


@dataclass(frozen=True)
class _Entry:
    fresh_until: float
    serving: _Serving | None


def _serving(
    served: ServedModel | None, before: _Serving | None, performance: PerformanceModel
) -> _Serving | None:
    """The replicas (and the requests on them) stay while only the replica count changes."""
    if served is None:
        return None
    if before is None or replace(before.served, replicas=0) != replace(served, replicas=0):
        profile = performance.profile(
            model=served.model,
            gpu_type=served.gpu_type,
            tensor_parallel=served.gpus_per_replica,
            parameters_billion=served.parameters_billion,
        )
        before = _Serving(served, profile, ())
    kept = before.replicas[: served.replicas]
    added = tuple(_Replica(served.max_concurrency) for _ in range(served.replicas - len(kept)))
    return _Serving(served, before.profile, kept + added)


class SimulatedServing:
    def __init__(
        self,
        lookup: Callable[[str], Awaitable[ServedModel | None]],
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        cache_seconds: float = 1.0,
        performance: PerformanceModel | None = None,
    ) -> None:
        self._lookup = lookup
        self._host, self._port = host, port
        self._cache_seconds = cache_seconds
        self._performance = performance or PerformanceModel()
        self._entries: dict[str, _Entry] = {}
        self._lookups: dict[str, asyncio.Future[_Serving | None]] = {}
        self._completed: dict[str, int] = {}
        self._runner: web.AppRunner | None = None
        self._base_url: str | None = None

    async def start(self, *, remembered: int | None = None) -> None:
        """Listen on the configured port; with none (0), on `remembered`, the port its endpoint
        URLs were given on before (so they keep working after a restart), or, when that is
        taken, on any free port (the URLs move, and it says so)."""
        app = web.Application()
        app.add_routes(
            [
                web.get("/d/{key}/v1/models", self._models),
                web.post("/d/{key}/v1/completions", self._completions),
                web.post("/d/{key}/v1/chat/completions", self._chat_completions),
                web.get("/d/{key}/health", self._health),
                web.get("/d/{key}/metrics", self._metrics),
            ]
        )
        runner = web.AppRunner(
            app, handler_cancellation=True, access_log=None, shutdown_timeout=CLOSE_GRACE_SECONDS
        )
        await runner.setup()
        ports = [self._port] if self._port else [p for p in (remembered,) if p] + [0]
        for port in ports:
            site = web.TCPSite(runner, self._host, port)
            try:
                await site.start()
                break
            except OSError as exc:
                await site.stop()
                if port == ports[-1]:
                    await runner.cleanup()
                    raise
                log.warning(
                    "the simulated model endpoints were on port %d, which is taken now (%s): "
                    "their URLs move to another port",
                    port,
                    exc.strerror or exc,
                )
        self._runner = runner
        host, port = runner.addresses[0][:2]
        self._base_url = f"http://{host}:{port}"

    @staticmethod
    def port_of(url: str) -> int | None:
        """The port of an endpoint URL such a server gave (`http://<host>:<port>/d/<key>/v1`),
        or None."""
        parts = urlsplit(url)
        if parts.scheme != "http" or not parts.path.startswith("/d/"):
            return None
        with contextlib.suppress(ValueError):
            return parts.port
        return None

    async def close(self) -> None:
        for pending in self._lookups.values():
            pending.cancel()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    @property
    def base_url(self) -> str:
        if self._base_url is None:
            raise RuntimeError("the simulated serving endpoint has not been started")
        return self._base_url

    def endpoint(self, key: str) -> str:
        return f"{self.base_url}/d/{key}/v1"

    def load(self, key: str) -> tuple[int, ...]:
        """Requests in flight on each replica now (waiting for a slot, prefilling or decoding)."""
        entry = self._entries.get(key)
        serving = entry.serving if entry else None
        return tuple(r.assigned for r in serving.replicas) if serving else ()

    def requests_served(self, key: str) -> int:
        """Requests that got all their tokens."""
        return self._completed.get(key, 0)

    async def _resolve(self, key: str) -> _Serving | None:
        entry = self._entries.get(key)
        if entry is not None and asyncio.get_running_loop().time() < entry.fresh_until:
            return entry.serving
        pending = self._lookups.get(key)
        if pending is None:
            pending = self._lookups[key] = asyncio.ensure_future(self._refresh(key))
            pending.add_done_callback(lambda done: self._forget_lookup(key, done))
        return await asyncio.shield(pending)  # a caller going away stops no lookup

    async def _refresh(self, key: str) -> _Serving | None:
        served = await self._lookup(key)
        entry = self._entries.get(key)
        serving = _serving(served, entry.serving if entry else None, self._performance)
        fresh_until = asyncio.get_running_loop().time() + self._cache_seconds
        self._entries[key] = _Entry(fresh_until, serving)
        return serving

    def _forget_lookup(self, key: str, done: asyncio.Future[_Serving | None]) -> None:
        self._lookups.pop(key, None)
        if not done.cancelled():
            done.exception()  # retrieved: the waiters report it

    async def _find(self, request: web.Request) -> _Serving | web.Response:
        key = request.match_info["key"]
        try:
            serving = await self._resolve(key)
        except Exception:
            log.exception("looking up simulated deployment %s", key)
            return _error(_Problem(503, f"Deployment `{key}` could not be looked up."))
        if serving is None:
            return _error(_Problem(404, f"No model deployment `{key}`."))
        return serving

    async def _models(self, request: web.Request) -> web.Response:
        serving = await self._find(request)
        if isinstance(serving, web.Response):
            return serving
        served = serving.served
        card = {
            "id": served.model,
            "object": "model",
            "created": int(time.time()),
            "owned_by": "budcluster",
            "root": served.model,
            "parent": None,
            "max_model_len": served.max_model_len,
            "permission": [],
        }
        return web.json_response({"object": "list", "data": [card]})

    async def _health(self, request: web.Request) -> web.Response:
        serving = await self._find(request)
        if isinstance(serving, web.Response):
            return serving
        return web.Response(status=200 if serving.served.replicas > 0 else 503)

    async def _metrics(self, request: web.Request) -> web.Response:
        serving = await self._find(request)
        if isinstance(serving, web.Response):
            return serving
        name = json.dumps(serving.served.model)
        running = sum(r.running for r in serving.replicas)
        waiting = sum(r.assigned - r.running for r in serving.replicas)
        completed = self.requests_served(request.match_info["key"])
        lines = [
            f"vllm:num_requests_running{{model_name={name}}} {running}",
            f"vllm:num_requests_waiting{{model_name={name}}} {waiting}",
            f"vllm:request_success_total{{model_name={name}}} {completed}",
        ]
        return web.Response(text="\n".join(lines) + "\n", content_type="text/plain")

    async def _completions(self, request: web.Request) -> web.StreamResponse:
        return await self._generate(request, chat=False)

    async def _chat_completions(self, request: web.Request) -> web.StreamResponse:
        return await self._generate(request, chat=True)

    async def _generate(self, request: web.Request, *, chat: bool) -> web.StreamResponse:
        serving = await self._find(request)
        if isinstance(serving, web.Response):
            return serving
        ask = _parse(await request.read(), chat=chat)
        if isinstance(ask, _Problem):
            return _error(ask)
        problem = _check(ask, serving.served)
        if problem is not None:
            return _error(problem)
        replica, shape = serving.least_loaded(), _Shape(ask)
        if not ask.stream:
            await _run(serving.profile, replica, ask, None)
            self._count(request)
            return web.json_response(shape.response())
        response = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
        )
        await response.prepare(request)
        try:
            await _run(serving.profile, replica, ask, lambda k: response.write(shape.chunk(k)))
            await response.write(shape.ending())
        except ConnectionResetError:  # the client went away while a token was being written
            return response
        self._count(request)
        return response

    def _count(self, request: web.Request) -> None:
        key = request.match_info["key"]
        self._completed[key] = self._completed.get(key, 0) + 1


async def _run(
    profile: ServingProfile,
    replica: _Replica,
    ask: _Ask,
    emit: Callable[[int], Awaitable[None]] | None,
) -> None:
    """Pace one request through its replica, handing each token's index to `emit` when due."""
    loop = asyncio.get_running_loop()
    replica.assigned += 1
    try:
        await replica.acquire()
        try:
            deadline = await _wait_for_prefill(loop, replica, profile, ask.prompt_tokens)
            context = ask.prompt_tokens + 1
            replica.decoding += 1
            replica.context_tokens += context
            try:
                if emit is not None:
                    await emit(0)
                for k in range(1, ask.max_tokens):
                    deadline += profile.decode_step_seconds(
                        replica.decoding, replica.context_tokens
                    )
                    await _sleep_until(loop, deadline)
                    replica.context_tokens += 1
                    context += 1
                    if emit is not None:
                        await emit(k)
            finally:
                replica.decoding -= 1
                replica.context_tokens -= context
        finally:
            replica.release()
    finally:
        replica.assigned -= 1


async def _wait_for_prefill(
    loop: asyncio.AbstractEventLoop, replica: _Replica, profile: ServingProfile, prompt: int
) -> float:
    """Queue on the replica's prefill lane and wait out the prefill and the fixed overhead; the
    first token's deadline. A request that leaves while last in the lane gives back the lane
    time it has not used."""
    now = loop.time()
    queued = replica.prefill_free_at > now
    start = replica.prefill_free_at if queued else now
    end = replica.prefill_free_at = start + profile.prefill_seconds(prompt, queued=queued)
    first_token = end + profile.overhead_seconds
    try:
        await _sleep_until(loop, first_token)
    except asyncio.CancelledError:
        if replica.prefill_free_at == end:
            replica.prefill_free_at = max(start, loop.time())
        raise
    return first_token


async def _sleep_until(loop: asyncio.AbstractEventLoop, deadline: float) -> None:
    delay = deadline - loop.time()
    if delay > 0:
        await asyncio.sleep(delay)


def _parse(body: bytes, *, chat: bool) -> _Ask | _Problem:
    """Validate a request body as vLLM does, with its messages where it has one."""
    try:
        data = json.loads(body)
    except ValueError as exc:  # UnicodeDecodeError included
        return _Problem(400, f"The request body is not valid JSON: {exc}")
    if not isinstance(data, dict):
        return _Problem(400, "The request body must be a JSON object.")
    model = data.get("model")
    if not isinstance(model, str):
        return _Problem(400, "`model` must be a string.", "model")
    words = _message_words(data.get("messages")) if chat else _prompt_words(data.get("prompt"))
    if isinstance(words, _Problem):
        return words
    if words == 0:
        return _Problem(400, "The prompt is empty.", "messages" if chat else "prompt")
    newer = chat and data.get("max_completion_tokens") is not None
    field = "max_completion_tokens" if newer else "max_tokens"
    max_tokens = data.get(field)
    if max_tokens is None:
        max_tokens = DEFAULT_MAX_TOKENS
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool):
        return _Problem(400, f"`{field}` must be an integer.", field)
    if max_tokens < 1:
        return _Problem(400, f"{field} must be at least 1, got {max_tokens}.", field)
    stream = data.get("stream")
    stream = False if stream is None else stream
    if not isinstance(stream, bool):
        return _Problem(400, "`stream` must be a boolean.", "stream")
    options = data.get("stream_options")
    if options is not None and not isinstance(options, dict):
        return _Problem(400, "`stream_options` must be an object.", "stream_options")
    if options is not None and not stream:
        return _Problem(400, "Stream options can only be defined when `stream=True`.", "stream")
    include_usage = (options or {}).get("include_usage")
    include_usage = False if include_usage is None else include_usage
    if not isinstance(include_usage, bool):
        return _Problem(400, "`include_usage` must be a boolean.", "stream_options")
    if data.get("n") not in (None, 1):
        return _Problem(400, "The simulated server makes one choice per request (n=1).", "n")
    return _Ask(model, words, max_tokens, stream, include_usage, chat)


def _prompt_words(prompt: object) -> int | _Problem:
    """A string's words, or the length of a list of token ids (or of a one-string list)."""
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str):
        prompt = prompt[0]
    if isinstance(prompt, str):
        return len(prompt.split())
    if isinstance(prompt, list) and all(
        isinstance(t, int) and not isinstance(t, bool) for t in prompt
    ):
        return len(prompt)
    return _Problem(400, "`prompt` must be a string or a list of token ids.", "prompt")


def _message_words(messages: object) -> int | _Problem:
    """The words of the messages' text: string contents and "text" parts."""
    if not isinstance(messages, list) or not messages:
        return _Problem(400, "`messages` must be a non-empty list.", "messages")
    words = 0
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            return _Problem(400, f"`messages[{i}]` needs a string `role`.", "messages")
        content = message.get("content")
        if content is None:  # an assistant message with tool calls only
            continue
        parts = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if not isinstance(parts, list) or not all(isinstance(p, dict) for p in parts):
            return _Problem(400, f"`messages[{i}].content` must be a string or parts.", "messages")
        for part in parts:
            if part.get("type") != "text":
                continue  # an image or audio part
            if not isinstance(part.get("text"), str):
                return _Problem(400, f"`messages[{i}]` has a text part with no text.", "messages")
            words += len(part["text"].split())
    return words


def _check(ask: _Ask, served: ServedModel) -> _Problem | None:
    if ask.model != served.model:
        return _Problem(404, f"The model `{ask.model}` does not exist.", "model")
    if served.replicas == 0:
        return _Problem(503, f"The model `{served.model}` has no replica serving.")
    total = ask.prompt_tokens + ask.max_tokens
    if total > served.max_model_len:
        where = "messages" if ask.chat else "prompt"
        return _Problem(
            400,
            f"This model's maximum context length is {served.max_model_len} tokens. However, "
            f"you requested {total} tokens ({ask.prompt_tokens} in the {where}, "
            f"{ask.max_tokens} in the completion). Please reduce the length of the {where} "
            "or completion.",
        )
    return None


def _error(problem: _Problem) -> web.Response:
    body = {
        "error": {
            "message": problem.message,
            "type": _ERROR_TYPES[problem.status],
            "param": problem.param,
            "code": problem.status,
        }
    }
    return web.json_response(body, status=problem.status)


def _event(data: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(data, separators=(",", ":")).encode() + b"\n\n"


class _Shape:
    """One request's bodies in OpenAI's shapes (chat.completion and chat.completion.chunk, or
    text_completion), the streamed ones as byte templates with a hole for the token."""

    def __init__(self, ask: _Ask) -> None:
        self.ask = ask
        self._id = ("chatcmpl-" if ask.chat else "cmpl-") + uuid.uuid4().hex
        self._created = int(time.time())
        self._head, self._tail = self._template(None)
        self._last_tail = self._template("length")[1]
        role = {"index": 0, "delta": {"role": "assistant", "content": ""}, "logprobs": None}
        self._role = _event(self._body([{**role, "finish_reason": None}], chunk=True))

    def chunk(self, k: int) -> bytes:
        """The event for token `k`; the first carries the chat role, the last the finish."""
        word = (_NEXT_WORD if k else _FIRST_WORD)[k % len(_WORDS)]
        tail = self._last_tail if k == self.ask.max_tokens - 1 else self._tail
        event = self._head + word + tail
        return self._role + event if k == 0 and self.ask.chat else event

    def ending(self) -> bytes:
        usage = _event(self._body([], chunk=True, usage=self._usage()))
        return (usage if self.ask.include_usage else b"") + b"data: [DONE]\n\n"

    def response(self) -> dict[str, Any]:
        text = " ".join(_WORDS[k % len(_WORDS)] for k in range(self.ask.max_tokens))
        choice: dict[str, Any] = {"index": 0, "logprobs": None, "finish_reason": "length"}
        if self.ask.chat:
            choice["message"] = {"role": "assistant", "content": text}
        else:
            choice.update(text=text, stop_reason=None)
        return self._body([choice], chunk=False, usage=self._usage())

    def _template(self, finish_reason: str | None) -> tuple[bytes, bytes]:
        choice: dict[str, Any] = {"index": 0}
        if self.ask.chat:
            choice.update(delta={"content": _HOLE}, logprobs=None, finish_reason=finish_reason)
        else:
            choice.update(text=_HOLE, logprobs=None, finish_reason=finish_reason, stop_reason=None)
        head, _, tail = _event(self._body([choice], chunk=True)).partition(_HOLE_JSON.encode())
        return head, tail

    def _body(self, choices: list[dict[str, Any]], *, chunk: bool, **extra: Any) -> dict[str, Any]:
        kind = "text_completion"
        if self.ask.chat:
            kind = "chat.completion.chunk" if chunk else "chat.completion"
        return {
            "id": self._id,
            "object": kind,
            "created": self._created,
            "model": self.ask.model,
            "choices": choices,
            **extra,
        }

    def _usage(self) -> dict[str, int]:
        prompt, completion = self.ask.prompt_tokens, self.ask.max_tokens
        return {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }
