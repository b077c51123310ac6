"""GPU types: the lower-case, DNS-1123-friendly product names used as gpu_type and flavor name.

The style is the simulated cluster's: vendor, model, and the memory size where a model comes in
more than one ("nvidia-a100-80gb", "nvidia-tesla-t4", "amd-mi300x", "intel-gaudi2"). What does not
change what a job can run on is dropped: NVIDIA form factors and memory technology (SXM4, PCIe,
HBM3), AMD's "Instinct", "OAM" and virtual-function suffix, and AMD memory sizes (one per model).
What does change it is kept: a time-sliced GPU is "...-shared", a MIG slice "...-mig-1g-5gb".
Tesla-branded NVIDIA parts keep "tesla", as the rest of the system names the T4 nvidia-tesla-t4.
"""

from __future__ import annotations

import re

AMD_DEVICE_MODELS: dict[str, str] = {
    "738c": "mi100",
    "7408": "mi250x",
    "740c": "mi250x",  # "AMD Instinct MI250X / MI250": the two share the id
    "740f": "mi210",
    "74a0": "mi300a",
    "74a1": "mi300x",
    "74a2": "mi308x",
    "74a5": "mi325x",
    "74b5": "mi300x",  # MI300X virtual function
    "75a0": "mi350x",
    "75a3": "mi355x",
}
"""PCI device id to model, from amdgpu.ids (as vendored by ROCm tools)."""

GAUDI_DEVICE_GENERATIONS: dict[str, int] = {
    "1000": 1,
    "1010": 1,
    "1020": 2,
    "1021": 2,
    "1030": 2,
    "1060": 3,
    "1061": 3,
    "1062": 3,
    "1063": 3,
}
"""Habana PCI device id (vendor 1da3) to Gaudi generation, from the habanalabs driver's pci_ids."""

_GAUDI_BOARDS = {"205": 1, "225": 2, "288": 2, "325": 3, "338": 3}
"""HL-xxx board names: HL-205 is a Gaudi, HL-225/HL-288 a Gaudi2, HL-325/HL-338 a Gaudi3."""

_SEPARATORS = re.compile(r"[\s_/()-]+")
_NVIDIA_DROP = re.compile(r"^(nvidia|sxm[0-9]*|pcie|hbm[0-9]*e?)$")
_AMD_DROP = re.compile(r"^(amd|instinct|oam|pcie|vf|[0-9]+gb?)$")
_NVIDIA_ALIASES = {"nvidia-t4": "nvidia-tesla-t4"}
MAX_TYPE_LENGTH = 63


def normalize_gpu_type(product: str, vendor: str | None = None) -> str:
    """The gpu_type for a product name as a labeller reports it.

    `vendor` ("nvidia", "amd", "intel") says whose product it is, which matters for names that do
    not say so ("A100-PCIE-40GB" from older NVIDIA drivers); without it, it is guessed.
    """
    lowered = product.strip().lower()
    if not lowered:
        raise ValueError("a GPU product name must not be empty")
    vendor = vendor or _guess_vendor(lowered)
    if vendor == "intel" or "gaudi" in lowered:
        return gaudi_type(_gaudi_generation(lowered))
    if vendor == "amd":
        return _sanitize("amd-" + "-".join(t for t in _tokens(lowered) if not _AMD_DROP.match(t)))
    if vendor == "nvidia":
        return _nvidia_type(lowered)
    return _sanitize(lowered)


def gaudi_type(generation: int | None) -> str:
    return f"intel-gaudi{generation}" if generation else "intel-gaudi"


def amd_type_for_device(device_id: str) -> str | None:
    model = AMD_DEVICE_MODELS.get(device_id.lower().removeprefix("0x"))
    return f"amd-{model}" if model else None


def gaudi_generation_for_device(device_id: str) -> int | None:
    return GAUDI_DEVICE_GENERATIONS.get(device_id.lower().removeprefix("0x"))


def _nvidia_type(lowered: str) -> str:
    shared = lowered.endswith("-shared")
    lowered = lowered.removesuffix("-shared")
    lowered, _, mig_profile = lowered.partition("-mig-")
    tokens = [t for t in _tokens(lowered) if not _NVIDIA_DROP.match(t)]
    name = _sanitize("-".join(["nvidia", *tokens]))
    name = _NVIDIA_ALIASES.get(name, name)
    if shared:
        name += "-shared"
    if mig_profile:
        name += "-mig-" + mig_profile
    return _sanitize(name)


def _gaudi_generation(lowered: str) -> int | None:
    named = re.search(r"gaudi[\s_-]?([0-9])", lowered)
    if named:
        return int(named[1])
    board = re.search(r"hl-?([0-9]{3})", lowered)
    return _GAUDI_BOARDS.get(board[1]) if board else None


def _guess_vendor(lowered: str) -> str | None:
    first = _tokens(lowered)[0] if _tokens(lowered) else ""
    if first in {"nvidia", "tesla", "geforce", "quadro"}:
        return "nvidia"
    if first in {"amd", "instinct", "radeon"}:
        return "amd"
    if first in {"intel", "habana"} or "gaudi" in lowered:
        return "intel"
    return None


def _tokens(text: str) -> list[str]:
    return [t for t in _SEPARATORS.split(text) if t]


def _sanitize(text: str) -> str:
    name = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:MAX_TYPE_LENGTH].strip("-")
    if not name:
        raise ValueError(f"GPU product {text!r} has no letters or digits to name a type by")
    return name
