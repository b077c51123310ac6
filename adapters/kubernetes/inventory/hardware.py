"""What a node's hardware is, read from its discovery labels and, failing those, its allocatable.

Accelerators are identified in order of how much the source knows: a vendor's GPU feature
discovery daemon (NVIDIA GFD, the AMD node labeller, Habana feature discovery) names the product,
so the method is "gfd"; Node Feature Discovery's PCI labels name only the vendor (and the device
id, when NFD is configured to label it), so the method is "nfd"; with neither, the device plugin's
extended resource in allocatable gives the vendor and count, and the method is "allocatable". A
node without accelerators is "nfd" when NFD labelled it and "allocatable" otherwise. The label
names, and where each was checked, are in `labels`.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any

from adapters.kubernetes.inventory import labels as lb
from domain.inventory.gpu_types import (
    amd_type_for_device,
    gaudi_generation_for_device,
    gaudi_type,
    normalize_gpu_type,
)
from domain.model.quota import AMD_GPU, GAUDI, NVIDIA_GPU


class DetectionMethod(enum.StrEnum):
    GFD = "gfd"
    NFD = "nfd"
    ALLOCATABLE = "allocatable"


class AcceleratorKind(enum.StrEnum):
    GPU = "gpu"
    HPU = "hpu"


@dataclass(frozen=True)
class Vendor:
    name: str
    resource: str
    """The extended resource its device plugin advertises."""
    pci_id: str
    generic_type: str
    """The gpu_type when the product is not known."""
    kind: AcceleratorKind = AcceleratorKind.GPU


NVIDIA = Vendor("nvidia", NVIDIA_GPU, "10de", "nvidia-gpu")
AMD = Vendor("amd", AMD_GPU, "1002", "amd-gpu")
INTEL_GAUDI = Vendor("intel", GAUDI, "1da3", gaudi_type(None), AcceleratorKind.HPU)
VENDORS = (NVIDIA, AMD, INTEL_GAUDI)


@dataclass(frozen=True)
class GpuInfo:
    """One node's accelerators (GPUs, or Gaudi HPUs), all of one product."""

    vendor: str
    product: str | None
    count: int
    memory_mb: int | None = None
    """Per device, in MiB, as the labellers report it."""
    driver: str | None = None
    compute_capability: str | None = None
    family: str | None = None
    source: str = "allocatable"
    """Which labeller said so, e.g. nvidia-gpu-feature-discovery, node-feature-discovery."""
    details: Mapping[str, str | int | bool] = field(default_factory=dict)
    """Vendor-specific facts: CUDA runtime, MIG capability, compute units, device id, ..."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "vendor": self.vendor,
            "product": self.product,
            "count": self.count,
            "memory_mb": self.memory_mb,
            "driver": self.driver,
            "compute_capability": self.compute_capability,
            "family": self.family,
            "source": self.source,
            **dict(sorted(self.details.items())),
        }


@dataclass(frozen=True)
class CpuInfo:
    vendor: str | None = None
    """NFD's cpu-model.vendor_id: Intel, AMD, ARM."""
    model: int | None = None
    family: int | None = None
    cores: float | None = None
    """Logical CPUs the kubelet counts (capacity), hyper-threads included."""
    threads_per_core: int | None = None
    """2 when NFD reports hardware multithreading, 1 when it reports none, else unknown."""
    avx512: bool | None = None
    amx: bool | None = None
    arch: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "vendor": self.vendor,
            "model": self.model,
            "family": self.family,
            "cores": self.cores,
            "threads_per_core": self.threads_per_core,
            "avx512": self.avx512,
            "amx": self.amx,
            "arch": self.arch,
        }


@dataclass(frozen=True)
class HardwareInfo:
    cpu: CpuInfo
    accelerator: GpuInfo | None = None
    accelerator_kind: AcceleratorKind = AcceleratorKind.GPU
    kernel: str | None = None
    os: str | None = None
    fallback: str | None = None
    """Why the facts came from allocatable rather than labels, when they did."""

    def to_dict(self) -> dict[str, Any]:
        """The JSON-serializable form stored as Node.hardware_info."""
        info: dict[str, Any] = {"cpu": self.cpu.to_dict()}
        if self.accelerator is not None:
            info[self.accelerator_kind.value] = self.accelerator.to_dict()
        info["kernel"] = self.kernel
        info["os"] = self.os
        if self.fallback:
            info["fallback"] = self.fallback
        return info


@dataclass(frozen=True)
class Hardware:
    """Everything node_from_k8s needs from detection."""

    info: HardwareInfo
    vendor: Vendor | None
    gpu_type: str | None
    gpu_count: int
    method: DetectionMethod
    nfd_detected: bool


