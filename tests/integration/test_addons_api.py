"""Cluster add-ons through the GraphQL API.

On the embedded default's simulated cluster (both databases): installAddons answers that
everything is built in and installs nothing; a tenant may not ask; a bad mirror or an empty list
is a ValidationError naming the field. On Kubernetes (kmock's emulator, PostgreSQL, the
supervisor and the in-process tasks running, both Kueue API versions): what health finds is
left alone (Kueue FOUND with its version), what is missing goes to Helm as the pinned chart from
its repository or the operator's mirror, into its own namespace, and becomes INSTALLED, or FAILED
with Helm's reason when the chart can't be had; a cluster registered with add-ons gets them once
reached. Helm is tests/support/helm_standin.py, with a directory of charts standing in for the
chart repositories (none is reachable here) and every command it was given logged. A Kubernetes
older than the supported range is a `versions` warning in health, and Kueue's add-on is refused
on it naming `addons.0`. budcluster's own release is removed with `helm uninstall` (MISSING
after), while what health found is refused naming the field.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest

from adapters.db.engine import Database
from adapters.secrets.keyring import write_new_key
from budcluster.http import create_app
from budcluster.runtime import Runtime
from domain.model.addons import Addon, AddonState
from domain.model.cluster import ClusterStatus, Platform
from domain.model.ids import ClusterId
from domain.model.principal import Scope
from domain.ports.unit_of_work import TenantScope
from domain.services.registry import Registration
from tests.integration.test_app_flows import make_app
from tests.integration.test_cost_api import api_at
from tests.integration.test_fleets_api import simulated
from tests.integration.test_graphql_api import SUBMIT, Api
from tests.integration.test_kube_connection import crd, workload
from tests.integration.test_kueue_jobs_flow import status_of_cluster, until
from tests.support import k8s_nodes
from tests.support.fakes import T0, FakeClock
from tests.support.helm_standin import write_helm
from tests.support.kube_emulator import KubeEmulator, kubeconfig_for, running_emulator

INSTALL = """
mutation($cluster: ID!, $addons: [Addon!]!, $mirror: String) {
  installAddons(clusterId: $cluster, addons: $addons, mirror: $mirror) {
    __typename
    ... on Cluster { addons { name state origin version } }
    ... on ValidationError { fields { path code } }
    ... on UserError { code message }
  }
}
"""
ADDONS = """
query($id: ID!) {
  cluster(id: $id) {
    addons {
      name state origin version reason repository
      health { name ok }
      chart { repository chart version namespace kubernetesVersions }
    }
    health(checks: ["api", "versions"]) { name ok warning version detail }
  }
}
"""
KUEUE_CHART = "oci://registry.k8s.io/kueue/charts/kueue"
PENDING = ("REQUESTED", "INSTALLING", "REMOVING")
REMOVE = """
mutation($cluster: ID!, $addons: [Addon!]!) {
  removeAddons(clusterId: $cluster, addons: $addons) {
    __typename
    ... on Cluster { addons { name state origin } }
    ... on ValidationError { fields { path code } }
    ... on UserError { code message }
  }
}
"""
NFD_REPO = "https://kubernetes-sigs.github.io/node-feature-discovery/charts"
NVIDIA_REPO = "https://helm.ngc.nvidia.com/nvidia"
MIRROR = "oci://93.184.216.34/helm-mirror"
"""An address, not a name: the outbound policy judges it without DNS (none answers here)."""


# --- the simulated cluster -------------------------------------------------------------------


@pytest.fixture
async def sim(db_url: str) -> AsyncIterator[Api]:
    async with api_at(db_url, FakeClock(T0)) as made:
        made.cluster_id = str((await simulated(made, "1x8xnvidia-a100-80gb")).id)
        yield made


async def test_a_simulated_cluster_has_every_addon_built_in(sim: Api) -> None:
    operator = await sim.token(Scope.ADMIN)

    done = await sim.ok(INSTALL, {"cluster": sim.cluster_id, "addons": ["KUEUE"]}, token=operator)

    assert done["installAddons"] == {
        "__typename": "Cluster",
        "addons": [
            {"name": name, "state": "INSTALLED", "origin": "BUILT_IN", "version": None}
            for name in ("KUEUE", "NODE_FEATURE_DISCOVERY", "GPU_OPERATOR")
        ],
    }
    read = await sim.ok(ADDONS, {"id": sim.cluster_id}, token=operator)
    assert read["cluster"]["addons"][0]["chart"] == {
        "repository": "oci://registry.k8s.io/kueue/charts",
        "chart": "kueue",
        "version": "0.19.2",
        "namespace": "kueue-system",
        "kubernetesVersions": "1.29 to 1.36",
    }


async def test_only_the_operator_may_install_addons(sim: Api) -> None:
    tenant = await sim.token(Scope.CLUSTERS_READ, Scope.JOBS_WRITE)
    done = await sim.ok(INSTALL, {"cluster": sim.cluster_id, "addons": ["KUEUE"]}, token=tenant)
    assert done["installAddons"]["__typename"] == "ForbiddenError"


@pytest.mark.parametrize(
    ("variables", "path", "code"),
    [
        ({"addons": []}, "addons", "REQUIRED"),
        (
            {"addons": ["KUEUE"], "mirror": "http://93.184.216.34/helm"},
            "mirror",
            "FORBIDDEN_ENDPOINT",
        ),
        ({"addons": ["KUEUE"], "mirror": "https://127.0.0.1/helm"}, "mirror", "FORBIDDEN_ENDPOINT"),
        ({"addons": ["KUEUE"], "mirror": "oci://10.1.2.3/charts"}, "mirror", "FORBIDDEN_ENDPOINT"),
    ],
)
async def test_bad_input_is_a_validation_error_naming_the_field(
    sim: Api, variables: dict[str, Any], path: str, code: str
) -> None:
    operator = await sim.token(Scope.ADMIN)
    done = await sim.ok(INSTALL, {"cluster": sim.cluster_id, **variables}, token=operator)
    assert done["installAddons"]["__typename"] == "ValidationError"
    assert done["installAddons"]["fields"] == [{"path": path, "code": code}]


# --- Kubernetes through the emulator and the Helm stand-in -----------------------------------


def publish(charts: Path, name: str, version: str) -> None:
    """A chart as the stand-in's repositories hold it: one ConfigMap, so a release is seen."""
    chart = charts / f"{name}-{version}"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text(
        f"apiVersion: v2\nname: {name}\nversion: {version}\nappVersion: {version}\n"
    )
    (chart / "templates" / "marker.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-marker\n"
        "data:\n  chart: {{ .Chart.Name }}\n"
    )


