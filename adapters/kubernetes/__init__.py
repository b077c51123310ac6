"""Real clusters through kubernetes-asyncio: kubeconfig text in, a live connection out.

`kubeconfig` checks a kubeconfig and builds the ApiClient (inline certificates decoded into a
private directory); `connection` is the live connection (nodes, watch, health) and the connector
that opens it; `health` the checks; `errors` how failures become ClusterConnectionError. This is
the only package that imports kubernetes_asyncio.
"""

from adapters.kubernetes.connection import KubeClusterApi, KubeConnector, KubeTimeouts
from adapters.kubernetes.errors import ResourceVersionGone
from adapters.kubernetes.health import KueueInstallation
from adapters.kubernetes.kubeconfig import Kubeconfig, parse_kubeconfig

__all__ = [
    "KubeClusterApi",
    "KubeConnector",
    "KubeTimeouts",
    "Kubeconfig",
    "KueueInstallation",
    "ResourceVersionGone",
    "parse_kubeconfig",
]
