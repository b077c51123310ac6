"""The simulated serving performance model: the roofline a simulated endpoint is paced by.

Covers: the formulas on one pinned case; prefill grows with the prompt above the weight-reading
floor, which a prefill batched with those queued ahead of it does not pay; a decode step grows
with batch and context and turns compute-bound at large batches; faster GPUs are faster, in the
datasheets' order; tensor parallelism helps, by less than its GPU count; model sizes read from
names (dense, MoE, millions, none) and an explicit size winning; unknown and time-sliced GPU
types.
"""

from __future__ import annotations

import math

import pytest

from adapters.simulated.performance import (
    BANDWIDTH_EFFICIENCY,
    DEFAULT_GPU_TYPE,
    DEFAULT_PARAMETERS_BILLION,
    GPU_SPECS,
    PREFILL_MFU,
    REQUEST_OVERHEAD_SECONDS,
    PerformanceModel,
    ServingProfile,
)
from domain.serving.models import parameters_from_name

MODEL = PerformanceModel()


def profile(gpu_type: str | None, *, tp: int = 1, model: str = "llama-3.1-8b") -> ServingProfile:
    return MODEL.profile(model=model, gpu_type=gpu_type, tensor_parallel=tp)


def test_the_formulas_on_an_8b_model_on_one_a100() -> None:
    a100 = profile("nvidia-a100-80gb")
    weights = 16e9 / (2039e9 * BANDWIDTH_EFFICIENCY)
    per_token = 16e9 / (312e12 * PREFILL_MFU)
    assert a100.weights_seconds == pytest.approx(weights)
    assert a100.compute_seconds_per_token == pytest.approx(per_token)
    assert a100.ttft_seconds(512) == pytest.approx(512 * per_token + REQUEST_OVERHEAD_SECONDS)
    kv = 45 * 1024 * math.sqrt(8) / (2039e9 * BANDWIDTH_EFFICIENCY)
    assert a100.time_per_output_token(16, 1000) == pytest.approx(weights + 16 * 1000 * kv)
    assert 0.010 < a100.time_per_output_token() < 0.013  # ~70 % of 2 TB/s over 16 GB
    assert a100.request_seconds(100, 3) == pytest.approx(
        a100.ttft_seconds(100) + a100.decode_step_seconds(1, 101) + a100.decode_step_seconds(1, 102)
    )


def test_prefill_grows_with_the_prompt_above_the_weights_floor() -> None:
    a100 = profile("nvidia-a100-80gb")
    times = [a100.prefill_seconds(p) for p in (1, 10, 100, 500, 1000, 4000)]
    assert times == sorted(times)
    assert times[0] == times[1] == a100.weights_seconds  # a short prompt still reads the weights
    assert times[-1] > times[-2] > times[-3]
    assert a100.prefill_seconds(4000) == pytest.approx(2 * a100.prefill_seconds(2000))
    queued = a100.prefill_seconds(10, queued=True)  # batched with the prefills ahead of it
    assert queued == pytest.approx(10 * a100.compute_seconds_per_token)
    assert queued < a100.weights_seconds
    assert a100.prefill_seconds(4000, queued=True) == a100.prefill_seconds(4000)


def test_a_decode_step_grows_with_batch_and_context_and_turns_compute_bound() -> None:
    a100 = profile("nvidia-a100-80gb")
    by_batch = [a100.time_per_output_token(b, 1000) for b in (1, 2, 8, 32, 128, 512)]
    assert by_batch == sorted(by_batch) and len(set(by_batch)) == len(by_batch)
    by_context = [a100.time_per_output_token(8, c) for c in (0, 100, 1000, 8000)]
    assert by_context == sorted(by_context) and len(set(by_context)) == len(by_context)
    no_context = a100.time_per_output_token(4096, 0)
    assert no_context == pytest.approx(4096 * a100.compute_seconds_per_token)
    assert no_context > a100.weights_seconds


@pytest.mark.parametrize("batch", [1, 16, 256])
def test_faster_gpus_are_faster(batch: int) -> None:
    order = ["nvidia-h200", "nvidia-h100-80gb", "nvidia-a100-80gb", "nvidia-l40s", "nvidia-l4"]
    tpot = [profile(g).time_per_output_token(batch, 512) for g in order]
    assert tpot == sorted(tpot)
    h100, t4 = profile("nvidia-h100-80gb"), profile("nvidia-tesla-t4")
    assert h100.ttft_seconds(512) < t4.ttft_seconds(512) / 5
    assert h100.time_per_output_token(batch, 512) < t4.time_per_output_token(batch, 512) / 5


def test_tensor_parallelism_helps_by_less_than_its_gpu_count() -> None:
    one, two, eight = (profile("nvidia-a100-80gb", tp=tp) for tp in (1, 2, 8))
    for metric in ("weights_seconds", "compute_seconds_per_token", "kv_seconds_per_token"):
        assert getattr(one, metric) / 2 < getattr(two, metric) < getattr(one, metric)
    assert one.ttft_seconds(2000) / 8 < eight.ttft_seconds(2000) < two.ttft_seconds(2000)
    assert one.time_per_output_token(32, 2000) / 2 == pytest.approx(
        two.time_per_output_token(32, 2000) * MODEL.communication_efficiency(2)
    )
    with pytest.raises(ValueError, match="tensor_parallel"):
        profile("nvidia-a100-80gb", tp=0)


@pytest.mark.parametrize(
    ("name", "billions"),
    [
        ("llama-3.1-8b-instruct", 8),
        ("meta-llama/Meta-Llama-3.1-70B-Instruct", 70),
        ("Qwen2.5-0.5B", 0.5),
        ("qwen2.5-1.5b-instruct", 1.5),
        ("facebook/opt-125m", 0.125),
        ("mixtral-8x7b-instruct-v0.1", 46.7),
        ("mistralai/Mixtral-8x22B-v0.1", 141),
        ("acme-4x2b", 8),
        ("Qwen3-30B-A3B", 30),
        ("gpt2", None),
        ("phi-3-mini-4k-instruct", None),
    ],
)
def test_parameters_from_the_model_name(name: str, billions: float | None) -> None:
    assert parameters_from_name(name) == (pytest.approx(billions) if billions else None)


def test_size_defaults_and_an_explicit_size_wins() -> None:
    assert MODEL.parameters_billion("gpt2") == DEFAULT_PARAMETERS_BILLION
    assert MODEL.parameters_billion("llama-3.1-8b", 70.0) == 70.0
    named_70b = profile("nvidia-a100-80gb", model="llama-70b")
    explicit = MODEL.profile(
        model="house-model", gpu_type="nvidia-a100-80gb", parameters_billion=70
    )
    assert explicit == named_70b
    assert named_70b.weights_seconds == pytest.approx(
        profile("nvidia-a100-80gb").weights_seconds * 70 / 8
    )


def test_unknown_and_time_sliced_gpu_types() -> None:
    default = profile(DEFAULT_GPU_TYPE)
    assert profile("acme-x1") == profile(None) == default
    assert profile("nvidia-a100-80gb-mig-1g-10gb") == default
    assert profile("nvidia-tesla-t4-shared") == profile("nvidia-tesla-t4") != default
    assert all(spec.bandwidth_gb_s > 0 and spec.tensor_tflops > 0 for spec in GPU_SPECS.values())
