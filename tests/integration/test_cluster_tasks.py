"""Real clusters in production mode: PostgreSQL, arq on Redis, kmock's emulator over HTTP.

Covers: registration queues one connect task on arq and a burst worker connects the cluster
(AVAILABLE with its nodes and default quotas whose GPU flavors select the nodes' product labels);
the periodic full sync (the arq cron job, every 3 minutes by default, queueing one connection
attempt per cluster) picks up a node added
while nobody watched, and makes a cluster whose API server stopped answering NOT_AVAILABLE; the
cron schedule follows BUDCLUSTER_CLUSTER_SYNC_SECONDS.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from adapters.clock import ManualClock
from adapters.secrets.keyring import write_new_key
from domain.model.cluster import ClusterStatus, Platform
from domain.ports.unit_of_work import TenantScope
from domain.services import task_names
from domain.services.registry import Registration
from tests.integration.conftest import redis_url
from tests.integration.test_app_flows import make_app
from tests.support import k8s_nodes
from tests.support.kube_emulator import kubeconfig_for, running_emulator
from workers.settings import sync_cron_jobs, worker_for
from workers.tasks import sync_clusters


async def test_connect_on_arq_then_the_periodic_sync(
    pg_url: str, prefix: str, tmp_path: Path
) -> None:
    keys = tmp_path / "keys"
    write_new_key(keys, bits=3072)
    clock = ManualClock(datetime.now(UTC))  # not started: only the syncs look at the time
    app = await make_app(
        pg_url,
        clock=clock,
        redis_url=redis_url(),
        tasks="arq",
        events="redis",
        redis_prefix=prefix,
        keys_dir=keys,
        kube_plain_http=True,  # the emulator speaks plain HTTP
    )
    try:
        async with running_emulator() as emulator:
            emulator.seed(k8s_nodes.a100_gfd_node(), k8s_nodes.control_plane_node())
            cluster = await app.registry.register(
                Registration(
                    name="prod-east", platform=Platform.EKS, kubeconfig=kubeconfig_for(emulator)
                )
            )
            assert cluster.status is ClusterStatus.REGISTERING
            assert app.arq is not None
            assert await app.arq.zcard(app.settings.queue_name) == 1
            await worker_for(app, burst=True, handle_signals=False).main()

            async with app.db.unit_of_work(TenantScope.system()) as uow:
                connected = await uow.clusters.get(cluster.id)
                quotas = await uow.quotas.quota_set(cluster.id)
            assert connected is not None and connected.status is ClusterStatus.AVAILABLE
            assert connected.gpu_capacity() == {"nvidia-a100-80gb": 8}
            assert {f.name: f.node_labels for f in quotas.flavors}["nvidia-a100-80gb"] == {
                "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"
            }

            emulator.seed(k8s_nodes.h100_gfd_node())  # no watch event: only a sync sees it
            await sync_clusters({"registry": app.registry})  # queues one attempt per cluster
            assert await app.arq.zcard(app.settings.queue_name) == 1
            await worker_for(app, burst=True, handle_signals=False).main()
            async with app.db.unit_of_work(TenantScope.system()) as uow:
                synced = await uow.clusters.get(cluster.id)
            assert synced is not None and synced.gpu_capacity() == {
                "nvidia-a100-80gb": 8,
                "nvidia-h100-80gb": 8,
            }
        await clock.advance(app.settings.cluster_sync_seconds)  # the next sync period
        await sync_clusters({"registry": app.registry})  # the API server is gone
        await worker_for(app, burst=True, handle_signals=False).main()
        async with app.db.unit_of_work(TenantScope.system()) as uow:
            down = await uow.clusters.get(cluster.id)
        assert down is not None and down.status is ClusterStatus.NOT_AVAILABLE
        assert down.not_available_since is not None and down.reason
        assert down.nodes and down.gpu_capacity()  # the last known inventory is kept
    finally:
        await app.close()


def test_the_sync_cron_follows_the_setting() -> None:
    [every_three] = sync_cron_jobs(180, "budcluster:queue")
    assert every_three.name == f"budcluster:queue:{task_names.SYNC_CLUSTERS}"
    assert every_three.unique and every_three.minute == set(range(0, 60, 3))
    [every_minute] = sync_cron_jobs(5, "budcluster:queue")
    assert every_minute.minute == set(range(60))
