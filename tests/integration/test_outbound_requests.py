"""Outbound requests go only where they may: the load generator and the outbound policy against
local listeners, and benchmarks by URL on the embedded App.

Covers: a 3xx is a failed request with its status and no redirect is followed (to loopback or
0.0.0.0, guarded or not: the target hears nothing); an error response's body and its server's
own reason phrase never reach a sample (a private listener's "INTERNAL-SECRET-BODY-XYZ"); a
closed port, a port that hangs up, one that speaks Redis and one that speaks PostgreSQL read the
same before a run ("connection failed"), and so do requests that get no HTTP response; under the
outbound rules a loopback server is refused at connect time whatever names it (localhost, its
address, its IPv4-mapped form) and hears nothing, unless the operator allows it (by range or by
name) or it is a deployment's own endpoint; the policy resolves names through an injectable
resolver (names that resolve to loopback or metadata, a failing and a slow resolver all read the
same refusal) and the system's (localhost). On the App: tenant B naming tenant A's simulated
deployment by its URL is NOT_FOUND, its owner benchmarks it by that loopback URL with no
allow-list; with the operator allowing loopback, a private listener's 500 body is nowhere in the
stored samples or the benchmark's status; without it, the listener is refused at submission.
"""

from __future__ import annotations

import asyncio
import socket
import struct
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

import pytest
from aiohttp import web

from adapters.loadgen.client import CONNECTION_FAILED, StreamingLoadGenerator
from adapters.outbound import ResolvingOutboundPolicy
from budcluster.bootstrap import App
from budcluster.runtime import Runtime
from domain.errors import NotFound, ValidationFailed
from domain.model.benchmark import BenchmarkStatus
from domain.model.deployment import DeploymentStatus
from domain.model.ids import ProjectId, TenantId
from domain.model.load import Api, EndpointUnreachable, FailureKind, Lengths, LoadPlan
from domain.model.outbound import NOT_REACHABLE, AllowList, OutboundRules, parse_url
from domain.model.principal import Principal, Scope
from domain.services.benchmarks import BenchmarkRequest
from domain.services.deployments import DeploymentRequest
from tests.integration.test_app_flows import make_app
from tests.support.fake_llm import FakeLLM

SECRET = "INTERNAL-SECRET-BODY-XYZ"
LOOPBACK = OutboundRules(AllowList.parse(["127.0.0.1"]))
"""The operator allows the loopback address the test's listeners use (and nothing else)."""
Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


def plan(endpoint: str, **changes: Any) -> LoadPlan:
    fields: dict[str, Any] = {
        "endpoint": endpoint,
        "model": "m",
        "concurrency": 2,
        "request_count": 2,
        "prompt_tokens": Lengths.fixed(4),
        "output_tokens": Lengths.fixed(4),
        "request_timeout_seconds": 5.0,
    }
    return LoadPlan(**{**fields, **changes})


