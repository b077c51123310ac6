"""The /schedule page in a real browser (Debian's headless Chromium, driven by Playwright),
against `budcluster serve` on the embedded default that runs persisted documents only.

Covers: the page and its assets are served by budcluster itself, with no reference off the
machine; a wrong token shows an error naming the token, never a blank page; with a good token
the page subscribes and, as jobs submitted through the API wait, run and finish, shows each job
as estimated, then running, then completed, each within a second of the change reaching another
subscriber; after its WebSocket is cut (a proxy between the browser and the service drops every
connection and refuses new ones while the schedule changes) it says so, reconnects with `since`
and ends with exactly the segments the service has, none missed; a diff's `rowsUpdate` (a node
joined) draws the new rows without a reload; the time window moves with the browser's clock (a
fresh subscription once now has moved by 5 % of the range); a screenshot of the page under load
is saved under test-artifacts/, after which the filters leave only the chosen job type; a
running job's details show what it has cost so far and what it is expected to cost; a project's
budget is listed with what it has spent and drawn as a line where the schedule is expected to
spend it; a fleet the cluster is in lists its waiting jobs with the member each waits on. Every
request the page makes is a persisted document of frontend-contract/operations (the service
refuses anything else).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
import websockets
from websockets.typing import Subprotocol

from tests.e2e.conftest import (
    A100,
    PROJECT_ID,
    Service,
    ServiceFactory,
    embedded_env,
    printed_tokens,
)

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts"
MANIFEST: dict[str, str] = json.loads(
    (REPO / "budcluster" / "http" / "persisted-documents.json").read_text()
)
SHOWN_WITHIN = 1.0
"""Seconds from a change reaching a subscriber to the page showing it."""


def document(name: str) -> str:
    """The hash of the persisted document holding operation `name`."""
    for digest, text in MANIFEST.items():
        if any(f"{kind} {name}" in text for kind in ("query", "mutation", "subscription")):
            return digest
    raise AssertionError(f"no operation {name} in the persisted documents")


@pytest.fixture(scope="module")
async def service(
    services: ServiceFactory, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Service]:
    env = embedded_env(
        tmp_path_factory.mktemp("page-data"),
        BUDCLUSTER_PERSISTED_DOCUMENTS="only",
        BUDCLUSTER_SIM_NODES="1x2xnvidia-a100-80gb,1x4xnvidia-tesla-t4",
        BUDCLUSTER_SIM_TIME_SCALE="1",
        BUDCLUSTER_SIM_POLL_SECONDS="0.1",
        BUDCLUSTER_FLEET_BALANCE_SECONDS="1",
    )
    started = await services.start("page", env)
    [token] = printed_tokens(started.stdout())
    started.admin_token = token
    started.cluster_id = await _cluster_id(started, token)
    try:
        yield started
    finally:
        await started.stop()


async def _cluster_id(service: Service, token: str) -> str:
    body = await call(service, token, "ClusterList", {})
    [cluster] = [c for c in body["clusters"] if c["name"] == "local-sim"]
    return str(cluster["id"])


async def call(service: Service, token: str, name: str, variables: dict[str, Any]) -> Any:
    """Runs a contract operation by hash, as a persisted-only service requires."""
    async with httpx.AsyncClient(timeout=30) as client:
        response = await client.post(
            service.url,
            json={
                "variables": variables,
                "extensions": {"persistedQuery": {"version": 1, "sha256Hash": document(name)}},
            },
            headers={"Authorization": f"Bearer {token}"},
        )
    body = response.json()
    assert response.status_code == 200 and "errors" not in body, body
    return body["data"]


async def submit(
    service: Service,
    name: str,
    *,
    gpus: int,
    runtime: float,
    gpu_type: str = A100,
    job_type: str = "BATCH",
    priority: str = "NORMAL",
) -> str:
    job = {
        "name": name,
        "projectId": PROJECT_ID,
        "clusterId": service.cluster_id,
        "jobType": job_type,
        "priority": priority,
        "deploymentType": "DOCKER",
        "spec": {"simulation": {"runtime_seconds": runtime}},
        "resources": {"gpuType": gpu_type, "gpuCount": gpus},
        "estimatedDurationSeconds": max(60, int(runtime)),
    }
    answer = (await call(service, str(service.admin_token), "SubmitJob", {"input": job}))[
        "submitJob"
    ]
    assert answer["__typename"] == "Job", answer
    return str(answer["id"])


class Watcher:
    """Another subscriber of the same schedule: when each job's segment of each kind first
    reached it (epoch seconds), and the last sequence."""

    def __init__(self, service: Service) -> None:
        self.service = service
        self.seen: dict[tuple[str, str], float] = {}
        self.sequence = 0
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Watcher:
        ready = asyncio.get_running_loop().create_future()
        self._task = asyncio.create_task(self._run(ready))
        await asyncio.wait_for(ready, 15)
        return self

    async def __aexit__(self, *_: object) -> None:
        assert self._task is not None
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task

    async def _run(self, ready: asyncio.Future[None]) -> None:
        async with websockets.connect(
            self.service.ws_url, subprotocols=[Subprotocol("graphql-transport-ws")], max_size=None
        ) as ws:
            token = self.service.admin_token
            await ws.send(
                json.dumps(
                    {"type": "connection_init", "payload": {"Authorization": f"Bearer {token}"}}
                )
            )
            assert json.loads(await ws.recv())["type"] == "connection_ack"
            hash_ = document("ScheduleTimeline")
            payload = {
                "variables": {"clusterId": self.service.cluster_id},
                "extensions": {"persistedQuery": {"version": 1, "sha256Hash": hash_}},
            }
            await ws.send(json.dumps({"id": "1", "type": "subscribe", "payload": payload}))
            async for raw in ws:
                message = json.loads(raw)
                assert message["type"] == "next", message
                update = message["payload"]["data"]["scheduleTimeline"]
                now = time.time()
                self.sequence = update["sequence"]
                for seg in update.get("segments") or [
                    *update.get("added", []),
                    *update.get("moved", []),
                ]:
                    if seg["jobId"]:
                        self.seen.setdefault((seg["jobId"], seg["kind"]), now)
                if not ready.done():
                    ready.set_result(None)


async def test_a_persisted_only_socket_refuses_free_text_and_stays_open(service: Service) -> None:
    async with websockets.connect(
        service.ws_url, subprotocols=[Subprotocol("graphql-transport-ws")]
    ) as ws:
        init = {"Authorization": f"Bearer {service.admin_token}"}
        await ws.send(json.dumps({"type": "connection_init", "payload": init}))
        assert json.loads(await ws.recv())["type"] == "connection_ack"
        cluster = {"clusterId": service.cluster_id}
        refusals = {
            "free": {"query": 'subscription { jobUpdates(clusterId: "x") { __typename } }'},
            "unknown": {"extensions": {"persistedQuery": {"version": 1, "sha256Hash": "b" * 64}}},
            "shapeless": {"extensions": {"persistedQuery": {"version": 1}}},
        }
        codes = {
            "free": "PERSISTED_DOCUMENT_REQUIRED",
            "unknown": "PERSISTED_DOCUMENT_NOT_FOUND",
            "shapeless": "BAD_REQUEST",
        }
        for op, payload in refusals.items():
            await ws.send(json.dumps({"id": op, "type": "subscribe", "payload": payload}))
            answer = json.loads(await asyncio.wait_for(ws.recv(), 10))
            assert answer["type"] == "error" and answer["id"] == op, answer
            assert answer["payload"][0]["extensions"]["code"] == codes[op], answer
        hash_ = document("ScheduleTimeline")
        payload = {
            "variables": cluster,
            "extensions": {"persistedQuery": {"version": 1, "sha256Hash": hash_}},
        }
        await ws.send(json.dumps({"id": "ok", "type": "subscribe", "payload": payload}))
        answer = json.loads(await asyncio.wait_for(ws.recv(), 10))
        assert answer["type"] == "next", answer
        assert answer["payload"]["data"]["scheduleTimeline"]["__typename"] == "Schedule"


# --- the browser --------------------------------------------------------------------------------


RECORDER = """
() => {
  window.__shown = {};
  const record = () => {
    for (const el of document.querySelectorAll('[data-job-id][data-kind]')) {
      const key = el.dataset.jobId + '|' + el.dataset.kind;
      if (el.dataset.jobId && !(key in window.__shown)) window.__shown[key] = Date.now() / 1000;
    }
  };
  new MutationObserver(record).observe(document.body, {
    subtree: true, childList: true, attributes: true, attributeFilter: ['data-kind', 'class'],
  });
  record();
}
"""


async def open_page(browser: Any, base: str, token: str, cluster_id: str) -> Any:
    page = await browser.new_page(viewport={"width": 1600, "height": 900})
    failures: list[str] = []
    page.on("pageerror", lambda exc: failures.append(str(exc)))
    page.failures = failures
    await page.goto(f"{base}/schedule?cluster={cluster_id}")
    await page.fill("#token-form input[name=token]", token)
    await page.press("#token-form input[name=token]", "Enter")
    await page.wait_for_selector("#connection[data-state=live]", timeout=15_000)
    return page


async def test_the_page_and_its_assets_come_from_budcluster(service: Service) -> None:
    async with httpx.AsyncClient(base_url=service.base, timeout=10) as client:
        page = await client.get("/schedule")
        assert page.status_code == 200 and "text/html" in page.headers["content-type"]
        assert "default-src 'self'" in page.headers["content-security-policy"]
        assert "http://" not in page.text and "https://" not in page.text
        for asset in ("/schedule/assets/schedule.js", "/schedule/assets/schedule.css"):
            served = await client.get(asset)
            assert served.status_code == 200 and len(served.content) > 1000, asset


async def test_a_wrong_token_shows_an_error_not_a_blank_page(
    service: Service, browser: Any
) -> None:
    page = await browser.new_page()
    try:
        await page.goto(f"{service.base}/schedule")
        await page.fill("#token-form input[name=token]", "bud_" + "0" * 32 + "_" + "x" * 40)
        await page.press("#token-form input[name=token]", "Enter")
        error = page.locator("#error")
        await error.wait_for(state="visible", timeout=10_000)
        assert "token" in (await error.inner_text()).lower()
        assert await page.locator("#token-form").is_visible()
    finally:
        await page.close()


async def test_jobs_move_from_estimated_to_running_to_completed_on_screen(
    service: Service, browser: Any
) -> None:
    async with Watcher(service) as watcher:
        page = await open_page(
            browser, service.base, str(service.admin_token), str(service.cluster_id)
        )
        try:
            await page.evaluate(RECORDER)
            blocker = await submit(service, "blocker", gpus=2, runtime=4)
            job = await submit(service, "follower", gpus=1, runtime=3)
            deadline = time.monotonic() + 60
            while (job, "COMPLETED") not in watcher.seen and time.monotonic() < deadline:
                await asyncio.sleep(0.2)
            assert (job, "COMPLETED") in watcher.seen, watcher.seen
            await asyncio.sleep(SHOWN_WITHIN)
            shown: dict[str, float] = await page.evaluate("window.__shown")
            for kind in ("ESTIMATED", "RUNNING", "COMPLETED"):
                assert (job, kind) in watcher.seen, (kind, watcher.seen)
                key = f"{job}|{kind}"
                assert key in shown, (key, shown)
                lag = shown[key] - watcher.seen[(job, kind)]
                assert lag < SHOWN_WITHIN, f"{kind} shown {lag:.2f}s after the change"
            assert f"{blocker}|COMPLETED" in shown
            assert not page.failures, page.failures
        finally:
            await page.close()


class Proxy:
    """A TCP proxy to `port` that can cut every connection and refuse new ones for a while."""

    def __init__(self, port: int) -> None:
        self.target = port
        self.port = 0
        self._server: asyncio.Server | None = None
        self._open: set[asyncio.StreamWriter] = set()

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> None:
        self._server = await asyncio.start_server(
            self._serve, "127.0.0.1", self.port, reuse_address=True
        )
        self.port = self._server.sockets[0].getsockname()[1]

    async def cut(self) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()
        for writer in list(self._open):
            writer.transport.abort()
        self._open.clear()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target)
        self._open |= {writer, up_writer}

        async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
            with contextlib.suppress(ConnectionError, OSError):
                while data := await source.read(65536):
                    sink.write(data)
                    await sink.drain()
            sink.transport.abort()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))
        self._open -= {writer, up_writer}


async def page_segments(page: Any) -> dict[str, str]:
    found: dict[str, str] = await page.evaluate(
        """() => Object.fromEntries([...document.querySelectorAll('[data-segment-id]')]
              .map(el => [el.dataset.segmentId, el.dataset.kind]))"""
    )
    return found


async def test_a_dropped_connection_resumes_with_since_and_misses_nothing(
    service: Service, browser: Any
) -> None:
    proxy = Proxy(service.port)
    await proxy.start()
    page = await open_page(browser, proxy.base, str(service.admin_token), str(service.cluster_id))
    try:
        await submit(service, "before-drop", gpus=1, runtime=2)
        await page.wait_for_selector("[data-kind][data-job-id]", timeout=10_000)
        before: int = await page.evaluate("window.budSchedule.sequence")
        await proxy.cut()
        await page.wait_for_selector("#connection[data-state=reconnecting]", timeout=10_000)
        assert "reconnect" in (await page.locator("#connection").inner_text()).lower()
        missed = [await submit(service, f"while-down-{i}", gpus=1, runtime=3 + i) for i in range(3)]
        await asyncio.sleep(1.0)
        await proxy.start()
        await page.wait_for_selector("#connection[data-state=live]", timeout=20_000)
        status = (await page.locator("#connection").inner_text()).lower()
        assert "resumed" in status and "resynchronised" not in status, status
        # The page ends with what the service has: every segment, in the kind it has now.
        for _ in range(50):
            schedule = (
                await call(
                    service, str(service.admin_token), "ClusterSchedule", {"id": service.cluster_id}
                )
            )["cluster"]["schedule"]
            expected = {s["id"]: s["kind"] for s in schedule["segments"]}
            if (
                await page_segments(page) == expected
                and await page.evaluate("window.budSchedule.sequence") == schedule["sequence"]
            ):
                break
            await asyncio.sleep(0.2)
        assert await page_segments(page) == expected
        assert {s["jobId"] for s in schedule["segments"]} >= set(missed)
        assert schedule["sequence"] > before
    finally:
        await page.close()
        await proxy.cut()


async def test_a_node_that_joins_gets_its_rows_without_a_reload(
    service: Service, browser: Any
) -> None:
    """A diff's `rowsUpdate` (the whole new list of rows) goes through the page's own message
    path: the new node's GPUs appear as rows, and a block on them is drawn."""
    token, cluster_id = str(service.admin_token), str(service.cluster_id)
    page = await open_page(browser, service.base, token, cluster_id)
    try:
        schedule = (await call(service, token, "ClusterSchedule", {"id": cluster_id}))["cluster"][
            "schedule"
        ]
        rows = [*schedule["rows"][:-1]]
        rows += [
            {"id": f"sim-new/{i}", "node": "sim-new", "gpuIndex": i, "gpuType": "nvidia-h100-80gb"}
            for i in range(2)
        ]
        rows.append(schedule["rows"][-1])
        now = time.time()
        start = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(now - 600))
        end = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(now + 1800))
        segment = {
            "id": "joined-node-block",
            "rows": ["sim-new/0", "sim-new/1"],
            "start": start,
            "end": end,
            "kind": "RUNNING",
            "source": "estimate",
            "jobId": "00000000-0000-4000-8000-000000000001",
            "name": "on-the-new-node",
            "status": "RUNNING",
            "priority": "NORMAL",
            "mine": True,
            "earliestStart": None,
            "latestStart": None,
            "jobType": "TRAINING",
        }
        diff = {
            "__typename": "ScheduleDiff",
            "sequence": await page.evaluate("() => window.budSchedule.sequence") + 1,
            "computedAt": start,
            "added": [segment],
            "moved": [],
            "removed": [],
            "queueUpdate": None,
            "rowsUpdate": rows,
        }
        await page.evaluate("(diff) => window.budSchedule.applyMessage(diff)", diff)
        await page.wait_for_function(
            """() => document.querySelectorAll('[data-segment-id="joined-node-block"]').length == 2
                 && document.body.innerText.includes('sim-new')"""
        )
        assert not page.failures, page.failures
    finally:
        await page.close()