class Kube:
    def __init__(self, api: Api, emulator: KubeEmulator, log: Path, charts: Path) -> None:
        self.api, self.emulator, self.log, self.charts = api, emulator, log, charts

    def commands(self, verb: str) -> list[list[str]]:
        lines = self.log.read_text().splitlines() if self.log.exists() else []
        return [argv for argv in map(json.loads, lines) if argv[:1] == [verb]]

    def releases(self) -> set[tuple[str, str]]:
        return {
            (obj.raw["metadata"]["namespace"], obj.raw["metadata"]["labels"]["name"])
            for (resource, _, _), obj in self.emulator.objects.items()
            if resource.plural == "secrets" and not obj.deleted
            if obj.raw["metadata"].get("labels", {}).get("owner") == "helm"
        }


@contextlib.asynccontextmanager
async def kube_world(
    db: Database, tmp_path: Path, *, kubernetes: str = "v1.30.2", kueue: str | None = None
) -> AsyncIterator[Kube]:
    """The service with Helm's stand-in, an emulator running `kubernetes`, a node without NFD's
    labels and (with `kueue`, "<api version>:<controller tag>") Kueue; nothing registered."""
    keys, charts, log = tmp_path / "keys", tmp_path / "charts", tmp_path / "helm.log"
    write_new_key(keys, bits=3072)
    publish(charts, "kueue", "0.19.2")
    publish(charts, "node-feature-discovery", "0.19.0")
    helm = write_helm(tmp_path / "bin", charts=charts, log=log)
    app = await make_app(db.url, keys_dir=keys, kube_plain_http=True, helm_executable=str(helm))
    async with running_emulator() as emulator:
        emulator.git_version = kubernetes
        emulator.seed(k8s_nodes.allocatable_only_node())
        if kueue is not None:
            version, tag = kueue.split(":")
            served = [("v1beta1", True), ("v1beta2", version == "v1beta2")]
            emulator.serve_kueue(*(v for v, on in served if on))
            emulator.seed(
                crd("clusterqueues.kueue.x-k8s.io", *served),
                workload(
                    "Deployment",
                    "kueue-system",
                    "kueue-controller-manager",
                    f"registry.k8s.io/kueue/kueue:{tag}",
                ),
            )
        runtime = Runtime(app)
        await runtime.start()
        transport = httpx.ASGITransport(app=create_app(app, manage_lifecycle=False))
        try:
            async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
                yield Kube(Api(app, client, ""), emulator, log, charts)
        finally:
            await runtime.stop()
            await app.close()


