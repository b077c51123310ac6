"""A streaming load generator for OpenAI-compatible endpoints, timing every token it receives.

One aiohttp session per run, its connector sized to the concurrency. One sender loop drives both
load shapes: in the closed loop it takes one of `concurrency` slots, so a user's next request goes
out as soon as its last one ended; in the open loop it waits for the next Poisson arrival, then
for a slot when capped, and arrivals keep their schedule while the cap delays them (as in vLLM's
benchmark_serving: a delayed request goes out when a slot frees, and `sent_at` is when it went).
Each request is a task whose state lives in a `_Stream` outside the coroutine, so a request
cancelled by `stop` still becomes a sample (CANCELLED, with what it had measured) and the run's
counts add up. The client must not be the bottleneck, so the hot path is lean: one
`perf_counter()` per socket read (the events in one read arrived together), bytes split into
lines once, each event's JSON decoded once by the C scanner, and stalls found by one watchdog per
run instead of a timer re-armed on every read. A request never raises: whatever goes wrong
becomes a sample whose error reads "<head>: <detail>", the head grouping failures in
`domain.serving.metrics.failure_reason`.

The endpoint may be anyone's server, so the client gives nothing of it back but a status and a
fixed reason: an error status is its code and standard phrase (never the body, nor the server's
own phrase), a stream's error event or broken event is named, not quoted, and every way of not
getting an HTTP response (refused, reset, no such name, timed out connecting, not HTTP, refused
by the rules) reads "connection failed", so a run can't tell a closed port from an open one.
No redirect is followed (a 3xx is a failed request with its status), and, given the outbound
rules (`domain.model.outbound`), each address the connector is about to connect to is judged
first, whichever name led to it: the address checked is the address connected to. A run
against a deployment this service serves (`own_endpoint`) is not held to them.
"""

from __future__ import annotations

import asyncio
import errno
import itertools
import json
import random
import socket
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http import HTTPStatus
from ipaddress import ip_address
from time import perf_counter
from typing import Any

import aiohttp
from opentelemetry.instrumentation.aiohttp_client import AioHttpClientInstrumentor

from domain.aio import cancel_and_wait
from domain.model.load import (
    Api,
    EndpointUnreachable,
    FailureKind,
    LoadPlan,
    LoadRun,
    RequestSample,
)
from domain.model.outbound import OutboundRules, parse_url

_WORDS = (
    "time year people way day man thing woman life child world school state family student "
    "group country problem hand part place case week company system program question work "
    "government number night point home water room mother area money story fact month lot "
    "right study book eye job word business issue side kind head house service friend father "
    "power hour game line end member law car city community name president team minute idea "
    "kid body information back parent face others level office door health person art war"
)
VOCABULARY = tuple(_WORDS.split())
"""Words of generated prompts: common single-token words, so N words are about N tokens."""

CONNECTION_FAILED = "connection failed"
"""The reason of every request (and run) that got no HTTP response, however it failed."""

Trace = Callable[[float, str], None]
SocketFactory = Callable[[tuple[Any, ...]], socket.socket]
_LOST = (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError, OSError)


_scan = json.JSONDecoder().raw_decode


def _decode(data: bytes) -> Any:
    """An event's JSON, through the C scanner directly (json.loads spends as long again on
    detecting the encoding and matching whitespace); json.loads takes what the scanner does not
    take whole, and raises its error."""
    text = data.decode()
    try:
        value, end = _scan(text)
    except ValueError:
        return json.loads(text)
    return value if end == len(text) else json.loads(text)


def _status(code: int) -> str:
    """An error status as a failure's reason: its code and standard phrase."""
    try:
        return f"HTTP {code}: {HTTPStatus(code).phrase}"
    except ValueError:
        return f"HTTP {code}"


