"""The node labels hardware discovery writes, with where each name was checked.

- NVIDIA GPU Feature Discovery (GFD), now in NVIDIA/k8s-device-plugin: internal/lm/resource.go
  (nvidia.com/gpu.product, .count, .memory in MiB, .family, .compute.major/.minor; the product is
  the NVML name with spaces as "-", plus "-SHARED" when time-sliced and "-MIG-<profile>" under the
  single MIG strategy), internal/lm/nvml.go (nvidia.com/cuda.driver.major/minor/rev, the newer
  nvidia.com/cuda.driver-version.full and nvidia.com/cuda.runtime-version.full,
  nvidia.com/mig.capable), internal/lm/machine-type.go (nvidia.com/gpu.machine). Older drivers name
  products without the "NVIDIA-" prefix ("A100-PCIE-40GB", "Tesla-T4").
- AMD GPU node labeller, ROCm/k8s-device-plugin cmd/k8s-node-labeller/main.go: for each property
  (product-name, device-id, family, vram, cu-count, simd-count) `amd.com/gpu.<p>=<value>` when all
  GPUs agree, else `amd.com/gpu.<p>.<value>=<count>`; the experimental forms
  `beta.amd.com/gpu.<p>=<value>` and `beta.amd.com/gpu.<p>.<value>=<count>` are written too;
  `amd.com/gpu.driver-version=<v>`. Product names have spaces as "_" and no parentheses; vram is
  whole GiB with "G" ("192G").
- Habana feature discovery (HabanaAI/habanalabs-feature-discovery README): habana.ai/device.count,
  habana.ai/driver.version, habana.ai/machine.type. habana.ai/product.name ("Intel-Gaudi-2-96GB")
  and habana.ai/device.memory (MiB) are not in Habana's docs; they are what third-party code reads
  (llm-d workload-variant-autoscaler), so they are read when present.
- Node Feature Discovery (kubernetes-sigs/node-feature-discovery docs/usage/features.md): cpu-model.
  vendor_id ("Intel", "AMD", "ARM"), cpu-model.family, cpu-model.id, cpu-cpuid.<FLAG> (AVX512F,
  AMXTILE, AMXBF16, AMXINT8), cpu-hardware_multithreading, kernel-version.full,
  system-os_release.ID / VERSION_ID, and pci-<fields>.present, where <fields> are the configured
  deviceLabelFields joined by "_" (default class_vendor, "pci-0302_10de"; the GPU operators
  configure vendor only, "pci-10de"; vendor_device gives "pci-1da3_1020"). PCI vendors: 10de NVIDIA,
  1002 AMD, 1da3 Habana (the Gaudi operator docs check pci-1da3.present).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

# The product labels are the quota model's too (a flavor selects its nodes by them).
from domain.inventory.flavor_labels import GFD_PRODUCT as GFD_PRODUCT
from domain.inventory.flavor_labels import HABANA_PRODUCT as HABANA_PRODUCT

NFD = "feature.node.kubernetes.io/"
CPU_VENDOR = NFD + "cpu-model.vendor_id"
CPU_FAMILY = NFD + "cpu-model.family"
CPU_MODEL = NFD + "cpu-model.id"
CPU_MULTITHREADING = NFD + "cpu-hardware_multithreading"
CPUID = NFD + "cpu-cpuid."
AMX_FLAGS = ("AMXTILE", "AMXBF16", "AMXINT8")
KERNEL_VERSION = NFD + "kernel-version.full"
OS_ID = NFD + "system-os_release.ID"
OS_VERSION = NFD + "system-os_release.VERSION_ID"

GFD_COUNT = "nvidia.com/gpu.count"
GFD_MEMORY_MIB = "nvidia.com/gpu.memory"
GFD_FAMILY = "nvidia.com/gpu.family"
GFD_COMPUTE_MAJOR = "nvidia.com/gpu.compute.major"
GFD_COMPUTE_MINOR = "nvidia.com/gpu.compute.minor"
GFD_MACHINE = "nvidia.com/gpu.machine"
GFD_DRIVER = "nvidia.com/cuda.driver-version.full"
GFD_DRIVER_PARTS = ("nvidia.com/cuda.driver.major", "nvidia.com/cuda.driver.minor")
GFD_DRIVER_REV = "nvidia.com/cuda.driver.rev"
GFD_RUNTIME = "nvidia.com/cuda.runtime-version.full"
GFD_RUNTIME_PARTS = ("nvidia.com/cuda.runtime.major", "nvidia.com/cuda.runtime.minor")
GFD_MIG_CAPABLE = "nvidia.com/mig.capable"
GFD_MIG_STRATEGY = "nvidia.com/mig.strategy"
GPU_OPERATOR_KEYS = ("nvidia.com/gpu.present", "nvidia.com/gpu.deploy.")
"""Set by the GPU operator (or by hand), not by discovery: they say nothing about the product."""

AMD_PREFIXES = ("amd.com/gpu.", "beta.amd.com/gpu.")
AMD_DRIVER = "amd.com/gpu.driver-version"
AMD_PARTITION = "amd.com/compute-memory-partition"

HABANA_PREFIX = "habana.ai/"
HFD_COUNT = "habana.ai/device.count"
HFD_DRIVER = "habana.ai/driver.version"
HFD_MACHINE = "habana.ai/machine.type"
HABANA_MEMORY_MIB = "habana.ai/device.memory"

CONTROL_PLANE_ROLES = ("node-role.kubernetes.io/control-plane", "node-role.kubernetes.io/master")
ARCH = "kubernetes.io/arch"

_GPU_DISCOVERY_PREFIXES = (
    "nvidia.com/gpu.",
    "nvidia.com/cuda.",
    "nvidia.com/gfd.",
    *AMD_PREFIXES,
    HABANA_PREFIX,
)
_WHOLE = re.compile(r"[0-9]+")
_NFD_NAMESPACE = re.compile(r"^([a-z0-9.-]+\.)?(feature|profile)\.node\.kubernetes\.io/")
_NFD_PCI = re.compile(
    r"^([a-z0-9.-]+\.)?feature\.node\.kubernetes\.io/pci-(?P<fields>[0-9a-f_]+)\.present$"
)


def is_nfd_label(key: str) -> bool:
    """NFD's own namespaces and their sub-domains (e.g. intel.feature.node.kubernetes.io)."""
    return _NFD_NAMESPACE.match(key) is not None


