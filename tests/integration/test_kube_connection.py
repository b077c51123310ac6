"""The Kubernetes connection (adapters/kubernetes) against kmock's emulator over real HTTP(S).

Covers:
- listing nodes as the API sends them, and list-then-watch: ADDED, MODIFIED, DELETED after the
  list, a watch the server ends, a watch that stalls;
- an expired resourceVersion, as HTTP 410 and as an ERROR event, raising ResourceVersionGone, and
  listing again afterwards;
- health: a bare cluster; Kueue (served API versions, controller version), NFD and the GPU
  operator found by CRDs, labels or workloads; reads the user may not make (403) as "forbidden";
- kubeconfig errors (invalid YAML, no or unknown context, no server URL, file references and
  programs refused, bad base64) with the field they concern;
- connection errors: nothing listening, an unresolvable host, a silent server, 401, 403, an
  untrusted server certificate;
- TLS with inline CA data and a client certificate: the private temp directory exists while
  connected and is gone after close, nothing else is written to the temp dir, kubernetes-asyncio
  keeps no memory of it, and the same kubeconfig connects again;
- no error message or traceback carries the token or key material.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import socket
import stat
import tempfile
import traceback
from collections.abc import AsyncGenerator, AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import kmock
import pytest
import yaml
from kubernetes_asyncio.config import kube_config

from adapters.kubernetes import KubeClusterApi, KubeConnector, KubeTimeouts, ResourceVersionGone
from domain.errors import ClusterConnectionError
from domain.model.cluster import HealthCheck
from domain.ports.cluster_api import WatchExpired
from tests.support import k8s_nodes
from tests.support.kube_emulator import (
    DEFAULT_TOKEN,
    KubeEmulator,
    TestPki,
    kubeconfig_for,
    make_pki,
    running_emulator,
)

FAST = KubeTimeouts(connect=2.0, read=2.0, watch_seconds=30, watch_grace=2.0)


@pytest.fixture
async def emulator() -> AsyncIterator[KubeEmulator]:
    async with running_emulator() as running:
        yield running


@pytest.fixture
async def api(emulator: KubeEmulator) -> AsyncIterator[KubeClusterApi]:
    async with await KubeClusterApi.from_kubeconfig(
        kubeconfig_for(emulator), timeouts=FAST
    ) as connected:
        yield connected


@pytest.fixture(scope="module")
def pki() -> TestPki:
    return make_pki()


@pytest.fixture
def system_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh, empty system temp dir for this test (tempfile.gettempdir() points at it)."""
    directory = tmp_path / "system-tmp"
    directory.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(directory))
    return directory


def names(nodes: list[dict[str, Any]]) -> list[str]:
    return [n["metadata"]["name"] for n in nodes]


def secrets_absent(exc: BaseException, *secrets: str | bytes) -> None:
    shown = str(exc) + "".join(traceback.format_exception(exc))
    for secret in secrets:
        text = secret.decode() if isinstance(secret, bytes) else secret
        for line in text.strip().splitlines():
            if "-----" not in line:  # PEM armour lines are not secret
                assert line not in shown


async def connection_error(kubeconfig: str, **kwargs: Any) -> ClusterConnectionError:
    """The error connecting with `kubeconfig` and asking the server version raises."""
    with pytest.raises(ClusterConnectionError) as raised:
        async with await KubeClusterApi.from_kubeconfig(kubeconfig, **kwargs) as api:
            await api.server_version()
    return raised.value


def files_in(directory: Path) -> list[Path]:
    return sorted(directory.rglob("*"))


def healths(checks: list[HealthCheck]) -> dict[str, tuple[bool, str]]:
    return {check.name: (check.ok, check.detail) for check in checks}


# --- nodes ------------------------------------------------------------------------------------


async def test_lists_nodes_as_the_api_sends_them(
    emulator: KubeEmulator, api: KubeClusterApi
) -> None:
    emulator.seed(*k8s_nodes.all_nodes())

    nodes, resource_version = await api.list_nodes()

    assert names(nodes) == names(k8s_nodes.all_nodes())
    assert nodes[0] == k8s_nodes.a100_gfd_node()  # camelCase keys, every field kept
    assert resource_version
    assert await api.server_version() == "v1.30.2"


