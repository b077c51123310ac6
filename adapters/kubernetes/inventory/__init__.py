"""The node inventory of a real cluster: Kubernetes Node objects read into the domain's Nodes.

Pure functions over the JSON the Kubernetes API returns, so the connection that lists nodes only
fetches, and every rule about labels, quantities and GPU names is tested without a cluster.
"""

from adapters.kubernetes.inventory.hardware import (
    CpuInfo,
    DetectionMethod,
    GpuInfo,
    HardwareInfo,
    detect_hardware,
)
from adapters.kubernetes.inventory.nodes import node_from_k8s
from adapters.kubernetes.quantity import parse_quantity

__all__ = [
    "CpuInfo",
    "DetectionMethod",
    "GpuInfo",
    "HardwareInfo",
    "detect_hardware",
    "node_from_k8s",
    "parse_quantity",
]
