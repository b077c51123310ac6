"""The /schedule page's view of minutes-long work, in a real browser at 1280x720 and 1920x1080.

Covers: the first view fits to the work when it spans much less than the range, a range picked
is shown whole, "Fit to work" zooms so the running and queued blocks span the chart and a
minutes-long job a good share of it, "Now" centres on now keeping the zoom, and a fitted view
stays when the subscription moves with the clock; a start window of no width (or narrower than a
pixel) is drawn with a visible width and reads as a moment with its seconds, never as an empty
range from 21:21 to 21:21; when the filters hide every waiting job the queue says how many they
hide, not that nothing waits; the queue, "Why it waits" included, fits the page: no cell clipped
or past the edge of its pane or the viewport; the quota pane, closed at first, shows the
cluster's queues with Kueue's settings (preemption while borrowing, flavor search, weight) and
whether fair sharing is on, inside the page.

Its own embedded service, so the durations it shows are those the jobs state (no history of
other tests' runs corrects them) and its injected messages meet a quiet cluster; every job a
test submits is cancelled at its end.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.e2e.conftest import (
    A100,
    PROJECT_ID,
    Service,
    ServiceFactory,
    embedded_env,
    printed_tokens,
)
from tests.e2e.test_schedule_page import call

pytestmark = pytest.mark.e2e

T4 = "nvidia-tesla-t4"
SMALL = {"width": 1280, "height": 720}
LARGE = {"width": 1920, "height": 1080}
VIEWPORTS = [pytest.param(SMALL, id="1280x720"), pytest.param(LARGE, id="1920x1080")]
DASH = "\u2013"
EMPTY_RANGE = re.compile(rf"(\d\d:\d\d)\s*{DASH}\s*\1")


@pytest.fixture(scope="module")
async def service(
    services: ServiceFactory, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Service]:
    env = embedded_env(
        tmp_path_factory.mktemp("page-views-data"),
        BUDCLUSTER_PERSISTED_DOCUMENTS="only",
        BUDCLUSTER_SIM_NODES="1x2xnvidia-a100-80gb,1x4xnvidia-tesla-t4",
        BUDCLUSTER_SIM_TIME_SCALE="1",
        BUDCLUSTER_SIM_POLL_SECONDS="0.1",
    )
    started = await services.start("page-views", env)
    [token] = printed_tokens(started.stdout())
    started.admin_token = token
    clusters = (await call(started, token, "ClusterList", {}))["clusters"]
    [started.cluster_id] = [c["id"] for c in clusters if c["name"] == "local-sim"]
    try:
        yield started
    finally:
        await started.stop()


class Jobs:
    """Jobs submitted for one test; `work` cancels those still open when the test ends."""

    def __init__(self, service: Service) -> None:
        self.service = service
        self.ids: list[str] = []

    async def submit(
        self,
        name: str,
        *,
        gpus: int,
        runtime: int,
        gpu_type: str = A100,
        job_type: str = "BATCH",
        depends_on: tuple[str, ...] = (),
    ) -> str:
        job = {
            "name": name,
            "projectId": PROJECT_ID,
            "clusterId": self.service.cluster_id,
            "jobType": job_type,
            "deploymentType": "DOCKER",
            "spec": {"simulation": {"runtime_seconds": runtime}},
            "resources": {"gpuType": gpu_type, "gpuCount": gpus},
            "estimatedDurationSeconds": runtime,
            "dependsOn": list(depends_on),
        }
        token = str(self.service.admin_token)
        answer = (await call(self.service, token, "SubmitJob", {"input": job}))["submitJob"]
        assert answer["__typename"] == "Job", answer
        self.ids.append(str(answer["id"]))
        return self.ids[-1]

    async def scheduled(self, *kinds: str) -> None:
        """Until the service's schedule shows the jobs, in order, as segments of these kinds."""
        token, cluster_id = str(self.service.admin_token), str(self.service.cluster_id)
        deadline = time.monotonic() + 15
        while True:
            schedule = await call(self.service, token, "ClusterSchedule", {"id": cluster_id})
            shown = {(s["jobId"], s["kind"]) for s in schedule["cluster"]["schedule"]["segments"]}
            if set(zip(self.ids, kinds, strict=True)) <= shown:
                return
            assert time.monotonic() < deadline, (kinds, shown)
            await asyncio.sleep(0.1)