async def watch_events(
    api: KubeClusterApi, resource_version: str, count: int
) -> list[tuple[str, dict[str, Any]]]:
    events: list[tuple[str, dict[str, Any]]] = []
    watch = api.watch_nodes(resource_version)
    assert isinstance(watch, AsyncGenerator)  # closed by aclosing when the test has enough
    async with contextlib.aclosing(watch) as stream:
        async for event in stream:
            events.append(event)
            if len(events) == count:
                break
    return events


async def test_watch_after_list_sees_added_modified_and_deleted(
    emulator: KubeEmulator, api: KubeClusterApi
) -> None:
    emulator.seed(k8s_nodes.a100_gfd_node())
    _, resource_version = await api.list_nodes()
    watching = asyncio.create_task(watch_events(api, resource_version, 3))
    await emulator.wait_for_watch()

    added = k8s_nodes.h100_gfd_node()
    await emulator.create(added)
    await emulator.patch_object(added, {"spec": {"unschedulable": True}})
    await emulator.delete_object(added)
    events = await asyncio.wait_for(watching, 5)

    assert [(kind, node["metadata"]["name"]) for kind, node in events] == [
        ("ADDED", "dgx-h100-07"),
        ("MODIFIED", "dgx-h100-07"),
        ("DELETED", "dgx-h100-07"),
    ]
    assert events[1][1]["spec"]["unschedulable"] is True
    request = emulator[kmock.action.WATCH][0]
    assert isinstance(request, kmock.Request)  # kmock types [int] as a View
    assert request.params["resourceVersion"] == resource_version
    assert request.params["timeoutSeconds"] == str(FAST.watch_seconds)


async def test_a_watch_the_server_ends_just_ends(
    emulator: KubeEmulator, api: KubeClusterApi
) -> None:
    node = k8s_nodes.gaudi_node()
    emulator[kmock.action.WATCH, kmock.resource("v1/nodes")][:1] << (
        {"type": "ADDED", "object": node},
        {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "7"}}},
    )

    events = [event async for event in api.watch_nodes("6")]

    assert events == [("ADDED", node)]


async def test_a_stalled_watch_is_unreachable(emulator: KubeEmulator) -> None:
    timeouts = KubeTimeouts(connect=2.0, read=2.0, watch_seconds=1, watch_grace=0.2)
    async with await KubeClusterApi.from_kubeconfig(
        kubeconfig_for(emulator), timeouts=timeouts
    ) as api:
        with pytest.raises(ClusterConnectionError) as raised:
            async for _ in api.watch_nodes("1"):
                pass  # kmock ignores timeoutSeconds: the stream stays open and silent

    assert raised.value.kind == "unreachable"
    assert "did not answer to watch nodes within 1.2 s" in raised.value.message


@pytest.mark.parametrize("expire", ["expire_watch", "expire_watch_in_stream"])
async def test_an_expired_resource_version_raises_gone_and_a_new_list_works(
    emulator: KubeEmulator, api: KubeClusterApi, expire: str
) -> None:
    emulator.seed(k8s_nodes.a100_gfd_node())
    _, resource_version = await api.list_nodes()
    getattr(emulator, expire)()

    with pytest.raises(ResourceVersionGone) as gone:
        await watch_events(api, resource_version, 1)
    assert isinstance(gone.value, WatchExpired)

    nodes, resource_version = await api.list_nodes()
    assert names(nodes) == ["ip-10-0-12-34.ec2.internal"]
    watching = asyncio.create_task(watch_events(api, resource_version, 1))
    await emulator.wait_for_watch()
    await emulator.create(k8s_nodes.mi300x_node())
    [(kind, node)] = await asyncio.wait_for(watching, 5)
    assert (kind, node["metadata"]["name"]) == ("ADDED", "mi300x-node-01")


# --- health -----------------------------------------------------------------------------------


def crd(name: str, *versions: tuple[str, bool]) -> dict[str, Any]:
    plural, _, group = name.partition(".")
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": name},
        "spec": {
            "group": group,
            "names": {"plural": plural},
            "scope": "Cluster",
            "versions": [{"name": v, "served": served, "storage": False} for v, served in versions],
        },
    }


def workload(kind: str, namespace: str, name: str, image: str) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": {"namespace": namespace, "name": name},
        "spec": {"template": {"spec": {"containers": [{"name": "manager", "image": image}]}}},
    }