async def test_the_window_moves_with_the_clock(service: Service, browser: Any) -> None:
    """A page left open subscribes again around the new now (the browser's clock is driven by
    Playwright: no waiting)."""
    page = await browser.new_page()
    sent: list[dict[str, Any]] = []

    def on_socket(ws: Any) -> None:
        def on_frame(frame: Any) -> None:
            message = json.loads(frame if isinstance(frame, str) else frame["payload"])
            if message.get("type") == "subscribe":
                sent.append(message["payload"]["variables"])

        ws.on("framesent", on_frame)

    page.on("websocket", on_socket)
    try:
        await page.clock.install()
        await page.goto(f"{service.base}/schedule?cluster={service.cluster_id}")
        await page.fill("#token-form input[name=token]", str(service.admin_token))
        await page.press("#token-form input[name=token]", "Enter")
        await page.wait_for_selector("#connection[data-state=live]", timeout=15_000)
        assert len(sent) == 1, sent
        await page.clock.run_for(30 * 60 * 1000)  # 30 min: under 5 % of the 30 h range
        assert len(sent) == 1, sent
        await page.clock.run_for(75 * 60 * 1000)  # 1 h 45 min in all
        await page.wait_for_selector("#connection[data-state=live]", timeout=15_000)
        assert len(sent) == 2, sent
        moved = datetime.fromisoformat(sent[1]["from"]) - datetime.fromisoformat(sent[0]["from"])
        assert timedelta(hours=1, minutes=30) <= moved <= timedelta(hours=1, minutes=50), moved
        assert sent[1].get("since") is None
    finally:
        await page.close()


