"""Event to screen: from a committed mutation to the last live `scheduleTimeline` subscriber.

One embedded API process (`python -m budcluster serve`, SQLite in a fresh temporary data dir) is
started as a subprocess. `--subscribers` WebSocket connections (graphql-transport-ws, raw
`websockets` clients, one subscription each on the same cluster) are opened from `--clients`
separate worker processes, so that client work is not accounted to the server. Then `--mutations`
`submitJob`s of a small job are sent one at a time over HTTP; after each, the benchmark waits
until every subscriber holds a `ScheduleDiff` whose `added` or `moved` segments carry the new
job's id, then `--settle` seconds and until the server is idle (so the job's own later events,
such as its start, are not fanned out during the next measurement), and goes on with the next.

The job is a BATCH job on one A100 that runs `--runtime` simulated seconds (an hour) at
`--time-scale` 1, so nothing finishes during a run; the cluster has 16 A100s, so from the 17th
job on they queue and each diff also carries the whole, longer queue. Without `--window shared`
the subscription has no from/to, so the server's default window applies (an hour before now
rounded down to 5 minutes, + 24 h): subscribers who subscribe in the same 5 minutes share it.

For each mutation: t_send (request sent), t0 (HTTP response read; the commit happened before),
t_first and t_last (the first and the last subscriber to receive that diff). Every timestamp is
`clock_gettime(CLOCK_MONOTONIC)` taken on this host, which is one clock for all processes on
Linux. A subscriber's time is when the message's bytes were read from its socket: the workers
read every socket first and parse in a batch once they are quiet (`_Inbox`), so two worker
processes sharing one CPU do not add their own parsing to the server's fan-out (with the
`websockets` client, stamping after parsing, the last subscriber came 20-60 ms later).
Reported: median and p99 (nearest rank) of t_last - t0 and t_first - t0, the spread
t_last - t_first, the HTTP round trip, subscribers that missed the diff, and the CPU seconds the
server and the clients spent per mutation (from /proc), the size of the diff message. With
`--pin` (the default; needs 2 or more CPUs) the server runs on CPU 0 and the client workers and
this driver on the others; the output says how the CPUs were shared. `--keep-data` keeps the
data dir with the server's stdout and stderr. Exit status 1 if any subscriber missed a diff.

`--tenants K` spreads the subscribers over K new tenants (tokens issued by `budcluster token
create` in the server's database): each tenant sees the schedule its own way (others' jobs
unnamed), so each diff is made and serialised once per tenant rather than once.

    .venv/bin/python -m benchmarks.event_to_screen --subscribers 1000 [--mutations 30]
        [--tenants 1] [--clients 2] [--port 0] [--keep-data] [--no-pin] [--window default|shared]
        [--no-compression] [--debounce 0.05] [--settle 3] [--server-env NAME=VALUE ...]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import http.client
import json
import math
import multiprocessing
import multiprocessing.connection
import os
import re
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
UNLIMITED = 100_000_000
UNLIMITED_RATES = {
    name: str(UNLIMITED)
    for name in (
        "BUDCLUSTER_RATE_BURST",
        "BUDCLUSTER_RATE_POINTS_PER_MINUTE",
        "BUDCLUSTER_TENANT_RATE_BURST",  # (at least the token's, or the server refuses to start)
        "BUDCLUSTER_TENANT_RATE_POINTS_PER_MINUTE",
    )
}
"""The server's environment that lifts its rate limits, per token and per tenant."""
TOKEN = re.compile(r"bud_[0-9a-f]{32}_[A-Za-z0-9_-]{20,128}")
PROJECT_ID = "5b0c3b8e-2f7e-4a8e-9a57-0c9d8a0c1a11"
A100 = "nvidia-a100-80gb"
PROTOCOL = "graphql-transport-ws"

SEGMENT = "id rows start end kind source jobId name status priority reservationId mine"
QUEUE = "position jobId name estimatedStart reason warnings priority gpuType gpuCount mine"
FORECAST = "gpuType points { at freeGpus }"