def _guard(rules: OutboundRules, *, named: bool) -> SocketFactory:
    """The connector's socket factory: refuses (OSError) an address the rules do not allow, at
    the moment it would be connected to. `named`: the operator allowed the host by name."""

    def connect(addr_info: tuple[Any, ...]) -> socket.socket:
        family, kind, proto, _, sockaddr = addr_info
        try:
            address = ip_address(str(sockaddr[0]).partition("%")[0])
        except ValueError:
            raise OSError(errno.EACCES, "not an IP address") from None
        if rules.refusal(address, named=named) is not None:
            raise OSError(errno.EACCES, "refused by the outbound rules")
        return socket.socket(family, kind, proto)

    return connect


class EventStream:
    """Server-sent events from bytes as they arrive: `feed` returns the data of every event that
    a chunk completed. Lines end in \\n or \\r\\n, a blank line ends an event, `data:` takes an
    optional space, the data lines of one event are joined by \\n, comments and other fields are
    ignored, and a line split across reads is kept until its end arrives."""

    __slots__ = ("_data", "_tail")

    def __init__(self) -> None:
        self._tail = b""
        self._data: list[bytes] = []

    def feed(self, chunk: bytes) -> list[bytes]:
        lines = (self._tail + chunk if self._tail else chunk).split(b"\n")
        self._tail = lines.pop()
        events: list[bytes] = []
        for line in lines:
            if line[-1:] == b"\r":
                line = line[:-1]
            if not line:
                if self._data:
                    data = self._data
                    events.append(data[0] if len(data) == 1 else b"\n".join(data))
                    self._data = []
            elif line[:5] == b"data:":
                self._data.append(line[6:] if line[5:6] == b" " else line[5:])
        return events

    def close(self) -> list[bytes]:
        """At the end of the stream: an event left without its blank line still counts."""
        return self.feed(b"\n\n")


@dataclass(frozen=True, slots=True)
class _Request:
    index: int
    body: bytes
    prompt_tokens: int


class _Stream:
    """One request in flight: what it has measured so far."""

    __slots__ = (
        "chunks",
        "completions",
        "done",
        "ended",
        "first",
        "gaps",
        "heard",
        "last",
        "request",
        "responded",
        "sent",
        "stalled",
        "start",
        "trace",
        "usage",
    )

    def __init__(self, request: _Request, start: float, completions: bool, trace: Trace | None):
        self.request = request
        self.start = start
        self.completions = completions
        self.trace = trace
        self.sent = self.heard = perf_counter()
        self.responded = False
        self.stalled: float | None = None
        self.first: float | None = None
        self.last = 0.0
        self.gaps: list[float] = []
        self.chunks = 0
        self.done = False
        self.ended: float | None = None
        self.usage: dict[str, Any] | None = None

    def take(self, data: bytes, now: float) -> str | None:
        """Reads one event's data; returns why the stream is malformed, if it is. A content chunk
        is one with text: `delta.content` (or a reasoning model's `delta.reasoning_content`) for
        chat, `text` for completions."""
        if self.done:
            return None
        if data == b"[DONE]":
            self.done = True
            self.ended = now
            return None
        try:
            event = _decode(data)
        except ValueError:
            return "not JSON: an event's data is not JSON"
        try:
            text = None
            if choices := event.get("choices"):
                choice = choices[0]
                if self.completions:
                    text = choice.get("text")
                elif delta := choice.get("delta"):
                    text = delta.get("content") or delta.get("reasoning_content")
            if text:
                if self.first is None:
                    self.first = now
                else:
                    self.gaps.append(now - self.last)
                self.last = now
                self.chunks += 1
                if self.trace is not None:
                    self.trace(now, text)
            elif event.get("error") is not None or event.get("object") == "error":
                return "error event: the server sent an error in the stream"
            if usage := event.get("usage"):
                self.usage = usage
        except (AttributeError, TypeError, KeyError, IndexError):
            return "unexpected event: not a completion chunk"
        return None

    def _count(self, key: str, fallback: int) -> int:
        value = self.usage.get(key) if self.usage is not None else None
        return value if isinstance(value, int) and not isinstance(value, bool) else fallback

    def sample(self, failure: FailureKind | None = None, error: str | None = None) -> RequestSample:
        ok = failure is None
        return RequestSample(
            index=self.request.index,
            sent_at=self.sent - self.start,
            ok=ok,
            prompt_tokens=self._count("prompt_tokens", self.request.prompt_tokens),
            output_tokens=self._count("completion_tokens", self.chunks),
            ttft=None if self.first is None else self.first - self.sent,
            e2el=self.ended - self.sent if ok and self.ended is not None else None,
            itl=tuple(self.gaps),
            failure=failure,
            error=error,
        )

    def finished(self) -> RequestSample:
        """The stream ended cleanly: it succeeded if it said [DONE] after some content."""
        if not self.done:
            return self.sample(
                FailureKind.MALFORMED, f"no [DONE]: the stream ended after {self.chunks} tokens"
            )
        if not self.chunks:
            return self.sample(FailureKind.EMPTY, "no tokens: the stream ended without content")
        return self.sample()

    def interrupted(self) -> RequestSample:
        """The request was cancelled: by the watchdog when it stalled, else by `stop`."""
        if self.stalled is None:
            return self.sample(
                FailureKind.CANCELLED, f"cancelled: the run stopped after {self.chunks} tokens"
            )
        if self.done:
            return self.finished()
        where = f"after {self.chunks} tokens" if self.responded else "before a response"
        return self.sample(FailureKind.TIMEOUT, f"stalled: no data for {self.stalled:g}s {where}")


