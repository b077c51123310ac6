"""Live subscribers for the fault suite (`benchmarks.faults`): graphql-transport-ws clients.

`ResumingSubscriber` holds one `jobUpdates` subscription on a cluster for a whole scenario and
keeps it whatever the fault does: after a disconnect (a killed API process), an `error` or a
`complete` it connects again, to the API process it prefers first and then to the other, and
resumes with `since` set to the last sequence it holds, as a careful client does. It counts every
transition it receives (job, attempt, from, to), so that the suite can compare them with the
job_event table: a transition stored but never received is missing, one received twice is a
duplicate. Snapshots after the first (history-gone, unknown-since, resync) are recorded: the
transitions they stand for were not received, and count as missing.

`memory_rounds` is the memory scenario's client: rounds of subscribers (half `jobUpdates`, half
`scheduleTimeline`) that connect to one API process, receive the changes of a few jobs, and go
away (half by `complete` and a close, half by cutting the connection), with the process's
resident memory (VmRSS) read after each round.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import WebSocketException
from websockets.typing import Subprotocol

from benchmarks.event_to_screen import subscription_document

PROTOCOL = Subprotocol("graphql-transport-ws")
REPO = Path(__file__).resolve().parents[1]

JOB_UPDATES = """subscription($clusterId: ID!, $since: Int) {
  jobUpdates(clusterId: $clusterId, since: $since) {
    __typename
    ... on JobSnapshot { sequence reason truncated jobs { id } }
    ... on JobChange { sequence kind job { id status } transition { attempt fromStatus toStatus } }
  }
}"""

Transition = tuple[str, int, str | None, str]
"""job id, attempt, from status, to status: one row of job_event."""


async def _open(url: str, token: str, within: float = 10.0) -> ClientConnection:
    ws = await connect(
        url,
        subprotocols=[PROTOCOL],
        max_size=None,
        ping_interval=None,
        open_timeout=within,
        close_timeout=1,
    )
    try:
        init = {"type": "connection_init", "payload": {"Authorization": f"Bearer {token}"}}
        await ws.send(json.dumps(init))
        async with asyncio.timeout(within):
            while True:
                message = json.loads(await ws.recv())
                if message.get("type") == "connection_ack":
                    return ws
                if message.get("type") == "ping":
                    await ws.send(json.dumps({"type": "pong"}))
    except BaseException:
        with contextlib.suppress(Exception):
            await ws.close()
        raise


def _subscribe(document: str, variables: dict[str, Any], sid: str = "1") -> str:
    return json.dumps(
        {"id": sid, "type": "subscribe", "payload": {"query": document, "variables": variables}}
    )


@dataclass
class ResumingSubscriber:
    urls: Callable[[], list[str]]
    """The API processes' WebSocket URLs, preferred first (read at each connect: a restarted
    process listens on a new port)."""
    token: str
    cluster_id: str
    received: Counter[Transition] = field(default_factory=Counter)
    last: int | None = None
    snapshots: list[str] = field(default_factory=list)
    connects: int = 0
    out_of_order: int = 0
    errors: list[str] = field(default_factory=list)
    _task: asyncio.Task[None] | None = None
    _ready: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def resumes(self) -> int:
        return max(0, self.connects - 1)

    async def start(self, within: float = 30.0) -> None:
        """Subscribe; return once the first snapshot is here."""
        self._task = asyncio.create_task(self._run())
        try:
            await asyncio.wait_for(self._ready.wait(), within)
        except TimeoutError:
            raise SystemExit(
                f"faults: the subscriber got no snapshot in {within:.0f} s: {self.errors[-3:]}"
            ) from None

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def caught_up(self, stored: Counter[Transition], within: float) -> None:
        """Wait (at most `within` seconds) until every stored transition has been received."""
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            if all(self.received[k] >= n for k, n in stored.items()):
                return
            await asyncio.sleep(0.2)

    def compare(self, stored: Counter[Transition]) -> tuple[int, int, int]:
        """(missing, duplicated, received but not stored) against job_event's transitions."""
        missing = sum(max(0, n - self.received[k]) for k, n in stored.items())
        dup = sum(max(0, n - stored[k]) for k, n in self.received.items() if k in stored)
        extra = sum(n for k, n in self.received.items() if k not in stored)
        return missing, dup, extra

    def differences(self, stored: Counter[Transition]) -> tuple[list[Transition], list[Transition]]:
        """The transitions missing, and those received more often than stored."""
        missing = [k for k, n in stored.items() if self.received[k] < n]
        extra = [k for k, n in self.received.items() if n > stored.get(k, 0)]
        return missing, extra

    def _error(self, text: str) -> None:
        if len(self.errors) < 20:
            self.errors.append(f"{time.strftime('%H:%M:%S')} {text[:200]}")

    async def _run(self) -> None:
        turn = 0
        wait = 0.1
        while True:
            urls = self.urls()
            url = urls[turn % len(urls)]
            began = time.monotonic()
            try:
                await self._session(url)
            except (OSError, WebSocketException, TimeoutError, ValueError, KeyError) as exc:
                self._error(f"{url}: {type(exc).__name__}: {exc}")
            if time.monotonic() - began > 5:
                turn, wait = 0, 0.1  # it had been up a while: the preferred process again
            else:
                turn += 1  # the other process next
                wait = min(wait * 2, 1.0)
            await asyncio.sleep(wait)

    async def _session(self, url: str) -> None:
        ws = await _open(url, self.token, within=5.0)
        self.connects += 1
        try:
            variables = {"clusterId": self.cluster_id, "since": self.last}
            await ws.send(_subscribe(JOB_UPDATES, variables))
            async for raw in ws:
                message = json.loads(raw)
                kind = message.get("type")
                if kind == "ping":
                    await ws.send(json.dumps({"type": "pong"}))
                elif kind == "next":
                    payload = message["payload"]
                    if payload.get("errors"):
                        self._error(f"errors: {payload['errors']}")
                        return
                    self._take(payload["data"]["jobUpdates"])
                elif kind in ("error", "complete"):
                    self._error(f"{kind}: {message.get('payload')}")
                    return
        finally:
            with contextlib.suppress(Exception):
                await ws.close()

    def _take(self, update: dict[str, Any]) -> None:
        sequence = int(update["sequence"])
        if update["__typename"] == "JobSnapshot":
            self.snapshots.append(str(update["reason"]))
            self.last = sequence
            self._ready.set()
            return
        self._ready.set()
        if self.last is not None and sequence <= self.last:
            self.out_of_order += 1
        self.last = sequence if self.last is None else max(self.last, sequence)
        transition = update.get("transition")
        if transition is not None:
            key = (
                str(update["job"]["id"]),
                int(transition["attempt"]),
                transition["fromStatus"],
                str(transition["toStatus"]),
            )
            self.received[key] += 1