KUEUE_CRD = crd(
    "clusterqueues.kueue.x-k8s.io", ("v1alpha1", False), ("v1beta1", True), ("v1beta2", True)
)
KUEUE_CONTROLLER = workload(
    "Deployment",
    "kueue-system",
    "kueue-controller-manager",
    "registry.k8s.io/kueue/kueue:v0.13.3@sha256:0123456789abcdef",
)
GPU_OPERATOR_CRD = crd("clusterpolicies.nvidia.com", ("v1", True))


async def test_health_of_a_bare_cluster(emulator: KubeEmulator, api: KubeClusterApi) -> None:
    emulator.seed(k8s_nodes.allocatable_only_node())

    checks = await api.health()

    assert [check.name for check in checks] == [
        "api",
        "nodes",
        "nfd",
        "kueue",
        "gpu_operator",
        "versions",
    ]
    assert healths(checks) == {
        "api": (True, "reachable, Kubernetes v1.30.2"),
        "nodes": (True, "1 of 1 nodes ready"),
        "nfd": (False, "not installed: no node has feature.node.kubernetes.io labels"),
        "kueue": (False, "not installed: no clusterqueues.kueue.x-k8s.io CRD"),
        "gpu_operator": (False, "not installed: no clusterpolicies.nvidia.com CRD"),
        "versions": (True, "Kubernetes v1.30.2: supported"),
    }
    assert await api.kueue() is None


async def test_health_of_a_gpu_cluster_with_kueue(
    emulator: KubeEmulator, api: KubeClusterApi
) -> None:
    nodes = k8s_nodes.all_nodes()
    k8s_nodes.not_ready(nodes[1])
    emulator.seed(*nodes, KUEUE_CRD, KUEUE_CONTROLLER, GPU_OPERATOR_CRD)

    checks = healths(await api.health())

    assert checks == {
        "api": (True, "reachable, Kubernetes v1.30.2"),
        "nodes": (False, "5 of 6 nodes ready"),
        "nfd": (True, "feature labels on 5 of 6 nodes"),
        "kueue": (True, "installed, API v1beta1, v1beta2, controller v0.13.3"),
        "gpu_operator": (True, "installed: clusterpolicies.nvidia.com CRD"),
        "versions": (True, "Kubernetes v1.30.2, Kueue v0.13.3: supported"),
    }
    kueue = await api.kueue()
    assert kueue is not None
    assert (kueue.api_versions, kueue.version) == (("v1beta1", "v1beta2"), "v0.13.3")


async def test_health_finds_nfd_and_the_gpu_operator_by_their_workloads(
    emulator: KubeEmulator, api: KubeClusterApi
) -> None:
    emulator.seed(
        k8s_nodes.allocatable_only_node(),
        workload("DaemonSet", "node-feature-discovery", "nfd-worker", "nfd:v0.16.4"),
        workload(
            "Deployment", "gpu-operator", "gpu-operator", "nvcr.io/nvidia/gpu-operator:v24.9.0"
        ),
    )

    checks = healths(await api.health())

    assert checks["nfd"] == (
        True,
        "DaemonSet node-feature-discovery/nfd-worker found; no node has feature labels yet",
    )
    assert checks["gpu_operator"] == (True, "Deployment gpu-operator/gpu-operator found")


async def test_health_reports_what_the_user_may_not_read_as_forbidden(
    emulator: KubeEmulator, api: KubeClusterApi
) -> None:
    emulator.seed(k8s_nodes.a100_gfd_node(), KUEUE_CRD, GPU_OPERATOR_CRD)
    for resource in (
        "v1/nodes",
        "apiextensions.k8s.io/v1/customresourcedefinitions",
        "apps/v1/deployments",
        "apps/v1/daemonsets",
    ):
        emulator.forbid(resource)

    checks = healths(await api.health())

    assert checks == {
        "api": (True, "reachable, Kubernetes v1.30.2"),
        "nodes": (False, "forbidden"),
        "nfd": (False, "forbidden"),
        "kueue": (False, "forbidden"),
        "gpu_operator": (False, "forbidden"),
        "versions": (True, "Kubernetes v1.30.2: supported"),
    }