@dataclass(frozen=True)
class _Reading:
    vendor: Vendor
    gpu_type: str
    label_count: int | None
    info: GpuInfo


def detect_hardware(
    labels: Mapping[str, str],
    *,
    device_counts: Mapping[str, int],
    cpu_capacity: Decimal | None,
    node_info: Mapping[str, str],
) -> Hardware:
    """`device_counts`: whole allocatable counts by extended resource (nvidia.com/gpu, ...)."""
    nfd = any(lb.is_nfd_label(k) for k in labels)
    reading, method, fallback = _identify(labels, device_counts, nfd=nfd)
    count = 0
    accelerator: GpuInfo | None = None
    if reading is not None:
        allocatable = device_counts.get(reading.vendor.resource)
        count = allocatable if allocatable is not None else (reading.label_count or 0)
        accelerator = replace(reading.info, count=count)
    info = HardwareInfo(
        cpu=_cpu(labels, cpu_capacity),
        accelerator=accelerator,
        accelerator_kind=reading.vendor.kind if reading else AcceleratorKind.GPU,
        kernel=node_info.get("kernelVersion") or labels.get(lb.KERNEL_VERSION),
        os=node_info.get("osImage") or _nfd_os(labels),
        fallback=fallback,
    )
    return Hardware(
        info=info,
        vendor=reading.vendor if reading else None,
        gpu_type=reading.gpu_type if reading else None,
        gpu_count=count,
        method=method,
        nfd_detected=nfd or any(lb.is_gpu_discovery_label(k) for k in labels),
    )


def _identify(
    labels: Mapping[str, str], device_counts: Mapping[str, int], *, nfd: bool
) -> tuple[_Reading | None, DetectionMethod, str | None]:
    """The accelerator, how it was found, and why labels did not say, when they did not."""
    for read in _LABELLERS:
        reading = read(labels)
        if reading is not None:
            return reading, DetectionMethod.GFD, None
    reading = _from_nfd_pci(labels) if nfd else None
    if reading is not None:
        return reading, DetectionMethod.NFD, None
    reading = _from_allocatable(device_counts)
    if not nfd:
        return reading, DetectionMethod.ALLOCATABLE, "no NFD labels: from allocatable"
    if reading is not None:
        return reading, DetectionMethod.ALLOCATABLE, "no GPU discovery labels: from allocatable"
    return None, DetectionMethod.NFD, None


def _from_gfd(labels: Mapping[str, str]) -> _Reading | None:
    product = labels.get(lb.GFD_PRODUCT)
    if not product:
        return None
    major, minor = labels.get(lb.GFD_COMPUTE_MAJOR), labels.get(lb.GFD_COMPUTE_MINOR)
    details = {
        "cuda_runtime": labels.get(lb.GFD_RUNTIME) or _joined(labels, lb.GFD_RUNTIME_PARTS),
        "machine": labels.get(lb.GFD_MACHINE),
        "mig_capable": lb.label_bool(labels, lb.GFD_MIG_CAPABLE),
        "mig_strategy": labels.get(lb.GFD_MIG_STRATEGY),
    }
    info = GpuInfo(
        vendor=NVIDIA.name,
        product=product,
        count=0,
        memory_mb=lb.label_int(labels, lb.GFD_MEMORY_MIB),
        driver=labels.get(lb.GFD_DRIVER) or _nvidia_driver(labels),
        compute_capability=f"{major}.{minor}" if major and minor else None,
        family=labels.get(lb.GFD_FAMILY),
        source="nvidia-gpu-feature-discovery",
        details={k: v for k, v in details.items() if v is not None},
    )
    gpu_type = normalize_gpu_type(product, NVIDIA.name)
    return _Reading(NVIDIA, gpu_type, lb.label_int(labels, lb.GFD_COUNT), info)


def _from_amd_labeller(labels: Mapping[str, str]) -> _Reading | None:
    if not any(k.startswith(lb.AMD_PREFIXES) for k in labels):
        return None
    product, product_count = lb.amd_property(labels, "product-name")
    device_id, device_count = lb.amd_property(labels, "device-id")
    family, family_count = lb.amd_property(labels, "family")
    vram = lb.amd_property(labels, "vram")[0]
    details = {
        "device_id": device_id,
        "cu_count": lb.whole(lb.amd_property(labels, "cu-count")[0]),
        "simd_count": lb.whole(lb.amd_property(labels, "simd-count")[0]),
        "compute_memory_partition": labels.get(lb.AMD_PARTITION),
    }
    info = GpuInfo(
        vendor=AMD.name,
        product=product,
        count=0,
        memory_mb=_gib_label_to_mib(vram),
        driver=labels.get(lb.AMD_DRIVER) or None,
        family=family,
        source="amd-gpu-node-labeller",
        details={k: v for k, v in details.items() if v is not None},
    )
    if product:
        gpu_type = normalize_gpu_type(product, AMD.name)
    else:
        gpu_type = amd_type_for_device(device_id or "") or AMD.generic_type
    return _Reading(AMD, gpu_type, product_count or device_count or family_count, info)