async def test_a_jobs_details_show_its_cost_so_far_and_what_it_is_expected_to_cost(
    service: Service, browser: Any
) -> None:
    admin = str(service.admin_token)
    price = {"clusterId": service.cluster_id, "gpuType": A100, "hourlyPrice": "36000"}
    answer = await call(service, admin, "SetGpuPrice", {"input": price})  # 10 a second
    assert answer["setGpuPrice"]["__typename"] == "GpuPrice", answer
    job = await submit(service, "costly", gpus=1, runtime=600)
    page = await open_page(browser, service.base, admin, str(service.cluster_id))
    try:
        block = page.locator(f'[data-kind=RUNNING][data-job-id="{job}"]')
        await block.wait_for(timeout=60_000)
        text = ""
        deadline = time.monotonic() + 20
        while "Cost so far" not in text or "—" in text:
            # until it runs (its block is drawn from admission) and its estimate is stored
            assert time.monotonic() < deadline, text
            await block.click()  # (the details read the job's cost again)
            await page.wait_for_function(
                """() => /Cost so far/.test(document.querySelector('#details-cost')?.innerText)""",
                timeout=15_000,
            )
            text = await page.locator("#details-cost").inner_text()
            await asyncio.sleep(0.3)
        so_far = float(text.split("Cost so far")[1].split()[0])
        expected = float(text.split("Expected cost")[1].split()[0])
        assert 0 < so_far < expected, text  # 10 a second since it started; 600 s expected
        assert "and counting" in text, text
        assert not page.failures, page.failures
    finally:
        await page.close()
        await call(service, admin, "CancelJob", {"id": job, "reason": "test over"})
        price["hourlyPrice"] = "2.5"
        await call(service, admin, "SetGpuPrice", {"input": price})