def subscription_document(contract: str) -> str:
    """The subscription a timeline screen would send, for the contract in this tree (the diff's
    whole-queue and forecast fields are `queueUpdate`/`forecastUpdate` or, in older contracts,
    `queue`/`forecast`, aliased here so they do not clash with Schedule's)."""
    block = re.search(r"type ScheduleDiff \{(.*?)\n\}", contract, re.S)
    body = block[1] if block else ""
    if re.search(r"^\s*queueUpdate:", body, re.M):
        queue, forecast = "queueUpdate", "forecastUpdate"
    else:
        queue, forecast = "queueUpdate: queue", "forecastUpdate: forecast"
    return f"""
subscription Timeline($clusterId: ID!, $from: DateTime, $to: DateTime) {{
  scheduleTimeline(clusterId: $clusterId, from: $from, to: $to) {{
    __typename
    ... on Schedule {{
      sequence computedAt start end reason
      segments {{ {SEGMENT} }}
      queue {{ {QUEUE} }}
      forecast {{ {FORECAST} }}
    }}
    ... on ScheduleDiff {{
      sequence computedAt
      added {{ {SEGMENT} }}
      moved {{ {SEGMENT} }}
      removed
      {queue} {{ {QUEUE} }}
      {forecast} {{ {FORECAST} }}
    }}
  }}
}}
"""


SUBMIT = """
mutation Submit($input: SubmitJobInput!) {
  submitJob(input: $input) {
    __typename
    ... on Job { id status }
    ... on UserError { code message }
  }
}
"""


def now() -> float:
    """One clock for every process on this host."""
    return time.clock_gettime(time.CLOCK_MONOTONIC)


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process, all its threads, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def raise_nofile(wanted: int) -> tuple[int, int]:
    """Raise this process's (and so its children's) open-file limit as far as allowed."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(max(soft, wanted), hard)
    if target > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)


def revision() -> str:
    """The commit the server runs, and whether the tree has changes on top of it."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=REPO,
            capture_output=True,
            text=True,
        ).stdout.strip()
    except OSError:
        return "unknown"
    return f"{head or 'unknown'}{' + uncommitted changes' if dirty else ''}"


def settle(pid: int, seconds: float, *, idle: float = 0.05, limit: float = 60.0) -> None:
    """Pause `seconds`, then until the process uses under `idle` of a CPU for 0.5 s (so the
    previous job's later events, e.g. its start, are not fanned out during the next mutation)."""
    time.sleep(seconds)
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        before = cpu_seconds(pid)
        time.sleep(0.5)
        if cpu_seconds(pid) - before < idle * 0.5:
            return


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest rank: the smallest value with at least q of the values at or below it."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:8.1f}"


# --- the server -----------------------------------------------------------------------------


@dataclass
class Server:
    process: subprocess.Popen[bytes]
    port: int
    stdout: Path
    stderr: Path

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def output(self, tail: int = 4000) -> str:
        out = self.stdout.read_text(errors="replace")
        err = self.stderr.read_text(errors="replace")
        return f"--- server stdout ---\n{out[-tail:]}\n--- server stderr ---\n{err[-tail:]}"

    def wait_healthy(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"the server exited early\n{self.output()}")
            url = f"{self.base}/healthz"
            with contextlib.suppress(OSError), urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
            if time.monotonic() > deadline:
                raise TimeoutError(f"/healthz did not answer in {timeout}s\n{self.output()}")
            time.sleep(0.1)

    def token(self, timeout: float = 10.0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = TOKEN.findall(self.stdout.read_text(errors="replace"))
            if found:
                return str(found[0])
            time.sleep(0.1)
        raise RuntimeError(f"the server printed no admin token\n{self.output()}")

    def stop(self) -> None:
        if self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def start_server(
    data_dir: Path, port: int, env_extra: dict[str, str], cpus: set[int] | None
) -> Server:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("BUDCLUSTER_") and k not in ("DATABASE_URL", "REDIS_URL")
    }
    env.update(
        PYTHONUNBUFFERED="1",
        BUDCLUSTER_DATA_DIR=str(data_dir),
        BUDCLUSTER_HOST="127.0.0.1",
        BUDCLUSTER_PORT=str(port),
    )
    env.update(env_extra)
    stdout, stderr = data_dir / "server.stdout", data_dir / "server.stderr"

    def pin() -> None:
        if cpus:
            os.sched_setaffinity(0, cpus)

    with stdout.open("wb") as out, stderr.open("wb") as err:
        process = subprocess.Popen(
            [sys.executable, "-m", "budcluster", "serve"],
            cwd=REPO,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            preexec_fn=pin,
        )
    return Server(process, port, stdout, stderr)


