"""Node inventory: Kubernetes Node objects read into domain Nodes.

Covers:
- each fixture node (GFD A100 and H100, AMD MI300X, Gaudi, control plane, allocatable only): node
  type, GPU type and count, CPU and memory, detection method, NFD flag, hardware_info, readiness,
  schedulability, taints, internal IP, and raw quantities kept as reported;
- the detection order (GFD or a vendor labeller, then NFD PCI labels, then allocatable) on
  variants of those nodes: NFD without GFD, labels without allocatable, devices not offered,
  cordoned and unreachable nodes, MIG and Gaudi generations;
- Kubernetes quantity parsing, valid and junk;
- the GPU type normalizer;
- malformed objects, which are a ValueError naming the field;
- a connection's nodes in the domain's terms (KubeCluster): a node that can't be read is skipped,
  the watch goes on from the listing's resourceVersion, then from the last event's (a skipped one
  too), and from the new listing's after a new list; a deletion is reported by name.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest

from adapters.kubernetes.api import Json
from adapters.kubernetes.cluster import KubeCluster
from adapters.kubernetes.inventory import node_from_k8s, parse_quantity
from domain.inventory import normalize_gpu_type, product_selector
from domain.model.cluster import Cluster, ClusterStatus, HealthCheck, Node, NodeType, Platform
from domain.model.ids import ClusterId, NodeId
from domain.services.quota_defaults import default_quotas
from tests.support import k8s_nodes
from tests.support.k8s_nodes import cordon, not_ready

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
CLUSTER = ClusterId(uuid.UUID("6f1c2d3e-4a5b-4c6d-8e7f-901234567890"))
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}
CONTROL_PLANE_TAINT = {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}


def cpu(
    vendor: str | None,
    family: int | None,
    model: int | None,
    cores: float,
    *,
    avx512: bool | None,
    amx: bool | None,
    threads: int | None = 2,
) -> dict[str, Any]:
    return {
        "vendor": vendor,
        "model": model,
        "family": family,
        "cores": cores,
        "threads_per_core": threads,
        "avx512": avx512,
        "amx": amx,
        "arch": "amd64",
    }


def unnamed(vendor: str, count: int, *, source: str) -> dict[str, Any]:
    """An accelerator whose product no label names."""
    return {
        "vendor": vendor,
        "product": None,
        "count": count,
        "memory_mb": None,
        "driver": None,
        "compute_capability": None,
        "family": None,
        "source": source,
    }


NODES: dict[str, dict[str, Any]] = {
    "a100-gfd": {
        "fixture": k8s_nodes.a100_gfd_node,
        "name": "ip-10-0-12-34.ec2.internal",
        "node_type": NodeType.GPU,
        "gpu_type": "nvidia-a100-80gb",
        "gpu_count": 8,
        "cpu_cores": 95.69,
        "memory_gb": 1111.14,
        "detection_method": "gfd",
        "nfd_detected": True,
        "ready": True,
        "schedulable": True,
        "internal_ip": "10.0.12.34",
        "taints": [GPU_TAINT],
        "accelerator": (
            "gpu",
            {
                "vendor": "nvidia",
                "product": "NVIDIA-A100-SXM4-80GB",
                "count": 8,
                "memory_mb": 81920,
                "driver": "535.183.01",
                "compute_capability": "8.0",
                "family": "ampere",
                "source": "nvidia-gpu-feature-discovery",
                "cuda_runtime": "12.2",
                "machine": "p4de.24xlarge",
                "mig_capable": True,
            },
        ),
        "cpu": cpu("Intel", 6, 85, 96.0, avx512=True, amx=False),
        "kernel": "5.10.219-208.866.amzn2.x86_64",
        "os": "Amazon Linux 2",
    },
    "h100-gfd-deprecated-labels": {
        "fixture": k8s_nodes.h100_gfd_node,
        "name": "dgx-h100-07",
        "node_type": NodeType.GPU,
        "gpu_type": "nvidia-h100-80gb",
        "gpu_count": 8,
        "cpu_cores": 222.0,
        "memory_gb": 2005.55,
        "detection_method": "gfd",
        "nfd_detected": True,
        "ready": True,
        "schedulable": True,
        "internal_ip": "172.20.3.17",
        "taints": [],
        "accelerator": (
            "gpu",
            {
                "vendor": "nvidia",
                "product": "NVIDIA-H100-80GB-HBM3",
                "count": 8,
                "memory_mb": 81559,
                "driver": "535.104.05",
                "compute_capability": "9.0",
                "family": "hopper",
                "source": "nvidia-gpu-feature-discovery",
                "cuda_runtime": "12.2",
                "machine": "DGXH100",
                "mig_capable": True,
            },
        ),
        "cpu": cpu("Intel", 6, 143, 224.0, avx512=True, amx=True),
        "kernel": "5.15.0-105-generic",
        "os": "Ubuntu 22.04.4 LTS",
    },
    "mi300x-amd-labeller": {
        "fixture": k8s_nodes.mi300x_node,
        "name": "mi300x-node-01",
        "node_type": NodeType.GPU,
        "gpu_type": "amd-mi300x",
        "gpu_count": 8,
        "cpu_cores": 382.0,
        "memory_gb": 2194.26,
        "detection_method": "gfd",
        "nfd_detected": True,
        "ready": True,
        "schedulable": True,
        "internal_ip": "172.20.5.21",
        "taints": [],
        "accelerator": (
            "gpu",
            {
                "vendor": "amd",
                "product": "AMD_Instinct_MI300X_OAM",
                "count": 8,
                "memory_mb": 196608,
                "driver": "6.8.5",
                "compute_capability": None,
                "family": "AI",
                "source": "amd-gpu-node-labeller",
                "compute_memory_partition": "spx_nps1",
                "cu_count": 304,
                "device_id": "74a1",
                "simd_count": 1216,
            },
        ),
        "cpu": cpu("AMD", 25, 17, 384.0, avx512=True, amx=False),
        "kernel": "5.15.0-113-generic",
        "os": "Ubuntu 22.04.4 LTS",
    },
    "gaudi-nfd-vendor-only": {
        "fixture": k8s_nodes.gaudi_node,
        "name": "gaudi-node-03",
        "node_type": NodeType.HPU,
        "gpu_type": "intel-gaudi",
        "gpu_count": 8,
        "cpu_cores": 158.0,
        "memory_gb": 937.52,
        "detection_method": "nfd",
        "nfd_detected": True,
        "ready": True,
        "schedulable": True,
        "internal_ip": "172.20.7.3",
        "taints": [],
        "accelerator": ("hpu", unnamed("intel", 8, source="node-feature-discovery")),
        "cpu": cpu("Intel", 6, 106, 160.0, avx512=True, amx=False),
        "kernel": "5.15.0-113-generic",
        "os": "Ubuntu 22.04.4 LTS",
    },
    "control-plane": {
        "fixture": k8s_nodes.control_plane_node,
        "name": "cp-01",
        "node_type": NodeType.MASTER,
        "gpu_type": None,
        "gpu_count": 0,
        "cpu_cores": 16.0,
        "memory_gb": 62.69,
        "detection_method": "nfd",
        "nfd_detected": True,
        "ready": True,
        "schedulable": True,
        "internal_ip": "172.20.1.10",
        "taints": [CONTROL_PLANE_TAINT],
        "accelerator": None,
        "cpu": cpu("Intel", 6, 106, 16.0, avx512=True, amx=False),
        "kernel": "5.15.0-105-generic",
        "os": "Ubuntu 22.04.4 LTS",
    },
    "allocatable-only": {
        "fixture": k8s_nodes.allocatable_only_node,
        "name": "ip-10-0-40-7.ec2.internal",
        "node_type": NodeType.GPU,
        "gpu_type": "nvidia-gpu",
        "gpu_count": 4,
        "cpu_cores": 47.81,
        "memory_gb": 183.69,
        "detection_method": "allocatable",
        "nfd_detected": False,
        "ready": True,
        "schedulable": True,
        "internal_ip": "10.0.40.7",
        "taints": [],
        "accelerator": ("gpu", unnamed("nvidia", 4, source="allocatable")),
        "cpu": cpu(None, None, None, 48.0, avx512=None, amx=None, threads=None),
        "kernel": "5.10.217-205.860.amzn2.x86_64",
        "os": "Amazon Linux 2",
        "fallback": "no NFD labels: from allocatable",
    },
}


def parse(obj: dict[str, Any]) -> Node:
    return node_from_k8s(obj, CLUSTER)


@pytest.mark.parametrize("case", NODES.values(), ids=NODES.keys())
def test_fixture_nodes_parse_in_full(case: dict[str, Any]) -> None:
    obj = case["fixture"]()
    node = parse(obj)

    assert node.id == NodeId(uuid.uuid5(CLUSTER, case["name"]))
    assert node.cluster_id == CLUSTER
    for attribute in (
        "name",
        "node_type",
        "gpu_type",
        "gpu_count",
        "cpu_cores",
        "memory_gb",
        "detection_method",
        "nfd_detected",
        "ready",
        "schedulable",
        "internal_ip",
        "taints",
    ):
        assert getattr(node, attribute) == case[attribute], attribute
    expected_info: dict[str, Any] = {
        "cpu": case["cpu"],
        "kernel": case["kernel"],
        "os": case["os"],
    }
    if case["accelerator"] is not None:
        kind, accelerator = case["accelerator"]
        expected_info[kind] = accelerator
    if "fallback" in case:
        expected_info["fallback"] = case["fallback"]
    assert node.hardware_info == expected_info
    assert json.loads(json.dumps(node.hardware_info)) == node.hardware_info
    assert node.labels == obj["metadata"]["labels"]
    assert node.allocatable == obj["status"]["allocatable"]
    assert node.capacity == obj["status"]["capacity"]
    assert [c["type"] for c in node.conditions] == [
        "MemoryPressure",
        "DiskPressure",
        "PIDPressure",
        "Ready",
    ]
    assert node.conditions[-1] == {
        "type": "Ready",
        "status": "True",
        "reason": "KubeletReady",
        "message": "kubelet is posting ready status",
        "lastTransitionTime": k8s_nodes.CREATED,
    }


def test_fixtures_are_fresh_and_listable() -> None:
    first, second = k8s_nodes.a100_gfd_node(), k8s_nodes.a100_gfd_node()
    first["metadata"]["labels"]["team"] = "ml"
    assert "team" not in second["metadata"]["labels"]
    listing = k8s_nodes.node_list()
    assert listing["kind"] == "NodeList"
    names = [item["metadata"]["name"] for item in listing["items"]]
    assert len(set(names)) == len(names) == 6
    uids = {item["metadata"]["uid"] for item in listing["items"]}
    assert len(uids) == 6


def test_node_id_may_be_given() -> None:
    given = NodeId(uuid.uuid4())
    assert node_from_k8s(k8s_nodes.gaudi_node(), CLUSTER, node_id=given).id == given


def _labels(obj: dict[str, Any]) -> dict[str, str]:
    labels: dict[str, str] = obj["metadata"]["labels"]
    return labels


def _without_gfd(obj: dict[str, Any]) -> dict[str, Any]:
    """The node as NFD alone labels it (the GPU operator's own labels stay)."""
    labels = _labels(obj)
    for key in [k for k in labels if k.startswith("nvidia.com/")]:
        if not key.startswith(("nvidia.com/gpu.present", "nvidia.com/gpu.deploy.")):
            del labels[key]
    return obj


def _without_pci_gpu(obj: dict[str, Any]) -> dict[str, Any]:
    """NFD runs, but its PCI source does not list the GPUs (e.g. a narrower class whitelist)."""
    del _labels(_without_gfd(obj))["feature.node.kubernetes.io/pci-10de.present"]
    return obj


def _nfd_class_vendor_fields(obj: dict[str, Any]) -> dict[str, Any]:
    """NFD's default PCI label fields, class and vendor: pci-0302_10de for a 3D controller."""
    labels = _labels(_without_gfd(obj))
    del labels["feature.node.kubernetes.io/pci-10de.present"]
    labels["feature.node.kubernetes.io/pci-0302_10de.present"] = "true"
    return obj


def _amd_nfd_vendor_device_fields(obj: dict[str, Any]) -> dict[str, Any]:
    """No AMD labeller; NFD configured to label vendor and device: pci-1002_74a1."""
    labels = _labels(obj)
    for key in [k for k in labels if k.startswith(("amd.com/", "beta.amd.com/"))]:
        del labels[key]
    del labels["feature.node.kubernetes.io/pci-1002.present"]
    labels["feature.node.kubernetes.io/pci-1002_74a1.present"] = "true"
    return obj


def _drop_allocatable(resource: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def change(obj: dict[str, Any]) -> dict[str, Any]:
        del obj["status"]["allocatable"][resource]
        del obj["status"]["capacity"][resource]
        return obj

    return change


def _with_labels(labels: dict[str, str]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def change(obj: dict[str, Any]) -> dict[str, Any]:
        _labels(obj).update(labels)
        return obj

    return change


def _set(key: str, value: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def change(obj: dict[str, Any]) -> dict[str, Any]:
        _labels(obj)[key] = value
        return obj

    return change


def _amd_beta_only(obj: dict[str, Any]) -> dict[str, Any]:
    """An older labeller: only the beta per-value counts, device id but no product name."""
    labels = _labels(obj)
    for key in [k for k in labels if k.startswith(("amd.com/gpu.", "beta.amd.com/gpu."))]:
        del labels[key]
    labels["beta.amd.com/gpu.device-id.74a1"] = "8"
    labels["beta.amd.com/gpu.family.AI"] = "8"
    labels["beta.amd.com/gpu.vram.192G"] = "8"
    return _drop_allocatable("amd.com/gpu")(obj)


def _offer_none(obj: dict[str, Any]) -> dict[str, Any]:
    obj["status"]["allocatable"]["nvidia.com/gpu"] = "0"
    return obj


def _gfd_on_control_plane(obj: dict[str, Any]) -> dict[str, Any]:
    _labels(obj)["node-role.kubernetes.io/control-plane"] = ""
    return obj


VARIANTS: dict[str, tuple[Callable[[], dict[str, Any]], Callable[..., Any], dict[str, Any]]] = {
    "nfd-pci-without-gfd": (
        k8s_nodes.a100_gfd_node,
        _without_gfd,
        {
            "gpu_type": "nvidia-gpu",
            "gpu_count": 8,
            "detection_method": "nfd",
            "nfd_detected": True,
            "node_type": NodeType.GPU,
        },
    ),
    "nfd-default-class-vendor-fields": (
        k8s_nodes.a100_gfd_node,
        _nfd_class_vendor_fields,
        {"gpu_type": "nvidia-gpu", "gpu_count": 8, "detection_method": "nfd"},
    ),
    "amd-nfd-vendor-device-fields": (
        k8s_nodes.mi300x_node,
        _amd_nfd_vendor_device_fields,
        {"gpu_type": "amd-mi300x", "gpu_count": 8, "detection_method": "nfd", "nfd_detected": True},
    ),
    "nfd-without-gpu-labels-falls-back-to-allocatable": (
        k8s_nodes.a100_gfd_node,
        _without_pci_gpu,
        {
            "gpu_type": "nvidia-gpu",
            "gpu_count": 8,
            "detection_method": "allocatable",
            "nfd_detected": True,
            "fallback": "no GPU discovery labels: from allocatable",
        },
    ),
    "gfd-count-when-allocatable-lacks-the-resource": (
        k8s_nodes.h100_gfd_node,
        _drop_allocatable("nvidia.com/gpu"),
        {"gpu_type": "nvidia-h100-80gb", "gpu_count": 8, "node_type": NodeType.GPU},
    ),
    "gpus-not-offered-make-a-worker": (
        k8s_nodes.a100_gfd_node,
        _offer_none,
        {"gpu_type": "nvidia-a100-80gb", "gpu_count": 0, "node_type": NodeType.WORKER},
    ),
    "control-plane-with-gpus-is-master": (
        k8s_nodes.a100_gfd_node,
        _gfd_on_control_plane,
        {"gpu_count": 8, "node_type": NodeType.MASTER},
    ),
    "mig-single-strategy": (
        k8s_nodes.a100_gfd_node,
        _set("nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB-MIG-1g.10gb"),
        {"gpu_type": "nvidia-a100-80gb-mig-1g-10gb", "detection_method": "gfd"},
    ),
    "amd-beta-labels-device-id-and-label-count": (
        k8s_nodes.mi300x_node,
        _amd_beta_only,
        {"gpu_type": "amd-mi300x", "gpu_count": 8, "detection_method": "gfd"},
    ),
    "gaudi-nfd-vendor-and-device": (
        k8s_nodes.gaudi_node,
        _set("feature.node.kubernetes.io/pci-1da3_1020.present", "true"),
        {"gpu_type": "intel-gaudi2", "detection_method": "nfd", "node_type": NodeType.HPU},
    ),
    "gaudi-habana-labels": (
        k8s_nodes.gaudi_node,
        _with_labels(
            {
                "habana.ai/product.name": "Intel-Gaudi-3-128GB",
                "habana.ai/device.count": "8",
                "habana.ai/driver.version": "1.18.0-ee698fb",
            }
        ),
        {"gpu_type": "intel-gaudi3", "detection_method": "gfd", "gpu_count": 8},
    ),
    "cordoned": (
        k8s_nodes.h100_gfd_node,
        cordon,
        {
            "schedulable": False,
            "ready": True,
            "taints": [{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}],
        },
    ),
    "kubelet-silent": (
        k8s_nodes.mi300x_node,
        not_ready,
        {
            "ready": False,
            "schedulable": True,
            "taints": [
                {"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule"},
                {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"},
            ],
        },
    ),
}


@pytest.mark.parametrize("fixture, change, expected", VARIANTS.values(), ids=VARIANTS.keys())
def test_detection_variants(
    fixture: Callable[[], dict[str, Any]],
    change: Callable[[dict[str, Any]], dict[str, Any]],
    expected: dict[str, Any],
) -> None:
    node = parse(change(fixture()))
    for attribute, value in expected.items():
        if attribute == "fallback":
            assert node.hardware_info.get("fallback") == value
        else:
            assert getattr(node, attribute) == value, attribute


def test_gaudi_labels_fill_hpu_facts() -> None:
    obj = _with_labels(
        {
            "habana.ai/product.name": "Intel-Gaudi-2-96GB",
            "habana.ai/device.memory": "98304",
            "habana.ai/driver.version": "1.18.0-ee698fb",
        }
    )(k8s_nodes.gaudi_node())
    hpu = parse(obj).hardware_info["hpu"]
    assert hpu["product"] == "Intel-Gaudi-2-96GB"
    assert hpu["memory_mb"] == 98304
    assert hpu["driver"] == "1.18.0-ee698fb"
    assert hpu["source"] == "habana-feature-discovery"


def test_a_bare_node_gets_defaults() -> None:
    node = parse({"metadata": {"name": "bare"}})
    assert (node.node_type, node.gpu_type, node.gpu_count) == (NodeType.WORKER, None, 0)
    assert (node.cpu_cores, node.memory_gb) == (0.0, 0.0)
    assert node.ready is False, "no Ready condition: not ready, as Kubernetes treats it"
    assert node.schedulable is True
    assert (node.labels, node.taints, node.conditions, node.internal_ip) == ({}, [], [], None)
    assert (node.detection_method, node.nfd_detected) == ("allocatable", False)
    assert node.hardware_info["fallback"] == "no NFD labels: from allocatable"


def test_json_numbers_are_accepted_as_quantities() -> None:
    obj = {"metadata": {"name": "n"}, "status": {"allocatable": {"cpu": 8, "memory": "16Gi"}}}
    node = parse(obj)
    assert (node.cpu_cores, node.memory_gb, node.allocatable["cpu"]) == (8.0, 16.0, "8")


def test_memory_falls_back_to_capacity() -> None:
    obj = {"metadata": {"name": "n"}, "status": {"capacity": {"cpu": "4", "memory": "8Gi"}}}
    assert (parse(obj).cpu_cores, parse(obj).memory_gb) == (4.0, 8.0)


@pytest.mark.parametrize(
    "text, value",
    [
        ("96", Decimal(96)),
        ("0", Decimal(0)),
        ("250m", Decimal("0.25")),
        ("95690m", Decimal("95.69")),
        ("1.5", Decimal("1.5")),
        (".5", Decimal("0.5")),
        ("1.", Decimal(1)),
        ("+2", Decimal(2)),
        ("-1", Decimal(-1)),
        ("515863796Ki", Decimal(515863796 * 1024)),
        ("512Gi", Decimal(512 * 2**30)),
        ("1.5Gi", Decimal(3 * 2**29)),
        ("60Gi", Decimal(60 * 2**30)),
        ("2Ti", Decimal(2 * 2**40)),
        ("1Mi", Decimal(2**20)),
        ("1e3", Decimal(1000)),
        ("1E3", Decimal(1000)),
        ("1e-3", Decimal("0.001")),
        ("2k", Decimal(2000)),
        ("1M", Decimal(10**6)),
        ("1G", Decimal(10**9)),
        ("1E", Decimal(10**18)),
        ("100n", Decimal("0.0000001")),
        ("5u", Decimal("0.000005")),
        ("8", Decimal(8)),
        ("95551679124", Decimal(95551679124)),
    ],
)
def test_quantities(text: str, value: Decimal) -> None:
    assert parse_quantity(text) == value


@pytest.mark.parametrize(
    "text",
    [
        "",
        "abc",
        "12x",
        "1KiB",
        "1ki",
        "1K",
        "1 Gi",
        " 1",
        "1 ",
        "1e",
        "Gi",
        "1.2.3",
        "--1",
        "1Ki1",
        "0x10",
        "1e999999",
        "NaN",
        "Infinity",
        "1,5",
        "\u0661",  # a digit, but not an ASCII one
    ],
)
def test_junk_quantities_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="Kubernetes quantity"):
        parse_quantity(text)


def test_a_quantity_must_be_a_string() -> None:
    with pytest.raises(ValueError, match="expected a string"):
        parse_quantity(96)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "product, vendor, gpu_type",
    [
        ("NVIDIA-A100-SXM4-80GB", None, "nvidia-a100-80gb"),
        ("NVIDIA-A100-SXM4-40GB", None, "nvidia-a100-40gb"),
        ("NVIDIA-A100-PCIE-40GB", None, "nvidia-a100-40gb"),
        ("NVIDIA-A100-80GB-PCIe", None, "nvidia-a100-80gb"),
        ("A100-PCIE-40GB", "nvidia", "nvidia-a100-40gb"),
        ("NVIDIA-H100-80GB-HBM3", None, "nvidia-h100-80gb"),
        ("NVIDIA-H100-SXM5-80GB", None, "nvidia-h100-80gb"),
        ("NVIDIA-H100-PCIe", None, "nvidia-h100"),
        ("NVIDIA-H100-NVL", None, "nvidia-h100-nvl"),
        ("NVIDIA-H200", None, "nvidia-h200"),
        ("NVIDIA-L40S", None, "nvidia-l40s"),
        ("NVIDIA-A10G", None, "nvidia-a10g"),
        ("Tesla-T4", None, "nvidia-tesla-t4"),
        ("NVIDIA-T4", None, "nvidia-tesla-t4"),
        ("Tesla-V100-SXM2-16GB", None, "nvidia-tesla-v100-16gb"),
        ("NVIDIA-GeForce-RTX-4090", None, "nvidia-geforce-rtx-4090"),
        ("NVIDIA-A100-SXM4-40GB-MIG-1g.5gb", None, "nvidia-a100-40gb-mig-1g-5gb"),
        ("NVIDIA-A100-SXM4-40GB-SHARED", None, "nvidia-a100-40gb-shared"),
        ("AMD_Instinct_MI300X_OAM", None, "amd-mi300x"),
        ("AMD_Instinct_MI300X_VF", None, "amd-mi300x"),
        ("AMD-MI300X-192G", None, "amd-mi300x"),
        ("AMD_Instinct_MI325X_OAM", None, "amd-mi325x"),
        ("AMD_Instinct_MI210", None, "amd-mi210"),
        ("Intel-Gaudi-2-96GB", None, "intel-gaudi2"),
        ("Gaudi3", None, "intel-gaudi3"),
        ("HL-225", "intel", "intel-gaudi2"),
        ("Gaudi", None, "intel-gaudi"),
        ("Some Vendor X1 (rev 2)", None, "some-vendor-x1-rev-2"),
        ("  Weird__Accel.9000  ", None, "weird-accel-9000"),
    ],
)
def test_gpu_type_normalizer(product: str, vendor: str | None, gpu_type: str) -> None:
    assert normalize_gpu_type(product, vendor) == gpu_type


@pytest.mark.parametrize("product", ["", "   ", "---", "()"])
def test_gpu_type_needs_a_name(product: str) -> None:
    with pytest.raises(ValueError):
        normalize_gpu_type(product)


_DELETE = object()


def _broken(*path: str, value: Any) -> dict[str, Any]:
    """The A100 node with the field at `path` set to `value` (or deleted)."""
    obj = k8s_nodes.a100_gfd_node()
    *parents, last = path
    target = obj
    for part in parents:
        target = target[part]
    if value is _DELETE:
        del target[last]
    else:
        target[last] = value
    return obj


@pytest.mark.parametrize(
    "obj, message",
    [
        ([], "must be a mapping"),
        ({}, "no metadata.name"),
        ({"metadata": None}, "no metadata.name"),
        ({"metadata": "node-1"}, "metadata must be an object"),
        (_broken("metadata", "name", value=_DELETE), "no metadata.name"),
        (_broken("metadata", "name", value=""), "no metadata.name"),
        (_broken("metadata", "name", value=7), "no metadata.name"),
        (_broken("metadata", "labels", value=["a"]), "labels must be an object"),
        (_broken("metadata", "labels", "team", value=3), "must map a string to a string"),
        (_broken("status", "allocatable", "cpu", value="12x"), r"allocatable\['cpu'\].*'12x'"),
        (_broken("status", "capacity", "memory", value="lots"), r"capacity\['memory'\]"),
        (_broken("status", "allocatable", "nvidia.com/gpu", value="1.5"), "whole, non-negative"),
        (_broken("status", "allocatable", "pods", value=True), "must be a quantity string"),
        (_broken("spec", "unschedulable", value="yes"), "unschedulable must be true or false"),
        (_broken("spec", "taints", value=[{"key": "a"}]), "needs a key and an effect"),
        (_broken("spec", "taints", value="nvidia.com/gpu"), "taints must be a list"),
        (_broken("status", "conditions", value=[{"status": "True"}]), "needs a type"),
        (_broken("status", "addresses", value=[None]), "addresses entries must be objects"),
        (_broken("status", value=[]), "status must be an object"),
    ],
)
def test_malformed_objects_are_refused(obj: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        node_from_k8s(obj, CLUSTER)


@pytest.mark.parametrize(
    ("make", "selector"),
    [
        (k8s_nodes.a100_gfd_node, {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}),
        (k8s_nodes.h100_gfd_node, {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}),
        (k8s_nodes.mi300x_node, {"amd.com/gpu.product-name": "AMD_Instinct_MI300X_OAM"}),
        (k8s_nodes.allocatable_only_node, {"node.kubernetes.io/instance-type": "g5.12xlarge"}),
        (k8s_nodes.gaudi_node, {}),  # NFD PCI ids only: habana.ai/gaudi alone confines the pods
    ],
)
def test_flavors_select_nodes_by_the_product_label_they_carry(
    make: Callable[[], dict[str, Any]], selector: dict[str, str]
) -> None:
    cluster_id = ClusterId(uuid.uuid4())
    node = node_from_k8s(make(), cluster_id)
    assert product_selector(node.labels) == selector
    cluster = Cluster(
        id=cluster_id,
        name="real",
        platform=Platform.ON_PREM,
        status=ClusterStatus.AVAILABLE,
        created_at=NOW,
        updated_at=NOW,
        nodes=[node],
    )
    flavors, queue = default_quotas(cluster, NOW)
    gpu_flavor = next(f for f in flavors if f.name != "default-cpu")
    assert gpu_flavor.node_labels == selector
    assert queue.resource_groups[0].flavors[0].flavor == gpu_flavor.name


# --- a connection's nodes in the domain's terms -------------------------------------------------


class NodesOnly:
    """The node reads of a Kubernetes API (KubeApi), scripted; nothing else is served."""

    def __init__(self, nodes: list[Json], watches: list[list[tuple[str, Json]]]) -> None:
        self.nodes = nodes
        self.watches = watches
        self.watched_from: list[str] = []

    async def server_version(self) -> str:
        return "v1.30.2"

    async def list_nodes(self) -> tuple[list[Json], str]:
        return [dict(n) for n in self.nodes], "100"

    async def watch_nodes(self, resource_version: str) -> AsyncIterator[tuple[str, Json]]:
        self.watched_from.append(resource_version)
        for event in self.watches.pop(0):
            yield event

    async def health(self) -> list[HealthCheck]:
        return []

    async def served_versions(self, group: str) -> list[str]:
        return []

    async def served_resources(self, group_version: str) -> set[str]:
        return set()

    async def get_object(
        self, path: str, *, query: list[tuple[str, str]] | None = None
    ) -> Json | None:
        return None

    async def list_objects(
        self, path: str, *, label_selector: str | None = None
    ) -> tuple[list[Json], str]:
        return [], ""

    def watch_objects(
        self, path: str, resource_version: str, *, label_selector: str | None = None
    ) -> AsyncIterator[tuple[str, Json]]:
        raise NotImplementedError

    async def patch_object(self, path: str, patch: Json) -> Json | None:
        return None

    async def apply_status(self, path: str, obj: Json, *, field_manager: str) -> Json | None:
        return None

    async def create_object(self, path: str, obj: Json) -> Json:
        raise NotImplementedError

    async def replace_object(self, path: str, obj: Json) -> Json:
        raise NotImplementedError

    async def delete_object(self, path: str) -> None:
        return None

    async def close(self) -> None:
        return None


def _versioned(obj: dict[str, Any], version: str) -> dict[str, Any]:
    return {**obj, "metadata": {**obj["metadata"], "resourceVersion": version}}


async def test_a_clusters_nodes_skip_what_cant_be_read_and_its_watch_goes_on() -> None:
    broken = _broken("status", "allocatable", "cpu", value="12x")
    a100, h100 = k8s_nodes.a100_gfd_node(), k8s_nodes.h100_gfd_node()
    api = NodesOnly(
        [a100, broken],
        [
            [
                ("ADDED", _versioned(h100, "101")),
                ("DELETED", {"metadata": {"name": a100["metadata"]["name"]}}),
                ("MODIFIED", _versioned(broken, "105")),  # can't be read: skipped
            ],
            [],
            [],
        ],
    )
    cluster = KubeCluster(api, cluster_id=CLUSTER)

    assert await cluster.nodes() == [node_from_k8s(a100, CLUSTER)]
    changes = [change async for change in cluster.watch_nodes()]
    assert [(c.name, c.node.name if c.node else None) for c in changes] == [
        ("dgx-h100-07", "dgx-h100-07"),
        (a100["metadata"]["name"], None),
    ]
    assert changes[0].node == node_from_k8s(h100, CLUSTER)
    assert [change async for change in cluster.watch_nodes()] == []
    await cluster.nodes()
    assert [change async for change in cluster.watch_nodes()] == []
    assert api.watched_from == ["100", "105", "100"]