async def test_a_project_budget_shows_as_a_line_where_the_schedule_spends_it(
    service: Service, browser: Any
) -> None:
    admin = str(service.admin_token)
    price = {"clusterId": service.cluster_id, "gpuType": A100, "hourlyPrice": "36000"}
    await call(service, admin, "SetGpuPrice", {"input": price})  # 10 a second
    # ahead of what earlier tests left waiting: its start, and so its spend, is on the schedule
    job = await submit(service, "budgeted", gpus=1, runtime=3600, priority="HIGH")
    page = await open_page(browser, service.base, admin, str(service.cluster_id))
    try:
        await page.locator(f'[data-kind=RUNNING][data-job-id="{job}"]').wait_for(timeout=60_000)
        # what this month has spent so far, and room for 40 s more of the job (its expected end
        # is learned from the cluster's record of earlier tests' jobs: minutes away, not an hour)
        limit = {"projectId": PROJECT_ID, "limit": "1000000", "action": "WARN"}
        answer = await call(service, admin, "SetBudget", {"input": limit})
        assert answer["setBudget"]["__typename"] == "Budget", answer
        limit["limit"] = str(round(float(answer["setBudget"]["spent"]) + 400, 2))
        await call(service, admin, "SetBudget", {"input": limit})
        item = page.locator(f'#budgets-list li[data-budget="{PROJECT_ID}"]')
        deadline = time.monotonic() + 30
        text = ""
        while "spent by" not in text:  # read on start, each minute and on a cluster picked
            assert time.monotonic() < deadline, text
            await page.evaluate(
                "() => document.querySelector('#cluster').dispatchEvent(new Event('change'))"
            )
            await page.wait_for_timeout(500)
            text = await item.inner_text() if await item.count() else ""
        assert f"of {float(limit['limit']):.2f}" in text and "warn" in text, text
        line = page.locator(f".vis-custom-time.budget-{PROJECT_ID}")
        await line.wait_for(state="attached", timeout=10_000)
        colour = await line.evaluate("e => getComputedStyle(e).backgroundColor")
        assert colour == "rgb(198, 40, 40)", colour
        assert "budget spent" in (await line.get_attribute("title") or "")
        assert not page.failures, page.failures
    finally:
        await page.close()
        await call(service, admin, "CancelJob", {"id": job, "reason": "test over"})
        await call(service, admin, "RemoveBudget", {"projectId": PROJECT_ID})
        price["hourlyPrice"] = "2.5"
        await call(service, admin, "SetGpuPrice", {"input": price})