def tenant_tokens(data_dir: Path, count: int) -> tuple[str, ...]:
    """`count` tokens of new tenants (the default tenant scopes), issued by the command line in
    the server's database: each tenant sees the cluster's schedule its own way (others' jobs
    unnamed), so each is a view of its own."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("BUDCLUSTER_") and k not in ("DATABASE_URL", "REDIS_URL")
    }
    env["BUDCLUSTER_DATA_DIR"] = str(data_dir)
    tokens = []
    command = [sys.executable, "-m", "budcluster", "token", "create", "--new-tenant"]
    for i in range(count):
        issued = subprocess.run(
            [*command, "--name", f"e2s-{i}"],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        tokens.append(issued.stdout.strip().splitlines()[-1])
    return tuple(tokens)


class Http:
    """The driver's HTTP connection for GraphQL POSTs. The server closes idle keep-alive
    connections after a few seconds, so `fresh()` reconnects, outside any timing."""

    def __init__(self, port: int, token: str) -> None:
        self._conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        self._headers = {"Content-Type": "application/json", "Authorization": f"Bearer {token}"}

    def fresh(self) -> None:
        self._conn.close()
        self._conn.connect()
        self._conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def post(self, query: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
        body = json.dumps({"query": query, "variables": variables or {}})
        self._conn.request("POST", "/graphql", body=body, headers=self._headers)
        response = self._conn.getresponse()
        data = response.read()
        if response.status != 200:
            raise RuntimeError(f"HTTP {response.status}: {data[:2000]!r}")
        result: dict[str, Any] = json.loads(data)
        if result.get("errors"):
            raise RuntimeError(f"GraphQL errors: {result['errors']}")
        return result

    def close(self) -> None:
        self._conn.close()


def embedded_cluster_id(api: Http) -> str:
    """The id of the embedded server's simulated cluster."""
    clusters = api.post("{ clusters { id name } }")["data"]["clusters"]
    return str(next(c["id"] for c in clusters if c["name"] == "local-sim"))


# --- the subscribers (worker processes) -----------------------------------------------------


@dataclass
class Subscriber:
    seen: dict[str, float] = field(default_factory=dict)
    """jobId -> when a ScheduleDiff naming it in added/moved first arrived."""
    size: dict[str, int] = field(default_factory=dict)
    """jobId -> the size of that message (bytes of JSON text)."""
    anonymous: list[tuple[float, int]] = field(default_factory=list)
    """(arrival, size) of each diff that added segments none of which names its job: another
    tenant's work, which this subscriber's view shows without ids (`--tenants`)."""
    diffs: int = 0
    snapshots: int = 0
    resyncs: int = 0
    bytes: int = 0
    error: str | None = None


@dataclass(frozen=True)
class WorkerConfig:
    index: int
    count: int
    url: str
    document: str
    tokens: tuple[str, ...]
    """Subscriber k of all (this worker's first is `offset`) uses tokens[k % len(tokens)]."""
    offset: int
    cluster_id: str
    variables: dict[str, Any]
    compression: bool
    cpus: set[int] | None
    connect_concurrency: int = 50


INBOX_QUIET = 0.02
"""Seconds without new bytes on any socket after which a worker parses what it has read."""
INBOX_HOLD = 0.5
"""...or at most this long after the first of them: a fan-out longer than this is stamped late
by one parse of what came before (about 50 us a message)."""


class _Inbox:
    """Bytes read from every socket of a worker, stamped when read and parsed in a batch once the
    sockets are quiet: parsing 500 messages (about 50 us each) does not delay reading the next
    socket, so a message's time is when its bytes came off the socket, not when this worker got
    round to it. The subscribers are a stand-in for a thousand browsers on as many machines; two
    processes sharing one CPU would otherwise add their own queueing to what is measured."""

    def __init__(self) -> None:
        self._pending: list[tuple[_Socket, float, bytes]] = []
        self._handle: asyncio.TimerHandle | None = None
        self._first = self._last = 0.0

    def put(self, sock: _Socket, t: float, data: bytes) -> None:
        self._pending.append((sock, t, data))
        self._last = t
        if self._handle is None:
            self._first = t
            self._handle = asyncio.get_running_loop().call_later(INBOX_QUIET, self._drain)

    def _drain(self) -> None:
        self._handle = None
        t = now()
        if t - self._last < INBOX_QUIET and t - self._first < INBOX_HOLD:
            self._handle = asyncio.get_running_loop().call_later(INBOX_QUIET, self._drain)
            return
        pending, self._pending = self._pending, []
        for sock, at, data in pending:
            sock.feed(at, data)


