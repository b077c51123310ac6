"""How fast a simulated model deployment serves: a roofline model per GPU type, pure and exact.

A replica is `tp` GPUs (tensor parallel) holding the weights, 2 bytes per parameter (FP16/BF16).
Decoding is memory-bound: each step streams the weights once plus every sequence's KV cache, and
gives each sequence in the batch one token. Prefill is compute-bound at 2 FLOPs per parameter per
prompt token. With N parameters, `bw` and `flops` a GPU's datasheet peaks, and
`comm(tp) = 1 / (1 + TP_OVERHEAD * (tp - 1))` the share left after tensor-parallel all-reduces:

    weights_time   = 2N / (tp * bw * BANDWIDTH_EFFICIENCY * comm)
    kv_time(ctx)   = KV_BYTES(N) * ctx / (tp * bw * BANDWIDTH_EFFICIENCY * comm)
    compute(t)     = 2N * t / (tp * flops * PREFILL_MFU * comm)
    decode_step(b) = max(weights_time + b * kv_time(mean context), compute(b))
    prefill(p)     = max(compute(p), weights_time), or compute(p) queued behind other prefills
    TTFT           = slot wait + prefills queued ahead on the replica + prefill(p) + OVERHEAD

The max() terms are the roofline's other side: a large batch makes decoding compute-bound, and
a short prompt still has to read the weights once, unless it is batched with the prefills ahead
of it. Attention FLOPs (quadratic in the prompt) and the pause prefills put into decoding are
left out. A sequence's time per output token is the decode step at the number of sequences
decoding on its replica, so it grows with load.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from domain.serving.models import parameters_from_name

BANDWIDTH_EFFICIENCY = 0.70
"""Share of peak HBM bandwidth a decode step achieves. vLLM and TensorRT-LLM reach about 60-75 %
(the MBU figures of Databricks' "LLM Inference Performance Engineering: Best Practices", 2023)."""

PREFILL_MFU = 0.50
"""Model FLOPs utilisation of prefill: 40-60 % is usual for dense FP16 inference on large
prompts (Pope et al., "Efficiently Scaling Transformer Inference", 2022, report up to ~70 %)."""

REQUEST_OVERHEAD_SECONDS = 0.005
"""Per request: HTTP, tokenisation, scheduling and detokenisation, a few ms in vLLM."""

TP_OVERHEAD = 0.10
"""Each GPU beyond the first adds 10 % for all-reduces: TP 2 is 1.8x faster, TP 8 4.7x
(an approximation of NVLink systems; PCIe ones scale worse)."""

KV_BYTES_PER_TOKEN_PER_SQRT_BILLION = 45 * 1024
"""KV cache bytes per token = this x sqrt(parameters in billions): 127 KiB for 8B, 376 KiB for
70B, against 128 and 320 KiB for Llama 3 8B and 70B (GQA, 8 KV heads of 128, FP16). An
approximation: models without GQA hold about 4x more."""

DEFAULT_PARAMETERS_BILLION = 7.0
"""For a model whose name states no size."""


@dataclass(frozen=True)
class GpuSpec:
    """Datasheet peaks of one GPU: HBM bandwidth and dense (no sparsity) FP16/BF16 tensor FLOPS."""

    bandwidth_gb_s: float
    tensor_tflops: float


GPU_SPECS: dict[str, GpuSpec] = {
    # NVIDIA datasheets; SXM parts where there are two form factors. The datasheets quote tensor
    # FLOPS "with sparsity": the figures here are half of those.
    "nvidia-h200": GpuSpec(4800, 989),
    "nvidia-h100-80gb": GpuSpec(3350, 989),
    "nvidia-h100": GpuSpec(3350, 989),
    "nvidia-h100-nvl": GpuSpec(3938, 835),
    "nvidia-a100-80gb": GpuSpec(2039, 312),
    "nvidia-a100-40gb": GpuSpec(1555, 312),
    "nvidia-l40s": GpuSpec(864, 362),
    "nvidia-l4": GpuSpec(300, 121),
    # A10G: AWS's variant of the A10, whose datasheet figures (600 GB/s, 125 TFLOPS) are used; an
    # approximation, as AWS publishes no tensor figure for it.
    "nvidia-a10g": GpuSpec(600, 125),
    "nvidia-a10": GpuSpec(600, 125),
    "nvidia-tesla-t4": GpuSpec(320, 65),  # 65 TFLOPS: FP16 with FP32 accumulate
    "nvidia-tesla-v100-16gb": GpuSpec(900, 125),  # SXM2; the PCIe card: 112 TFLOPS
    "nvidia-tesla-v100-32gb": GpuSpec(900, 125),
    "nvidia-v100": GpuSpec(900, 125),
    # AMD Instinct MI300X datasheet; the same efficiencies as NVIDIA's are assumed (approximate).
    "amd-mi300x": GpuSpec(5300, 1307),
}
"""By gpu_type, as `domain.inventory.gpu_types` names them."""

DEFAULT_GPU_TYPE = "nvidia-a100-80gb"
"""What an unknown GPU type (a MIG slice included) or none at all is taken to be."""


@dataclass(frozen=True)
class ServingProfile:
    """One replica's figures, in seconds, ready for per-token use."""

    weights_seconds: float
    """Reading the weights once: the floor of a decode step and of a prefill."""
    kv_seconds_per_token: float
    """Reading one token's KV cache."""
    compute_seconds_per_token: float
    """The FLOPs of one token through the model, at PREFILL_MFU."""
    overhead_seconds: float

    def prefill_seconds(self, prompt_tokens: int, *, queued: bool = False) -> float:
        """A prefill alone reads the weights at least once; one `queued` behind others is
        batched with them (as vLLM packs prompts into a step) and adds only its FLOPs."""
        compute = self.compute_seconds_per_token * prompt_tokens
        return compute if queued else max(compute, self.weights_seconds)

    def decode_step_seconds(self, batch: int, context_tokens: int) -> float:
        """One decode step of `batch` sequences whose contexts add up to `context_tokens`."""
        memory = self.weights_seconds + self.kv_seconds_per_token * context_tokens
        return max(memory, self.compute_seconds_per_token * batch)

    def time_per_output_token(self, batch: int = 1, context_tokens: int = 0) -> float:
        """Time per output token with `batch` sequences decoding, each `context_tokens` long."""
        return self.decode_step_seconds(batch, batch * context_tokens)

    def ttft_seconds(self, prompt_tokens: int) -> float:
        """Time to first token of a request alone on its replica."""
        return self.prefill_seconds(prompt_tokens) + self.overhead_seconds

    def request_seconds(self, prompt_tokens: int, output_tokens: int) -> float:
        """A request alone on its replica, from arrival to its last token: the first token comes
        from the prefill, each next one from a decode step over a context one token longer."""
        steps = sum(self.decode_step_seconds(1, prompt_tokens + k) for k in range(1, output_tokens))
        return self.ttft_seconds(prompt_tokens) + steps


@dataclass(frozen=True)
class PerformanceModel:
    """The constants above, replaceable (a test or a benchmark may want other efficiencies)."""

    gpus: dict[str, GpuSpec] = field(default_factory=lambda: dict(GPU_SPECS))
    default_gpu_type: str = DEFAULT_GPU_TYPE
    bandwidth_efficiency: float = BANDWIDTH_EFFICIENCY
    prefill_mfu: float = PREFILL_MFU
    overhead_seconds: float = REQUEST_OVERHEAD_SECONDS
    tp_overhead: float = TP_OVERHEAD
    default_parameters_billion: float = DEFAULT_PARAMETERS_BILLION

    def gpu(self, gpu_type: str | None) -> GpuSpec:
        name = (gpu_type or "").removesuffix("-shared")
        return self.gpus.get(name) or self.gpus[self.default_gpu_type]

    def parameters_billion(self, model: str, explicit: float | None = None) -> float:
        if explicit is not None:
            return explicit
        named = parameters_from_name(model)
        return self.default_parameters_billion if named is None else named

    def communication_efficiency(self, tensor_parallel: int) -> float:
        return 1 / (1 + self.tp_overhead * (tensor_parallel - 1))

    def profile(
        self,
        *,
        model: str,
        gpu_type: str | None,
        tensor_parallel: int = 1,
        parameters_billion: float | None = None,
    ) -> ServingProfile:
        if tensor_parallel < 1:
            raise ValueError("tensor_parallel must be at least 1")
        spec = self.gpu(gpu_type)
        billions = self.parameters_billion(model, parameters_billion)
        if billions <= 0:
            raise ValueError("a model has a positive number of parameters")
        share = tensor_parallel * self.communication_efficiency(tensor_parallel)
        bandwidth = spec.bandwidth_gb_s * 1e9 * self.bandwidth_efficiency * share
        flops = spec.tensor_tflops * 1e12 * self.prefill_mfu * share
        kv_bytes = KV_BYTES_PER_TOKEN_PER_SQRT_BILLION * math.sqrt(billions)
        return ServingProfile(
            weights_seconds=2 * billions * 1e9 / bandwidth,
            kv_seconds_per_token=kv_bytes / bandwidth,
            compute_seconds_per_token=2 * billions * 1e9 / flops,
            overhead_seconds=self.overhead_seconds,
        )