async def test_a_fleet_the_cluster_is_in_lists_its_waiting_jobs(
    service: Service, browser: Any
) -> None:
    admin = str(service.admin_token)
    made = await call(
        service,
        admin,
        "CreateFleet",
        {"input": {"name": "page-fleet", "clusterIds": [service.cluster_id]}},
    )
    fleet = made["createFleet"]["id"]
    blocker = await submit(service, "fleet-blocker", gpus=2, runtime=3600, priority="CRITICAL")
    job = {
        "name": "fleet-waits",
        "projectId": PROJECT_ID,
        "fleetId": fleet,
        "jobType": "BATCH",
        "deploymentType": "DOCKER",
        "spec": {"simulation": {"runtime_seconds": 60}},
        "resources": {"gpuType": A100, "gpuCount": 2},
        "estimatedDurationSeconds": 60,
    }
    answer = (await call(service, admin, "SubmitToFleet", {"input": job}))["submitJob"]
    assert answer["__typename"] == "Job" and answer["clusterId"] == service.cluster_id, answer
    page = await open_page(browser, service.base, admin, str(service.cluster_id))
    try:
        entry = page.locator(
            f'#fleets-list [data-fleet="page-fleet"] li[data-job-id="{answer["id"]}"]'
        )
        deadline = time.monotonic() + 30
        while not await entry.count():  # read on start, each minute and on a cluster picked
            assert time.monotonic() < deadline
            await page.evaluate(
                "() => document.querySelector('#cluster').dispatchEvent(new Event('change'))"
            )
            await page.wait_for_timeout(500)
        text = await entry.inner_text()
        assert "fleet-waits on local-sim" in text, text
        assert await entry.get_attribute("data-here") == "true"
        assert not page.failures, page.failures
    finally:
        await page.close()
        for done in (answer["id"], blocker):
            await call(service, admin, "CancelJob", {"id": done, "reason": "test over"})
        await call(service, admin, "DeleteFleet", {"id": fleet})