async def registered(kube: Kube) -> str:
    cluster = await kube.api.app.registry.register(
        Registration(
            name="lab", platform=Platform.ON_PREM, kubeconfig=kubeconfig_for(kube.emulator)
        )
    )
    await until(lambda: status_of_cluster(kube.api.app, cluster.id), ClusterStatus.AVAILABLE)
    return str(cluster.id)


async def addons(kube: Kube, cluster_id: str, token: str) -> dict[str, dict[str, Any]]:
    found = await kube.api.ok(ADDONS, {"id": cluster_id}, token=token)
    return {a["name"]: a for a in found["cluster"]["addons"]}


async def settled(
    kube: Kube, cluster_id: str, token: str, *names: str
) -> dict[str, dict[str, Any]]:
    """The add-ons once `names` are no longer REQUESTED, INSTALLING or REMOVING (the tasks
    ran)."""
    async with asyncio.timeout(60):
        while True:
            found = await addons(kube, cluster_id, token)
            if all(found[n]["state"] not in PENDING for n in names):
                return found
            await asyncio.sleep(0.1)


@pytest.mark.parametrize("kueue", ["v1beta1:v0.14.3", "v1beta2:v0.19.2"])
async def test_missing_addons_are_installed_as_pinned_helm_releases(
    pg: Database, tmp_path: Path, kueue: str
) -> None:
    async with kube_world(pg, tmp_path, kueue=kueue) as kube:
        cluster_id = await registered(kube)
        operator = await kube.api.token(Scope.ADMIN)
        before = await addons(kube, cluster_id, operator)
        assert {n: (a["state"], a["origin"]) for n, a in before.items()} == {
            "KUEUE": ("INSTALLED", "FOUND"),
            "NODE_FEATURE_DISCOVERY": ("MISSING", None),
            "GPU_OPERATOR": ("MISSING", None),
        }
        assert before["KUEUE"]["version"] == kueue.split(":")[1]

        done = await kube.api.ok(
            INSTALL,
            {"cluster": cluster_id, "addons": ["KUEUE", "NODE_FEATURE_DISCOVERY"]},
            token=operator,
        )
        assert [a["state"] for a in done["installAddons"]["addons"]] == [
            "INSTALLED",
            "REQUESTED",
            "MISSING",
        ]
        found = await settled(kube, cluster_id, operator, "NODE_FEATURE_DISCOVERY")

        nfd = found["NODE_FEATURE_DISCOVERY"]
        assert (nfd["state"], nfd["origin"], nfd["version"], nfd["repository"]) == (
            "INSTALLED",
            "HELM",
            "0.19.0",
            NFD_REPO,
        )
        (install,) = kube.commands("upgrade")
        assert install[1:3] == ["nfd", "node-feature-discovery"]
        assert _option(install, "--repo") == NFD_REPO
        assert _option(install, "--version") == "0.19.0"
        assert _option(install, "--namespace") == "node-feature-discovery"
        assert "--create-namespace" in install
        assert kube.releases() == {("node-feature-discovery", "nfd")}  # Kueue's left alone
        assert "node-feature-discovery" in kube.emulator.namespaces


