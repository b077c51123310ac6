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
cancelled (aiohttp's handler cancellation) and its slot freed. A request to a deployment with
no replica serving gets a 503, unless it scales from zero (`ServedModel.wakes`): then it asks
`wake` for a replica and is held until one serves (woken by `changed`, else looking again every
`cache_seconds`), its answer saying how long it waited and when the replica was estimated to
start. The request bodies and answers are `openai_api`'s.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from urllib.parse import urlsplit

from aiohttp import web

from adapters.simulated.openai_api import Ask, Problem, Shape, error_response, parse_request
from adapters.simulated.performance import PerformanceModel, ServingProfile
from domain.model.autoscaling import ServingLoad

log = logging.getLogger(__name__)

CLOSE_GRACE_SECONDS = 0.2
"""How long close() lets requests in flight go on before it drops them."""
DEFAULT_HOLD_SECONDS = 600.0
"""How long a request waits for a replica to start from zero before a 503: a model's replica
takes minutes to pull and load (Knative's activator holds requests for the revision's timeout,
600 s by default)."""
HELD_HEADER = "X-Budcluster-Held-Seconds"
"""Seconds the request waited for a replica to start (only on requests that did)."""
ESTIMATE_HEADER = "X-Budcluster-Replica-Estimated-Start"
"""When the replica the request waited for was estimated to start (ISO 8601)."""
MAX_HELD = 1000
"""Requests held at once for one deployment; more get a 503 at once. Knative's activator
queues 10,000 per revision before its 503s (`breakerQueueDepth`, pkg/activator/net/
throttler.go), spread over its replicas; here one process holds every tenant's, so a tenth of
that each: a burst on one deployment can't hold the others' connections."""
FULL_RETRY_SECONDS = 5
"""Retry-After on the 503 of a request past `MAX_HELD` with no estimate to give."""


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
    wakes: bool = False
    """With no replica serving, a request starts one (`wake`) and waits for it."""
    starting: datetime | None = None
    """When the first replica waiting to start is estimated to start."""

    def __post_init__(self) -> None:
        if self.gpus_per_replica < 1 or self.max_concurrency < 1 or self.max_model_len < 1:
            raise ValueError("gpus_per_replica, max_concurrency and max_model_len must be >= 1")
        if self.replicas < 0:
            raise ValueError("replicas must not be negative")


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
        self.queued_since: list[float] = []
        """When each request waiting for a slot began to (loop time)."""
        self.waited = (0.0, 0)
        """Seconds waited for a slot, and by how many requests, since `take_waits`."""

    async def acquire(self) -> None:
        if self.running < self.limit and not self._waiters:
            self.running += 1
            self.waited = (self.waited[0], self.waited[1] + 1)
            return
        loop = asyncio.get_running_loop()
        waiter, since = loop.create_future(), loop.time()
        self._waiters.append(waiter)
        self.queued_since.append(since)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self.release()  # handed a slot in the same step: pass it on
            elif waiter in self._waiters:  # a release may have dropped it already
                self._waiters.remove(waiter)
            raise
        finally:
            self.queued_since.remove(since)
        self.waited = (self.waited[0] + loop.time() - since, self.waited[1] + 1)

    def take_waits(self, now: float) -> tuple[float, int]:
        """Seconds waited for a slot by the requests that got one since the last take, and by
        those still waiting so far, and how many requests those are."""
        waited, count = self.waited
        self.waited = (0.0, 0)
        return waited + sum(now - t for t in self.queued_since), count + len(self.queued_since)

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
        wake: Callable[[str], Awaitable[bool]] | None = None,
        hold_seconds: float = DEFAULT_HOLD_SECONDS,
        now: Callable[[], datetime] | None = None,
    ) -> None:
        self._lookup = lookup
        self._host, self._port = host, port
        self._cache_seconds = cache_seconds
        self._performance = performance or PerformanceModel()
        self._wake = wake
        self.hold_seconds = hold_seconds
        self._now = now or (lambda: datetime.now(UTC))
        self._entries: dict[str, _Entry] = {}
        self._lookups: dict[str, asyncio.Future[_Serving | None]] = {}
        self._completed: dict[str, int] = {}
        self._held: dict[str, int] = {}
        self._waking: dict[str, tuple[float, asyncio.Future[bool]]] = {}
        """Per key: the wake asked for its held requests, and when (loop time)."""
        self._last_request: dict[str, datetime] = {}
        self._changes: dict[str, asyncio.Event] = {}
        self._starts: dict[str, tuple[float, datetime]] = {}
        """Per key: when (loop time) a lookup last saw a replica's estimated start, and it."""
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

    def served(self, key: str) -> ServedModel | None:
        """What `key` served when it was last looked up (None: not looked up, or nothing)."""
        entry = self._entries.get(key)
        return entry.serving.served if entry and entry.serving else None

    def serving_load(self, key: str) -> ServingLoad:
        """Requests in flight per replica, the mean time they waited for a slot lately (since
        the last call; 0 when none came), those held for a replica to start, and when the last
        request came (by the service's clock)."""
        entry = self._entries.get(key)
        replicas = entry.serving.replicas if entry and entry.serving else ()
        now = asyncio.get_running_loop().time()
        waits = [r.take_waits(now) for r in replicas]
        count = sum(c for _, c in waits)
        return ServingLoad(
            in_flight=tuple(r.assigned for r in replicas),
            queue_seconds=sum(w for w, _ in waits) / count if count else 0.0,
            held=self._held.get(key, 0),
            last_request_at=self._last_request.get(key),
        )

    def changed(self, key: str) -> None:
        """What `key` serves changed (a replica started or stopped): look it up again, and
        wake the requests held for a replica."""
        entry = self._entries.get(key)
        if entry is not None:
            self._entries[key] = _Entry(0.0, entry.serving)
        event = self._changes.pop(key, None)
        if event is not None:
            event.set()

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
        if served is not None and served.starting is not None:
            self._starts[key] = (asyncio.get_running_loop().time(), served.starting)
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
            return error_response(Problem(503, f"Deployment `{key}` could not be looked up."))
        if serving is None:
            return error_response(Problem(404, f"No model deployment `{key}`."))
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
        ask = parse_request(await request.read(), chat=chat)
        if isinstance(ask, Problem):
            return error_response(ask)
        key = request.match_info["key"]
        self._last_request[key] = self._now()
        problem = _check(ask, serving.served)
        if problem is not None:
            return error_response(problem)
        headers: dict[str, str] = {}
        if serving.served.replicas == 0:
            held = await self._hold(key, serving)
            if isinstance(held, web.Response):
                return held
            serving, headers = held
        replica, shape = serving.least_loaded(), Shape(ask)
        if not ask.stream:
            await _run(serving.profile, replica, ask, None)
            self._count(request)
            return web.json_response(shape.response(), headers=headers)
        response = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache", **headers}
        )
        await response.prepare(request)
        try:
            await _run(serving.profile, replica, ask, lambda k: response.write(shape.chunk(k)))
            await response.write(shape.ending())
        except ConnectionResetError:  # the client went away while a token was being written
            return response
        self._count(request)
        return response

    async def _hold(
        self, key: str, serving: _Serving
    ) -> tuple[_Serving, dict[str, str]] | web.Response:
        """No replica serves `key`: start one (`wake`) and wait for it, at most `hold_seconds`.
        The answer's headers say how long it waited and when the replica was estimated to
        start; a 503 says the same (and Retry-After) when it did not start in time."""
        if not serving.served.wakes or self._wake is None:
            return error_response(
                Problem(503, f"The model `{serving.served.model}` has no replica serving.")
            )
        if self._held.get(key, 0) >= MAX_HELD:
            return _full(serving.served, self._estimate(key, since=0.0), self._now())
        loop = asyncio.get_running_loop()
        began = loop.time()
        self._held[key] = self._held.get(key, 0) + 1
        try:
            if not await self._woken(key):
                return error_response(
                    Problem(
                        503,
                        f"The model `{serving.served.model}` has no replica serving, "
                        "and none could be started.",
                    )
                )
            while serving.served.replicas == 0:
                left = began + self.hold_seconds - loop.time()
                if left <= 0:
                    estimate = self._estimate(key, since=began)
                    return _not_started(serving.served, estimate, self.hold_seconds, self._now())
                event = self._changes.setdefault(key, asyncio.Event())
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(event.wait(), min(left, self._cache_seconds))
                found = await self._resolve(key)
                if found is None:
                    return error_response(Problem(404, f"No model deployment `{key}`."))
                serving = found
        finally:
            self._held[key] -= 1
        headers = {HELD_HEADER: f"{loop.time() - began:.3f}"}
        if (estimate := self._estimate(key, since=began)) is not None:
            headers[ESTIMATE_HEADER] = estimate.isoformat()
        return serving, headers

    async def _woken(self, key: str) -> bool:
        """`wake(key)`, once for all the requests held for `key` together: a request that comes
        while a wake is under way, or within `cache_seconds` of one that started a replica,
        shares its answer (a burst is one transaction, not one per request). The wake goes on
        when the request that asked for it goes away."""
        assert self._wake is not None
        loop = asyncio.get_running_loop()
        found = self._waking.get(key)
        if found is not None:
            asked_at, waking = found
            if not waking.done():
                return await asyncio.shield(waking)
            recent = loop.time() - asked_at < self._cache_seconds
            if recent and not waking.cancelled() and waking.exception() is None and waking.result():
                return True
        waking = asyncio.ensure_future(self._wake(key))
        self._waking[key] = (loop.time(), waking)
        waking.add_done_callback(_retrieved)
        return await asyncio.shield(waking)

    def _estimate(self, key: str, *, since: float) -> datetime | None:
        """The last estimated start of a replica of `key` a lookup saw since `since`."""
        seen = self._starts.get(key)
        return seen[1] if seen is not None and seen[0] >= since else None

    def _count(self, request: web.Request) -> None:
        key = request.match_info["key"]
        self._completed[key] = self._completed.get(key, 0) + 1