class Listener:
    """A TCP listener that counts the connections it accepted."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.connections = 0
        self.port = 0

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            await self.handler(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()


@asynccontextmanager
async def listening(handler: Handler, host: str = "127.0.0.1") -> AsyncIterator[Listener]:
    listener = Listener(handler)
    server = await asyncio.start_server(listener._accept, host, 0)
    listener.port = server.sockets[0].getsockname()[1]
    try:
        yield listener
    finally:
        server.close()
        await server.wait_closed()


@asynccontextmanager
async def serving(app: web.Application) -> AsyncIterator[int]:
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield runner.addresses[0][1]
    finally:
        await runner.cleanup()


async def read_request(reader: asyncio.StreamReader) -> bytes:
    """The request line and headers (bodies are not read: the answer comes first)."""
    head = await reader.readuntil(b"\r\n\r\n")
    return head.split(b"\r\n", 1)[0]


async def hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    return


async def redis_like(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    line = await reader.readline()
    writer.write(f"-ERR unknown command '{line.split(b' ')[0].decode()}'\r\n".encode())
    await writer.drain()
    await reader.read(1 << 16)


async def postgres_like(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await reader.read(8)
    message = b"SFATAL\x00C08P01\x00Minvalid length of startup packet\x00\x00"
    writer.write(b"E" + struct.pack("!I", len(message) + 4) + message)
    await writer.drain()


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# --- redirects, bodies, and how failures read --------------------------------------------------


@pytest.mark.parametrize("target_host", ["127.0.0.1", "0.0.0.0"])
@pytest.mark.parametrize("rules", [None, LOOPBACK], ids=["unguarded", "guarded"])
async def test_a_redirect_is_a_failed_request_and_is_not_followed(
    target_host: str, rules: OutboundRules | None
) -> None:
    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
        await writer.drain()

    async with listening(answer, host="0.0.0.0") as target:
        location = f"http://{target_host}:{target.port}/v1/chat/completions"

        async def redirect(request: web.Request) -> web.Response:
            raise web.HTTPFound(location)

        app = web.Application()
        app.router.add_get("/v1/models", redirect)
        app.router.add_post("/v1/chat/completions", redirect)
        async with serving(app) as port:
            run = await StreamingLoadGenerator(rules=rules).run(plan(f"http://127.0.0.1:{port}/v1"))

    assert [(s.failure, s.error) for s in run.samples] == [
        (FailureKind.HTTP_STATUS, "HTTP 302: Found")
    ] * 2
    assert target.connections == 0


async def test_an_error_body_and_reason_never_reach_a_sample() -> None:
    async def secret(request: web.Request) -> web.Response:
        body = f'{{"error":"{SECRET}"}}'
        return web.Response(status=500, reason=f"{SECRET}-REASON", text=body)

    async def too_many(request: web.Request) -> web.Response:
        return web.Response(status=429, text=f"slow down, {SECRET}")

    app = web.Application()
    app.router.add_post("/v1/chat/completions", secret)
    app.router.add_post("/v1/completions", too_many)
    async with serving(app) as port:
        chat = await StreamingLoadGenerator(rules=LOOPBACK).run(plan(f"http://127.0.0.1:{port}/v1"))
        plain = await StreamingLoadGenerator(rules=LOOPBACK).run(
            plan(f"http://127.0.0.1:{port}/v1", api=Api.COMPLETIONS)
        )

    assert {s.error for s in chat.samples} == {"HTTP 500: Internal Server Error"}
    assert {s.error for s in plain.samples} == {"HTTP 429: Too Many Requests"}


@pytest.mark.parametrize("handler", [None, hang_up, redis_like, postgres_like])
async def test_closed_and_open_ports_read_alike_before_a_run(handler: Handler | None) -> None:
    async def refused_by(endpoint: str) -> EndpointUnreachable:
        with pytest.raises(EndpointUnreachable) as caught:
            await StreamingLoadGenerator(rules=LOOPBACK).run(plan(endpoint))
        return caught.value

    if handler is None:
        endpoint = f"http://127.0.0.1:{closed_port()}/v1"
        refused = await refused_by(endpoint)
    else:
        async with listening(handler) as listener:
            endpoint = f"http://127.0.0.1:{listener.port}/v1"
            refused = await refused_by(endpoint)
        assert listener.connections >= 1

    assert refused.reason == CONNECTION_FAILED
    assert str(refused) == f"{endpoint} is unreachable: connection failed"


@pytest.mark.parametrize("mode", ["hang up", "redis", "reset"])
async def test_requests_that_get_no_http_response_read_alike(mode: str) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            line = await read_request(reader)
            if line.startswith(b"GET"):
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")
                await writer.drain()
                continue
            if mode == "redis":
                writer.write(b"-ERR unknown command 'POST'\r\n")
                await writer.drain()
            elif mode == "reset":
                sock = writer.get_extra_info("socket")
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            return

    async with listening(handler) as listener:
        run = await StreamingLoadGenerator(rules=LOOPBACK).run(
            plan(f"http://127.0.0.1:{listener.port}/v1")
        )

    assert [(s.failure, s.error) for s in run.samples] == [
        (FailureKind.CONNECTION, CONNECTION_FAILED)
    ] * 2


# --- the rules at connect time -----------------------------------------------------------------


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1", "[::ffff:127.0.0.1]"])
async def test_loopback_is_refused_at_connect_time_whatever_names_it(host: str) -> None:
    async with FakeLLM() as fake:
        endpoint = fake.url.replace("127.0.0.1", host)
        with pytest.raises(EndpointUnreachable) as refused:
            await StreamingLoadGenerator(rules=OutboundRules()).run(plan(endpoint))
        assert refused.value.reason == CONNECTION_FAILED
        assert fake.requests == 0

        own = await StreamingLoadGenerator(rules=OutboundRules()).run(
            plan(endpoint), own_endpoint=True
        )
        allowed = await StreamingLoadGenerator(rules=LOOPBACK).run(plan(endpoint))
        named = OutboundRules(AllowList.parse(["localhost"]))
        by_name = await StreamingLoadGenerator(rules=named).run(
            plan(fake.url.replace("127.0.0.1", "localhost"))
        )

    assert all(s.ok for run in (own, allowed, by_name) for s in run.samples)


# --- the policy's resolver ---------------------------------------------------------------------


async def test_the_policy_judges_what_a_name_resolves_to() -> None:
    table = {
        "127.0.0.1.nip.io": ["127.0.0.1"],
        "169.254.169.254.nip.io": ["169.254.169.254"],
        "rebind.example": ["93.184.216.34", "::ffff:10.0.0.1"],
        "api.example.com": ["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"],
        "vllm.internal": ["10.9.8.7"],
    }

    async def resolve(host: str, port: int) -> Sequence[str]:
        if host == "slow.example":
            await asyncio.Event().wait()
        if host not in table:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return table[host]

    policy = ResolvingOutboundPolicy(
        OutboundRules(AllowList.parse(["vllm.internal"])), resolve=resolve, timeout=0.05
    )
    for host in (
        "127.0.0.1.nip.io",
        "169.254.169.254.nip.io",
        "rebind.example",
        "nowhere.example",
        "slow.example",
    ):
        verdict = await policy.check(parse_url(f"http://{host}:8000/v1"))
        assert verdict.problem == NOT_REACHABLE, host
    public = await policy.check(parse_url("https://api.example.com/v1"))
    assert public.problem is None and not public.operator_allowed
    internal = await policy.check(parse_url("http://vllm.internal/v1"))
    assert internal.problem is None and internal.operator_allowed

    system = ResolvingOutboundPolicy(OutboundRules())
    local = await system.check(parse_url("http://localhost:8000/v1"))
    assert local.problem == NOT_REACHABLE and local.addresses


# --- benchmarks by URL on the App --------------------------------------------------------------


def tenant() -> Principal:
    return Principal(TenantId(uuid.uuid4()), frozenset({Scope.JOBS_READ, Scope.JOBS_WRITE}))


async def until(check: Callable[[], Awaitable[bool]], within: float = 20.0) -> None:
    async with asyncio.timeout(within):
        while not await check():
            await asyncio.sleep(0.05)


@asynccontextmanager
async def embedded(sqlite_url: str, **settings: Any) -> AsyncIterator[App]:
    app = await make_app(sqlite_url, **settings)
    await app.ensure_defaults()
    runtime = Runtime(app)
    await runtime.start()
    try:
        yield app
    finally:
        await runtime.stop()
        await app.close()


def by_url(app_cluster: Any, project: ProjectId, url: str, **changes: Any) -> BenchmarkRequest:
    fields: dict[str, Any] = {
        "name": "by-url",
        "project_id": project,
        "endpoint_url": url,
        "cluster_id": app_cluster,
        "model": "qwen",
        "concurrency": 2,
        "request_count": 4,
        "prompt_tokens": Lengths.fixed(8),
        "output_tokens": Lengths.fixed(4),
        "request_timeout_seconds": 5.0,
    }
    return BenchmarkRequest(**{**fields, **changes})


async def finished(app: App, principal: Principal, benchmark_id: Any) -> BenchmarkStatus:
    async def done() -> bool:
        found = await app.benchmarks.get(principal, benchmark_id)
        return found is not None and found.status.is_final

    await until(done)
    found = await app.benchmarks.get(principal, benchmark_id)
    assert found is not None
    return found.status


async def test_a_deployment_url_is_that_deployment(sqlite_url: str) -> None:
    alice, bob, project = tenant(), tenant(), ProjectId(uuid.uuid4())
    async with embedded(sqlite_url) as app:  # no allow-list: loopback is refused to anyone
        (cluster,) = await app.clusters.all()
        d = await app.deployments.deploy(
            alice,
            DeploymentRequest(
                name="qwen",
                project_id=project,
                cluster_id=cluster.id,
                model="Qwen/Qwen2.5-1.5B-Instruct",
                served_model_name="qwen",
                gpu_type="nvidia-a100-80gb",
            ),
        )

        async def running() -> bool:
            found = await app.deployments.get(alice, d.id)
            return found is not None and found.status is DeploymentStatus.RUNNING

        await until(running)
        url = (await app.deployments.get(alice, d.id)).endpoint_url  # type: ignore[union-attr]
        assert url is not None and url.startswith("http://127.0.0.1:")

        for given in (url, url.replace("127.0.0.1", "localhost")):
            with pytest.raises(NotFound):
                await app.benchmarks.run(bob, by_url(cluster.id, ProjectId(uuid.uuid4()), given))
        assert (await app.benchmarks.page(bob)).items == []

        mine = await app.benchmarks.run(alice, by_url(cluster.id, project, url))
        assert await finished(app, alice, mine.id) is BenchmarkStatus.COMPLETED


async def test_a_private_listeners_body_is_never_stored(sqlite_url: str) -> None:
    async def secret(request: web.Request) -> web.Response:
        return web.Response(status=500, text=f'{{"error":"{SECRET}"}}')

    app_routes = web.Application()
    app_routes.router.add_route("*", "/v1/{tail:.*}", secret)
    alice, project = tenant(), ProjectId(uuid.uuid4())
    async with serving(app_routes) as port:
        endpoint = f"http://127.0.0.1:{port}/v1"
        async with embedded(sqlite_url) as app:
            (cluster,) = await app.clusters.all()
            with pytest.raises(ValidationFailed) as refused:
                await app.benchmarks.run(alice, by_url(cluster.id, project, endpoint))
            assert [(i.field, i.code) for i in refused.value.issues] == [
                ("endpoint_url", "FORBIDDEN_ENDPOINT")
            ]
        async with embedded(sqlite_url, outbound_allow=("127.0.0.1",)) as app:
            (cluster,) = await app.clusters.all()
            b = await app.benchmarks.run(alice, by_url(cluster.id, project, endpoint))
            assert await finished(app, alice, b.id) is BenchmarkStatus.FAILED
            samples = await app.benchmarks.samples(alice, b.id)
            stored = await app.benchmarks.get(alice, b.id)

    assert samples and {s.error for s in samples} == {"HTTP 500: Internal Server Error"}
    assert stored is not None and SECRET not in (stored.status_message or "")