@asynccontextmanager
async def work(service: Service) -> AsyncIterator[Jobs]:
    jobs = Jobs(service)
    try:
        yield jobs
    finally:
        for job_id in reversed(jobs.ids):
            await call(service, str(service.admin_token), "CancelJob", {"id": job_id})


async def open_at(
    browser: Any,
    service: Service,
    viewport: dict[str, int],
    *,
    clock: bool = False,
    on_socket: Callable[[Any], None] | None = None,
) -> Any:
    """The page, signed in and live; with `clock`, on a clock the test drives; `on_socket` is
    given each WebSocket it opens."""
    page = await browser.new_page(viewport=viewport)
    if clock:
        await page.clock.install()
    if on_socket:
        page.on("websocket", on_socket)
    failures: list[str] = []
    page.on("pageerror", lambda exc: failures.append(str(exc)))
    page.failures = failures
    await page.goto(f"{service.base}/schedule?cluster={service.cluster_id}")
    await page.fill("#token-form input[name=token]", str(service.admin_token))
    await page.press("#token-form input[name=token]", "Enter")
    await page.wait_for_selector("#connection[data-state=live]", timeout=15_000)
    return page


# Where blocks sit on the chart (vis-timeline's centre panel), as shares of its width.
GEOMETRY = """
(selector) => {
  const chart = document.querySelector('.vis-panel.vis-center').getBoundingClientRect();
  const share = (rect) => ({
    left: (rect.left - chart.left) / chart.width,
    right: (rect.right - chart.left) / chart.width,
    width: rect.width / chart.width,
  });
  const blocks = [...document.querySelectorAll(selector)].map((el) => share(el.getBoundingClientRect()));
  const now = document.querySelector('.vis-current-time').getBoundingClientRect();
  return { blocks, now: share(now).left + now.width / 2 / chart.width };
}
"""


AFTER_TWO_FRAMES = (
    "() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))"
)


async def geometry(page: Any, selector: str, until: str = "true") -> dict[str, Any]:
    """The geometry of `selector`'s blocks once `until` (a JS expression over `found`) holds:
    vis-timeline redraws a moved view in a later frame. The geometry that met `until` is the
    one returned (read again after, a redraw in between once gave no blocks: a flaky run)."""
    handle = await page.wait_for_function(
        f"(selector) => {{ const found = ({GEOMETRY})(selector); return ({until}) && found; }}",
        arg=selector,
        timeout=5_000,
    )
    found: dict[str, Any] = await handle.json_value()
    return found


