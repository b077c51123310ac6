"""What a tenant reads of a cluster that cannot be reached: the reason and the health checks say
what is wrong, not where the API server is (its address is the operator's, as `serverUrl` is),
in queries and in the `clusterUpdates` snapshot; the operator reads them whole.
"""

from __future__ import annotations

import uuid
from dataclasses import replace

from domain.model.cluster import ClusterStatus, HealthCheck
from domain.model.ids import ClusterId
from domain.model.principal import Scope
from domain.ports.unit_of_work import TenantScope
from tests.integration.test_graphql_api import Api, api

__all__ = ["api"]

SERVER = "https://10.20.30.40:6443"
REASON = f"cannot connect to {SERVER} (connection refused)"
DETAIL = f"{SERVER}/version did not answer to read the version within 5 s"
CLUSTER = """query($id: ID!) { cluster(id: $id) {
  status reason serverUrl health { name ok detail } } }"""


async def unreachable(api: Api) -> None:
    async with api.app.db.unit_of_work(TenantScope.system()) as uow:
        cluster = await uow.clusters.get(ClusterId(uuid.UUID(api.cluster_id)))
        assert cluster is not None
        cluster.status, cluster.reason, cluster.server_url = (
            ClusterStatus.NOT_AVAILABLE,
            REASON,
            SERVER,
        )
        cluster.health = (HealthCheck("api", False, DETAIL), HealthCheck("nodes", True, "2/2"))
        await uow.clusters.save(replace(cluster))
        await uow.commit()


async def test_tenants_are_told_what_is_wrong_but_not_where_the_server_is(api: Api) -> None:
    await unreachable(api)
    tenant = await api.token(Scope.CLUSTERS_READ, Scope.JOBS_READ)
    seen = (await api.ok(CLUSTER, {"id": api.cluster_id}, token=tenant))["cluster"]
    assert seen["status"] == "NOT_AVAILABLE" and seen["serverUrl"] is None
    assert seen["reason"] == "cannot connect to the API server (connection refused)"
    assert "10.20.30.40" not in str(seen)
    assert seen["health"][0]["detail"].startswith("the API server did not answer")

    operator = await api.token(Scope.CLUSTERS_WRITE, Scope.CLUSTERS_READ)
    whole = (await api.ok(CLUSTER, {"id": api.cluster_id}, token=operator))["cluster"]
    assert whole["reason"] == REASON and whole["serverUrl"] == SERVER
    assert whole["health"][0]["detail"] == DETAIL