async def test_a_drained_node_shows_as_a_band_on_its_rows_and_in_the_drains_pane(
    service: Service, browser: Any
) -> None:
    admin = str(service.admin_token)
    made = await call(
        service,
        admin,
        "DrainNode",
        {"clusterId": service.cluster_id, "node": "sim-t4-1", "reason": "page test"},
    )
    drain = made["drainNode"]
    assert drain["__typename"] == "Drain" and drain["node"] == "sim-t4-1", drain
    page = await open_page(browser, service.base, admin, str(service.cluster_id))
    try:
        bands = page.locator(".timeline .vis-item.vis-background.drain")
        line = page.locator(f'#drains-list li[data-drain="{drain["id"]}"]')
        deadline = time.monotonic() + 30
        while await bands.count() < 4 or not await line.count():  # one per T4 row
            assert time.monotonic() < deadline, await bands.count()
            await page.wait_for_timeout(200)
        assert await bands.count() == 4  # its GPUs' rows only, not the A100's
        text = await line.inner_text()
        assert "node sim-t4-1" in text and "page test" in text, text
        assert not page.failures, page.failures
    finally:
        await page.close()
        await call(service, admin, "Undrain", {"id": drain["id"]})


async def test_a_deployments_scaling_step_shows_as_a_line_and_in_the_scaling_pane(
    service: Service, browser: Any
) -> None:
    admin = str(service.admin_token)
    bounds = {"minReplicas": 1, "maxReplicas": 2, "metric": "IN_FLIGHT", "target": 4}
    made = await call(
        service,
        admin,
        "DeployModel",
        {
            "input": {
                "name": "page-scaler",
                "projectId": PROJECT_ID,
                "clusterId": service.cluster_id,
                "model": "org/model-7b",
                "gpuType": A100,
                "replicas": 1,
                "autoscaling": bounds,
            }
        },
    )
    deployment = made["deployModel"]
    assert deployment["__typename"] == "Deployment", deployment
    raised = await call(
        service,
        admin,
        "SetAutoscaling",
        {"id": deployment["id"], "autoscaling": bounds | {"minReplicas": 2}},
    )
    assert raised["setAutoscaling"]["replicas"] == 2, raised  # a step: bounds set to 2 to 2
    page = await open_page(browser, service.base, admin, str(service.cluster_id))
    try:
        line = page.locator(f'#scaling-list li[data-scaling="{deployment["id"]}"]')
        marks = page.locator('.timeline .vis-custom-time[class*=" scaling-"]')
        deadline = time.monotonic() + 30
        while not await line.count() or not await marks.count():
            assert time.monotonic() < deadline
            await page.wait_for_timeout(200)
        text = await line.inner_text()
        assert "page-scaler" in text and "1 → 2 replicas" in text and "bounds set" in text, text
        assert "page-scaler: 1 → 2 replicas" in (await marks.first.get_attribute("title") or "")
        assert not page.failures, page.failures
    finally:
        await page.close()
        await call(service, admin, "StopDeployment", {"id": deployment["id"]})