@pytest.mark.parametrize("viewport", VIEWPORTS)
async def test_a_zero_width_window_is_drawn_and_reads_as_a_moment(
    service: Service, browser: Any, viewport: dict[str, int]
) -> None:
    """Two queued jobs' start windows, one of no width, one of 20 s (under a pixel at the
    30-hour view), through the page's own message path (a calibrated window needs a record of
    ten jobs): each band is drawn at least 4 px wide, and no text shows an empty range."""
    token, cluster_id = str(service.admin_token), str(service.cluster_id)
    rows = (await call(service, token, "ClusterSchedule", {"id": cluster_id}))["cluster"][
        "schedule"
    ]["rows"]
    base = datetime.now(UTC).replace(microsecond=0) + timedelta(minutes=30)
    windows = {"point": (base.replace(second=5), 0), "sliver": (base.replace(second=20), 20)}
    segments, queue = [], []
    for i, (name, (earliest, width)) in enumerate(windows.items()):
        latest = earliest + timedelta(seconds=width)
        job_id = f"00000000-0000-4000-8000-00000000000{i}"
        common = {
            "jobId": job_id,
            "name": f"{name}-window",
            "priority": "NORMAL",
            "mine": True,
            "jobType": "BATCH",
            "earliestStart": earliest.isoformat(),
            "latestStart": latest.isoformat(),
        }
        start = latest + timedelta(minutes=5)
        segments.append(
            {
                **common,
                "id": f"{name}-segment",
                "rows": [rows[i]["id"]],
                "start": start.isoformat(),
                "end": (start + timedelta(hours=1)).isoformat(),
                "kind": "ESTIMATED",
                "source": "estimate",
                "status": "QUEUED",
            }
        )
        queue.append(
            {
                **common,
                "position": i + 1,
                "estimatedStart": start.isoformat(),
                "reason": "waits for capacity",
                "warnings": [],
                "gpuType": A100,
                "gpuCount": 1,
                "podCount": 1,
            }
        )
    page = await open_at(browser, service, viewport)
    try:
        diff = {
            "__typename": "ScheduleDiff",
            "sequence": await page.evaluate("() => window.budSchedule.sequence") + 1,
            "computedAt": datetime.now(UTC).isoformat(),
            "added": segments,
            "moved": [],
            "removed": [],
            "queueUpdate": queue,
            "rowsUpdate": None,
        }
        await page.evaluate("(diff) => window.budSchedule.applyMessage(diff)", diff)
        await page.wait_for_function(
            """() => document.querySelectorAll('#queue tbody tr[data-position]').length == 2
                 && document.querySelectorAll('[data-segment-id$="-segment"]').length == 2"""
        )
        # Drawn: at its time, in its job's row, the band is what the browser finds at 2 px
        # either side of the window's middle (hit testing sees only what is painted, unclipped).
        drawn: dict[str, list[int]] = await page.evaluate(
            """(names) => Object.fromEntries(names.map((name) => {
                 const content = document.querySelector(`[data-window-of="${name}-segment"]`);
                 const band = content && content.closest('.vis-item');
                 const block = document.querySelector(`[data-segment-id="${name}-segment"]`);
                 if (!band || !block) return [name, []];
                 const box = band.getBoundingClientRect();
                 const row = block.getBoundingClientRect();
                 const x = box.left + box.width / 2;
                 const y = row.top + row.height / 2;
                 return [name, [-2, 0, 2].filter(
                   (dx) => document.elementsFromPoint(x + dx, y).includes(band))];
               }))""",
            list(windows),
        )
        assert drawn == {name: [-2, 0, 2] for name in windows}, drawn
        texts: list[str] = await page.locator("#queue tbody td.window").all_inner_texts()
        await page.locator('[data-segment-id="point-segment"]').first.click()
        details = page.locator("#details dt:text-is('Window') + dd")
        texts.append(await details.inner_text())
        for text in texts:
            assert not EMPTY_RANGE.search(text), texts
            assert re.search(r"\d\d:\d\d:\d\d", text), texts
        point = texts[0]
        assert point.startswith("at ") and DASH not in point, texts
        assert not page.failures, page.failures
    finally:
        await page.close()


