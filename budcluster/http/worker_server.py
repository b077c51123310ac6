"""A worker's own small HTTP server: `/metrics` for Prometheus and `/health`, `/ready` for its
probes (the API process serves these on its main port)."""

from __future__ import annotations

from aiohttp import web

from budcluster.bootstrap import App


async def start(app: App, host: str, port: int) -> web.AppRunner:
    """Listening when it returns; `await runner.cleanup()` stops it."""

    async def metrics(_: web.Request) -> web.Response:
        body, content_type = await app.metrics_text()
        return web.Response(body=body, headers={"Content-Type": content_type})

    async def health(_: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    async def ready(_: web.Request) -> web.Response:
        checks = await app.readiness()
        ok = all(checks.values())
        return web.json_response(
            {
                "status": "ready" if ok else "unavailable",
                "checks": {name: "ok" if up else "unavailable" for name, up in checks.items()},
            },
            status=200 if ok else 503,
        )

    server = web.Application()
    server.add_routes(
        [web.get("/metrics", metrics), web.get("/health", health), web.get("/ready", ready)]
    )
    runner = web.AppRunner(server, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    return runner
