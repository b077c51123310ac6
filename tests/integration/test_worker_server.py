"""A worker's own HTTP server: /metrics for Prometheus, /health and /ready for its probes.

Covers: /metrics answers Prometheus text with the job metrics declared and the cluster gauges
read from the database; /health answers; /ready says which store is down (503) and is ready
again when it answers; the server stops cleanly.
"""

from __future__ import annotations

import socket

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from budcluster.http import worker_server
from tests.integration.test_app_flows import make_app, sim_cluster


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def _no_database(*_: object) -> None:
    raise ConnectionRefusedError("the database does not answer")


async def test_a_workers_metrics_and_probes(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = await make_app(sqlite_url)
    cluster = await sim_cluster(app)
    port = _free_port()
    runner = await worker_server.start(app, "127.0.0.1", port)
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=10) as client:
            scraped = await client.get("/metrics")
            assert scraped.status_code == 200
            families = {f.name: f for f in text_string_to_metric_families(scraped.text)}
            assert "job_state_transitions" in families
            gpus = {
                s.labels["state"]: s.value
                for s in families["cluster_gpus"].samples
                if s.labels["cluster"] == cluster.name
            }
            assert gpus == {"total": 8, "usable": 8, "used": 0}
            assert (await client.get("/health")).json() == {"status": "ok"}
            ready = await client.get("/ready")
            assert ready.status_code == 200 and ready.json()["status"] == "ready"
            with monkeypatch.context() as patched:
                patched.setattr(app.clusters, "all", _no_database)
                down = await client.get("/ready")
            assert down.status_code == 503 and down.json()["checks"]["database"] == "unavailable"
            assert (await client.get("/ready")).status_code == 200
    finally:
        await runner.cleanup()
        await app.close()