@pytest.mark.parametrize("viewport", VIEWPORTS)
async def test_fit_to_work_and_now(
    service: Service, browser: Any, viewport: dict[str, int]
) -> None:
    async with work(service) as jobs:
        first = await jobs.submit("fit-first", gpus=2, runtime=240)
        second = await jobs.submit("fit-second", gpus=2, runtime=240)
        running = f'[data-job-id="{first}"][data-kind=RUNNING]'
        queued = f'[data-job-id="{second}"][data-kind=ESTIMATED]'
        work_blocks = f"{running}, {queued}"
        await jobs.scheduled("RUNNING", "ESTIMATED")
        page = await open_at(browser, service, viewport)
        try:
            await page.wait_for_selector(running, timeout=15_000)
            await page.wait_for_selector(queued, timeout=15_000)
            # Eight minutes of work in a 30-hour range: the first view fits to it. (A block per
            # GPU the job holds, two here, of one size.)
            block = (await geometry(page, running, "found.blocks.length > 0"))["blocks"][0]
            assert block["width"] > 0.2, block
            # A range the user picks is shown whole: the 4-minute job is a sliver of 8 hours.
            await page.select_option("#range", "-2,6")
            await page.wait_for_selector("#connection[data-state=live]", timeout=15_000)
            await geometry(page, running, "found.blocks.length && found.blocks[0].width < 0.02")
            await page.click("#fit-work")
            await geometry(page, running, "found.blocks.length && found.blocks[0].width > 0.1")
            found = await geometry(page, work_blocks, "found.blocks.length == 4")
            blocks = found["blocks"]
            assert len(blocks) == 4, found
            assert all(b["left"] >= -0.001 and b["right"] <= 1.001 for b in blocks), found
            span = max(b["right"] for b in blocks) - min(b["left"] for b in blocks)
            assert 0.8 <= span <= 1.0, found
            block = (await geometry(page, running, "found.blocks.length > 0"))["blocks"][0]
            assert 0.2 < block["width"] < 0.7, block
            # Now: now in the middle, at the same zoom.
            assert abs(found["now"] - 0.5) > 0.1, found
            await page.click("#go-now")
            centred = await geometry(  # (blocks are drawn a frame after the view moves)
                page, running, "found.blocks.length && Math.abs(found.now - 0.5) < 0.02"
            )
            moved = centred["blocks"][0]
            assert abs(moved["width"] - block["width"]) < 0.01, (moved, block)
            assert not page.failures, page.failures
        finally:
            await page.close()


async def test_a_fitted_view_stays_when_the_range_moves_with_the_clock(
    service: Service, browser: Any
) -> None:
    """The subscription moves with the clock (a fresh snapshot every 5 % of the range): a view
    the user zoomed or fitted stays as it is, rather than going back to the whole range."""
    async with work(service) as jobs:
        first = await jobs.submit("slide-first", gpus=2, runtime=240)
        await jobs.submit("slide-second", gpus=2, runtime=240)
        await jobs.scheduled("RUNNING", "ESTIMATED")
        running = f'[data-job-id="{first}"][data-kind=RUNNING]'
        sockets: list[Any] = []
        page = await open_at(
            browser, service, SMALL, clock=True, on_socket=lambda ws: sockets.append(ws)
        )
        try:
            fitted = (await geometry(page, running, "found.blocks.length > 0"))["blocks"][0]
            assert fitted["width"] > 0.2, fitted
            [socket] = sockets
            async with socket.expect_event(
                "framereceived", lambda frame: '"__typename":"Schedule"' in str(frame)
            ):
                await page.clock.run_for(105 * 60 * 1000)  # past 5 % of the 30-hour range
            await page.evaluate(AFTER_TWO_FRAMES)
            kept = (await geometry(page, running, "found.blocks.length > 0"))["blocks"][0]
            assert abs(kept["width"] - fitted["width"]) < 0.01, (kept, fitted)
            assert not page.failures, page.failures
        finally:
            await page.close()


@pytest.mark.parametrize("viewport", VIEWPORTS)
async def test_filters_that_hide_the_queue_say_so(
    service: Service, browser: Any, viewport: dict[str, int]
) -> None:
    async with work(service) as jobs:
        await jobs.submit("hide-running", gpus=2, runtime=300)
        await jobs.submit("hide-waiting-1", gpus=2, runtime=300)
        await jobs.submit("hide-waiting-2", gpus=1, runtime=300)
        page = await open_at(browser, service, viewport)
        try:
            await page.wait_for_function(
                """() => document.querySelectorAll('#queue tbody tr[data-position]').length == 2
                     && document.querySelector('#queue-count').textContent == '2'"""
            )
            await page.select_option("#filter-type", "TRAINING")
            empty = page.locator("#queue-empty")
            await empty.wait_for(state="visible")
            assert await page.locator("#queue-count").inner_text() == "0 of 2"
            assert await empty.inner_text() == "2 waiting jobs are hidden by the filters."
            await page.select_option("#filter-type", "")
            await empty.wait_for(state="hidden")
            assert not page.failures, page.failures
        finally:
            await page.close()


