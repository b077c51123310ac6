"""A real cluster's life through the running service, against kmock's Kubernetes API emulator.

The service runs as a subprocess (embedded: SQLite, in-process tasks); the emulator runs in this
test's process over HTTPS with a client certificate and a bearer token, seeded with the realistic
nodes of tests/support/k8s_nodes.py.

Covers: registerCluster's typed errors (invalid YAML, no or unknown context, no server URL, a
taken name) store nothing; a good registration answers REGISTERING and the connect task makes it
AVAILABLE with its nodes, hardware, health, capacity and default flavors selecting the nodes'
real product labels; `clusterUpdates` streams the STATUS change and then the node watch's changes
(cordon, a new node, a removed node) with the capacity following; a wrong token ends in ERROR
and a closed port in NOT_AVAILABLE, each with a reason; `budcluster keys generate --activate`,
`keys rotate` and `keys retire` while the service runs, after which the cluster still connects;
deleteCluster removes it and closes its watch; and no log line, GraphQL response or
subscription message ever carries the token, the client key or the kubeconfig.
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from gql import GraphQLRequest

from tests.e2e.conftest import (
    RESPONSE_BODIES,
    Service,
    ServiceFactory,
    Subscription,
    embedded_env,
    http_client,
    printed_tokens,
    run_cli,
    ws_client,
)
from tests.support import k8s_nodes
from tests.support.kube_emulator import (
    DEFAULT_TOKEN,
    KubeEmulator,
    TestPki,
    kubeconfig_for,
    make_pki,
    running_emulator,
)

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("no_tracebacks")]

CLUSTER_FIELDS = """
  id name platform status reason serverUrl context notAvailableSince lastSyncAt
  nodes { name nodeType gpuType gpuCount ready schedulable excluded detectionMethod nfdDetected
          internalIp hardwareInfo taints { key effect } }
  capacity { gpuType total usable }
  health { name ok detail }
  resourceFlavors { name nodeLabels { key value } }
