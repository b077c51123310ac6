"""Snapshots for many subscribers at once: `jobUpdates` on a cluster with `--jobs` jobs.

One embedded API process (`python -m budcluster serve`, SQLite in a fresh temporary data dir) is
seeded with `--jobs` queued jobs (`submitJob` over HTTP; each runs an hour, so they stay). Then
`--subscribers` WebSocket clients (graphql-transport-ws, in this process) subscribe to
`jobUpdates` on the cluster together, asking for each job's id, name, status, priority, resources
and estimate, and wait for their first message, the snapshot. Reported: the time from the first
subscribe until the last snapshot arrived, the snapshot's size, the server's resident memory
before, at its peak while they subscribed (from /proc: VmRSS sampled every 20 ms), and 10 s after
they all left, and the server's CPU seconds. `--waves N` repeats the connect/leave N times
(memory kept after leaving shows as growth from wave to wave). All subscribers use the admin
token, whose rate limit is lifted for the run.

    .venv/bin/python -m benchmarks.snapshots [--jobs 1000] [--subscribers 100] [--waves 2]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.event_to_screen import (
    PROTOCOL,
    UNLIMITED_RATES,
    Http,
    cpu_seconds,
    embedded_cluster_id,
    free_port,
    job_input,
    raise_nofile,
    revision,
    start_server,
)

DOCUMENT = """
subscription Jobs($clusterId: ID!) {
  jobUpdates(clusterId: $clusterId) {
    __typename
    ... on JobSnapshot { sequence truncated reason jobs {
      id name status priority createdAt
      resources { gpuType gpuCount cpuCores memoryGb }
      estimate { start end reason }
    } }
    ... on JobChange { sequence kind job { id status } }
  }
}
"""


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


async def wave(url: str, token: str, cluster_id: str, subscribers: int) -> tuple[float, int]:
    from websockets.asyncio.client import connect

    init = json.dumps({"type": "connection_init", "payload": {"Authorization": f"Bearer {token}"}})
    subscribe = json.dumps(
        {
            "id": "1",
            "type": "subscribe",
            "payload": {"query": DOCUMENT, "variables": {"clusterId": cluster_id}},
        }
    )
    sizes: list[int] = []
    sockets: list[Any] = []
    go, connected = asyncio.Event(), asyncio.Event()

    async def one() -> None:
        ws = await connect(url, subprotocols=[PROTOCOL], max_size=None, open_timeout=120)  # type: ignore[list-item]
        await ws.send(init)
        while json.loads(await ws.recv())["type"] != "connection_ack":
            pass
        sockets.append(ws)
        if len(sockets) == subscribers:
            connected.set()
        await go.wait()
        await ws.send(subscribe)
        while True:
            raw = await ws.recv()
            message = json.loads(raw)
            if message.get("type") == "next":
                data = message["payload"].get("data") or {}
                if data.get("jobUpdates", {}).get("__typename") == "JobSnapshot":
                    sizes.append(len(raw))
                    return
                continue
            if message.get("type") != "ping":
                raise RuntimeError(f"unexpected {str(message)[:300]}")

    tasks = [asyncio.create_task(one()) for _ in range(subscribers)]
    await connected.wait()  # every one connected and acknowledged
    started = time.monotonic()
    go.set()
    await asyncio.gather(*tasks)
    elapsed = time.monotonic() - started
    for ws in sockets:
        await ws.close()
    return elapsed, max(sizes)


async def measured(
    pid: int, url: str, token: str, cluster_id: str, subscribers: int
) -> tuple[float, int, float]:
    """One wave, and the server's peak resident memory meanwhile."""
    peak = rss_mb(pid)
    done = asyncio.Event()

    async def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, rss_mb(pid))
            await asyncio.sleep(0.02)

    sampler = asyncio.create_task(sample())
    try:
        elapsed, size = await wave(url, token, cluster_id, subscribers)
    finally:
        done.set()
        await sampler
    return elapsed, size, peak


def run(args: argparse.Namespace) -> int:
    raise_nofile(args.subscribers + 1024)
    data_dir = Path(tempfile.mkdtemp(prefix="budcluster-snapshots-"))
    port = free_port()
    env = {  # every subscriber uses the one admin token: lift its rate limit
        "BUDCLUSTER_LOG_LEVEL": "WARNING",
        **UNLIMITED_RATES,
    }
    server = start_server(data_dir, port, env, None)
    print(f"code: {revision()}; data dir {data_dir}", flush=True)
    try:
        server.wait_healthy()
        token = server.token()
        api = Http(port, token)
        api.fresh()
        cluster_id = embedded_cluster_id(api)
        mutation = "mutation($input: SubmitJobInput!) { submitJob(input: $input) { __typename } }"
        seeded = time.monotonic()
        for i in range(args.jobs):
            if i % 200 == 0:
                api.fresh()
            api.post(mutation, {"input": job_input(cluster_id, 1, 3600)})
        print(f"seeded {args.jobs} jobs in {time.monotonic() - seeded:.1f}s", flush=True)
        time.sleep(5)  # the timeline settles
        pid = server.process.pid
        url = f"ws://127.0.0.1:{port}/graphql"
        print("wave  seconds  snapshot(KB)  rss before  peak  10s after (MB)  cpu(s)", flush=True)
        for n in range(1, args.waves + 1):
            before, cpu = rss_mb(pid), cpu_seconds(pid)
            elapsed, size, peak = asyncio.run(
                measured(pid, url, token, cluster_id, args.subscribers)
            )
            used = cpu_seconds(pid) - cpu
            time.sleep(10)
            print(
                f"{n:>4}  {elapsed:7.2f}  {size / 1024:12.0f}  {before:10.0f}  {peak:4.0f}"
                f"  {rss_mb(pid):14.0f}  {used:6.1f}",
                flush=True,
            )
        return 0
    finally:
        server.stop()


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--jobs", type=int, default=1000)
    p.add_argument("--subscribers", type=int, default=100)
    p.add_argument("--waves", type=int, default=2)
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    return run(parse(argv))


if __name__ == "__main__":
    raise SystemExit(main())