async def test_a_mirror_is_used_and_a_chart_it_lacks_fails_with_helms_reason(
    pg: Database, tmp_path: Path
) -> None:
    async with kube_world(pg, tmp_path) as kube:
        cluster_id = await registered(kube)
        operator = await kube.api.token(Scope.ADMIN)

        await kube.api.ok(
            INSTALL,
            {"cluster": cluster_id, "addons": ["KUEUE", "GPU_OPERATOR"], "mirror": MIRROR},
            token=operator,
        )
        # the operator's need (NFD) is installed too; the operator's own chart may fail first,
        # while NFD's install still runs, so all three are waited for
        found = await settled(
            kube, cluster_id, operator, *("KUEUE", "NODE_FEATURE_DISCOVERY", "GPU_OPERATOR")
        )

        assert found["KUEUE"]["state"] == "INSTALLED"
        assert found["NODE_FEATURE_DISCOVERY"]["state"] == "INSTALLED"
        gpu = found["GPU_OPERATOR"]
        assert gpu["state"] == "FAILED"
        assert 'chart "oci://93.184.216.34/helm-mirror/gpu-operator" not found' in gpu["reason"]
        charts = {argv[2]: argv for argv in kube.commands("show")}
        assert set(charts) == {
            f"{MIRROR}/kueue",
            f"{MIRROR}/node-feature-discovery",
            f"{MIRROR}/gpu-operator",
        }
        assert _option(charts[f"{MIRROR}/gpu-operator"], "--version") == "v26.7.0"
        assert {(ns, name) for ns, name in kube.releases()} == {
            ("kueue-system", "kueue"),
            ("node-feature-discovery", "nfd"),
        }

        # once the mirror has it, asking again installs it
        publish(kube.charts, "gpu-operator", "v26.7.0")
        await kube.api.ok(
            INSTALL,
            {"cluster": cluster_id, "addons": ["GPU_OPERATOR"], "mirror": MIRROR},
            token=operator,
        )
        found = await settled(kube, cluster_id, operator, "GPU_OPERATOR")
        assert found["GPU_OPERATOR"]["state"] == "INSTALLED"
        assert ("gpu-operator", "gpu-operator") in kube.releases()


async def test_an_unsupported_kubernetes_is_a_warning_and_refuses_kueue(
    pg: Database, tmp_path: Path
) -> None:
    async with kube_world(pg, tmp_path, kubernetes="v1.27.3") as kube:
        cluster_id = await registered(kube)
        operator = await kube.api.token(Scope.ADMIN)

        read = await kube.api.ok(ADDONS, {"id": cluster_id}, token=operator)
        assert read["cluster"]["health"] == [
            {
                "name": "api",
                "ok": True,
                "warning": False,
                "version": "v1.27.3",
                "detail": "reachable, Kubernetes v1.27.3",
            },
            {
                "name": "versions",
                "ok": False,
                "warning": True,
                "version": None,
                "detail": "Kubernetes v1.27.3 is outside the supported 1.29 to 1.36",
            },
        ]
        done = await kube.api.ok(
            INSTALL, {"cluster": cluster_id, "addons": ["KUEUE"]}, token=operator
        )
        assert done["installAddons"]["__typename"] == "ValidationError"
        assert done["installAddons"]["fields"] == [
            {"path": "addons.0", "code": "UNSUPPORTED_VERSION"}
        ]
        assert kube.commands("upgrade") == []


async def test_a_cluster_registered_with_addons_gets_them_once_reached(
    pg: Database, tmp_path: Path
) -> None:
    register = """
    mutation($input: RegisterClusterInput!) {
      registerCluster(input: $input) { __typename ... on Cluster { id status } }
    }
    """
    async with kube_world(pg, tmp_path) as kube:
        operator = await kube.api.token(Scope.ADMIN)
        made = await kube.api.ok(
            register,
            {
                "input": {
                    "name": "lab",
                    "platform": "ON_PREM",
                    "kubeconfig": kubeconfig_for(kube.emulator),
                    "addons": ["NODE_FEATURE_DISCOVERY"],
                }
            },
            token=operator,
        )
        cluster_id = made["registerCluster"]["id"]

        found = await settled(kube, cluster_id, operator, "NODE_FEATURE_DISCOVERY")

        assert found["NODE_FEATURE_DISCOVERY"]["state"] == "INSTALLED"
        assert kube.releases() == {("node-feature-discovery", "nfd")}


