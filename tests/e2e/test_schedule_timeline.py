"""The live schedule timeline through a real graphql-transport-ws client, on the embedded run.

Covers: `scheduleTimeline` opens with a Schedule snapshot stamped with its sequence, then sends
ScheduleDiffs in sequence order as jobs are submitted, admitted and finish (segments added,
moved, removed; queue changes); a client that drops the socket and reconnects with `since` gets
exactly the diffs it missed; watchers of two tenants at once each see their own view (one
tenant's work named and `mine` for it, anonymous for the other) although a change is executed
once per view and shared among that view's watchers; a burst of 200 submissions within about 100 ms makes a handful of
recomputes, not 200.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
import websockets
from websockets.typing import Subprotocol

from tests.e2e.conftest import (
    Service,
    batch_job,
    http_client,
    printed_tokens,
    run_cli,
    submit_ok,
)
from tests.e2e.test_embedded_lifecycle import admin, cluster
from tests.e2e.test_metrics import Samples, scrape, total

pytestmark = pytest.mark.e2e

Predicate = Callable[[list[dict[str, Any]]], bool]
"""A test of the messages a stream has had so far."""

SCHEDULE_TIMELINE = """
subscription Timeline($clusterId: ID!, $since: Int) {
  scheduleTimeline(clusterId: $clusterId, since: $since) {
    __typename
    ... on Schedule { sequence reason segments { id jobId kind start end rows mine }
                      queue { jobId position estimatedStart mine } }
    ... on ScheduleDiff { sequence added { id jobId kind start end rows mine }
                          moved { id jobId kind start end rows mine } removed
                          queueUpdate { jobId position estimatedStart mine } }
  }
}
"""


class Stream:
    def __init__(self, service: Service, token: str, cluster_id: str, since: int | None) -> None:
        self.service, self.token, self.cluster_id, self.since = service, token, cluster_id, since
        self.messages: list[dict[str, Any]] = []
        self._task: asyncio.Task[None] | None = None
        self._ws: Any = None

    async def __aenter__(self) -> Stream:
        self._ws = await websockets.connect(
            self.service.ws_url,
            subprotocols=[Subprotocol("graphql-transport-ws")],
            open_timeout=10,
            max_size=None,
        )
        await self._ws.send(
            json.dumps(
                {
                    "type": "connection_init",
                    "payload": {"Authorization": f"Bearer {self.token}"},
                }
            )
        )
        assert json.loads(await self._ws.recv())["type"] == "connection_ack"
        await self._ws.send(
            json.dumps(
                {
                    "id": "1",
                    "type": "subscribe",
                    "payload": {
                        "query": SCHEDULE_TIMELINE,
                        "variables": {"clusterId": self.cluster_id, "since": self.since},
                    },
                }
            )
        )
        self._task = asyncio.create_task(self._read())
        return self

    async def _read(self) -> None:
        async for raw in self._ws:
            message = json.loads(raw)
            assert message["type"] == "next", message
            self.messages.append(message["payload"]["data"]["scheduleTimeline"])

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()
        await self._ws.close()

    async def wait_for(self, predicate: Predicate, timeout: float = 30.0) -> None:
        async with asyncio.timeout(timeout):
            while not predicate(self.messages):
                if self._task is not None and self._task.done():
                    self._task.result()  # the reader died: say why instead of timing out
                    raise AssertionError("the stream ended")
                await asyncio.sleep(0.02)


def has_job(job_id: str, kind: str | None = None) -> Predicate:
    def check(messages: list[dict[str, Any]]) -> bool:
        for m in messages:
            segments = m.get("segments", []) + m.get("added", []) + m.get("moved", [])
            if any(s["jobId"] == job_id and (kind is None or s["kind"] == kind) for s in segments):
                return True
        return False

    return check


@asynccontextmanager
async def stream(service: Service, since: int | None = None) -> AsyncIterator[Stream]:
    async with Stream(service, admin(service), cluster(service), since) as s:
        yield s


async def test_snapshot_then_ordered_diffs_and_resume(embedded: Service) -> None:
    async with stream(embedded) as live, stream(embedded) as dropped:
        await live.wait_for(lambda m: len(m) >= 1)
        await dropped.wait_for(lambda m: len(m) >= 1)
        snapshot = live.messages[0]
        assert snapshot["__typename"] == "Schedule" and snapshot["reason"] == "subscribed"
        async with http_client(embedded, admin(embedded)) as session:
            job = await submit_ok(session, batch_job(cluster(embedded), gpus=4, runtime=1.5))
        await dropped.wait_for(has_job(job["id"]))
        held = dropped.messages[-1]["sequence"]
        await dropped.__aexit__(None, None, None)  # the client drops mid-stream ...
        await live.wait_for(has_job(job["id"], "COMPLETED"), timeout=40)
        async with stream(embedded, since=held) as resumed:  # ... and comes back
            await resumed.wait_for(has_job(job["id"], "COMPLETED"), timeout=40)
            await asyncio.sleep(0.3)
            after = [m for m in live.messages if m["sequence"] > held]
            assert resumed.messages[: len(after)] == after  # exactly what was missed
        sequences = [m["sequence"] for m in live.messages]
        assert sequences == sorted(set(sequences)) and sequences[0] == snapshot["sequence"]
        assert all(m["__typename"] == "ScheduleDiff" for m in live.messages[1:])
        kinds = [
            s["kind"]
            for m in live.messages[1:]
            for s in m["added"] + m["moved"]
            if s["jobId"] == job["id"]
        ]
        assert "RUNNING" in kinds and kinds[-1] == "COMPLETED"


async def tenant_token(service: Service, name: str) -> str:
    issued = await run_cli(
        service.env, "token", "create", "--name", name, "--new-tenant",
    )  # fmt: skip
    return printed_tokens(issued.stdout)[0]


async def test_watchers_of_two_tenants_each_get_their_own_view(embedded: Service) -> None:
    alice, bob = await tenant_token(embedded, "alice"), await tenant_token(embedded, "bob")
    where = cluster(embedded)
    async with (
        Stream(embedded, alice, where, None) as first,
        Stream(embedded, alice, where, None) as second,
        Stream(embedded, bob, where, None) as other,
    ):
        for s in (first, second, other):
            await s.wait_for(lambda m: len(m) >= 1)
        before, _ = await scrape(embedded)
        received = sum(len(s.messages) for s in (first, second, other))
        async with http_client(embedded, alice) as session:
            job = await submit_ok(session, batch_job(where, gpus=2, runtime=1.0, name="alices"))
        await first.wait_for(has_job(job["id"], "COMPLETED"), timeout=40)
        await second.wait_for(has_job(job["id"], "COMPLETED"), timeout=40)
        after, _ = await scrape(embedded)
        received = sum(len(s.messages) for s in (first, second, other)) - received

        def sent(samples: Samples, encoding: str) -> float:
            return total(samples, "subscription_messages_total", encoding=encoding)

        # every diff's data was encoded once for its view, not once per watcher (the
        # operation's cost in `extensions` is each message's own)
        assert sent(after, "own") == sent(before, "own")
        assert sent(after, "shared") - sent(before, "shared") >= received > 0

        def mine(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
            return [
                s for m in messages[1:] for s in m["added"] + m["moved"] if s["jobId"] == job["id"]
            ]

        def theirs(messages: list[dict[str, Any]], ids: set[str]) -> list[dict[str, Any]]:
            return [s for m in messages[1:] for s in m["added"] + m["moved"] if s["id"] in ids]

        seen = mine(first.messages)
        ids = {s["id"] for s in seen}
        assert seen and all(s["mine"] for s in seen)
        assert mine(second.messages) == seen
        await other.wait_for(lambda m: any(s["kind"] == "COMPLETED" for s in theirs(m, ids)))
        shown = theirs(other.messages, ids)
        assert all(s["jobId"] is None and not s["mine"] for s in shown)
        assert [s["kind"] for s in shown] == [s["kind"] for s in seen]
        assert not mine(other.messages)


async def test_a_burst_is_recomputed_a_handful_of_times(embedded: Service) -> None:
    async with stream(embedded) as live:
        await live.wait_for(lambda m: len(m) >= 1)
        start_sequence = live.messages[0]["sequence"]
        jobs = [
            batch_job(cluster(embedded), gpus=0, runtime=300, name=f"burst-{i}") for i in range(200)
        ]
        for job in jobs:
            job["resources"] = {"cpuCores": 0.1, "memoryGb": 0.1}
        headers = {"Authorization": f"Bearer {admin(embedded)}"}
        query = "mutation($i: SubmitJobInput!) { submitJob(input: $i) { __typename } }"
        limits = httpx.Limits(max_connections=200)
        async with httpx.AsyncClient(timeout=30, limits=limits, headers=headers) as client:
            began = time.monotonic()
            responses = await asyncio.gather(
                *(
                    client.post(embedded.url, json={"query": query, "variables": {"i": job}})
                    for job in jobs
                )
            )
            burst = time.monotonic() - began
        assert all(r.json()["data"]["submitJob"]["__typename"] == "Job" for r in responses)

        def all_shown(messages: list[dict[str, Any]]) -> bool:
            names = {s["jobId"] for m in messages for s in m.get("added", [])}
            return len(names) >= 200

        await live.wait_for(all_shown, timeout=60)
        diffs = [m for m in live.messages if m["sequence"] > start_sequence]
        # one recompute per debounce window; the burst took `burst` seconds to submit
        print(f"burst of 200 submissions in {burst * 1000:.0f} ms -> {len(diffs)} diffs")
        assert len(diffs) <= max(8, int(burst / 0.05) + 4), (len(diffs), burst)
        assert len(diffs) < 200 / 10


async def _frame(reader: asyncio.StreamReader) -> tuple[bool, bytes]:
    """One unmasked frame from a server: (RSV1, its payload as sent)."""
    head = await reader.readexactly(2)
    size = head[1] & 0x7F
    if size == 126:
        size = int.from_bytes(await reader.readexactly(2), "big")
    elif size == 127:
        size = int.from_bytes(await reader.readexactly(8), "big")
    return bool(head[0] & 0x40), await reader.readexactly(size)


def _masked_text(data: bytes) -> bytes:
    mask = b"\x01\x02\x03\x04"
    assert len(data) < 65536
    size = bytes([0x80 | len(data)]) if len(data) < 126 else b"\xfe" + len(data).to_bytes(2, "big")
    body = bytes(b ^ mask[i % 4] for i, b in enumerate(data))
    return b"\x81" + size + mask + body


async def test_small_messages_go_uncompressed_on_a_deflate_connection(embedded: Service) -> None:
    """A client that offers permessage-deflate gets small messages (the ack, a small schedule)
    as they are, RSV1 unset: deflating each diff for each subscriber is a quarter of a fan-out
    (budcluster/http/server.py); longer ones are compressed (its unit test)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", embedded.port)
    try:
        writer.write(
            b"GET /graphql HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
            b"Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
            b"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: graphql-transport-ws\r\n"
            b"Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n\r\n"
        )
        answer = (await reader.readuntil(b"\r\n\r\n")).decode().lower()
        assert answer.startswith("http/1.1 101") and "permessage-deflate" in answer, answer
        init = {
            "type": "connection_init",
            "payload": {"Authorization": f"Bearer {admin(embedded)}"},
        }
        writer.write(_masked_text(json.dumps(init).encode()))
        compressed, payload = await asyncio.wait_for(_frame(reader), 10)
        assert json.loads(payload)["type"] == "connection_ack"
        assert not compressed
    finally:
        writer.close()