async def test_a_screenshot_of_the_page_under_load(service: Service, browser: Any) -> None:
    kinds = [("TRAINING", "HIGH"), ("BATCH", "NORMAL"), ("BATCH", "LOW"), ("TRAINING", "NORMAL")]
    for i in range(14):
        job_type, priority = kinds[i % 4]
        await submit(
            service,
            f"{job_type.lower()}-{i}",
            gpus=1 + i % 2,
            runtime=900 + 600 * (i % 5),
            job_type=job_type,
            priority=priority,
        )
    for i in range(8):
        await submit(
            service,
            f"t4-eval-{i}",
            gpus=1 + i % 4,
            runtime=600 + 450 * i,
            gpu_type="nvidia-tesla-t4",
        )
    page = await open_page(browser, service.base, str(service.admin_token), str(service.cluster_id))
    try:
        await page.select_option("#range", "-2,6")
        await page.wait_for_selector("#connection[data-state=live]", timeout=15_000)
        await page.wait_for_selector("#queue tr[data-job-id]", timeout=15_000)
        await page.locator("[data-kind=ESTIMATED]").first.click()
        ARTIFACTS.mkdir(exist_ok=True)
        shot = ARTIFACTS / "schedule-page.png"
        await page.screenshot(path=str(shot), full_page=False)
        assert shot.stat().st_size > 20_000
        assert await page.locator("[data-kind=ESTIMATED]").count() > 0
        assert await page.locator("[data-kind=RUNNING]").count() > 0
        assert "job" in (await page.locator("#details").inner_text()).lower()
        # Filters hide what they should: only TRAINING blocks and queue rows stay.
        await page.select_option("#filter-type", "TRAINING")
        await page.wait_for_function(
            """() => {
                const rows = [...document.querySelectorAll('#queue tbody tr[data-job-id]')];
                const blocks = [...document.querySelectorAll('[data-segment-id][data-job-id]')];
                return rows.length > 0 && rows.every(tr => /training/.test(tr.textContent))
                    && blocks.length > 0
                    && blocks.every(b => /^training-/.test(b.textContent.trim()));
            }"""
        )
        assert not page.failures, page.failures
    finally:
        await page.close()