def _option(argv: list[str], name: str) -> str | None:
    return argv[argv.index(name) + 1] if name in argv else None


async def test_a_kueue_outside_the_range_takes_no_job_and_stores_nothing(
    pg: Database, tmp_path: Path
) -> None:
    async with kube_world(pg, tmp_path, kueue="v1beta1:v0.12.1") as kube:
        cluster_id = await registered(kube)
        operator = await kube.api.token(Scope.ADMIN)
        versions = {
            h["name"]: h
            for h in (await kube.api.ok(ADDONS, {"id": cluster_id}, token=operator))["cluster"][
                "health"
            ]
        }["versions"]
        assert (versions["ok"], versions["warning"]) == (False, True)

        tenant = await kube.api.token(Scope.JOBS_READ, Scope.JOBS_WRITE)
        given = kube.api.job_input(
            clusterId=cluster_id, resources={"gpuType": None, "gpuCount": 0}, jobType="BATCH"
        )
        refused = (await kube.api.ok(SUBMIT, {"input": given}, token=tenant))["submitJob"]
        assert refused["__typename"] == "ValidationError"
        [field] = refused["fields"]
        assert (field["path"], field["code"]) == ("clusterId", "UNSUPPORTED_VERSION")
        assert "Kueue v0.12.1 is installed, outside the supported 0.13 to 0.20" in field["message"]
        assert await kube.api.count_jobs() == 0
        sent = [
            resource.plural
            for (resource, _, _), obj in kube.emulator.objects.items()
            if resource.plural in ("jobs", "workloads") and not obj.deleted
        ]
        assert sent == []


async def test_budclusters_kueue_from_an_earlier_pin_is_upgraded_in_place(
    pg: Database, tmp_path: Path
) -> None:
    read = "query($id: ID!) { cluster(id: $id) { addons { name state version upgradeTo upgradingFrom } } }"
    async with kube_world(pg, tmp_path) as kube:
        cluster_id = await registered(kube)
        operator = await kube.api.token(Scope.ADMIN)
        await kube.api.ok(INSTALL, {"cluster": cluster_id, "addons": ["KUEUE"]}, token=operator)
        await settled(kube, cluster_id, operator, "KUEUE")
        # as an earlier budcluster, whose pin was 0.18.0, would have left it
        async with kube.api.app.db.unit_of_work(TenantScope.system()) as uow:
            stored = await uow.addons.get(ClusterId(uuid.UUID(cluster_id)), Addon.KUEUE)
            assert stored is not None and stored.state is AddonState.INSTALLED
            await uow.addons.put(replace(stored, chart_version="0.18.0"))
            await uow.commit()

        async def kueue() -> dict[str, Any]:
            found = await kube.api.ok(read, {"id": cluster_id}, token=operator)
            views: list[dict[str, Any]] = found["cluster"]["addons"]
            [view] = [a for a in views if a["name"] == "KUEUE"]
            return view

        assert await kueue() == {
            "name": "KUEUE",
            "state": "INSTALLED",
            "version": "0.18.0",
            "upgradeTo": "0.19.2",
            "upgradingFrom": None,
        }
        await kube.api.ok(INSTALL, {"cluster": cluster_id, "addons": ["KUEUE"]}, token=operator)
        await settled(kube, cluster_id, operator, "KUEUE")

        assert await kueue() == {
            "name": "KUEUE",
            "state": "INSTALLED",
            "version": "0.19.2",
            "upgradeTo": None,
            "upgradingFrom": None,
        }
        installs = kube.commands("upgrade")  # pyhelm3 runs `helm upgrade --install`
        assert len(installs) == 2 and all("--install" in argv for argv in installs)
        assert _option(installs[1], "--version") == "0.19.2"
        revisions = [
            obj.raw["metadata"]["name"]
            for (resource, _, _), obj in kube.emulator.objects.items()
            if resource.plural == "secrets" and obj.raw["metadata"]["name"].startswith("sh.helm")
        ]
        assert sorted(revisions) == ["sh.helm.release.v1.kueue.v1", "sh.helm.release.v1.kueue.v2"]