async def test_kueue_without_a_readable_controller_has_no_version(
    emulator: KubeEmulator, api: KubeClusterApi
) -> None:
    emulator.seed(k8s_nodes.a100_gfd_node(), KUEUE_CRD, KUEUE_CONTROLLER)
    emulator.forbid("apps/v1/deployments")

    checks = healths(await api.health())

    assert checks["kueue"] == (True, "installed, API v1beta1, v1beta2, controller version unknown")
    assert checks["nfd"] == (True, "feature labels on 1 of 1 nodes")


async def test_health_of_a_cluster_refusing_the_credentials_raises(
    emulator: KubeEmulator,
) -> None:
    kubeconfig = kubeconfig_for(emulator, token="wrong-token-5d1e9c")
    async with await KubeClusterApi.from_kubeconfig(kubeconfig, timeouts=FAST) as api:
        with pytest.raises(ClusterConnectionError) as raised:
            await api.health()

    assert raised.value.kind == "unauthorized"
    secrets_absent(raised.value, "wrong-token-5d1e9c")


# --- kubeconfig errors ------------------------------------------------------------------------


def edited(kubeconfig: str, edit: Any) -> str:
    document = yaml.safe_load(kubeconfig)
    edit(document)
    return yaml.safe_dump(document)


SERVER = "https://10.0.0.1:6443"


async def test_invalid_yaml_is_an_invalid_kubeconfig_without_its_content() -> None:
    text = f"clusters:\n- name: a\n  user: {{token: {DEFAULT_TOKEN}\n"

    error = await connection_error(text)

    assert (error.kind, error.field) == ("invalid_kubeconfig", "kubeconfig")
    assert error.message.startswith("the kubeconfig is not valid YAML (line ")
    secrets_absent(error, DEFAULT_TOKEN)


@pytest.mark.parametrize(
    ("edit", "field", "message"),
    [
        (lambda d: d.update(contexts=[]), "context", "the kubeconfig has no contexts"),
        (
            lambda d: d.update({"current-context": "elsewhere"}),
            "context",
            "the kubeconfig's current-context 'elsewhere' is not one of its contexts (kmock)",
        ),
        (
            lambda d: d.update(
                {"current-context": None},
                contexts=[*d["contexts"], {"name": "other", "context": {"cluster": "x"}}],
            ),
            "context",
            "the kubeconfig sets no current-context: name one of its contexts (kmock, other)",
        ),
        (
            lambda d: d["clusters"][0]["cluster"].pop("server"),
            "kubeconfig",
            "cluster 'kmock-cluster' in the kubeconfig has no server URL",
        ),
        (
            lambda d: d["clusters"][0]["cluster"].update(server="ftp://10.0.0.1"),
            "kubeconfig",
            "the server of cluster 'kmock-cluster' is not an http(s) URL",
        ),
        (
            lambda d: d["contexts"][0]["context"].update(cluster="gone"),
            "kubeconfig",
            "context 'kmock' names no cluster of the kubeconfig",
        ),
        (
            lambda d: d["users"][0]["user"].update(tokenFile="/etc/shadow"),
            "kubeconfig",
            "user 'kmock-user' reads 'tokenFile' from a file; give the data inline instead "
            "(e.g. 'tokenFile-data' or 'token')",
        ),
        (
            lambda d: d["clusters"][0]["cluster"].update({"certificate-authority": "/ca.crt"}),
            "kubeconfig",
            "cluster 'kmock-cluster' reads 'certificate-authority' from a file; give the data "
            "inline instead (e.g. 'certificate-authority-data' or 'token')",
        ),
        (
            lambda d: d["users"][0]["user"].update(exec={"command": "sh", "args": ["-c", "id"]}),
            "kubeconfig",
            "user 'kmock-user' uses 'exec', which would run a program on the server; use a "
            "token or a client certificate instead",
        ),
        (
            lambda d: d["users"][0]["user"].update({"client-key-data": "not base64!"}),
            "kubeconfig",
            "'client-key-data' of user 'kmock-user' is not base64",
        ),
    ],
)
async def test_unusable_kubeconfigs_name_the_field(edit: Any, field: str, message: str) -> None:
    error = await connection_error(edited(kubeconfig_for(SERVER), edit))

    assert (error.kind, error.field, error.message) == ("invalid_kubeconfig", field, message)
    secrets_absent(error, DEFAULT_TOKEN)


