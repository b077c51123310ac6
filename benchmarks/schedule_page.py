"""The /schedule page at scale: a day of 1,000 GPUs in vis-timeline, under a stream of diffs.

One embedded API process (`python -m budcluster serve`, SQLite in a fresh temporary data dir) is
started as a subprocess; headless Debian Chromium (`--chromium`, driven by Playwright) opens
/schedule, signs in with the printed admin token and waits until the page is live on the real
`scheduleTimeline` subscription of the simulated cluster. Then, through
`window.budSchedule.applyMessage` (the code path the subscription's messages take), it loads a
synthetic `Schedule`: `--nodes` nodes x `--gpus` GPUs plus the CPU row, -12 h ... +12 h around
now, jobs of 10 min - 4 h (log-uniform) on 1, 2, 4 or 8 GPUs of a node, completed before now,
running across it, estimated (with start windows, some open-ended) or reserved after it, 15 %
of them another tenant's, 3 % open-ended services. A seeded generator makes every run the same.

Measured in the browser (performance.now and requestAnimationFrame, Chromium's own clock):
- snapshot: the synchronous apply (model + item building), the DataSet write, and the time
  until vis-timeline's redraw and the next frame (first render);
- then `--seconds` of `ScheduleDiff`s at `--rate` per second, each moving, adding and removing
  20-50 segments (a queue update every 5th), sent from a timer in the page: the rAF frame
  intervals (p50, p95, p99, max, share over 50 ms), the per-diff apply time (p50/p95), the
  per-frame DataSet write time, long tasks (PerformanceObserver) — first with the view still,
  then while the rows are scrolled with the mouse wheel (real input events, 30 per second), then
  while zooming in and out (Ctrl+wheel).
Headless Chromium without a GPU composites in software, so the frame figures are a pessimistic
stand-in for a desktop browser; the baseline row (no diffs, no input) shows the floor.

    .venv/bin/python -m benchmarks.schedule_page [--nodes 125] [--gpus 8] [--rate 10]
        [--seconds 20] [--chromium /usr/bin/chromium] [--keep-data] [--screenshot PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.event_to_screen import free_port, start_server

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

# Installed into the page with page.evaluate (CDP, so the page's CSP does not apply to it).
BENCH_JS = (Path(__file__).parent / "schedule_page.js").read_text()


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def frame_row(label: str, data: dict[str, Any], seconds: float) -> str:
    frames = [f for f in data["frames"] if f > 0]
    over = sum(1 for f in frames if f > 50) / len(frames) * 100 if frames else float("nan")
    apply = data["applyMs"]
    flush = data["flushMs"]
    long = data["longTasks"]
    fps = len(frames) / seconds if seconds else float("nan")
    return (
        f"{label:<24} {len(frames):>6} {fps:>5.1f} {pct(frames, 0.5):>6.1f} "
        f"{pct(frames, 0.95):>6.1f} "
        f"{pct(frames, 0.99):>6.1f} {max(frames, default=float('nan')):>7.1f} {over:>6.1f}% "
        f"{pct(apply, 0.5):>6.2f} {pct(apply, 0.95):>6.2f} "
        f"{pct(flush, 0.5):>6.1f} {pct(flush, 0.95):>6.1f} "
        f"{len(long):>5} {max(long, default=0):>6.0f}"
    )


async def run_browser(base: str, token: str, args: argparse.Namespace) -> int:
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=args.chromium, args=CHROMIUM_ARGS
        )
        try:
            page = await browser.new_page(viewport={"width": 1600, "height": 1000})
            errors: list[str] = []
            page.on("pageerror", lambda error: errors.append(str(error)))
            await page.goto(f"{base}/schedule")
            await page.fill("#token-form input[name=token]", token)
            await page.click("#token-form button[type=submit]")
            await page.wait_for_function(
                "() => window.budSchedule && window.budSchedule.state === 'live'", timeout=30_000
            )
            live_sequence = await page.evaluate("() => window.budSchedule.sequence")
            await page.evaluate(BENCH_JS)
            shape = await page.evaluate(
                f"() => window.__bench.makeSnapshot({args.nodes}, {args.gpus})"
            )
            print(
                f"page live at sequence {live_sequence}; synthetic schedule: {shape['rows']} rows, "
                f"{shape['segments']} segments, {shape['segmentRows']} segment-rows (items), "
                "-12 h ... +12 h"
            )
            snap = await page.evaluate("() => window.__bench.applySnapshot()")
            await page.wait_for_timeout(1000)
            items = await page.evaluate("() => window.budSchedule.itemCount")
            print(
                f"snapshot: apply {snap['applyMs']:.0f} ms (model + items), "
                f"DataSet write {snap['flushMs']:.0f} ms, "
                f"redrawn after {snap['renderedMs']:.0f} ms, "
                f"first frame after {snap['firstFrameMs']:.0f} ms; "
                f"{snap['segments']} segments, {items} vis items (incl. start-window bands)"
            )
            blocks = await page.locator(".vis-item[data-segment-id]").count()
            print(
                "blocks in the DOM after the snapshot (vis-timeline draws the visible rows "
                f"only): {blocks}"
            )

            # The centre panel, where wheel events scroll rows (and zoom with Ctrl).
            box = await page.locator(".vis-panel.vis-center").bounding_box()
            assert box is not None
            cx, cy = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
            await page.mouse.move(cx, cy)

            header = (
                f"{'phase':<24} {'frames':>6} {'fps':>5} {'p50':>6} {'p95':>6} {'p99':>6} "
                f"{'max':>7} {'>50ms':>7} "
                f"{'ap50':>6} {'ap95':>6} {'fl50':>6} {'fl95':>6} {'long':>5} {'lmax':>6}"
            )
            rows: list[str] = []

            async def phase(label: str, seconds: float, diffs: bool, action: Any = None) -> None:
                if diffs:
                    await page.evaluate(f"() => window.__bench.startDiffs({args.rate}, 20, 50)")
                await page.evaluate("() => window.__bench.startRecording()")
                started = time.monotonic()
                if action is None:
                    await asyncio.sleep(seconds)
                else:
                    await action(seconds)
                elapsed = time.monotonic() - started
                data = await page.evaluate("() => window.__bench.stopRecording()")
                if diffs:
                    await page.evaluate("() => window.__bench.stopDiffs()")
                rows.append(frame_row(label, data, elapsed))
                await page.wait_for_timeout(300)

            async def scroll(seconds: float) -> None:
                deadline = time.monotonic() + seconds
                direction = 1
                steps = 0
                while time.monotonic() < deadline:
                    await page.mouse.wheel(0, 120 * direction)
                    steps += 1
                    if steps % 60 == 0:
                        direction = -direction
                    await asyncio.sleep(1 / 30)

            async def zoom(seconds: float) -> None:
                deadline = time.monotonic() + seconds
                direction = -1
                steps = 0
                await page.keyboard.down("Control")
                try:
                    while time.monotonic() < deadline:
                        await page.mouse.wheel(0, 100 * direction)
                        steps += 1
                        if steps % 15 == 0:
                            direction = -direction
                        await asyncio.sleep(1 / 30)
                finally:
                    await page.keyboard.up("Control")

            await phase("baseline (idle)", 3, diffs=False)
            await phase(f"diffs {args.rate}/s", args.seconds, diffs=True)
            await phase("diffs + v-scroll", max(5.0, args.seconds / 2), diffs=True, action=scroll)
            await phase("diffs + zoom", max(5.0, args.seconds / 2), diffs=True, action=zoom)
            await phase("scroll only", 5, diffs=False, action=scroll)

            print()
            print(
                "frame intervals (ms) from requestAnimationFrame; "
                "ap = applyMessage per diff (ms, sync);"
            )
            print(
                "fl = DataSet write per animation frame (ms); "
                "long = long tasks (>50 ms) and the longest (ms)"
            )
            print(header)
            print("-" * len(header))
            for row in rows:
                print(row)
            final = await page.evaluate(
                "() => ({segments: window.budSchedule.segmentCount, "
                "items: window.budSchedule.itemCount,"
                " sequence: window.budSchedule.sequence, state: window.budSchedule.state})"
            )
            print(f"\nafter the run: {json.dumps(final)}")
            if args.screenshot:
                await page.screenshot(path=args.screenshot)
                print(f"screenshot: {args.screenshot}")
            if errors:
                print("page errors:", *errors, sep="\n  ")
                return 1
            return 0
        finally:
            await browser.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=125)
    parser.add_argument("--gpus", type=int, default=8, help="GPUs per node")
    parser.add_argument("--rate", type=float, default=10, help="diffs per second")
    parser.add_argument("--seconds", type=float, default=20, help="length of the diff phase")
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("--keep-data", action="store_true")
    parser.add_argument("--screenshot", default="")
    args = parser.parse_args(argv)

    data_dir = Path(tempfile.mkdtemp(prefix="budcluster-schedule-page-"))
    server = start_server(data_dir, free_port(), {}, None)
    try:
        server.wait_healthy()
        token = server.token()
        print(f"server {server.base} (data dir {data_dir}); Chromium {args.chromium}")
        return asyncio.run(run_browser(server.base, token, args))
    finally:
        server.stop()
        if not args.keep_data:
            shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