async def test_budclusters_own_release_is_removed_and_what_it_found_stays(
    pg: Database, tmp_path: Path
) -> None:
    async with kube_world(pg, tmp_path, kueue="v1beta2:v0.19.2") as kube:
        cluster_id = await registered(kube)
        operator = await kube.api.token(Scope.ADMIN)
        tenant = await kube.api.token(Scope.CLUSTERS_READ, Scope.JOBS_WRITE)
        await kube.api.ok(
            INSTALL, {"cluster": cluster_id, "addons": ["NODE_FEATURE_DISCOVERY"]}, token=operator
        )
        await settled(kube, cluster_id, operator, "NODE_FEATURE_DISCOVERY")
        assert kube.releases() == {("node-feature-discovery", "nfd")}

        refused = await kube.api.ok(
            REMOVE, {"cluster": cluster_id, "addons": ["KUEUE", "GPU_OPERATOR"]}, token=operator
        )
        assert refused["removeAddons"]["__typename"] == "ValidationError"
        assert refused["removeAddons"]["fields"] == [
            {"path": "addons.0", "code": "NOT_INSTALLED_BY_BUDCLUSTER"},  # FOUND
            {"path": "addons.1", "code": "NOT_INSTALLED_BY_BUDCLUSTER"},  # MISSING
        ]
        forbidden = await kube.api.ok(
            REMOVE, {"cluster": cluster_id, "addons": ["NODE_FEATURE_DISCOVERY"]}, token=tenant
        )
        assert forbidden["removeAddons"]["__typename"] == "ForbiddenError"

        asked = await kube.api.ok(
            REMOVE, {"cluster": cluster_id, "addons": ["NODE_FEATURE_DISCOVERY"]}, token=operator
        )
        states = {a["name"]: a["state"] for a in asked["removeAddons"]["addons"]}
        assert states["NODE_FEATURE_DISCOVERY"] == "REMOVING"
        found = await settled(kube, cluster_id, operator, "NODE_FEATURE_DISCOVERY")
        assert {n: (a["state"], a["origin"]) for n, a in found.items()} == {
            "KUEUE": ("INSTALLED", "FOUND"),
            "NODE_FEATURE_DISCOVERY": ("MISSING", None),
            "GPU_OPERATOR": ("MISSING", None),
        }
        (uninstall,) = kube.commands("uninstall")
        assert uninstall[1] == "nfd"
        assert _option(uninstall, "--namespace") == "node-feature-discovery"
        assert kube.releases() == set()  # the release and what it made are gone
        markers = [
            key
            for key, obj in kube.emulator.objects.items()
            if key[0].plural == "configmaps" and not obj.deleted
            if obj.raw["metadata"]["name"] == "nfd-marker"
        ]
        assert markers == []


async def test_a_release_uninstalled_by_hand_is_removed_all_the_same(
    pg: Database, tmp_path: Path
) -> None:
    async with kube_world(pg, tmp_path, kueue="v1beta2:v0.19.2") as kube:
        cluster_id = await registered(kube)
        operator = await kube.api.token(Scope.ADMIN)
        await kube.api.ok(
            INSTALL, {"cluster": cluster_id, "addons": ["NODE_FEATURE_DISCOVERY"]}, token=operator
        )
        await settled(kube, cluster_id, operator, "NODE_FEATURE_DISCOVERY")
        for obj in [  # `helm uninstall nfd` run by the operator, not budcluster
            obj.raw
            for (resource, _, _), obj in list(kube.emulator.objects.items())
            if resource.plural == "secrets" and not obj.deleted
            if obj.raw["metadata"]["name"].startswith("sh.helm.release.v1.nfd.")
        ]:
            await kube.emulator.delete_object(obj)
        assert kube.releases() == set()

        await kube.api.ok(
            REMOVE, {"cluster": cluster_id, "addons": ["NODE_FEATURE_DISCOVERY"]}, token=operator
        )
        found = await settled(kube, cluster_id, operator, "NODE_FEATURE_DISCOVERY")
        assert found["NODE_FEATURE_DISCOVERY"]["state"] == "MISSING"  # not FAILED: it is gone
        assert (
            len(kube.commands("uninstall")) == 1
        )  # `release: not found` is done (pyhelm3), not retried
