"""A simulated deployment's endpoint URL across restarts of the service.

Covers: a service started again on the same database listens where its deployments' endpoint
URLs say, so the URL a client was given keeps working (it moved to a new port at every start);
when another program took that port meanwhile the endpoints move to a free one and the log says
so; a port the operator configured that is taken is refused, not replaced.
"""

from __future__ import annotations

import logging
import socket
import uuid

import httpx
import pytest

from adapters.simulated.serving import ServedModel, SimulatedServing
from budcluster import bootstrap
from budcluster.bootstrap import App
from budcluster.runtime import Runtime
from domain.model.deployment import DeploymentStatus
from domain.model.ids import DeploymentId, ProjectId
from domain.services.deployments import DeploymentRequest
from tests.integration.test_app_flows import ALICE, make_app, until


async def running_endpoint(app: App) -> tuple[DeploymentId, str]:
    """Deploy a model on the embedded cluster; its id and endpoint URL once it serves."""
    (cluster,) = await app.clusters.all()
    d = await app.deployments.deploy(
        ALICE,
        DeploymentRequest(
            name="qwen",
            project_id=ProjectId(uuid.uuid4()),
            cluster_id=cluster.id,
            model="Qwen/Qwen2.5-1.5B-Instruct",
            served_model_name="qwen",
            gpu_type="nvidia-a100-80gb",
        ),
    )

    async def serving() -> bool:
        found = await app.deployments.get(ALICE, d.id)
        return found is not None and found.status is DeploymentStatus.RUNNING

    await until(serving)
    found = await app.deployments.get(ALICE, d.id)
    assert found is not None and found.endpoint_url is not None
    return d.id, found.endpoint_url


async def test_a_restarted_service_keeps_its_deployments_endpoint_url(sqlite_url: str) -> None:
    first = await make_app(sqlite_url)
    await first.ensure_defaults()
    runtime = Runtime(first)
    await runtime.start()
    try:
        deployment_id, url = await running_endpoint(first)
    finally:
        await runtime.stop()
        await first.close()

    again = await bootstrap.api(first.settings)  # the same database, as a restarted process
    runtime = Runtime(again)
    await runtime.start()
    try:
        await again.deployments.refresh_all()  # what a start does, in the background
        found = await again.deployments.get(ALICE, deployment_id)
        assert found is not None and found.endpoint_url == url
        async with httpx.AsyncClient(timeout=10) as client:
            models = await client.get(f"{url}/models")
        assert models.status_code == 200, models.text
        assert [m["id"] for m in models.json()["data"]] == ["qwen"]
    finally:
        await runtime.stop()
        await again.close()


async def test_endpoints_whose_port_was_taken_move_and_say_so(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def lookup(key: str) -> ServedModel | None:
        return None

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        moved = SimulatedServing(lookup)
        with caplog.at_level(logging.WARNING):
            await moved.start(remembered=port)
        try:
            new_port = moved.port_of(moved.endpoint("key"))
            assert new_port is not None and new_port != port
            assert f"were on port {port}, which is taken now" in caplog.text
        finally:
            await moved.close()

        configured = SimulatedServing(lookup, port=port)
        with pytest.raises(OSError):
            await configured.start(remembered=port)
