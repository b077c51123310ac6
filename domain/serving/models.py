"""What a model needs of a GPU: its size from its name, the memory of each GPU type, and
whether a replica's GPUs hold its weights.

Sizes come from the name ("llama-3.1-8b-instruct": 8 billion parameters), as serving engines show
them; a name with no size is not checked. Memory per GPU type is the vendors' figure (or the size
in the type's name, "nvidia-a100-80gb"). Weights take 2 bytes per parameter in FP16/BF16, 1 in
FP8, about half a byte with 4-bit quantization (AWQ, GPTQ...), 4 in FP32; a replica must hold them
in at most 90 % of the memory the engine may use (`gpu_memory_utilization`), the rest being the
least the KV cache needs to serve anything (vLLM refuses to start without room for it).
"""

from __future__ import annotations

import re

_MIXTURES = {(8, 7.0): 46.7, (8, 22.0): 141.0}
"""Mixtral 8x7B and 8x22B: experts share attention, so the total is below 8 x 7 (Mistral AI's
figures). All experts' weights are counted: at batch 1 that is pessimistic, as only two of them
are read per token."""
_MIXTURE_NAME = re.compile(r"(?<![a-z0-9.])(\d+)x(\d+(?:\.\d+)?)b(?![a-z0-9])")
_SIZE_NAME = re.compile(r"(?<![a-z0-9.])(\d+(?:\.\d+)?)([bm])(?![a-z0-9])")


def parameters_from_name(model: str) -> float | None:
    """Billions of parameters a model's name states: "llama-3.1-8b-instruct" 8, "Qwen2.5-0.5B" 0.5,
    "opt-125m" 0.125, "mixtral-8x7b" 46.7 (an unknown N x M: N x M). The first size named counts,
    and a size glued to a letter ("Qwen3-30B-A3B": the active 3B) is not one."""
    name = model.lower().rsplit("/", 1)[-1]
    mixture = _MIXTURE_NAME.search(name)
    if mixture:
        experts, size = int(mixture[1]), float(mixture[2])
        return _MIXTURES.get((experts, size), experts * size)
    sized = _SIZE_NAME.search(name)
    if sized is None:
        return None
    return float(sized[1]) / (1000 if sized[2] == "m" else 1)


GPU_MEMORY_GB: dict[str, float] = {
    "nvidia-tesla-t4": 16,
    "nvidia-l4": 24,
    "nvidia-a10": 24,
    "nvidia-a10g": 24,
    "nvidia-l40": 48,
    "nvidia-l40s": 48,
    "nvidia-tesla-v100": 16,
    "nvidia-h100": 80,
    "nvidia-h100-nvl": 94,
    "nvidia-h200": 141,
    "amd-mi250x": 128,
    "amd-mi300x": 192,
    "intel-gaudi2": 96,
    "intel-gaudi3": 128,
}
"""Memory of each GPU by type, where its name does not say it (vendors' datasheets)."""

_SIZE_IN_TYPE = re.compile(r"(\d+)gb(?![a-z0-9])")
WEIGHTS_SHARE = 0.9
"""Of the memory the engine may use, what the weights may take (the rest: the KV cache)."""


def gpu_memory_gb(gpu_type: str) -> float | None:
    """A GPU's memory by its type: its name's size ("...-80gb", a MIG slice "...-1g-5gb"),
    else the vendor's figure; None when unknown."""
    sized = _SIZE_IN_TYPE.findall(gpu_type.removesuffix("-shared"))
    if sized:
        return float(sized[-1])
    return GPU_MEMORY_GB.get(gpu_type.removesuffix("-shared"))


def bytes_per_parameter(dtype: str, quantization: str | None) -> float:
    if quantization == "fp8":
        return 1.0
    if quantization is not None:
        return 0.5  # 4-bit weights (AWQ, GPTQ, Marlin, GGUF Q4, bitsandbytes 4-bit)
    return 4.0 if dtype in ("float", "float32") else 2.0


def fit_problem(
    model: str,
    gpu_type: str,
    gpus: int,
    *,
    dtype: str = "auto",
    quantization: str | None = None,
    gpu_memory_utilization: float = 0.9,
) -> str | None:
    """Why `gpus` GPUs of `gpu_type` cannot hold `model`'s weights, or None (also when the
    model's size or the GPU's memory is not known)."""
    billions = parameters_from_name(model)
    memory = gpu_memory_gb(gpu_type)
    if billions is None or memory is None or gpus < 1:
        return None
    weights = billions * bytes_per_parameter(dtype, quantization)
    room = gpus * memory * gpu_memory_utilization * WEIGHTS_SHARE
    if weights <= room:
        return None
    return (
        f"{model} needs about {weights:.0f} GB for its weights; {gpus} x {gpu_type} "
        f"({memory:g} GB each) leave {room:.0f} GB for them: raise the tensor parallel size or "
        "quantize the model"
    )