def is_gpu_discovery_label(key: str) -> bool:
    """A label one of the vendors' GPU feature discovery daemons writes."""
    if key.startswith(GPU_OPERATOR_KEYS):
        return False
    return key.startswith(_GPU_DISCOVERY_PREFIXES)


def nfd_pci_devices(labels: Mapping[str, str], vendor_id: str) -> tuple[bool, frozenset[str]]:
    """Whether NFD saw a PCI device of `vendor_id`, and the device ids it named (if configured).

    The device id is the field after the vendor, present when deviceLabelFields lists "device".
    """
    present = False
    devices: set[str] = set()
    for key, value in labels.items():
        match = _NFD_PCI.match(key)
        if match is None or value != "true":
            continue
        fields = match["fields"].split("_")
        if vendor_id not in fields:
            continue
        present = True
        after = fields.index(vendor_id) + 1
        if after < len(fields):
            devices.add(fields[after])
    return present, frozenset(devices)


def amd_property(labels: Mapping[str, str], name: str) -> tuple[str | None, int | None]:
    """An AMD labeller property: its (majority) value and how many GPUs have a value.

    `amd.com/gpu.<name>=<value>` when the GPUs agree, else `amd.com/gpu.<name>.<value>=<count>`;
    the `beta.` forms carry the count even when the GPUs agree.
    """
    value: str | None = None
    for prefix in AMD_PREFIXES:
        if value is None and labels.get(prefix + name):
            value = labels[prefix + name]
    counts: dict[str, int] = {}
    for prefix in AMD_PREFIXES:
        stem = f"{prefix}{name}."
        for key, count in labels.items():
            if key.startswith(stem) and is_whole(count):
                counts.setdefault(key[len(stem) :], int(count))
    if value is None and counts:
        value = max(counts, key=lambda v: counts[v])
    return value, (sum(counts.values()) if counts else None)


def is_whole(text: str | None) -> bool:
    """ASCII digits only (str.isdigit also accepts "²" and other scripts' digits)."""
    return text is not None and _WHOLE.fullmatch(text) is not None


def whole(text: str | None) -> int | None:
    return int(text) if text is not None and is_whole(text) else None


def label_int(labels: Mapping[str, str], key: str) -> int | None:
    """A label holding a whole number; absent, empty or not a number gives None."""
    return whole(labels.get(key))


def label_bool(labels: Mapping[str, str], key: str) -> bool | None:
    text = labels.get(key)
    return None if text is None else text.lower() == "true"