# --- memory: subscribers coming and going ------------------------------------------------------


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for {pid}")


@dataclass
class MemoryResult:
    rss: list[float] = field(default_factory=list)
    """MB: before the first round, then after each round."""
    missing: int = 0
    """Job subscribers x round jobs whose COMPLETED transition never came."""
    no_diff: int = 0
    """Timeline subscribers that got no diff in their round."""
    failed: int = 0
    """Subscribers that could not subscribe."""
    errors: list[str] = field(default_factory=list)

    @property
    def growth(self) -> float:
        """From the first round to the last, in % of RSS after the first round."""
        if len(self.rss) < 3:
            return 0.0
        return (self.rss[-1] - self.rss[1]) / self.rss[1] * 100


@dataclass
class _Member:
    kind: str  # jobs | timeline
    ws: ClientConnection | None = None
    completed: set[str] = field(default_factory=set)
    diffs: int = 0
    error: str = ""
    failed: bool = False
    closing: bool = False


class _Countdown:
    def __init__(self, count: int) -> None:
        self.left = count
        self.done = asyncio.Event()

    def one(self) -> None:
        self.left -= 1
        if self.left <= 0:
            self.done.set()


async def _member(
    member: _Member,
    url: str,
    token: str,
    cluster_id: str,
    timeline: str,
    ready: Callable[[], None],
    gate: asyncio.Semaphore,
) -> None:
    subscribed = False
    try:
        async with gate:
            ws = member.ws = await _open(url, token, within=30.0)
            if member.kind == "jobs":
                await ws.send(_subscribe(JOB_UPDATES, {"clusterId": cluster_id}))
            else:
                await ws.send(_subscribe(timeline, {"clusterId": cluster_id}))
            first = json.loads(await asyncio.wait_for(ws.recv(), 60))
            if first.get("type") != "next" or first["payload"].get("errors"):
                raise RuntimeError(f"no snapshot: {str(first)[:200]}")
        subscribed = True
        ready()
        async for raw in ws:
            message = json.loads(raw)
            kind = message.get("type")
            if kind == "ping":
                await ws.send(json.dumps({"type": "pong"}))
            elif kind != "next":
                raise RuntimeError(f"unexpected {str(message)[:200]}")
            elif member.kind == "jobs":
                update = message["payload"]["data"]["jobUpdates"]
                transition = update.get("transition") or {}
                if transition.get("toStatus") == "COMPLETED":
                    member.completed.add(update["job"]["id"])
            elif message["payload"]["data"]["scheduleTimeline"]["__typename"] == "ScheduleDiff":
                member.diffs += 1
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        if member.closing:
            return
        member.error = f"{type(exc).__name__}: {exc}"[:200]
        if not subscribed:
            member.failed = True
            ready()