async def test_an_unknown_context_is_named_with_the_known_ones() -> None:
    error = await connection_error(kubeconfig_for(SERVER), context="prod")

    assert (error.kind, error.field) == ("invalid_kubeconfig", "context")
    assert error.message == "context 'prod' is not in the kubeconfig (it has: kmock)"


def test_inspect_picks_the_only_context() -> None:
    kubeconfig = kubeconfig_for("https://k8s.example.com:6443/", current_context=False)

    summary = KubeConnector().inspect(kubeconfig, None)

    assert (summary.context, summary.server_url) == ("kmock", "https://k8s.example.com:6443")


async def test_credentials_for_a_plain_http_server_are_refused_unless_the_operator_allows() -> None:
    """Found from outside: an http:// API server was accepted, and every request sent the
    bearer token in clear. Refused at registration and at every connection (a kubeconfig stored
    before the rule), naming the kubeconfig; allowed by the operator's setting, or with no
    credentials to leak."""
    plain = kubeconfig_for("http://k8s.example.com:8080/")

    with pytest.raises(ClusterConnectionError) as refused:
        KubeConnector().inspect(plain, None)
    with pytest.raises(ClusterConnectionError) as at_connect:
        await KubeConnector().open(plain, None)
    for error in (refused.value, at_connect.value):
        assert (error.kind, error.field) == ("invalid_kubeconfig", "kubeconfig")
        assert "http://" in error.message and "token" in error.message
        secrets_absent(error, DEFAULT_TOKEN)
    assert KubeConnector(allow_plain_http=True).inspect(plain, None).server_url == (
        "http://k8s.example.com:8080"
    )
    anonymous = kubeconfig_for("http://k8s.example.com:8080/", token=None)
    assert KubeConnector().inspect(anonymous, None).context == "kmock"
    KubeConnector().inspect(kubeconfig_for("https://k8s.example.com:6443/"), None)


async def test_a_server_url_with_credentials_is_refused_without_them() -> None:
    """Found from outside: `https://user:pw@host` was accepted, then every connection attempt
    failed inside aiohttp (AUTHORIZATION with credentials in the URL) and the cluster stayed
    REGISTERING for ever, with a traceback a minute."""
    kubeconfig = kubeconfig_for("https://admin:hunter2@k8s.example.com:6443/")

    error = await connection_error(kubeconfig)

    assert (error.kind, error.field) == ("invalid_kubeconfig", "kubeconfig")
    assert "carries a user name or password" in error.message
    secrets_absent(error, "hunter2", DEFAULT_TOKEN)


def _nested(depth: int) -> str:
    return "apiVersion: v1\nextra: " + "[" * depth + "]" * depth + "\n"


BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{b}: &{b} [{', '.join(['*' + a] * 9)}]\n" for a, b in zip("abcdefg", "bcdefgh", strict=True)
)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (_nested(5000), "the kubeconfig nests deeper than 16 levels"),
        (BOMB, "the kubeconfig holds more than 20000 values"),
        ('clusters: "\\ud800"\n', "the kubeconfig is not valid YAML (line 1, column 14)"),
        ("? [a, b]\n: c\n", "the kubeconfig is not valid YAML (line 1, column 3)"),
        ("1: [a]\n", "every key in the kubeconfig must be text"),
    ],
    ids=["deeply nested", "alias bomb", "lone surrogate", "list key", "number key"],
)
async def test_hostile_yaml_is_an_invalid_kubeconfig(text: str, message: str) -> None:
    """Found from outside: nested or surrogate YAML ended in an internal error."""
    error = await connection_error(text)

    assert (error.kind, error.field, error.message) == ("invalid_kubeconfig", "kubeconfig", message)


# --- connection errors ------------------------------------------------------------------------


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A port bound but not listening: connecting is refused, and no one else can take it."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


async def test_nothing_listening_is_unreachable(closed_port: int) -> None:
    error = await connection_error(kubeconfig_for(f"http://127.0.0.1:{closed_port}"))

    assert error.kind == "unreachable"
    assert error.message.startswith(f"cannot connect to http://127.0.0.1:{closed_port} (")
    secrets_absent(error, DEFAULT_TOKEN)


