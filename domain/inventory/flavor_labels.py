"""The node label a GPU type's ResourceFlavor selects its nodes by.

A flavor's nodeLabels are part of the quota model: they say which nodes a flavor's workloads go
to. On a real cluster, the label that singles out nodes of one GPU product is the product label
its discovery daemon writes (NVIDIA GPU Feature Discovery, the AMD node labeller, Habana feature
discovery), else the cloud's instance type. Reading the rest of a node's discovery labels is the
Kubernetes adapter's business (adapters/kubernetes/inventory).
"""

from __future__ import annotations

from collections.abc import Mapping

GFD_PRODUCT = "nvidia.com/gpu.product"
AMD_PRODUCT = "amd.com/gpu.product-name"
AMD_BETA_PRODUCT = "beta.amd.com/gpu.product-name"
HABANA_PRODUCT = "habana.ai/product.name"
INSTANCE_TYPE = "node.kubernetes.io/instance-type"
_PRODUCT_KEYS = (GFD_PRODUCT, AMD_PRODUCT, AMD_BETA_PRODUCT, HABANA_PRODUCT, INSTANCE_TYPE)


def product_selector(labels: Mapping[str, str]) -> dict[str, str]:
    """The node label that singles out nodes of this GPU product, as a ResourceFlavor's
    nodeLabels: the discovery daemons' product label as found on the node (NVIDIA GFD, the AMD
    labeller, Habana), else the cloud's instance type; empty when the node has none of them."""
    for key in _PRODUCT_KEYS:
        value = labels.get(key)
        if value:
            return {key: value}
    return {}
