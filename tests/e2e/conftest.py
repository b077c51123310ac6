"""End-to-end fixtures: the real service in a subprocess, and real GraphQL clients talking to it.

`start_service` runs `python -m budcluster serve` on a free port with the environment it is given
(never the caller's BUDCLUSTER_*, DATABASE_URL or REDIS_URL), waits for /healthz and fails with
the process output when it does not come up; every service started is stopped at the end of the
session (SIGTERM, then SIGKILL). `embedded` is one embedded (SQLite) service shared by a test
module; `postgres_database` and `redis_prefix` give a production-mode run a fresh database and
its own Redis key space. `http_client` and `ws_client` build `gql` clients that validate every
document against the published contract (frontend-contract/schema.graphql); `Subscription`
consumes a `jobUpdates` stream in the background so a test can wait for what it expects with a
bounded timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
import pytest
from gql import Client, GraphQLRequest
from gql.transport.httpx import HTTPXAsyncTransport
from gql.transport.websockets import WebsocketsTransport

REPO = Path(__file__).resolve().parents[2]
CONTRACT = (REPO / "frontend-contract" / "schema.graphql").read_text()
DEFAULT_DATABASE_URL = "postgresql://postgres@127.0.0.1:5432/test"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"
TOKEN = re.compile(r"bud_[0-9a-f]{32}_[A-Za-z0-9_-]{20,128}")
START_TIMEOUT = 45.0
STOP_TIMEOUT = 10.0
CLI_TIMEOUT = 60.0
PROJECT_ID = "5b0c3b8e-2f7e-4a8e-9a57-0c9d8a0c1a11"
A100 = "nvidia-a100-80gb"

# Every HTTP response body the clients built here received, for the "no stack traces" check.
RESPONSE_BODIES: list[str] = []


def database_url() -> str:
    return os.environ.get("DATABASE_URL") or DEFAULT_DATABASE_URL


def redis_url() -> str:
    return os.environ.get("REDIS_URL") or DEFAULT_REDIS_URL


def clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without anything that configures budcluster (or its
    traces), plus `extra`."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("BUDCLUSTER_", "OTEL_")) and k not in ("DATABASE_URL", "REDIS_URL")
    }
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra)
    return env


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# --- the service process --------------------------------------------------------------------


@dataclass
class Service:
    """One `budcluster serve` process. Its output goes to files, read whenever needed."""

    name: str
    env: dict[str, str]
    logs: Path
    port: int = 0
    process: subprocess.Popen[bytes] | None = None
    admin_token: str | None = None
    cluster_id: str | None = None
    starts: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/graphql"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/graphql"

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _paths(self) -> tuple[Path, Path]:
        return (
            self.logs / f"{self.name}-{self.starts}.stdout",
            self.logs / f"{self.name}-{self.starts}.stderr",
        )

    def stdout(self) -> str:
        return self._paths()[0].read_text(errors="replace")

    def output(self, tail: int = 8000) -> str:
        out, err = self._paths()
        text = (
            f"--- {self.name} stdout ---\n{out.read_text(errors='replace')}\n"
            f"--- {self.name} stderr ---\n{err.read_text(errors='replace')}"
        )
        return text[-tail:]

    def spawn(self) -> None:
        assert self.process is None or self.process.poll() is not None, "already running"
        self.starts += 1
        self.port = free_port()
        env = {**self.env, "BUDCLUSTER_PORT": str(self.port), "BUDCLUSTER_HOST": "127.0.0.1"}
        out, err = self._paths()
        with out.open("wb") as stdout, err.open("wb") as stderr:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "budcluster", "serve"],
                cwd=REPO,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=stdout,
                stderr=stderr,
            )

    async def wait_healthy(self, timeout: float = START_TIMEOUT) -> None:
        assert self.process is not None
        deadline = time.monotonic() + timeout
        async with httpx.AsyncClient(timeout=2.0) as client:
            while True:
                if self.process.poll() is not None:
                    raise RuntimeError(
                        f"{self.name} exited with {self.process.returncode} before /healthz "
                        f"answered\n{self.output()}"
                    )
                with contextlib.suppress(httpx.HTTPError):
                    response = await client.get(f"{self.base}/healthz")
                    if response.status_code == 200 and response.json() == {"status": "ok"}:
                        return
                if time.monotonic() > deadline:
                    raise TimeoutError(
                        f"{self.name}: /healthz did not answer within {timeout}s\n{self.output()}"
                    )
                await asyncio.sleep(0.1)

    async def start(self) -> None:
        """Start on a free port; a port taken in the meantime costs a retry, not a failure."""
        for attempt in range(3):
            self.spawn()
            try:
                await self.wait_healthy()
            except RuntimeError:
                if attempt < 2 and "address already in use" in self.output().lower():
                    continue
                raise
            return

    async def stop(self) -> int | None:
        """SIGTERM, then SIGKILL after STOP_TIMEOUT; returns the exit code."""
        process = self.process
        if process is None or process.poll() is not None:
            return None if process is None else process.returncode
        process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT
        while process.poll() is None and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        if process.poll() is None:
            process.kill()
            while process.poll() is None:
                await asyncio.sleep(0.05)
        return process.returncode


@dataclass
class CliResult:
    returncode: int
    stdout: str
    stderr: str


async def run_cli(
    env: dict[str, str], *args: str, timeout: float = CLI_TIMEOUT, check: bool = True
) -> CliResult:
    """Run `python -m budcluster <args>` without blocking the event loop; fail on an error
    unless `check` is off (the caller looks at the exit code)."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "budcluster",
        *args,
        cwd=REPO,
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(process.communicate(), timeout)
    except TimeoutError:
        process.kill()
        await process.wait()
        raise AssertionError(f"budcluster {' '.join(args)} took more than {timeout}s") from None
    result = CliResult(process.returncode or 0, out.decode(), err.decode())
    if check and result.returncode != 0:
        raise AssertionError(
            f"budcluster {' '.join(args)} exited with {result.returncode}\n"
            f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
        )
    return result


