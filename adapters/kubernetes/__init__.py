"""Real clusters through kubernetes-asyncio: kubeconfig text in, a live connection out.

`kubeconfig` checks a kubeconfig and builds the ApiClient (inline certificates decoded into a
private directory); `connection` is the live connection (objects by API path, nodes, watch,
health) and the connector that opens it; `cluster` the same cluster in the domain's terms (the
ClusterApi port: nodes, node changes, health, the quota model); `health` the checks; `errors` how
failures become ClusterConnectionError. Every Kubernetes shape lives here: `inventory` reads Node
objects (NFD and GPU discovery labels), `kueue` renders and reads Kueue's objects, batch Jobs and
Workloads, and `gateway` runs jobs with them. This is the only package that imports
kubernetes_asyncio.
"""

from adapters.kubernetes.cluster import KubeCluster
from adapters.kubernetes.connection import KubeClusterApi, KubeConnector, KubeTimeouts
from adapters.kubernetes.errors import ObjectConflict, ResourceVersionGone
from adapters.kubernetes.health import KueueInstallation
from adapters.kubernetes.kubeconfig import Kubeconfig, parse_kubeconfig

__all__ = [
    "KubeCluster",
    "KubeClusterApi",
    "KubeConnector",
    "KubeTimeouts",
    "Kubeconfig",
    "KueueInstallation",
    "ObjectConflict",
    "ResourceVersionGone",
    "parse_kubeconfig",
]