class _Closed(Exception):
    pass


class _Socket(asyncio.Protocol):
    """One subscriber's WebSocket: websockets' sans-I/O client protocol (the same framing and
    permessage-deflate as its asyncio client) on a plain asyncio connection, fed by `_Inbox`."""

    def __init__(self, inbox: _Inbox, url: str, compression: bool) -> None:
        from websockets.client import ClientProtocol
        from websockets.extensions.permessage_deflate import enable_client_permessage_deflate
        from websockets.typing import Subprotocol
        from websockets.uri import parse_uri

        self.protocol = ClientProtocol(
            parse_uri(url),
            subprotocols=[Subprotocol(PROTOCOL)],
            extensions=enable_client_permessage_deflate(None) if compression else None,
            max_size=None,
        )
        self.inbox = inbox
        self.transport: asyncio.Transport | None = None
        self.messages: list[tuple[float, str]] = []
        self.opened: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.closed = False
        self._waiter: asyncio.Future[None] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's is not a subclass
        self.protocol.send_request(self.protocol.connect())
        self._flush()

    def data_received(self, data: bytes) -> None:
        self.inbox.put(self, now(), data)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if not self.opened.done():
            self.opened.set_exception(_Closed("closed before the handshake"))
        self._wake()

    def feed(self, t: float, data: bytes) -> None:
        from websockets.frames import Frame, Opcode
        from websockets.http11 import Response

        self.protocol.receive_data(data)
        self._flush()  # pongs
        for event in self.protocol.events_received():
            if isinstance(event, Response) and not self.opened.done():
                failed = self.protocol.handshake_exc
                if failed is None:
                    self.opened.set_result(None)
                else:
                    self.opened.set_exception(failed)
            elif isinstance(event, Frame) and event.opcode is Opcode.TEXT:
                if not event.fin:
                    raise RuntimeError("a fragmented message (the server sends whole ones)")
                self.messages.append((t, bytes(event.data).decode()))
        self._wake()

    def send(self, text: str) -> None:
        self.protocol.send_text(text.encode())
        self._flush()

    async def recv(self) -> tuple[float, str]:
        """The next message and when its bytes were read."""
        while not self.messages:
            if self.closed:
                raise _Closed("the connection closed")
            self._waiter = asyncio.get_running_loop().create_future()
            await self._waiter
        return self.messages.pop(0)

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()

    def _flush(self) -> None:
        assert self.transport is not None
        for chunk in self.protocol.data_to_send():
            if chunk:
                self.transport.write(chunk)

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)


def worker_main(config: WorkerConfig, conn: multiprocessing.connection.Connection) -> None:
    if config.cpus:
        os.sched_setaffinity(0, config.cpus)
    try:
        import uvloop
    except ImportError:
        asyncio.run(_worker(config, conn))
    else:
        uvloop.run(_worker(config, conn))