async def test_an_unresolvable_host_is_unreachable() -> None:
    kubeconfig = kubeconfig_for("https://budcluster-test.invalid:6443")

    error = await connection_error(kubeconfig, timeouts=KubeTimeouts(connect=1.0, read=1.0))

    assert error.kind == "unreachable"
    assert "https://budcluster-test.invalid:6443" in error.message


async def test_a_silent_server_is_unreachable(emulator: KubeEmulator) -> None:
    never = asyncio.Event()
    emulator["get /version/"] << (lambda: never.wait(),)  # no headers, no body, ever

    error = await connection_error(
        kubeconfig_for(emulator), timeouts=KubeTimeouts(connect=1.0, read=0.3)
    )

    assert error.kind == "unreachable"
    assert error.message.endswith("did not answer to read the server version within 0.3 s")


async def test_credentials_refused_are_unauthorized(emulator: KubeEmulator) -> None:
    error = await connection_error(kubeconfig_for(emulator, token="stolen-token-0c4f"))

    assert error.kind == "unauthorized"
    assert error.message == (
        f"{str(emulator.url).rstrip('/')} did not accept the kubeconfig's credentials to read "
        "the server version (HTTP 401 Unauthorized)"
    )
    secrets_absent(error, "stolen-token-0c4f")


async def test_a_forbidden_list_is_forbidden(emulator: KubeEmulator, api: KubeClusterApi) -> None:
    emulator.forbid("v1/nodes")

    with pytest.raises(ClusterConnectionError) as raised:
        await api.list_nodes()

    assert raised.value.kind == "forbidden"
    assert "may not list nodes" in raised.value.message
    assert "HTTP 403 Forbidden" in raised.value.message


async def test_an_untrusted_server_certificate_is_an_error(pki: TestPki) -> None:
    other_ca = make_pki()
    async with running_emulator(bearer_token=None, tls=pki) as emulator:
        error = await connection_error(kubeconfig_for(emulator, token=None, pki=other_ca))

    assert error.kind == "error"
    assert "is not trusted by the kubeconfig" in error.message
    secrets_absent(error, other_ca.client_key_pem)


# --- TLS and the private temp directory -------------------------------------------------------


async def test_inline_certificates_live_in_a_private_directory_wiped_on_close(
    pki: TestPki, system_tmp: Path
) -> None:
    async with running_emulator(bearer_token=None, tls=pki) as emulator:
        emulator.seed(k8s_nodes.control_plane_node())
        kubeconfig = kubeconfig_for(emulator, token=None, pki=pki)
        api = await KubeClusterApi.from_kubeconfig(kubeconfig, timeouts=FAST)
        try:
            nodes, _ = await api.list_nodes()  # over TLS, with the client certificate
            assert names(nodes) == ["cp-01"]
            assert api.temp_dir.parent == system_tmp
            assert stat.S_IMODE(api.temp_dir.stat().st_mode) == 0o700
            written = sorted(f.read_bytes() for f in api.temp_dir.iterdir())
            assert written == sorted([pki.ca_pem, pki.client_cert_pem, pki.client_key_pem])
            assert files_in(system_tmp) == [api.temp_dir, *sorted(api.temp_dir.iterdir())]
            assert not any(
                Path(path).parent == api.temp_dir for path in kube_config._temp_files.values()
            )
        finally:
            await api.close()

        assert not api.temp_dir.exists()
        assert files_in(system_tmp) == []

        async with await KubeClusterApi.from_kubeconfig(kubeconfig, timeouts=FAST) as again:
            assert names((await again.list_nodes())[0]) == ["cp-01"]
    assert files_in(system_tmp) == []


async def test_unloadable_key_material_is_invalid_and_leaves_nothing(
    pki: TestPki, system_tmp: Path
) -> None:
    wrong_key = make_pki().client_key_pem  # a valid key, but not the certificate's
    kubeconfig = edited(
        kubeconfig_for(SERVER, token=None, pki=pki),
        lambda d: d["users"][0]["user"].update(
            {"client-key-data": base64.b64encode(wrong_key).decode()}
        ),
    )

    error = await connection_error(kubeconfig)

    assert (error.kind, error.field) == ("invalid_kubeconfig", "kubeconfig")
    assert error.message.startswith("the certificates or key inline in the kubeconfig cannot")
    assert files_in(system_tmp) == []
    secrets_absent(error, wrong_key, pki.client_key_pem)
