"""Cluster add-ons: what a GPU cluster needs beside Kubernetes, as Helm releases budcluster adds.

Three add-ons, each a chart pinned to one version from the chart's public repository (or a mirror
the operator names, holding the same charts under the same names): Kueue (which budcluster hands
its workloads to), Node Feature Discovery (the node labels GPU flavors select on) and the NVIDIA
GPU Operator (drivers, device plugin, GPU Feature Discovery). Only what the cluster's health
checks find missing is installed; one found there is left as it is, whoever installed it. The
supported ranges say which Kubernetes and Kueue versions budcluster works with: outside them the
cluster's health carries a warning (`versions_check`), and installing what needs them is refused.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from domain.model.cluster import HealthCheck
from domain.model.ids import ClusterId


class Addon(enum.StrEnum):
    KUEUE = "KUEUE"
    NODE_FEATURE_DISCOVERY = "NODE_FEATURE_DISCOVERY"
    GPU_OPERATOR = "GPU_OPERATOR"


class AddonState(enum.StrEnum):
    MISSING = "MISSING"
    """Not on the cluster, and not asked for (or the cluster's health has not been read)."""
    REQUESTED = "REQUESTED"
    INSTALLING = "INSTALLING"
    INSTALLED = "INSTALLED"
    FAILED = "FAILED"
    REMOVING = "REMOVING"
    """budcluster's release is being uninstalled (removeAddons); once it is gone, MISSING."""


class AddonOrigin(enum.StrEnum):
    HELM = "HELM"
    """Installed by budcluster, as a Helm release of the pinned chart."""
    FOUND = "FOUND"
    """On the cluster already (its health check found it): budcluster installed nothing."""
    BUILT_IN = "BUILT_IN"
    """A simulated cluster: what the add-on does is part of the simulation."""


Version = tuple[int, int, int]
_VERSION = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?")


def parse_version(text: str | None) -> Version | None:
    """(1, 30, 2) of "v1.30.2", "v1.30.2-eks-4f2a" or "1.30"; None when it is not a version."""
    found = _VERSION.match(text.strip()) if text else None
    if found is None:
        return None
    major, minor, patch = found.groups()
    return int(major), int(minor), int(patch or 0)


@dataclass(frozen=True)
class VersionRange:
    """From `minimum` on, up to and including every patch of the minor version `newest`
    (None: no upper bound is stated)."""

    minimum: tuple[int, int]
    newest: tuple[int, int] | None = None

    def holds(self, version: Version) -> bool:
        return version[:2] >= self.minimum and (self.newest is None or version[:2] <= self.newest)

    def __str__(self) -> str:
        low = ".".join(map(str, self.minimum))
        return (
            f"{low} or newer"
            if self.newest is None
            else f"{low} to {'.'.join(map(str, self.newest))}"
        )


UNSUPPORTED_VERSION = "UNSUPPORTED_VERSION"
"""The code of a refusal for versions outside the supported ranges (add-ons, jobs, deployments)."""

KUEUE_SUPPORTED = VersionRange((0, 13), (0, 20))
"""The Kueue versions budcluster's adapters work with (adapters/kubernetes/kueue): from v0.13,
the first serving Cohort in kueue.x-k8s.io/v1beta1 (sync.py), with v1beta1 alone until v0.15 and
v1beta2 from then on (objects.py), to v0.20, the release the adapters were last checked against
(kubernetes-sigs/kueue at ff69552, v0.20.0-devel: multikueue.py)."""


@dataclass(frozen=True)
class Chart:
    """Where an add-on's pinned chart comes from and where it goes."""

    addon: Addon
    title: str
    repository: str
    """The chart's Helm repository: an https index (`--repo`), or an oci:// registry path the
    chart's name is appended to."""
    chart: str
    version: str
    """The pinned chart version."""
    app_version: str
    release: str
    namespace: str
    check: str
    """The cluster health check that finds it (adapters/kubernetes/health.py)."""
    kubernetes: VersionRange
    """The Kubernetes versions the pinned version supports, as its project states them."""
    values: Mapping[str, Any] = field(default_factory=dict)
    needs: tuple[Addon, ...] = ()
    """Add-ons it needs on the cluster, installed with it when missing."""

    def reference(self, mirror: str | None = None) -> tuple[str, str | None]:
        """The chart reference and the `--repo` to give Helm, from `mirror` (the operator's
        repository holding the same charts under the same names) or the chart's own."""
        repository = (mirror or self.repository).rstrip("/")
        if repository.startswith("oci://"):
            return f"{repository}/{self.chart}", None
        return self.chart, repository


CHARTS: Mapping[Addon, Chart] = {
    Addon.KUEUE: Chart(
        Addon.KUEUE,
        "Kueue",
        # kueue.sigs.k8s.io/docs/installation ("Install by Helm"); the chart's version is the
        # release's (kubernetes-sigs/kueue v0.19.2: charts/kueue/Chart.yaml, site/hugo.toml)
        repository="oci://registry.k8s.io/kueue/charts",
        chart="kueue",
        version="0.19.2",
        app_version="v0.19.2",
        release="kueue",
        namespace="kueue-system",
        check="kueue",
        # v0.19.2's installation page: "A Kubernetes cluster with version 1.29 or newer"; built
        # against k8s.io/client-go v0.36 and tested end to end on kind v1.36.1 (go.mod,
        # hack/testing/e2e-common_test.sh): no newer minor is known to work
        kubernetes=VersionRange((1, 29), (1, 36)),
    ),
    Addon.NODE_FEATURE_DISCOVERY: Chart(
        Addon.NODE_FEATURE_DISCOVERY,
        "Node Feature Discovery",
        # kubernetes-sigs/node-feature-discovery v0.19.0: docs/deployment/helm.md ("Legacy Helm
        # repository"), chart version 0.19.0 (docs/_config.yml helm_chart_version)
        repository="https://kubernetes-sigs.github.io/node-feature-discovery/charts",
        chart="node-feature-discovery",
        version="0.19.0",
        app_version="v0.19.0",
        release="nfd",
        namespace="node-feature-discovery",
        check="nfd",
        # docs/get-started/introduction.md: "any recent version of Kubernetes (v1.24+)"
        kubernetes=VersionRange((1, 24)),
    ),
    Addon.GPU_OPERATOR: Chart(
        Addon.GPU_OPERATOR,
        "NVIDIA GPU Operator",
        # NVIDIA/gpu-operator v26.7.0 README ("helm repo add nvidia
        # https://helm.ngc.nvidia.com/nvidia"); NVIDIA's charts are versioned with the "v"
        repository="https://helm.ngc.nvidia.com/nvidia",
        chart="gpu-operator",
        version="v26.7.0",
        app_version="v26.7.0",
        release="gpu-operator",
        namespace="gpu-operator",
        check="gpu_operator",
        # deployments/gpu-operator/Chart.yaml: kubeVersion ">= 1.16.0-0"
        kubernetes=VersionRange((1, 16)),
        # its own copy of NFD stays off: NFD is an add-on of its own here, installed with it
        values={"nfd": {"enabled": False}},
        needs=(Addon.NODE_FEATURE_DISCOVERY,),
    ),
}
KUBERNETES_SUPPORTED = CHARTS[Addon.KUEUE].kubernetes
"""The Kubernetes versions budcluster supports: those its pinned Kueue supports."""
VERSIONS_CHECK = "versions"
"""The health check that says whether the cluster's Kubernetes and Kueue are supported."""
API_CHECK = "api"


def kubernetes_version(health: tuple[HealthCheck, ...] | list[HealthCheck]) -> Version | None:
    """The cluster's Kubernetes version, as its last `api` health check read it."""
    return next((parse_version(h.version) for h in health if h.name == API_CHECK), None)


def versions_check(kubernetes: str | None, kueue: str | None) -> HealthCheck:
    """`versions`: a warning (not ok, `warning` set) when the cluster's Kubernetes or Kueue is
    outside the supported range; a version that could not be read is said, not warned of."""
    problems, found = [], []
    k8s = parse_version(kubernetes)
    if k8s is not None:
        found.append(f"Kubernetes {kubernetes}")
        if not KUBERNETES_SUPPORTED.holds(k8s):
            problems.append(
                f"Kubernetes {kubernetes} is outside the supported {KUBERNETES_SUPPORTED}"
            )
    ours = parse_version(kueue)
    if ours is not None:
        found.append(f"Kueue {kueue}")
        if not KUEUE_SUPPORTED.holds(ours):
            problems.append(f"Kueue {kueue} is outside the supported {KUEUE_SUPPORTED}")
    if problems:
        return HealthCheck(VERSIONS_CHECK, False, "; ".join(problems), warning=True)
    said = ", ".join(found) if found else "no version could be read"
    return HealthCheck(VERSIONS_CHECK, True, f"{said}: supported")


def kubernetes_problem(
    chart: Chart, health: tuple[HealthCheck, ...] | list[HealthCheck]
) -> str | None:
    """Why the chart can't go on this cluster's Kubernetes (None: it can, or the version is
    not known yet)."""
    k8s = kubernetes_version(health)
    if k8s is None or chart.kubernetes.holds(k8s):
        return None
    return (
        f"{chart.title} {chart.app_version} supports Kubernetes {chart.kubernetes}; the cluster "
        f"runs {'.'.join(map(str, k8s))}"
    )


def kueue_outside_range(health: tuple[HealthCheck, ...] | list[HealthCheck]) -> str | None:
    """Why the Kueue found on the cluster is one budcluster can't work with (None: it can, or
    there is none, or its version is unknown)."""
    kueue = next((h for h in health if h.name == CHARTS[Addon.KUEUE].check and h.ok), None)
    version = parse_version(kueue.version) if kueue is not None else None
    if kueue is None or version is None or KUEUE_SUPPORTED.holds(version):
        return None
    return f"Kueue {kueue.version} is installed, outside the supported {KUEUE_SUPPORTED}"


def kueue_problem(health: tuple[HealthCheck, ...] | list[HealthCheck]) -> str | None:
    """Why Kueue can't be installed over the one found (None: nothing stands in the way)."""
    found = kueue_outside_range(health)
    return found and f"{found}: upgrade it (budcluster does not replace a Kueue it did not install)"


def unsupported_kueue_issue(cluster_health: tuple[HealthCheck, ...]) -> str | None:
    """Why no job or deployment is taken for a cluster (None: its Kueue is one budcluster's
    adapters speak to, or not known yet): what needs Kueue is refused outside the range."""
    found = kueue_outside_range(cluster_health)
    return found and f"{found}: budcluster hands no work to it; upgrade it first"


@dataclass
class AddonInstall:
    """The operator's latest request for an add-on on a cluster, and how it went."""

    cluster_id: ClusterId
    addon: Addon
    state: AddonState
    request_id: str
    """Names the request's task (a new request, a new task)."""
    requested_at: datetime
    requested_by: str
    updated_at: datetime
    chart_version: str
    repository: str
    """Where the chart is taken from: the chart's repository or the operator's mirror."""
    origin: AddonOrigin | None = None
    reason: str | None = None
    upgrade_from: str | None = None
    """The chart version of budcluster's own release this request upgrades (None: an install).
    Until it is INSTALLED, that version is what runs."""

    def moved(self, state: AddonState, at: datetime, reason: str | None = None) -> None:
        self.state, self.updated_at, self.reason = state, at, reason


def upgrading_from(install: AddonInstall | None, chart: Chart) -> str | None:
    """The version of budcluster's own release (origin HELM) that asking for the add-on again
    would upgrade to the pinned `chart.version`: one installed at another version (an earlier
    budcluster's pin), or an upgrade that failed or was lost. None: asking installs, or there is
    nothing to do."""
    if install is None or install.origin is not AddonOrigin.HELM:
        return None
    if install.state is AddonState.INSTALLED:
        return install.chart_version if install.chart_version != chart.version else None
    return install.upgrade_from


@dataclass(frozen=True)
class ClusterAddon:
    """An add-on on one cluster as the operator reads it: its state, where it came from, the
    version and the cluster's health check for it."""

    chart: Chart
    state: AddonState
    origin: AddonOrigin | None
    version: str | None
    reason: str | None
    health: HealthCheck | None
    requested_at: datetime | None = None
    updated_at: datetime | None = None
    repository: str | None = None
    upgrade_to: str | None = None
    """The pinned version asking again (installAddons) would upgrade budcluster's release to."""
    upgrading_from: str | None = None
    """While an upgrade is asked for, runs or failed: the version that still runs."""


def addon_view(
    chart: Chart,
    health: tuple[HealthCheck, ...] | list[HealthCheck],
    install: AddonInstall | None,
    *,
    simulated: bool = False,
) -> ClusterAddon:
    """What `install` (the latest request, if any) and the health checks say of the add-on."""
    if simulated:
        return ClusterAddon(
            chart,
            AddonState.INSTALLED,
            AddonOrigin.BUILT_IN,
            None,
            "built into the simulated cluster: nothing to install",
            None,
        )
    check = next((h for h in health if h.name == chart.check), None)
    if install is not None:  # the operator's request, as it went; its health beside it
        found = install.origin is AddonOrigin.FOUND
        upgrading = install.upgrade_from if install.state is not AddonState.INSTALLED else None
        if found:
            version = check.version if check else None
        else:  # what runs: the release's own version (the old one, until an upgrade is done)
            version = upgrading or install.chart_version
        pending = install.state in (
            AddonState.REQUESTED,
            AddonState.INSTALLING,
            AddonState.REMOVING,
        )
        upgrade = upgrading_from(install, chart) is not None and not pending
        return ClusterAddon(
            chart,
            install.state,
            install.origin,
            version,
            install.reason,
            check,
            install.requested_at,
            install.updated_at,
            install.repository,
            upgrade_to=chart.version if upgrade else None,
            upgrading_from=upgrading,
        )
    if check is not None and check.ok:
        return ClusterAddon(
            chart, AddonState.INSTALLED, AddonOrigin.FOUND, check.version, None, check
        )
    return ClusterAddon(chart, AddonState.MISSING, None, None, None, check)


def views(
    health: tuple[HealthCheck, ...] | list[HealthCheck],
    installs: Sequence[AddonInstall],
    *,
    simulated: bool = False,
) -> list[ClusterAddon]:
    """Every add-on of a cluster (its health checks, its requests), in the enum's order."""
    by_addon = {i.addon: i for i in installs}
    return [
        addon_view(chart, health, by_addon.get(addon), simulated=simulated)
        for addon, chart in CHARTS.items()
    ]