async def _run(
    profile: ServingProfile,
    replica: _Replica,
    ask: Ask,
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


def _not_started(
    served: ServedModel, estimate: datetime | None, hold_seconds: float, now: datetime
) -> web.Response:
    answer = error_response(
        Problem(
            503,
            f"The model `{served.model}` has no replica serving yet: one was started, and did "
            f"not serve within {hold_seconds:g} s.",
        )
    )
    answer.headers[HELD_HEADER] = f"{hold_seconds:.3f}"
    if estimate is not None:
        answer.headers[ESTIMATE_HEADER] = estimate.isoformat()
        answer.headers["Retry-After"] = str(max(1, math.ceil((estimate - now).total_seconds())))
    return answer


def _full(served: ServedModel, estimate: datetime | None, now: datetime) -> web.Response:
    answer = error_response(
        Problem(
            503,
            f"The model `{served.model}` has no replica serving yet, and {MAX_HELD} requests "
            "already wait for one.",
        )
    )
    wait = FULL_RETRY_SECONDS if estimate is None else (estimate - now).total_seconds()
    answer.headers["Retry-After"] = str(max(1, math.ceil(wait)))
    if estimate is not None:
        answer.headers[ESTIMATE_HEADER] = estimate.isoformat()
    return answer


def _retrieved(future: asyncio.Future[bool]) -> None:
    """Marks a wake's failure as seen (the requests that shared it got it), so an abandoned
    one is not logged as never retrieved."""
    if not future.cancelled():
        future.exception()


def _check(ask: Ask, served: ServedModel) -> Problem | None:
    if ask.model != served.model:
        return Problem(404, f"The model `{ask.model}` does not exist.", "model")
    total = ask.prompt_tokens + ask.max_tokens
    if total > served.max_model_len:
        where = "messages" if ask.chat else "prompt"
        return Problem(
            400,
            f"This model's maximum context length is {served.max_model_len} tokens. However, "
            f"you requested {total} tokens ({ask.prompt_tokens} in the {where}, "
            f"{ask.max_tokens} in the completion). Please reduce the length of the {where} "
            "or completion.",
        )
    return None
