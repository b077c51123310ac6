"""Cluster add-ons: Kueue, Node Feature Discovery and the NVIDIA GPU Operator on one cluster."""

from __future__ import annotations

import uuid
from datetime import datetime

import strawberry

from domain.model import addons as model
from domain.model import cluster as cluster_model
from domain.model.addons import Addon, AddonOrigin, AddonState
from domain.model.ids import ClusterId
from schema.context import Info
from schema.types.cluster import HealthCheck, operator_text, sees_servers

strawberry.enum(Addon, description="What a GPU cluster needs beside Kubernetes.")
strawberry.enum(
    AddonState,
    description="MISSING (not on the cluster, not asked for), REQUESTED, INSTALLING, INSTALLED "
    "or FAILED (with the reason).",
)
strawberry.enum(
    AddonOrigin,
    description="HELM (budcluster installed the pinned chart), FOUND (there before: nothing "
    "installed) or BUILT_IN (a simulated cluster).",
)


@strawberry.type(description="The pinned chart budcluster installs an add-on from.")
class AddonChart:
    repository: str = strawberry.field(
        description="The chart's public Helm repository (an https index or an oci:// path)."
    )
    chart: str
    version: str = strawberry.field(description="The pinned chart version.")
    app_version: str
    release: str = strawberry.field(description="The Helm release's name.")
    namespace: str
    kubernetes_versions: str = strawberry.field(
        description="The Kubernetes versions the pinned version supports, e.g. 1.29 to 1.36."
    )

    @classmethod
    def from_domain(cls, chart: model.Chart) -> AddonChart:
        return cls(
            repository=chart.repository,
            chart=chart.chart,
            version=chart.version,
            app_version=chart.app_version,
            release=chart.release,
            namespace=chart.namespace,
            kubernetes_versions=str(chart.kubernetes),
        )


@strawberry.type(description="An add-on as it stands on one cluster, with its health.")
class ClusterAddon:
    name: Addon
    title: str
    state: AddonState
    origin: AddonOrigin | None
    version: str | None = strawberry.field(
        description="The chart version of budcluster's release (HELM: the one that runs, the "
        "old one until an upgrade is done), or the version the cluster runs (FOUND, when the "
        "health check read it)."
    )
    reason: str | None = strawberry.field(description="Why it FAILED, or what was found.")
    health: HealthCheck | None = strawberry.field(
        description="The cluster's health check for it (nfd, kueue, gpu_operator), as of the "
        "last sync."
    )
    requested_at: datetime | None
    updated_at: datetime | None
    repository: str | None = strawberry.field(
        description="Where the chart was taken from: its repository or the operator's mirror "
        "(needs clusters:write)."
    )
    chart: AddonChart
    upgrade_to: str | None = strawberry.field(
        description="The pinned version installAddons would upgrade budcluster's release to "
        "(it runs another: an earlier budcluster's pin, or an upgrade that failed); null when "
        "there is none. A release budcluster did not install (FOUND) is never upgraded."
    )
    upgrading_from: str | None = strawberry.field(
        description="While an upgrade is asked for, runs or has FAILED: the version that still "
        "runs."
    )

    @classmethod
    def from_domain(cls, view: model.ClusterAddon, info: Info) -> ClusterAddon:
        return cls(
            name=view.chart.addon,
            title=view.chart.title,
            state=view.state,
            origin=view.origin,
            version=view.version,
            reason=operator_text(info, view.reason),
            health=HealthCheck.from_domain(view.health, info) if view.health else None,
            requested_at=view.requested_at,
            updated_at=view.updated_at,
            repository=view.repository if sees_servers(info) else None,
            chart=AddonChart.from_domain(view.chart),
            upgrade_to=view.upgrade_to,
            upgrading_from=view.upgrading_from,
        )


async def addons_of(
    info: Info, cluster_id: str, checks: tuple[cluster_model.HealthCheck, ...], *, real: bool
) -> list[ClusterAddon]:
    """A cluster's add-ons: its requests (one read for every cluster of the request) and its
    health checks."""
    installs = await info.context.loaders.addons.load(ClusterId(uuid.UUID(cluster_id)))
    found = model.views(checks, installs, simulated=not real)
    return [ClusterAddon.from_domain(v, info) for v in found]