def _from_habana(labels: Mapping[str, str]) -> _Reading | None:
    if not any(k.startswith(lb.HABANA_PREFIX) for k in labels):
        return None
    product = labels.get(lb.HABANA_PRODUCT)
    details = {"machine": labels.get(lb.HFD_MACHINE)}
    info = GpuInfo(
        vendor=INTEL_GAUDI.name,
        product=product,
        count=0,
        memory_mb=lb.label_int(labels, lb.HABANA_MEMORY_MIB),
        driver=labels.get(lb.HFD_DRIVER),
        source="habana-feature-discovery",
        details={k: v for k, v in details.items() if v},
    )
    gpu_type = normalize_gpu_type(product, INTEL_GAUDI.name) if product else None
    if gpu_type is None or gpu_type == INTEL_GAUDI.generic_type:
        gpu_type = _gaudi_from_pci(labels)
    return _Reading(INTEL_GAUDI, gpu_type, lb.label_int(labels, lb.HFD_COUNT), info)


_LABELLERS: tuple[Callable[[Mapping[str, str]], _Reading | None], ...] = (
    _from_gfd,
    _from_amd_labeller,
    _from_habana,
)


def _from_nfd_pci(labels: Mapping[str, str]) -> _Reading | None:
    for vendor in VENDORS:
        present, devices = lb.nfd_pci_devices(labels, vendor.pci_id)
        if not present:
            continue
        device = min(devices) if devices else None
        if vendor is AMD and device:
            gpu_type = amd_type_for_device(device) or vendor.generic_type
        elif vendor is INTEL_GAUDI:
            gpu_type = _gaudi_from_pci(labels)
        else:
            gpu_type = vendor.generic_type
        details = {"pci_device_id": device} if device else {}
        info = GpuInfo(vendor.name, None, 0, source="node-feature-discovery", details=details)
        return _Reading(vendor, gpu_type, None, info)
    return None


def _from_allocatable(device_counts: Mapping[str, int]) -> _Reading | None:
    for vendor in VENDORS:
        if device_counts.get(vendor.resource):
            info = GpuInfo(vendor.name, None, 0, source="allocatable")
            return _Reading(vendor, vendor.generic_type, None, info)
    return None


def _gaudi_from_pci(labels: Mapping[str, str]) -> str:
    _, devices = lb.nfd_pci_devices(labels, INTEL_GAUDI.pci_id)
    generations = {gaudi_generation_for_device(d) for d in devices} - {None}
    return gaudi_type(generations.pop() if len(generations) == 1 else None)


def _cpu(labels: Mapping[str, str], capacity: Decimal | None) -> CpuInfo:
    multithreading = lb.label_bool(labels, lb.CPU_MULTITHREADING)
    nfd_cpu = any(k.startswith(lb.CPUID) for k in labels)
    amx = any(labels.get(lb.CPUID + flag) == "true" for flag in lb.AMX_FLAGS)
    return CpuInfo(
        vendor=labels.get(lb.CPU_VENDOR),
        model=lb.label_int(labels, lb.CPU_MODEL),
        family=lb.label_int(labels, lb.CPU_FAMILY),
        cores=float(capacity) if capacity is not None else None,
        threads_per_core=None if multithreading is None else (2 if multithreading else 1),
        avx512=(labels.get(lb.CPUID + "AVX512F") == "true") if nfd_cpu else None,
        amx=amx if nfd_cpu else None,
        arch=labels.get(lb.ARCH),
    )


def _nvidia_driver(labels: Mapping[str, str]) -> str | None:
    version = _joined(labels, lb.GFD_DRIVER_PARTS)
    revision = labels.get(lb.GFD_DRIVER_REV)
    return f"{version}.{revision}" if version and revision else version


def _joined(labels: Mapping[str, str], keys: tuple[str, ...]) -> str | None:
    parts = [labels.get(k) for k in keys]
    return ".".join(p for p in parts if p) if all(parts) else None


def _gib_label_to_mib(text: str | None) -> int | None:
    """The AMD labeller's whole-GiB VRAM ("192G") in MiB."""
    if text and text.endswith("G") and lb.is_whole(text[:-1]):
        return int(text[:-1]) * 1024
    return None


def _nfd_os(labels: Mapping[str, str]) -> str | None:
    os_id, version = labels.get(lb.OS_ID), labels.get(lb.OS_VERSION)
    return " ".join(p for p in (os_id, version) if p) or None