@pytest.mark.parametrize("viewport", VIEWPORTS)
async def test_the_queue_fits_the_page(
    service: Service, browser: Any, viewport: dict[str, int]
) -> None:
    """Waiting jobs with long names, GPU types and reasons (a job waiting on two others names
    both ids): every cell of the queue, "Why it waits" last, lies inside the queue's pane and
    the viewport, shows its text whole, and the pane has nothing to scroll sideways."""
    async with work(service) as jobs:
        first = await jobs.submit("layout-running", gpus=2, runtime=600)
        second = await jobs.submit("layout-waiting-for-the-a100s", gpus=2, runtime=600)
        await jobs.submit("layout-after-both", gpus=1, runtime=600, depends_on=(first, second))
        await jobs.submit("layout-t4-running", gpus=4, runtime=600, gpu_type=T4)
        await jobs.submit(
            "nightly-eval-of-the-quantised-checkpoint-full-suite",
            gpus=3,
            runtime=600,
            gpu_type=T4,
            job_type="TRAINING",
        )
        await jobs.scheduled("RUNNING", "ESTIMATED", "ESTIMATED", "RUNNING", "ESTIMATED")
        page = await open_at(browser, service, viewport)
        try:
            await page.wait_for_function(
                """() => document.querySelectorAll('#queue tbody tr[data-position]').length == 3
                     && /waits for jobs/.test(document.querySelector('#queue').textContent)""",
                timeout=15_000,
            )
            found: dict[str, Any] = await page.evaluate(
                """() => {
                  const pane = document.querySelector('.queue-scroll');
                  const box = pane.getBoundingClientRect();
                  const cells = [...document.querySelectorAll('#queue th, #queue td')];
                  const outside = cells.filter((c) => {
                    const r = c.getBoundingClientRect();
                    return r.right > box.right + 0.5 || r.right > window.innerWidth;
                  }).map((c) => c.textContent);
                  const clipped = [...document.querySelectorAll('#queue td')]
                    .filter((c) => c.scrollWidth > c.clientWidth).map((c) => c.textContent);
                  const reason = document.querySelector('#queue th:last-child');
                  return {
                    outside, clipped, header: reason.textContent,
                    sideways: pane.scrollWidth - pane.clientWidth,
                    page: document.documentElement.scrollWidth - window.innerWidth,
                  };
                }"""
            )
            assert found["header"] == "Why it waits", found
            assert found["outside"] == [] and found["clipped"] == [], found
            assert found["sideways"] <= 0 and found["page"] <= 0, found
            assert not page.failures, page.failures
        finally:
            await page.close()


@pytest.mark.parametrize("viewport", VIEWPORTS)
async def test_the_quota_pane_shows_kueues_settings(
    service: Service, browser: Any, viewport: dict[str, int]
) -> None:
    page = await open_at(browser, service, viewport)
    try:
        assert await page.evaluate("() => document.querySelector('#quotas').open") is False
        await page.wait_for_function(
            "() => /fair sharing off/.test(document.querySelector('#quotas-summary').textContent)",
            timeout=15_000,
        )
        await page.click("#quotas summary")
        queue = page.locator('#quotas-body [data-queue="default"]')
        await queue.wait_for(timeout=5_000)
        text = " ".join((await queue.inner_text()).split())
        assert "in queue: lower priority · reclaim: never · while borrowing: never" in text, text
        assert "can borrow: may stop search · can preempt: try next flavor" in text, text
        assert "Fair-sharing weight 1 (fair sharing off)" in text, text
        assert f"{A100} nvidia.com/gpu: 0 / 2" in text, text
        note = await page.get_attribute("#quotas-body .quota-note", "data-fair-sharing")
        assert note == "false"
        inside: bool = await page.evaluate(
            """() => {
              const r = document.querySelector('#quotas').getBoundingClientRect();
              return r.right <= window.innerWidth + 0.5 && r.bottom <= window.innerHeight + 0.5;
            }"""
        )
        assert inside
        assert not page.failures, page.failures
    finally:
        await page.close()
