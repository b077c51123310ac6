"""Helm releases on a cluster: how a SERVICE job's attempt is installed."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

SHIPPED_CHART = "bud-service"
"""The chart budcluster ships for DOCKER services (adapters/helm/charts/bud-service)."""
SHIPPED_VLLM_CHART = "bud-vllm"
"""The chart budcluster ships for model deployments (adapters/helm/charts/bud-vllm)."""
SHIPPED_CHARTS = frozenset({SHIPPED_CHART, SHIPPED_VLLM_CHART})


@dataclass(frozen=True)
class ReleaseSpec:
    """A Helm release to install (or find installed): one attempt of a SERVICE job, or a
    cluster add-on."""

    name: str
    namespace: str
    chart: str
    """A chart reference Helm understands, or the name of a chart budcluster ships
    (SHIPPED_CHARTS)."""
    values: Mapping[str, Any] = field(default_factory=dict)
    repo: str | None = None
    version: str | None = None
    create_namespace: bool = False
    """Make the namespace if missing (a cluster add-on's own); a tenant's is budcluster's."""
    upgrade: bool = False
    """A release already there by this name is upgraded to this chart, version and values
    (`helm upgrade --install`) instead of being left as it is."""

    @property
    def shipped(self) -> bool:
        return self.chart in SHIPPED_CHARTS and self.repo is None


@dataclass(frozen=True)
class ReleaseInfo:
    name: str
    namespace: str
    status: str
    """Helm's: deployed, failed, pending-install, uninstalling..."""


class ReleaseRejected(Exception):
    """Helm refused the release for good (no such chart, values its schema rejects, a template
    that fails): retrying the same hand-over would fail the same way."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class HelmReleases(Protocol):
    """Helm releases on one cluster. Methods raise GatewayUnavailable (Helm or the cluster
    can't be reached; try again) or ReleaseRejected."""

    async def install(self, release: ReleaseSpec) -> None:
        """Install the release; one already there by that name is left as it is, unless the
        spec asks to upgrade it."""

    async def uninstall(self, name: str, namespace: str) -> None:
        """Remove the release; one already gone is fine."""

    async def releases(self) -> list[ReleaseInfo]:
        """Every release on the cluster, in all namespaces."""