async def _worker(config: WorkerConfig, conn: multiprocessing.connection.Connection) -> None:
    from urllib.parse import urlsplit

    subs = [Subscriber() for _ in range(config.count)]
    arrived = asyncio.Event()
    ready = 0
    gate = asyncio.Semaphore(config.connect_concurrency)
    all_ready = asyncio.Event()
    inbox = _Inbox()
    where = urlsplit(config.url)
    host, port = where.hostname or "127.0.0.1", where.port or 80
    inits = [
        json.dumps({"type": "connection_init", "payload": {"Authorization": f"Bearer {token}"}})
        for token in config.tokens
    ]
    subscribe = json.dumps(
        {
            "id": "1",
            "type": "subscribe",
            "payload": {"query": config.document, "variables": config.variables},
        }
    )
    pong = json.dumps({"type": "pong"})

    async def run(sub: Subscriber, index: int) -> None:
        nonlocal ready
        counted = False
        ws = _Socket(inbox, config.url, config.compression)
        try:
            async with gate:
                loop = asyncio.get_running_loop()
                await asyncio.wait_for(loop.create_connection(lambda: ws, host, port), 60)
                await asyncio.wait_for(ws.opened, 60)
                ws.send(inits[(config.offset + index) % len(inits)])
                while json.loads((await ws.recv())[1])["type"] != "connection_ack":
                    pass
                ws.send(subscribe)
                first = json.loads((await ws.recv())[1])
                if first.get("type") != "next":
                    raise RuntimeError(f"expected a snapshot, got {str(first)[:500]}")
                sub.snapshots += 1
            ready += 1
            counted = True
            if ready == config.count:
                all_ready.set()
            while True:
                t, raw = await ws.recv()
                sub.bytes += len(raw)
                message = json.loads(raw)
                kind = message.get("type")
                if kind == "ping":
                    ws.send(pong)
                    continue
                if kind != "next":
                    raise RuntimeError(f"unexpected {str(message)[:500]}")
                update = message["payload"]["data"]["scheduleTimeline"]
                if update["__typename"] == "Schedule":
                    sub.snapshots += 1
                    sub.resyncs += update["reason"] == "resync"
                    continue
                sub.diffs += 1
                for seg in (*update["added"], *update["moved"]):
                    job_id = seg.get("jobId")
                    if job_id and job_id not in sub.seen:
                        sub.seen[job_id] = t
                        sub.size[job_id] = len(raw)
                        arrived.set()
                if update["added"] and not any(s.get("jobId") for s in update["added"]):
                    sub.anonymous.append((t, len(raw)))
                    arrived.set()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            sub.error = f"{type(exc).__name__}: {exc}"[:300]
        finally:
            ws.close()
            if not counted:
                ready += 1
                if ready == config.count:
                    all_ready.set()

    tasks = [asyncio.create_task(run(s, i)) for i, s in enumerate(subs)]
    started = now()
    await all_ready.wait()
    failed = [s.error for s in subs if s.error]
    conn.send(("ready", config.count - len(failed), failed[:5], now() - started))

    def seen(sub: Subscriber, job_id: str, since: float) -> float | None:
        """When `sub` received the diff of `job_id`, submitted at `since`: the one naming it,
        or, in a view where it is another tenant's, the first that added segments after."""
        if job_id not in sub.seen:
            later = next(((t, n) for t, n in sub.anonymous if t >= since), None)
            if later is not None:
                sub.seen[job_id], sub.size[job_id] = later
        return sub.seen.get(job_id)

    async def collect(job_id: str, seconds: float, since: float) -> list[float | None]:
        deadline = time.monotonic() + seconds
        while True:
            missing = [s for s in subs if seen(s, job_id, since) is None and s.error is None]
            remaining = deadline - time.monotonic()
            if not missing or remaining <= 0:
                return [s.seen.get(job_id) for s in subs]
            arrived.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(arrived.wait(), min(remaining, 0.5))

    orphaned = False
    while True:
        try:
            command = await asyncio.to_thread(conn.recv)
        except EOFError:  # the driver went away
            orphaned = True
            break
        if command[0] == "collect":
            _, job_id, timeout, since = command
            times = await collect(job_id, timeout, since)
            sizes = [s.size[job_id] for s in subs if job_id in s.size]
            conn.send(("collected", times, max(sizes, default=0)))
        elif command[0] == "stop":
            break
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    if orphaned:
        return
    conn.send(
        (
            "stopped",
            {
                "diffs": sum(s.diffs for s in subs),
                "snapshots": sum(s.snapshots for s in subs),
                "resyncs": sum(s.resyncs for s in subs),
                "bytes": sum(s.bytes for s in subs),
                "errors": [s.error for s in subs if s.error][:5],
                "error_count": sum(1 for s in subs if s.error),
            },
        )
    )


@dataclass
class Worker:
    process: multiprocessing.process.BaseProcess
    conn: multiprocessing.connection.Connection


# --- the run --------------------------------------------------------------------------------


@dataclass
class Sample:
    index: int
    job_id: str
    send: float
    t0: float
    first: float | None
    median: float | None
    last: float | None
    missed: int
    diff_bytes: int
    server_cpu: float
    client_cpu: float

    @property
    def http(self) -> float:
        return self.t0 - self.send