@pytest.fixture(scope="session")
async def services(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[ServiceFactory]:
    factory = ServiceFactory(tmp_path_factory.mktemp("e2e-logs"))
    try:
        yield factory
    finally:
        await factory.stop_all()


class ServiceFactory:
    def __init__(self, logs: Path) -> None:
        self.logs = logs
        self.started: list[Service] = []

    async def start(self, name: str, env: dict[str, str]) -> Service:
        service = Service(name=f"{name}-{len(self.started)}", env=env, logs=self.logs)
        self.started.append(service)
        await service.start()
        return service

    async def stop_all(self) -> None:
        for service in self.started:
            await service.stop()


def embedded_env(data_dir: Path, **extra: str) -> dict[str, str]:
    settings = {
        "BUDCLUSTER_DATA_DIR": str(data_dir),
        "BUDCLUSTER_SIM_POLL_SECONDS": "0.2",
        "BUDCLUSTER_SIM_TIME_SCALE": "2",
        "BUDCLUSTER_LOG_LEVEL": "INFO",
    }
    return clean_env(**{**settings, **extra})


def printed_tokens(stdout: str) -> list[str]:
    return TOKEN.findall(stdout)


async def cluster_id_named(service: Service, token: str, name: str) -> str:
    async with http_client(service, token) as session:
        result = await session.execute(GraphQLRequest("{ clusters { id name } }"))
    ids = [c["id"] for c in result["clusters"] if c["name"] == name]
    assert len(ids) == 1, result
    return str(ids[0])


@pytest.fixture(scope="module")
async def embedded(
    services: ServiceFactory, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Service]:
    """An embedded service (SQLite, in-process tasks and events, the local-sim cluster)."""
    data_dir = tmp_path_factory.mktemp("embedded-data")
    service = await services.start("embedded", embedded_env(data_dir))
    tokens = printed_tokens(service.stdout())
    assert len(tokens) == 1, service.output()
    service.admin_token = tokens[0]
    service.cluster_id = await cluster_id_named(service, tokens[0], "local-sim")
    try:
        yield service
    finally:
        await service.stop()


# --- PostgreSQL and Redis ------------------------------------------------------------------


@pytest.fixture(scope="session")
async def postgres_database() -> AsyncIterator[str]:
    """A fresh database for this session (dropped at the end), as a URL."""
    import asyncpg

    admin_url = database_url().replace("postgresql+asyncpg://", "postgresql://")
    name = f"budcluster_e2e_{uuid.uuid4().hex[:16]}"
    try:
        conn = await asyncio.wait_for(asyncpg.connect(admin_url), 10)
    except Exception as exc:  # pragma: no cover - depends on the machine
        pytest.fail(f"PostgreSQL at {admin_url} does not answer: {exc!r}")
    try:
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()
    parts = urlsplit(admin_url)
    url = urlunsplit(parts._replace(path=f"/{name}"))
    try:
        yield url
    finally:
        conn = await asyncio.wait_for(asyncpg.connect(admin_url), 10)
        try:
            await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await conn.close()


@pytest.fixture(scope="session")
async def redis_prefix() -> AsyncIterator[str]:
    """A key prefix of this session's own; its keys are deleted at the end."""
    from redis.asyncio import Redis

    prefix = f"budcluster-e2e-{uuid.uuid4().hex[:12]}"
    client = Redis.from_url(redis_url(), socket_connect_timeout=5)
    try:
        await asyncio.wait_for(client.ping(), 5)
    except Exception as exc:  # pragma: no cover - depends on the machine
        await client.aclose()
        pytest.fail(f"Redis at {redis_url()} does not answer: {exc!r}")
    try:
        yield prefix
    finally:
        keys = [k async for k in client.scan_iter(match=f"{prefix}:*")]
        if keys:
            await client.delete(*keys)
        await client.aclose()


# --- GraphQL clients -----------------------------------------------------------------------


async def _record(response: httpx.Response) -> None:
    await response.aread()
    RESPONSE_BODIES.append(response.text)


def http_client(service: Service, token: str | None) -> Client:
    """A gql client over HTTP POST; documents are validated against the contract first."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    transport = HTTPXAsyncTransport(
        url=service.url,
        headers=headers,
        timeout=30.0,
        event_hooks={"response": [_record]},
    )
    return Client(transport=transport, schema=CONTRACT, execute_timeout=30)


def ws_client(service: Service, token: str | None) -> Client:
    """A gql client over graphql-transport-ws, the token in connection_init's payload."""
    payload = {"Authorization": f"Bearer {token}"} if token else {}
    transport = WebsocketsTransport(
        url=service.ws_url,
        subprotocols=[WebsocketsTransport.GRAPHQLWS_SUBPROTOCOL],
        init_payload=payload,
        connect_timeout=10,
        ack_timeout=10,
        close_timeout=5,
    )
    return Client(transport=transport, schema=CONTRACT, execute_timeout=30)


async def post_graphql(
    service: Service,
    query: str,
    variables: dict[str, Any] | None = None,
    *,
    token: str | None = None,
    authorization: str | None = None,
) -> httpx.Response:
    """A raw POST, for checks on status codes and exact bodies."""
    headers = {"Content-Type": "application/json"}
    if authorization is not None:
        headers["Authorization"] = authorization
    elif token is not None:
        headers["Authorization"] = f"Bearer {token}"
    async with httpx.AsyncClient(timeout=30.0, event_hooks={"response": [_record]}) as client:
        return await client.post(
            service.url,
            content=json.dumps({"query": query, "variables": variables or {}}),
            headers=headers,
        )


SUBMIT = """
mutation Submit($input: SubmitJobInput!) {
  submitJob(input: $input) {
    __typename
    ... on Job { id name status attempt retryCount maxRetries }
    ... on ValidationError { code message fields { path message code } }
    ... on NotFoundError { code message }
    ... on ConflictError { code message }
    ... on ForbiddenError { code message }
  }
}
"""

JOB_UPDATES = """
subscription Updates($clusterId: ID!, $since: Int) {
  jobUpdates(clusterId: $clusterId, since: $since) {
    __typename
    ... on JobSnapshot { sequence reason truncated jobs { id name status } }
    ... on JobChange {
      sequence
      kind
      matchesFilter
      job { id name status attempt }
      transition { attempt fromStatus toStatus reason }
    }
  }
}
"""


def batch_job(
    cluster_id: str,
    *,
    gpus: int,
    runtime: float = 1,
    name: str | None = None,
    outcome: str | None = None,
    max_retries: int = 3,
) -> dict[str, Any]:
    simulation: dict[str, Any] = {"runtime_seconds": runtime}
    if outcome is not None:
        simulation["outcome"] = outcome
    return {
        "name": name or f"e2e-{uuid.uuid4().hex[:10]}",
        "projectId": PROJECT_ID,
        "clusterId": cluster_id,
        "jobType": "BATCH",
        "deploymentType": "DOCKER",
        "spec": {"simulation": simulation},
        "resources": {"gpuType": A100, "gpuCount": gpus},
        "maxRetries": max_retries,
    }


async def submit(session: Any, job_input: dict[str, Any]) -> dict[str, Any]:
    result = await session.execute(GraphQLRequest(SUBMIT, variable_values={"input": job_input}))
    return dict(result["submitJob"])


async def submit_ok(session: Any, job_input: dict[str, Any]) -> dict[str, Any]:
    job = await submit(session, job_input)
    assert job["__typename"] == "Job", job
    assert job["status"] == "PENDING", job
    return job


async def wait_for_status(
    session: Any, job_id: str, status: str, *, timeout: float = 30.0
) -> dict[str, Any]:
    """Poll job(id) over HTTP until it reaches `status`."""
    query = GraphQLRequest(
        "query Job($id: ID!) { job(id: $id) { id status attempt retryCount } }",
        variable_values={"id": job_id},
    )
    deadline = time.monotonic() + timeout
    seen = None
    while time.monotonic() < deadline:
        seen = (await session.execute(query))["job"]
        if seen is not None and seen["status"] == status:
            return dict(seen)
        await asyncio.sleep(0.1)
    raise AssertionError(f"job {job_id} did not reach {status} within {timeout}s (last {seen})")


@dataclass
class Subscription:
    """A subscription (`jobUpdates` unless told) consumed in the background into `updates`."""

    client: Client
    variables: dict[str, Any]
    document: str = JOB_UPDATES
    root: str = "jobUpdates"
    updates: list[dict[str, Any]] = field(default_factory=list)
    error: BaseException | None = None
    _task: asyncio.Task[None] | None = None
    _arrived: asyncio.Event = field(default_factory=asyncio.Event)
    _ended: bool = False

    async def open(self) -> Subscription:
        self._task = asyncio.create_task(self._consume())
        return self

    async def _consume(self) -> None:
        try:
            async with self.client as session:
                request = GraphQLRequest(self.document, variable_values=self.variables)
                async for result in session.subscribe(request):
                    self.updates.append(result[self.root])
                    self._arrived.set()
        except asyncio.CancelledError:
            raise
        except BaseException as exc:
            self.error = exc
        finally:
            self._ended = True
            self._arrived.set()

    async def wait_for(
        self, predicate: Callable[[list[dict[str, Any]]], bool], *, timeout: float = 30.0
    ) -> list[dict[str, Any]]:
        """Wait until `predicate(updates)` holds; fail (not hang) after `timeout`."""

        async def wait() -> None:
            while not predicate(self.updates):
                if self._ended:
                    raise AssertionError(
                        f"the subscription ended ({self.error!r}) after {self.updates}"
                    )
                self._arrived.clear()
                await self._arrived.wait()

        try:
            await asyncio.wait_for(wait(), timeout)
        except TimeoutError:
            raise AssertionError(
                f"timed out after {timeout}s waiting on the subscription; got {self.updates}"
            ) from None
        return self.updates

    async def close(self) -> None:
        """Drop the connection (the client closes its WebSocket)."""
        if self._task is not None and not self._task.done():
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(self._task, 15)

    @property
    def changes(self) -> list[dict[str, Any]]:
        return [u for u in self.updates if u["__typename"] == "JobChange"]


@contextlib.asynccontextmanager
async def subscribed(
    service: Service, token: str, cluster_id: str, since: int | None = None
) -> AsyncIterator[Subscription]:
    variables: dict[str, Any] = {"clusterId": cluster_id}
    if since is not None:
        variables["since"] = since
    subscription = await Subscription(ws_client(service, token), variables).open()
    try:
        yield subscription
    finally:
        await subscription.close()


def statuses_of(changes: list[dict[str, Any]], job_id: str) -> list[str]:
    return [c["job"]["status"] for c in changes if c["job"]["id"] == job_id]


def completed(job_ids: list[str]) -> Callable[[list[dict[str, Any]]], bool]:
    """All these jobs have reached a finished status in the changes received."""

    def check(updates: list[dict[str, Any]]) -> bool:
        done = {
            u["job"]["id"]
            for u in updates
            if u["__typename"] == "JobChange" and u["job"]["status"] in ("COMPLETED", "FAILED")
        }
        return set(job_ids) <= done

    return check


@pytest.fixture
def no_tracebacks() -> Iterator[None]:
    """Every HTTP body received during the test is free of stack traces."""
    start = len(RESPONSE_BODIES)
    yield
    for body in RESPONSE_BODIES[start:]:
        assert "Traceback" not in body, body


async def submit_raw(service: Service, token: str, job_input: dict[str, Any]) -> dict[str, Any]:
    """submitJob over a raw POST; returns the whole response body."""
    response = await post_graphql(
        service,
        """mutation($input: SubmitJobInput!) { submitJob(input: $input) {
            __typename ... on Job { id } ... on ValidationError { fields { path code } } } }""",
        {"input": job_input},
        token=token,
    )
    body: dict[str, Any] = response.json()
    return body


def same_budget(sent: str) -> Callable[[dict[str, Any]], bool]:
    def same(job: dict[str, Any]) -> bool:
        value = job["budgetLimit"]
        return value is not None and Decimal(value) == Decimal(sent)

    return same


async def assert_stored_or_rejected(
    service: Service,
    token: str,
    job_input: dict[str, Any],
    *,
    field: str,
    read: str,
    same: Callable[[dict[str, Any]], bool],
) -> None:
    """Either a ValidationError naming exactly `field`, or the job is stored and reads back as
    sent (`same(job)`, the job as selected by `read`); never an internal error."""
    body = await submit_raw(service, token, job_input)
    assert not body.get("errors"), f"{field}: {body}"
    result = body["data"]["submitJob"]
    if result["__typename"] == "ValidationError":
        assert [f["path"] for f in result["fields"]] == [field], result
        return
    assert result["__typename"] == "Job", result
    response = await post_graphql(
        service, f'{{ job(id: "{result["id"]}") {{ {read} }} }}', token=token
    )
    job = response.json()["data"]["job"]
    assert same(job), f"{field}: stored, but reads back {job!r}"


# --- a real browser (the /schedule page's tests) -----------------------------------------------

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium() -> str:
    found = os.environ.get("BUDCLUSTER_CHROMIUM") or next(
        (p for n in ("chromium", "chromium-browser", "google-chrome") if (p := shutil.which(n))),
        None,
    )
    if not found:
        pytest.fail("no Chromium: ./dev test installs Debian's (or set BUDCLUSTER_CHROMIUM)")
    return found


@pytest.fixture(scope="module")
async def browser() -> AsyncIterator[Any]:
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(
            executable_path=chromium(), args=CHROMIUM_ARGS, headless=True
        )
        try:
            yield launched
        finally:
            await launched.close()
