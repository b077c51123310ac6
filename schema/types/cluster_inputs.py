"""Inputs of the real-cluster mutations, and the messages of `clusterUpdates`."""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated

import strawberry

from domain.model.addons import Addon
from domain.model.events import ClusterState
from schema.types.addons import ClusterAddon  # noqa: F401  (registers the add-on enums)
from schema.types.cluster import Node
from schema.types.enums import ClusterStatus, Platform


@strawberry.input(description="A Kubernetes or OpenShift cluster to manage.")
class RegisterClusterInput:
    name: str = strawberry.field(description="A DNS-1123 label, unique among clusters.")
    platform: Platform = strawberry.field(description="ON_PREM, EKS, AKS or OPENSHIFT.")
    kubeconfig: str = strawberry.field(
        description="The kubeconfig, as YAML text (at most 1 MiB). Stored sealed; never "
        "returned or logged."
    )
    context: str | None = strawberry.field(
        default=None, description="The context to use (default: the kubeconfig's current one)."
    )
    ingress_url: str | None = None
    enable_master_node: bool = strawberry.field(
        default=False, description="Count control-plane nodes in the capacity."
    )
    addons: list[Addon] | None = strawberry.field(
        default=None,
        description="Add-ons to install once the cluster is reached, if missing (as "
        "installAddons).",
    )
    addons_mirror: str | None = strawberry.field(
        default=None, description="The Helm repository to take them from (installAddons' mirror)."
    )


@strawberry.input(description="What to change; fields left out stay as they are.")
class UpdateClusterInput:
    name: str | None = None
    kubeconfig: str | None = strawberry.field(
        default=None, description="A new kubeconfig: the cluster connects again."
    )
    context: str | None = None
    ingress_url: str | None = strawberry.field(
        default=None, description="An empty string clears it."
    )
    enable_master_node: bool | None = None


@strawberry.input(
    description="A new price of one GPU of a type for an hour on a cluster, from now on "
    "(what ran before keeps its price)."
)
class SetGpuPriceInput:
    cluster_id: strawberry.ID
    gpu_type: str = strawberry.field(
        description="As the cluster's nodes name it (Node.gpuType), e.g. nvidia-a100-80gb."
    )
    hourly_price: Decimal = strawberry.field(
        description="0 to 100000, at most 4 decimals, in the unit of Job.estimatedCost."
    )


@strawberry.type(description="A cluster's status and nodes, as of `sequence`.")
class ClusterSnapshot:
    sequence: int
    status: ClusterStatus
    reason: str | None
    nodes: list[Node]
    snapshot_reason: str = strawberry.field(
        description="subscribed, history-gone, unknown-since or resync (as for JobSnapshot)."
    )


@strawberry.type(description="The cluster after a change of its status (STATUS) or nodes (NODES).")
class ClusterChange:
    sequence: int
    kind: str
    status: ClusterStatus
    reason: str | None
    nodes: list[Node]


ClusterUpdate = Annotated[ClusterSnapshot | ClusterChange, strawberry.union("ClusterUpdate")]


def nodes_of(state: ClusterState) -> list[Node]:
    return [Node.from_domain(n) for n in state.nodes]