def job_input(cluster_id: str, gpus: int, runtime: int) -> dict[str, Any]:
    resources: dict[str, Any] = {"gpuCount": gpus, "cpuCores": 1, "memoryGb": 4}
    if gpus:
        resources["gpuType"] = A100
    return {
        "name": f"e2s-{uuid.uuid4().hex[:12]}",
        "projectId": PROJECT_ID,
        "clusterId": cluster_id,
        "jobType": "BATCH",
        "deploymentType": "DOCKER",
        "spec": {"simulation": {"runtime_seconds": runtime}},
        "resources": resources,
        "estimatedDurationSeconds": runtime,
    }


def split_cpus(pin: bool) -> tuple[set[int] | None, set[int] | None, str]:
    cpus = sorted(os.sched_getaffinity(0))
    if not pin or len(cpus) < 2:
        return (
            None,
            None,
            (
                f"not pinned: server, {len(cpus)} CPU(s) shared by the server, the client "
                "workers and the driver (the OS scheduler decides)"
            ),
        )
    server, clients = {cpus[0]}, set(cpus[1:])
    return (
        server,
        clients,
        (
            f"pinned: server on CPU {sorted(server)}, client workers and driver on CPU(s) "
            f"{sorted(clients)} (of {len(cpus)})"
        ),
    )


def run(args: argparse.Namespace) -> int:
    limits = raise_nofile(args.subscribers + 4096)
    server_cpus, client_cpus, layout = split_cpus(args.pin)
    if client_cpus:
        os.sched_setaffinity(0, client_cpus)
    data_dir = Path(tempfile.mkdtemp(prefix="budcluster-e2s-"))
    port = args.port or free_port()
    env = {
        "BUDCLUSTER_SIM_TIME_SCALE": str(args.time_scale),
        "BUDCLUSTER_TIMELINE_DEBOUNCE_SECONDS": str(args.debounce),
        "BUDCLUSTER_LOG_LEVEL": args.log_level,
        # the subscribers share one token: opened at once, they would exceed its rate limit's
        # burst (about 170 of 1,000 refused); this measures the fan-out, not the rate limit
        **UNLIMITED_RATES,
    }
    for item in args.server_env:
        name, _, value = item.partition("=")
        env[name] = value
    print(f"code: {revision()}; data dir {data_dir}; open-file limit {limits[0]}", flush=True)
    print(layout, flush=True)
    server = start_server(data_dir, port, env, server_cpus)
    workers: list[Worker] = []
    try:
        server.wait_healthy()
        token = server.token()
        print(f"server pid {server.process.pid} on port {port}", flush=True)
        api = Http(port, token)
        api.fresh()
        cluster_id = embedded_cluster_id(api)
        variables: dict[str, Any] = {"clusterId": cluster_id}
        if args.window == "shared":
            start = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
            variables["from"] = (start - timedelta(hours=1)).isoformat()
            variables["to"] = (start + timedelta(hours=24)).isoformat()

        document = subscription_document((REPO / "frontend-contract/schema.graphql").read_text())
        ctx = multiprocessing.get_context("spawn")
        counts = [
            args.subscribers // args.clients + (1 if i < args.subscribers % args.clients else 0)
            for i in range(args.clients)
        ]
        tokens = (token,) if args.tenants == 1 else tenant_tokens(data_dir, args.tenants)
        print(f"subscribers over {len(tokens)} tenant(s), one view each", flush=True)
        for i, count in enumerate(counts):
            parent, child = ctx.Pipe()
            config = WorkerConfig(
                i,
                count,
                f"ws://127.0.0.1:{port}/graphql",
                document,
                tokens,
                sum(counts[:i]),
                cluster_id,
                variables,
                args.compression,
                client_cpus,
            )
            process = ctx.Process(target=worker_main, args=(config, child), daemon=True)
            process.start()
            workers.append(Worker(process, parent))
        opened = 0
        for w in workers:
            _, ok, failures, took = w.conn.recv()
            opened += ok
            print(f"client worker pid {w.process.pid}: {ok} subscribed in {took:.1f}s", flush=True)
            for failure in failures:
                print(f"  failed: {failure}", flush=True)
        if opened < args.subscribers:
            print(f"only {opened} of {args.subscribers} subscriptions opened", flush=True)
            if not opened:
                return 2
        settle(server.process.pid, args.settle)

        def client_cpu() -> float:
            return sum(cpu_seconds(w.process.pid) for w in workers if w.process.pid)

        samples: list[Sample] = []
        server_before, clients_before = cpu_seconds(server.process.pid), client_cpu()
        for i in range(args.warmup + args.mutations):
            cpu_server, cpu_clients = cpu_seconds(server.process.pid), client_cpu()
            variables_in = {"input": job_input(cluster_id, args.gpus, args.runtime)}
            api.fresh()
            send = now()
            result = api.post(SUBMIT, variables_in)
            t0 = now()
            job = result["data"]["submitJob"]
            if job["__typename"] != "Job":
                raise RuntimeError(f"submitJob answered {job}")
            for w in workers:
                w.conn.send(("collect", job["id"], args.timeout, send))
            times: list[float | None] = []
            diff_bytes = 0
            for w in workers:
                _, got, size = w.conn.recv()
                times.extend(got)
                diff_bytes = max(diff_bytes, size)
            arrived = sorted(t for t in times if t is not None)
            sample = Sample(
                i - args.warmup + 1,
                job["id"],
                send,
                t0,
                arrived[0] if arrived else None,
                statistics.median(arrived) if arrived else None,
                arrived[-1] if arrived else None,
                len(times) - len(arrived),
                diff_bytes,
                cpu_seconds(server.process.pid) - cpu_server,
                client_cpu() - cpu_clients,
            )
            warm = i < args.warmup
            if not warm:
                samples.append(sample)
            show = args.verbose or warm or sample.missed
            if show:
                print(describe(sample, warm), flush=True)
            settle(server.process.pid, args.settle)
        phase = (samples[0].send if samples else now(), now())
        server_total = cpu_seconds(server.process.pid) - server_before
        clients_total = client_cpu() - clients_before
        api.close()

        stats: list[dict[str, Any]] = []
        for w in workers:
            w.conn.send(("stop",))
        for w in workers:
            stats.append(w.conn.recv()[1])
        report(args, samples, stats, opened, layout, server_total, clients_total)
        print(
            f"  measured mutations ran from CLOCK_MONOTONIC {phase[0]:.3f} to {phase[1]:.3f} "
            "(to line up with a profiler's timestamps)"
        )
        return 0 if all(s.missed == 0 for s in samples) else 1
    finally:
        for w in workers:
            w.conn.close()  # a worker still waiting for a command sees EOF and exits
        for w in workers:
            w.process.join(10)
            if w.process.is_alive():
                w.process.kill()
        server.stop()
        if args.keep_data:
            print(f"kept {data_dir} (server.stdout, server.stderr, budcluster.db)")
        else:
            shutil.rmtree(data_dir, ignore_errors=True)