async def memory_rounds(
    *,
    url: Callable[[], str],
    pid: Callable[[], int],
    token: str,
    cluster_id: str,
    submit: Callable[[int], Awaitable[list[str]]],
    rounds: int = 5,
    subscribers: int = 100,
    settle: float = 3.0,
    report: Callable[[str], None] = print,
) -> MemoryResult:
    """`rounds` times: `subscribers` subscriptions connect to one API process, the jobs that
    `submit(round)` sends run to completion (each job subscriber must see every one complete,
    each timeline subscriber get a diff), then they all go; the process's RSS is read `settle`
    seconds later."""
    timeline = subscription_document((REPO / "frontend-contract/schema.graphql").read_text())
    result = MemoryResult()
    await asyncio.sleep(settle)
    result.rss.append(rss_mb(pid()))
    report(f"  RSS before: {result.rss[-1]:.0f} MB")
    for n in range(1, rounds + 1):
        members = [_Member("jobs" if i % 2 == 0 else "timeline") for i in range(subscribers)]
        all_in = _Countdown(subscribers)
        gate = asyncio.Semaphore(25)
        tasks = [
            asyncio.create_task(_member(m, url(), token, cluster_id, timeline, all_in.one, gate))
            for m in members
        ]
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(all_in.done.wait(), 120)
        job_ids = await submit(n)
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            done = all(
                m.error
                or (m.kind == "jobs" and set(job_ids) <= m.completed)
                or (m.kind == "timeline" and m.diffs > 0)
                for m in members
            )
            if done:
                break
            await asyncio.sleep(0.2)
        await asyncio.sleep(0.5)  # the jobs' last events, to everyone
        for i, m in enumerate(members):
            if m.ws is None:
                continue
            m.closing = True
            if i % 4 < 2:  # half say goodbye, half just vanish
                with contextlib.suppress(Exception):
                    await m.ws.send(json.dumps({"id": "1", "type": "complete"}))
                    await m.ws.close()
            else:
                m.ws.transport.abort()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for m in members:
            if m.failed:
                result.failed += 1
            elif m.kind == "jobs":
                result.missing += len(set(job_ids) - m.completed)
            elif m.diffs == 0:
                result.no_diff += 1
            if m.error and len(result.errors) < 5:
                result.errors.append(m.error)
        await asyncio.sleep(settle)
        result.rss.append(rss_mb(pid()))
        report(f"  round {n}: RSS {result.rss[-1]:.0f} MB")
    return result
