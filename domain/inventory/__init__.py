"""The node inventory of a real cluster: Kubernetes Node objects read into the domain's Nodes.

Pure functions over the JSON the Kubernetes API returns, so the adapter that lists nodes only
fetches, and every rule about labels, quantities and GPU names is tested without a cluster.
"""

from domain.inventory.gpu_types import normalize_gpu_type
from domain.inventory.hardware import (
    CpuInfo,
    DetectionMethod,
    GpuInfo,
    HardwareInfo,
    detect_hardware,
)
from domain.inventory.nodes import node_from_k8s
from domain.inventory.quantity import parse_quantity

__all__ = [
    "CpuInfo",
    "DetectionMethod",
    "GpuInfo",
    "HardwareInfo",
    "detect_hardware",
    "node_from_k8s",
    "normalize_gpu_type",
    "parse_quantity",
]