def describe(s: Sample, warm: bool) -> str:
    def rel(t: float | None) -> str:
        return "     n/a" if t is None else ms(t - s.t0)

    label = "warmup" if warm else f"#{s.index:<5}"  # the measured ones count from 1
    return (
        f"{label} http {ms(s.http)}  first {rel(s.first)}  median {rel(s.median)}  "
        f"last {rel(s.last)} ms  missed {s.missed}  diff {s.diff_bytes} B  "
        f"cpu server {s.server_cpu:.2f}s clients {s.client_cpu:.2f}s"
    )


def report(
    args: argparse.Namespace,
    samples: list[Sample],
    stats: list[dict[str, Any]],
    opened: int,
    layout: str,
    server_cpu: float,
    clients_cpu: float,
) -> None:
    def line(name: str, values: list[float]) -> str:
        if not values:
            return f"  {name:<22} n/a"
        return (
            f"  {name:<22} median {ms(statistics.median(values))} ms   p99 "
            f"{ms(percentile(values, 0.99))} ms   min {ms(min(values))}   max {ms(max(values))}"
        )

    complete = [s for s in samples if s.first is not None and s.last is not None]
    first = [s.first - s.t0 for s in complete if s.first is not None]
    last = [s.last - s.t0 for s in complete if s.last is not None]
    middle = [s.median - s.t0 for s in complete if s.median is not None]
    spread = [s.last - s.first for s in complete if s.last is not None and s.first is not None]
    send_to_last = [s.last - s.send for s in complete if s.last is not None]
    n = len(samples)
    print()
    print(
        f"event to screen: {opened} subscribers ({args.clients} client processes), "
        f"{n} mutations (+{args.warmup} warmup), debounce {args.debounce * 1000:.0f} ms, "
        f"window {args.window}, compression {'deflate' if args.compression else 'off'}, "
        f"job {args.gpus} GPU(s)"
    )
    print(f"  CPUs: {layout}")
    rank = math.ceil(0.99 * n)
    print(f"  p99 is nearest rank: with {n} mutations the {rank}. smallest (of {n})")
    print(line("http (send -> t0)", [s.http for s in samples]))
    print(line("t_first - t0", first))
    print(line("t_median_sub - t0", middle))
    print(line("t_last - t0", last))
    print(line("t_last - t_first", spread))
    print(line("t_last - t_send", send_to_last))
    sizes = [s.diff_bytes for s in samples if s.diff_bytes]
    if sizes:
        print(
            f"  the diff's JSON message: median {statistics.median(sizes):.0f} B, "
            f"first {sizes[0]} B, last {sizes[-1]} B (it carries the whole queue when it changed)"
        )
    missed = sum(s.missed for s in samples)
    print(
        f"  missed diffs: {missed} (subscriber x mutation pairs without the diff within "
        f"{args.timeout:.0f}s); mutations with a miss: {sum(1 for s in samples if s.missed)}"
    )
    if samples:
        print(
            f"  CPU per mutation (median): server "
            f"{statistics.median(s.server_cpu for s in samples):.3f}s, clients "
            f"{statistics.median(s.client_cpu for s in samples):.3f}s; whole phase: "
            f"server {server_cpu:.1f}s, clients {clients_cpu:.1f}s"
        )
    totals = {k: sum(st[k] for st in stats) for k in ("diffs", "snapshots", "resyncs", "bytes")}
    errors = [e for st in stats for e in st["errors"]]
    print(
        f"  received: {totals['diffs']} diffs, {totals['snapshots']} snapshots "
        f"({totals['resyncs']} resyncs), {totals['bytes'] / 1e6:.1f} MB; "
        f"connection errors: {sum(st['error_count'] for st in stats)}"
    )
    for error in errors:
        print(f"    {error}")


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--subscribers", type=int, default=1000)
    p.add_argument("--mutations", type=int, default=30)
    p.add_argument("--warmup", type=int, default=2, help="mutations run first, not counted")
    p.add_argument("--clients", type=int, default=2, help="client worker processes")
    p.add_argument(
        "--tenants",
        type=int,
        default=1,
        help="spread the subscribers over this many new tenants' tokens (1: the operator's)",
    )
    p.add_argument("--port", type=int, default=0, help="0: a free port")
    p.add_argument("--keep-data", action="store_true", help="keep the data dir and server logs")
    p.add_argument("--pin", action=argparse.BooleanOptionalAction, default=True)
    p.add_argument(
        "--window",
        choices=("default", "shared"),
        default="default",
        help="default: no from/to (the server's default window, 'now - 1h' rounded down to 5 "
        "minutes); "
        "shared: the same explicit from/to for all",
    )
    p.add_argument("--compression", action=argparse.BooleanOptionalAction, default=True)
    p.add_argument("--debounce", type=float, default=0.05, help="timeline debounce, seconds")
    p.add_argument("--time-scale", type=float, default=1.0, help="simulated s per real s")
    p.add_argument("--runtime", type=int, default=3600, help="simulated runtime of each job, s")
    p.add_argument("--gpus", type=int, default=1, help="A100s per job (0: a CPU job)")
    p.add_argument(
        "--settle",
        type=float,
        default=3.0,
        help="pause after each mutation, s, then until the server is idle",
    )
    p.add_argument("--timeout", type=float, default=30.0, help="wait for a diff at most, s")
    p.add_argument("--log-level", default="WARNING", help="the server's BUDCLUSTER_LOG_LEVEL")
    p.add_argument("--server-env", action="append", default=[], metavar="NAME=VALUE")
    p.add_argument("--verbose", "-v", action="store_true", help="print every mutation")
    args = p.parse_args(argv)
    if args.subscribers < 1 or args.clients < 1 or args.mutations < 1:
        p.error("--subscribers, --clients and --mutations must be positive")
    args.clients = min(args.clients, args.subscribers)
    return args


def main(argv: Sequence[str] | None = None) -> int:
    return run(parse(argv))


if __name__ == "__main__":
    raise SystemExit(main())