class StreamingLoadGenerator:
    """Sends a `LoadPlan`'s requests and times their streamed answers.

    `ignore_eos` adds vLLM's `min_tokens` (= `max_tokens`) and `ignore_eos`, so every request
    produces exactly its sampled output length. `trace`, for benchmarks.loadgen_overhead only, is
    called with the `perf_counter()` of the read and the text of every content chunk. `rules`:
    where its connections may go (None: anywhere, for the tools in benchmarks/)."""

    def __init__(
        self,
        *,
        api_key: str | None = None,
        ignore_eos: bool = True,
        trace: Trace | None = None,
        rules: OutboundRules | None = None,
    ) -> None:
        self._headers = {"Content-Type": "application/json"}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self._ignore_eos = ignore_eos
        self._trace = trace
        self._rules = rules

    async def run(
        self,
        plan: LoadPlan,
        *,
        on_sample: Callable[[RequestSample], None] | None = None,
        stop: asyncio.Event | None = None,
        own_endpoint: bool = False,
    ) -> LoadRun:
        """Runs the plan. Raises EndpointUnreachable when nothing answers at the endpoint before
        the run; afterwards every failure is a sample. `on_sample` is called (synchronously: keep
        it cheap) as each request ends. Setting `stop` cancels the requests in flight: they
        become CANCELLED samples and the run comes back `cancelled`. `own_endpoint`: the
        endpoint is a deployment this service serves, not held to the outbound rules."""
        if plan.request_count is None and plan.duration_seconds is None and stop is None:
            raise ValueError("a load plan needs a request_count, a duration or a stop event")
        guard = None
        if self._rules is not None and not own_endpoint:
            guard = _guard(self._rules, named=self._named(plan.endpoint))
        connector = aiohttp.TCPConnector(limit=_connection_limit(plan), socket_factory=guard)
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=plan.request_timeout_seconds)
        async with aiohttp.ClientSession(
            connector=connector, timeout=timeout, headers=self._headers
        ) as session:
            # the measured requests get no spans, whether traces are on or not: the same
            # work per request, however the service is run
            AioHttpClientInstrumentor.uninstrument_session(session)
            await _preflight(session, plan)
            run = _Run(session, plan, self._requests(plan), self._trace, on_sample)
            return await run.execute(stop or asyncio.Event())

    def _named(self, endpoint: str) -> bool:
        """Whether the operator allowed the endpoint's host by its name."""
        assert self._rules is not None
        try:
            return self._rules.allow.admits_host(parse_url(endpoint).host)
        except ValueError:
            return False

    def _requests(self, plan: LoadPlan) -> Iterator[_Request]:
        """The plan's requests in order, the same for the same seed: each draws its prompt
        length, its words and its output length from one `random.Random(plan.seed)`."""
        rng = random.Random(plan.seed)
        count = itertools.count() if plan.request_count is None else range(plan.request_count)
        for index in count:
            if plan.prompts:
                prompt = plan.prompts[index % len(plan.prompts)]
                prompt_tokens = len(prompt.split())
            else:
                prompt_tokens = plan.prompt_tokens.sample(rng)
                prompt = " ".join(rng.choices(VOCABULARY, k=prompt_tokens))
            body = self._body(plan, prompt, plan.output_tokens.sample(rng))
            yield _Request(index, body, prompt_tokens)

    def _body(self, plan: LoadPlan, prompt: str, max_tokens: int) -> bytes:
        payload: dict[str, Any] = {
            "model": plan.model,
            "max_tokens": max_tokens,
            "stream": True,
            "stream_options": {"include_usage": True},
            "temperature": 0.0,
        }
        if plan.api is Api.CHAT:
            payload["messages"] = [{"role": "user", "content": prompt}]
        else:
            payload["prompt"] = prompt
        if self._ignore_eos:
            payload["min_tokens"] = max_tokens
            payload["ignore_eos"] = True
        return json.dumps(payload).encode()