"""

REGISTER = f"""
mutation Register($input: RegisterClusterInput!) {{
  registerCluster(input: $input) {{
    __typename
    ... on Cluster {{ {CLUSTER_FIELDS} }}
    ... on ValidationError {{ code message fields {{ path code message }} }}
    ... on ConflictError {{ code message }}
  }}
}}
"""

CLUSTER = f"query One($id: ID!) {{ cluster(id: $id) {{ {CLUSTER_FIELDS} }} }}"

REFRESH = """
mutation Refresh($id: ID!) {
  refreshCluster(id: $id) { __typename ... on Cluster { status reason } }
}
"""

DELETE = """
mutation Delete($id: ID!) {
  deleteCluster(id: $id) { __typename ... on Cluster { status } ... on UserError { code } }
}
"""

CLUSTER_UPDATES = """
subscription Clusters($clusterId: ID!) {
  clusterUpdates(clusterId: $clusterId) {
    __typename
    ... on ClusterSnapshot { sequence status reason snapshotReason nodes { name schedulable } }
    ... on ClusterChange { sequence kind status reason nodes { name schedulable gpuCount } }
  }
}
"""


@pytest.fixture(scope="module")
def pki() -> TestPki:
    return make_pki()


def secrets_of(pki: TestPki, kubeconfig: str) -> list[str]:
    """Strings that must never appear in a log line or a response."""
    key_b64 = base64.b64encode(pki.client_key_pem).decode()
    key_body = pki.client_key_pem.decode().splitlines()[1]
    return [DEFAULT_TOKEN, key_b64[:40], key_body, "client-key-data", kubeconfig[:60]]


async def call(service: Service, query: str, **variables: Any) -> dict[str, Any]:
    async with http_client(service, service.admin_token) as session:
        result: dict[str, Any] = await session.execute(
            GraphQLRequest(query, variable_values=variables)
        )
    return result


async def register(service: Service, **input_: Any) -> dict[str, Any]:
    base = {"name": "gpu-lab", "platform": "ON_PREM"}
    result = await call(service, REGISTER, input={**base, **input_})
    registered: dict[str, Any] = result["registerCluster"]
    return registered


async def cluster(service: Service, cluster_id: str) -> dict[str, Any]:
    found: dict[str, Any] = (await call(service, CLUSTER, id=cluster_id))["cluster"]
    return found


async def until_status(
    service: Service, cluster_id: str, status: str, timeout: float = 30.0
) -> dict[str, Any]:
    async with asyncio.timeout(timeout):
        while True:
            found = await cluster(service, cluster_id)
            if found["status"] == status:
                return found
            await asyncio.sleep(0.2)


def changes_with(check: Callable[[dict[str, Any]], bool]) -> Callable[[list[Any]], bool]:
    return lambda updates: any(u["__typename"] == "ClusterChange" and check(u) for u in updates)


def node_named(update: dict[str, Any], name: str) -> dict[str, Any] | None:
    return next((n for n in update["nodes"] if n["name"] == name), None)


async def test_a_real_cluster_from_registration_to_removal(
    services: ServiceFactory, tmp_path: Path, pki: TestPki
) -> None:
    env = embedded_env(
        tmp_path / "data",
        BUDCLUSTER_SUPERVISOR_POLL_SECONDS="0.2",
        BUDCLUSTER_LOG_LEVEL="DEBUG",
    )
    nodes = [
        k8s_nodes.a100_gfd_node(),
        k8s_nodes.h100_gfd_node(),
        k8s_nodes.mi300x_node(),
        k8s_nodes.gaudi_node(),
        k8s_nodes.control_plane_node(),
    ]
    async with running_emulator(tls=pki) as emulator:
        emulator.seed(*nodes)
        kubeconfig = kubeconfig_for(emulator, pki=pki)
        service = await services.start("real-clusters", env)
        tokens = printed_tokens(service.stdout())
        assert len(tokens) == 1, service.output()
        service.admin_token = tokens[0]
        bodies_before = len(RESPONSE_BODIES)

        await refuse_bad_registrations(service, emulator, pki)

        registered = await register(service, kubeconfig=kubeconfig)
        assert registered["__typename"] == "Cluster", registered
        assert registered["status"] == "REGISTERING" and registered["serverUrl"].startswith(
            "https://127.0.0.1:"
        )
        cluster_id = registered["id"]
        conflict = await register(service, kubeconfig=kubeconfig)
        assert conflict == {**conflict, "__typename": "ConflictError", "code": "NAME_TAKEN"}

        available = await until_status(service, cluster_id, "AVAILABLE")
        check_inventory(available)

        updates = await Subscription(
            ws_client(service, service.admin_token),
            {"clusterId": cluster_id},
            document=CLUSTER_UPDATES,
            root="clusterUpdates",
        ).open()
        try:
            await updates.wait_for(
                lambda got: bool(got) and got[0]["__typename"] == "ClusterSnapshot"
            )
            assert updates.updates[0]["status"] == "AVAILABLE"
            await follow_node_changes(emulator, updates, nodes)
        finally:
            await updates.close()
        after = await cluster(service, cluster_id)
        usable: dict[str, int] = {}
        for node in after["nodes"]:  # cordoned (the A100s) and removed (the Gaudis) don't count
            if node["gpuType"] and node["ready"] and node["schedulable"] and not node["excluded"]:
                usable[node["gpuType"]] = usable.get(node["gpuType"], 0) + node["gpuCount"]
        assert {c["gpuType"]: c["usable"] for c in after["capacity"] if c["usable"]} == usable
        assert "nvidia-a100-80gb" not in usable and len(usable) == 3, usable
        total = {c["gpuType"]: c["total"] for c in after["capacity"]}
        assert total["nvidia-a100-80gb"] == 8 and len(total) == 4, total  # cordoned still counts

        await failing_clusters(service, emulator, pki)
        await rotate_keys_while_serving(service, env, cluster_id)

        deleted = (await call(service, DELETE, id=cluster_id))["deleteCluster"]
        assert deleted == {"__typename": "Cluster", "status": "DELETING"}
        listed = await call(service, "{ clusters { id } }")
        assert cluster_id not in {c["id"] for c in listed["clusters"]}
        await emulator.wait_for_watch(count=0)  # its watch ends: the ApiClient is closed

        await service.stop()
        seen = "\n".join([service.output(tail=10_000_000), *RESPONSE_BODIES[bodies_before:]])
        seen += json.dumps(updates.updates)
        for secret in secrets_of(pki, kubeconfig):
            assert secret not in seen, f"{secret[:12]}... leaked"
        assert "switched-off" in seen  # the log was read: it names clusters, never their secrets


async def refuse_bad_registrations(service: Service, emulator: KubeEmulator, pki: TestPki) -> None:
    good = kubeconfig_for(emulator, pki=pki)
    document = yaml.safe_load(good)
    del document["clusters"][0]["cluster"]["server"]
    no_server = yaml.safe_dump(document)
    document = yaml.safe_load(good)
    document["contexts"].append({"name": "other", "context": document["contexts"][0]["context"]})
    del document["current-context"]
    two_contexts_none_current = yaml.safe_dump(document)
    cases: list[tuple[dict[str, Any], str]] = [
        ({"kubeconfig": "clusters: [unclosed"}, "kubeconfig"),
        ({"kubeconfig": ""}, "kubeconfig"),
        ({"kubeconfig": two_contexts_none_current}, "context"),
        ({"kubeconfig": good, "context": "nope"}, "context"),
        ({"kubeconfig": good, "name": "Not_A_Name"}, "name"),
        ({"kubeconfig": good, "ingressUrl": "ftp://x"}, "ingressUrl"),
        ({"kubeconfig": no_server}, "kubeconfig"),
    ]
    for input_, field in cases:
        refused = await register(service, **input_)
        assert refused["__typename"] == "ValidationError", (input_.keys(), refused)
        assert field in {f["path"] for f in refused["fields"]}, refused
    listed = await call(service, "{ clusters { name } }")
    assert [c["name"] for c in listed["clusters"]] == ["local-sim"]  # nothing half-stored


def check_inventory(found: dict[str, Any]) -> None:
    by_name = {n["name"]: n for n in found["nodes"]}
    assert len(by_name) == 5, by_name.keys()
    a100 = next(n for n in found["nodes"] if n["gpuType"] == "nvidia-a100-80gb")
    assert a100["nodeType"] == "GPU" and a100["gpuCount"] == 8 and a100["detectionMethod"] == "gfd"
    assert a100["hardwareInfo"]["gpu"]["memory_mb"] == 81920 and a100["nfdDetected"]
    assert {"key": "nvidia.com/gpu", "effect": "NoSchedule"} in a100["taints"]
    master = next(n for n in found["nodes"] if n["nodeType"] == "MASTER")
    assert master["excluded"] and master["gpuCount"] == 0
    assert any(n["nodeType"] == "HPU" for n in found["nodes"])
    capacity = {c["gpuType"]: c["total"] for c in found["capacity"]}
    assert capacity["nvidia-a100-80gb"] == 8 and len(capacity) == 4, capacity
    checks = {h["name"]: h for h in found["health"]}
    assert checks["api"]["ok"] and "v1.30.2" in checks["api"]["detail"]
    assert checks["nodes"]["ok"] and checks["nfd"]["ok"] and not checks["kueue"]["ok"]
    labels = {
        f["name"]: {(label["key"], label["value"]) for label in f["nodeLabels"]}
        for f in found["resourceFlavors"]
    }
    assert ("nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB") in set().union(*labels.values())
    assert found["lastSyncAt"] is not None and found["reason"] is None


async def follow_node_changes(
    emulator: KubeEmulator, updates: Subscription, nodes: list[dict[str, Any]]
) -> None:
    a100, gaudi = nodes[0], nodes[3]
    a100_name, gaudi_name = a100["metadata"]["name"], gaudi["metadata"]["name"]
    await emulator.wait_for_watch()
    await emulator.patch_object(a100, {"spec": {"unschedulable": True}})
    await updates.wait_for(
        changes_with(lambda u: (node_named(u, a100_name) or {}).get("schedulable") is False)
    )
    await emulator.delete_object(gaudi)
    await updates.wait_for(
        changes_with(lambda u: u["kind"] == "NODES" and node_named(u, gaudi_name) is None)
    )
    extra = k8s_nodes.allocatable_only_node()
    await emulator.create(extra)
    extra_name = extra["metadata"]["name"]
    await updates.wait_for(
        changes_with(lambda u: (node_named(u, extra_name) or {}).get("gpuCount") == 4)
    )
    sequences = [u["sequence"] for u in updates.updates]
    assert sequences == sorted(sequences) and len(set(sequences)) == len(sequences)


async def failing_clusters(service: Service, emulator: KubeEmulator, pki: TestPki) -> None:
    wrong = kubeconfig_for(emulator, pki=pki, token="not-the-token")
    refused = await register(service, name="wrong-token", kubeconfig=wrong)
    errored = await until_status(service, refused["id"], "ERROR")
    assert "unauthori" in (errored["reason"] or "").lower(), errored

    closed = kubeconfig_for("https://127.0.0.1:9", pki=pki)
    unreachable = await register(service, name="switched-off", kubeconfig=closed)
    down = await until_status(service, unreachable["id"], "NOT_AVAILABLE")
    assert down["reason"] and down["notAvailableSince"] is not None


async def rotate_keys_while_serving(service: Service, env: dict[str, str], cluster_id: str) -> None:
    keys = Path(env["BUDCLUSTER_DATA_DIR"]) / "keys"
    old_key = (keys / "ACTIVE").read_text().strip()
    refused = await run_cli(env, "keys", "retire", old_key, check=False)
    assert refused.returncode == 2 and "active key" in refused.stderr  # the active key can't go
    new_key = (await run_cli(env, "keys", "generate", "--activate")).stdout.strip()
    refused = await run_cli(env, "keys", "retire", old_key, check=False)
    assert refused.returncode == 1 and "keys rotate" in refused.stderr  # still wraps three
    rotated = await run_cli(env, "keys", "rotate")
    assert f"active key {new_key}: 3 re-wrapped, 0 already on it, 0 failed" in rotated.stderr
    again = await run_cli(env, "keys", "rotate")
    assert "0 re-wrapped, 3 already on it" in again.stderr
    await run_cli(env, "keys", "retire", old_key)
    assert not (keys / "key-1.pem").exists()
    refreshed = (await call(service, REFRESH, id=cluster_id))["refreshCluster"]
    assert refreshed == {"__typename": "Cluster", "status": "AVAILABLE", "reason": None}