class _Run:
    """One run: its sender, its requests in flight and its samples."""

    def __init__(
        self,
        session: aiohttp.ClientSession,
        plan: LoadPlan,
        requests: Iterator[_Request],
        trace: Trace | None,
        on_sample: Callable[[RequestSample], None] | None,
    ) -> None:
        self.session = session
        self.plan = plan
        self.requests = requests
        self.trace = trace
        self.on_sample = on_sample
        path = "chat/completions" if plan.api is Api.CHAT else "completions"
        self.url = f"{plan.endpoint}/{path}"
        self.completions = plan.api is Api.COMPLETIONS
        self.timeout = plan.request_timeout_seconds
        users = (plan.concurrency or 1) if plan.request_rate is None else plan.concurrency
        self.slots = asyncio.Semaphore(users) if users else None
        self.inflight: dict[asyncio.Task[RequestSample], _Stream] = {}
        self.idle = asyncio.Event()
        self.idle.set()
        self.samples: list[RequestSample] = []
        self.start = self.last_end = 0.0

    async def execute(self, stop: asyncio.Event) -> LoadRun:
        """Sends until the plan's count or duration is reached, then waits for the requests in
        flight; `stop` cancels them at any point."""
        self.start = self.last_end = perf_counter()
        sender = asyncio.create_task(self.send())
        stopped = asyncio.create_task(stop.wait())
        watchdog = asyncio.create_task(self.watch())
        try:
            await asyncio.wait(
                (sender, stopped),
                timeout=self.plan.duration_seconds,
                return_when=asyncio.FIRST_COMPLETED,
            )
            await cancel_and_wait([sender])
            if not stop.is_set():
                drained = asyncio.create_task(self.idle.wait())
                try:
                    await asyncio.wait((drained, stopped), return_when=asyncio.FIRST_COMPLETED)
                finally:
                    await cancel_and_wait([drained])
        finally:
            await cancel_and_wait([sender, stopped, watchdog, *self.inflight])
        if not sender.cancelled() and (error := sender.exception()) is not None:
            raise error
        samples = tuple(sorted(self.samples, key=lambda s: s.index))
        return LoadRun(samples, self.last_end - self.start, cancelled=stop.is_set())

    async def send(self) -> None:
        rate = self.plan.request_rate
        loop = asyncio.get_running_loop()
        arrivals = random.Random(f"arrivals:{self.plan.seed}")
        next_at = loop.time()
        for request in self.requests:
            if self.slots is not None:
                await self.slots.acquire()
            self.launch(request)
            if rate is not None:
                next_at += arrivals.expovariate(rate)
                if (delay := next_at - loop.time()) > 0:
                    await asyncio.sleep(delay)

    def launch(self, request: _Request) -> None:
        stream = _Stream(request, self.start, self.completions, self.trace)
        task = asyncio.create_task(self.exchange(stream))
        self.inflight[task] = stream
        self.idle.clear()
        task.add_done_callback(lambda done: self.finished(stream, done))

    def finished(self, stream: _Stream, task: asyncio.Task[RequestSample]) -> None:
        del self.inflight[task]
        if not self.inflight:
            self.idle.set()
        if self.slots is not None:
            self.slots.release()
        self.last_end = perf_counter()
        sample = stream.interrupted() if task.cancelled() else task.result()
        self.samples.append(sample)
        if self.on_sample is not None:
            self.on_sample(sample)

    async def watch(self) -> None:
        """Cancels the requests that heard nothing for the timeout, looking every quarter of it
        (so a stall ends between 1 and 1.25 timeouts): one watchdog instead of aiohttp's
        `sock_read`, which re-arms a timer on every read."""
        while True:
            await asyncio.sleep(self.timeout / 4)
            now = perf_counter()
            for task, stream in list(self.inflight.items()):
                if stream.stalled is None and now - stream.heard > self.timeout:
                    stream.stalled = self.timeout
                    task.cancel()

    async def exchange(self, stream: _Stream) -> RequestSample:
        """One request, start to end; whatever goes wrong becomes the sample's failure, named
        by its class only (the module docstring says why)."""
        try:
            return await self.stream(stream)
        except Exception as exc:
            if not stream.responded:
                return stream.sample(FailureKind.CONNECTION, CONNECTION_FAILED)
            name = type(exc).__name__
            if isinstance(exc, _LOST):
                if stream.done:
                    return stream.finished()
                lost = f"connection lost: after {stream.chunks} tokens ({name})"
                return stream.sample(FailureKind.CONNECTION, lost)
            if isinstance(exc, aiohttp.ClientError):
                return stream.sample(FailureKind.MALFORMED, f"bad response: {name}")
            return stream.sample(FailureKind.MALFORMED, f"unexpected: {name}")

    async def stream(self, stream: _Stream) -> RequestSample:
        stream.sent = stream.heard = perf_counter()
        post = self.session.post(self.url, data=stream.request.body, allow_redirects=False)
        async with post as response:
            stream.responded = True
            stream.heard = perf_counter()
            content = response.content
            if response.status >= 300:
                return stream.sample(FailureKind.HTTP_STATUS, _status(response.status))
            events = EventStream()
            take = stream.take
            while chunk := await content.readany():
                stream.heard = now = perf_counter()
                for data in events.feed(chunk):
                    if (malformed := take(data, now)) is not None:
                        return stream.sample(FailureKind.MALFORMED, malformed)
            now = perf_counter()
            for data in events.close():
                if (malformed := take(data, now)) is not None:
                    return stream.sample(FailureKind.MALFORMED, malformed)
            return stream.finished()


def _connection_limit(plan: LoadPlan) -> int:
    """Connections the connector may hold: the concurrency; no limit (aiohttp's 0) when an open
    loop is uncapped, so that the client never holds back arrivals."""
    if plan.concurrency:
        return plan.concurrency
    return 0 if plan.request_rate is not None else 1


async def _preflight(session: aiohttp.ClientSession, plan: LoadPlan) -> None:
    """GET /models: only getting no HTTP response stops the run, whatever the reason (an error
    status does not: some servers lack the route)."""
    timeout = aiohttp.ClientTimeout(total=plan.request_timeout_seconds)
    try:
        response = await session.get(
            f"{plan.endpoint}/models", timeout=timeout, allow_redirects=False
        )
    except (aiohttp.ClientError, TimeoutError, OSError, ValueError):
        raise EndpointUnreachable(plan.endpoint, CONNECTION_FAILED) from None
    async with response:
        try:
            await response.read()
        except (aiohttp.ClientError, TimeoutError, OSError):
            return
